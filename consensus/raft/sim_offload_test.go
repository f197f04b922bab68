package raft

import (
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/nanokv/nanokv/internal/kvmodel"
	"github.com/nanokv/nanokv/nicoffload"
)

// The simulator with an offload engine on every member (--mode offload): the same faults,
// and the engine's datagrams on the same lossy, reordering, partitioned network. The
// members run the driver the node loop runs (Offload, offload.go); the simulator plays
// the host: its network carries the datagrams, its clients are the proposers the
// engine's commit answers (earlier than the core's, so a lost acknowledged write shows
// in the history). Engines ack only what their member persisted (the --fsync always
// mode): the simulator's crashes lose everything not persisted, and only that mode
// promises that an acknowledged write survives them.

// simOffload is a member's driver and the reads waiting behind its engine's commit. A
// crash loses it.
type simOffload struct {
	*Offload
	// waiting are reads whose read index is not applied yet: a read on an accelerated
	// leader waits for the engine's commit, which may run ahead of the core's.
	waiting []*clientOp
}

// unit of the simulator's clock, for the engine's timers.
const simUnit = int64(time.Millisecond)

func (s *sim) newOffload(nd *simNode) *simOffload {
	// Every delivered datagram is parsed from a buffer of its own (duplicates share one,
	// which nothing writes), so even-numbered members keep the data they are given, as a
	// RaftNode's engine does, and the others copy it: digests and histories compare both.
	cfg := nicoffload.Config{ClusterID: 1, AckAfterPersist: true, RetransmitTimeout: 20 * time.Millisecond,
		VoteTimeout: 100 * time.Millisecond, RingDatagrams: 64, KeepData: nd.id%2 == 0}
	if s.seed%2 == 1 {
		cfg.LazyDelay = time.Duration(simUnit) // followers beyond a quorum get batches late
	}
	if s.seed/2%2 == 1 {
		cfg.InFlight = 2 // group commit, as the server runs it
	}
	so := &simOffload{}
	so.Offload = NewOffload(nd.r, nd.id, cfg, OffloadHost{
		Send: func(dgs []nicoffload.Outgoing) {
			for _, d := range dgs {
				// A leader tells followers only of commits its host knows of: the
				// core's, or the engine's once released (a lease read on the leader
				// must see whatever a follower answers after hearing of one).
				if so.leading {
					if pk, err := nicoffload.ParsePacket(d.Bytes); err == nil &&
						pk.LeaderCommit > max(so.releasedTo, nd.r.Committed()) {
						s.t.Fatalf("seed %d: member %d sends commit %d before its host knows of it (released %d, core %d)",
							s.seed, nd.id, pk.LeaderCommit, so.releasedTo, nd.r.Committed())
					}
				}
				s.sendDatagram(nd.id, d)
			}
		},
		Release: func(from, to uint64) {
			for idx := from; idx <= to; idx++ {
				if op := nd.writes[idx]; op != nil && op.term == nd.r.Term() && !op.returned {
					s.finish(op, "")
					s.stats.released++
				}
			}
		},
		Drop: func(ents []Entry) {
			for _, e := range ents {
				if op := nd.writes[e.Index]; op != nil && op.term == nd.r.Term() {
					delete(nd.writes, e.Index)
					s.fail(op) // certainly not written: the client retries
				}
			}
		},
		Logf: s.logf,
	})
	return so
}

// offloadTick runs the engine's timers and lets a leader open an accelerated term.
func (s *sim) offloadTick(nd *simNode) {
	was := nd.off.Leading()
	nd.off.Tick(s.now * simUnit)
	if !was && nd.off.Leading() {
		s.stats.accelerated++
	}
}

// sendDatagram puts one datagram on the simulated network, with the faults messages get.
func (s *sim) sendDatagram(from uint64, d nicoffload.Outgoing) {
	data := slices.Clone(d.Bytes)
	copies := s.faultCopies(0.03, 0.01)
	for range copies {
		delay := int64(1 + s.rng.IntN(3))
		if s.faults && s.rng.IntN(20) == 0 {
			delay += int64(s.rng.IntN(40))
		}
		s.schedule(s.now+delay, &event{kind: evDatagram, node: d.To, msg: simMsg{m: Message{From: from, To: d.To}}, data: data})
	}
}

