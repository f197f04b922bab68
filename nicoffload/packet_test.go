package nicoffload

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func samplePackets() []Packet {
	return []Packet{
		{ClusterID: 7, From: 1, To: 2, Type: Append, Term: 3, PrevLogIndex: 10, PrevLogTerm: 2,
			LeaderCommit: 9, Entries: []Entry{
				{Index: 11, Term: 3, Time: 1700000000000, Type: 2, Data: []byte("SET a 1")},
				{Index: 12, Term: 3, Time: -5, Data: []byte{}},
			}},
		{ClusterID: 7, From: 2, To: 1, Type: Ack, Term: 3, Index: 12, LeaderCommit: 9},
		{ClusterID: 7, From: 3, To: 1, Type: Ack, Term: 3, Index: 12, LeaderCommit: 11, Waiting: true},
		{ClusterID: 7, From: 2, To: 1, Type: RetransmitRequest, Term: 3, Index: 11},
		{ClusterID: 7, From: 1, To: 3, Type: VoteRequest, Term: 3, PrevLogIndex: 10, PrevLogTerm: 2},
		{ClusterID: 7, From: 3, To: 1, Type: VoteResponse, Term: 3, Reject: true, Reason: HaltNotOpen, Index: 4},
		{ClusterID: ^uint64(0), From: 3, To: 1, Type: Nack, Term: 9, Reason: HaltStaleTerm, Index: 1 << 60},
	}
}

func TestPacketRoundTrip(t *testing.T) {
	for _, p := range samplePackets() {
		b := AppendPacket(nil, &p)
		if len(b) != PacketSize(&p) {
			t.Fatalf("%v: %d bytes, PacketSize says %d", p.Type, len(b), PacketSize(&p))
		}
		got, err := ParsePacket(b)
		if err != nil {
			t.Fatalf("%v: %v", p.Type, err)
		}
		if len(got.Entries) == 0 {
			got.Entries = p.Entries[:0:0]
			if p.Entries == nil {
				got.Entries = nil
			}
		}
		if !reflect.DeepEqual(got, p) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, p)
		}
		if cid, from, ok := PeekHeader(b); !ok || cid != p.ClusterID || from != p.From {
			t.Fatalf("peek: %d %d %v", cid, from, ok)
		}
	}
}

// The header is at fixed offsets: a sealed batch is patched per follower, not re-encoded.
func TestPatchToRewritesOnlyToAndCommit(t *testing.T) {
	p := samplePackets()[0]
	b := AppendPacket(nil, &p)
	patchTo(b, 3, 11)
	p.To, p.LeaderCommit = 3, 11
	if !bytes.Equal(b, AppendPacket(nil, &p)) {
		t.Fatalf("patched datagram differs from a fresh encoding")
	}
}

func TestParsePacketRejectsMalformed(t *testing.T) {
	good := AppendPacket(nil, &samplePackets()[0])
	cases := map[string][]byte{
		"empty":        nil,
		"short header": good[:HeaderSize-1],
		"truncated":    good[:len(good)-1],
		"trailing":     append(bytes.Clone(good), 0),
		"bad magic":    func() []byte { b := bytes.Clone(good); b[0] = 'X'; return b }(),
		"bad version":  func() []byte { b := bytes.Clone(good); b[2] = 9; return b }(),
		"bad type":     func() []byte { b := bytes.Clone(good); b[offType] = 0; return b }(),
		"bad flags":    func() []byte { b := bytes.Clone(good); b[offFlags] = 0x80; return b }(),
		"huge count":   func() []byte { b := bytes.Clone(good); b[offCount], b[offCount+1] = 0xff, 0xff; return b }(),
		"entries in ack": func() []byte {
			b := bytes.Clone(good)
			b[offType] = byte(Ack)
			return b
		}(),
		"too large": make([]byte, MaxDatagram+1),
	}
	for name, b := range cases {
		if _, err := ParsePacket(b); !errors.Is(err, ErrBadPacket) {
			t.Errorf("%s: err %v", name, err)
		}
	}
}

// FuzzDecodePacket: no input panics or allocates beyond its size, and whatever decodes
// re-encodes to the same bytes (the format has one encoding per packet).
func FuzzDecodePacket(f *testing.F) {
	for _, p := range samplePackets() {
		f.Add(AppendPacket(nil, &p))
	}
	f.Add([]byte("NK\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePacket(b)
		// A receiver decodes into a slice shared by a batch of datagrams: the same
		// verdict and packet, and the entries already there left alone.
		before := []Entry{{Index: 7, Term: 1, Data: []byte("kept")}}
		q, all, qerr := parsePacket(b, before)
		if (err == nil) != (qerr == nil) {
			t.Fatalf("ParsePacket: %v; into a shared slice: %v", err, qerr)
		}
		if all[0].Index != 7 || string(all[0].Data) != "kept" {
			t.Fatalf("the entry before was overwritten: %+v", all[0])
		}
		if err != nil {
			if len(all) != 1 {
				t.Fatalf("a failed decode left %d entries in the shared slice", len(all))
			}
			return
		}
		if len(all) != 1+len(q.Entries) || !reflect.DeepEqual(q.Entries, nilIfEmpty(p.Entries)) {
			t.Fatalf("into a shared slice: %d entries %+v, want %+v", len(all), q.Entries, p.Entries)
		}
		if n := len(p.Entries); n > len(b)/EntryHeaderSize {
			t.Fatalf("%d entries from %d bytes", n, len(b))
		}
		if again := AppendPacket(nil, &p); !bytes.Equal(again, b) {
			t.Fatalf("round trip differs:\n in %x\nout %x", b, again)
		}
		// And an engine survives it, in either role.
		for _, e := range []*Engine{fuzzLeader(), fuzzFollower()} {
			p.ClusterID, p.To = testCluster, e.reg.ID
			e.Step(1, &p)
			e.Tick(int64(p.Index))
			o := e.Ready()
			for _, d := range o.Datagrams {
				if _, err := ParsePacket(d.Bytes); err != nil {
					t.Fatalf("engine built a bad datagram: %v", err)
				}
			}
			e.Advance(o)
		}
	})
}

func fuzzLeader() *Engine {
	e := New(Config{ClusterID: testCluster})
	e.Open(0, regs(1, true, 2, 10, 2, 10, 1, 2, 3))
	e.Step(0, &Packet{ClusterID: testCluster, From: 2, To: 1, Type: VoteResponse, Term: 2, Index: 10})
	e.Propose(0, 0, data(3)...)
	e.Advance(e.Ready())
	return e
}

func fuzzFollower() *Engine {
	e := New(Config{ClusterID: testCluster})
	e.Open(0, regs(2, false, 2, 10, 2, 8, 1, 2, 3))
	return e
}

func nilIfEmpty(e []Entry) []Entry {
	if len(e) == 0 {
		return nil
	}
	return e
}
