package nicoffload

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Config configures an Engine. Durations are compared with the now values the host
// passes in, which are nanoseconds on a monotonic clock of the host's choosing.
type Config struct {
	// ClusterID is stamped on every datagram; datagrams of another cluster are dropped.
	ClusterID uint64
	// BatchBytes seals a batch once its datagram reaches this size (default 32 KiB,
	// at most MaxDatagram): MCDMA-style batching, many entries per datagram.
	BatchBytes int
	// BatchDelay seals an open batch this long after its first entry (Tick). 0 seals at
	// the end of every Propose: the entries of one Propose call go out in one datagram.
	BatchDelay time.Duration
	// InFlight, if positive, bounds the batches sent and not yet committed (with
	// BatchDelay 0): while that many wait for their commit, what is proposed collects in
	// the open batch, which goes out when a commit frees a place, when it is full, or at
	// the next Tick. The batch then holds what arrived during a round trip: group commit,
	// which costs nothing at low load (nothing is in flight, the batch goes out at once)
	// and under load sends fewer, larger datagrams, each of which costs a follower a
	// wake-up, a receive, a WAL write and an acknowledgement whatever its size. 0: every
	// Propose's entries go out at once.
	InFlight int
	// RetransmitTimeout is how long the leader waits for an ack of sent entries before it
	// replays them from the ring, and how often a follower repeats a retransmission
	// request for the same gap (default 1 ms).
	RetransmitTimeout time.Duration
	// MaxRetransmits is how many timeouts in a row without progress a follower gets
	// before it is handed to software (Output.Recover) (default 8).
	MaxRetransmits int
	// VoteTimeout bounds the accelerated-term vote round (default 100 ms).
	VoteTimeout time.Duration
	// LazyDelay, if positive, makes the followers beyond a quorum lazy (lazy.go): the
	// leader sends them the batches sealed in the last LazyDelay together, once the
	// oldest is that old (checked when a batch is sealed, and on every Tick), instead of
	// each batch as it is sealed. 0: every follower gets every batch at once.
	LazyDelay time.Duration
	// RingBytes and RingDatagrams bound the retransmission ring (defaults 8 MiB, 4096).
	RingBytes     int
	RingDatagrams int
	// AckAfterPersist (--fsync always): a follower acks entries only once the host
	// reports them durable (Persisted), and the leader counts itself toward a majority
	// only for what it persisted. Otherwise entries are acked from memory, as the papers do.
	AckAfterPersist bool
	// KeepData: the packets the host hands to Step are its own copies, which it never
	// touches again, so a follower keeps their entries (and their data) as they are in
	// what it appends and in its reorder buffer. Otherwise the engine copies both, as
	// packets may alias a receive buffer that is reused once Step returns.
	KeepData bool
}

func (c *Config) withDefaults() Config {
	d := *c
	if d.BatchBytes <= 0 {
		d.BatchBytes = 32 << 10
	}
	d.BatchBytes = min(max(d.BatchBytes, HeaderSize+EntryHeaderSize), MaxDatagram)
	if d.BatchDelay < 0 {
		d.BatchDelay = 0
	}
	d.InFlight = max(d.InFlight, 0)
	if d.RetransmitTimeout <= 0 {
		d.RetransmitTimeout = time.Millisecond
	}
	if d.MaxRetransmits <= 0 {
		d.MaxRetransmits = 8
	}
	if d.VoteTimeout <= 0 {
		d.VoteTimeout = 100 * time.Millisecond
	}
	if d.RingBytes <= 0 {
		d.RingBytes = 8 << 20
	}
	if d.RingDatagrams <= 0 {
		d.RingDatagrams = 4096
	}
	return d
}

// MaxEntryData is the largest entry payload the engine replicates: one entry alone must
// fit in a datagram. Larger proposals go through software Raft.
const MaxEntryData = MaxDatagram - HeaderSize - EntryHeaderSize

// Registers are the protocol state the host hands the engine when it opens an accelerated
// term and reads back when it closes it, like the CSRs of an FPGA consensus engine.
type Registers struct {
	// Enabled, read back, says whether acceleration was still running (no Halt).
	// Open ignores it.
	Enabled     bool
	ID          uint64
	IsLeader    bool
	CurrentTerm uint64
	// LastLogIndex and LastLogTerm describe the last entry of the host's log;
	// LastLogTime is its clock (unix ms), so that entries the leader proposes keep the
	// log's clock from running backwards.
	LastLogIndex uint64
	LastLogTerm  uint64
	LastLogTime  int64
	CommitIndex  uint64
	// Peers are the voters, self included; learners are software's business.
	Peers []uint64
	// MatchIndex is the leader's knowledge of what each voter holds (self included).
	MatchIndex map[uint64]uint64
	// Outside are voters a leader leaves to software for this term (members it has not
	// heard from, whose logs may be behind): the engine asks them no vote and sends them
	// nothing, as if Recover had reported them, but they count in the majority.
	Outside []uint64
}

// HaltReason says why acceleration stopped, or (in a Nack) why a datagram was refused.
type HaltReason uint8

const (
	HaltNone HaltReason = iota
	// HaltHigherTerm: a datagram of a later term arrived; software must adopt it.
	HaltHigherTerm
	// HaltMismatch: a follower's log conflicts with the leader's datagram (a term
	// conflict, or entries it cannot verify); software truncates and repairs.
	HaltMismatch
	// HaltVoteRefused: a follower refused the accelerated-term vote before a majority
	// granted it.
	HaltVoteRefused
	// HaltVoteTimeout: no majority granted the vote within VoteTimeout.
	HaltVoteTimeout
	// HaltUnexpected: a datagram the engine's role cannot take (an Append at a leader:
	// two leaders in one term, which only a broken invariant produces).
	HaltUnexpected
	// HaltNotOpen (Nack only): the receiver's engine is closed or halted.
	HaltNotOpen
	// HaltStaleTerm (Nack only): the sender's term is behind the receiver's.
	HaltStaleTerm
)

var haltNames = [...]string{"none", "higher term", "log mismatch", "vote refused", "vote timeout",
	"unexpected datagram", "not open", "stale term"}

func (r HaltReason) String() string {
	if int(r) < len(haltNames) {
		return haltNames[r]
	}
	return fmt.Sprintf("HaltReason(%d)", uint8(r))
}

// Halt says why acceleration stopped: Reason, the peer whose datagram caused it, that
// datagram's term (for HaltHigherTerm, the term software must move to) and index.
type Halt struct {
	Reason HaltReason
	From   uint64
	Term   uint64
	Index  uint64
}

// Outgoing is one datagram to send. Bytes are reused once Advance returns.
type Outgoing struct {
	To    uint64
	Bytes []byte
}

