package consensus

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nanokv/nanokv/consensus/raft"
	"github.com/nanokv/nanokv/nicoffload"
)

// RaftNode drives a raft.Raft core for one member of a replicated cluster: it owns the
// goroutines, the clock, the transport and the applier; the core decides everything.
//
// One loop goroutine owns the core. It wakes on a tick, an incoming message, a batch of
// proposals or a read request, steps the core, then works off Ready in the order Ready
// prescribes (persist, send, hand committed entries to the applier, answer reads) and
// calls Advance. Proposals that arrive while the loop is busy are drained into one
// Propose call, so a burst of clients costs one MsgApp per follower, not one each.
//
// Unless MemoryOnly, the log and hard state go to a WAL under Dir before the messages
// that depend on them are sent (raftwal.go), the state machine is snapshotted as the log
// grows (raftsnap.go), and a restarted member loads its snapshot and replays the
// committed entries after it. A MemoryOnly member keeps its whole log in memory: it
// takes no snapshots, so it cannot compact or send one.
type RaftNode struct {
	cfg     RaftConfig
	r       *raft.Raft // owned by run
	storage *raftStorage

	recvc chan raft.Message
	propc chan *proposal
	readc chan *readRequest
	ctrlc chan ctrlRequest
	stop  chan struct{}
	done  sync.WaitGroup

	pending map[uint64]*proposal // by index: proposals waiting for their entry to commit
	// off drives the offload engine (--mode offload, offload.go), nil otherwise; dgramc
	// brings its datagrams to the loop.
	off    *raft.Offload
	offCfg OffloadConfig
	dgramc chan []nicoffload.Packet
	// forwards are proposals this member forwarded to the leader (ProposeForward), by
	// sequence number, waiting to see their EntryForwarded commit. Owned by the loop.
	forwards map[uint64]*proposal
	fwdSeq   uint64
	// fwdIn are the forwards that followers sent this leader and the loop stepped in its
	// current iteration: proposed together at its end (proposeForwards).
	fwdIn []raft.Message
	// commitBuf is commitEntries' batch, reused (the apply queue copies what it queues).
	commitBuf []pending
	// joinBuf is join's result, reused.
	joinBuf []*proposal
	// lazy is which peers chooseLazy last told the transport to hold back (owned by run).
	lazy    map[uint64]bool
	reads   map[uint64]*readRequest // by context
	readSeq uint64

	// A leader's lease reads skip the loop (leaseRead): the loop publishes how long its
	// lease holds and an index at or above every write acknowledged so far.
	epoch     time.Time    // leaseEnd counts from here, on the monotonic clock
	leaseEnd  atomic.Int64 // ns since epoch; 0: no lease
	readIndex atomic.Uint64
	lastTick  time.Time // the real time of the core's latest tick; owned by run

	commit  waiter
	applied waiter

	queue *applyQueue // committed entries on their way to the applier
	ahead *readAhead  // the applier's

	// The loop publishes Status after every iteration without allocating, unless what
	// rarely changes did: status holds the rarely changing part (republished when a
	// field of it, or the membership's generation statusGen, changes), the indexes and
	// the engine's counters are stored in place. Allocating a status per iteration was
	// 5-7% of what a member allocated under load.
	status               atomic.Pointer[RaftStatus]
	statusGen            uint64 // the membership generation status holds (loop only)
	lastIndex, commitIdx atomic.Uint64
	engStats             engineCounters
	closed               atomic.Bool

	// snapshots: the loop asks the applier for one (snapReq) when the log has grown by
	// SnapshotLogBytes, the applier writes it at its applied index and reports (snapDone),
	// and the loop compacts.
	snapshotter  Snapshotter
	snapReq      chan struct{}
	snapDone     chan snapResult
	snapIndex    uint64      // the newest snapshot this member holds (written or installed)
	snapWriting  atomic.Bool // an AsyncSnapshotter's snapshot is being written
	snapshotting bool
	// compactWait are Compact calls waiting for the snapshot in progress; compactNext
	// arrived while one was already being written, so they wait for the next.
	compactWait, compactNext []chan error
	logBytes                 int64 // entry data persisted since the last snapshot
	snapAt                   int64 // logBytes at which the next snapshot starts (nextSnapAt)
	warnedSnap               map[uint64]bool
	snapReports              chan snapReport // results of snapshot transfers to followers
	lastApplied              Entry           // the applier's last entry (data dropped)
	stats                    RaftStats
	// logCacheWant is LogCacheBytes as last set (SetLogCacheBytes); logCacheHas, the
	// loop's, is what the core was last given.
	logCacheWant atomic.Int64
	logCacheHas  int64
}

// RaftStats counts snapshot work for INFO.
type RaftStats struct {
	Snapshots        atomic.Uint64
	Compactions      atomic.Uint64 // log and WAL compactions done after a snapshot
	Installed        atomic.Uint64 // snapshots received from a leader and installed
	Sent             atomic.Uint64 // snapshots sent to followers
	SnapshotBytes    atomic.Int64  // size of the last snapshot
	SnapshotMaxStall atomic.Int64  // longest pause a snapshot caused the applier (writing it, or one entry copying what it changes), ns
	LastSnapshotUnix atomic.Int64  // when the last snapshot was written (unix s; 0: none yet)
	// SnapshotIndex is the newest snapshot's index (written, installed or loaded),
	// as snapIndex is the loop's
	SnapshotIndex      atomic.Uint64
	LastSnapshotMs     atomic.Int64 // how long the last one written took (-1: none yet)
	LastSnapshotFailed atomic.Bool  // the last one written failed
	SnapshotStartMs    atomic.Int64 // when the one being written began (unix ms; 0: none)
	// LogEntriesRead counts the entries read back from the WAL for members that lag
	// (their data no longer in memory: LogCacheBytes).
	LogEntriesRead atomic.Uint64
	// LogCachedBytes is the data of the entries the log holds in memory (at most about
	// LogCacheBytes of them applied and in the WAL).
	LogCachedBytes atomic.Int64
}

// walReader reads entries back from the member's WAL for the core (raft.LogReader),
// counting them.
type walReader struct{ n *RaftNode }

func (r walReader) ReadEntries(lo, hi uint64, maxBytes int) ([]raft.Entry, error) {
	ents, err := r.n.storage.ReadEntries(lo, hi, maxBytes)
	r.n.stats.LogEntriesRead.Add(uint64(len(ents)))
	return ents, err
}

// SnapshotWriting reports whether a snapshot is being written now.
func (n *RaftNode) SnapshotWriting() bool { return n.snapWriting.Load() }

// SnapshotInfo reports the member's snapshots as Node.SnapshotInfo reports a single
// node's (INFO persistence).
func (n *RaftNode) SnapshotInfo() SnapshotInfo {
	st := &n.stats
	si := SnapshotInfo{
		Enabled: n.cfg.Dir != "", Writing: n.snapWriting.Load(), Index: st.SnapshotIndex.Load(),
		Bytes: st.SnapshotBytes.Load(), LastUnix: st.LastSnapshotUnix.Load(), LastOK: !st.LastSnapshotFailed.Load(),
		LastTookMs: st.LastSnapshotMs.Load(), CurrentMs: -1, Count: st.Snapshots.Load(),
	}
	if start := st.SnapshotStartMs.Load(); start != 0 {
		si.CurrentMs = time.Now().UnixMilli() - start
	}
	if applied := n.Status().AppliedIndex; applied > si.Index {
		si.ChangesSinceIt = applied - si.Index
	}
	return si
}

// setSnapIndex records the newest snapshot the member holds. The loop's.
func (n *RaftNode) setSnapIndex(i uint64) {
	n.snapIndex = i
	n.stats.SnapshotIndex.Store(i)
}

type snapReport struct {
	to     uint64
	failed bool
}

// restoreMarker in a queued item's local makes the applier load a received snapshot.
type restoreMarker struct{ meta raft.SnapshotMeta }

type snapResult struct {
	meta raft.SnapshotMeta
	err  error
}

