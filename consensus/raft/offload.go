package raft

import (
	"fmt"
	"slices"
	"time"

	"github.com/nanokv/nanokv/nicoffload"
)

// Offload drives a nicoffload.Engine beside a Raft core (--mode offload): Waverunner's
// split, where the engine carries new entries in the common case and the core keeps
// elections, heartbeats, reads, membership, snapshots and every repair.
//
// On the leader, once every voter holds the whole log and it is committed, Tick opens
// an accelerated term; a voter the leader has not heard from for an election timeout
// (Raft.Silent: down, or cut off) is left out of it, to software, as long as the others
// make a majority, and rejoins the running term once software has caught it up. The
// core hands the followers to the engine (SetOffloaded: no more entries from the core),
// proposals go to the engine, which appends them to the core's log (AppendOffloaded)
// and sends them in batched datagrams; its commit index releases the proposers at once.
// A follower opens its engine when its leader's vote request arrives; the entries its
// engine takes are stepped into its core as the leader's MsgApp would be
// (StepOffloaded), so the core persists them; the engine's acks stand for its
// MsgAppResp, and the leader feeds them to its core (ReportOffloaded), so the core's
// progress and commit rule stay the only ones. A follower the engine cannot catch up (a
// datagram it missed left the ring) is handed to software alone, and the term goes on
// with the others while they make a majority (detach); once software has caught it up,
// the engine asks it to rejoin the running term (readmit). Anything else the engine did
// not expect (a halt, a role or term change, a software MsgApp with entries on a
// follower) closes it, and software Raft carries on; the leader tries again once
// everyone has caught up or is silent.
//
// Like the core, the driver is a pure state machine: the caller passes the clock (in
// nanoseconds, any origin) and owns the goroutines, the network and the proposers. The
// node loop (package consensus) and the deterministic simulator run this same code.
type Offload struct {
	eng  *nicoffload.Engine
	r    *Raft
	id   uint64
	host OffloadHost

	open    bool
	leading bool
	// retryAt: a leader whose accelerated term ended waits until then before it tries
	// again; backoff doubles (to maxOffloadBackoff) while terms keep ending within a
	// second, so that a network that drops the engine's datagrams (UDP filtered, say)
	// costs a vote round now and then, not every tick.
	retryAt int64
	backoff int64
	// readmitAt: a leader takes back no voter it left to software before then; the
	// backoff doubles (to maxOffloadBackoff) while members keep being detached within
	// a second of being taken in (admittedAt: the term's open, or a rejoin), so that
	// one the engine cannot reach at all (its datagrams filtered, say) costs a rejoin
	// now and then, not one a round trip.
	readmitAt      int64
	readmitBackoff int64
	openedAt       int64
	admittedAt     int64
	// releasedTo is the highest index whose proposers the engine's commit answered.
	releasedTo uint64
	// outside are the voters a leader's open term leaves to software: silent ones it
	// opened without, and those the engine could not catch up (detach).
	outside []uint64
	// rejoining are the voters of outside being taken back (readmit).
	rejoining []rejoin
	stats     OffloadStats
	// ents is appendEntries' batch, reused: the core copies the entries it appends.
	ents []Entry
}

// OffloadHost is what the driver needs of the member around it.
type OffloadHost struct {
	// Send hands the engine's datagrams to the network; it must not block.
	Send func(dgs []nicoffload.Outgoing)
	// Release answers the proposers of entries from..to (inclusive): the engine
	// committed them, before the core knows. Blind writes are acknowledged now.
	Release func(from, to uint64)
	// Drop fails the proposers of entries the log refused: they were never written
	// and never sent, so the writes certainly did not happen.
	Drop func(ents []Entry)
	// Logf, when set, receives the driver's rare events.
	Logf func(format string, args ...any)
}

// OffloadStats counts accelerated terms, the followers a term handed to software and
// went on without (Detached), and those it took back while it ran (Rejoined).
type OffloadStats struct {
	Opened, Closed, Fallbacks, Detached, Rejoined uint64
}

// rejoin is a voter left to software that a leader takes back into its running term:
// since then software sends it no entries; once it has nothing of software's on its way,
// the engine is asked to take it back (asked).
type rejoin struct {
	id    uint64
	since int64
	asked bool
}

