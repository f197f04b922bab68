package nicoffload

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

const testCluster = 0x6e6b

const (
	usec = int64(time.Microsecond)
	msec = int64(time.Millisecond)
)

// sent is one datagram an engine emitted, decoded, with its data copied out of the
// engine's buffers (reused after Advance).
type sent struct {
	to  uint64
	raw []byte
	p   Packet
}

// take collects an engine's Ready, decodes its datagrams and advances it.
func take(t testing.TB, e *Engine) (Output, []sent) {
	t.Helper()
	o := e.Ready()
	var dgs []sent
	for _, d := range o.Datagrams {
		raw := bytes.Clone(d.Bytes)
		p, err := ParsePacket(raw)
		if err != nil {
			t.Fatalf("engine %d sent an undecodable datagram: %v", e.reg.ID, err)
		}
		if p.To != d.To {
			t.Fatalf("datagram to %d addressed to %d", d.To, p.To)
		}
		dgs = append(dgs, sent{to: d.To, raw: raw, p: p})
	}
	cp := o
	cp.Append = append([]Entry(nil), o.Append...)
	cp.Recover = append([]uint64(nil), o.Recover...)
	cp.Datagrams = nil
	e.Advance(o)
	return cp, dgs
}

func only(t testing.TB, dgs []sent, typ PacketType) []sent {
	t.Helper()
	var r []sent
	for _, d := range dgs {
		if d.p.Type == typ {
			r = append(r, d)
		}
	}
	return r
}

func to(dgs []sent, id uint64) []sent {
	var r []sent
	for _, d := range dgs {
		if d.to == id {
			r = append(r, d)
		}
	}
	return r
}

func regs(id uint64, leader bool, term, last, lastTerm, commit uint64, peers ...uint64) Registers {
	r := Registers{ID: id, IsLeader: leader, CurrentTerm: term, LastLogIndex: last,
		LastLogTerm: lastTerm, CommitIndex: commit, Peers: peers}
	if leader {
		r.MatchIndex = map[uint64]uint64{}
		for _, p := range peers {
			r.MatchIndex[p] = last
		}
	}
	return r
}

// newLeader opens a leader at term 2 with log 1..10 (last of term 2, committed 10) over
// peers, and grants it every vote, so that it replicates.
func newLeader(t testing.TB, cfg Config, peers ...uint64) *Engine {
	t.Helper()
	if len(peers) == 0 {
		peers = []uint64{1, 2, 3}
	}
	cfg.ClusterID = testCluster
	e := New(cfg)
	e.Open(0, regs(1, true, 2, 10, 2, 10, peers...))
	for _, id := range peers[1:] {
		e.Step(0, &Packet{ClusterID: testCluster, From: id, To: 1, Type: VoteResponse, Term: 2, Index: 10})
	}
	if !e.Registers().Enabled {
		t.Fatalf("leader not enabled after every vote granted")
	}
	take(t, e)
	return e
}

// newFollower opens member id as a follower at term 2 with log 1..10 of term 2.
func newFollower(t testing.TB, cfg Config, id uint64) *Engine {
	t.Helper()
	cfg.ClusterID = testCluster
	e := New(cfg)
	e.Open(0, regs(id, false, 2, 10, 2, 8, 1, 2, 3))
	return e
}

func ents(term uint64, data ...string) []Entry {
	r := make([]Entry, len(data))
	for i, d := range data {
		r[i] = Entry{Term: term, Time: 1000, Data: []byte(d)}
	}
	return r
}

func appendPkt(to, term, prev, prevTerm, commit uint64, es []Entry) *Packet {
	return &Packet{ClusterID: testCluster, From: 1, To: to, Type: Append, Term: term,
		PrevLogIndex: prev, PrevLogTerm: prevTerm, LeaderCommit: commit, Entries: es}
}

func ack(from, term, index uint64) *Packet {
	return &Packet{ClusterID: testCluster, From: from, To: 1, Type: Ack, Term: term, Index: index}
}

// waiting marks an ack as from a follower whose host waits for a commit.
func waiting(p *Packet) *Packet {
	p.Waiting = true
	return p
}

func indexes(es []Entry) string {
	if len(es) == 0 {
		return "[]"
	}
	return fmt.Sprintf("[%d..%d]", es[0].Index, es[len(es)-1].Index)
}

func data(n int) [][]byte {
	r := make([][]byte, n)
	for i := range r {
		r[i] = []byte(fmt.Sprintf("SET k%d v", i))
	}
	return r
}
