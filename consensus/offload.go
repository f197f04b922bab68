package consensus

import (
	"slices"
	"time"

	"github.com/nanokv/nanokv/consensus/raft"
	"github.com/nanokv/nanokv/nicoffload"
)

// Offload mode (--mode offload): the common case of replication runs in a
// nicoffload.Engine (Waverunner's split: the software core keeps elections, heartbeats,
// reads, membership, snapshots and every repair; the engine carries new entries).
//
// The loop owns the engine as it owns the core. On the leader, once every voter holds
// the whole log and it is committed, the loop opens an accelerated term: the core hands
// the followers to the engine (raft.SetOffloaded: no more entries over TCP), proposals go
// to the engine, which appends them to the core's log (raft.AppendOffloaded) and sends
// them in batched datagrams; its commit index releases the proposers at once. A follower
// opens its engine when the leader's vote request arrives; the entries its engine takes
// are stepped into its core as the leader's MsgApp would be (raft.StepOffloaded), so the
// core persists them; the engine's acks stand for its MsgAppResp, and the leader feeds
// them to its core (raft.ReportOffloaded), so the core's progress and commit rule stay
// the only ones. Anything the engine did not expect (a
// halt, a follower it cannot catch up, a role change, a membership change, a software
// MsgApp with entries on a follower) closes it, and software Raft carries on; the leader
// tries again once everyone has caught up.
type OffloadConfig struct {
	Engine nicoffload.Config
	// Send hands datagrams to the transport; it must not block.
	Send func(dgs []nicoffload.Outgoing)
}

// offload is the loop's view of its engine.
type offload struct {
	cfg     OffloadConfig
	eng     *nicoffload.Engine
	open    bool
	leading bool
	// retryAt: a leader whose accelerated term ended waits until then before it tries
	// again; backoff doubles (to 10 s) while terms keep ending within a second, so that
	// a network that drops the engine's datagrams (UDP filtered, say) costs a vote round
	// now and then, not every 100 ms.
	retryAt  time.Time
	backoff  time.Duration
	openedAt time.Time
	stats    OffloadStats
}

// OffloadStats counts engine events for INFO raft.
type OffloadStats struct {
	Opened, Closed, Fallbacks uint64
	Engine                    nicoffload.Stats
}

func newOffload(cfg OffloadConfig) *offload {
	return &offload{cfg: cfg, eng: nicoffload.New(cfg.Engine)}
}

// StepDatagrams delivers datagrams from the offload transport. The packets are copied:
// the transport reuses its buffers once this returns. Like Step it never blocks.
func (n *RaftNode) StepDatagrams(pkts []nicoffload.Packet) {
	if n.off == nil {
		return
	}
	cp := make([]nicoffload.Packet, len(pkts))
	for i, p := range pkts {
		cp[i] = p
		if len(p.Entries) > 0 {
			cp[i].Entries = make([]nicoffload.Entry, len(p.Entries))
			for j, e := range p.Entries {
				e.Data = append([]byte(nil), e.Data...)
				cp[i].Entries[j] = e
			}
		}
	}
	select {
	case n.dgramc <- cp:
	default:
	}
}

func monoNow() int64 { return time.Now().UnixNano() }

// offloadTick runs on every tick: the engine's timers, and a leader's attempt to open an
// accelerated term.
func (n *RaftNode) offloadTick() {
	o := n.off
	if o == nil {
		return
	}
	if o.open {
		o.eng.Tick(monoNow())
		return
	}
	r := n.r
	if r.Role() != raft.Leader || r.Transferee() != raft.None || time.Now().Before(o.retryAt) {
		return
	}
	last := r.LastIndex()
	m := r.Membership()
	if r.Committed() != last || len(m.Voters) < 2 {
		return
	}
	if t, _ := r.TermAt(last); t != r.Term() {
		return // the term's no-op is not in yet
	}
	match := map[uint64]uint64{}
	for _, id := range m.Voters {
		if id != n.cfg.ID && r.MatchIndex(id) != last {
			return // software catches it up first
		}
		match[id] = last
	}
	var followers []uint64
	for _, id := range m.Voters {
		if id != n.cfg.ID {
			followers = append(followers, id)
		}
	}
	if err := r.SetOffloaded(followers); err != nil {
		return
	}
	o.eng.Open(monoNow(), nicoffload.Registers{ID: n.cfg.ID, IsLeader: true, CurrentTerm: r.Term(),
		LastLogIndex: last, LastLogTerm: r.Term(), LastLogTime: r.LastTime(), CommitIndex: r.Committed(),
		Peers: slices.Clone(m.Voters), MatchIndex: match})
	o.open, o.leading = true, true
	o.openedAt = time.Now()
	o.stats.Opened++
}