const (
	minOffloadBackoff = int64(100 * time.Millisecond)
	maxOffloadBackoff = int64(10 * time.Second)
	// a term that lasted less than this counts as a failure for the backoff
	shortOffloadTerm = int64(time.Second)
)

// NewOffload returns the driver of a new engine beside core r of member id.
func NewOffload(r *Raft, id uint64, cfg nicoffload.Config, host OffloadHost) *Offload {
	if host.Logf == nil {
		host.Logf = func(string, ...any) {}
	}
	return &Offload{eng: nicoffload.New(cfg), r: r, id: id, host: host}
}

// Open reports whether an accelerated term is open on this member.
func (o *Offload) Open() bool { return o.open }

// Leading reports whether the open term is this member's as leader.
func (o *Offload) Leading() bool { return o.open && o.leading }

// Accelerated reports whether the engine carries writes now: open and not halted.
func (o *Offload) Accelerated() bool { return o.open && o.eng.Halted() == nil }

// ReleasedTo is the highest index the engine's commit released. A read that arrives
// after a write was acknowledged must wait for it to be applied, however far the core's
// read index lags behind.
func (o *Offload) ReleasedTo() uint64 { return o.releasedTo }

// Stats returns the driver's counters.
func (o *Offload) Stats() OffloadStats { return o.stats }

// EngineStats returns the engine's counters.
func (o *Offload) EngineStats() nicoffload.Stats { return o.eng.Stats() }

// SetWaiting tells the engine whether the driver waits for a commit, as Raft.SetWaiting
// tells the core: a follower's acks say so, and its leader tells it of a commit at once.
func (o *Offload) SetWaiting(w bool) { o.eng.SetWaiting(w) }

// Tick runs on every tick of the core: the engine's timers, and a leader's attempt to
// open an accelerated term.
func (o *Offload) Tick(now int64) {
	r := o.r
	if o.open {
		o.eng.Tick(now)
		if !o.leading {
			return
		}
		o.readmit(now)
		return
	}
	if r.Role() != Leader || r.Transferee() != None || now < o.retryAt {
		return
	}
	last := r.LastIndex()
	if r.Committed() != last {
		return
	}
	if t, _ := r.TermAt(last); t != r.Term() {
		return // the term's no-op is not in yet
	}
	// Every voter holds the whole log, or is silent (down or cut off: software keeps
	// trying it, and the engine goes on without it), and those that hold it make a
	// majority: the common case of a cluster with a member down is accelerated too.
	m := r.Membership()
	match := map[uint64]uint64{o.id: last}
	var followers, outside []uint64
	for _, id := range m.Voters {
		switch {
		case id == o.id:
		case r.MatchIndex(id) == last:
			followers = append(followers, id)
			match[id] = last
		case r.Silent(id):
			outside = append(outside, id)
			match[id] = r.MatchIndex(id)
		default:
			return // software catches it up first
		}
	}
	if len(followers) == 0 || len(followers)+1 < m.quorum() || r.SetOffloaded(followers) != nil {
		return
	}
	o.eng.Open(now, nicoffload.Registers{ID: o.id, IsLeader: true, CurrentTerm: r.Term(),
		LastLogIndex: last, LastLogTerm: r.Term(), LastLogTime: r.LastTime(), CommitIndex: r.Committed(),
		Peers: slices.Clone(m.Voters), MatchIndex: match, Outside: outside})
	o.open, o.leading, o.outside, o.rejoining = true, true, outside, nil
	o.openedAt, o.admittedAt = now, now
	o.stats.Opened++
	o.host.Logf("raft: member %d opens an accelerated term %d at %d", o.id, r.Term(), last)
}

// Step hands one datagram to the engine; a follower opens its engine for the vote
// request of its own leader in its own term. The caller drains afterwards.
func (o *Offload) Step(now int64, p *nicoffload.Packet) {
	r := o.r
	if !o.open && p.Type == nicoffload.VoteRequest && r.Role() == Follower &&
		p.Term == r.Term() && p.From == r.Lead() && r.Membership().IsVoter(o.id) {
		last := r.LastIndex()
		lastTerm, _ := r.TermAt(last)
		o.eng.Open(now, nicoffload.Registers{ID: o.id, CurrentTerm: r.Term(), LastLogIndex: last,
			LastLogTerm: lastTerm, LastLogTime: r.LastTime(), CommitIndex: r.Committed(),
			Peers: slices.Clone(r.Membership().Voters)})
		o.open, o.leading = true, false
		o.openedAt = now
		o.stats.Opened++
	}
	o.eng.Step(now, p)
}