// Output is what the engine decided since the last Ready. The host handles it in this
// order:
//
//  1. append Append to its log (the one Raft log) after its current last entry, and
//     with AckAfterPersist write them to the WAL and call Persisted once durable (a
//     group fsync: one per Output);
//  2. commit up to CommitIndex: release the blind-write replies waiting on entries up
//     to it, hand the entries to the applier. A leader does this before step 3: the
//     Datagrams may carry CommitIndex to followers, and whatever a follower answers
//     once it hears of the commit, the leader's own reads must already see;
//  3. send Datagrams (a follower's acks may depend on step 1 only through Persisted,
//     which produces them later, so sending at once is safe);
//  4. hand Recover to software Raft (catch those followers up, then Resume them);
//  5. on Halt, Close the engine and let software Raft resolve the case;
//  6. call Advance.
type Output struct {
	Datagrams []Outgoing
	// Append are new entries of the log, consecutive, starting at the host's last
	// index + 1. Their Data alias the proposals (leader) or a copy the engine owns
	// (follower); the slice itself is reused after Advance.
	Append []Entry
	// CommitIndex is the new commit index when it advanced since the last Ready, else 0.
	CommitIndex uint64
	// Recover lists followers the engine can no longer catch up (a lost datagram that
	// left the ring, a Nack, too many retransmissions): software Raft must.
	Recover []uint64
	// Halt is set once, when acceleration stops.
	Halt *Halt
}

// Stats are counters for INFO.
type Stats struct {
	Sealed       uint64 // batches sealed
	Held         uint64 // Proposes whose batch waited for a commit (Config.InFlight)
	Sent         uint64 // datagrams built (all types)
	Replayed     uint64 // Append datagrams replayed from the ring
	GapRequests  uint64 // retransmission requests sent (follower)
	Dropped      uint64 // datagrams dropped: foreign cluster, unknown sender, not for us, malformed
	Acks         uint64 // acks received (leader)
	Duplicates   uint64 // Append datagrams whose entries were all held already (follower)
	StaleDropped uint64 // datagrams of an older term
	LazySends    uint64 // sends of the batches a lazy follower waited for (leader)
}

// ErrNotAccelerated rejects a proposal when the engine is not an open, running leader:
// the host proposes through software Raft instead.
var ErrNotAccelerated = errors.New("nicoffload: not an accelerated leader")

type peerState uint8

const (
	peerVoting  peerState = iota // asked to vote: in the term's round, or to rejoin (Resume)
	peerActive                   // receives batches
	peerRecover                  // handed to software until Resume
)

// peer is the leader's view of one follower.
type peer struct {
	id      uint64
	match   uint64 // highest index it acked
	commit  uint64 // its commit index, as its last ack said
	told    uint64 // the commit index last sent to it
	waiting bool   // its last ack said its host waits for a commit
	state   peerState
	granted bool
	// waitSince is when it last made progress, or when it was last sent entries while
	// caught up: a timeout counts from there.
	waitSince int64
	retries   int
	sentAt    int64 // last datagram of any kind sent to it
	// The last replay to it sent replayedFrom through replayedTo, starting at replayAt:
	// a request for an index in that range within half a RetransmitTimeout gets only
	// what follows it (the rest is in flight).
	replayedFrom, replayedTo uint64
	replayAt                 int64
	// lazy: it is sent batches LazyDelay late, together (see chooseLazy); lazySent is
	// the last index sent to it, lazyAt when the oldest batch it was not sent was sealed.
	lazy     bool
	lazySent uint64
	lazyAt   int64
	// A member asked to rejoin (Resume) at rejoinAt, which software had caught up to
	// rejoinFrom: only a vote at least that far along takes it back.
	rejoinAt   int64
	rejoinFrom uint64
}

type termRun struct{ first, term uint64 }

// Engine is the offload engine of one member: a pure state machine. It has no
// goroutines, no clock and no I/O; the host feeds it datagrams (Step), time (Tick),
// proposals (Propose) and durability (Persisted), and carries out Ready's Output.
// It is not safe for concurrent use.
type Engine struct {
	cfg Config
	reg Registers // MatchIndex lives in peers and selfMatch while open

	open    bool  // between Open and Close
	enabled bool  // replicating: a follower once open, a leader once the vote is won
	halt    *Halt // set when acceleration stopped
	voting  bool
	voteAt  int64
	quorum  int

	// The log as it was at Open: entries at or below openLast are of unknown term
	// (except openLast itself), entries above it came from this term's leader.
	openLast, openLastTerm uint64

	persisted uint64 // highest index the host reported durable
	lastNow   int64  // the latest now the host passed (for Persisted, which has none)

	// leader
	peers          []peer
	selfMatch      uint64
	ring           ring
	pending        []Entry // the open batch
	pendingBytes   int     // its datagram size
	pendingAt      int64
	sealed         uint64   // last index sent in a batch
	flight         []uint64 // with InFlight, the last indexes of the batches that may be uncommitted
	sealedTerm     uint64
	commitBcast    uint64 // commit index last broadcast
	commitReported uint64

	// follower
	lead       uint64
	runs       []termRun // terms of entries above openLast
	gapWant    uint64    // first index of the open gap (0: none)
	gapEnd     uint64    // last index asked for
	gapAt      int64
	held       map[uint64]*Packet // reorder buffer: Appends ahead of a gap, by prevLogIndex
	heldBytes  int
	ackPending bool
	waiting    bool // the host waits for a commit (SetWaiting); said in every ack

	out     Output
	free    [][]byte
	scratch []uint64
	joinBuf []Entry // sendLazy's joined batch, reused
	stats   Stats
}

// New builds a closed engine.
func New(cfg Config) *Engine {
	e := &Engine{cfg: cfg.withDefaults()}
	e.ring = newRing(e.cfg.RingDatagrams, e.cfg.RingBytes)
	return e
}

