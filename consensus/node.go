// Package consensus orders and persists proposals and hands committed entries to the
// state machine. It owns the log, the WAL, commit and apply indexes and the read barrier;
// it knows nothing of the commands inside entries.
//
// Data flow of a write (DESIGN.md): Propose appends to the log and the WAL (group commit:
// one write and at most one fsync for every proposal that arrived meanwhile), the entry
// commits, and it is queued for the applier goroutine, which calls StateMachine.Apply in
// log order. A caller answering a blind write returns as soon as its index is committed;
// one whose reply depends on state waits for its own apply.
//
// This node is a single-member cluster: an entry commits once it is in the WAL (and, with
// FsyncAlways, on disk). Replication replaces how commitIndex advances, not this shape.
package consensus

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Entry is one log entry: its position, the term that created it, the leader's clock
// when appended (unix ms, never decreasing along the log) and the opaque command batch.
type Entry struct {
	Index uint64
	Term  uint64
	Time  int64
	Data  []byte
}

// FsyncPolicy says when the WAL is forced to disk.
type FsyncPolicy int

const (
	// FsyncEverySec writes every entry to the OS before it commits and fsyncs once a
	// second: a process crash loses nothing acknowledged, a power loss up to ~1 s.
	FsyncEverySec FsyncPolicy = iota
	// FsyncAlways fsyncs before an entry commits (group commit: one fsync per batch).
	FsyncAlways
	// FsyncNo leaves flushing to the OS.
	FsyncNo
)

// ParseFsync parses always|everysec|no.
func ParseFsync(s string) (FsyncPolicy, error) {
	switch s {
	case "always":
		return FsyncAlways, nil
	case "everysec", "":
		return FsyncEverySec, nil
	case "no":
		return FsyncNo, nil
	}
	return 0, fmt.Errorf("consensus: fsync policy %q: want always, everysec or no", s)
}

func (p FsyncPolicy) String() string {
	switch p {
	case FsyncAlways:
		return "always"
	case FsyncNo:
		return "no"
	}
	return "everysec"
}

// StateMachine receives committed entries, one at a time, in log order, from a single
// goroutine. local is the value given to Propose when the entry was proposed on this
// node and this process is still the one that proposed it; otherwise nil.
type StateMachine interface {
	Apply(e Entry, local any)
}

// Config configures a Node.
type Config struct {
	Dir        string // WAL directory; ignored with MemoryOnly
	MemoryOnly bool
	Fsync      FsyncPolicy
	SM         StateMachine
	Logf       func(format string, args ...any)
	// Now returns the clock stamped on entries (unix ms); time.Now by default.
	Now func() int64
	// MaxPendingBytes bounds the data of committed-but-unapplied entries: past it, a
	// proposer waits for the applier to catch up, so a fast client cannot make the
	// backlog (and the heap) grow without bound.
	MaxPendingBytes int64
	// SnapshotLogBytes is how much entry data the WAL gains before the applier writes a
	// snapshot of a state machine that is a Snapshotter (nodesnap.go): 256 MiB ±12% by
	// default, and never less than the last snapshot's size; negative: only when asked.
	SnapshotLogBytes int64
}

var (
	// ErrClosed is returned by calls on a closed node.
	ErrClosed = errors.New("consensus: node closed")
	// ErrNotLeader is returned by Propose and ReadBarrier on a node that cannot serve them.
	ErrNotLeader = errors.New("consensus: not leader")
)

// Node is one member's consensus pipeline.
type Node struct {
	cfg Config

	mu       sync.Mutex
	term     uint64
	last     uint64 // last index appended
	lastTime int64
	walBuf   []byte    // records appended but not yet written
	spare    []byte    // the other half of the double buffer
	unsynced []pending // entries in walBuf, in order
	spareEnt []pending // the other half of unsynced's double buffer
	flushing bool      // a proposer is writing the WAL; others wait on flushed
	flushed  *sync.Cond
	durable  uint64 // last index written (and synced under FsyncAlways)
	err      error  // sticky WAL failure: the node stops accepting writes
	closed   bool

	wal *wal

	commit  waiter // commitIndex
	applied waiter // appliedIndex

	queue        *applyQueue  // committed, waiting for the applier
	ahead        *readAhead   // the applier's
	pendingBytes atomic.Int64 // data bytes in queue and being applied

	stop chan struct{}
	done sync.WaitGroup

	stats Stats
	snap  nodeSnap
}

