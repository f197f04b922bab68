package raft

import (
	"slices"
	"testing"
	"time"

	"github.com/nanokv/nanokv/nicoffload"
)

// testCluster is the cluster id of the engines these tests drive.
const testCluster = 7

// decodeInto is an OffloadHost.Send for tests: it decodes every datagram sent into
// *sent.
func decodeInto(t *testing.T, sent *[]nicoffload.Packet) func([]nicoffload.Outgoing) {
	return func(dgs []nicoffload.Outgoing) {
		for _, d := range dgs {
			p, err := nicoffload.ParsePacket(slices.Clone(d.Bytes))
			if err != nil {
				t.Fatal(err)
			}
			*sent = append(*sent, p)
		}
	}
}

// leaderWithEntry elects member 1 of three and commits one entry on it.
func leaderWithEntry(t *testing.T) (*network, *Raft) {
	t.Helper()
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.propose(1, "a")
	return nw, nw.r(1)
}

// openTerm opens an accelerated term on o, leader r's driver, at time 0: the tick asks
// followers 2 and 3 for their votes, and both grant them.
func openTerm(t *testing.T, o *Offload, r *Raft) {
	t.Helper()
	o.Tick(0)
	o.Drain(0)
	for _, id := range []uint64{2, 3} {
		o.Step(0, &nicoffload.Packet{Type: nicoffload.VoteResponse, ClusterID: testCluster, From: id, To: 1,
			Term: r.Term(), Index: r.LastIndex()})
		o.Drain(0)
	}
	if !o.Accelerated() {
		t.Fatal("no accelerated term after both votes")
	}
}

// A member left to software is taken back into the running accelerated term only once
// software has nothing on its way to it: while an append of software's is not
// acknowledged, the engine does not ask it, and after a second the member goes back to
// software, the term running on. Once its acks arrive, the engine asks it back, and its
// grant brings it in, no term ending on the way.
func TestReadmitWaitsForSoftwaresAppendsToSettle(t *testing.T) {
	ms := int64(time.Millisecond)
	nw, r := leaderWithEntry(t)
	var sent []nicoffload.Packet
	o := NewOffload(r, 1, nicoffload.Config{ClusterID: testCluster}, OffloadHost{
		Send:    decodeInto(t, &sent),
		Release: func(from, to uint64) {},
		Drop:    func([]Entry) {},
	})
	step := func(now int64, p nicoffload.Packet) {
		p.ClusterID, p.To, p.Term = testCluster, 1, r.Term()
		o.Step(now, &p)
		o.Drain(now)
	}
	tick := func(now int64) {
		o.Tick(now)
		o.Drain(now)
	}
	votesTo := func(id uint64) (n int, last nicoffload.Packet) {
		for _, p := range sent {
			if p.Type == nicoffload.VoteRequest && p.To == id {
				n, last = n+1, p
			}
		}
		return n, last
	}

	open := r.LastIndex()
	openTerm(t, o, r)
	// Member 3's engine is gone: it is left to software, and the term goes on.
	step(ms, nicoffload.Packet{Type: nicoffload.Nack, Reason: nicoffload.HaltNotOpen, From: 3, Index: open})
	if st := o.Stats(); st.Detached != 1 || r.offloaded[3] || !r.offloaded[2] {
		t.Fatalf("after 3's Nack: %+v, offloaded %v", st, r.offloaded)
	}
	// Software sends 3 the engine's next entry; 3's acknowledgements are lost.
	if _, ok := o.Propose(2*ms, 0, EntryNormal, []byte("b")); !ok {
		t.Fatal("the engine took no proposal")
	}
	o.Drain(2 * ms)
	nw.drop[MsgAppResp] = true
	nw.tick(1, 2)
	if nw.r(3).LastIndex() != r.LastIndex() || r.MatchIndex(3) >= r.LastIndex() || r.MatchIndex(3) < r.Committed() {
		t.Fatalf("3 holds %d of %d, its match %d, commit %d", nw.r(3).LastIndex(), r.LastIndex(), r.MatchIndex(3), r.Committed())
	}
	tick(200 * ms) // past the readmission's backoff: software stops sending 3 entries
	if !r.offloaded[3] || r.Settled(3) {
		t.Fatalf("readmission under way: offloaded %v, settled %v", r.offloaded, r.Settled(3))
	}
	tick(700 * ms)
	if n, _ := votesTo(3); n != 1 { // the term's first round asked it once
		t.Fatalf("3 asked to rejoin before software's appends settled (%d requests)", n)
	}
	tick(1200 * ms)
	if st := o.Stats(); r.offloaded[3] || !o.Accelerated() || st.Closed != 0 || st.Rejoined != 0 {
		t.Fatalf("a second unsettled: offloaded %v, accelerated %v, %+v", r.offloaded, o.Accelerated(), st)
	}

	// The acknowledgements go through again: taken back, asked, granted, rejoined.
	delete(nw.drop, MsgAppResp)
	nw.tick(1, 2)
	if !r.Settled(3) || r.MatchIndex(3) != r.LastIndex() {
		t.Fatalf("3 not caught up: match %d of %d", r.MatchIndex(3), r.LastIndex())
	}
	tick(1300 * ms) // within the doubled backoff: nothing yet
	tick(1500 * ms)
	tick(1510 * ms)
	n, req := votesTo(3)
	if n != 2 || req.PrevLogIndex != r.MatchIndex(3) || req.PrevLogTerm != r.Term() {
		t.Fatalf("rejoin request %+v (%d requests), want one at %d of term %d", req, n, r.MatchIndex(3), r.Term())
	}
	step(1520*ms, nicoffload.Packet{Type: nicoffload.VoteResponse, From: 3, Index: r.LastIndex()})
	tick(1530 * ms)
	if st := o.Stats(); !r.offloaded[3] || len(o.outside) != 0 || st.Rejoined != 1 || st.Closed != 0 || st.Opened != 1 {
		t.Fatalf("after 3's grant: offloaded %v, outside %v, %+v", r.offloaded, o.outside, st)
	}
}