// Open opens an accelerated term with the registers read from software Raft. A leader
// starts the vote round (VoteRequest to every peer but r.Outside) and replicates once a
// majority, itself included, granted it; a follower takes Appends of r.CurrentTerm at once.
//
// The registers must describe the host's log as it is (and, with AckAfterPersist, as it
// is on disk), and while the engine is open the host appends to its log only what
// Output.Append gives it.
func (e *Engine) Open(now int64, r Registers) {
	if r.ID == 0 || !slices.Contains(r.Peers, r.ID) {
		panic(fmt.Sprintf("nicoffload: open: id %d not among voters %v", r.ID, r.Peers))
	}
	if r.CommitIndex > r.LastLogIndex || r.LastLogTerm > r.CurrentTerm {
		panic(fmt.Sprintf("nicoffload: open: commit %d last %d/%d term %d", r.CommitIndex,
			r.LastLogIndex, r.LastLogTerm, r.CurrentTerm))
	}
	out, free, scratch := e.out, e.free, e.scratch
	*e = Engine{cfg: e.cfg, ring: e.ring, out: out, free: free, scratch: scratch, stats: e.stats}
	e.ring.reset()
	e.reg = r
	e.reg.Peers = slices.Clone(r.Peers)
	e.reg.MatchIndex = nil
	e.open = true
	e.quorum = len(r.Peers)/2 + 1
	e.openLast, e.openLastTerm = r.LastLogIndex, r.LastLogTerm
	e.persisted = r.LastLogIndex
	e.commitReported = r.CommitIndex
	if !r.IsLeader {
		e.enabled = true
		return
	}
	e.selfMatch = r.LastLogIndex
	e.sealed, e.sealedTerm = r.LastLogIndex, r.LastLogTerm
	e.flight = e.flight[:0]
	e.commitBcast = r.CommitIndex
	e.pendingBytes = HeaderSize
	for _, id := range e.reg.Peers {
		if id == r.ID {
			continue
		}
		p := peer{id: id, match: min(r.MatchIndex[id], r.LastLogIndex)}
		if slices.Contains(r.Outside, id) {
			p.state = peerRecover
		}
		e.peers = append(e.peers, p)
	}
	e.reg.Outside = nil
	e.voting, e.voteAt = true, now
	for i := range e.peers {
		if e.peers[i].state == peerVoting {
			e.sendVoteRequest(now, &e.peers[i])
		}
	}
	e.maybeWinVote(now)
}

// Close stops acceleration and reads the registers back. Entries proposed before Close
// are in the Output of the next Ready (the host must still take it: they are in
// LastLogIndex); datagrams not yet sent may be sent or dropped.
func (e *Engine) Close() Registers {
	r := e.Registers()
	e.open, e.enabled, e.voting = false, false, false
	e.pending = e.pending[:0]
	return r
}

// Registers reads the registers without closing.
func (e *Engine) Registers() Registers {
	r := e.reg
	r.Enabled = e.open && e.enabled && e.halt == nil
	r.Peers = slices.Clone(e.reg.Peers)
	if r.IsLeader {
		r.MatchIndex = make(map[uint64]uint64, len(e.peers)+1)
		r.MatchIndex[r.ID] = e.selfMatch
		for _, p := range e.peers {
			r.MatchIndex[p.id] = p.match
		}
	}
	return r
}

// PeerMatches calls fn with each follower's match index (leader), without allocating.
func (e *Engine) PeerMatches(fn func(id, match uint64)) {
	for i := range e.peers {
		fn(e.peers[i].id, e.peers[i].match)
	}
}

// Stats returns the counters.
func (e *Engine) Stats() Stats { return e.stats }

// Halted returns why acceleration stopped, or nil.
func (e *Engine) Halted() *Halt { return e.halt }

func (e *Engine) running() bool { return e.open && e.halt == nil }

func (e *Engine) stop(h Halt) {
	if e.halt != nil {
		return
	}
	e.halt = &h
	e.out.Halt = e.halt
	e.enabled, e.voting = false, false
}

// --- sending ----------------------------------------------------------------------------

func (e *Engine) buffer(n int) []byte {
	for i := len(e.free) - 1; i >= 0; i-- {
		if b := e.free[i]; cap(b) >= n {
			e.free[i] = e.free[len(e.free)-1]
			e.free = e.free[:len(e.free)-1]
			return b[:0]
		}
	}
	return make([]byte, 0, max(n, 512))
}

func (e *Engine) send(p *Packet) []byte {
	p.ClusterID, p.From = e.cfg.ClusterID, e.reg.ID
	b := AppendPacket(e.buffer(PacketSize(p)), p)
	e.out.Datagrams = append(e.out.Datagrams, Outgoing{To: p.To, Bytes: b})
	e.stats.Sent++
	return b
}

func (e *Engine) sendVoteRequest(now int64, p *peer) {
	index, term := e.openLast, e.openLastTerm
	if !e.voting {
		// A rejoin: its log ends in this term's entries, from rejoinFrom on at least.
		index, term = p.rejoinFrom, e.reg.CurrentTerm
	}
	e.send(&Packet{Type: VoteRequest, To: p.id, Term: e.reg.CurrentTerm,
		PrevLogIndex: index, PrevLogTerm: term})
	p.sentAt = now
}

// sendBatch sends b to the given peers: encoded once, then copied with To patched.
func (e *Engine) sendBatch(now int64, b *batch, to []*peer) {
	if len(to) == 0 {
		return
	}
	pk := Packet{Type: Append, To: to[0].id, Term: e.reg.CurrentTerm, PrevLogIndex: b.prev,
		PrevLogTerm: b.prevTerm, LeaderCommit: e.reg.CommitIndex, Entries: b.entries}
	first := e.send(&pk)
	for _, p := range to[1:] {
		c := append(e.buffer(len(first)), first...)
		patchTo(c, p.id, e.reg.CommitIndex)
		e.out.Datagrams = append(e.out.Datagrams, Outgoing{To: p.id, Bytes: c})
		e.stats.Sent++
	}
	for _, p := range to {
		p.told = e.reg.CommitIndex
		if p.match >= b.prev {
			// It held everything before b: its ack timeout starts now, not at its last
			// progress (which may be long ago on an idle leader).
			p.waitSince = now
		}
		p.sentAt = now
	}
}

// sendHeartbeat sends an Append without entries: it carries the commit index.
func (e *Engine) sendHeartbeat(now int64, p *peer) {
	e.send(&Packet{Type: Append, To: p.id, Term: e.reg.CurrentTerm, PrevLogIndex: e.sealed,
		PrevLogTerm: e.sealedTerm, LeaderCommit: e.reg.CommitIndex})
	p.sentAt, p.told = now, e.reg.CommitIndex
}

// maxReplayBytes bounds one replay burst to about a socket receive buffer: a follower
// far behind gets the ring a window at a time (it asks again, or the leader's timeout
// sends the next window), rather than a burst the kernel would mostly drop.
const maxReplayBytes = 256 << 10

