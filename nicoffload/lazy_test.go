package nicoffload

import (
	"slices"
	"testing"
	"time"
)

// A leader keeps as many followers eager as a quorum needs besides itself, those that
// hold the most; a lazy one takes an eager one's place only by holding more.
func TestPickLazy(t *testing.T) {
	matchOf := func(m map[uint64]uint64) func(uint64) uint64 { return func(id uint64) uint64 { return m[id] } }
	for _, tc := range []struct {
		why       string
		followers []uint64
		match     map[uint64]uint64
		was       map[uint64]bool
		want      []uint64 // lazy, sorted
	}{
		{"one member", nil, nil, nil, nil},
		{"two members: the follower is the quorum", []uint64{2}, map[uint64]uint64{2: 5}, nil, nil},
		{"three: the one behind is lazy", []uint64{2, 3}, map[uint64]uint64{2: 5, 3: 9}, nil, []uint64{2}},
		{"three, equal: the eager one stays", []uint64{2, 3}, map[uint64]uint64{2: 9, 3: 9}, map[uint64]bool{2: true}, []uint64{2}},
		{"three, equal, the other way", []uint64{2, 3}, map[uint64]uint64{2: 9, 3: 9}, map[uint64]bool{3: true}, []uint64{3}},
		{"three: a lazy one ahead takes over", []uint64{2, 3}, map[uint64]uint64{2: 10, 3: 9}, map[uint64]bool{2: true}, []uint64{3}},
		{"four: two eager", []uint64{2, 3, 4}, map[uint64]uint64{2: 1, 3: 7, 4: 8}, nil, []uint64{2}},
		{"five: two eager", []uint64{2, 3, 4, 5}, map[uint64]uint64{2: 1, 3: 7, 4: 8, 5: 3}, nil, []uint64{2, 5}},
		{"five, a new leader knowing nothing: by id", []uint64{2, 3, 4, 5}, map[uint64]uint64{}, nil, []uint64{4, 5}},
	} {
		got := PickLazy(tc.followers, matchOf(tc.match), tc.was)
		var lazy []uint64
		for id, l := range got {
			if l {
				lazy = append(lazy, id)
			}
		}
		slices.Sort(lazy)
		if !slices.Equal(lazy, tc.want) {
			t.Errorf("%s: lazy %v, want %v", tc.why, lazy, tc.want)
		}
	}
}

// The engine of a leader of three sends each batch to one follower at once and to the
// other LazyDelay late, joined with the batches sealed meanwhile into one datagram; commits need only the eager
// one; when the eager one stops acknowledging, the lazy one (flushed at the tick) holds
// more and takes its place.
func TestEngineLazyFollower(t *testing.T) {
	e := newLeader(t, Config{LazyDelay: time.Millisecond}, 1, 2, 3)
	appends := func(dgs []sent, id uint64) []uint64 { // the prevLogIndex of each Append to id
		var prevs []uint64
		for _, d := range to(only(t, dgs, Append), id) {
			if len(d.p.Entries) > 0 {
				prevs = append(prevs, d.p.PrevLogIndex)
			}
		}
		return prevs
	}
	propose := func(now int64) []sent {
		t.Helper()
		if _, err := e.Propose(now, 0, []byte("x")); err != nil {
			t.Fatal(err)
		}
		_, dgs := take(t, e)
		return dgs
	}
	e.Tick(1 * msec) // equal matches: the lower id stays eager
	take(t, e)
	if dgs := propose(1 * msec); !slices.Equal(appends(dgs, 2), []uint64{10}) || appends(dgs, 3) != nil {
		t.Fatalf("first batch: to 2 %v, to 3 %v; want 2 alone", appends(dgs, 2), appends(dgs, 3))
	}
	if dgs := propose(1*msec + 500*usec); appends(dgs, 3) != nil {
		t.Fatalf("second batch went to the lazy follower after 0.5 ms: %v", appends(dgs, 3))
	}
	dgs := propose(2*msec + 100*usec)
	late := to(only(t, dgs, Append), 3)
	if len(late) != 1 || late[0].p.PrevLogIndex != 10 || len(late[0].p.Entries) != 3 {
		t.Fatalf("after the delay the lazy follower got %d datagrams (%v), want the three batches after 10 in one",
			len(late), appends(dgs, 3))
	}
	e.Step(2*msec+200*usec, ack(2, 2, 13))
	if o, _ := take(t, e); o.CommitIndex != 13 {
		t.Fatalf("the eager follower's ack committed to %d, want 13", o.CommitIndex)
	}
	e.Step(2*msec+300*usec, ack(3, 2, 13))
	take(t, e)
	// 2 stops answering: 14 commits once the tick has flushed it to 3 and 3 has it
	if dgs := propose(2*msec + 500*usec); appends(dgs, 3) != nil {
		t.Fatalf("the lazy follower got index 14 at once: %v", appends(dgs, 3))
	}
	e.Tick(12 * msec)
	if _, dgs := take(t, e); !slices.Equal(appends(dgs, 3), []uint64{13}) {
		t.Fatalf("the tick flushed %v to the lazy follower, want the batch after 13", appends(dgs, 3))
	}
	e.Step(12*msec+100*usec, ack(3, 2, 14))
	if o, _ := take(t, e); o.CommitIndex != 14 {
		t.Fatalf("the lazy follower's ack committed to %d, want 14", o.CommitIndex)
	}
	e.Tick(22 * msec)
	take(t, e)
	if dgs := propose(22 * msec); !slices.Equal(appends(dgs, 3), []uint64{14}) || appends(dgs, 2) != nil {
		t.Fatalf("after the tick: to 3 %v, to 2 %v; want 3 alone", appends(dgs, 3), appends(dgs, 2))
	}
	if st := e.Stats(); st.LazySends != 2 {
		t.Fatalf("LazySends %d, want 2", st.LazySends)
	}
}

