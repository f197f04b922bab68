package nicoffload

import (
	"slices"
	"testing"
	"time"
)

// --- leader -----------------------------------------------------------------------------

// A client write gets the next index: proposals take lastLogIndex+1, +2, ... of the
// current term, and go to the host log ring in order, with a clock that never runs back.
func TestLeaderProposeAssignsConsecutiveIndexes(t *testing.T) {
	e := newLeader(t, Config{})
	first, err := e.Propose(0, 5000, data(3)...)
	if err != nil || first != 11 {
		t.Fatalf("first proposal: %d, %v; want 11", first, err)
	}
	first, err = e.Propose(0, 4000, data(2)...) // a clock behind the log's
	if err != nil || first != 14 {
		t.Fatalf("second proposal: %d, %v; want 14", first, err)
	}
	o, _ := take(t, e)
	if len(o.Append) != 5 {
		t.Fatalf("host ring got %s, want [11..15]", indexes(o.Append))
	}
	for i, ent := range o.Append {
		if ent.Index != uint64(11+i) || ent.Term != 2 || ent.Time != 5000 {
			t.Fatalf("entry %d: index %d term %d time %d", i, ent.Index, ent.Term, ent.Time)
		}
	}
	if r := e.Registers(); r.LastLogIndex != 15 || r.LastLogTerm != 2 || r.LastLogTime != 5000 {
		t.Fatalf("registers last %d/%d time %d", r.LastLogIndex, r.LastLogTerm, r.LastLogTime)
	}
}

// Only an open, enabled leader takes proposals; the rest go through software Raft.
func TestProposeRefusedUnlessAcceleratedLeader(t *testing.T) {
	f := newFollower(t, Config{}, 2)
	if _, err := f.Propose(0, 0, []byte("x")); err != ErrNotAccelerated {
		t.Fatalf("follower proposal: %v", err)
	}
	l := newLeader(t, Config{})
	if _, err := l.Propose(0, 0, make([]byte, MaxEntryData+1)); err == nil {
		t.Fatalf("an entry larger than a datagram was accepted")
	}
	l.Close()
	if _, err := l.Propose(0, 0, []byte("x")); err != ErrNotAccelerated {
		t.Fatalf("closed leader proposal: %v", err)
	}
}

// A batch is sealed before it would exceed BatchBytes: one datagram per follower,
// carrying as many entries as fit.
func TestLeaderSealsBatchAtSize(t *testing.T) {
	per := entrySize(len("SET k0 v"))
	e := newLeader(t, Config{BatchBytes: HeaderSize + 3*per, BatchDelay: time.Second})
	for i := range 4 {
		e.Propose(0, 0, data(1)...)
		_, dgs := take(t, e)
		switch {
		case i < 2 && len(dgs) != 0:
			t.Fatalf("after %d entries: %d datagrams, want the batch still open", i+1, len(dgs))
		case i == 2:
			if len(dgs) != 2 || len(dgs[0].p.Entries) != 3 || dgs[0].p.PrevLogIndex != 10 {
				t.Fatalf("after 3 entries: %d datagrams, want one per follower with [11..13]", len(dgs))
			}
			if len(dgs[0].raw) != HeaderSize+3*per {
				t.Fatalf("datagram of %d bytes, want %d", len(dgs[0].raw), HeaderSize+3*per)
			}
		case i == 3 && len(dgs) != 0:
			t.Fatalf("entry 14 did not open a new batch")
		}
	}
}

// A batch is sealed once BatchDelay has passed since its first entry (Tick), and not
// before.
func TestLeaderSealsBatchAtDelay(t *testing.T) {
	e := newLeader(t, Config{BatchDelay: 50 * time.Microsecond})
	e.Propose(0, 0, data(2)...)
	e.Propose(20*usec, 0, data(1)...)
	e.Tick(49 * usec)
	if _, dgs := take(t, e); len(dgs) != 0 {
		t.Fatalf("sealed before the delay: %d datagrams", len(dgs))
	}
	e.Tick(50 * usec)
	_, dgs := take(t, e)
	if len(dgs) != 2 || len(dgs[0].p.Entries) != 3 {
		t.Fatalf("after the delay: %d datagrams, want 2 carrying [11..13]", len(dgs))
	}
	// A proposal that finds the open batch past its delay seals it first.
	e.Propose(100*usec, 0, data(1)...)
	e.Propose(200*usec, 0, data(1)...)
	if _, dgs := take(t, e); len(dgs) != 2 || len(dgs[0].p.Entries) != 1 || dgs[0].p.PrevLogIndex != 13 {
		t.Fatalf("stale batch not sealed by the next proposal: %d datagrams", len(dgs))
	}
}

// With BatchDelay 0, every Propose call is one datagram per follower, however many
// entries it carries.
func TestLeaderSendsOneDatagramPerFollowerPerBatch(t *testing.T) {
	e := newLeader(t, Config{}, 1, 2, 3, 4, 5)
	e.Propose(0, 0, data(5)...)
	_, dgs := take(t, e)
	if len(dgs) != 4 {
		t.Fatalf("%d datagrams, want 4 (one per follower)", len(dgs))
	}
	for i, d := range dgs {
		if d.to != uint64(i+2) || d.p.Type != Append || d.p.PrevLogIndex != 10 || d.p.PrevLogTerm != 2 ||
			len(d.p.Entries) != 5 || d.p.Entries[4].Index != 15 || d.p.LeaderCommit != 10 {
			t.Fatalf("datagram %d: to %d %+v", i, d.to, d.p)
		}
	}
}

// Group commit (Config.InFlight): with nothing in flight a Propose goes out at once; while
// InFlight batches wait for their commit, what is proposed collects in one batch, which
// goes out as soon as an ack commits the batch ahead of it, carrying the new commit.
func TestLeaderHoldsBatchWhileInFlightAndSendsItOnCommit(t *testing.T) {
	e := newLeader(t, Config{InFlight: 1})
	e.Propose(0, 0, data(1)...) // 11: nothing in flight
	if _, dgs := take(t, e); len(dgs) != 2 || len(dgs[0].p.Entries) != 1 {
		t.Fatalf("first proposal: %d datagrams, want it sent at once", len(dgs))
	}
	e.Propose(1, 0, data(2)...) // 12..13
	e.Propose(2, 0, data(1)...) // 14
	if _, dgs := take(t, e); len(dgs) != 0 {
		t.Fatalf("%d datagrams while 11 waits for its commit, want the batch held", len(dgs))
	}
	if s := e.Stats(); s.Held != 2 || s.Sealed != 1 {
		t.Fatalf("held %d sealed %d, want 2 and 1", s.Held, s.Sealed)
	}
	e.Step(3, ack(2, 2, 11))
	o, dgs := take(t, e)
	if o.CommitIndex != 11 {
		t.Fatalf("commit %d, want 11", o.CommitIndex)
	}
	app := only(t, dgs, Append)
	if len(app) != 2 || len(app[0].p.Entries) != 3 || app[0].p.PrevLogIndex != 11 || app[0].p.LeaderCommit != 11 {
		t.Fatalf("on the commit of 11: %+v, want [12..14] to each follower carrying commit 11", dgs)
	}
	if len(dgs) != len(app) {
		t.Fatalf("%d datagrams besides the batch: the batch carries the commit", len(dgs)-len(app))
	}
	// An ack that commits nothing new (3 catching up to 11) sends nothing.
	e.Propose(4, 0, data(1)...) // 15
	e.Step(5, ack(3, 2, 11))
	if _, dgs := take(t, e); len(only(t, dgs, Append)) != 0 {
		t.Fatalf("a batch left before 12..14 committed")
	}
	e.Step(6, ack(3, 2, 14))
	if _, dgs := take(t, e); len(only(t, dgs, Append)) != 2 {
		t.Fatalf("15 not sent on the commit of 14")
	}
}