// offloadStep hands datagrams to the engine; a follower opens its engine for the vote
// request of its own leader in its own term.
func (n *RaftNode) offloadStep(pkts []nicoffload.Packet) {
	o := n.off
	now := monoNow()
	for i := range pkts {
		p := &pkts[i]
		if !o.open && p.Type == nicoffload.VoteRequest && n.r.Role() == raft.Follower &&
			p.Term == n.r.Term() && p.From == n.r.Lead() && n.r.Membership().IsVoter(n.cfg.ID) {
			r := n.r
			last := r.LastIndex()
			lastTerm, _ := r.TermAt(last)
			o.eng.Open(now, nicoffload.Registers{ID: n.cfg.ID, CurrentTerm: r.Term(), LastLogIndex: last,
				LastLogTerm: lastTerm, LastLogTime: r.LastTime(), CommitIndex: r.Committed(),
				Peers: slices.Clone(r.Membership().Voters)})
			o.open, o.leading = true, false
			o.stats.Opened++
		}
		o.eng.Step(now, p)
	}
}

// closeOffload ends the accelerated term: the engine's last output is taken (its
// proposals are in the log already, or are failed), and software Raft has everything.
func (n *RaftNode) closeOffload(fallback bool) {
	o := n.off
	if o == nil || !o.open {
		return
	}
	o.eng.Close()
	n.drainOffload()
	o.open = false
	if o.leading {
		// Software takes over from where the engine's acks say each follower is.
		o.eng.PeerMatches(n.r.ReportOffloaded)
		n.r.SetOffloaded(nil)
		if time.Since(o.openedAt) < time.Second {
			o.backoff = min(max(2*o.backoff, 100*time.Millisecond), 10*time.Second)
		} else {
			o.backoff = 100 * time.Millisecond
		}
		o.retryAt = time.Now().Add(o.backoff)
	}
	o.stats.Closed++
	if fallback {
		o.stats.Fallbacks++
	}
}

// drainOffload works off the engine's output (nicoffload.Output's order). It reports
// whether acceleration must stop.
func (n *RaftNode) drainOffload() (stop bool) {
	o := n.off
	for o.eng.HasReady() {
		out := o.eng.Ready()
		appended := len(out.Append) == 0 || n.appendOffloaded(out.Append, out.CommitIndex)
		if len(out.Append) == 0 && out.CommitIndex > 0 && !o.leading {
			n.followerCommit(out.CommitIndex)
		}
		if !appended {
			stop = true
		}
		// Datagrams that depend on entries this log refused must not leave: a leader's
		// would let a later leader commit what this one reported as never written, a
		// follower's acks would count entries it does not hold.
		if len(out.Datagrams) > 0 && appended {
			o.cfg.Send(out.Datagrams)
		}
		if o.leading && out.CommitIndex > 0 {
			n.releaseUpTo(out.CommitIndex)
			// The followers' acks are the core's MsgAppResp: their progress, and the
			// core's commit (and with it the applier), move now.
			o.eng.PeerMatches(n.r.ReportOffloaded)
		}
		if len(out.Recover) > 0 || out.Halt != nil {
			stop = true
		}
		o.eng.Advance(out)
	}
	return stop
}