// RaftConfig configures a RaftNode.
type RaftConfig struct {
	ID         uint64
	Dir        string // WAL directory; ignored with MemoryOnly
	MemoryOnly bool
	Fsync      FsyncPolicy
	Bootstrap  raft.Membership // the initial membership (every member starts with the same)
	SM         StateMachine
	// Send hands messages to the transport. It must not block: a transport queues per
	// peer and drops what does not fit; Raft retransmits.
	Send func(msgs []raft.Message)
	// SendSnapshot streams a snapshot to m.To followed by m (a MsgSnap), and returns once
	// the member has it (the transport's SendSnapshot). nil: followers that need a
	// snapshot stay behind.
	SendSnapshot func(m raft.Message, data io.Reader) error
	// SetLazy, if set, tells the transport which peers may get their AppendEntries a
	// little later and in larger batches (the transport's SetLazy; see chooseLazy).
	SetLazy func(id uint64, lazy bool)
	// TickInterval is the core's tick; ElectionTicks and HeartbeatTicks count in it.
	TickInterval                  time.Duration
	ElectionTicks, HeartbeatTicks int
	// LeaseReads serves reads under the leader lease instead of a ReadIndex round trip.
	LeaseReads bool
	// WantsCommits, if set, says whether this member wants to hear of every commit at
	// once even with no forwarded write outstanding (see setWaiting); it is asked once
	// per iteration of the loop, so it must be cheap.
	WantsCommits func() bool
	// SnapshotLogBytes is how much entry data the log may gain before the state machine
	// (if it is a Snapshotter) is snapshotted and the log compacted; default 64 MiB.
	SnapshotLogBytes int64
	// SnapshotTrailing is how many entries before a snapshot stay in memory, so that a
	// follower a little behind catches up from the log; default 10000.
	SnapshotTrailing uint64
	// LogCacheBytes is how much entry data, of entries applied and in the WAL, the log
	// keeps in memory; older entries' data is read back from the WAL when a member needs
	// it (RedisRaft's log-max-cache-size; raft.Config.LogReader). 0: DefaultLogCacheBytes;
	// negative: all of it, until compaction. A member without a WAL keeps all of it.
	LogCacheBytes int64
	// Offload, when set, carries the common case of replication through an offload
	// engine (offload.go); deliver its datagrams with StepDatagrams.
	Offload *OffloadConfig
	// JoinBlind says the state machine applies the concatenation of two entries' data
	// as the two entries, one after the other (kvstore's encoding does): a leader then
	// joins the blind proposals (local nil: answered at commit, with nothing for the
	// applier to hand back) that one iteration of its loop proposes together into one
	// entry (join.go), and a follower those it forwards together into one forwarded
	// entry.
	JoinBlind bool
	Now       func() int64
	Logf      func(format string, args ...any)
}

// Defaults of RaftConfig: an election timeout of 200–300 ms. 80–120 ms gave a median
// failover (kill -9 of the leader on three local processes, BenchmarkFailover) of about
// 110 ms, but under full load on two shared cores members were held up by GC for
// 66–161 ms at a time, and a leader lost its quorum about every 20 s; with 200 ms none
// did in runs of a minute. The timeout now bounds only the failures nothing proves: a
// leader whose process died is found at once (PeerDown), and failover after kill -9
// takes about 20 ms (nanokv bench --full --scenarios failover).
const (
	DefaultTickInterval  = 10 * time.Millisecond
	DefaultElectionTicks = 20
)

// ElectionTimeout is the minimum time a follower waits for its leader.
func (n *RaftNode) ElectionTimeout() time.Duration {
	return n.cfg.TickInterval * time.Duration(n.cfg.ElectionTicks)
}

// RaftStatus is what INFO raft reports, refreshed by the loop after every iteration.
type RaftStatus struct {
	ID, Lead, Term         uint64
	Role                   raft.Role
	LastIndex, CommitIndex uint64
	AppliedIndex           uint64
	Membership             raft.Membership
	// Transferee is the member a leadership transfer started here hands over to, while
	// it runs (0: none).
	Transferee uint64
	// Offload is the offload engine's state (nil in raft mode).
	Offload *OffloadStatus
}

type proposal struct {
	data    []byte
	local   any
	index   uint64
	term    uint64
	forward bool // a follower may forward it to the leader (ProposeForward)
	// released: the offload engine committed it and its proposer was answered; the
	// entry still reaches the applier when the core commits it.
	released bool
	sent     time.Time // when it was forwarded
	// The proposer is told the outcome on done, or, for ProposeAsync, by a call of cb.
	done chan error // buffered: the loop never blocks on it
	cb   func(error)
	// joined are the blind proposals whose data this one's concatenates (join.go): it
	// stands for them in the log and in pending, and finish answers each.
	joined []*proposal
}

// finish tells the proposer the outcome: at commit, or the error that ended the wait.
func (p *proposal) finish(err error) {
	if p.joined != nil {
		for _, q := range p.joined {
			q.index, q.term = p.index, p.term
			q.finish(err)
		}
		return
	}
	if p.cb != nil {
		p.cb(err)
		return
	}
	p.done <- err
}

// forwardTTL is how long a forwarded proposal is remembered. Its proposer stops waiting
// long before (its request timeout); if the entry commits later still, it is applied
// like any other entry, without a waiting client.
const forwardTTL = time.Minute

// ctrlRequest runs f with the core on the loop goroutine.
type ctrlRequest struct {
	f    func(r *raft.Raft) error
	errc chan error
}

type readRequest struct {
	done  chan error
	index uint64
	// released is the offload engine's commit when the read arrived: writes up to it
	// were acknowledged before the core committed them, and the read must see them.
	released uint64
}

// ErrDropped is returned for a proposal whose entry was replaced by another leader's: it
// was never committed.
var ErrDropped = errors.New("consensus: proposal dropped by a leader change")

// StartRaft starts a member. Deliver incoming messages with Step.
func StartRaft(cfg RaftConfig) (*RaftNode, error) {
	if cfg.SM == nil || cfg.Send == nil || cfg.ID == 0 {
		return nil, errors.New("consensus: RaftConfig needs ID, SM and Send")
	}
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = DefaultTickInterval
	}
	if cfg.ElectionTicks <= 0 {
		cfg.ElectionTicks = DefaultElectionTicks
	}
	if cfg.HeartbeatTicks <= 0 {
		cfg.HeartbeatTicks = 1
	}
	if cfg.Now == nil {
		cfg.Now = func() int64 { return time.Now().UnixMilli() }
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.SnapshotLogBytes <= 0 {
		cfg.SnapshotLogBytes = 64 << 20
	}
	if cfg.SnapshotTrailing == 0 {
		cfg.SnapshotTrailing = 10000
	}
	if cfg.LogCacheBytes == 0 {
		cfg.LogCacheBytes = DefaultLogCacheBytes
	}
	n := &RaftNode{
		cfg:         cfg,
		recvc:       make(chan raft.Message, 4096),
		propc:       make(chan *proposal, 1024),
		readc:       make(chan *readRequest, 1024),
		ctrlc:       make(chan ctrlRequest),
		stop:        make(chan struct{}),
		pending:     map[uint64]*proposal{},
		forwards:    map[uint64]*proposal{},
		reads:       map[uint64]*readRequest{},
		queue:       newApplyQueue(),
		ahead:       newReadAhead(cfg.SM),
		snapReq:     make(chan struct{}, 1),
		snapDone:    make(chan snapResult, 1),
		warnedSnap:  map[uint64]bool{},
		snapReports: make(chan snapReport, 64),
		epoch:       time.Now(),
	}
	n.snapshotter, _ = cfg.SM.(Snapshotter)
	n.stats.LastSnapshotMs.Store(-1)
	n.snapAt = n.nextSnapAt()
	if cfg.Offload != nil {
		n.dgramc = make(chan []nicoffload.Packet, 1024)
	}
	st := raft.State{}
	if !cfg.MemoryOnly {
		storage, replayed, err := openRaftStorage(cfg.Dir, cfg.Fsync, cfg.Logf)
		if err != nil {
			return nil, err
		}
		if snap := replayed.Snapshot; snap != nil {
			if n.snapshotter == nil {
				storage.close()
				return nil, fmt.Errorf("consensus: %s starts from a snapshot, but the state machine cannot load one", cfg.Dir)
			}
			if err := loadSnapshotFile(cfg.Dir, snap.Index, n.snapshotter); err != nil {
				storage.close()
				return nil, err
			}
			n.commit.advance(snap.Index)
			n.applied.advance(snap.Index)
			n.setSnapIndex(snap.Index)
			removeOldSnapshots(cfg.Dir, snap.Index, true) // one written but not yet recorded when we stopped
			n.lastApplied = Entry{Index: snap.Index, Term: snap.Term, Time: snap.Time}
			cfg.Logf("consensus: member %d loaded its snapshot at index %d", cfg.ID, snap.Index)
		}
		if replayed.Snapshot == nil {
			removeOldSnapshots(cfg.Dir, 0, true)
		}
		n.storage, st = storage, replayed
		if len(st.Entries) > 0 {
			cfg.Logf("consensus: member %d replays %d entries from the WAL (term %d, commit %d)",
				cfg.ID, len(st.Entries), st.HardState.Term, st.HardState.Commit)
		}
	}
	if fresh := st.Snapshot == nil && len(st.Entries) == 0 && st.HardState == (raft.HardState{}); fresh && len(cfg.Bootstrap.Voters) > 0 {
		st = bootstrapState(cfg.Bootstrap)
		if n.storage != nil {
			rd := raft.Ready{Entries: st.Entries, HardState: st.HardState, HardStateChanged: true}
			if err := n.storage.save(&rd); err != nil {
				n.storage.close()
				return nil, err
			}
		}
	}
	rc := raft.Config{ID: cfg.ID, ElectionTicks: cfg.ElectionTicks, HeartbeatTicks: cfg.HeartbeatTicks}
	if n.storage != nil && cfg.LogCacheBytes > 0 {
		rc.LogReader, rc.LogCacheBytes = walReader{n}, int(min(cfg.LogCacheBytes, math.MaxInt32))
		detachNewest(st.Entries, cfg.LogCacheBytes)
	}
	n.r = raft.New(rc, st)
	n.logCacheHas = cfg.LogCacheBytes
	n.logCacheWant.Store(cfg.LogCacheBytes)
	if cfg.Offload != nil {
		n.startOffload(*cfg.Offload)
	}
	n.publishStatus()
	n.done.Add(2)
	go n.run()
	go n.runApplier()
	if n.storage != nil && cfg.Fsync == FsyncEverySec {
		n.done.Add(1)
		go n.runSyncer()
	}
	return n, nil
}