// A held batch still goes out when it is full, and at the host's next Tick, so that
// nothing waits on an ack that does not come (a follower that lost the batch ahead).
func TestLeaderSendsHeldBatchWhenFullOrAtTick(t *testing.T) {
	per := entrySize(len("SET k0 v"))
	e := newLeader(t, Config{InFlight: 1, BatchBytes: HeaderSize + 2*per})
	e.Propose(0, 0, data(1)...) // 11 in flight
	take(t, e)
	e.Propose(1, 0, data(1)...) // 12 held
	if _, dgs := take(t, e); len(dgs) != 0 {
		t.Fatalf("12 not held")
	}
	e.Propose(2, 0, data(1)...) // 13 fills the batch
	_, dgs := take(t, e)
	if len(dgs) != 2 || len(dgs[0].p.Entries) != 2 || dgs[0].p.PrevLogIndex != 11 {
		t.Fatalf("full batch: %+v, want [12..13] to each follower", dgs)
	}
	e.Propose(3, 0, data(1)...) // 14 held
	take(t, e)
	e.Tick(4)
	if _, dgs := take(t, e); len(only(t, dgs, Append)) != 2 {
		t.Fatalf("the Tick did not send the held batch")
	}
}

// InFlight 2 lets two batches out before it holds; with the leader's own WAL in the
// quorum (AckAfterPersist), a commit that comes from Persisted sends the held batch too.
func TestLeaderInFlightCountsBatchesAndPersistedReleases(t *testing.T) {
	e := newLeader(t, Config{InFlight: 2, AckAfterPersist: true})
	for i := range 3 {
		e.Propose(int64(i), 0, data(1)...) // 11, 12 sent; 13 held
	}
	if _, dgs := take(t, e); len(dgs) != 4 || dgs[2].p.PrevLogIndex != 11 {
		t.Fatalf("%d datagrams, want 11 and 12 to each follower", len(dgs))
	}
	e.Step(3, ack(2, 2, 11))
	if _, dgs := take(t, e); len(only(t, dgs, Append)) != 0 {
		t.Fatalf("sent before the leader's WAL held 11: no commit yet")
	}
	e.Persisted(11)
	o, dgs := take(t, e)
	app := only(t, dgs, Append)
	if o.CommitIndex != 11 || len(app) != 2 || app[0].p.Entries[0].Index != 13 || app[0].p.LeaderCommit != 11 {
		t.Fatalf("after Persisted(11): commit %d, %+v; want 13 sent carrying commit 11", o.CommitIndex, app)
	}
}

// A new term does not inherit the last one's batches in flight: after Close and Open the
// first proposal goes out at once.
func TestLeaderInFlightStartsEmptyEachTerm(t *testing.T) {
	e := newLeader(t, Config{InFlight: 1})
	e.Propose(0, 0, data(1)...) // 11, never acked
	take(t, e)
	e.Close()
	e.Open(1, regs(1, true, 3, 11, 2, 10, 1, 2, 3))
	for _, id := range []uint64{2, 3} {
		e.Step(1, &Packet{ClusterID: testCluster, From: id, To: 1, Type: VoteResponse, Term: 3, Index: 11})
	}
	take(t, e)
	e.Propose(2, 0, data(1)...)
	if _, dgs := take(t, e); len(only(t, dgs, Append)) != 2 {
		t.Fatalf("the first proposal of term 3 was held behind term 2's batch")
	}
}

// Raft §5.3: once a majority holds an entry it is committed, and the waiting replies are
// released (Output.CommitIndex).
func TestLeaderCommitsOnMajorityAck(t *testing.T) {
	e := newLeader(t, Config{})
	e.Propose(0, 0, data(3)...)
	take(t, e)
	e.Step(1, ack(2, 2, 13))
	o, _ := take(t, e)
	if o.CommitIndex != 13 {
		t.Fatalf("commit %d after a majority acked 13", o.CommitIndex)
	}
	if o, _ := take(t, e); o.CommitIndex != 0 {
		t.Fatalf("commit reported twice")
	}
}

func TestLeaderMinorityDoesNotCommit(t *testing.T) {
	e := newLeader(t, Config{}, 1, 2, 3, 4, 5)
	e.Propose(0, 0, data(3)...)
	take(t, e)
	e.Step(1, ack(2, 2, 13))
	if o, _ := take(t, e); o.CommitIndex != 0 || e.Registers().CommitIndex != 10 {
		t.Fatalf("committed %d with 2 of 5", e.Registers().CommitIndex)
	}
	e.Step(2, ack(4, 2, 12))
	if o, _ := take(t, e); o.CommitIndex != 12 {
		t.Fatalf("commit %d, want 12 (held by 1, 2, 4)", o.CommitIndex)
	}
}

// Acks are cumulative: a late ack for a lower index, or the same ack twice, neither
// lowers matchIndex nor commits anything.
func TestLeaderIgnoresOutOfOrderAndDuplicateAcks(t *testing.T) {
	e := newLeader(t, Config{}, 1, 2, 3, 4, 5)
	e.Propose(0, 0, data(5)...)
	take(t, e)
	e.Step(1, ack(2, 2, 15))
	e.Step(1, ack(2, 2, 12)) // reordered
	e.Step(1, ack(2, 2, 15)) // duplicated
	if m := e.Registers().MatchIndex[2]; m != 15 {
		t.Fatalf("match of 2 is %d, want 15", m)
	}
	if c := e.Registers().CommitIndex; c != 10 {
		t.Fatalf("duplicates of one member's ack committed %d", c)
	}
	e.Step(1, ack(3, 2, 14))
	if c := e.Registers().CommitIndex; c != 14 {
		t.Fatalf("commit %d, want 14", c)
	}
	e.Step(1, ack(3, 2, 99)) // beyond the log: a broken peer
	if m := e.Registers().MatchIndex[3]; m != 14 {
		t.Fatalf("an ack past the log moved match to %d", m)
	}
}

// Raft §5.4.2: entries of earlier terms are never committed by counting replicas, only
// along with an entry of the current term above them.
func TestLeaderNeverCommitsEarlierTermEntriesByCounting(t *testing.T) {
	e := New(Config{ClusterID: testCluster})
	// Term 3 leader whose log ends with entries of term 1 at 6..10, committed to 5.
	e.Open(0, regs(1, true, 3, 10, 1, 5, 1, 2, 3))
	for _, id := range []uint64{2, 3} {
		e.Step(0, &Packet{ClusterID: testCluster, From: id, To: 1, Type: VoteResponse, Term: 3, Index: 10})
	}
	if c := e.Registers().CommitIndex; c != 5 {
		t.Fatalf("every member holds 10 (term 1): committed %d, want 5", c)
	}
	e.Propose(0, 0, data(1)...)
	take(t, e)
	if c := e.Registers().CommitIndex; c != 5 {
		t.Fatalf("committed %d before any ack of 11", c)
	}
	e.Step(1, ack(2, 3, 11))
	if c := e.Registers().CommitIndex; c != 11 {
		t.Fatalf("commit %d, want 11 (term 3, carrying 6..10)", c)
	}

	// If the last entry at Open is of the current term, it commits on the vote.
	e = New(Config{ClusterID: testCluster})
	e.Open(0, regs(1, true, 3, 10, 3, 8, 1, 2, 3))
	e.Step(0, &Packet{ClusterID: testCluster, From: 2, To: 1, Type: VoteResponse, Term: 3, Index: 10})
	if c := e.Registers().CommitIndex; c != 10 {
		t.Fatalf("commit %d, want 10 (term 3, held by a majority)", c)
	}
}

// With AckAfterPersist the leader counts itself only for what its WAL holds.
func TestLeaderAckAfterPersistCountsOwnPersistedEntries(t *testing.T) {
	e := newLeader(t, Config{AckAfterPersist: true})
	e.Propose(0, 0, data(2)...)
	take(t, e)
	e.Step(1, ack(2, 2, 12))
	if c := e.Registers().CommitIndex; c != 10 {
		t.Fatalf("committed %d before the leader persisted", c)
	}
	e.Persisted(12)
	if o, _ := take(t, e); o.CommitIndex != 12 {
		t.Fatalf("commit %d after persisting 12", o.CommitIndex)
	}
}

// threeBatches proposes 11..12, 13..14 and 15..16 as three batches.
func threeBatches(t *testing.T, e *Engine) {
	for range 3 {
		e.Propose(0, 0, data(2)...)
	}
	take(t, e)
}