// PeerWaits tells a leading engine that follower id waits for a commit: it forwarded
// writes the leader is about to propose.
func (o *Offload) PeerWaits(id uint64) {
	if o.open && o.leading {
		o.eng.PeerWaits(id)
	}
}

// Persisted tells a follower's engine (AckAfterPersist) that the log is durable up to
// index: its acks may now cover it.
func (o *Offload) Persisted(index uint64) {
	if o.open {
		o.eng.Persisted(index)
	}
}

// Propose proposes entries through the engine and returns the first one's index; ok is
// false when the engine does not accelerate now (the caller then proposes through the
// core). What the engine cannot carry (an entry larger than a datagram) ends the
// accelerated term first: the core must not append behind the engine's back while the
// engine alone feeds the followers. entryTime is the clock stamped on the entries.
func (o *Offload) Propose(now, entryTime int64, typ EntryType, data ...[]byte) (first uint64, ok bool) {
	if !o.open || !o.leading {
		return 0, false
	}
	if h := o.eng.Halted(); h != nil {
		o.Close(now, true, haltWhy(h))
		return 0, false
	}
	first, err := o.eng.ProposeTyped(now, max(entryTime, o.r.LastTime()), uint8(typ), data...)
	if err != nil {
		o.Close(now, true, err.Error())
		return 0, false
	}
	return first, true
}

// Observe is called with every message before the core steps it: a software MsgApp
// with entries, or a snapshot, on an accelerated follower means software is repairing
// this log, and the engine must not append behind it.
func (o *Offload) Observe(now int64, m Message) {
	if o.open && !o.leading && (m.Type == MsgApp && len(m.Entries) > 0 || m.Type == MsgSnap) {
		why := fmt.Sprintf("software sends it entries after %d", m.Index)
		if m.Type == MsgSnap {
			why = "software sends it a snapshot"
		}
		o.Close(now, true, why)
	}
}

// Drain works off the engine's output (nicoffload.Output's order) and then closes the
// accelerated term if the engine asked for software, or if it no longer matches the
// core (a new term, a leader that stepped down, a follower with another leader).
func (o *Offload) Drain(now int64) {
	if !o.open {
		return
	}
	if why := o.drain(now, true); why != "" {
		o.Close(now, true, why)
		return
	}
	if o.leading {
		// The followers' acks are the core's MsgAppResp: their progress, and the core's
		// commit (and with it the applier), move now. Every drain reports them, not only
		// one whose Ready committed: an ack that commits nothing new (a follower catching
		// up behind the majority) makes no Ready, yet the core's progress decides what
		// software sends that follower once the term closes.
		o.eng.PeerMatches(o.r.ReportOffloaded)
	}
	reg := o.eng.Registers()
	r := o.r
	if r.Term() != reg.CurrentTerm || o.leading && r.Role() != Leader || !o.leading && r.Role() != Follower {
		o.Close(now, true, fmt.Sprintf("software moved on (term %d, %v)", r.Term(), r.Role()))
	}
}

// drain reports why acceleration must stop, or "" when it need not. With mayDetach a
// leader goes on without followers its engine can no longer catch up, when it can
// (detach).
func (o *Offload) drain(now int64, mayDetach bool) (stop string) {
	for o.eng.HasReady() {
		out := o.eng.Ready()
		appended := len(out.Append) == 0 || o.appendEntries(out.Append, out.CommitIndex)
		if len(out.Append) == 0 && out.CommitIndex > 0 && !o.leading {
			o.followerCommit(out.CommitIndex)
		}
		if !appended {
			stop = "the log refused the engine's entries"
		}
		// Released before the datagrams that carry the commit leave: a follower that
		// hears of it may answer a write it forwarded, and a lease read on this leader
		// must see that write by then (the host raises its read index in Release).
		if o.leading && out.CommitIndex > o.releasedTo {
			o.host.Release(o.releasedTo+1, out.CommitIndex)
			o.releasedTo = out.CommitIndex
		}
		// Datagrams that depend on entries this log refused must not leave: a leader's
		// would let a later leader commit what this one reported as never written, a
		// follower's acks would count entries it does not hold.
		if len(out.Datagrams) > 0 && appended {
			o.host.Send(out.Datagrams)
		}
		switch {
		case out.Halt != nil:
			stop = haltWhy(out.Halt)
		case len(out.Recover) > 0 && stop == "" && !(mayDetach && o.detach(now, out.Recover)):
			stop = fmt.Sprintf("members %v to catch up in software", out.Recover)
		}
		o.eng.Advance(out)
	}
	return stop
}

