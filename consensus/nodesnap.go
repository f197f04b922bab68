package consensus

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// Snapshots of the single-member pipeline. Without them its WAL grew for ever, and a
// restart replayed every write the node had ever taken. Now the applier writes the state
// machine's state at its applied index once the WAL has gained enough since the last
// snapshot, as Redis rewrites its append-only file: at least SnapshotLogBytes, and at
// least as much as the last snapshot's size (auto-aof-rewrite-percentage 100), so that
// the snapshots' cost per write stays bounded however large the data set grows. The
// snapshot is written beside the applier (kvstore's copy-on-write capture), then the WAL
// segments it covers are removed. A restart loads the newest snapshot and replays the
// WAL after it. SAVE and BGSAVE ask for one at once.
//
// A snapshot file and a WAL segment are each whole or absent after a crash: the file is
// written as .tmp, fsynced and renamed (raftsnap.go), and segments go only once it is.

// ErrSnapshotRunning refuses a snapshot asked for while one is being written.
var ErrSnapshotRunning = errors.New("consensus: a snapshot is being written")

// ErrNoSnapshots refuses a snapshot where there is nowhere to keep one.
var ErrNoSnapshots = errors.New("consensus: this node keeps no snapshots (no data directory)")

// nodeSnap is the single-member pipeline's snapshot state.
type nodeSnap struct {
	sm  Snapshotter // nil: no snapshots
	req chan snapRequest

	// the applier's: entry data applied since the last snapshot began, and how much
	// makes the next one due (-1: none is, until asked)
	grown, dueAt int64

	writing atomic.Bool
	index   atomic.Uint64 // the newest snapshot's index; 0: none
	size    atomic.Int64  // its size in bytes
	// what INFO persistence and LASTSAVE report
	lastUnix  atomic.Int64 // when the last snapshot was written (at open: when the node opened)
	lastOK    atomic.Bool  // the last attempt succeeded (rdb_last_bgsave_status)
	lastTook  atomic.Int64 // how long it took, ms
	started   atomic.Int64 // unix ms the one being written began
	count     atomic.Uint64
	sinceSnap atomic.Uint64 // entries applied since the last snapshot began
}

type snapRequest struct {
	done chan error // nil: nobody waits (BGSAVE)
}

// SnapshotInfo is what INFO persistence tells of a node's snapshots.
type SnapshotInfo struct {
	Enabled        bool
	Writing        bool
	Index          uint64
	Bytes          int64
	LastUnix       int64 // unix s
	LastOK         bool
	LastTookMs     int64
	CurrentMs      int64 // how long the one being written has run; -1: none
	Count          uint64
	ChangesSinceIt uint64
}

// SnapshotInfo reports the node's snapshots.
func (n *Node) SnapshotInfo() SnapshotInfo {
	s := &n.snap
	cur := int64(-1)
	if s.writing.Load() {
		cur = time.Now().UnixMilli() - s.started.Load()
	}
	return SnapshotInfo{Enabled: s.sm != nil, Writing: s.writing.Load(), Index: s.index.Load(), Bytes: s.size.Load(),
		LastUnix: s.lastUnix.Load(), LastOK: s.lastOK.Load(), LastTookMs: s.lastTook.Load(), CurrentMs: cur,
		Count: s.count.Load(), ChangesSinceIt: s.sinceSnap.Load()}
}

// Snapshot writes a snapshot of everything committed so far. With wait it returns once
// the snapshot is on disk and the WAL it covers removed; otherwise once it has begun.
func (n *Node) Snapshot(wait bool) error {
	if n.snap.sm == nil {
		return ErrNoSnapshots
	}
	if n.snap.writing.Load() {
		return ErrSnapshotRunning
	}
	r := snapRequest{done: make(chan error, 1)}
	select {
	case n.snap.req <- r:
	case <-n.stop:
		return ErrClosed
	}
	if !wait {
		return nil
	}
	select {
	case err := <-r.done:
		return err
	case <-n.stop:
		return ErrClosed
	}
}

// initSnapshots readies snapshots for a node whose state machine can write them.
func (n *Node) initSnapshots() {
	// Before any save, Redis's LASTSAVE and rdb_last_save_time are when the server
	// started, also for a server that never saves.
	n.snap.lastUnix.Store(time.Now().Unix())
	if n.cfg.MemoryOnly {
		return
	}
	if sm, ok := n.cfg.SM.(Snapshotter); ok {
		n.snap.sm = sm
	}
	if n.cfg.SnapshotLogBytes == 0 {
		n.cfg.SnapshotLogBytes = 256 << 20
	}
	n.snap.req = make(chan snapRequest)
	n.snap.lastOK.Store(true)
	n.snap.lastTook.Store(-1)
	n.snap.dueAt = -1 // drawn by the applier, once a snapshot loaded tells its size
}

// nextSnapAt is how much entry data the WAL may gain before the next snapshot.
func (n *Node) nextSnapAt() int64 {
	b := n.cfg.SnapshotLogBytes
	if b < 0 {
		return -1 // only when asked
	}
	return max(b-b/8+rand.Int64N(b/4+1), n.snap.size.Load())
}

// snapGrew counts what the applier applied toward the next snapshot.
func (n *Node) snapGrew(bytes int64, entries int) {
	n.snap.grown += bytes
	n.snap.sinceSnap.Add(uint64(entries))
}

