package raft

import (
	"slices"
	"time"

	"github.com/nanokv/nanokv/nicoffload"
)

// The simulator with an offload engine on every member (--mode offload): the same faults,
// and the engine's datagrams on the same lossy, reordering, partitioned network. The
// driver below is the simulator's copy of consensus.RaftNode's (consensus/offload.go):
// the leader opens an accelerated term once every voter holds its whole committed log,
// proposals go through the engine, whose commit answers the clients at once (earlier
// than the core's), followers step the engine's entries into their cores, and anything
// unexpected closes the term. Engines ack only what their member persisted (the
// --fsync always mode): the simulator's crashes lose everything not persisted, and only
// that mode promises that an acknowledged write survives them.

// simOffload is a member's engine and the driver's view of it. A crash loses it.
type simOffload struct {
	eng        *nicoffload.Engine
	open       bool
	leading    bool
	retryAt    int64
	releasedTo uint64
	opened     int
	// waiting are reads whose read index is not applied yet: a read on an accelerated
	// leader waits for the engine's commit, which may run ahead of the core's.
	waiting []*clientOp
}

// unit of the simulator's clock, for the engine's timers.
const simUnit = int64(time.Millisecond)

func (s *sim) newOffload() *simOffload {
	return &simOffload{eng: nicoffload.New(nicoffload.Config{ClusterID: 1, AckAfterPersist: true,
		RetransmitTimeout: 20 * time.Millisecond, VoteTimeout: 100 * time.Millisecond,
		RingDatagrams: 64})}
}

// offloadTick runs the engine's timers and lets a leader open an accelerated term.
func (s *sim) offloadTick(nd *simNode) {
	o := nd.off
	if o.open {
		o.eng.Tick(s.now * simUnit)
		return
	}
	r := nd.r
	last := r.LastIndex()
	if r.Role() != Leader || r.Transferee() != None || s.now < o.retryAt || r.Committed() != last {
		return
	}
	if t, _ := r.TermAt(last); t != r.Term() {
		return
	}
	m := r.Membership()
	match := map[uint64]uint64{}
	var followers []uint64
	for _, id := range m.Voters {
		if id != nd.id {
			if r.MatchIndex(id) != last {
				return
			}
			followers = append(followers, id)
		}
		match[id] = last
	}
	if len(followers) == 0 || r.SetOffloaded(followers) != nil {
		return
	}
	o.eng.Open(s.now*simUnit, nicoffload.Registers{ID: nd.id, IsLeader: true, CurrentTerm: r.Term(),
		LastLogIndex: last, LastLogTerm: r.Term(), LastLogTime: r.LastTime(), CommitIndex: r.Committed(),
		Peers: slices.Clone(m.Voters), MatchIndex: match})
	o.open, o.leading = true, true
	o.opened++
	s.stats.accelerated++
	s.logf("member %d opens an accelerated term %d at %d", nd.id, r.Term(), last)
}

// closeOffload ends the member's accelerated term.
func (s *sim) closeOffload(nd *simNode) {
	o := nd.off
	if o == nil || !o.open {
		return
	}
	o.eng.Close()
	s.drainOffload(nd)
	o.open = false
	if o.leading {
		o.eng.PeerMatches(nd.r.ReportOffloaded)
		nd.r.SetOffloaded(nil)
		o.retryAt = s.now + 100
	}
	s.logf("member %d closes its accelerated term", nd.id)
}