// replay sends p the ring's batches holding index through end (through the last sealed
// one when end is 0), skipping what was replayed to it moments ago (in flight still). It
// reports false when the ring no longer holds index: software must catch p up.
func (e *Engine) replay(now int64, p *peer, index, end uint64) bool {
	if index > e.sealed {
		return true // nothing sent it lacks (the open batch goes out when sealed)
	}
	if e.ring.n == 0 || index < e.ring.first() {
		return false
	}
	// The window belongs to the replay that sent index: one that continues it keeps its
	// start and its clock, and a replay of a later gap opens a window of its own that
	// does not cover index. Were every replay to restart the clock over everything up to
	// its last batch, a follower that keeps missing batches (it asks for the first gap
	// once per timeout, for later gaps in between) would have the leader replay only
	// ever newer batches, and never again the lost one it waits for.
	continues := false
	if now-p.replayAt < int64(e.cfg.RetransmitTimeout)/2 && p.replayedFrom <= index && index <= p.replayedTo {
		if index = p.replayedTo + 1; index > e.sealed {
			return true
		}
		continues = true
	}
	if !continues {
		p.replayedFrom, p.replayAt = index, now
	}
	if end == 0 || end > e.sealed {
		end = e.sealed
	}
	pos, _ := e.ring.find(index)
	to := []*peer{p}
	for i, n := pos, 0; i < e.ring.n && n < maxReplayBytes; i++ {
		b := e.ring.at(i)
		if b.prev >= end && i > pos {
			break
		}
		e.sendBatch(now, b, to)
		e.stats.Replayed++
		n += b.bytes
		p.replayedTo = b.last()
	}
	if p.lazy {
		p.lazySent = max(p.lazySent, p.replayedTo)
	}
	return true
}

func (e *Engine) recover(p *peer) {
	if p.state == peerRecover {
		return
	}
	p.state = peerRecover
	e.out.Recover = append(e.out.Recover, p.id)
}

func (e *Engine) peer(id uint64) *peer {
	for i := range e.peers {
		if e.peers[i].id == id {
			return &e.peers[i]
		}
	}
	return nil
}

// --- leader -----------------------------------------------------------------------------

// Propose appends entries of data at the next indexes (clock is the leader's time, unix
// ms, raised to the log's last clock if behind) to the host log and the open batch, and
// returns the first index. The engine keeps data: the caller must not modify it.
func (e *Engine) Propose(now int64, clock int64, data ...[]byte) (first uint64, err error) {
	return e.ProposeTyped(now, clock, 0, data...)
}

// ProposeTyped is Propose with the host's entry type.
func (e *Engine) ProposeTyped(now int64, clock int64, typ uint8, data ...[]byte) (first uint64, err error) {
	e.lastNow = max(e.lastNow, now)
	if !e.running() || !e.reg.IsLeader {
		return 0, ErrNotAccelerated
	}
	for _, d := range data {
		if len(d) > MaxEntryData {
			return 0, fmt.Errorf("%w: entry of %d bytes", ErrTooLarge, len(d))
		}
	}
	if len(e.pending) > 0 && e.cfg.BatchDelay > 0 && now-e.pendingAt >= int64(e.cfg.BatchDelay) {
		e.seal(now)
	}
	first = e.reg.LastLogIndex + 1
	e.reg.LastLogTime = max(e.reg.LastLogTime, clock)
	for _, d := range data {
		ent := Entry{Index: e.reg.LastLogIndex + 1, Term: e.reg.CurrentTerm, Time: e.reg.LastLogTime, Type: typ, Data: d}
		e.reg.LastLogIndex, e.reg.LastLogTerm = ent.Index, ent.Term
		e.out.Append = append(e.out.Append, ent)
		size := entrySize(len(d))
		if len(e.pending) > 0 && e.pendingBytes+size > e.cfg.BatchBytes {
			e.seal(now)
		}
		if len(e.pending) == 0 {
			e.pendingAt = now
			if e.pending == nil {
				e.pending = e.ring.takeSpare()
			}
		}
		e.pending = append(e.pending, ent)
		e.pendingBytes += size
		if e.pendingBytes >= e.cfg.BatchBytes {
			e.seal(now)
		}
	}
	if !e.cfg.AckAfterPersist {
		e.selfMatch = e.reg.LastLogIndex
	}
	if e.cfg.BatchDelay == 0 {
		if e.mayLaunch() {
			e.seal(now)
		} else if len(e.pending) > 0 {
			e.stats.Held++
		}
	}
	e.maybeCommit()
	return first, nil
}

// mayLaunch reports whether a batch that is not full may be sent now: always, unless
// Config.InFlight batches wait for their commit.
func (e *Engine) mayLaunch() bool {
	if e.cfg.InFlight == 0 {
		return true
	}
	done := 0
	for done < len(e.flight) && e.flight[done] <= e.reg.CommitIndex {
		done++
	}
	e.flight = append(e.flight[:0], e.flight[done:]...)
	return len(e.flight) < e.cfg.InFlight
}

// launchHeld sends the open batch that waited for a commit (Config.InFlight), if it may
// go now; called when the commit index moves.
func (e *Engine) launchHeld(now int64) {
	if len(e.pending) > 0 && e.cfg.BatchDelay == 0 && !e.voting && e.mayLaunch() {
		e.seal(now)
	}
}

// seal closes the open batch into the ring and sends it to every active follower (none
// while the vote round runs: they get it from the ring once it is won).
func (e *Engine) seal(now int64) {
	if len(e.pending) == 0 {
		return
	}
	b := batch{prev: e.sealed, prevTerm: e.sealedTerm, entries: e.pending, bytes: e.pendingBytes}
	e.ring.push(b)
	e.sealed, e.sealedTerm = b.last(), e.reg.CurrentTerm
	e.pending, e.pendingBytes = nil, HeaderSize
	e.stats.Sealed++
	if !e.enabled {
		return
	}
	if e.cfg.InFlight > 0 {
		e.flight = append(e.flight, e.sealed)
	}
	to := make([]*peer, 0, 8)
	for i := range e.peers {
		p := &e.peers[i]
		switch {
		case p.state != peerActive:
		case !p.lazy:
			to = append(to, p)
		case p.waiting:
			// Its host waits for a commit (a client's write it forwarded): it needs
			// the entries to answer, and lazily it would get them LazyDelay late, or
			// at the next tick when no later seal flushes it. What it was not sent
			// goes with this batch.
			e.sendLazy(now, p)
		case p.lazySent == b.prev: // the first batch it waits for
			p.lazyAt = now
		}
	}
	e.sendBatch(now, &b, to)
	e.commitBcast = e.reg.CommitIndex
	e.flushLazy(now, false)
}

// flushLazy sends the lazy followers what they have not been sent: all of them with
// force, else those whose oldest unsent batch has waited LazyDelay.
func (e *Engine) flushLazy(now int64, force bool) {
	for i := range e.peers {
		p := &e.peers[i]
		if p.lazy && p.state == peerActive && p.lazySent < e.sealed && (force || now-p.lazyAt >= int64(e.cfg.LazyDelay)) {
			e.sendLazy(now, p)
		}
	}
}