// maybeSnapshot begins a snapshot on the applier once the WAL has grown enough.
func (n *Node) maybeSnapshot() {
	s := &n.snap
	if s.sm == nil || s.writing.Load() {
		return
	}
	if s.dueAt < 0 {
		s.dueAt = n.nextSnapAt() // the last one's size is known now
	}
	if s.dueAt < 0 || s.grown < s.dueAt {
		return
	}
	n.beginSnapshot(snapRequest{})
}

// beginSnapshot captures the state machine at the applier's applied index and writes it
// on a goroutine of its own; r.done hears how it went. Called by the applier, between
// batches.
func (n *Node) beginSnapshot(r snapRequest) {
	s := &n.snap
	answer := func(err error) {
		if r.done != nil {
			r.done <- err
		}
	}
	if s.writing.Load() {
		answer(ErrSnapshotRunning)
		return
	}
	index := n.applied.load()
	if index == 0 || index == s.index.Load() {
		// Nothing applied since the newest snapshot: it is the state. A save all the
		// same, as Redis counts it (rdb_saves, LASTSAVE); only a request comes here
		// (maybeSnapshot waits for applied data).
		s.lastUnix.Store(time.Now().Unix())
		s.count.Add(1)
		answer(nil)
		return
	}
	start := time.Now()
	var write func(io.Writer) error
	if async, ok := s.sm.(AsyncSnapshotter); ok {
		w, err := async.BeginSnapshot()
		if err != nil {
			s.lastOK.Store(false)
			answer(fmt.Errorf("snapshot %d: %w", index, err))
			return
		}
		write = w
	} else {
		// a state machine that cannot capture its state at once is written out here,
		// between two batches, and the file written from the copy
		var buf bytes.Buffer
		if err := s.sm.Snapshot(&buf); err != nil {
			s.lastOK.Store(false)
			answer(fmt.Errorf("snapshot %d: %w", index, err))
			return
		}
		write = func(w io.Writer) error { _, err := buf.WriteTo(w); return err }
	}
	s.writing.Store(true)
	s.started.Store(start.UnixMilli())
	s.grown, s.dueAt = 0, -1 // drawn again once this one's size is known
	s.sinceSnap.Store(0)
	n.done.Add(1)
	go func() {
		defer n.done.Done()
		size, err := writeSnapshotFile(n.cfg.Dir, index, write)
		if err == nil {
			err = n.wal.dropCovered(index)
		}
		if err == nil {
			removeOldSnapshots(n.cfg.Dir, index, false)
			s.index.Store(index)
			s.size.Store(size)
			s.lastUnix.Store(time.Now().Unix())
			s.count.Add(1)
			n.cfg.Logf("consensus: wrote a snapshot at index %d (%d bytes in %v)", index, size, time.Since(start).Round(time.Millisecond))
		} else {
			n.cfg.Logf("consensus: %v", err)
		}
		s.lastOK.Store(err == nil)
		s.lastTook.Store(time.Since(start).Milliseconds())
		s.writing.Store(false)
		answer(err)
	}()
}

// OpenSnapshot opens the node's newest snapshot file (written by Snapshot), and
// returns its index; ErrNoSnapshots when it has none.
func (n *Node) OpenSnapshot() (*os.File, uint64, error) {
	if n.snap.sm == nil {
		return nil, 0, ErrNoSnapshots
	}
	return openLatestSnapshot(n.cfg.Dir)
}

// latestSnapshot returns the index of the newest snapshot file in dir (0: none).
func latestSnapshot(dir string) (uint64, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var newest uint64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, "snap-") || !strings.HasSuffix(name, ".snap") {
			continue
		}
		var index uint64
		if _, err := fmt.Sscanf(name, "snap-%016x.snap", &index); err == nil && name == filepath.Base(snapshotPath(dir, index)) {
			newest = max(newest, index)
		}
	}
	return newest, nil
}

// dropCovered removes the WAL segments whose every entry is at or below index: those a
// segment numbered at most index+1 follows. The segment being appended to is the last
// and always stays.
func (w *wal) dropCovered(index uint64) error {
	names, err := listPrefixed(w.dir, w.prefix)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	removed := false
	for i := 0; i+1 < len(names); i++ {
		var next uint64
		if _, err := fmt.Sscanf(strings.TrimPrefix(names[i+1], w.prefix+"-"), "%x", &next); err != nil || next > index+1 {
			break
		}
		if err := os.Remove(filepath.Join(w.dir, names[i])); err != nil {
			return fmt.Errorf("wal: %w", err)
		}
		removed = true
	}
	if removed {
		return syncDir(w.dir)
	}
	return nil
}

// loadSnapshot restores the state machine from the newest snapshot in the data
// directory, if there is one, and returns its index.
func (n *Node) loadSnapshot() (uint64, error) {
	index, err := latestSnapshot(n.cfg.Dir)
	if err != nil || index == 0 {
		return 0, err
	}
	start := time.Now()
	if err := loadSnapshotFile(n.cfg.Dir, index, n.snap.sm); err != nil {
		return 0, err
	}
	removeOldSnapshots(n.cfg.Dir, index, true) // and what a crash left half written
	if fi, err := os.Stat(snapshotPath(n.cfg.Dir, index)); err == nil {
		n.snap.size.Store(fi.Size())
		n.snap.lastUnix.Store(fi.ModTime().Unix())
	}
	n.snap.index.Store(index)
	n.cfg.Logf("consensus: loaded the snapshot at index %d in %v", index, time.Since(start).Round(time.Millisecond))
	return index, nil
}