// drainOffload works off the engine's output, as consensus.RaftNode.drainOffload does.
func (s *sim) drainOffload(nd *simNode) {
	o := nd.off
	if o == nil {
		return
	}
	stop := false
	for o.eng.HasReady() {
		out := o.eng.Ready()
		appended := true
		if len(out.Append) > 0 {
			appended = s.appendOffloaded(nd, out.Append, out.CommitIndex)
		} else if out.CommitIndex > 0 && !o.leading {
			r := nd.r
			last := r.LastIndex()
			if lt, ok := r.TermAt(last); ok && r.Role() == Follower {
				r.StepOffloaded(Message{Type: MsgApp, From: r.Lead(), To: nd.id, Term: r.Term(), Index: last,
					LogTerm: lt, Commit: min(out.CommitIndex, last)})
			}
		}
		if appended {
			for _, d := range out.Datagrams {
				s.sendDatagram(nd.id, d)
			}
		} else {
			stop = true
		}
		if o.leading && out.CommitIndex > 0 {
			s.release(nd, out.CommitIndex)
			o.eng.PeerMatches(nd.r.ReportOffloaded)
		}
		if len(out.Recover) > 0 || out.Halt != nil {
			stop = true
		}
		o.eng.Advance(out)
	}
	if stop && o.open {
		s.closeOffload(nd)
	}
}

func (s *sim) appendOffloaded(nd *simNode, ents []nicoffload.Entry, commit uint64) bool {
	re := make([]Entry, len(ents))
	for i, e := range ents {
		re[i] = Entry{Index: e.Index, Term: e.Term, Time: e.Time, Type: EntryType(e.Type), Data: e.Data}
	}
	r := nd.r
	if nd.off.leading {
		if err := r.AppendOffloaded(re); err != nil {
			// Never in the log and never sent: the writes certainly did not happen.
			for _, e := range re {
				if op := nd.writes[e.Index]; op != nil && op.term == r.Term() {
					delete(nd.writes, e.Index)
					s.fail(op) // certainly not written: the client retries
				}
			}
			return false
		}
		return true
	}
	prev := re[0].Index - 1
	prevTerm, ok := r.TermAt(prev)
	if !ok || r.Role() != Follower {
		return false
	}
	r.StepOffloaded(Message{Type: MsgApp, From: r.Lead(), To: nd.id, Term: r.Term(), Index: prev,
		LogTerm: prevTerm, Entries: re, Commit: min(commit, re[len(re)-1].Index)})
	return r.LastIndex() >= re[len(re)-1].Index
}

// release answers the clients whose writes the engine committed: before the core
// commits them, so a lost acknowledged write shows in the history.
func (s *sim) release(nd *simNode, commit uint64) {
	o := nd.off
	for idx := o.releasedTo + 1; idx <= commit; idx++ {
		if op := nd.writes[idx]; op != nil && op.term == nd.r.Term() && !op.returned {
			s.finish(op, "")
			s.stats.released++
		}
	}
	o.releasedTo = max(o.releasedTo, commit)
}

// checkOffload closes a term that no longer matches the core (a new term, a leader
// that stepped down).
func (s *sim) checkOffload(nd *simNode) {
	o := nd.off
	if o == nil || !o.open {
		return
	}
	reg := o.eng.Registers()
	r := nd.r
	if r.Term() != reg.CurrentTerm || o.leading && r.Role() != Leader || !o.leading && r.Role() != Follower {
		s.closeOffload(nd)
	}
}

// sendDatagram puts one datagram on the simulated network, with the faults messages get.
func (s *sim) sendDatagram(from uint64, d nicoffload.Outgoing) {
	data := slices.Clone(d.Bytes)
	copies := 1
	if s.faults {
		switch p := s.rng.Float64(); {
		case p < 0.03:
			copies = 0
		case p < 0.04:
			copies = 2
		}
	}
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
	o, r := to.off, to.r
	if !o.open && p.Type == nicoffload.VoteRequest && r.Role() == Follower && p.Term == r.Term() &&
		p.From == r.Lead() && r.Membership().IsVoter(to.id) {
		last := r.LastIndex()
		lastTerm, _ := r.TermAt(last)
		o.eng.Open(s.now*simUnit, nicoffload.Registers{ID: to.id, CurrentTerm: r.Term(), LastLogIndex: last,
			LastLogTerm: lastTerm, LastLogTime: r.LastTime(), CommitIndex: r.Committed(),
			Peers: slices.Clone(r.Membership().Voters)})
		o.open, o.leading = true, false
		o.opened++
	}
	o.eng.Step(s.now*simUnit, &p)
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
