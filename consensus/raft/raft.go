// Package raft is nanokv's Raft core: a pure, deterministic state machine. It has no
// goroutines, no clock and no I/O. The driver (package consensus) feeds it messages with
// Step, time with Tick and work with Propose/ReadIndex/TransferLeader/ProposeConfChange,
// then collects what the core decided with Ready, acts on it (persist, send, apply) and
// calls Advance. Everything the driver must do, and in which order, is written on Ready.
//
// Implemented: leader election with pre-vote and check-quorum (§9.6 of Ongaro's
// dissertation), log replication with pipelining, batching and an in-flight window,
// fast backtracking on rejection, commit only of the current term's entries (§5.4.2)
// through the new leader's no-op, ReadIndex and leader-lease reads (§6.4), leadership
// transfer (§3.10), single-server membership changes with learners (§4.1–4.2), log
// compaction and snapshot installation (§5).
package raft

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Config configures a core.
type Config struct {
	ID uint64
	// ElectionTicks is the minimum election timeout; each follower picks its timeout in
	// [ElectionTicks, 1.5·ElectionTicks]. A leader that has heard from no majority in two
	// periods of ElectionTicks in a row steps down (check-quorum; see tickHeartbeat).
	ElectionTicks int
	// HeartbeatTicks is the heartbeat period; it must be well under ElectionTicks.
	HeartbeatTicks int
	// LeaseTicks is how long after sending a heartbeat that a majority acknowledged the
	// leader may serve reads without a round trip. It must be below ElectionTicks by a
	// margin that covers clock-rate drift between nodes and tick granularity; 0 means
	// ElectionTicks−2.
	LeaseTicks int
	// MaxMsgBytes caps the entry data of one MsgApp (one entry is always allowed).
	MaxMsgBytes int
	// MaxInflight caps the MsgApps in flight to one follower in replicate state.
	MaxInflight int
	// Rand returns a number in [0, n); it drives election timeouts. nil seeds one from
	// ID, so a simulation with fixed IDs is reproducible.
	Rand func(n int) int
	// LogReader, when set, reads entries back from the driver's durable log, and the
	// log keeps in memory the data of only about LogCacheBytes of the entries that are
	// applied and persisted (raftLog.shrink). nil keeps every entry's data until
	// compaction.
	LogReader     LogReader
	LogCacheBytes int
}

// State is what a core restarts from: the durable state the driver persisted.
type State struct {
	HardState HardState
	// Snapshot is the latest snapshot on disk (nil for none); the driver has already
	// loaded it into the state machine.
	Snapshot *SnapshotMeta
	// Entries are the persisted entries after the snapshot, in order.
	Entries []Entry
	// Membership is the bootstrap membership, used when there is no snapshot.
	Membership Membership
}

type confAt struct {
	index uint64
	m     Membership
}

type roundTick struct{ round, tick uint64 }

type pendingRead struct {
	ctx, index, round uint64 // round 0: waiting for this leader's no-op to commit
}

// Raft is one member's consensus core.
type Raft struct {
	id  uint64
	cfg Config

	term, vote, lead uint64
	role             Role
	log              raftLog

	members Membership
	// membersGen counts the assignments to members (MembershipGen).
	membersGen uint64
	confs      []confAt // membership as of each committed change since the log offset
	snap       *SnapshotMeta

	// leader state
	prs            map[uint64]*progress
	noopIndex      uint64 // this leader's first entry: committed ⇒ reads and changes allowed
	pendingConf    uint64 // last membership change this leader proposed
	leadTransferee uint64
	transferTicks  int

	// elections
	votes              map[uint64]bool
	campaignCtx        uint64 // the Context of this campaign's vote requests
	electionElapsed    int
	heartbeatElapsed   int
	quietPeriods       int // leader: election periods in a row without word from a majority
	randomizedElection int
	ticks              uint64

	// reads: heartbeat rounds, numbered; a read waits for a majority to echo a round
	// sent after it arrived.
	round      uint64
	roundFresh bool // the current round was opened since the last Ready: reads may join it
	roundTicks []roundTick
	reads      []pendingRead
	readStates []ReadState

	msgs            []Message
	pendingSnapshot *SnapshotMeta
	prevSoft        SoftState
	prevHard        HardState

	step func(r *Raft, m Message)
	tick func(r *Raft)
	rand func(n int) int

	// offloaded are the followers an offload engine replicates to in this term
	// (SetOffloaded): the leader sends them no entries, only heartbeats and commit
	// indexes, and learns their progress from their MsgAppResp as always.
	offloaded map[uint64]bool
	// waiting: the driver waits for a commit (SetWaiting); said in answers to the leader.
	waiting bool
}

// New builds a core from its persisted state.
func New(cfg Config, st State) *Raft {
	if cfg.ID == None {
		panic("raft: Config.ID must not be 0")
	}
	if cfg.ElectionTicks <= 0 {
		cfg.ElectionTicks = 10
	}
	if cfg.HeartbeatTicks <= 0 {
		cfg.HeartbeatTicks = 1
	}
	if cfg.HeartbeatTicks >= cfg.ElectionTicks {
		panic(fmt.Sprintf("raft: heartbeat %d ticks must be under election %d", cfg.HeartbeatTicks, cfg.ElectionTicks))
	}
	if cfg.LeaseTicks <= 0 || cfg.LeaseTicks >= cfg.ElectionTicks {
		cfg.LeaseTicks = cfg.ElectionTicks - 2
	}
	if cfg.MaxMsgBytes <= 0 {
		cfg.MaxMsgBytes = 1 << 20
	}
	if cfg.MaxInflight <= 0 {
		cfg.MaxInflight = 256
	}
	r := &Raft{id: cfg.ID, cfg: cfg, rand: cfg.Rand}
	r.log.reader, r.log.cacheBytes = cfg.LogReader, cfg.LogCacheBytes
	if r.rand == nil {
		src := rand.New(rand.NewPCG(cfg.ID, 0x6e616e6f6b76))
		r.rand = src.IntN
	}
	base := st.Membership.Clone()
	if s := st.Snapshot; s != nil {
		r.log.restore(s.Index, s.Term, s.Time)
		base = s.Membership.Clone()
		r.snap = s
	}
	r.members = base
	r.membersGen++
	r.confs = []confAt{{r.log.offset, base}}
	if len(st.Entries) > 0 {
		r.log.append(st.Entries...)
	}
	r.log.stable = r.log.lastIndex()
	hs := st.HardState
	if hs.Commit > r.log.lastIndex() {
		panic(fmt.Sprintf("raft: persisted commit %d beyond last persisted entry %d", hs.Commit, r.log.lastIndex()))
	}
	r.term, r.vote = hs.Term, hs.Vote
	r.commitTo(max(hs.Commit, r.log.offset))
	r.prevHard = HardState{Term: r.term, Vote: r.vote, Commit: r.log.committed}
	r.becomeFollower(r.term, None)
	r.prevSoft = SoftState{Lead: r.lead, Role: r.role}
	return r
}