// appendEntries puts the engine's entries in the one Raft log: on the leader as its
// own, on a follower as the leader's MsgApp would.
func (o *Offload) appendEntries(ents []nicoffload.Entry, commit uint64) bool {
	re := o.ents[:0]
	for _, e := range ents {
		re = append(re, Entry{Index: e.Index, Term: e.Term, Time: e.Time, Type: EntryType(e.Type), Data: e.Data})
	}
	defer func() {
		clear(re) // no data kept alive by the scratch
		o.ents = re[:0]
	}()
	r := o.r
	if o.leading {
		if err := r.AppendOffloaded(re); err != nil {
			o.host.Logf("raft: member %d: offload: %v", o.id, err)
			o.host.Drop(re)
			return false
		}
		return true
	}
	prev := re[0].Index - 1
	prevTerm, ok := r.TermAt(prev)
	if !ok || r.Role() != Follower {
		return false
	}
	r.StepOffloaded(Message{Type: MsgApp, From: r.Lead(), To: o.id, Term: r.Term(), Index: prev,
		LogTerm: prevTerm, Entries: re, Commit: min(commit, re[len(re)-1].Index)})
	return r.LastIndex() >= re[len(re)-1].Index
}

// followerCommit takes a commit index the engine heard from the leader without entries,
// as an empty MsgApp from the leader carries it.
func (o *Offload) followerCommit(commit uint64) {
	r := o.r
	last := r.LastIndex()
	lastTerm, ok := r.TermAt(last)
	if !ok || r.Role() != Follower {
		return
	}
	r.StepOffloaded(Message{Type: MsgApp, From: r.Lead(), To: o.id, Term: r.Term(), Index: last,
		LogTerm: lastTerm, Commit: min(commit, last)})
}

// Close ends the accelerated term: the engine's last output is taken (its proposals are
// in the log already, or are dropped), and software Raft has everything. fallback says
// it ended because something unexpected happened; why says what happened, for the log.
func (o *Offload) Close(now int64, fallback bool, why string) {
	if !o.open {
		return
	}
	o.eng.Close()
	o.drain(now, false)
	o.open, o.outside, o.rejoining = false, nil, nil
	if o.leading {
		// Software takes over from where the engine's acks say each follower is.
		o.eng.PeerMatches(o.r.ReportOffloaded)
		o.r.SetOffloaded(nil)
		o.backoff = nextBackoff(o.backoff, fallback && now-o.openedAt < shortOffloadTerm)
		o.retryAt = now + o.backoff
	}
	o.stats.Closed++
	if fallback {
		o.stats.Fallbacks++
	}
	o.host.Logf("raft: member %d closes its accelerated term: %s", o.id, why)
}

// detach hands followers the leader's engine can no longer catch up (its Recover: a
// datagram they missed left the ring, or they could not rejoin) to software Raft, which
// sends them what they lack over TCP while the engine goes on with the others: one slow
// member costs the others nothing. The engine keeps them out (it sends them nothing
// more) and counts what they acked in the majority. It reports false, and the term must
// end, when the followers the engine still replicates to and the leader are no majority.
func (o *Offload) detach(now int64, ids []uint64) bool {
	r := o.r
	if !o.leading {
		return false
	}
	keep, active := o.inside(ids), 0
	for _, id := range keep {
		if !o.isRejoining(id) {
			active++
		}
	}
	if active == 0 || active+1 < r.Membership().quorum() || r.SetOffloaded(keep) != nil {
		return false
	}
	failed := now-o.admittedAt < shortOffloadTerm
	for _, id := range ids {
		if !slices.Contains(o.outside, id) {
			o.outside = append(o.outside, id)
			o.stats.Detached++
		} else if o.isRejoining(id) {
			o.stats.Detached++ // it could not rejoin: it leaves again
			failed = true
		}
		o.rejoining = slices.DeleteFunc(o.rejoining, func(j rejoin) bool { return j.id == id })
	}
	o.delayReadmit(now, failed)
	o.host.Logf("raft: member %d leaves members %v to software; its accelerated term goes on", o.id, ids)
	return true
}