// A retransmission request replays, from the ring, every datagram from the one holding
// the requested index on — with the current commit index.
func TestLeaderRetransmitsFromRing(t *testing.T) {
	e := newLeader(t, Config{})
	threeBatches(t, e)
	e.Step(1, ack(3, 2, 16)) // commit 16
	take(t, e)
	e.Step(1*msec, &Packet{ClusterID: testCluster, From: 2, To: 1, Type: RetransmitRequest, Term: 2, Index: 14})
	_, dgs := take(t, e)
	if len(dgs) != 2 || dgs[0].to != 2 || dgs[0].p.PrevLogIndex != 12 || dgs[1].p.PrevLogIndex != 14 {
		t.Fatalf("replay: %+v", dgs)
	}
	if dgs[1].p.LeaderCommit != 16 {
		t.Fatalf("replay carries commit %d, want 16", dgs[1].p.LeaderCommit)
	}
	// The same request again at once is a duplicate; after the timeout it is honoured.
	req := &Packet{ClusterID: testCluster, From: 2, To: 1, Type: RetransmitRequest, Term: 2, Index: 14}
	e.Step(1*msec+10*usec, req)
	if _, dgs := take(t, e); len(dgs) != 0 {
		t.Fatalf("duplicate request answered: %d datagrams", len(dgs))
	}
	e.Step(3*msec, req)
	if _, dgs := take(t, e); len(dgs) != 2 {
		t.Fatalf("repeated request after the timeout: %d datagrams", len(dgs))
	}
	if s := e.Stats(); s.Replayed != 4 {
		t.Fatalf("replayed %d", s.Replayed)
	}
}

// A follower that lost a batch asks for it again once per RetransmitTimeout, and in
// between for each later batch it misses. A request within half a timeout of a replay
// gets only what that replay did not send (the rest is in flight); but that window
// belongs to the replay that sent the lost batch, and neither a replay of newer batches
// behind it nor a replay of a later gap may renew it, or under a steady stream of new
// batches the leader replays only those, and never the lost one again. (Found by the
// random-network simulator, seed 60969: a follower asked 72 times in 9.6 ms, the lost
// batch went out 4 times, all lost, and the leader gave the follower to software.)
func TestLeaderReplaysTheLostBatchAgainWhileNewOnesArrive(t *testing.T) {
	ask := func(t *testing.T, e *Engine, now int64, index uint64) []uint64 {
		t.Helper()
		e.Step(now, &Packet{ClusterID: testCluster, From: 2, To: 1, Type: RetransmitRequest, Term: 2, Index: index})
		_, dgs := take(t, e)
		var prevs []uint64 // the batches replayed to 2, by their PrevLogIndex
		for _, d := range dgs {
			if d.to == 2 {
				prevs = append(prevs, d.p.PrevLogIndex)
			}
		}
		return prevs
	}
	propose := func(t *testing.T, e *Engine, now int64) {
		t.Helper()
		if _, err := e.Propose(now, 0, data(2)...); err != nil {
			t.Fatalf("propose at %dµs: %v", now/usec, err)
		}
		take(t, e)
	}
	start := func(t *testing.T) *Engine {
		t.Helper()
		e := newLeader(t, Config{})
		threeBatches(t, e) // 11..12, 13..14, 15..16; 2 lost the first
		if got := ask(t, e, 0, 11); !slices.Equal(got, []uint64{10, 12, 14}) {
			t.Fatalf("first request: batches after %v", got)
		}
		return e // and the replay of 11..12 is lost too
	}
	t.Run("continued", func(t *testing.T) {
		e := start(t)
		propose(t, e, 300*usec) // 17..18
		if got := ask(t, e, 310*usec, 11); !slices.Equal(got, []uint64{16}) {
			t.Fatalf("request for 11 at 310µs: batches after %v, want the new one only", got)
		}
		if got := ask(t, e, 600*usec, 11); len(got) == 0 || got[0] != 10 {
			t.Fatalf("request for 11 at 600µs: batches after %v, want 11..12 again", got)
		}
	})
	t.Run("later gap", func(t *testing.T) {
		e := start(t)
		propose(t, e, 700*usec) // 17..18, lost
		propose(t, e, 710*usec) // 19..20, which shows 2 the gap
		if got := ask(t, e, 900*usec, 17); !slices.Equal(got, []uint64{16, 18}) {
			t.Fatalf("request for 17: batches after %v", got)
		}
		if got := ask(t, e, 1000*usec, 11); len(got) == 0 || got[0] != 10 {
			t.Fatalf("request for 11 a timeout after the first: batches after %v, want 11..12 again", got)
		}
	})
}

// When the lost datagram is no longer in the ring the engine gives the follower to
// software (Recover) and sends it nothing more until Resume.
func TestLeaderRecoversFollowerWhenRequestIsOlderThanRing(t *testing.T) {
	e := newLeader(t, Config{RingDatagrams: 2})
	threeBatches(t, e) // the ring keeps 13..14 and 15..16
	e.Step(0, &Packet{ClusterID: testCluster, From: 2, To: 1, Type: RetransmitRequest, Term: 2, Index: 11})
	o, dgs := take(t, e)
	if !slices.Equal(o.Recover, []uint64{2}) || len(dgs) != 0 {
		t.Fatalf("recover %v, %d datagrams", o.Recover, len(dgs))
	}
	e.Propose(0, 0, data(1)...)
	if _, dgs := take(t, e); len(dgs) != 1 || dgs[0].to != 3 {
		t.Fatalf("a recovering follower still gets batches: %+v", dgs)
	}

	// Software caught 2 up to 15: Resume asks it to rejoin; once it grants, the ring
	// after where its log ends is replayed to it, and it is streamed to again.
	e.Resume(0, 2, 15)
	_, dgs = take(t, e)
	if len(dgs) != 1 || dgs[0].to != 2 || dgs[0].p.Type != VoteRequest || dgs[0].p.PrevLogIndex != 15 || dgs[0].p.PrevLogTerm != 2 {
		t.Fatalf("resume: %+v, want a vote request to 2 at 15 of term 2", dgs)
	}
	e.Step(0, &Packet{ClusterID: testCluster, From: 2, To: 1, Type: VoteResponse, Term: 2, Index: 15})
	_, dgs = take(t, e)
	if len(dgs) != 2 || dgs[0].p.PrevLogIndex != 14 || dgs[1].p.PrevLogIndex != 16 {
		t.Fatalf("rejoin replay: %+v", dgs)
	}
	e.Propose(0, 0, data(1)...)
	if _, dgs := take(t, e); len(dgs) != 2 {
		t.Fatalf("rejoined follower gets no batches: %d datagrams", len(dgs))
	}
	// Rejoining below the ring recovers it again.
	e.Step(0, &Packet{ClusterID: testCluster, From: 2, To: 1, Type: Nack, Reason: HaltNotOpen, Term: 2, Index: 11})
	if o, _ := take(t, e); !slices.Equal(o.Recover, []uint64{2}) {
		t.Fatalf("Nack: recover %v", o.Recover)
	}
	e.Resume(0, 2, 11)
	take(t, e)
	e.Step(0, &Packet{ClusterID: testCluster, From: 2, To: 1, Type: VoteResponse, Term: 2, Index: 11})
	if o, _ := take(t, e); !slices.Equal(o.Recover, []uint64{2}) || e.Rejoined(2) {
		t.Fatalf("rejoin below the ring: recover %v", o.Recover)
	}
}

