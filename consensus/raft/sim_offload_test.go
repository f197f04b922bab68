package raft

import (
	"slices"
	"time"

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
	if to == nil || !to.up || to.off == nil || s.partition[e.msg.m.From] != s.partition[e.node] {
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