// detachNewest copies the data of the newest entries, up to budget bytes of it, into
// one buffer of their own. Replayed entries alias the WAL's segments, each read whole
// at open (up to segmentSize): the log drops the data of older entries once they are
// applied, but the newest ones it keeps (LogCacheBytes) would hold their segments in
// memory until half as much again had been written. Measured on a follower killed and
// restarted after 2M SETs of 32 bytes, then one more write and a forced collection
// (MEMORY PURGE): 184.7 MB of heap in use before this, 145.8 MB with it, its peers
// 140-141 MB (two runs each).
func detachNewest(ents []raft.Entry, budget int64) {
	i, size := len(ents), int64(0)
	for i > 0 && size+int64(len(ents[i-1].Data)) <= budget {
		i--
		size += int64(len(ents[i].Data))
	}
	buf := make([]byte, 0, size)
	for k := i; k < len(ents); k++ {
		if ents[k].Data == nil {
			continue // nil and empty differ to the applier
		}
		off := len(buf)
		buf = append(buf, ents[k].Data...)
		ents[k].Data = buf[off:len(buf):len(buf)]
	}
}

// DefaultLogCacheBytes is RaftConfig.LogCacheBytes when not set: RedisRaft's default
// log-max-cache-size.
const DefaultLogCacheBytes = 8 << 20

// bootstrapState is a new cluster's first log: one committed membership entry per
// initial voter, identical on every member (term 1, indexes 1..n). Putting the initial
// membership in the log, rather than only in each member's configuration, is what lets a
// member that joins later learn it (with every address) from the log or a snapshot.
func bootstrapState(m raft.Membership) raft.State {
	ents := make([]raft.Entry, len(m.Voters))
	for i, id := range m.Voters {
		cc := raft.ConfChange{Type: raft.PromoteVoter, Node: id, Addr: m.Addrs[id]}
		ents[i] = raft.Entry{Index: uint64(i + 1), Term: 1, Type: raft.EntryConf, Data: raft.EncodeConfChange(cc)}
	}
	return raft.State{HardState: raft.HardState{Term: 1, Commit: uint64(len(ents))}, Entries: ents}
}

// Step delivers a message from another member. It never blocks: when the loop is
// overwhelmed the message is dropped, as a lossy network would.
func (n *RaftNode) Step(m raft.Message) {
	select {
	case n.recvc <- m:
	default:
	}
}

// Propose replicates data and returns its index once committed. local reaches the state
// machine with the entry when it is applied on this member. Only the leader proposes:
// elsewhere Propose fails with ErrNotLeader.
func (n *RaftNode) Propose(ctx context.Context, data []byte, local any) (uint64, error) {
	return n.propose1(ctx, &proposal{data: data, local: local, done: make(chan error, 1)})
}

// ProposeForward is Propose that works on any member: a follower forwards data to the
// leader (MsgForward), which proposes it as an EntryForwarded naming this member, and
// returns once that entry has committed here; local then reaches the state machine
// with it, as with Propose. Without a known leader it fails with ErrNotLeader. A
// forward lost on the way (a leader change, a dropped connection) is not retried: the
// caller's ctx ends the wait, and the outcome is unknown, as for any timed-out write.
// Refusals are raft.ErrNotLeader, as from Propose.
func (n *RaftNode) ProposeForward(ctx context.Context, data []byte, local any) (uint64, error) {
	return n.propose1(ctx, &proposal{data: data, local: local, forward: true, done: make(chan error, 1)})
}

// ProposeAsync is Propose (ProposeForward if forward) that does not wait: done is
// called once with what Propose would have returned, from the loop's goroutine (or from
// this one, when the member is closed). done must not block, nor call the RaftNode. It
// waits only when the loop's inbox is full. Unlike Propose it has no deadline: a
// proposal ends when it commits, when the member loses leadership (ErrNotLeader), when
// a forward expires (ErrDropped) or when the member closes.
func (n *RaftNode) ProposeAsync(data []byte, local any, forward bool, done func(error)) {
	p := &proposal{data: data, local: local, forward: forward, cb: done}
	select {
	case n.propc <- p:
	case <-n.stop:
		done(ErrClosed)
	}
}