// Entries the engine proposed but the core's log refused (here the leader stepped down
// between the proposal and the drain) never happened: their proposers are failed, no
// datagram carries them to a follower, and the accelerated term ends. A follower that
// acked them could otherwise let a later leader commit a write this one reported lost.
func TestRefusedEngineEntriesAreDroppedAndNeverSent(t *testing.T) {
	ms := int64(time.Millisecond)
	_, r := leaderWithEntry(t)
	var sent []nicoffload.Packet
	var dropped []Entry
	var released [][2]uint64
	o := NewOffload(r, 1, nicoffload.Config{ClusterID: testCluster}, OffloadHost{
		Send:    decodeInto(t, &sent),
		Release: func(from, to uint64) { released = append(released, [2]uint64{from, to}) },
		Drop:    func(ents []Entry) { dropped = append(dropped, slices.Clone(ents)...) },
	})
	open := r.LastIndex()
	openTerm(t, o, r)
	sent = nil

	first, ok := o.Propose(ms, 0, EntryNormal, []byte("b"))
	if !ok || first != open+1 {
		t.Fatalf("Propose = %d, %v; want %d, true", first, ok, open+1)
	}
	// A higher term reaches the core before the engine's output is drained.
	r.Step(Message{Type: MsgHeartbeat, From: 2, To: 1, Term: r.Term() + 1})
	if r.Role() == Leader {
		t.Fatal("the leader did not step down")
	}
	o.Drain(ms)

	if len(dropped) != 1 || dropped[0].Index != first || string(dropped[0].Data) != "b" {
		t.Fatalf("dropped %+v; want entry %d \"b\"", dropped, first)
	}
	if r.LastIndex() >= first {
		t.Fatalf("the log holds %d, past the refused entry %d", r.LastIndex(), first)
	}
	for _, p := range sent {
		if p.Type == nicoffload.Append && len(p.Entries) > 0 {
			t.Fatalf("a datagram carried refused entries: %+v", p)
		}
	}
	for _, rel := range released {
		if rel[1] >= first {
			t.Fatalf("released %v, which includes the refused entry %d", rel, first)
		}
	}
	if o.Open() {
		t.Fatal("the accelerated term stayed open after the log refused its entries")
	}
}