// sendLazy sends p the ring's batches after lazySent, consecutive ones joined into
// datagrams of up to BatchBytes (a datagram costs the leader's sendmmsg and the
// follower's receive about the same whatever its size), or hands p to software when
// the ring no longer holds them.
func (e *Engine) sendLazy(now int64, p *peer) {
	pos, ok := e.ring.find(p.lazySent + 1)
	p.lazySent = e.sealed
	if !ok {
		e.recover(p)
		return
	}
	to := []*peer{p}
	for i := pos; i < e.ring.n; {
		first := e.ring.at(i)
		joined := batch{prev: first.prev, prevTerm: first.prevTerm, bytes: first.bytes,
			entries: append(e.joinBuf[:0], first.entries...)}
		for i++; i < e.ring.n; i++ {
			b := e.ring.at(i)
			if joined.bytes+b.bytes-HeaderSize > e.cfg.BatchBytes {
				break
			}
			joined.entries = append(joined.entries, b.entries...)
			joined.bytes += b.bytes - HeaderSize
		}
		e.sendBatch(now, &joined, to) // encodes it: joinBuf is free again
		e.joinBuf = joined.entries[:0]
	}
	e.stats.LazySends++
}

// chooseLazy makes the followers beyond a quorum lazy, by PickLazy. A follower made lazy
// has been sent every sealed batch; one made eager is first sent what it was not.
func (e *Engine) chooseLazy(now int64) {
	if e.cfg.LazyDelay <= 0 || !e.enabled || e.voting {
		return
	}
	ids := make([]uint64, len(e.peers))
	was := make(map[uint64]bool, len(e.peers))
	for i := range e.peers {
		ids[i] = e.peers[i].id
		was[ids[i]] = e.peers[i].lazy
	}
	// A follower left to software (peerRecover) is sent nothing: it must not take an
	// eager follower's place, so it counts as the furthest behind.
	lazy := PickLazy(ids, func(id uint64) uint64 {
		if p := e.peer(id); p.state == peerActive {
			return p.match
		}
		return 0
	}, was)
	for i := range e.peers {
		p := &e.peers[i]
		switch {
		case lazy[p.id] && !p.lazy:
			p.lazy, p.lazySent = true, e.sealed
		case !lazy[p.id] && p.lazy:
			if p.state == peerActive && p.lazySent < e.sealed {
				e.sendLazy(now, p)
			}
			p.lazy = false
		}
	}
}

// maybeCommit advances the commit index to the highest index a majority of voters holds.
// Only an entry of the current term is committed by counting (§5.4.2); the entries below
// it commit with it. Above openLast every entry is of the current term; at or below it
// only openLast itself is known to be, when LastLogTerm was the current term at Open.
func (e *Engine) maybeCommit() bool {
	m := append(e.scratch[:0], e.selfMatch)
	for i := range e.peers {
		m = append(m, e.peers[i].match)
	}
	e.scratch = m
	slices.Sort(m)
	mci := m[len(m)-e.quorum]
	if mci <= e.reg.CommitIndex {
		return false
	}
	if mci < e.openLast || (mci == e.openLast && e.openLastTerm != e.reg.CurrentTerm) {
		return false
	}
	e.reg.CommitIndex = mci
	return true
}

func (e *Engine) maybeWinVote(now int64) {
	if !e.voting {
		return
	}
	n := 1
	for i := range e.peers {
		if e.peers[i].granted {
			n++
		}
	}
	if n < e.quorum {
		return
	}
	e.voting, e.enabled = false, true
	for i := range e.peers {
		p := &e.peers[i]
		if p.state == peerRecover {
			continue
		}
		p.state, p.waitSince = peerActive, now
		// A member that has not answered yet is assumed to match at openLast: if it
		// does not, its engine asks for a retransmission or refuses, and it is recovered.
		if !e.replay(now, p, max(p.match, e.openLast)+1, 0) {
			e.recover(p)
		}
	}
	e.maybeCommit()
}

func (e *Engine) leaderStep(now int64, pk *Packet) {
	p := e.peer(pk.From)
	switch pk.Type {
	case Append:
		// Another leader in our term: only a broken invariant gets here.
		e.stop(Halt{Reason: HaltUnexpected, From: pk.From, Term: pk.Term, Index: pk.PrevLogIndex})
	case VoteResponse:
		e.handleVoteResponse(now, p, pk)
	case Ack:
		e.handleAck(now, p, pk)
	case RetransmitRequest:
		e.handleRetransmitRequest(now, p, pk)
	case Nack:
		// A Nack answers an Append, and a vote round sends none: one that comes during
		// the round answers an accelerated term this leader closed earlier in the same
		// Raft term, and says nothing of this one (the member answers the vote request).
		// Nor does one that comes while a member is asked to rejoin: it answers an
		// Append of before the member left.
		if (pk.Reason == HaltMismatch || pk.Reason == HaltNotOpen) && p.state == peerActive && !e.voting {
			e.recover(p)
		}
	}
}

func (e *Engine) handleVoteResponse(now int64, p *peer, pk *Packet) {
	if pk.Reject {
		switch {
		case e.voting:
			e.stop(Halt{Reason: HaltVoteRefused, From: pk.From, Term: pk.Term, Index: pk.Index})
		case p.state == peerVoting:
			e.recover(p) // asked to rejoin, it cannot: software goes on with it
		case !p.granted && p.match <= e.openLast && p.state == peerActive:
			// A member that refused after the majority granted: software catches it up.
			// (One that already acked our entries answered a stale duplicate request.)
			e.recover(p)
		}
		return
	}
	if !e.voting && p.state == peerVoting {
		e.rejoin(now, p, pk.Index)
		return
	}
	if p.granted {
		return
	}
	p.granted = true
	// It granted because its log equals ours up to openLast.
	p.match = max(p.match, e.openLast)
	if e.voting {
		e.maybeWinVote(now)
	} else {
		e.maybeCommit()
	}
}

func (e *Engine) handleAck(now int64, p *peer, pk *Packet) {
	if pk.Index > e.reg.LastLogIndex || !e.enabled {
		e.stats.Dropped++
		return
	}
	e.stats.Acks++
	p.waiting = pk.Waiting
	p.commit = max(p.commit, min(pk.LeaderCommit, pk.Index))
	if pk.Index <= p.match {
		return // duplicate or reordered
	}
	p.match, p.waitSince, p.retries = pk.Index, now, 0
	if e.maybeCommit() {
		// The held batch first: it carries the new commit to every follower it goes to.
		e.launchHeld(now)
		for i := range e.peers {
			e.announceIdleCommit(now, &e.peers[i])
		}
	} else {
		// It may be the one that was behind when the commit was announced: the member
		// a ZooKeeper client's write was forwarded from is as likely to ack second.
		e.announceIdleCommit(now, p)
	}
}