// Stats counts pipeline events for INFO.
type Stats struct {
	Proposals   atomic.Uint64
	WALWrites   atomic.Uint64 // write batches
	WALSyncs    atomic.Uint64
	WALBytes    atomic.Uint64
	AppliedEnts atomic.Uint64
}

// Open replays the WAL into the state machine (synchronously, before returning) and
// starts the applier.
func Open(cfg Config) (*Node, error) {
	if cfg.SM == nil {
		return nil, errors.New("consensus: Config.SM is required")
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Now == nil {
		cfg.Now = func() int64 { return time.Now().UnixMilli() }
	}
	if cfg.MaxPendingBytes <= 0 {
		cfg.MaxPendingBytes = 8 << 20
	}
	n := &Node{cfg: cfg, term: 1, queue: newApplyQueue(), ahead: newReadAhead(cfg.SM), stop: make(chan struct{})}
	n.flushed = sync.NewCond(&n.mu)
	n.initSnapshots()
	if !cfg.MemoryOnly {
		var snapIndex uint64
		if n.snap.sm != nil {
			var err error
			if snapIndex, err = n.loadSnapshot(); err != nil {
				return nil, err
			}
		}
		replayed := 0
		w, err := openWAL(cfg.Dir, snapIndex, cfg.Logf, func(e Entry) error {
			cfg.SM.Apply(e, nil)
			n.last, n.lastTime, n.term = e.Index, e.Time, e.Term
			replayed++
			return nil
		})
		if err != nil {
			return nil, err
		}
		n.wal = w
		n.last = max(n.last, snapIndex)
		if replayed > 0 {
			cfg.Logf("consensus: replayed %d entries from the WAL, last index %d", replayed, n.last)
		}
	}
	n.durable = n.last
	n.commit.advance(n.last)
	n.applied.advance(n.last)
	n.done.Add(1)
	go n.runApplier()
	if !cfg.MemoryOnly && cfg.Fsync == FsyncEverySec {
		n.done.Add(1)
		go n.runSyncer()
	}
	return n, nil
}

// Propose appends data to the log. It returns the entry's index once the entry is
// committed. local is handed back to the state machine with the entry.
func (n *Node) Propose(data []byte, local any) (uint64, error) {
	n.stats.Proposals.Add(1)
	if err := n.waitBacklog(); err != nil {
		return 0, err
	}
	n.mu.Lock()
	if err := n.refusing(); err != nil {
		n.mu.Unlock()
		return 0, err
	}
	idx := n.appendLocked(data, local, n.stamp())
	err := n.flushUntil(idx)
	n.mu.Unlock()
	return idx, err
}

// ProposeMany appends one entry per element of data, in order and with one clock
// stamp, and returns once all of them are committed: one WAL write covers them. local
// is nil or as long as data; local[i] goes with data[i] as Propose's local does. An
// event loop that serves many connections proposes each connection's batch as its own
// entry this way, so that every entry has its own reply sink.
func (n *Node) ProposeMany(data [][]byte, local []any) error {
	if len(data) == 0 {
		return nil
	}
	n.stats.Proposals.Add(uint64(len(data)))
	if err := n.waitBacklog(); err != nil {
		return err
	}
	n.mu.Lock()
	if err := n.refusing(); err != nil {
		n.mu.Unlock()
		return err
	}
	now := n.stamp()
	var idx uint64
	for i, d := range data {
		var l any
		if local != nil {
			l = local[i]
		}
		idx = n.appendLocked(d, l, now)
	}
	err := n.flushUntil(idx)
	n.mu.Unlock()
	return err
}

// waitBacklog holds a proposer back while the committed-but-unapplied backlog is over
// its bound.
func (n *Node) waitBacklog() error {
	if n.pendingBytes.Load() > n.cfg.MaxPendingBytes {
		return n.applied.wait(context.Background(), n.commit.load(), n.stop)
	}
	return nil
}

// refusing is why the node takes no proposal, or nil. Called with mu held.
func (n *Node) refusing() error {
	if n.closed {
		return ErrClosed
	}
	return n.err
}

// stamp is the clock for the next entries: the log's clock never runs backwards.
// Called with mu held.
func (n *Node) stamp() int64 {
	return max(n.cfg.Now(), n.lastTime)
}

// appendLocked appends one entry to the log and the WAL buffer and returns its index.
// Called with mu held.
func (n *Node) appendLocked(data []byte, local any, now int64) uint64 {
	n.last++
	n.lastTime = now
	e := Entry{Index: n.last, Term: n.term, Time: now, Data: data}
	if n.wal != nil {
		n.walBuf = appendRecord(n.walBuf, &e)
	}
	n.unsynced = append(n.unsynced, pending{e, local})
	return e.Index
}

// flushUntil makes sure entries up to idx are written (group commit). Whoever finds no
// writer at work becomes the writer and writes everything buffered, again and again
// while more arrives; the others sleep until their index is covered. Called with mu held.
func (n *Node) flushUntil(idx uint64) error {
	for n.durable < idx {
		if n.err != nil {
			return n.err
		}
		if n.flushing {
			n.flushed.Wait()
			continue
		}
		n.flushing = true
		// Let the proposers that are ready to run append first, so that one write (and
		// one wake-up of the applier) covers them all: on one P they would otherwise
		// run only after this write, each to write alone.
		n.mu.Unlock()
		runtime.Gosched()
		n.mu.Lock()
		buf, batch, upto := n.walBuf, n.unsynced, n.last
		n.walBuf, n.unsynced = n.spare[:0], n.spareEnt[:0]
		n.mu.Unlock()
		err := n.writeWAL(buf, upto)
		n.mu.Lock()
		n.spare = buf[:0]
		n.flushing = false
		if err != nil {
			n.err = err
			n.cfg.Logf("consensus: WAL failed, refusing writes: %v", err)
		} else {
			n.durable = upto
			n.commitEntries(batch, upto) // the apply queue copies the batch
		}
		clear(batch) // hold no entry data for the GC's sake
		n.spareEnt = batch[:0]
		n.flushed.Broadcast()
	}
	return nil
}

func (n *Node) writeWAL(buf []byte, upto uint64) error {
	if n.wal == nil || len(buf) == 0 {
		return nil
	}
	if _, err := n.wal.write(buf, upto+1); err != nil {
		return err
	}
	n.stats.WALWrites.Add(1)
	n.stats.WALBytes.Add(uint64(len(buf)))
	if n.cfg.Fsync == FsyncAlways {
		n.stats.WALSyncs.Add(1)
		return n.wal.sync()
	}
	return nil
}

// commitEntries marks entries committed and queues them for the applier.
func (n *Node) commitEntries(batch []pending, upto uint64) {
	var size int64
	for i := range batch {
		size += int64(len(batch[i].e.Data))
	}
	n.pendingBytes.Add(size)
	n.commit.advance(upto)
	n.queue.push(batch...)
}

func (n *Node) runApplier() {
	defer n.done.Done()
	for {
		select {
		case <-n.queue.signal:
		case r := <-n.snap.req:
			// SAVE, BGSAVE: of everything committed, which may not be applied yet
			n.queue.drain(n.applyBatch)
			n.beginSnapshot(r)
		case <-n.stop:
			// drain what committed before Close: it is acknowledged and in the WAL
			n.queue.drain(n.applyBatch)
			return
		}
		n.queue.drain(n.applyBatch)
		n.maybeSnapshot()
	}
}

func (n *Node) applyBatch(batch []pending) {
	var size int64
	for i := range batch {
		n.ahead.before(batch, i)
		n.cfg.SM.Apply(batch[i].e, batch[i].local)
		size += int64(len(batch[i].e.Data))
	}
	n.pendingBytes.Add(-size)
	n.snapGrew(size, len(batch))
	n.stats.AppliedEnts.Add(uint64(len(batch)))
	n.applied.advance(batch[len(batch)-1].e.Index)
}

func (n *Node) runSyncer() {
	defer n.done.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var synced uint64
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		if d := n.commit.load(); d > synced {
			if err := n.wal.syncBehind(); err != nil {
				n.cfg.Logf("consensus: %v", err)
				continue
			}
			n.stats.WALSyncs.Add(1)
			synced = d
		}
	}
}