// ID returns the member's id.
func (r *Raft) ID() uint64 { return r.id }

// Term, Lead, Role and friends report the core's state (for INFO and tests).
func (r *Raft) Term() uint64 { return r.term }

// Lead is the leader this member follows, or None.
func (r *Raft) Lead() uint64 { return r.lead }

// Role is this member's current role.
func (r *Raft) Role() Role { return r.role }

// LastIndex is the index of the last entry in the log.
func (r *Raft) LastIndex() uint64 { return r.log.lastIndex() }

// Committed is the commit index.
func (r *Raft) Committed() uint64 { return r.log.committed }

// SetLogCacheBytes changes Config.LogCacheBytes on a running member; a smaller value
// evicts at once what it no longer covers. Without a LogReader the log keeps every
// entry's data whatever the value.
func (r *Raft) SetLogCacheBytes(b int) {
	r.log.cacheBytes = b
	r.log.shrink()
}

// LogCachedBytes is the data of the entries the log holds in memory.
func (r *Raft) LogCachedBytes() int { return r.log.cached }

// SetWaiting tells the core whether its driver waits for a commit: for the entry of a
// write it forwarded to the leader, say. Its answers to the leader say so, and the
// leader tells it of a commit at once (maybeSendAppends).
func (r *Raft) SetWaiting(w bool) { r.waiting = w }

// Waiting is what SetWaiting last set.
func (r *Raft) Waiting() bool { return r.waiting }

// PeerWaits tells a leader that member id waits for a commit: the leader is about to
// propose writes that member forwarded. Its answers say whether it waits, but only
// from its next one; until then, the MsgApps to it say it waits.
func (r *Raft) PeerWaits(id uint64) {
	if pr := r.prs[id]; pr != nil && r.role == Leader {
		pr.waiting = true
	}
}

// PendingConf is the index a leader must commit before it takes another membership
// change (ProposeConfChange's ErrConfPending until then): its last change, or the first
// entry of its term.
func (r *Raft) PendingConf() uint64 { return r.pendingConf }

// Membership returns the current membership (do not modify it).
func (r *Raft) Membership() Membership { return r.members }

// MembershipGen changes whenever Membership does (a host that caches it compares these).
func (r *Raft) MembershipGen() uint64 { return r.membersGen }

// Transferee is the member leadership is being handed to, or None.
func (r *Raft) Transferee() uint64 { return r.leadTransferee }

// MatchIndex reports what the leader knows a member holds (0 when not leading).
func (r *Raft) MatchIndex(id uint64) uint64 {
	if pr := r.prs[id]; pr != nil {
		return pr.match
	}
	return 0
}

// Silent reports whether this leader has heard nothing from member id for a whole
// check-quorum period (an election timeout) and since: a process that is down, or cut
// off. A leader opens its offload engine's terms without such members.
func (r *Raft) Silent(id uint64) bool {
	pr := r.prs[id]
	return r.role == Leader && id != r.id && pr != nil && !pr.recentActive && pr.quietPeriods > 0
}

// Settled reports whether this leader has nothing on its way to member id: every
// MsgApp with entries it sent is acknowledged, and no snapshot is being sent. A leader
// hands a member from software to its offload engine only then, so that no MsgApp of
// software's reaches it after its engine took over.
func (r *Raft) Settled(id uint64) bool {
	pr := r.prs[id]
	return r.role == Leader && pr != nil && pr.state == replicate && len(pr.inflight) == 0
}

// MembershipAt returns the membership as of index (for the metadata of a snapshot taken
// there); index must be at or after the log's compaction point.
func (r *Raft) MembershipAt(index uint64) Membership {
	m := r.confs[0].m
	for _, c := range r.confs {
		if c.index > index {
			break
		}
		m = c.m
	}
	return m
}

// TermAt returns the term of the entry at index, if the log still holds it.
func (r *Raft) TermAt(index uint64) (uint64, bool) { return r.log.term(index) }

func (r *Raft) promotable() bool { return r.members.IsVoter(r.id) }

func (r *Raft) send(m Message) {
	m.From = r.id
	if m.Type == MsgAppResp || m.Type == MsgHeartbeatResp {
		m.Waiting = r.waiting
	}
	if m.Term == 0 {
		m.Term = r.term
	}
	r.msgs = append(r.msgs, m)
}

// --- role transitions -------------------------------------------------------------------

func (r *Raft) reset(term uint64) {
	if term != r.term {
		r.term, r.vote = term, None
	}
	r.lead = None
	r.electionElapsed, r.heartbeatElapsed, r.quietPeriods = 0, 0, 0
	// [ElectionTicks, 1.5·ElectionTicks]: wide enough that split votes are rare in the
	// small clusters nanokv runs, narrow enough that failover stays close to the minimum.
	r.randomizedElection = r.cfg.ElectionTicks + r.rand(r.cfg.ElectionTicks/2+1)
	r.votes = nil
	r.prs = nil
	r.leadTransferee, r.transferTicks = None, 0
	r.noopIndex, r.pendingConf = 0, 0
	for _, rd := range r.reads {
		r.readStates = append(r.readStates, ReadState{Ctx: rd.ctx, Lost: true})
	}
	r.reads, r.roundTicks, r.roundFresh = nil, nil, false
	r.offloaded = nil
}

func (r *Raft) becomeFollower(term, lead uint64) {
	r.reset(term)
	r.role, r.lead = Follower, lead
	r.step, r.tick = stepFollower, tickElection
}

func (r *Raft) becomePreCandidate() {
	// The term does not change: a pre-vote only asks whether an election could be won.
	r.reset(r.term)
	r.role = PreCandidate
	r.step, r.tick = stepCandidate, tickElection
	r.votes = map[uint64]bool{}
}

func (r *Raft) becomeCandidate() {
	r.reset(r.term + 1)
	r.vote = r.id
	r.role = Candidate
	r.step, r.tick = stepCandidate, tickElection
	r.votes = map[uint64]bool{}
}