// announceIdleCommit tells follower p a new commit index at once when no batch is
// waiting or in flight to carry it and p's host waits for it (its last ack said so):
// otherwise it would learn of the last write of a burst only at the next tick, and a
// client whose write it forwarded (a ZooKeeper client on a follower) would wait for
// that tick: 4 ms on average, with 10 ms ticks. A follower that waits for nothing
// learns of the commit from the next batch, or from the tick's heartbeat: announced to
// every follower, commits cost each of them a datagram and a wake-up per 3 batches
// under redis-benchmark SET -c 50 -P 1, where nobody waited for them.
func (e *Engine) announceIdleCommit(now int64, p *peer) {
	if !p.waiting || len(e.pending) > 0 || e.sealed > e.reg.CommitIndex {
		return
	}
	// Only to a follower that holds every sealed entry: to one still behind, a heartbeat
	// naming the last sealed index reads as a gap and asks for retransmissions of what
	// is on its way. It is told once its ack shows it caught up, or on the tick.
	if p.state == peerActive && p.match >= e.sealed && p.commit < e.reg.CommitIndex && p.told < e.reg.CommitIndex {
		e.sendHeartbeat(now, p)
	}
}

func (e *Engine) handleRetransmitRequest(now int64, p *peer, pk *Packet) {
	if p.state != peerActive || pk.Index <= p.match || pk.Index > e.reg.LastLogIndex+1 {
		return // stale (it acked past it since), or not ours to serve
	}
	if !e.replay(now, p, pk.Index, pk.PrevLogIndex) {
		e.recover(p)
	}
}

// Resume asks follower, which the engine handed to software (Recover, or Outside at
// Open), to rejoin the running term, once software has caught it up to match (an index
// of this term, at or after the term's first) and has no entries in flight to it: the
// leader sends it a vote request, which it grants when its log ends in this term's
// entries at match or later (its engine opens for it); the leader then replays the ring
// after where it ends and streams to it again. A refusal, no answer within VoteTimeout,
// or a ring that no longer holds what it lacks report it in Recover again. Resume
// reports false, and does nothing, unless the engine is a running leader past its vote
// round that had handed follower to software.
func (e *Engine) Resume(now int64, follower, match uint64) bool {
	p := e.peer(follower)
	if p == nil || !e.running() || !e.reg.IsLeader || e.voting || p.state != peerRecover {
		return false
	}
	if match < e.openLast || match > e.reg.LastLogIndex {
		e.out.Recover = append(e.out.Recover, p.id) // not an index of this term's log
		return true
	}
	p.state, p.granted = peerVoting, false
	p.rejoinAt, p.rejoinFrom = now, match
	e.sendVoteRequest(now, p)
	return true
}

// rejoin takes back p, which granted the vote Resume asked for: its log holds this
// term's entries up to last (each from this leader, so equal to ours: Log Matching).
// A grant from before the request (the term's round) does not show that, and is ignored.
func (e *Engine) rejoin(now int64, p *peer, last uint64) {
	if last < p.rejoinFrom || last > e.reg.LastLogIndex {
		return
	}
	p.match = max(p.match, last)
	p.granted, p.state, p.retries, p.waitSince = true, peerActive, 0, now
	p.lazySent = max(p.lazySent, p.match)
	if !e.replay(now, p, p.match+1, 0) {
		e.recover(p)
	}
	e.maybeCommit()
}

// Rejoined reports whether follower is back in the running term: it granted the vote
// Resume asked for.
func (e *Engine) Rejoined(follower uint64) bool {
	p := e.peer(follower)
	return p != nil && e.running() && p.state == peerActive
}

// Voting reports whether a leader's term is still in its vote round.
func (e *Engine) Voting() bool { return e.voting }

// --- follower ---------------------------------------------------------------------------

// termAt is the term of the entry at i, when the engine knows it: the last entry at Open,
// and every entry appended since.
func (e *Engine) termAt(i uint64) (uint64, bool) {
	switch {
	case i == e.openLast:
		return e.openLastTerm, true
	case i < e.openLast || i > e.reg.LastLogIndex:
		return 0, false
	}
	for k := len(e.runs) - 1; k >= 0; k-- {
		if e.runs[k].first <= i {
			return e.runs[k].term, true
		}
	}
	return 0, false
}

// handleAppend is the follower's handler for an Append of the current term: Raft's
// AppendEntries receiver restricted to the common case (see the package doc).
func (e *Engine) handleAppend(now int64, pk *Packet) {
	last := pk.PrevLogIndex + uint64(len(pk.Entries))
	t := pk.PrevLogTerm
	for i := range pk.Entries {
		if pk.Entries[i].Term < t || pk.Entries[i].Term > pk.Term {
			e.stats.Dropped++ // terms go down, or above the leader's: not from a leader
			return
		}
		t = pk.Entries[i].Term
	}
	e.lead = pk.From
	if pk.PrevLogIndex > e.reg.LastLogIndex {
		// A gap: datagrams were lost or reordered. Hold this one if there is room (it
		// applies once the gap fills), and ask for what is missing, once per gap, again
		// only after RetransmitTimeout; the leader's own timeout covers a lost request.
		end := last
		if len(pk.Entries) == 0 || e.hold(pk) {
			end = pk.PrevLogIndex
		}
		e.requestRetransmit(now, end)
		return
	}
	// prevLogIndex ≤ lastLogIndex. Compare terms at h, the last index both the datagram
	// and our log cover: equal terms there mean equal logs up to h (Log Matching, §5.3).
	h := min(last, e.reg.LastLogIndex)
	ours, known := e.termAt(h)
	if !known {
		// Entries from before Open we cannot check: a stale datagram. Ignore it.
		e.stats.Duplicates++
		return
	}
	theirs := pk.PrevLogTerm
	if h > pk.PrevLogIndex {
		theirs = pk.Entries[h-pk.PrevLogIndex-1].Term
	}
	if prevTerm, ok := e.termAt(pk.PrevLogIndex); ok && prevTerm != pk.PrevLogTerm {
		ours, theirs = prevTerm, pk.PrevLogTerm // Figure 2's own check, where we can make it
	}
	if ours != theirs {
		e.stop(Halt{Reason: HaltMismatch, From: pk.From, Term: pk.Term, Index: h})
		e.send(&Packet{Type: Nack, To: pk.From, Reason: HaltMismatch, Term: e.reg.CurrentTerm,
			Index: e.reg.LastLogIndex})
		return
	}
	if last > e.reg.LastLogIndex {
		e.appendEntries(pk.Entries[e.reg.LastLogIndex-pk.PrevLogIndex:])
		if e.gapWant != 0 && e.gapWant <= e.reg.LastLogIndex {
			e.gapWant = 0 // filled
		}
		if !e.cfg.AckAfterPersist {
			e.ackPending = true
		}
	} else {
		if len(pk.Entries) > 0 {
			e.stats.Duplicates++
		}
		e.ackPending = true // re-ack: the leader may have lost our ack
	}
	if c := min(pk.LeaderCommit, last); c > e.reg.CommitIndex {
		e.reg.CommitIndex = c
	}
}