// A follower the leader handed to software rejoins the running term (Resume) without
// a new round: its engine, opened for the leader's request on a log that software
// brought past the index asked about, grants it; the leader takes the follower's last
// index as its match, replays what it lacks from the ring, and counts its acks again.
func TestFollowerRejoinsARunningTerm(t *testing.T) {
	l := newLeader(t, Config{})
	l.Propose(0, 0, data(2)...) // 11..12
	take(t, l)
	l.Step(0, &Packet{ClusterID: testCluster, From: 2, To: 1, Type: Nack, Reason: HaltNotOpen, Term: 2, Index: 10})
	if o, _ := take(t, l); !slices.Equal(o.Recover, []uint64{2}) {
		t.Fatalf("Nack: recover %v", o.Recover)
	}
	l.Step(0, ack(3, 2, 12))
	l.Propose(0, 0, data(2)...) // 13..14
	l.Propose(0, 0, data(2)...) // 15..16
	if _, dgs := take(t, l); len(to(dgs, 2)) != 0 {
		t.Fatalf("a follower left to software was sent %+v", to(dgs, 2))
	}
	// Software sent 2 entries up to 13 (it was caught up to 12 when it was asked).
	f2 := New(Config{ClusterID: testCluster})
	f2.Open(0, regs(2, false, 2, 13, 2, 12, 1, 2, 3))
	l.Resume(10*usec, 2, 12)
	_, dgs := take(t, l)
	f2.Step(10*usec, &dgs[0].p)
	_, votes := take(t, f2)
	if len(dgs) != 1 || len(votes) != 1 || votes[0].p.Type != VoteResponse || votes[0].p.Reject || votes[0].p.Index != 13 {
		t.Fatalf("asked %+v, answered %+v: want a grant at 13", dgs, votes)
	}
	// A grant that says less than the leader asked (the term's first round's, late)
	// takes nobody back.
	l.Step(20*usec, &Packet{ClusterID: testCluster, From: 2, To: 1, Type: VoteResponse, Term: 2, Index: 10})
	if _, dgs := take(t, l); len(dgs) != 0 || l.Rejoined(2) {
		t.Fatalf("a grant at 10 took 2 back: %+v", dgs)
	}
	l.Step(20*usec, &votes[0].p)
	if !l.Rejoined(2) || l.Registers().MatchIndex[2] != 13 {
		t.Fatalf("after the grant: rejoined %v, match %d", l.Rejoined(2), l.Registers().MatchIndex[2])
	}
	exchange(t, l, map[uint64]*Engine{2: f2}) // the replay: 13..14 and 15..16
	o, acks := take(t, f2)
	if len(o.Append) != 3 || o.Append[0].Index != 14 || f2.Registers().LastLogIndex != 16 {
		t.Fatalf("follower appended %s, last %d", indexes(o.Append), f2.Registers().LastLogIndex)
	}
	l.Step(30*usec, &acks[len(acks)-1].p)
	if o, _ := take(t, l); o.CommitIndex != 16 {
		t.Fatalf("commit %d after 2 acked 16 (3 holds 12)", o.CommitIndex)
	}
}

// A member asked to rejoin that cannot (its log ends in an earlier term's entry, or its
// engine is closed) refuses, and one that does not answer within VoteTimeout (asked
// again every RetransmitTimeout meanwhile) is reported too: software goes on with it.
func TestRejoinRefusedOrUnansweredReportsTheFollower(t *testing.T) {
	l := newLeader(t, Config{VoteTimeout: 5 * time.Millisecond})
	l.Step(0, &Packet{ClusterID: testCluster, From: 2, To: 1, Type: Nack, Reason: HaltNotOpen, Term: 2, Index: 10})
	l.Step(0, &Packet{ClusterID: testCluster, From: 3, To: 1, Type: Nack, Reason: HaltNotOpen, Term: 2, Index: 10})
	take(t, l)
	f2 := New(Config{ClusterID: testCluster})
	f2.Open(0, regs(2, false, 2, 12, 1, 8, 1, 2, 3)) // ends in term 1's entries
	l.Resume(0, 2, 10)
	l.Resume(0, 3, 10)
	_, dgs := take(t, l)
	f2.Step(0, &to(dgs, 2)[0].p)
	exchange(t, f2, map[uint64]*Engine{1: l})
	if o, _ := take(t, l); !slices.Equal(o.Recover, []uint64{2}) {
		t.Fatalf("refused rejoin: recover %v", o.Recover)
	}
	l.Tick(2 * msec)
	if o, dgs := take(t, l); len(o.Recover) != 0 || len(only(t, dgs, VoteRequest)) != 1 || dgs[0].to != 3 {
		t.Fatalf("at 2 ms: recover %v, sent %+v; want the request to 3 again", o.Recover, dgs)
	}
	l.Tick(5 * msec)
	if o, _ := take(t, l); !slices.Equal(o.Recover, []uint64{3}) || l.Halted() != nil {
		t.Fatalf("unanswered rejoin: recover %v, halt %+v", o.Recover, l.Halted())
	}
}

// Datagrams lost with no later traffic to reveal the gap: the leader replays them after
// RetransmitTimeout, and gives up after MaxRetransmits timeouts in a row.
func TestLeaderRetransmitsUnackedAfterTimeout(t *testing.T) {
	e := newLeader(t, Config{MaxRetransmits: 2})
	e.Propose(0, 0, data(2)...)
	take(t, e)
	e.Step(10*usec, ack(3, 2, 12))
	take(t, e)
	e.Tick(999 * usec)
	for _, d := range func() []sent { _, dgs := take(t, e); return dgs }() {
		if len(d.p.Entries) != 0 { // the commit heartbeats only
			t.Fatalf("retransmitted before the timeout: %+v", d.p)
		}
	}
	e.Tick(1 * msec)
	_, dgs := take(t, e)
	if len(dgs) != 1 || dgs[0].to != 2 || len(dgs[0].p.Entries) != 2 {
		t.Fatalf("timeout replay: %+v", dgs)
	}
	e.Tick(2 * msec)
	take(t, e)
	e.Tick(3 * msec)
	if o, _ := take(t, e); !slices.Equal(o.Recover, []uint64{2}) {
		t.Fatalf("after %d timeouts: recover %v", 3, o.Recover)
	}
}

// A commit that no batch in flight will carry goes at once to the followers whose host
// waits for it (their acks say Waiting) and that hold every sealed entry, and to one that
// was behind as soon as its ack shows it caught up: the member a ZooKeeper client's
// write was forwarded from waits for it. Each follower is told once; the tick has
// nothing left to send.
func TestLeaderAnnouncesIdleCommitAtOnceToWaitingFollowers(t *testing.T) {
	e := newLeader(t, Config{})
	e.Propose(0, 0, data(1)...)
	take(t, e)
	e.Step(1, waiting(ack(2, 2, 11)))
	_, dgs := take(t, e)
	if len(dgs) != 1 || dgs[0].p.To != 2 {
		t.Fatalf("%d datagrams, want one heartbeat, to follower 2: %+v", len(dgs), dgs)
	}
	if d := dgs[0].p; d.Type != Append || len(d.Entries) != 0 || d.LeaderCommit != 11 || d.PrevLogIndex != 11 {
		t.Fatalf("heartbeat %+v", d)
	}
	e.Step(2, waiting(ack(3, 2, 11))) // follower 3 was behind; now it holds entry 11
	_, dgs = take(t, e)
	if len(dgs) != 1 || dgs[0].p.To != 3 || dgs[0].p.LeaderCommit != 11 || len(dgs[0].p.Entries) != 0 {
		t.Fatalf("after follower 3's ack: %+v, want one heartbeat with commit 11, to it", dgs)
	}
	e.Step(3, waiting(ack(3, 2, 11))) // a duplicate ack does not tell it again
	e.Tick(4)
	if _, dgs := take(t, e); len(dgs) != 0 {
		t.Fatalf("commit sent again: %+v", dgs)
	}
}

// A follower that waits for nothing hears of an idle commit from the tick's heartbeat,
// not at once: a datagram and a wake-up it does not need.
func TestLeaderTellsIdleCommitOnTickToFollowersThatDoNotWait(t *testing.T) {
	e := newLeader(t, Config{})
	e.Propose(0, 0, data(1)...)
	take(t, e)
	e.Step(1, ack(2, 2, 11))
	e.Step(1, ack(3, 2, 11))
	if o, dgs := take(t, e); o.CommitIndex != 11 || len(dgs) != 0 {
		t.Fatalf("commit %d, datagrams %+v: want 11 and none", o.CommitIndex, dgs)
	}
	e.Tick(2)
	_, dgs := take(t, e)
	if len(dgs) != 2 {
		t.Fatalf("%d datagrams on tick, want a heartbeat to each follower", len(dgs))
	}
	for _, d := range dgs {
		if d.p.Type != Append || d.p.LeaderCommit != 11 || len(d.p.Entries) != 0 {
			t.Fatalf("heartbeat %+v", d.p)
		}
	}
}