// inside lists the voters, other than this leader and those in except, that the
// engine replicates to or is taking back: the members software must leave to it.
func (o *Offload) inside(except []uint64) []uint64 {
	var ids []uint64
	for _, id := range o.r.Membership().Voters {
		if id != o.id && !slices.Contains(except, id) && (!slices.Contains(o.outside, id) || o.isRejoining(id)) {
			ids = append(ids, id)
		}
	}
	return ids
}

func (o *Offload) isRejoining(id uint64) bool {
	return slices.ContainsFunc(o.rejoining, func(j rejoin) bool { return j.id == id })
}

// readmit takes the voters a leader's running term left to software back into it once
// software has caught them up to the commit index, without ending the term. Software
// first stops sending such a member entries (SetOffloaded); once what it sent is all
// acknowledged (Raft.Settled: none of its MsgApps can then reach the member after its
// engine opened, which would close it), the engine asks the member to rejoin
// (Engine.Resume) and replays it what it lacks from the ring. A member whose software
// appends do not settle within a second (or that the engine will not ask) goes back to
// software; one the engine cannot take back (no answer, a refusal, a ring that no
// longer holds what it lacks) comes back in the engine's Recover, and is detached again.
func (o *Offload) readmit(now int64) {
	r := o.r
	for i := 0; i < len(o.rejoining); i++ {
		j := &o.rejoining[i]
		switch {
		case j.asked && o.eng.Rejoined(j.id):
			o.outside = slices.DeleteFunc(o.outside, func(id uint64) bool { return id == j.id })
			o.host.Logf("raft: member %d takes member %d back into its accelerated term", o.id, j.id)
			o.rejoining = slices.Delete(o.rejoining, i, i+1)
			i--
			o.stats.Rejoined++
			o.admittedAt = now
		case !j.asked && r.Settled(j.id) && o.eng.Resume(now, j.id, r.MatchIndex(j.id)):
			j.asked = true
		case !j.asked && (r.Settled(j.id) || now-j.since >= shortOffloadTerm):
			// the engine would not ask it, or software's appends did not settle
			id := j.id
			o.rejoining = slices.Delete(o.rejoining, i, i+1)
			i--
			if r.SetOffloaded(o.inside(nil)) != nil {
				o.Close(now, true, "software cannot take back a member")
				return
			}
			o.delayReadmit(now, true)
			o.host.Logf("raft: member %d leaves member %d to software: it could not ask it to rejoin", o.id, id)
		}
	}
	if now < o.readmitAt || o.eng.Voting() {
		return
	}
	for _, id := range o.outside {
		if o.isRejoining(id) || r.Silent(id) || r.MatchIndex(id) < r.Committed() {
			continue
		}
		if r.SetOffloaded(append(o.inside(nil), id)) == nil {
			o.rejoining = append(o.rejoining, rejoin{id: id, since: now})
		}
	}
}

// delayReadmit puts off the next readmission by the readmission's backoff, doubled after
// a failure.
func (o *Offload) delayReadmit(now int64, failed bool) {
	o.readmitBackoff = nextBackoff(o.readmitBackoff, failed)
	o.readmitAt = now + o.readmitBackoff
}

// nextBackoff is the wait after one of backoff: doubled (within the bounds) after a
// failure, the shortest after anything else.
func nextBackoff(backoff int64, failed bool) int64 {
	if failed {
		return min(max(2*backoff, minOffloadBackoff), maxOffloadBackoff)
	}
	return minOffloadBackoff
}

// haltWhy says why the engine halted, for the log.
func haltWhy(h *nicoffload.Halt) string {
	return fmt.Sprintf("the engine halted: %v from member %d (term %d, index %d)", h.Reason, h.From, h.Term, h.Index)
}

// Abort drops the engine without draining it, for a member that stops.
func (o *Offload) Abort() {
	if o.open {
		o.eng.Close()
		o.open = false
	}
}