// Bounds of the follower's reorder buffer: datagrams that arrived ahead of a gap.
const (
	maxHeld      = 64
	maxHeldBytes = 1 << 20
)

// hold keeps a copy of an Append that arrived ahead of a gap, keyed by its prevLogIndex
// (replays keep the leader's batch boundaries, so a filled gap finds it there).
func (e *Engine) hold(pk *Packet) bool {
	if _, dup := e.held[pk.PrevLogIndex]; dup {
		return true
	}
	size := PacketSize(pk)
	if len(e.held) >= maxHeld || e.heldBytes+size > maxHeldBytes {
		return false
	}
	c := *pk
	if !e.cfg.KeepData {
		c.Entries = slices.Clone(pk.Entries)
		n := 0
		for i := range c.Entries {
			n += len(c.Entries[i].Data)
		}
		buf := make([]byte, 0, n)
		for i := range c.Entries {
			off := len(buf)
			buf = append(buf, c.Entries[i].Data...)
			c.Entries[i].Data = buf[off:len(buf):len(buf)]
		}
	}
	if e.held == nil {
		e.held = make(map[uint64]*Packet)
	}
	e.held[pk.PrevLogIndex] = &c
	e.heldBytes += size
	return true
}

// drainHeld applies the held datagrams that now follow the log, and forgets those the
// log has overtaken.
func (e *Engine) drainHeld(now int64) {
	for len(e.held) > 0 && e.running() {
		h := e.held[e.reg.LastLogIndex]
		if h == nil {
			break
		}
		e.unhold(h)
		e.handleAppend(now, h)
	}
	for _, h := range e.held {
		if h.PrevLogIndex+uint64(len(h.Entries)) <= e.reg.LastLogIndex {
			e.unhold(h)
		}
	}
}

func (e *Engine) unhold(h *Packet) {
	delete(e.held, h.PrevLogIndex)
	e.heldBytes -= PacketSize(h)
}

// appendEntries appends ents after the last entry: to the host ring, with their data
// copied out of the datagram (one allocation for all) unless the host gave it away
// (KeepData).
func (e *Engine) appendEntries(ents []Entry) {
	var buf []byte
	if !e.cfg.KeepData {
		n := 0
		for i := range ents {
			n += len(ents[i].Data)
		}
		buf = make([]byte, 0, n)
	}
	for i := range ents {
		ent := ents[i]
		ent.Index = e.reg.LastLogIndex + 1
		if !e.cfg.KeepData {
			off := len(buf)
			buf = append(buf, ent.Data...)
			ent.Data = buf[off:len(buf):len(buf)]
		}
		if len(e.runs) == 0 || e.runs[len(e.runs)-1].term != ent.Term {
			e.runs = append(e.runs, termRun{first: ent.Index, term: ent.Term})
		}
		e.reg.LastLogIndex, e.reg.LastLogTerm = ent.Index, ent.Term
		e.reg.LastLogTime = max(e.reg.LastLogTime, ent.Time)
		e.out.Append = append(e.out.Append, ent)
	}
}

// requestRetransmit asks the leader for the entries from lastLogIndex+1 through end,
// skipping what the reorder buffer holds. Within RetransmitTimeout of a request for the
// same gap it asks only for what lies past the indexes already requested: one
// outstanding request per missing datagram.
func (e *Engine) requestRetransmit(now int64, end uint64) {
	want := e.reg.LastLogIndex + 1
	if e.lead == 0 {
		return
	}
	from := want
	if want == e.gapWant && now-e.gapAt < int64(e.cfg.RetransmitTimeout) {
		from = max(from, e.gapEnd+1)
	} else {
		e.gapWant, e.gapEnd, e.gapAt = want, 0, now
	}
	for h := e.held[from-1]; h != nil; h = e.held[from-1] {
		from = h.PrevLogIndex + uint64(len(h.Entries)) + 1
	}
	if from > end {
		return
	}
	e.gapEnd = max(e.gapEnd, end)
	e.send(&Packet{Type: RetransmitRequest, To: e.lead, Term: e.reg.CurrentTerm, Index: from,
		PrevLogIndex: end})
	e.stats.GapRequests++
}

// handleVote answers the leader's accelerated-term vote (Waverunner's RequestVoteFPGA):
// granted when this member's log ends exactly where the leader's does, or (a member
// asked to rejoin a running term) when it ends in an entry of the leader's term at or
// after the one asked about, which is of that term too. Entries of the leader's term
// came from the leader, so the two logs are equal up to the end of this one (Log
// Matching); the answer's Index says where it ends. At the term's first round the two
// rules agree: no member holds an entry of the term past the leader's last.
func (e *Engine) handleVote(pk *Packet) {
	exact := pk.PrevLogIndex == e.reg.LastLogIndex && pk.PrevLogTerm == e.reg.LastLogTerm
	ahead := pk.PrevLogTerm == e.reg.CurrentTerm && e.reg.LastLogTerm == e.reg.CurrentTerm &&
		pk.PrevLogIndex <= e.reg.LastLogIndex
	grant := e.running() && !e.reg.IsLeader && (exact || ahead)
	if grant {
		e.lead = pk.From
	}
	e.send(&Packet{Type: VoteResponse, To: pk.From, Term: pk.Term, Reject: !grant,
		Index: e.reg.LastLogIndex})
}

// PeerWaits tells a leader's engine that follower id waits for a commit, before the
// leader proposes the writes that follower forwarded: its acks say whether it waits,
// but only from its next one, and a lazy follower acks only once it is sent entries.
// The next ack sets it again.
func (e *Engine) PeerWaits(id uint64) {
	if p := e.peer(id); p != nil && e.reg.IsLeader {
		p.waiting = true
	}
}

// SetWaiting tells a follower's engine whether its host waits for a commit: for the
// entries of a write it forwarded to the leader, say. Its acks say so, and the leader
// tells it of a commit at once instead of with the next batch or tick.
func (e *Engine) SetWaiting(w bool) { e.waiting = w }