// A follower's acks say whether its host waits for a commit (SetWaiting).
func TestFollowerAckSaysWhetherItWaits(t *testing.T) {
	e := newFollower(t, Config{}, 2)
	for _, w := range []bool{true, false} {
		e.SetWaiting(w)
		last := e.Registers().LastLogIndex
		e.Step(0, appendPkt(2, 2, last, 2, 9, ents(2, "a")))
		_, dgs := take(t, e)
		if len(dgs) != 1 || dgs[0].p.Type != Ack || dgs[0].p.Waiting != w {
			t.Fatalf("waiting %v: datagrams %+v, want one ack saying so", w, dgs)
		}
	}
}

func TestLeaderBroadcastsBusyCommitOnTick(t *testing.T) {
	e := newLeader(t, Config{})
	e.Propose(0, 0, data(1)...)
	take(t, e)
	e.Propose(1, 0, data(1)...) // a second batch, in flight when the first commits
	take(t, e)
	e.Step(2, ack(2, 2, 11))
	if o, dgs := take(t, e); o.CommitIndex != 11 || len(dgs) != 0 {
		t.Fatalf("commit %d, %d datagrams: want 11 and none while a batch is in flight", o.CommitIndex, len(dgs))
	}
	e.Tick(3)
	_, dgs := take(t, e)
	if len(dgs) != 2 {
		t.Fatalf("%d datagrams on tick, want a heartbeat to each follower", len(dgs))
	}
	for _, d := range dgs {
		if d.p.LeaderCommit != 11 {
			t.Fatalf("heartbeat %+v", d.p)
		}
	}
}

// A follower's Nack for a term ahead of ours halts the leader: software moves on.
func TestLeaderHaltsOnHigherTerm(t *testing.T) {
	e := newLeader(t, Config{})
	e.Step(0, &Packet{ClusterID: testCluster, From: 3, To: 1, Type: Nack, Reason: HaltStaleTerm, Term: 5})
	o, _ := take(t, e)
	if o.Halt == nil || o.Halt.Reason != HaltHigherTerm || o.Halt.Term != 5 || o.Halt.From != 3 {
		t.Fatalf("halt %+v", o.Halt)
	}
	if _, err := e.Propose(0, 0, data(1)...); err != ErrNotAccelerated {
		t.Fatalf("halted leader took a proposal")
	}
}

// A follower whose log did not match (it halted and said so) is recovered by software;
// the others keep going.
func TestLeaderRecoversFollowerOnMismatchNack(t *testing.T) {
	e := newLeader(t, Config{})
	e.Step(0, &Packet{ClusterID: testCluster, From: 2, To: 1, Type: Nack, Reason: HaltMismatch, Term: 2})
	o, _ := take(t, e)
	if !slices.Equal(o.Recover, []uint64{2}) || o.Halt != nil {
		t.Fatalf("recover %v halt %v", o.Recover, o.Halt)
	}
}

// Two leaders in one term cannot happen: an Append at a leader halts it.
func TestLeaderHaltsOnAppendInItsTerm(t *testing.T) {
	e := newLeader(t, Config{})
	p := appendPkt(1, 2, 10, 2, 10, nil)
	p.From = 2
	e.Step(0, p)
	if h := e.Halted(); h == nil || h.Reason != HaltUnexpected {
		t.Fatalf("halt %+v", h)
	}
}

// --- follower ---------------------------------------------------------------------------

// The common case: prevLogIndex and prevLogTerm equal the last entry's: all entries go
// to the host ring, the registers advance and the follower acks the last index.
func TestFollowerAppendsMatchingBatch(t *testing.T) {
	f := newFollower(t, Config{}, 2)
	f.Step(0, appendPkt(2, 2, 10, 2, 9, ents(2, "a", "b", "c")))
	o, dgs := take(t, f)
	if len(o.Append) != 3 || o.Append[0].Index != 11 || string(o.Append[2].Data) != "c" {
		t.Fatalf("host ring got %s", indexes(o.Append))
	}
	if len(dgs) != 1 || dgs[0].to != 1 || dgs[0].p.Type != Ack || dgs[0].p.Index != 13 {
		t.Fatalf("ack %+v", dgs)
	}
	if o.CommitIndex != 9 || dgs[0].p.LeaderCommit != 9 {
		t.Fatalf("commit %d (ack says %d), want 9", o.CommitIndex, dgs[0].p.LeaderCommit)
	}
	if r := f.Registers(); r.LastLogIndex != 13 || r.LastLogTerm != 2 || !r.Enabled {
		t.Fatalf("registers %+v", r)
	}
}

// The entries the follower hands the host are copies: the receive buffer is reused.
func TestFollowerCopiesEntryData(t *testing.T) {
	f := newFollower(t, Config{}, 2)
	p := appendPkt(2, 2, 10, 2, 9, ents(2, "abc"))
	f.Step(0, p)
	p.Entries[0].Data[0] = 'X'
	if o := f.Ready(); string(o.Append[0].Data) != "abc" {
		t.Fatalf("entry data aliases the datagram: %q", o.Append[0].Data)
	}
}

// With KeepData the host's copy is kept: appended entries, and those held ahead of a
// gap, are the very bytes Step was given (no second copy).
func TestFollowerKeepsEntryDataItWasGiven(t *testing.T) {
	f := newFollower(t, Config{KeepData: true}, 2)
	p := appendPkt(2, 2, 10, 2, 9, ents(2, "abc"))
	f.Step(0, p)
	if o := f.Ready(); len(o.Append) != 1 || &o.Append[0].Data[0] != &p.Entries[0].Data[0] {
		t.Fatalf("appended entry is not the host's data: %+v", o.Append)
	}
	ahead := appendPkt(2, 2, 12, 2, 9, ents(2, "def")) // 12 is missing: held
	f.Step(1, ahead)
	f.Step(2, appendPkt(2, 2, 11, 2, 9, ents(2, "x")))
	o := f.Ready()
	if len(o.Append) != 2 || o.Append[1].Index != 13 || &o.Append[1].Data[0] != &ahead.Entries[0].Data[0] {
		t.Fatalf("held entry not appended as given: %s %+v", indexes(o.Append), o.Append)
	}
}

// term < currentTerm: not from our leader. Nothing is appended; the sender learns our
// term.
func TestFollowerIgnoresStaleTerm(t *testing.T) {
	f := newFollower(t, Config{}, 2)
	f.Step(0, appendPkt(2, 1, 10, 2, 9, ents(1, "a")))
	o, dgs := take(t, f)
	if len(o.Append) != 0 || o.Halt != nil {
		t.Fatalf("stale datagram appended %s / halted %v", indexes(o.Append), o.Halt)
	}
	if len(dgs) != 1 || dgs[0].p.Type != Nack || dgs[0].p.Reason != HaltStaleTerm || dgs[0].p.Term != 2 {
		t.Fatalf("reply %+v", dgs)
	}
}

// term > currentTerm: software must adopt the term; the engine halts.
func TestFollowerHaltsOnHigherTerm(t *testing.T) {
	f := newFollower(t, Config{}, 2)
	f.Step(0, appendPkt(2, 3, 10, 2, 9, ents(3, "a")))
	o, dgs := take(t, f)
	if o.Halt == nil || o.Halt.Reason != HaltHigherTerm || o.Halt.Term != 3 || len(o.Append) != 0 {
		t.Fatalf("halt %+v, append %s", o.Halt, indexes(o.Append))
	}
	if len(dgs) != 1 || dgs[0].p.Type != Nack || dgs[0].p.Reason != HaltNotOpen {
		t.Fatalf("reply %+v", dgs)
	}
	if f.Registers().Enabled {
		t.Fatalf("still enabled")
	}
}