func (r *Raft) becomeLeader() {
	r.reset(r.term)
	r.role, r.lead = Leader, r.id
	r.step, r.tick = stepLeader, tickHeartbeat
	r.prs = map[uint64]*progress{}
	for _, id := range r.members.Voters {
		r.addProgress(id, false)
	}
	for _, id := range r.members.Learners {
		r.addProgress(id, true)
	}
	// §5.4.2 / §8: a leader commits nothing of earlier terms by counting replicas; its
	// own no-op commits them, and tells the leader the commit index it may serve reads at.
	r.appendEntries(Entry{Type: EntryNormal, Time: r.log.lastTime()})
	r.noopIndex = r.log.lastIndex()
	r.pendingConf = r.noopIndex
	r.bcastAppend()
}

func (r *Raft) addProgress(id uint64, learner bool) {
	pr := &progress{next: r.log.lastIndex() + 1, learner: learner, recentActive: true}
	if id == r.id {
		pr.match = r.log.stable
	}
	r.prs[id] = pr
}

type campaignKind uint8

const (
	campaignPreElection campaignKind = iota // pre-vote first (§9.6)
	campaignElection                        // a pre-vote was won: the real election
	campaignTransfer                        // told to take over: voters ignore their leases
)

func (r *Raft) campaign(kind campaignKind) {
	if !r.promotable() {
		return
	}
	if kind == campaignPreElection {
		r.becomePreCandidate()
	} else {
		r.becomeCandidate()
	}
	r.campaignCtx = 0
	if kind == campaignTransfer {
		r.campaignCtx = ctxTransfer
	}
	if r.poll(r.id, true) {
		return // a single voter wins at once
	}
	r.requestVotes()
}

// voteResendTicks is how often a (pre-)candidate asks again the voters it has not heard
// from. Raft leaves a lost request to the next election, an election timeout later; but
// after a leader's death the survivors' connections to each other may be stale (one of
// them restarted moments ago, and the first write to it fails), and when the other
// survivor is behind (a lazy follower) and so refuses the candidate that is ahead, the
// one request that mattered is the one lost: the cluster then waited 200-300 ms instead
// of about 30 (nanokv bench --scenarios failover). A request asked again is the same
// request: a voter answers it as it answered the first.
const voteResendTicks = 3

// requestVotes sends this campaign's vote (or pre-vote) request to every voter whose
// answer it lacks.
func (r *Raft) requestVotes() {
	typ, term := MsgVote, r.term
	if r.role == PreCandidate {
		typ, term = MsgPreVote, r.term+1
	}
	for _, id := range r.members.Voters {
		if _, answered := r.votes[id]; answered || id == r.id {
			continue
		}
		r.send(Message{Type: typ, To: id, Term: term, Index: r.log.lastIndex(), LogTerm: r.log.lastTerm(), Context: r.campaignCtx})
	}
}

// poll records a vote and acts on the outcome; it reports whether the round is decided.
func (r *Raft) poll(id uint64, granted bool) bool {
	if _, seen := r.votes[id]; !seen && r.members.IsVoter(id) {
		r.votes[id] = granted
	}
	yes, no := 0, 0
	for _, g := range r.votes {
		if g {
			yes++
		} else {
			no++
		}
	}
	q := r.members.quorum()
	switch {
	case yes >= q:
		if r.role == PreCandidate {
			r.campaign(campaignElection)
		} else {
			r.becomeLeader()
		}
		return true
	case no >= q:
		r.becomeFollower(r.term, None)
		return true
	}
	return false
}

// --- ticks ------------------------------------------------------------------------------

// Tick advances the core's clock by one tick.
func (r *Raft) Tick() {
	r.ticks++
	r.tick(r)
}

func tickElection(r *Raft) {
	r.electionElapsed++
	switch {
	case r.promotable() && r.electionElapsed >= r.randomizedElection:
		r.campaign(campaignPreElection)
	case r.role != Follower && r.electionElapsed%voteResendTicks == 0:
		r.requestVotes()
	}
}

func tickHeartbeat(r *Raft) {
	r.heartbeatElapsed++
	r.electionElapsed++
	if r.electionElapsed >= r.cfg.ElectionTicks {
		r.electionElapsed = 0
		// Check-quorum: a leader cut off from a majority steps down, so that clients
		// stop waiting on it and go to the leader the others elect. It waits for two
		// quiet periods in a row, 400-600 ms of silence by default, not one: followers
		// that are merely held up (their GC marking on cores they share, measured at
		// 0.3-0.55 s) do not start an election, since a follower's clock advances at
		// most one tick per event, and a leader that deposed itself for them cost the
		// cluster an election for nothing. Safety does not rest on this: a lease is
		// counted from acknowledged heartbeat rounds (leaseValid), and a cut-off
		// leader's lease runs out after LeaseTicks whatever check-quorum decides.
		if r.quorumActive() {
			r.quietPeriods = 0
		} else if r.quietPeriods++; r.quietPeriods >= 2 {
			r.becomeFollower(r.term, None)
			return
		}
		for id, pr := range r.prs {
			if pr.recentActive {
				pr.quietPeriods = 0
			} else {
				pr.quietPeriods++
			}
			pr.recentActive = id == r.id
		}
	}
	if r.leadTransferee != None {
		r.transferTicks++
		if r.transferTicks >= r.cfg.ElectionTicks {
			r.leadTransferee, r.transferTicks = None, 0 // the transferee did not take over
		}
	}
	if r.heartbeatElapsed >= r.cfg.HeartbeatTicks {
		r.heartbeatElapsed = 0
		r.bcastHeartbeat()
	}
}

func (r *Raft) quorumActive() bool {
	n := 0
	for _, id := range r.members.Voters {
		if pr := r.prs[id]; pr != nil && (pr.recentActive || id == r.id) {
			n++
		}
	}
	return n >= r.members.quorum()
}

// inLease reports whether this member heard from a live leader less than an election
// timeout ago; then it ignores vote requests (§4.2.3), except for a leadership transfer.
// A member that has just (re)started may have acknowledged a leader's lease before it went
// down, so it too grants no vote for its first election timeout: otherwise a restarted
// majority could elect a new leader while the old one still serves lease reads.
func (r *Raft) inLease() bool {
	if r.ticks < uint64(r.cfg.ElectionTicks) {
		return true
	}
	return r.lead != None && r.electionElapsed < r.cfg.ElectionTicks
}

// --- Step -------------------------------------------------------------------------------