// A lazy follower whose host waits for a commit (a client's write it forwarded) is sent
// each batch at once, with the batches it was not sent before: lazily it would get the
// entries it needs to answer its client LazyDelay late, or only at the next tick when
// no later batch flushes it (measured before this was so: 5k SET/s and a p50 of 9.6 ms
// through the lazy one of three offload members with --follower-proxy, against 65k
// and 0.6 ms through the eager one). The leader hears that it waits from PeerWaits (it
// proposes writes that follower forwarded) or from its acks; an ack saying it waits for
// nothing makes it lazy again.
func TestEngineLazyFollowerThatWaitsIsSentAtOnce(t *testing.T) {
	e := newLeader(t, Config{LazyDelay: time.Millisecond}, 1, 2, 3)
	toLazy := func(now int64) []Packet { // proposes one entry; the appends sent to 3
		t.Helper()
		if _, err := e.Propose(now, 0, []byte("x")); err != nil {
			t.Fatal(err)
		}
		_, dgs := take(t, e)
		var ps []Packet
		for _, d := range to(only(t, dgs, Append), 3) {
			ps = append(ps, d.p)
		}
		return ps
	}
	e.Tick(1 * msec) // equal matches: 2 stays eager, 3 is lazy
	take(t, e)
	if ps := toLazy(1 * msec); len(ps) != 0 {
		t.Fatalf("the lazy follower got %d datagrams at once", len(ps))
	}
	e.PeerWaits(3)
	if ps := toLazy(1*msec + 100*usec); len(ps) != 1 || ps[0].PrevLogIndex != 10 || len(ps[0].Entries) != 2 {
		t.Fatalf("told it waits, the lazy follower got %+v, want entries 11 and 12 in one datagram", ps)
	}
	e.Step(1*msec+200*usec, waiting(ack(3, 2, 12)))
	take(t, e)
	if ps := toLazy(1*msec + 300*usec); len(ps) != 1 || ps[0].PrevLogIndex != 12 || len(ps[0].Entries) != 1 {
		t.Fatalf("while its acks say it waits, it got %+v, want entry 13 at once", ps)
	}
	e.Step(1*msec+400*usec, ack(3, 2, 13))
	take(t, e)
	if ps := toLazy(1*msec + 500*usec); len(ps) != 0 {
		t.Fatalf("its ack said it waits for nothing, yet it got %+v at once", ps)
	}
	e.PeerWaits(9) // not a member: nothing changes
	if ps := toLazy(1*msec + 600*usec); len(ps) != 0 {
		t.Fatalf("PeerWaits of another member sent the lazy follower %+v", ps)
	}
}

// A lazy follower whose batches left the ring before its delay ran out cannot be sent
// them: the leader hands it to software (Recover) instead of streaming on past a gap,
// and sends it nothing more.
func TestEngineLazyFollowerBehindTheRingIsRecovered(t *testing.T) {
	e := newLeader(t, Config{LazyDelay: time.Millisecond, RingDatagrams: 2}, 1, 2, 3)
	e.Tick(1 * msec) // equal matches: 2 stays eager, 3 is lazy
	take(t, e)
	var recovered []uint64
	var toLazy int
	for _, now := range []int64{1 * msec, 1*msec + 200*usec, 1*msec + 400*usec, 2*msec + 100*usec} {
		if _, err := e.Propose(now, 0, []byte("x")); err != nil {
			t.Fatal(err)
		}
		o, dgs := take(t, e)
		recovered = append(recovered, o.Recover...)
		toLazy += len(to(only(t, dgs, Append), 3))
	}
	if !slices.Equal(recovered, []uint64{3}) || toLazy != 0 {
		t.Fatalf("recovered %v, %d appends to the lazy follower; want 3 recovered and none sent", recovered, toLazy)
	}
	if _, err := e.Propose(3*msec, 0, []byte("x")); err != nil {
		t.Fatal(err)
	}
	e.Tick(12 * msec)
	if _, dgs := take(t, e); len(to(only(t, dgs, Append), 3)) != 0 {
		t.Fatal("the recovered follower is still sent batches")
	}
}