// prevLogIndex > lastLogIndex: a gap. The datagrams ahead of it are held; one
// retransmission request asks for just the missing entries (repeated only after the
// timeout); when the replay fills the gap the held datagrams apply too.
func TestFollowerRequestsRetransmissionOnceForGap(t *testing.T) {
	f := newFollower(t, Config{}, 2)
	b1 := appendPkt(2, 2, 10, 2, 10, ents(2, "a", "b"))
	b2 := appendPkt(2, 2, 12, 2, 10, ents(2, "c", "d"))
	b3 := appendPkt(2, 2, 14, 2, 10, ents(2, "e"))
	f.Step(0, b2)
	f.Step(1, b3)
	o, dgs := take(t, f)
	if len(o.Append) != 0 || len(dgs) != 1 || dgs[0].p.Type != RetransmitRequest ||
		dgs[0].p.Index != 11 || dgs[0].p.PrevLogIndex != 12 {
		t.Fatalf("gap: append %s, sent %+v; want one request for 11..12", indexes(o.Append), dgs)
	}
	f.Tick(500 * usec)
	if _, dgs := take(t, f); len(dgs) != 0 {
		t.Fatalf("request repeated before the timeout")
	}
	f.Tick(1 * msec)
	if _, dgs := take(t, f); len(dgs) != 1 || dgs[0].p.Index != 11 {
		t.Fatalf("request not repeated after the timeout: %+v", dgs)
	}
	f.Step(2*msec, b1)
	o, dgs = take(t, f)
	if len(o.Append) != 5 || o.Append[4].Index != 15 || string(o.Append[4].Data) != "e" {
		t.Fatalf("catch-up appended %s", indexes(o.Append))
	}
	if len(dgs) != 1 || dgs[0].p.Type != Ack || dgs[0].p.Index != 15 {
		t.Fatalf("one ack of 15 expected: %+v", dgs)
	}
	if f.Stats().GapRequests != 2 {
		t.Fatalf("gap requests %d", f.Stats().GapRequests)
	}
}

// Without room to hold it, a datagram past a gap is dropped and asked for too.
func TestFollowerRequestsDroppedDatagramWhenBufferFull(t *testing.T) {
	f := newFollower(t, Config{}, 2)
	big := make([]byte, MaxEntryData)
	for i := range maxHeldBytes/len(big) + 1 {
		f.Step(0, appendPkt(2, 2, uint64(20+i), 2, 10, []Entry{{Term: 2, Data: big}}))
	}
	_, dgs := take(t, f)
	last := dgs[len(dgs)-1].p
	if last.Type != RetransmitRequest || last.PrevLogIndex != uint64(20+maxHeldBytes/len(big)+1) {
		t.Fatalf("last request %+v: want one through the dropped datagram's end", last)
	}
}

// A duplicate datagram (or a replay of entries already held) is re-acked, since the
// leader may have lost the ack, and appends nothing.
func TestFollowerReacksDuplicateDatagram(t *testing.T) {
	f := newFollower(t, Config{}, 2)
	p := appendPkt(2, 2, 10, 2, 9, ents(2, "a", "b", "c"))
	f.Step(0, p)
	take(t, f)
	f.Step(1, p)
	o, dgs := take(t, f)
	if len(o.Append) != 0 || len(dgs) != 1 || dgs[0].p.Type != Ack || dgs[0].p.Index != 13 {
		t.Fatalf("duplicate: append %s, sent %+v", indexes(o.Append), dgs)
	}
}

// A replay overlapping the log's tail: the entries already held are checked by term at
// the last common index, the rest appended.
func TestFollowerAppendsTailOfOverlappingReplay(t *testing.T) {
	f := newFollower(t, Config{}, 2)
	f.Step(0, appendPkt(2, 2, 10, 2, 9, ents(2, "a", "b", "c")))
	take(t, f)
	f.Step(1, appendPkt(2, 2, 11, 2, 9, ents(2, "b", "c", "d", "e")))
	o, _ := take(t, f)
	if len(o.Append) != 2 || o.Append[0].Index != 14 || string(o.Append[1].Data) != "e" {
		t.Fatalf("overlap appended %s", indexes(o.Append))
	}
}

// A term conflict (prevLogTerm differs, or an entry we hold has another term) is a log
// mismatch: the follower halts, tells the leader, and software truncates.
func TestFollowerHaltsOnTermConflict(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *Packet
	}{
		{"prevLogTerm", appendPkt(2, 3, 10, 1, 9, ents(3, "a"))},
		{"held entry", appendPkt(2, 3, 10, 2, 9, ents(2, "x", "y"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := New(Config{ClusterID: testCluster})
			f.Open(0, regs(2, false, 3, 10, 2, 8, 1, 2, 3))
			f.Step(0, appendPkt(2, 3, 10, 2, 9, ents(3, "a", "b"))) // 11, 12 of term 3
			take(t, f)
			f.Step(1, tc.p)
			o, dgs := take(t, f)
			if o.Halt == nil || o.Halt.Reason != HaltMismatch || len(o.Append) != 0 {
				t.Fatalf("halt %+v append %s", o.Halt, indexes(o.Append))
			}
			if len(dgs) != 1 || dgs[0].p.Type != Nack || dgs[0].p.Reason != HaltMismatch {
				t.Fatalf("reply %+v", dgs)
			}
		})
	}
}

// Entries from before Open have terms the engine does not know: a datagram that only
// covers them cannot be checked and is ignored (no ack, no halt).
func TestFollowerIgnoresDatagramBelowOpen(t *testing.T) {
	f := newFollower(t, Config{}, 2)
	f.Step(0, appendPkt(2, 2, 5, 2, 9, ents(2, "a", "b")))
	if o, dgs := take(t, f); len(o.Append) != 0 || len(dgs) != 0 || o.Halt != nil {
		t.Fatalf("append %s, sent %d, halt %v", indexes(o.Append), len(dgs), o.Halt)
	}
}

// commitIndex = min(leaderCommit, index of the last entry checked); a gap datagram
// teaches nothing.
func TestFollowerCommitBoundedByLastLogIndex(t *testing.T) {
	f := newFollower(t, Config{}, 2)
	f.Step(0, appendPkt(2, 2, 10, 2, 20, ents(2, "a", "b")))
	if o, _ := take(t, f); o.CommitIndex != 12 {
		t.Fatalf("commit %d, want 12", o.CommitIndex)
	}
	f.Step(0, appendPkt(2, 2, 15, 2, 30, ents(2, "x")))
	if c := f.Registers().CommitIndex; c != 12 {
		t.Fatalf("a gap datagram moved commit to %d", c)
	}
	f.Step(0, appendPkt(2, 2, 12, 2, 11, nil)) // an older commit never lowers it
	if c := f.Registers().CommitIndex; c != 12 {
		t.Fatalf("commit went back to %d", c)
	}
}

// --fsync always: a follower acks only what the host reports durable.
func TestFollowerAckAfterPersist(t *testing.T) {
	f := newFollower(t, Config{AckAfterPersist: true}, 2)
	f.Step(0, appendPkt(2, 2, 10, 2, 9, ents(2, "a", "b", "c")))
	o, dgs := take(t, f)
	if len(o.Append) != 3 || len(dgs) != 0 {
		t.Fatalf("append %s, sent %+v before the WAL held anything", indexes(o.Append), dgs)
	}
	f.Persisted(12)
	if _, dgs := take(t, f); len(dgs) != 1 || dgs[0].p.Index != 12 {
		t.Fatalf("ack after persisting 12: %+v", dgs)
	}
	f.Persisted(12)
	if _, dgs := take(t, f); len(dgs) != 0 {
		t.Fatalf("acked twice for one Persisted")
	}
	f.Persisted(99) // bounded by the log
	if _, dgs := take(t, f); len(dgs) != 1 || dgs[0].p.Index != 13 {
		t.Fatalf("ack after persisting all: %+v", dgs)
	}
}