// Step hands the core a message from another member.
func (r *Raft) Step(m Message) {
	switch {
	case m.Term == 0:
		return // every message between members carries a term
	case m.Term > r.term:
		if (m.Type == MsgVote || m.Type == MsgPreVote) && m.Context != ctxTransfer && r.inLease() {
			return
		}
		switch {
		case m.Type == MsgPreVote:
			// Pre-votes never change anyone's term.
		case m.Type == MsgPreVoteResp && !m.Reject:
			// The term we asked about; we are not in it yet.
		default:
			lead := None
			if m.Type == MsgApp || m.Type == MsgHeartbeat || m.Type == MsgSnap {
				lead = m.From
			}
			r.becomeFollower(m.Term, lead)
		}
	case m.Term < r.term:
		switch m.Type {
		case MsgApp, MsgHeartbeat:
			// A leader from an older term (say, back from a partition): tell it the term
			// so it steps down. With pre-vote it would otherwise never learn of it.
			r.send(Message{Type: MsgAppResp, To: m.From})
		case MsgPreVote:
			r.send(Message{Type: MsgPreVoteResp, To: m.From, Reject: true})
		}
		return
	}
	switch m.Type {
	case MsgVote, MsgPreVote:
		r.handleVote(m)
		return
	}
	r.step(r, m)
}

func (r *Raft) handleVote(m Message) {
	canVote := r.vote == m.From ||
		(r.vote == None && r.lead == None) ||
		(m.Type == MsgPreVote && m.Term > r.term)
	resp := MsgVoteResp
	if m.Type == MsgPreVote {
		resp = MsgPreVoteResp
	}
	if canVote && r.log.isUpToDate(m.Index, m.LogTerm) {
		r.send(Message{Type: resp, To: m.From, Term: m.Term})
		if m.Type == MsgVote {
			r.electionElapsed = 0
			r.vote = m.From
		}
		return
	}
	r.send(Message{Type: resp, To: m.From, Reject: true})
}

func stepFollower(r *Raft, m Message) {
	switch m.Type {
	case MsgApp:
		r.electionElapsed, r.lead = 0, m.From
		r.handleAppend(m)
	case MsgHeartbeat:
		r.electionElapsed, r.lead = 0, m.From
		r.handleHeartbeat(m)
	case MsgSnap:
		r.electionElapsed, r.lead = 0, m.From
		r.handleSnapshot(m)
	case MsgTimeoutNow:
		r.campaign(campaignTransfer)
	}
}

func stepCandidate(r *Raft, m Message) {
	switch m.Type {
	case MsgApp, MsgHeartbeat, MsgSnap:
		// A leader exists in this term (or, for a pre-candidate, in ours).
		r.becomeFollower(m.Term, m.From)
		stepFollower(r, m)
	case MsgVoteResp:
		if r.role == Candidate {
			r.poll(m.From, !m.Reject)
		}
	case MsgPreVoteResp:
		if r.role == PreCandidate {
			r.poll(m.From, !m.Reject)
		}
	}
}

func stepLeader(r *Raft, m Message) {
	pr := r.prs[m.From]
	if pr == nil {
		return // not a member (any more)
	}
	switch m.Type {
	case MsgAppResp:
		pr.recentActive = true
		pr.waiting = m.Waiting
		r.ackRound(pr, m.Context)
		if m.Reject {
			next := m.Hint
			if m.LogTerm > 0 {
				next, _ = r.log.conflictHint(m.Hint, m.LogTerm)
			}
			if pr.maybeDecrement(m.Index, next) {
				if pr.state == replicate {
					pr.becomeProbe()
				}
				r.sendAppend(m.From, false)
			}
			return
		}
		if !pr.maybeUpdate(m.Index) {
			if pr.waiting && pr.state == replicate {
				r.maybeSendAppends(m.From) // it may have started to wait since its last ack
			}
			return
		}
		switch {
		case pr.state == probe:
			pr.becomeReplicate()
		case pr.state == snapshotting && pr.match >= pr.pendingSnap:
			pr.becomeProbe()
			pr.becomeReplicate()
		}
		pr.freeInflight(m.Index)
		if r.maybeCommit() {
			r.bcastAppend()
		} else {
			r.maybeSendAppends(m.From)
		}
		if m.From == r.leadTransferee && pr.match == r.log.lastIndex() {
			r.send(Message{Type: MsgTimeoutNow, To: m.From})
		}
	case MsgHeartbeatResp:
		pr.recentActive = true
		pr.waiting = m.Waiting
		r.ackRound(pr, m.Context)
		pr.probeSent = false
		if pr.state == replicate && pr.match < m.Index {
			// The member answered a heartbeat sent after MsgApps up to m.Index without
			// having acknowledged them: over an ordered link they were lost (a broken
			// connection). Probe again rather than wait for acks that will never come.
			pr.becomeProbe()
		}
		if pr.match < r.log.lastIndex() || pr.sentCommit < r.log.committed {
			r.maybeSendAppends(m.From)
		}
	}
}

// --- replication ------------------------------------------------------------------------

func (r *Raft) appendEntries(ents ...Entry) {
	last, clock := r.log.lastIndex(), r.log.lastTime()
	for i := range ents {
		ents[i].Index = last + 1 + uint64(i)
		ents[i].Term = r.term
		clock = max(clock, ents[i].Time) // the log's clock never runs backwards
		ents[i].Time = clock
	}
	r.log.append(ents...)
	// The leader's own copy counts toward a majority once persisted (Advance).
}

// sendAppend sends one MsgApp (or a snapshot) to a member unless flow control pauses it.
// An empty MsgApp (allowEmpty) carries just the commit index. It reports whether it sent.
func (r *Raft) sendAppend(to uint64, allowEmpty bool) bool {
	pr := r.prs[to]
	if pr.paused(r.cfg.MaxInflight) {
		return false
	}
	prev := pr.next - 1
	prevTerm, ok := r.log.term(prev)
	if !ok {
		// The entries this member needs are compacted: ship the snapshot.
		if r.snap == nil {
			panic(fmt.Sprintf("raft: member %d needs index %d, compacted without a snapshot", to, pr.next))
		}
		pr.becomeSnapshot(r.snap.Index)
		r.send(Message{Type: MsgSnap, To: to, Snapshot: r.snap})
		return true
	}
	var ents []Entry
	if last := r.log.lastIndex(); pr.next <= last && !r.offloaded[to] {
		var err error
		if ents, err = r.log.read(pr.next, last, r.cfg.MaxMsgBytes); err != nil {
			// Only the WAL held these entries' data. Those a snapshot covers may be in
			// a segment compaction deleted: the member gets the snapshot. Any other
			// failure is the durable log's, which the member cannot go on without.
			if r.snap == nil || pr.next > r.snap.Index {
				panic(fmt.Sprintf("raft: member %d needs entries from %d: %v", to, pr.next, err))
			}
			pr.becomeSnapshot(r.snap.Index)
			r.send(Message{Type: MsgSnap, To: to, Snapshot: r.snap})
			return true
		}
	} else if !allowEmpty && pr.state == replicate || r.offloaded[to] && !allowEmpty {
		return false
	}
	r.send(Message{Type: MsgApp, To: to, Index: prev, LogTerm: prevTerm, Entries: ents,
		Commit: r.log.committed, Context: r.round, Waiting: pr.waiting})
	pr.sentCommit = r.log.committed
	if len(ents) > 0 {
		pr.sent(ents[len(ents)-1].Index, len(ents))
	} else {
		pr.sent(prev, 0)
	}
	return true
}