// ReadBarrier returns once a read may be served linearizably: this node leads, and every
// entry committed when the barrier was called has been applied (writes are acknowledged
// at commit, before they are applied, so a read must wait for them).
func (n *Node) ReadBarrier(ctx context.Context) error {
	c := n.commit.load()
	if n.applied.load() >= c {
		return nil
	}
	return n.applied.wait(ctx, c, n.stop)
}

// WaitApplied returns once index has been applied.
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	return n.applied.wait(ctx, index, n.stop)
}

// Status is a snapshot of the node's indexes for INFO.
type Status struct {
	Term, LastIndex, CommitIndex, AppliedIndex uint64
	Fsync                                      FsyncPolicy
	MemoryOnly                                 bool
	WALFailed                                  bool // a WAL write failed: the node refuses writes
}

// Status reports the node's indexes.
func (n *Node) Status() Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	return Status{Term: n.term, LastIndex: n.last, CommitIndex: n.commit.load(), AppliedIndex: n.applied.load(), Fsync: n.cfg.Fsync, MemoryOnly: n.cfg.MemoryOnly,
		WALFailed: n.err != nil}
}

// Stats exposes the pipeline counters.
func (n *Node) Stats() *Stats { return &n.stats }

// Close stops accepting proposals, applies what committed, and flushes and syncs the WAL.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	for n.flushing {
		n.flushed.Wait()
	}
	n.mu.Unlock()
	close(n.stop)
	n.done.Wait()
	if n.wal != nil {
		return n.wal.close()
	}
	return nil
}