// Datagrams of another cluster, from a non-member, or for another member are dropped.
func TestEngineDropsForeignDatagrams(t *testing.T) {
	f := newFollower(t, Config{}, 2)
	for _, mut := range []func(*Packet){
		func(p *Packet) { p.ClusterID++ },
		func(p *Packet) { p.From = 9 },
		func(p *Packet) { p.From = 2 },
		func(p *Packet) { p.To = 3 },
	} {
		p := appendPkt(2, 2, 10, 2, 9, ents(2, "a"))
		mut(p)
		f.Step(0, p)
	}
	if o, dgs := take(t, f); len(o.Append) != 0 || len(dgs) != 0 || f.Stats().Dropped != 4 {
		t.Fatalf("append %s, sent %d, dropped %d", indexes(o.Append), len(dgs), f.Stats().Dropped)
	}
}

// --- the accelerated-term vote (RequestVoteFPGA) ---------------------------------------

func exchange(t *testing.T, from *Engine, engines map[uint64]*Engine) {
	t.Helper()
	_, dgs := take(t, from)
	for _, d := range dgs {
		engines[d.to].Step(0, &d.p)
	}
}

// A follower whose log ends exactly where the leader's does grants the vote; once a
// majority (the leader included) granted, the leader replicates, including what was
// proposed during the round.
func TestVoteGrantedWhenLogsMatch(t *testing.T) {
	l := New(Config{ClusterID: testCluster})
	l.Open(0, regs(1, true, 2, 10, 2, 9, 1, 2, 3))
	if l.Registers().Enabled {
		t.Fatalf("enabled before the vote")
	}
	l.Propose(0, 0, data(2)...) // queued until the vote is won
	f2 := newFollower(t, Config{}, 2)
	f3 := newFollower(t, Config{}, 3)
	nodes := map[uint64]*Engine{1: l, 2: f2, 3: f3}
	exchange(t, l, nodes) // VoteRequests
	exchange(t, f2, nodes)
	if !l.Registers().Enabled {
		t.Fatalf("not enabled after a majority granted")
	}
	_, dgs := take(t, l)
	apps := only(t, dgs, Append)
	if len(apps) != 2 || apps[0].p.PrevLogIndex != 10 || len(apps[0].p.Entries) != 2 {
		t.Fatalf("entries proposed during the vote not sent: %+v", dgs)
	}
	if m := l.Registers().MatchIndex[2]; m != 10 {
		t.Fatalf("a granted vote means match 10, got %d", m)
	}
}

func TestVoteRefusedWhenLogDiffers(t *testing.T) {
	l := New(Config{ClusterID: testCluster})
	l.Open(0, regs(1, true, 2, 10, 2, 9, 1, 2, 3))
	f2 := New(Config{ClusterID: testCluster})
	f2.Open(0, regs(2, false, 2, 9, 2, 8, 1, 2, 3)) // one entry short
	nodes := map[uint64]*Engine{1: l, 2: f2}
	_, dgs := take(t, l)
	f2.Step(0, &to(dgs, 2)[0].p)
	exchange(t, f2, nodes)
	o, _ := take(t, l)
	if o.Halt == nil || o.Halt.Reason != HaltVoteRefused || o.Halt.From != 2 {
		t.Fatalf("halt %+v", o.Halt)
	}
}

// A Nack that comes during the vote round answers an Append of an accelerated term the
// leader closed earlier in the same Raft term (a vote round sends no Appends): the round
// goes on, and the member's answer to the vote request is what counts.
func TestVoteRoundIgnoresAnEarlierTermsNack(t *testing.T) {
	l := New(Config{ClusterID: testCluster})
	l.Open(0, regs(1, true, 2, 10, 2, 10, 1, 2, 3))
	take(t, l)
	for _, reason := range []HaltReason{HaltNotOpen, HaltMismatch} {
		l.Step(0, &Packet{ClusterID: testCluster, From: 2, To: 1, Type: Nack, Reason: reason, Term: 2, Index: 8})
		if o, _ := take(t, l); o.Halt != nil || len(o.Recover) != 0 {
			t.Fatalf("%v Nack during the vote: halt %+v, recover %v", reason, o.Halt, o.Recover)
		}
	}
	l.Step(0, &Packet{ClusterID: testCluster, From: 2, To: 1, Type: VoteResponse, Term: 2, Index: 10})
	if !l.Registers().Enabled {
		t.Fatal("not enabled after member 2 granted the vote")
	}
	// Once the round is won, a Nack is about this term's Appends: software recovers
	// that member.
	l.Step(0, &Packet{ClusterID: testCluster, From: 2, To: 1, Type: Nack, Reason: HaltNotOpen, Term: 2, Index: 10})
	if o, _ := take(t, l); !slices.Equal(o.Recover, []uint64{2}) || o.Halt != nil {
		t.Fatalf("Nack after the vote: recover %v, halt %+v", o.Recover, o.Halt)
	}
}

// A closed engine refuses the vote at once rather than let the round time out.
func TestVoteRefusedByClosedEngine(t *testing.T) {
	l := New(Config{ClusterID: testCluster})
	l.Open(0, regs(1, true, 2, 10, 2, 9, 1, 2, 3))
	f2 := newFollower(t, Config{}, 2)
	f2.Close()
	_, dgs := take(t, l)
	f2.Step(0, &to(dgs, 2)[0].p)
	exchange(t, f2, map[uint64]*Engine{1: l})
	if h := l.Halted(); h == nil || h.Reason != HaltVoteRefused {
		t.Fatalf("halt %+v", h)
	}
}

// No majority within VoteTimeout: halt; software keeps the term. Requests are repeated
// every RetransmitTimeout meanwhile.
func TestVoteTimesOut(t *testing.T) {
	l := New(Config{ClusterID: testCluster, VoteTimeout: 10 * time.Millisecond})
	l.Open(0, regs(1, true, 2, 10, 2, 9, 1, 2, 3))
	take(t, l)
	l.Tick(1 * msec)
	if _, dgs := take(t, l); len(only(t, dgs, VoteRequest)) != 2 {
		t.Fatalf("vote requests not repeated")
	}
	l.Tick(10 * msec)
	if h := l.Halted(); h == nil || h.Reason != HaltVoteTimeout {
		t.Fatalf("halt %+v", h)
	}
}

// A voter the leader leaves outside (down, as far as software knows) is asked no vote
// and sent nothing, even on the ticks' retransmissions and heartbeats, and it still
// counts in the majority: with 5 voters and 2 outside, both of the others must hold an
// entry before it commits.
func TestLeaderLeavesOutsideVotersToSoftware(t *testing.T) {
	l := New(Config{ClusterID: testCluster, LazyDelay: time.Millisecond})
	r := regs(1, true, 2, 10, 2, 10, 1, 2, 3, 4, 5)
	r.MatchIndex[4], r.MatchIndex[5] = 7, 3
	r.Outside = []uint64{4, 5}
	l.Open(0, r)
	_, dgs := take(t, l)
	if votes := only(t, dgs, VoteRequest); len(votes) != 2 || len(to(votes, 4)) != 0 || len(to(votes, 5)) != 0 {
		t.Fatalf("vote requests %+v: want one to each of 2 and 3", votes)
	}
	l.Tick(50 * msec) // the requests' retransmission
	if _, dgs := take(t, l); len(to(dgs, 4))+len(to(dgs, 5)) != 0 || len(only(t, dgs, VoteRequest)) != 2 {
		t.Fatalf("repeated vote requests %+v", dgs)
	}
	l.Step(50*msec, &Packet{ClusterID: testCluster, From: 2, To: 1, Type: VoteResponse, Term: 2, Index: 10})
	if l.Registers().Enabled {
		t.Fatal("enabled with 2 of 5 votes")
	}
	l.Step(50*msec, &Packet{ClusterID: testCluster, From: 3, To: 1, Type: VoteResponse, Term: 2, Index: 10})
	if !l.Registers().Enabled {
		t.Fatal("not enabled with 3 of 5 votes")
	}
	l.Propose(50*msec, 0, data(2)...)
	l.seal(50 * msec)
	if _, dgs := take(t, l); len(only(t, dgs, Append)) != 2 || len(to(dgs, 4))+len(to(dgs, 5)) != 0 {
		t.Fatalf("the batch went to %+v, want 2 and 3 at once", dgs)
	}
	l.Step(51*msec, ack(2, 2, 12))
	if o, _ := take(t, l); o.CommitIndex != 0 {
		t.Fatalf("committed %d with 1, 2 of 5", o.CommitIndex)
	}
	l.Step(51*msec, ack(3, 2, 12))
	if o, _ := take(t, l); o.CommitIndex != 12 {
		t.Fatalf("commit %d, want 12 (held by 1, 2, 3)", o.CommitIndex)
	}
	for now := 60 * msec; now <= 300*msec; now += 10 * msec {
		l.Tick(now)
		if o, dgs := take(t, l); len(to(dgs, 4))+len(to(dgs, 5)) != 0 || len(o.Recover) != 0 {
			t.Fatalf("at %d ms: sent %+v, recover %v", now/msec, dgs, o.Recover)
		}
	}
	if m := l.Registers().MatchIndex; m[4] != 7 || m[5] != 3 {
		t.Fatalf("outside voters' match %v: want what software said (7, 3)", m)
	}
}