// Persisted tells the engine the host's WAL holds every entry up to index. With
// AckAfterPersist, a follower acks them now and a leader counts itself for them.
func (e *Engine) Persisted(index uint64) {
	index = min(index, e.reg.LastLogIndex)
	if index <= e.persisted {
		return
	}
	e.persisted = index
	if !e.cfg.AckAfterPersist || !e.running() {
		return
	}
	if e.reg.IsLeader {
		e.selfMatch = max(e.selfMatch, index)
		if e.maybeCommit() {
			e.launchHeld(e.lastNow)
		}
		return
	}
	e.ackPending = true
}

// --- Step and Tick ----------------------------------------------------------------------

// Step hands the engine a datagram from a peer. The engine keeps nothing of p after it
// returns (entry data it appends are copied).
func (e *Engine) Step(now int64, p *Packet) {
	e.lastNow = max(e.lastNow, now)
	if p.ClusterID != e.cfg.ClusterID || p.To != e.reg.ID || e.reg.ID == 0 ||
		p.From == e.reg.ID || !slices.Contains(e.reg.Peers, p.From) {
		e.stats.Dropped++
		return
	}
	if !e.running() {
		e.answerClosed(p)
		return
	}
	switch {
	case p.Term < e.reg.CurrentTerm:
		e.stats.StaleDropped++
		if p.Type == Append || p.Type == VoteRequest {
			e.send(&Packet{Type: Nack, To: p.From, Reason: HaltStaleTerm, Term: e.reg.CurrentTerm,
				Index: e.reg.LastLogIndex})
		}
		return
	case p.Term > e.reg.CurrentTerm:
		// A later term: software must adopt it. Tell the sender we are out, as a closed
		// engine does, so that a new leader's vote round ends at once.
		e.stop(Halt{Reason: HaltHigherTerm, From: p.From, Term: p.Term, Index: p.Index})
		e.answerClosed(p)
		return
	}
	if e.reg.IsLeader {
		e.leaderStep(now, p)
		return
	}
	switch p.Type {
	case Append:
		e.handleAppend(now, p)
		if len(e.held) > 0 {
			e.drainHeld(now)
		}
	case VoteRequest:
		e.handleVote(p)
	default:
		// Acks, requests and votes are for leaders: a delayed datagram of ours. Ignore.
	}
}

// answerClosed refuses what a closed or halted engine cannot take, so the sender hands
// this member to software at once instead of timing out.
func (e *Engine) answerClosed(p *Packet) {
	switch p.Type {
	case VoteRequest:
		e.send(&Packet{Type: VoteResponse, To: p.From, Term: p.Term, Reject: true,
			Reason: HaltNotOpen, Index: e.reg.LastLogIndex})
	case Append:
		e.send(&Packet{Type: Nack, To: p.From, Term: p.Term, Reason: HaltNotOpen,
			Index: e.reg.LastLogIndex})
	}
}

// Tick gives the engine the time: it seals a batch whose delay passed, broadcasts a new
// commit index no batch carried, replays unacked batches after RetransmitTimeout, and
// ends a vote round that ran out of time.
func (e *Engine) Tick(now int64) {
	e.lastNow = max(e.lastNow, now)
	if !e.running() {
		return
	}
	rto := int64(e.cfg.RetransmitTimeout)
	if !e.reg.IsLeader {
		if e.gapWant == e.reg.LastLogIndex+1 && now-e.gapAt >= rto {
			e.requestRetransmit(now, e.gapEnd)
		}
		return
	}
	if e.voting {
		if now-e.voteAt >= int64(e.cfg.VoteTimeout) {
			e.stop(Halt{Reason: HaltVoteTimeout})
			return
		}
		for i := range e.peers {
			if p := &e.peers[i]; p.state == peerVoting && !p.granted && now-p.sentAt >= rto {
				e.sendVoteRequest(now, p)
			}
		}
		return
	}
	if len(e.pending) > 0 && now-e.pendingAt >= int64(e.cfg.BatchDelay) {
		e.seal(now)
	}
	e.chooseLazy(now)
	e.flushLazy(now, true)
	bcast := e.reg.CommitIndex > e.commitBcast
	for i := range e.peers {
		p := &e.peers[i]
		if p.state == peerVoting { // asked to rejoin
			switch {
			case now-p.rejoinAt >= int64(e.cfg.VoteTimeout):
				e.recover(p)
			case now-p.sentAt >= rto:
				e.sendVoteRequest(now, p)
			}
			continue
		}
		if p.state != peerActive {
			continue
		}
		switch {
		case p.match < e.sealed && now-p.waitSince >= rto:
			p.retries++
			if p.retries > e.cfg.MaxRetransmits || !e.replay(now, p, p.match+1, 0) {
				e.recover(p)
				continue
			}
			p.waitSince = now
		case (bcast && p.told < e.reg.CommitIndex) || (p.commit < min(e.reg.CommitIndex, p.match) && now-p.sentAt >= rto):
			e.sendHeartbeat(now, p)
		}
	}
	e.commitBcast = e.reg.CommitIndex
}

// --- Ready and Advance ------------------------------------------------------------------

// HasReady reports whether Ready would return anything.
func (e *Engine) HasReady() bool {
	return len(e.out.Datagrams) > 0 || len(e.out.Append) > 0 || len(e.out.Recover) > 0 ||
		e.out.Halt != nil || e.reg.CommitIndex > e.commitReported ||
		(e.ackPending && e.lead != 0 && e.running())
}

// Ready returns what the engine decided since the last Ready (see Output for the
// host's duties) and starts collecting anew.
func (e *Engine) Ready() Output {
	if e.ackPending && e.lead != 0 && e.running() {
		idx := e.reg.LastLogIndex
		if e.cfg.AckAfterPersist {
			idx = e.persisted
		}
		e.send(&Packet{Type: Ack, To: e.lead, Term: e.reg.CurrentTerm, Index: idx,
			LeaderCommit: e.reg.CommitIndex, Waiting: e.waiting})
	}
	e.ackPending = false
	o := e.out
	if e.reg.CommitIndex > e.commitReported {
		o.CommitIndex = e.reg.CommitIndex
		e.commitReported = e.reg.CommitIndex
	}
	e.out = Output{}
	return o
}

// Advance tells the engine the host has done what o asked: o's slices and datagram
// buffers are reused from now on.
func (e *Engine) Advance(o Output) {
	for i := range o.Datagrams {
		if len(e.free) < 64 {
			e.free = append(e.free, o.Datagrams[i].Bytes[:0])
		}
	}
	if e.out.Datagrams == nil {
		clear(o.Datagrams)
		e.out.Datagrams = o.Datagrams[:0]
	}
	if e.out.Append == nil {
		clear(o.Append)
		e.out.Append = o.Append[:0]
	}
	if e.out.Recover == nil {
		e.out.Recover = o.Recover[:0]
	}
}