// appendOffloaded puts the engine's entries in the one Raft log: on the leader as its
// own, on a follower as the leader's MsgApp would.
func (n *RaftNode) appendOffloaded(ents []nicoffload.Entry, commit uint64) bool {
	re := make([]raft.Entry, len(ents))
	for i, e := range ents {
		re[i] = raft.Entry{Index: e.Index, Term: e.Term, Time: e.Time, Type: raft.EntryType(e.Type), Data: e.Data}
	}
	r := n.r
	if n.off.leading {
		if err := r.AppendOffloaded(re); err != nil {
			n.cfg.Logf("consensus: member %d: offload: %v", n.cfg.ID, err)
			n.failOffloaded(re)
			return false
		}
		return true
	}
	prev := re[0].Index - 1
	prevTerm, ok := r.TermAt(prev)
	if !ok || r.Role() != raft.Follower {
		return false
	}
	r.StepOffloaded(raft.Message{Type: raft.MsgApp, From: r.Lead(), To: n.cfg.ID, Term: r.Term(), Index: prev,
		LogTerm: prevTerm, Entries: re, Commit: min(commit, re[len(re)-1].Index)})
	return r.LastIndex() >= re[len(re)-1].Index
}

// followerCommit takes a commit index the engine heard from the leader without entries,
// as an empty MsgApp from the leader carries it.
func (n *RaftNode) followerCommit(commit uint64) {
	r := n.r
	last := r.LastIndex()
	lastTerm, ok := r.TermAt(last)
	if !ok || r.Role() != raft.Follower {
		return
	}
	r.StepOffloaded(raft.Message{Type: raft.MsgApp, From: r.Lead(), To: n.cfg.ID, Term: r.Term(), Index: last,
		LogTerm: lastTerm, Commit: min(commit, last)})
}

// releaseUpTo answers the proposers whose entries the engine committed: blind writes are
// acknowledged now; the entries reach the applier when the core commits them too.
func (n *RaftNode) releaseUpTo(commit uint64) {
	for idx := n.releasedTo + 1; idx <= commit; idx++ {
		if p := n.pending[idx]; p != nil && !p.released && p.term == n.r.Term() {
			p.released = true
			p.done <- nil
		}
	}
	n.releasedTo = max(n.releasedTo, commit)
}

// failOffloaded fails the proposals of entries that never reached the log.
func (n *RaftNode) failOffloaded(ents []raft.Entry) {
	for _, e := range ents {
		if p := n.pending[e.Index]; p != nil && !p.released {
			delete(n.pending, e.Index)
			p.done <- ErrDropped
		}
	}
}

// proposeOffloaded proposes through the engine; false when it is not accelerating (the
// caller then proposes through the core). What the engine cannot carry (an entry larger
// than a datagram) ends the accelerated term first: the core must not append behind
// the engine's back while it alone feeds the followers.
func (n *RaftNode) proposeOffloaded(typ raft.EntryType, batch []*proposal, data [][]byte) bool {
	o := n.off
	if o == nil || !o.open || !o.leading {
		return false
	}
	if o.eng.Halted() != nil {
		n.closeOffload(true)
		return false
	}
	first, err := o.eng.ProposeTyped(monoNow(), max(n.cfg.Now(), n.r.LastTime()), uint8(typ), data...)
	if err != nil {
		n.closeOffload(true)
		return false
	}
	for i, p := range batch {
		p.index, p.term = first+uint64(i), n.r.Term()
		n.pending[p.index] = p
	}
	return true
}

// checkOffload closes an accelerated term that no longer matches the core: a new term,
// a leader that stepped down, a follower with another leader.
func (n *RaftNode) checkOffload() {
	o := n.off
	if o == nil || !o.open {
		return
	}
	reg := o.eng.Registers()
	r := n.r
	if r.Term() != reg.CurrentTerm || o.leading && r.Role() != raft.Leader || !o.leading && r.Role() != raft.Follower {
		n.closeOffload(true)
	}
}

// offloadStatus is the engine's state for Status (the loop publishes it).
func (n *RaftNode) offloadStatus() *OffloadStatus {
	o := n.off
	if o == nil {
		return nil
	}
	return &OffloadStatus{Accelerated: o.open && o.eng.Halted() == nil, Opened: o.stats.Opened,
		Closed: o.stats.Closed, Fallbacks: o.stats.Fallbacks, Engine: o.eng.Stats()}
}

// OffloadStatus is what INFO raft shows of the offload engine.
type OffloadStatus struct {
	Accelerated               bool
	Opened, Closed, Fallbacks uint64
	Engine                    nicoffload.Stats
}