func (n *RaftNode) propose1(ctx context.Context, p *proposal) (uint64, error) {
	// The inbox has room but for a loop that fell far behind: try the plain send first,
	// which costs a fraction of a three-way select (5% of a leader's CPU was selectgo).
	// A proposal queued to a loop that is stopping is answered by the wait below.
	select {
	case n.propc <- p:
	default:
		select {
		case n.propc <- p:
		case <-n.stop:
			return 0, ErrClosed
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	select {
	case err := <-p.done:
		return p.index, err
	case <-n.stop:
		return 0, ErrClosed
	case <-ctx.Done():
		// The outcome is unknown: the entry may still commit.
		return 0, ctx.Err()
	}
}

// ReadBarrier returns once a linearizable read may be served on this member: it leads
// (confirmed by a heartbeat round, or by its lease) and has applied everything that was
// committed when the barrier was requested.
func (n *RaftNode) ReadBarrier(ctx context.Context) error {
	if index, ok := n.leaseRead(); ok {
		return n.applied.wait(ctx, index, n.stop)
	}
	rq := &readRequest{done: make(chan error, 1)}
	select {
	case n.readc <- rq: // as in propose1
	default:
		select {
		case n.readc <- rq:
		case <-n.stop:
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	select {
	case err := <-rq.done:
		if err != nil {
			return err
		}
		return n.applied.wait(ctx, rq.index, n.stop)
	case <-n.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TryReadBarrier reports whether a linearizable read may be served on this member now,
// without waiting: it holds a valid lease and has applied everything the lease covers.
// false only means ReadBarrier would have to wait.
func (n *RaftNode) TryReadBarrier() bool {
	index, ok := n.leaseRead()
	return ok && n.applied.load() >= index
}

// do runs f on the loop goroutine with the core, and returns its error.
func (n *RaftNode) do(ctx context.Context, f func(r *raft.Raft) error) error {
	errc := make(chan error, 1)
	select {
	case n.ctrlc <- ctrlRequest{f, errc}:
	case <-n.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-errc
}

// PeerDown tells the member that peer id's process is gone (the transport's proof: its
// member port refused a connection). A follower of id then campaigns within a few ticks
// instead of an election timeout; see raft.Raft.PeerDown.
func (n *RaftNode) PeerDown(id uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	n.do(ctx, func(r *raft.Raft) error {
		if r.Role() == raft.Follower && r.Lead() == id {
			n.cfg.Logf("consensus: leader %d is down (its member port refuses connections): electing now", id)
		}
		r.PeerDown(id)
		return nil
	})
}

// TransferLeader asks the leader to hand leadership to member to; 0 picks the voter
// that holds the most of the log. It returns the chosen member once the transfer has
// started (Status shows it as Transferee until it completes or is given up), and
// raft.ErrTransferring while another transfer runs.
func (n *RaftNode) TransferLeader(ctx context.Context, to uint64) (uint64, error) {
	err := n.do(ctx, func(r *raft.Raft) error {
		if r.Role() != raft.Leader {
			return raft.ErrNotLeader
		}
		if r.Transferee() != raft.None {
			return raft.ErrTransferring
		}
		if to == 0 {
			var best uint64
			for _, id := range r.Membership().Voters {
				if id != r.ID() && (best == 0 || r.MatchIndex(id) > r.MatchIndex(best)) {
					best = id
				}
			}
			if best == 0 {
				return fmt.Errorf("%w: no other voter to take over", raft.ErrBadConfChange)
			}
			to = best
		}
		n.closeOffload("a leadership transfer") // software's business
		return r.TransferLeader(to)
	})
	return to, err
}

// Replicas counts the other members (voters and learners) that hold every entry
// committed when it is called; only the leader knows, elsewhere it is ErrNotLeader.
func (n *RaftNode) Replicas(ctx context.Context) (int, error) {
	count := 0
	err := n.do(ctx, func(r *raft.Raft) error {
		if r.Role() != raft.Leader {
			return raft.ErrNotLeader
		}
		m := r.Membership()
		for _, ids := range [][]uint64{m.Voters, m.Learners} {
			for _, id := range ids {
				if id != r.ID() && r.MatchIndex(id) >= r.Committed() {
					count++
				}
			}
		}
		return nil
	})
	return count, err
}

// Progress reports, on the leader, what each member is known to hold and the commit
// index; elsewhere ErrNotLeader.
func (n *RaftNode) Progress(ctx context.Context) (match map[uint64]uint64, commit uint64, err error) {
	err = n.do(ctx, func(r *raft.Raft) error {
		if r.Role() != raft.Leader {
			return raft.ErrNotLeader
		}
		m := r.Membership()
		match = map[uint64]uint64{}
		for _, ids := range [][]uint64{m.Voters, m.Learners} {
			for _, id := range ids {
				match[id] = r.MatchIndex(id)
			}
		}
		commit = r.Committed()
		return nil
	})
	return match, commit, err
}

// Campaign makes this member start an election now.
func (n *RaftNode) Campaign(ctx context.Context) error {
	return n.do(ctx, func(r *raft.Raft) error { r.Campaign(); return nil })
}

// ChangeMembership proposes one membership change and returns once it is committed.
//
// A change that the leader cannot take yet, because its previous change or the first
// entry of its term is not committed, waits for that entry (within ctx) instead of
// being refused: right after an election (a failover, RAFT.TIMEOUT_NOW) that is one
// round trip away. ErrConfPending is returned when ctx ends first.
func (n *RaftNode) ChangeMembership(ctx context.Context, cc raft.ConfChange) error {
	for {
		var index, blocker uint64
		err := n.do(ctx, func(r *raft.Raft) error {
			if r.Role() == raft.Leader && r.PendingConf() > r.Committed() {
				blocker = r.PendingConf()
				return nil
			}
			var err error
			n.closeOffload("a membership change") // software's business
			index, err = r.ProposeConfChange(n.cfg.Now(), cc)
			return err
		})
		if err != nil {
			return err
		}
		if blocker == 0 {
			if err := n.commit.wait(ctx, index, n.stop); err != nil {
				return err
			}
			// The loop publishes Status at the end of the iteration that committed the
			// change; a control request runs after it, and is answered once Status is
			// published, so that a caller (RAFT.NODE, then INFO raft) sees the change.
			return n.do(context.WithoutCancel(ctx), func(*raft.Raft) error { return nil })
		}
		if err := n.commit.wait(ctx, blocker, n.stop); err != nil {
			if ctx.Err() != nil {
				return raft.ErrConfPending
			}
			return err
		}
	}
}

// Status reports the member's state as of the loop's last iteration; AppliedIndex is the
// applier's, as of now.
func (n *RaftNode) Status() RaftStatus {
	st := *n.status.Load()
	// commit before last: a reader never sees a last index below the commit index
	st.CommitIndex = n.commitIdx.Load()
	st.LastIndex = n.lastIndex.Load()
	st.AppliedIndex = n.applied.load()
	if st.Offload != nil {
		o := *st.Offload
		o.Engine = n.engStats.load()
		st.Offload = &o
	}
	return st
}

// Role is Status().Role, without copying the status.
func (n *RaftNode) Role() raft.Role { return n.status.Load().Role }

// WaitApplied returns once index has been applied.
func (n *RaftNode) WaitApplied(ctx context.Context, index uint64) error {
	return n.applied.wait(ctx, index, n.stop)
}

// Close stops the member; committed entries already queued are applied first.
func (n *RaftNode) Close() error {
	if n.closed.Swap(true) {
		return nil
	}
	close(n.stop)
	n.done.Wait()
	if n.storage != nil {
		return n.storage.close()
	}
	return nil
}

func (n *RaftNode) runSyncer() {
	defer n.done.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
			if err := n.storage.syncBehind(); err != nil {
				n.cfg.Logf("consensus: %v", err)
			}
		}
	}
}

func (n *RaftNode) publishStatus() {
	r := n.r
	n.lastIndex.Store(r.LastIndex())
	n.commitIdx.Store(r.Committed())
	n.stats.LogCachedBytes.Store(int64(r.LogCachedBytes()))
	if n.off != nil {
		n.engStats.store(n.off.EngineStats())
	}
	if cur := n.status.Load(); cur != nil && cur.Lead == r.Lead() && cur.Term == r.Term() &&
		cur.Role == r.Role() && cur.Transferee == r.Transferee() && n.statusGen == r.MembershipGen() &&
		sameOffload(cur.Offload, n.off) {
		return
	}
	n.statusGen = r.MembershipGen()
	n.status.Store(&RaftStatus{ID: n.cfg.ID, Lead: r.Lead(), Term: r.Term(), Role: r.Role(),
		Transferee: r.Transferee(), Membership: r.Membership(), Offload: n.offloadStatus()})
}

func (n *RaftNode) run() {
	defer n.done.Done()
	ticker := time.NewTicker(n.cfg.TickInterval)
	defer ticker.Stop()
	n.lastTick = time.Now()
	// catchUp moves the core's clock on before an event is handled; it runs before every
	// event, not only on the ticker. A leader's clock must not run slow: a loop kept busy
	// (or a process held up by GC, a starved machine or SIGSTOP) must not judge its lease
	// on a clock that stopped when it last ticked, or it would serve a lease read after
	// the lease ran out. So a leader ticks once per interval that really elapsed, and
	// first steps the messages that arrived meanwhile: else check-quorum would depose a
	// leader whose followers all answered while it was held up. Every other member's
	// clock may run slow, which only makes it wait longer before an election and refuse
	// votes longer (the safe side of §6.4.1), so it takes at most one tick per event: a
	// member held up for longer than an election timeout does not start an election
	// against a leader whose heartbeat is waiting in its inbox. (Measured: three members
	// and a client on two cores, under redis-benchmark -P 1 with a 1M-key keyspace, held
	// up their loops for 66–161 ms during GC.)
	catchUp := func() {
		now := time.Now()
		if now.Sub(n.lastTick) < n.cfg.TickInterval {
			return
		}
		if n.r.Role() != raft.Leader {
			n.r.Tick()
			n.lastTick = now
			return
		}
		if now.Sub(n.lastTick) >= 2*n.cfg.TickInterval {
			n.stepQueued()
		}
		for now.Sub(n.lastTick) >= n.cfg.TickInterval {
			if n.r.Role() != raft.Leader {
				n.lastTick = now // deposed meanwhile: a follower does not catch up
				return
			}
			n.r.Tick()
			n.lastTick = n.lastTick.Add(n.cfg.TickInterval)
		}
	}
	var batch []*proposal
	for {
		select {
		case <-n.stop:
			n.failAll(ErrClosed)
			// An asynchronous proposer waits for its callback, not for stop.
			for {
				select {
				case p := <-n.propc:
					p.finish(ErrClosed)
					continue
				default:
				}
				break
			}
			return
		case <-ticker.C:
			catchUp()
			n.expireForwards()
			n.chooseLazy()
			if n.off != nil {
				n.off.Tick(monoNow())
			}
		case pkts := <-n.dgramc:
			catchUp()
			if n.off != nil {
				now := monoNow()
				for i := range pkts {
					n.off.Step(now, &pkts[i])
				}
			}
		case m := <-n.recvc:
			n.step(m) // before the clock moves on: see catchUp
			catchUp()
			// Drain what else arrived, so one Ready covers many messages.
		recv:
			for range 256 {
				select {
				case m := <-n.recvc:
					n.step(m)
				default:
					break recv
				}
			}
		case p := <-n.propc:
			catchUp()
			// Let the connections that the same poll woke propose before this batch is
			// cut: on a loaded machine they are runnable but not yet run, and without the
			// yield each would get its own batch, datagram and follower wake-up. Measured
			// (three members, redis-benchmark SET -c 50 -P 1, offload): 2 proposals per
			// batch and 38–42k ops/s without it, 7 and 49–50k with it.
			runtime.Gosched()
			batch = append(batch[:0], p)
		prop:
			for len(batch) < 1024 {
				select {
				case p := <-n.propc:
					batch = append(batch, p)
				default:
					break prop
				}
			}
			n.propose(batch)
		case rq := <-n.readc:
			catchUp()
			n.read(rq)
		case c := <-n.ctrlc:
			catchUp()
			err := c.f(n.r)
			// What a control changed (a transfer closing the accelerated term, say)
			// shows in Status, and ends the lease, by the time its caller returns, not
			// an iteration later.
			n.publishReads()
			n.publishStatus()
			c.errc <- err
		case rep := <-n.snapReports:
			n.r.ReportSnapshot(rep.to, rep.failed)
		case res := <-n.snapDone:
			if err := n.handleReady(); err != nil {
				n.stopOnError(err)
				return
			}
			n.compact(res)
		}
		n.takeLogCache()
		n.proposeForwards()
		if n.off != nil {
			n.off.Drain(monoNow())
		}
		if err := n.handleReady(); err != nil {
			n.stopOnError(err)
			return
		}
		if n.off != nil {
			if n.offCfg.Engine.AckAfterPersist {
				// handleReady wrote (and synced) every entry of the log
				n.off.Persisted(n.r.LastIndex())
			}
			n.off.Drain(monoNow())
			if err := n.handleReady(); err != nil {
				n.stopOnError(err)
				return
			}
		}
		n.maybeSnapshot()
		n.publishReads()
		n.publishStatus()
		n.setWaiting()
	}
}

// chooseLazy picks, on a leader, which followers get their entries at once: of the
// voters, as many as a quorum needs besides the leader, those that hold the most of the
// log. The others are lazy (RaftConfig.SetLazy): their AppendEntries are held back
// briefly and batched, which takes a wake-up, a read, a WAL write and an
// acknowledgement off them per batch, and a write and an acknowledgement to read off
// the leader, while commits wait for the eager ones only. Called every tick: a follower
// that stops answering falls behind a lazy one within the lazy delay, and is replaced at
// the next tick (meanwhile commits wait for the lazy one, a millisecond later). A lazy
// follower replaces an eager one only when it holds strictly more, so that they do not
// trade places on every tick. Learners and members that are not the leader's stay
// eager: a learner catching up must not be held back. So do all followers of an
// offload member: software Raft replicates there only until every follower holds the
// whole log, when the engine (lazy in its own way) takes over, and a lazy follower
// would hold no whole log at any tick under load, keeping the engine closed.
func (n *RaftNode) chooseLazy() {
	if n.cfg.SetLazy == nil {
		return
	}
	var followers []uint64
	if n.r.Role() == raft.Leader && n.off == nil {
		for _, id := range n.r.Membership().Voters {
			if id != n.cfg.ID {
				followers = append(followers, id)
			}
		}
	}
	was := n.lazy
	n.lazy = nicoffload.PickLazy(followers, n.r.MatchIndex, was)
	for _, id := range followers {
		if n.lazy[id] != was[id] {
			n.cfg.SetLazy(id, n.lazy[id])
		}
		delete(was, id)
	}
	for id, lazy := range was { // no longer a voter, or no longer led
		if lazy {
			n.cfg.SetLazy(id, false)
		}
	}
}

// setWaiting tells the core and the engine whether this member waits for a commit: for
// the entry of a write it forwarded to the leader, or always when RaftConfig.WantsCommits
// says so. The leader then tells it of a commit at once; otherwise it learns of one from
// the next batch or heartbeat (at most a tick later), which spares every follower a
// message and a wake-up per idle commit.
func (n *RaftNode) setWaiting() {
	w := len(n.forwards) > 0 || n.cfg.WantsCommits != nil && n.cfg.WantsCommits()
	n.r.SetWaiting(w)
	if n.off != nil {
		n.off.SetWaiting(w)
	}
}

// stepQueued steps the messages waiting in the inbox, as many as are there now.
func (n *RaftNode) stepQueued() {
	for range len(n.recvc) {
		select {
		case m := <-n.recvc:
			n.step(m)
		default:
			return
		}
	}
}

// sendSnapshot starts streaming the snapshot m announces to its member; the loop hears
// of the outcome on snapReports. It reports false when it cannot even start.
func (n *RaftNode) sendSnapshot(m raft.Message) bool {
	if n.cfg.SendSnapshot == nil || n.storage == nil {
		if !n.warnedSnap[m.To] {
			n.cfg.Logf("consensus: member %d needs a snapshot to catch up, and this member cannot send one", m.To)
			n.warnedSnap[m.To] = true
		}
		return false
	}
	// Opened now: a newer snapshot may replace the file while it is being sent, and an
	// open file outlives its name.
	f, err := os.Open(snapshotPath(n.cfg.Dir, m.Snapshot.Index))
	if err != nil {
		n.cfg.Logf("consensus: snapshot for member %d: %v", m.To, err)
		return false
	}
	n.cfg.Logf("consensus: sending the snapshot at %d to member %d", m.Snapshot.Index, m.To)
	go func() {
		err := n.cfg.SendSnapshot(m, f)
		f.Close()
		if err != nil {
			n.cfg.Logf("consensus: snapshot to member %d: %v", m.To, err)
		} else {
			n.stats.Sent.Add(1)
		}
		select {
		case n.snapReports <- snapReport{to: m.To, failed: err != nil}:
		case <-n.stop:
		}
	}()
	return true
}

// installSnapshot persists a snapshot received from the leader: the file the transport
// wrote becomes this member's snapshot, the WAL is rewritten to start at it, and the
// applier is told to load it after the entries it has queued.
func (n *RaftNode) installSnapshot(rd *raft.Ready) error {
	meta := *rd.Snapshot
	if n.storage == nil || n.snapshotter == nil {
		return fmt.Errorf("snapshot %d: this member cannot install snapshots", meta.Index)
	}
	if err := os.Rename(receivedSnapshotPath(n.cfg.Dir, meta.Index), snapshotPath(n.cfg.Dir, meta.Index)); err != nil {
		return fmt.Errorf("snapshot %d: %w", meta.Index, err)
	}
	useless, err := n.storage.compact(meta, rd.HardState, meta.Index, true)
	if err != nil {
		return err
	}
	if err := n.storage.save(&raft.Ready{Entries: rd.Entries, HardState: rd.HardState}); err != nil {
		return err
	}
	n.cleanUp(useless, meta.Index)
	n.logBytes, n.snapAt = 0, n.nextSnapAt()
	n.stats.Installed.Add(1)
	n.setSnapIndex(max(n.snapIndex, meta.Index))
	n.cfg.Logf("consensus: member %d installs the leader's snapshot at %d", n.cfg.ID, meta.Index)
	n.commit.advance(meta.Index)
	n.queue.push(pending{e: Entry{Index: meta.Index, Term: meta.Term, Time: meta.Time}, local: restoreMarker{meta}})
	return nil
}

// stopOnError takes the member out: without its WAL it cannot keep its promises (votes,
// acknowledged entries), so it stops taking part rather than risk them.
func (n *RaftNode) stopOnError(err error) {
	n.cfg.Logf("consensus: member %d stops: %v", n.cfg.ID, err)
	n.failAll(err)
	n.publishStatus()
	n.refuseAll(err)
}

// nextSnapAt draws how much the log grows before the next snapshot: SnapshotLogBytes,
// ±25% at random. Members apply the same log, so with one fixed threshold all of them
// snapshotted at the same index, and their writers (100–400 ms each for 1M keys) ran at
// once on the machine's two cores; drawn anew for each snapshot, the thresholds spread
// the snapshots over a quarter of the log's growth either way (as gctune.go spreads the
// members' collections).
func (n *RaftNode) nextSnapAt() int64 {
	b := n.cfg.SnapshotLogBytes
	return b - b/4 + rand.Int64N(b/2+1)
}

// SetSnapshotLogBytes changes how much entry data the log gains before a snapshot
// (RedisRaft's log-max-file-size). The threshold of the snapshot now awaited is drawn
// again from it, so that a smaller value takes effect at once and a larger one for the
// log already grown too.
func (n *RaftNode) SetSnapshotLogBytes(ctx context.Context, b int64) error {
	if b <= 0 {
		return errors.New("consensus: the log's size before a snapshot must be positive")
	}
	return n.do(ctx, func(*raft.Raft) error {
		n.cfg.SnapshotLogBytes = b
		n.snapAt = n.nextSnapAt()
		n.maybeSnapshot()
		return nil
	})
}

// SetLogCacheBytes changes how much entry data, of entries applied and in the WAL, the
// log keeps in memory (RaftConfig.LogCacheBytes, RedisRaft's log-max-cache-size); b
// must be positive. It never blocks and cannot fail: the loop takes the value at its
// next turn (within a tick), and a smaller one frees what it no longer covers then
// (Stats().LogCachedBytes shows it). A member without a WAL, or started with a
// negative LogCacheBytes, keeps every entry's data whatever the value.
func (n *RaftNode) SetLogCacheBytes(b int64) {
	n.logCacheWant.Store(max(b, 1))
}

// takeLogCache hands the core a cache size set since the loop's last turn.
func (n *RaftNode) takeLogCache() {
	if b := n.logCacheWant.Load(); b != n.logCacheHas {
		n.logCacheHas = b
		n.r.SetLogCacheBytes(int(min(b, math.MaxInt32)))
	}
}

// maybeSnapshot asks the applier for a snapshot once the log has grown enough.
func (n *RaftNode) maybeSnapshot() {
	if n.snapshotter == nil || n.storage == nil || n.snapshotting || n.logBytes < n.snapAt {
		return
	}
	n.snapshotting = true
	n.snapReq <- struct{}{}
}

// Compact snapshots the state machine at its applied index and compacts the log now,
// whatever the log's size (RAFT.DEBUG COMPACT); it returns once that is done.
func (n *RaftNode) Compact(ctx context.Context) error {
	done := make(chan error, 1)
	err := n.do(ctx, func(*raft.Raft) error {
		if n.snapshotter == nil || n.storage == nil {
			return errors.New("consensus: this member keeps no snapshots (it has no WAL)")
		}
		if n.snapshotting {
			n.compactNext = append(n.compactNext, done)
			return nil
		}
		n.compactWait = append(n.compactWait, done)
		n.snapshotting = true
		n.snapReq <- struct{}{}
		return nil
	})
	if err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-n.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// OpenSnapshot opens the member's newest snapshot file (written by Compact or by
// itself, or received from a leader), and returns its index; ErrNoSnapshots when it
// keeps none.
func (n *RaftNode) OpenSnapshot() (*os.File, uint64, error) {
	if n.snapshotter == nil || n.cfg.MemoryOnly || n.cfg.Dir == "" {
		return nil, 0, ErrNoSnapshots
	}
	return openLatestSnapshot(n.cfg.Dir)
}

// compact records a snapshot the applier wrote: the core drops the entries it covers
// (but a trailing few) and the WAL drops the segments it covers. Called with every Ready
// handled, so everything in the log is persisted.
func (n *RaftNode) compact(res snapResult) {
	err := n.compact1(res)
	for _, w := range n.compactWait {
		w <- err
	}
	n.compactWait, n.compactNext = n.compactNext, nil
	if len(n.compactWait) > 0 {
		n.snapshotting = true
		n.snapReq <- struct{}{}
	}
}

func (n *RaftNode) compact1(res snapResult) error {
	n.snapshotting = false
	if res.err != nil {
		n.cfg.Logf("consensus: member %d: %v", n.cfg.ID, res.err)
		return res.err
	}
	meta := res.meta
	if meta.Index <= n.snapIndex {
		// The leader's snapshot was installed while this one was written: it is newer.
		return nil
	}
	n.setSnapIndex(meta.Index)
	meta.Membership = n.r.MembershipAt(meta.Index).Clone()
	// The segments of the entries the core keeps stay too: it may have to read them back.
	trailing := n.cfg.SnapshotTrailing
	useless, err := n.storage.compact(meta, n.r.HardState(), meta.Index-min(trailing, meta.Index), false)
	if err != nil {
		n.cfg.Logf("consensus: member %d: compaction: %v", n.cfg.ID, err)
		return err
	}
	n.r.Compact(meta, trailing)
	n.stats.Compactions.Add(1)
	n.cleanUp(useless, meta.Index)
	n.logBytes, n.snapAt = 0, n.nextSnapAt()
	return nil
}

// cleanUp removes the WAL segments a compaction left useless, and the snapshots older
// than keep, on a goroutine of its own. Unlinking 64 MiB segments took the Raft loop
// 25–36 ms, during which nothing committed (three members under redis-benchmark -P 16
// on the project's machine). A crash before it is done leaves files that do no harm: the
// snapshot record drops what the old segments hold on replay, and the next start removes
// old snapshots. Two cleanups may overlap; a file already gone is no error.
func (n *RaftNode) cleanUp(segments []string, keep uint64) {
	n.done.Add(1)
	go func() {
		defer n.done.Done()
		for _, path := range segments {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				n.cfg.Logf("consensus: member %d: compaction: %v", n.cfg.ID, err)
			}
		}
		if len(segments) > 0 {
			if err := syncDir(n.cfg.Dir); err != nil {
				n.cfg.Logf("consensus: member %d: compaction: %v", n.cfg.ID, err)
			}
		}
		removeOldSnapshots(n.cfg.Dir, keep, false)
	}()
}

// step hands a member's message to the core, except forwarding, which is the driver's.
func (n *RaftNode) step(m raft.Message) {
	switch m.Type {
	case raft.MsgForward:
		n.fwdIn = append(n.fwdIn, m)
	case raft.MsgForwardResp:
		for i := uint64(0); i < m.Index; i++ {
			if p := n.forwards[m.Context+i]; p != nil {
				delete(n.forwards, m.Context+i)
				p.finish(raft.ErrNotLeader)
			}
		}
	default:
		if n.off != nil {
			n.off.Observe(monoNow(), m) // software repairing this log closes the engine
		}
		n.r.Step(m)
	}
}

// proposeForwards proposes what followers forwarded during this iteration of the loop,
// all in one proposal: one batch, one datagram to each follower, where a proposal per
// forward made as many. Three offload members under 32 ZooKeeper sessions spread over
// them (two thirds of the writes reach the leader as forwards) made batches of 3.3-3.6
// entries with a proposal per forward, 4.5-5.2 this way. Each entry is tagged with its
// origin and sequence number. What cannot be proposed here is refused at once, so that
// the followers need not wait for their timeout.
func (n *RaftNode) proposeForwards() {
	if len(n.fwdIn) == 0 {
		return
	}
	// All the tagged entries share one buffer (the log keeps them together anyway); a
	// tag is two uvarints, at most 20 bytes.
	total, size := 0, 0
	for _, m := range n.fwdIn {
		total += len(m.Entries)
		for i := range m.Entries {
			size += 2*binary.MaxVarintLen64 + len(m.Entries[i].Data)
		}
	}
	data := make([][]byte, 0, total)
	buf := make([]byte, 0, size)
	for _, m := range n.fwdIn {
		for i := range m.Entries {
			off := len(buf)
			buf = raft.AppendForwarded(buf, m.From, m.Context+uint64(i), m.Entries[i].Data)
			data = append(data, buf[off:len(buf):len(buf)])
		}
	}
	// Each origin waits for these entries to answer its clients: a lazy follower must
	// get them at once, not with its lazy batches.
	for _, m := range n.fwdIn {
		n.r.PeerWaits(m.From)
		if n.off != nil {
			n.off.PeerWaits(m.From)
		}
	}
	if !n.proposeOffloaded(raft.EntryForwarded, nil, data) {
		if _, err := n.r.ProposeTyped(n.cfg.Now(), raft.EntryForwarded, data...); err != nil {
			refusals := make([]raft.Message, len(n.fwdIn))
			for i, m := range n.fwdIn {
				refusals[i] = raft.Message{Type: raft.MsgForwardResp, From: n.cfg.ID, To: m.From, Term: n.r.Term(),
					Context: m.Context, Index: uint64(len(m.Entries)), Reject: true}
			}
			n.cfg.Send(refusals)
		}
	}
	clear(n.fwdIn) // the log holds the data now
	n.fwdIn = n.fwdIn[:0]
}

// forward sends proposals to the leader in one MsgForward.
func (n *RaftNode) forward(batch []*proposal) {
	lead := n.r.Lead()
	if lead == raft.None || lead == n.cfg.ID {
		for _, p := range batch {
			p.finish(raft.ErrNotLeader)
		}
		return
	}
	m := raft.Message{Type: raft.MsgForward, From: n.cfg.ID, To: lead, Term: n.r.Term(),
		Context: n.fwdSeq + 1, Entries: make([]raft.Entry, len(batch))}
	now := time.Now()
	for i, p := range batch {
		n.fwdSeq++
		p.sent = now
		n.forwards[n.fwdSeq] = p
		m.Entries[i].Data = p.data
	}
	n.setWaiting() // before this iteration answers the leader
	n.cfg.Send([]raft.Message{m})
}

// expireForwards forgets forwarded proposals nobody can still be waiting for.
func (n *RaftNode) expireForwards() {
	if len(n.forwards) == 0 {
		return
	}
	cutoff := time.Now().Add(-forwardTTL)
	for seq, p := range n.forwards {
		if p.sent.Before(cutoff) {
			delete(n.forwards, seq)
			p.finish(ErrDropped)
		}
	}
}

func (n *RaftNode) propose(batch []*proposal) {
	if n.r.Role() != raft.Leader {
		// Forwardable proposals go to the leader; the others are refused by the core.
		var fwd []*proposal
		rest := batch[:0:0]
		for _, p := range batch {
			if p.forward {
				fwd = append(fwd, p)
			} else {
				rest = append(rest, p)
			}
		}
		if len(fwd) > 0 {
			if n.cfg.JoinBlind {
				// Joined here, a run of blind writes travels as one forwarded entry:
				// one tag, one sequence number and one entry in the log.
				fwd = n.join(fwd)
			}
			n.forward(fwd)
		}
		if batch = rest; len(batch) == 0 {
			return
		}
	}
	if n.cfg.JoinBlind && n.r.Role() == raft.Leader {
		// (on a follower, what is left is refused below: nothing to join)
		batch = n.join(batch)
	}
	data := make([][]byte, len(batch))
	for i, p := range batch {
		data[i] = p.data
	}
	if n.proposeOffloaded(raft.EntryNormal, batch, data) {
		return
	}
	first, err := n.r.Propose(n.cfg.Now(), data...)
	term := n.r.Term()
	for i, p := range batch {
		if err != nil {
			p.finish(err)
			continue
		}
		p.index, p.term = first+uint64(i), term
		n.pending[p.index] = p
	}
}

func (n *RaftNode) read(rq *readRequest) {
	n.readSeq++
	if n.off != nil {
		rq.released = n.off.ReleasedTo()
	}
	if err := n.r.ReadIndex(n.readSeq, n.cfg.LeaseReads); err != nil {
		rq.done <- err
		return
	}
	n.reads[n.readSeq] = rq
}

// leaseRead is a lease read that does not wait for the loop: while the lease the loop
// last published holds, a read may be served once this member has applied readIndex.
// It is the read the loop would have served at that moment. The lease is the core's
// (raft.Raft.LeaseTicksLeft), counted in real time from the core's latest tick, and the
// loop publishes it anew after every event: before it sends anything that could end it
// (a TimeoutNow, say) and after every acknowledgement that extends it. readIndex is
// raised before any write is acknowledged (handleReady, releaseOffloaded) and before
// any entry reaches the applier, so it covers every write a client may have seen.
func (n *RaftNode) leaseRead() (uint64, bool) {
	end := n.leaseEnd.Load()
	if end == 0 || int64(time.Since(n.epoch)) >= end {
		return 0, false
	}
	return n.readIndex.Load(), true
}

// raiseReadIndex publishes that writes up to index may have been acknowledged.
func (n *RaftNode) raiseReadIndex(index uint64) {
	if index > n.readIndex.Load() { // only the loop stores
		n.readIndex.Store(index)
	}
}

// publishReads publishes the lease and read index for leaseRead.
func (n *RaftNode) publishReads() {
	n.raiseReadIndex(n.r.Committed())
	var end int64
	if n.cfg.LeaseReads {
		if left := n.r.LeaseTicksLeft(); left > 0 {
			end = int64(n.lastTick.Add(time.Duration(left) * n.cfg.TickInterval).Sub(n.epoch))
		}
	}
	n.leaseEnd.Store(end)
}

func (n *RaftNode) handleReady() error {
	var snapFailed []uint64
	defer func() {
		for _, to := range snapFailed {
			n.r.ReportSnapshot(to, true)
		}
	}()
	for n.r.HasReady() {
		rd := n.r.Ready()
		// Before this Ready's messages go out and its commits are acknowledged.
		n.publishReads()
		if rd.SoftState != nil {
			n.cfg.Logf("raft: member %d is %v in term %d, leader %d", n.cfg.ID, rd.SoftState.Role, n.r.Term(), rd.SoftState.Lead)
		}
		// 1. persist (a received snapshot first: it replaces the log)
		if rd.Snapshot != nil {
			if err := n.installSnapshot(&rd); err != nil {
				return err
			}
		} else if n.storage != nil {
			if err := n.storage.save(&rd); err != nil {
				return err
			}
			for i := range rd.Entries {
				n.logBytes += int64(len(rd.Entries[i].Data))
			}
		}
		// 2. send; snapshots go on a connection of their own, in the background
		msgs := rd.Messages
		for i := 0; i < len(msgs); i++ {
			if msgs[i].Type == raft.MsgSnap {
				if !n.sendSnapshot(msgs[i]) {
					snapFailed = append(snapFailed, msgs[i].To)
				}
				msgs = append(msgs[:i:i], msgs[i+1:]...)
				i--
			}
		}
		if len(msgs) > 0 {
			n.cfg.Send(msgs)
		}
		// 3. committed entries: answer their proposers, queue them for the applier.
		if len(rd.CommittedEntries) > 0 {
			n.commitEntries(rd.CommittedEntries)
		}
		for _, rs := range rd.ReadStates {
			rq := n.reads[rs.Ctx]
			if rq == nil {
				continue
			}
			delete(n.reads, rs.Ctx)
			if rs.Lost {
				rq.done <- ErrNotLeader
			} else {
				rq.index = max(rs.Index, rq.released)
				rq.done <- nil
			}
		}
		n.r.Advance(rd)
	}
	return nil
}

func (n *RaftNode) commitEntries(ents []raft.Entry) {
	batch := n.commitBuf[:0]
	defer func() {
		clear(batch) // the apply queue copied it
		n.commitBuf = batch[:0]
	}()
	for _, e := range ents {
		var local any
		if e.Type == raft.EntryForwarded {
			origin, seq, payload, err := raft.ParseForwarded(e.Data)
			if err != nil {
				// Made by a leader of this cluster: a broken invariant.
				panic(fmt.Sprintf("consensus: member %d: forwarded entry %d: %v", n.cfg.ID, e.Index, err))
			}
			if p := n.forwards[seq]; origin == n.cfg.ID && p != nil {
				delete(n.forwards, seq)
				local, p.index, p.term = p.local, e.Index, e.Term
				p.finish(nil)
			}
			e.Data = payload
			if len(e.Data) == 0 {
				batch = append(batch, pending{e: Entry{Index: e.Index, Term: e.Term, Time: e.Time}})
				continue
			}
			batch = append(batch, pending{e: Entry{Index: e.Index, Term: e.Term, Time: e.Time, Data: e.Data}, local: local})
			continue
		}
		if p := n.pending[e.Index]; p != nil {
			delete(n.pending, e.Index)
			switch {
			case p.term == e.Term:
				local = p.local
				if !p.released {
					p.finish(nil)
				}
			case !p.released:
				p.finish(ErrDropped)
			}
		}
		if e.Type != raft.EntryNormal || len(e.Data) == 0 {
			// Leader no-ops and membership changes have nothing for the state machine,
			// but they advance the applied index.
			batch = append(batch, pending{e: Entry{Index: e.Index, Term: e.Term, Time: e.Time}})
			continue
		}
		batch = append(batch, pending{e: Entry{Index: e.Index, Term: e.Term, Time: e.Time, Data: e.Data}, local: local})
	}
	n.commit.advance(ents[len(ents)-1].Index)
	n.queue.push(batch...)
}

func (n *RaftNode) runApplier() {
	defer n.done.Done()
	for {
		select {
		case <-n.queue.signal:
		case <-n.snapReq:
			n.queue.drain(n.applyBatch)
			n.startSnapshot()
			continue
		case <-n.stop:
			n.queue.drain(n.applyBatch)
			return
		}
		n.queue.drain(n.applyBatch)
	}
}

// startSnapshot snapshots the state machine at the applier's position and reports on
// snapDone. A state machine that can capture its state at once (AsyncSnapshotter) is
// written on a goroutine of its own while applying goes on; any other is written here,
// and applying stops meanwhile (commits and blind-write replies do not). The pause is
// measured either way.
func (n *RaftNode) startSnapshot() {
	e := n.lastApplied
	if e.Index == 0 {
		n.snapDone <- snapResult{err: errors.New("snapshot: nothing applied yet")}
		return
	}
	meta := raft.SnapshotMeta{Index: e.Index, Term: e.Term, Time: e.Time}
	start := time.Now()
	n.stats.SnapshotStartMs.Store(start.UnixMilli())
	async, ok := n.snapshotter.(AsyncSnapshotter)
	if !ok {
		size, err := writeSnapshotFile(n.cfg.Dir, e.Index, n.snapshotter.Snapshot)
		n.snapDone <- n.snapshotWritten(meta, size, time.Since(start), time.Since(start), err)
		return
	}
	write, err := async.BeginSnapshot()
	stall := time.Since(start)
	if err != nil {
		n.snapDone <- n.snapshotWritten(meta, 0, stall, stall, fmt.Errorf("snapshot %d: %w", e.Index, err))
		return
	}
	n.noteStall(stall)
	n.snapWriting.Store(true)
	n.done.Add(1)
	go func() {
		defer n.done.Done()
		size, err := writeSnapshotFile(n.cfg.Dir, e.Index, write)
		n.snapWriting.Store(false)
		n.snapDone <- n.snapshotWritten(meta, size, stall, time.Since(start), err)
	}()
}

func (n *RaftNode) snapshotWritten(meta raft.SnapshotMeta, size int64, stall, took time.Duration, err error) snapResult {
	n.stats.SnapshotStartMs.Store(0)
	if err == nil {
		// The loop's compaction starts a WAL segment, and first syncs the one it ends.
		// Synced here, off the loop, that segment has only what the loop wrote since
		// left to sync.
		err = n.storage.syncBehind()
	}
	n.stats.LastSnapshotFailed.Store(err != nil)
	if err != nil {
		return snapResult{err: err}
	}
	n.stats.LastSnapshotMs.Store(took.Milliseconds())
	n.stats.Snapshots.Add(1)
	n.stats.SnapshotBytes.Store(size)
	n.stats.LastSnapshotUnix.Store(time.Now().Unix())
	n.noteStall(stall)
	n.cfg.Logf("consensus: member %d wrote a snapshot at index %d (%d bytes in %v; applying paused %v to begin it, longest apply meanwhile %v)",
		n.cfg.ID, meta.Index, size, took, stall, time.Duration(n.stats.SnapshotMaxStall.Load()))
	return snapResult{meta: meta}
}

// noteStall records the longest pause a snapshot caused the applier.
func (n *RaftNode) noteStall(d time.Duration) {
	for {
		old := n.stats.SnapshotMaxStall.Load()
		if int64(d) <= old || n.stats.SnapshotMaxStall.CompareAndSwap(old, int64(d)) {
			return
		}
	}
}

// Stats exposes the snapshot counters.
func (n *RaftNode) Stats() *RaftStats { return &n.stats }

func (n *RaftNode) applyBatch(batch []pending) {
	for i := range batch {
		n.ahead.before(batch, i)
		p := &batch[i]
		if rm, ok := p.local.(restoreMarker); ok {
			if err := loadSnapshotFile(n.cfg.Dir, rm.meta.Index, n.snapshotter); err != nil {
				// The file was complete and synced when received: a broken invariant.
				panic(fmt.Sprintf("consensus: member %d: %v", n.cfg.ID, err))
			}
		} else if p.e.Data != nil {
			if n.snapWriting.Load() {
				// The state machine copies what an entry changes first while a snapshot
				// is written: that is the pause a snapshot costs the applier.
				start := time.Now()
				n.cfg.SM.Apply(p.e, p.local)
				n.noteStall(time.Since(start))
			} else {
				n.cfg.SM.Apply(p.e, p.local)
			}
		}
		n.lastApplied = Entry{Index: p.e.Index, Term: p.e.Term, Time: p.e.Time}
	}
	n.applied.advance(batch[len(batch)-1].e.Index)
}

// refuseAll answers every later request with err until the member is closed.
func (n *RaftNode) refuseAll(err error) {
	for {
		select {
		case <-n.stop:
			return
		case p := <-n.propc:
			p.finish(err)
		case rq := <-n.readc:
			rq.done <- err
		case c := <-n.ctrlc:
			c.errc <- err
		case <-n.recvc:
		}
	}
}

func (n *RaftNode) failAll(err error) {
	n.leaseEnd.Store(0)
	if n.off != nil {
		n.off.Abort()
	}
	for _, w := range append(n.compactWait, n.compactNext...) {
		w <- err
	}
	n.compactWait, n.compactNext = nil, nil
	for idx, p := range n.pending {
		if !p.released {
			p.finish(err)
		}
		delete(n.pending, idx)
	}
	for seq, p := range n.forwards {
		p.finish(err)
		delete(n.forwards, seq)
	}
	for c, rq := range n.reads {
		rq.done <- err
		delete(n.reads, c)
	}
}