// deliverDatagram hands a datagram to its member's engine; a follower opens its engine
// for its leader's vote request.
func (s *sim) deliverDatagram(e *event) {
	to := s.nodes[e.node]
	if to == nil || !to.up || to.off == nil || s.partition[e.msg.m.From] != s.partition[e.node] || s.deaf[e.node] {
		return
	}
	p, err := nicoffload.ParsePacket(e.data)
	if err != nil {
		s.t.Fatalf("seed %d: a datagram does not decode: %v", s.seed, err)
	}
	to.off.Step(s.now*simUnit, &p)
	s.process(to)
}

// answerWaitingReads serves the reads whose index is now applied.
func (s *sim) answerWaitingReads(nd *simNode) {
	o := nd.off
	if o == nil || len(o.waiting) == 0 {
		return
	}
	kept := o.waiting[:0]
	for _, op := range o.waiting {
		if nd.sm.applied >= op.readAt {
			s.finish(op, nd.sm.get(op.key))
		} else {
			kept = append(kept, op)
		}
	}
	o.waiting = kept
}

// A follower whose engine misses datagrams until they leave the leader's ring is handed
// to software alone: the accelerated term goes on with the other follower, the engine's
// commit goes on answering writes, and software catches the follower up over TCP. Once
// it holds what the majority does, the engine asks it to rejoin the running term: while
// the member still hears no datagram it does not answer and is detached again, less and
// less often; once it hears them, it rejoins and stays, and the term never ends. No
// faults but that one; the history must stay linearizable and the members converge.
func TestOffloadGoesOnWithoutAFollowerItCannotCatchUp(t *testing.T) {
	s := newSim(t, 2, 3, false, true)
	s.faults = false // no partitions, crashes, losses or delays but ours
	var leader *simNode
	runUntil := func(what string, cond func() bool) {
		t.Helper()
		for deadline := s.now + 3000; !cond(); {
			if s.now >= deadline {
				t.Fatalf("at %d: %s did not happen", s.now, what)
			}
			s.run(s.now + tickEvery)
		}
	}
	runUntil("an accelerated term", func() bool {
		for _, nd := range s.claimedLeaders() {
			if nd.off.Leading() && nd.off.eng.Registers().Enabled {
				leader = nd
			}
		}
		return leader != nil
	})
	var deaf uint64
	for _, id := range s.ids {
		if id != leader.id && deaf == 0 {
			deaf = id
		}
	}
	s.deaf = map[uint64]bool{deaf: true}
	runUntil("the detach", func() bool { return leader.off.Stats().Detached == 1 })
	if st := leader.off.Stats(); !leader.off.Leading() || st.Closed != 0 {
		t.Fatalf("the term ended with the detach: leading %v, stats %+v", leader.off.Leading(), st)
	}
	if leader.r.offloaded[deaf] || !leader.r.offloaded[s.other(leader.id, deaf)] {
		t.Fatalf("offloaded %v after detaching %d", leader.r.offloaded, deaf)
	}
	// The engine's commit goes on answering writes, and software brings the deaf member
	// along over TCP.
	released, at := s.stats.released, leader.r.Committed()
	runUntil("writes released and the deaf member caught up in software", func() bool {
		return s.stats.released > released+50 && s.nodes[deaf].r.LastIndex() > at+50
	})
	// Asked to rejoin and detached again (it does not hear the request), ever less
	// often: the readmission backs off. The term never ends.
	s.run(s.now + 3000)
	st := leader.off.Stats()
	if st.Fallbacks != 0 || st.Closed != 0 || st.Rejoined != 0 || st.Detached < 3 || st.Detached > 6 {
		t.Fatalf("after 3000 ms of a deaf member: %+v", st)
	}
	s.deaf = nil
	runUntil("the member taken back into the running term", func() bool {
		return leader.off.Stats().Rejoined == 1 && leader.r.offloaded[deaf]
	})
	st = leader.off.Stats()
	s.run(s.now + 1000)
	if now := leader.off.Stats(); now != st || st.Closed != 0 || !leader.r.offloaded[deaf] || leader.r.Role() != Leader {
		t.Fatalf("after the member heard datagrams again: %+v, then %+v; offloaded %v", st, now, leader.r.offloaded)
	}
	// The engine carries the member's writes again: it acks them.
	m := leader.off.eng.Registers().MatchIndex[deaf]
	runUntil("acks from the member that rejoined", func() bool {
		return leader.off.eng.Registers().MatchIndex[deaf] > m+50
	})
	s.converge()
	if !porcupine.CheckOperations(kvmodel.Model, s.ops) {
		t.Fatal("history not linearizable")
	}
}

// other is the member of a 3-member simulation that is neither a nor b.
func (s *sim) other(a, b uint64) uint64 {
	for _, id := range s.ids {
		if id != a && id != b {
			return id
		}
	}
	return 0
}