// With lazy followers, the followers left outside count as the furthest behind, however
// much they held: the eager ones, those a commit waits for, are the ones sent batches.
func TestOutsideVotersAreNeverTheEagerOnes(t *testing.T) {
	l := New(Config{ClusterID: testCluster, LazyDelay: 5 * time.Millisecond})
	r := regs(1, true, 2, 10, 2, 10, 1, 2, 3, 4, 5)
	r.Outside = []uint64{2, 3} // they held the whole log, as 4 and 5 do
	l.Open(0, r)
	take(t, l)
	for _, id := range []uint64{4, 5} {
		l.Step(0, &Packet{ClusterID: testCluster, From: id, To: 1, Type: VoteResponse, Term: 2, Index: 10})
	}
	l.Tick(msec) // chooses the lazy followers
	take(t, l)
	l.Propose(msec, 0, data(1)...)
	l.seal(msec)
	if _, dgs := take(t, l); len(only(t, dgs, Append)) != 2 || len(to(dgs, 4)) != 1 || len(to(dgs, 5)) != 1 {
		t.Fatalf("the batch went to %+v, want 4 and 5 at once", dgs)
	}
}

// A single-member cluster is its own majority: it commits at once.
func TestSingleMemberCommitsAlone(t *testing.T) {
	e := New(Config{ClusterID: testCluster})
	e.Open(0, regs(1, true, 2, 10, 2, 10, 1))
	e.Propose(0, 0, data(2)...)
	if o, dgs := take(t, e); o.CommitIndex != 12 || len(dgs) != 0 {
		t.Fatalf("commit %d, %d datagrams", o.CommitIndex, len(dgs))
	}
}

// Close reads back the registers as the engine advanced them.
func TestCloseReturnsRegisters(t *testing.T) {
	e := newLeader(t, Config{})
	e.Propose(0, 777, data(3)...)
	e.Step(1, ack(2, 2, 13))
	r := e.Close()
	want := Registers{Enabled: true, ID: 1, IsLeader: true, CurrentTerm: 2, LastLogIndex: 13,
		LastLogTerm: 2, LastLogTime: 777, CommitIndex: 13, Peers: []uint64{1, 2, 3}}
	mi := r.MatchIndex
	r.MatchIndex = nil
	if !equalRegs(r, want) || mi[1] != 13 || mi[2] != 13 || mi[3] != 10 {
		t.Fatalf("registers %+v match %v", r, mi)
	}
	if e.Registers().Enabled {
		t.Fatalf("still enabled after Close")
	}
	// The last Ready after Close still carries the proposals for the host log.
	if o, _ := take(t, e); len(o.Append) != 3 {
		t.Fatalf("proposals lost at Close: %s", indexes(o.Append))
	}

	f := newFollower(t, Config{}, 2)
	f.Step(0, appendPkt(2, 2, 10, 2, 11, ents(2, "a", "b")))
	r = f.Close()
	want = Registers{Enabled: true, ID: 2, CurrentTerm: 2, LastLogIndex: 12, LastLogTerm: 2,
		LastLogTime: 1000, CommitIndex: 11, Peers: []uint64{1, 2, 3}}
	if !equalRegs(r, want) {
		t.Fatalf("follower registers %+v", r)
	}
}

func equalRegs(a, b Registers) bool {
	return a.Enabled == b.Enabled && a.ID == b.ID && a.IsLeader == b.IsLeader &&
		a.CurrentTerm == b.CurrentTerm && a.LastLogIndex == b.LastLogIndex &&
		a.LastLogTerm == b.LastLogTerm && a.LastLogTime == b.LastLogTime &&
		a.CommitIndex == b.CommitIndex && slices.Equal(a.Peers, b.Peers)
}

// A batch whose entries' terms go down, or rise above the datagram's own term, is not
// a leader's (a leader appends entries of its own term after entries of earlier ones):
// it is dropped whole, with no append and no ack.
func TestFollowerDropsBatchWhoseEntryTermsNoLeaderSends(t *testing.T) {
	for name, es := range map[string][]Entry{
		"above the datagram's term": ents(3, "a"),
		"below prevLogTerm":         ents(1, "a"),
		"going down":                append(ents(2, "a"), ents(1, "b")...),
	} {
		f := newFollower(t, Config{}, 2)
		f.Step(0, appendPkt(2, 2, 10, 2, 9, es))
		o, dgs := take(t, f)
		if len(o.Append) != 0 || len(dgs) != 0 || o.Halt != nil {
			t.Fatalf("%s: appended %s, sent %+v, halt %v", name, indexes(o.Append), dgs, o.Halt)
		}
		if st := f.Stats(); st.Dropped != 1 {
			t.Fatalf("%s: Dropped %d, want 1", name, st.Dropped)
		}
		if r := f.Registers(); r.LastLogIndex != 10 || !r.Enabled {
			t.Fatalf("%s: registers %+v", name, r)
		}
	}
}

// A member that refuses the term's vote after the majority granted it does not stop
// the term: software catches it up (Recover), and the others go on.
func TestLeaderRecoversAMemberThatRefusesAfterTheMajority(t *testing.T) {
	e := New(Config{ClusterID: testCluster})
	e.Open(0, regs(1, true, 2, 10, 2, 10, 1, 2, 3))
	e.Step(0, &Packet{ClusterID: testCluster, From: 2, To: 1, Type: VoteResponse, Term: 2, Index: 10})
	take(t, e)
	if e.Voting() {
		t.Fatal("still voting after a majority granted")
	}
	e.Step(0, &Packet{ClusterID: testCluster, From: 3, To: 1, Type: VoteResponse, Term: 2, Index: 7, Reject: true})
	o, _ := take(t, e)
	if !slices.Equal(o.Recover, []uint64{3}) || o.Halt != nil || !e.Registers().Enabled {
		t.Fatalf("late refusal: recover %v, halt %v, enabled %v", o.Recover, o.Halt, e.Registers().Enabled)
	}
	e.Propose(0, 0, data(1)...)
	if _, dgs := take(t, e); len(dgs) != 1 || dgs[0].to != 2 {
		t.Fatalf("after the refusal the batch went to %+v, want 2 alone", dgs)
	}
}

// Resume with an index that is not of this term's log (before the term's first entry,
// or past the leader's last) asks nothing of the follower: it is reported in Recover
// again, for software to go on with.
func TestResumeOutsideTheTermsLogReportsTheFollower(t *testing.T) {
	e := newLeader(t, Config{})
	e.Step(0, &Packet{ClusterID: testCluster, From: 2, To: 1, Type: Nack, Reason: HaltNotOpen, Term: 2, Index: 10})
	if o, _ := take(t, e); !slices.Equal(o.Recover, []uint64{2}) {
		t.Fatalf("Nack: recover %v", o.Recover)
	}
	for _, match := range []uint64{9, 11} { // the term opened at 10; the log ends at 10
		if !e.Resume(0, 2, match) {
			t.Fatalf("Resume(%d) refused for a recovering follower", match)
		}
		o, dgs := take(t, e)
		if !slices.Equal(o.Recover, []uint64{2}) || len(dgs) != 0 {
			t.Fatalf("Resume(%d): recover %v, sent %+v", match, o.Recover, dgs)
		}
	}
	if e.Resume(0, 3, 10) {
		t.Fatal("Resume of a follower the engine still streams to")
	}
}