// maybeSendAppends streams to a member until it is caught up or the window is full; if
// there is nothing new to send but the member waits for a commit it has not been told
// of, it sends an empty MsgApp: it learns of the commit at once, not a heartbeat later.
// A member that waits for nothing learns of it from the next MsgApp or heartbeat: told
// at once, every member paid a message and a wake-up per 3 batches under
// redis-benchmark SET -c 50 -P 1, where nobody waited for them.
func (r *Raft) maybeSendAppends(to uint64) {
	pr := r.prs[to]
	sent := false
	for r.sendAppend(to, false) {
		sent = true
		if pr.state != replicate || pr.next > r.log.lastIndex() {
			break
		}
	}
	if !sent && pr.waiting && pr.sentCommit < r.log.committed && !r.offloaded[to] {
		// (an offload engine tells its followers of commits in its datagrams)
		r.sendAppend(to, true)
	}
}

func (r *Raft) bcastAppend() {
	for _, id := range r.peers() {
		r.maybeSendAppends(id)
	}
}

// peers lists the other members in a fixed order, so that runs are reproducible.
func (r *Raft) peers() []uint64 {
	ids := make([]uint64, 0, len(r.prs))
	for id := range r.prs {
		if id != r.id {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (r *Raft) bcastHeartbeat() {
	r.openRound()
	for _, id := range r.peers() {
		pr := r.prs[id]
		commit := min(pr.match, r.log.committed)
		pr.sentCommit = max(pr.sentCommit, commit)
		// Index is the last entry sent to the member so far: see MsgHeartbeatResp.
		r.send(Message{Type: MsgHeartbeat, To: id, Commit: commit, Context: r.round, Index: pr.next - 1})
	}
}

// maybeCommit advances the commit index to the highest index a majority of voters holds,
// if that entry is of the current term (§5.4.2).
func (r *Raft) maybeCommit() bool {
	matches := make([]uint64, 0, len(r.members.Voters))
	for _, id := range r.members.Voters {
		if pr := r.prs[id]; pr != nil {
			matches = append(matches, pr.match)
		} else {
			matches = append(matches, 0)
		}
	}
	slices.Sort(matches)
	if len(matches) == 0 {
		return false
	}
	mci := matches[len(matches)-r.members.quorum()]
	if mci <= r.log.committed {
		return false
	}
	if t, _ := r.log.term(mci); t != r.term {
		return false
	}
	r.commitTo(mci)
	return true
}

func (r *Raft) handleAppend(m Message) {
	if m.Index < r.log.committed {
		r.send(Message{Type: MsgAppResp, To: m.From, Index: r.log.committed, Context: m.Context})
		return
	}
	if last, ok := r.log.maybeAppend(m.Index, m.LogTerm, m.Entries); ok {
		r.commitTo(min(m.Commit, last))
		r.send(Message{Type: MsgAppResp, To: m.From, Index: last, Context: m.Context})
		return
	}
	hint, hintTerm := r.log.conflictHint(m.Index, m.LogTerm)
	r.send(Message{Type: MsgAppResp, To: m.From, Reject: true, Index: m.Index, Hint: hint,
		LogTerm: hintTerm, Context: m.Context})
}

func (r *Raft) handleHeartbeat(m Message) {
	// The leader sends min(its commit, our match), so this never passes our log.
	if m.Commit > r.log.committed && m.Commit <= r.log.lastIndex() {
		r.commitTo(m.Commit)
	}
	r.send(Message{Type: MsgHeartbeatResp, To: m.From, Context: m.Context, Index: m.Index})
}

func (r *Raft) handleSnapshot(m Message) {
	s := m.Snapshot
	switch {
	case s == nil || s.Index <= r.log.committed:
		// nothing new
	case r.log.matchTerm(s.Index, s.Term):
		// We already hold the entries: just fast-forward the commit index.
		r.commitTo(s.Index)
	default:
		r.log.restore(s.Index, s.Term, s.Time)
		r.members = s.Membership.Clone()
		r.membersGen++
		r.confs = []confAt{{s.Index, r.members}}
		r.snap = s
		r.pendingSnapshot = s
	}
	r.send(Message{Type: MsgAppResp, To: m.From, Index: r.log.lastIndex()})
}

// commitTo advances the commit index and applies the membership changes it commits: a
// change takes effect for everyone once committed, so the change after it can rely on it.
func (r *Raft) commitTo(i uint64) {
	old := r.log.committed
	if !r.log.commitTo(i) {
		return
	}
	for idx := max(old+1, r.log.offset+1); idx <= i; idx++ {
		if e := r.log.at(idx); e.Type == EntryConf {
			cc, err := DecodeConfChange(e.Data)
			if err != nil {
				// Validated when proposed and CRC-checked on disk: this is a broken invariant.
				panic(fmt.Sprintf("raft: committed entry %d: %v", idx, err))
			}
			r.applyConfChange(idx, cc)
		}
	}
	if r.role == Leader && old < r.noopIndex && i >= r.noopIndex {
		r.releaseReads()
	}
}

// --- membership -------------------------------------------------------------------------

func (r *Raft) applyConfChange(index uint64, cc ConfChange) {
	m := r.members.Clone()
	if m.Addrs == nil {
		m.Addrs = map[uint64]string{}
	}
	m.Voters = slices.DeleteFunc(m.Voters, func(id uint64) bool { return id == cc.Node })
	m.Learners = slices.DeleteFunc(m.Learners, func(id uint64) bool { return id == cc.Node })
	switch cc.Type {
	case AddLearner:
		m.Learners = append(m.Learners, cc.Node)
		m.Addrs[cc.Node] = cc.Addr
	case PromoteVoter:
		m.Voters = append(m.Voters, cc.Node)
		if cc.Addr != "" {
			m.Addrs[cc.Node] = cc.Addr
		}
	case RemoveNode:
		delete(m.Addrs, cc.Node)
	}
	slices.Sort(m.Voters)
	slices.Sort(m.Learners)
	r.members = m
	r.membersGen++
	r.confs = append(r.confs, confAt{index, m})
	if r.role != Leader {
		return
	}
	if !m.IsVoter(r.id) {
		// A leader that removed itself steps down once the removal commits (§4.2.2).
		r.becomeFollower(r.term, None)
		return
	}
	switch cc.Type {
	case AddLearner, PromoteVoter:
		if pr := r.prs[cc.Node]; pr != nil {
			pr.learner = cc.Type == AddLearner
		} else {
			r.addProgress(cc.Node, cc.Type == AddLearner)
		}
	case RemoveNode:
		delete(r.prs, cc.Node)
		if r.leadTransferee == cc.Node {
			r.leadTransferee = None
		}
	}
	// The quorum changed: what a majority holds may now be committable.
	if r.maybeCommit() {
		r.bcastAppend()
	}
}

// EncodeConfChange is the Data of an EntryConf.
func EncodeConfChange(cc ConfChange) []byte {
	b := []byte{byte(cc.Type)}
	b = binary.AppendUvarint(b, cc.Node)
	return append(b, cc.Addr...)
}

// DecodeConfChange parses the Data of an EntryConf.
func DecodeConfChange(b []byte) (ConfChange, error) {
	if len(b) < 2 {
		return ConfChange{}, fmt.Errorf("raft: conf change of %d bytes", len(b))
	}
	cc := ConfChange{Type: ConfChangeType(b[0])}
	if cc.Type < AddLearner || cc.Type > RemoveNode {
		return ConfChange{}, fmt.Errorf("raft: conf change type %d", b[0])
	}
	node, n := binary.Uvarint(b[1:])
	if n <= 0 || node == None {
		return ConfChange{}, fmt.Errorf("raft: conf change node id")
	}
	cc.Node, cc.Addr = node, string(b[1+n:])
	return cc, nil
}

// --- operations the driver requests ------------------------------------------------------

// Propose appends one entry per data item, stamped with time (clamped so the log's clock
// never runs backwards). It returns the index of the first; the rest follow in order.
func (r *Raft) Propose(time int64, data ...[]byte) (uint64, error) {
	return r.ProposeTyped(time, EntryNormal, data...)
}

// ProposeTyped is Propose for entries of type typ: EntryNormal, or EntryForwarded for
// batches a follower forwarded (their Data made by AppendForwarded).
func (r *Raft) ProposeTyped(time int64, typ EntryType, data ...[]byte) (uint64, error) {
	if r.role != Leader {
		return 0, ErrNotLeader
	}
	if r.leadTransferee != None {
		return 0, ErrTransferring
	}
	if typ != EntryNormal && typ != EntryForwarded {
		return 0, fmt.Errorf("raft: cannot propose entries of type %d", typ)
	}
	first := r.log.lastIndex() + 1
	ents := make([]Entry, len(data))
	for i, d := range data {
		ents[i] = Entry{Time: time, Type: typ, Data: d}
	}
	r.appendEntries(ents...)
	r.bcastAppend()
	return first, nil
}

// SetOffloaded hands replication to the followers in ids to an offload engine for the
// rest of this term (nil takes it back; a follower a later call leaves out is taken back
// alone, and sent what it lacks at once): the leader then sends them heartbeats and empty
// MsgApps with the commit index, never entries, while the engine carries the entries
// (AppendOffloaded) and the followers' MsgAppResp keep the leader's progress and commit
// rule the only ones. Only a leader in replicate state with these followers may do so.
func (r *Raft) SetOffloaded(ids []uint64) error {
	if ids == nil {
		r.offloaded = nil
		if r.role == Leader {
			r.bcastAppend() // whatever the engine had not delivered, software sends now
		}
		return nil
	}
	if r.role != Leader {
		return ErrNotLeader
	}
	off := make(map[uint64]bool, len(ids))
	for _, id := range ids {
		if pr := r.prs[id]; id == r.id || pr == nil || pr.learner {
			return fmt.Errorf("raft: member %d cannot be offloaded", id)
		}
		off[id] = true
	}
	was := r.offloaded
	r.offloaded = off
	for _, id := range r.peers() {
		if was[id] && !off[id] {
			r.maybeSendAppends(id) // what the engine had not delivered to it, software sends now
		}
	}
	return nil
}

// AppendOffloaded appends entries an offload engine assigned on this leader. They are
// taken as they are, clock included, since the engine has sent them to the followers as
// they are: they must follow the last index in this leader's term.
func (r *Raft) AppendOffloaded(ents []Entry) error {
	if r.role != Leader || r.offloaded == nil {
		return ErrNotLeader
	}
	last, clock := r.log.lastIndex(), r.log.lastTime()
	for i, e := range ents {
		if e.Index != last+1+uint64(i) || e.Term != r.term || e.Time < clock || e.Type == EntryConf {
			return fmt.Errorf("raft: offloaded entry %d (term %d) does not follow %d in term %d", e.Index, e.Term, last+uint64(i), r.term)
		}
		clock = e.Time
	}
	r.log.append(ents...)
	return nil
}

// ReportOffloaded tells the leader that follower id, served by an offload engine, holds
// the log up to match (the engine's ack), as its MsgAppResp would: progress advances and
// the commit rule runs.
func (r *Raft) ReportOffloaded(id, match uint64) {
	if r.role != Leader || !r.offloaded[id] {
		return
	}
	pr := r.prs[id]
	if pr == nil || match > r.log.lastIndex() || !pr.maybeUpdate(match) {
		return
	}
	pr.recentActive = true
	if pr.state == probe {
		pr.becomeReplicate()
	}
	pr.freeInflight(match)
	if r.maybeCommit() {
		r.bcastAppend()
	}
}

// StepOffloaded steps a MsgApp that a follower's offload engine took from its leader:
// it is appended as any MsgApp, but the acceptance is not answered, since the engine has
// acked it already. A refusal is answered: software must repair this log.
func (r *Raft) StepOffloaded(m Message) {
	n := len(r.msgs)
	r.Step(m)
	kept := r.msgs[:n]
	for _, out := range r.msgs[n:] {
		if out.Type != MsgAppResp || out.Reject {
			kept = append(kept, out)
		}
	}
	r.msgs = kept
}

// LastTime is the clock of the last entry (an offload engine's LastLogTime register).
func (r *Raft) LastTime() int64 { return r.log.lastTime() }

// ProposeConfChange proposes one membership change. Only one may be in flight, and only
// once this leader has committed an entry of its term: otherwise two leaders of
// different terms could each commit a change that the other's majority misses.
func (r *Raft) ProposeConfChange(time int64, cc ConfChange) (uint64, error) {
	if r.role != Leader {
		return 0, ErrNotLeader
	}
	if r.leadTransferee != None {
		return 0, ErrTransferring
	}
	if r.pendingConf > r.log.committed {
		return 0, ErrConfPending
	}
	voter, learner := r.members.IsVoter(cc.Node), r.members.IsLearner(cc.Node)
	switch {
	case cc.Node == None:
		return 0, ErrBadConfChange
	case cc.Type == AddLearner && (voter || learner):
		return 0, fmt.Errorf("%w: node %d is already a member", ErrBadConfChange, cc.Node)
	case cc.Type == PromoteVoter && voter:
		return 0, fmt.Errorf("%w: node %d already votes", ErrBadConfChange, cc.Node)
	case cc.Type == RemoveNode && !voter && !learner:
		return 0, fmt.Errorf("%w: node %d is not a member", ErrBadConfChange, cc.Node)
	case cc.Type == RemoveNode && voter && len(r.members.Voters) == 1:
		return 0, fmt.Errorf("%w: cannot remove the last voter", ErrBadConfChange)
	case cc.Type < AddLearner || cc.Type > RemoveNode:
		return 0, ErrBadConfChange
	}
	r.appendEntries(Entry{Time: time, Type: EntryConf, Data: EncodeConfChange(cc)})
	r.pendingConf = r.log.lastIndex()
	r.bcastAppend()
	return r.pendingConf, nil
}

// TransferLeader hands leadership to a voter (§3.10): proposals stop, the transferee is
// brought up to date, then told to campaign at once. It gives up after an election
// timeout.
func (r *Raft) TransferLeader(to uint64) error {
	if r.role != Leader {
		return ErrNotLeader
	}
	if to == r.id || !r.members.IsVoter(to) {
		return fmt.Errorf("%w: node %d cannot take over", ErrBadConfChange, to)
	}
	if r.leadTransferee == to {
		return nil
	}
	r.leadTransferee, r.transferTicks = to, 0
	if r.prs[to].match == r.log.lastIndex() {
		r.send(Message{Type: MsgTimeoutNow, To: to})
	} else {
		r.maybeSendAppends(to)
	}
	return nil
}

// Campaign starts an election now (RAFT.TIMEOUT_NOW on this member), skipping pre-vote.
func (r *Raft) Campaign() { r.campaign(campaignTransfer) }

// PeerDown tells the core that the driver has proof that member id's process is gone
// (its member port refuses connections). A follower of id then no
// longer honours id's lease, since a dead process serves no lease reads, and it
// campaigns within a few ticks instead of a whole election timeout. The delay grows
// with the member's rank among the surviving voters (1, 3, 5… ticks), so that the
// followers, which all learn of the death at once, do not split the vote; a candidate
// whose log is behind is refused, and the next in rank wins.
//
// The hint costs safety nothing: votes and logs decide as ever. It is wrong only if the
// proof is: a member that calls a live leader dead lets the others elect a new leader
// while the old one may still serve lease reads.
func (r *Raft) PeerDown(id uint64) {
	if r.role != Follower || id == None || r.lead != id {
		return
	}
	r.lead = None
	rank := 0
	for _, v := range r.members.Voters {
		if v != id && v < r.id {
			rank++
		}
	}
	r.electionElapsed = max(r.electionElapsed, r.randomizedElection-(1+2*rank))
}

// ReportSnapshot tells the leader that sending a snapshot to a member finished or failed.
func (r *Raft) ReportSnapshot(to uint64, failed bool) {
	pr := r.prs[to]
	if pr == nil || pr.state != snapshotting {
		return
	}
	if failed {
		pr.pendingSnap = 0
	}
	pr.becomeProbe()
	pr.probeSent = true // wait for the member's next answer or heartbeat
}

// Compact records a snapshot the driver has written and drops log entries up to
// meta.Index−trailing (kept so slightly slow followers need no snapshot).
func (r *Raft) Compact(meta SnapshotMeta, trailing uint64) {
	if meta.Index > r.log.applied {
		panic(fmt.Sprintf("raft: snapshot at %d beyond applied %d", meta.Index, r.log.applied))
	}
	if r.snap != nil && meta.Index <= r.snap.Index {
		return
	}
	r.snap = &meta
	cut := meta.Index - min(trailing, meta.Index)
	if cut <= r.log.offset {
		return
	}
	r.log.compact(cut)
	i := 0
	for i+1 < len(r.confs) && r.confs[i+1].index <= cut {
		i++
	}
	r.confs = r.confs[i:]
	r.confs[0].index = cut
}

// --- reads ------------------------------------------------------------------------------

func (r *Raft) openRound() {
	r.round++
	r.roundFresh = true
	r.roundTicks = append(r.roundTicks, roundTick{r.round, r.ticks})
	// Rounds older than a lease are no use to anyone.
	i := 0
	for i < len(r.roundTicks)-1 && r.roundTicks[i].tick+uint64(r.cfg.LeaseTicks) < r.ticks {
		i++
	}
	if i > 0 {
		r.roundTicks = append(r.roundTicks[:0], r.roundTicks[i:]...)
	}
}

func (r *Raft) ackRound(pr *progress, round uint64) {
	if round <= pr.ackedRound {
		return
	}
	pr.ackedRound = round
	if len(r.reads) > 0 {
		r.releaseReads()
	}
}

// quorumRound is the newest round a majority of voters (this leader included) echoed.
func (r *Raft) quorumRound() uint64 {
	rounds := make([]uint64, 0, len(r.members.Voters))
	for _, id := range r.members.Voters {
		switch pr := r.prs[id]; {
		case id == r.id:
			rounds = append(rounds, r.round)
		case pr != nil:
			rounds = append(rounds, pr.ackedRound)
		default:
			rounds = append(rounds, 0)
		}
	}
	slices.Sort(rounds)
	return rounds[len(rounds)-r.members.quorum()]
}

// ReadIndex asks for a linearizable read point (§6.4). The answer comes as a ReadState
// with ctx in a later Ready: serve the read once the state machine has applied its Index.
// With lease, a leader whose lease holds answers without a round trip.
func (r *Raft) ReadIndex(ctx uint64, lease bool) error {
	if r.role != Leader {
		return ErrNotLeader
	}
	if r.log.committed < r.noopIndex {
		r.reads = append(r.reads, pendingRead{ctx: ctx})
		return nil
	}
	if len(r.members.Voters) == 1 || (lease && r.leaseValid()) {
		r.readStates = append(r.readStates, ReadState{Ctx: ctx, Index: r.log.committed})
		return nil
	}
	if !r.roundFresh {
		r.bcastHeartbeat()
	}
	r.reads = append(r.reads, pendingRead{ctx: ctx, index: r.log.committed, round: r.round})
	return nil
}

// releaseReads answers every read whose round a majority has confirmed, and gives reads
// that waited for the no-op their index and round.
func (r *Raft) releaseReads() {
	if r.log.committed < r.noopIndex {
		return
	}
	opened := false
	for i := range r.reads {
		if r.reads[i].round == 0 {
			if !opened && len(r.members.Voters) > 1 && !r.roundFresh {
				r.bcastHeartbeat()
			}
			opened = true
			r.reads[i].index, r.reads[i].round = r.log.committed, r.round
		}
	}
	q := r.round
	if len(r.members.Voters) > 1 {
		q = r.quorumRound()
	}
	kept := r.reads[:0]
	for _, rd := range r.reads {
		if rd.round <= q {
			r.readStates = append(r.readStates, ReadState{Ctx: rd.ctx, Index: rd.index})
		} else {
			kept = append(kept, rd)
		}
	}
	r.reads = kept
}

// leaseValid reports whether a majority acknowledged a round sent less than LeaseTicks
// ago. Their election timers restarted when they received it, and they grant no vote
// for ElectionTicks after that (§6.4.1), so no other leader can exist until then.
func (r *Raft) leaseValid() bool { return r.leaseTicksLeft() > 0 }

// leaseTicksLeft is the number of ticks, counted from the current one, after which the
// lease lapses: it holds while the clock stays below ticks+leaseTicksLeft. 0: no lease.
func (r *Raft) leaseTicksLeft() uint64 {
	if r.role != Leader || r.leadTransferee != None || r.log.committed < r.noopIndex {
		return 0
	}
	if len(r.members.Voters) == 1 {
		if !r.promotable() {
			return 0
		}
		return uint64(r.cfg.LeaseTicks) // no one else can lead; renewed at every tick
	}
	q := r.quorumRound()
	i, found := slices.BinarySearchFunc(r.roundTicks, q, func(rt roundTick, q uint64) int {
		switch {
		case rt.round < q:
			return -1
		case rt.round > q:
			return 1
		}
		return 0
	})
	if !found {
		return 0 // too old to remember, so too old to count
	}
	if end := r.roundTicks[i].tick + uint64(r.cfg.LeaseTicks); end > r.ticks {
		return end - r.ticks
	}
	return 0
}

// LeaseValid reports whether this leader may serve a read now without a round trip.
func (r *Raft) LeaseValid() bool { return r.leaseValid() }

// LeaseTicksLeft reports for how many more ticks this leader may serve reads without a
// round trip, if nothing else happens: its lease holds until its clock has advanced by
// that many ticks. Anything the leader does later may end the lease sooner (a
// leadership transfer, a step-down), so a caller that serves reads off the loop must
// ask again after every event. 0: no lease.
func (r *Raft) LeaseTicksLeft() uint64 { return r.leaseTicksLeft() }

// --- Ready / Advance -------------------------------------------------------------------

// HardState is the current term, vote and commit index (what the next Ready persists, or
// has persisted once Ready reports nothing more to do).
func (r *Raft) HardState() HardState { return r.hardState() }

func (r *Raft) hardState() HardState {
	return HardState{Term: r.term, Vote: r.vote, Commit: r.log.committed}
}

// HasReady reports whether Ready would return anything to do.
func (r *Raft) HasReady() bool {
	return len(r.msgs) > 0 || len(r.readStates) > 0 || r.pendingSnapshot != nil ||
		r.log.stable < r.log.lastIndex() || r.log.applied < r.log.committed ||
		r.hardState() != r.prevHard || (SoftState{r.lead, r.role}) != r.prevSoft
}

// Ready returns the work accumulated since the last Advance (see Ready for the duties).
// Messages and ReadStates are handed over once; entries until Advance acknowledges them.
func (r *Raft) Ready() Ready {
	rd := Ready{
		Messages:   r.msgs,
		ReadStates: r.readStates,
		Snapshot:   r.pendingSnapshot,
	}
	r.msgs, r.readStates, r.roundFresh = nil, nil, false
	if soft := (SoftState{r.lead, r.role}); soft != r.prevSoft {
		rd.SoftState = &soft
		r.prevSoft = soft
	}
	if hs := r.hardState(); hs != r.prevHard {
		rd.HardState, rd.HardStateChanged = hs, true
	} else {
		rd.HardState = hs
	}
	if r.log.stable < r.log.lastIndex() {
		rd.Entries = r.log.slice(r.log.stable+1, r.log.lastIndex(), noLimit)
	}
	if r.log.applied < r.log.committed {
		rd.CommittedEntries = r.log.slice(r.log.applied+1, r.log.committed, noLimit)
	}
	return rd
}

// Advance tells the core the driver has done what rd asked.
func (r *Raft) Advance(rd Ready) {
	if rd.HardStateChanged {
		r.prevHard = rd.HardState
	}
	if rd.Snapshot != nil && r.pendingSnapshot == rd.Snapshot {
		r.pendingSnapshot = nil
	}
	if n := len(rd.Entries); n > 0 {
		last := rd.Entries[n-1]
		// A later truncation may have replaced what was persisted: only a still-matching
		// entry proves stability.
		if r.log.matchTerm(last.Index, last.Term) && last.Index > r.log.stable {
			r.log.stable = last.Index
		}
		if r.role == Leader {
			if self := r.prs[r.id]; self != nil && self.maybeUpdate(r.log.stable) && r.maybeCommit() {
				r.bcastAppend()
			}
		}
	}
	if n := len(rd.CommittedEntries); n > 0 {
		r.log.applied = max(r.log.applied, rd.CommittedEntries[n-1].Index)
	}
	r.log.shrink()
}