// waiter is an index that only grows, with goroutines waiting for it to reach a value.
type waiter struct {
	v       atomic.Uint64
	mu      sync.Mutex
	waiting []indexWait
	n       atomic.Int32 // len(waiting), read without the lock on the fast path
}

type indexWait struct {
	index uint64
	ch    chan struct{}
}

func (w *waiter) load() uint64 { return w.v.Load() }

func (w *waiter) advance(v uint64) {
	w.v.Store(v)
	if w.n.Load() == 0 {
		return
	}
	w.mu.Lock()
	kept := w.waiting[:0]
	for _, x := range w.waiting {
		if x.index <= v {
			close(x.ch)
		} else {
			kept = append(kept, x)
		}
	}
	w.waiting = kept
	w.n.Store(int32(len(kept)))
	w.mu.Unlock()
}

func (w *waiter) wait(ctx context.Context, index uint64, stop <-chan struct{}) error {
	if w.v.Load() >= index {
		return nil
	}
	w.mu.Lock()
	if w.v.Load() >= index {
		w.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	w.waiting = append(w.waiting, indexWait{index, ch})
	w.n.Store(int32(len(w.waiting)))
	// advance stores v before it loads n; we store n before this second look at v. So
	// either advance sees our entry, or we see its value: no wake-up is lost.
	if w.v.Load() >= index {
		w.waiting = w.waiting[:len(w.waiting)-1]
		w.n.Store(int32(len(w.waiting)))
		w.mu.Unlock()
		return nil
	}
	w.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
		return ErrClosed
	}
}
