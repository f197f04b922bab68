package consensus

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/nanokv/nanokv/consensus/raft"
)

// Snapshotter is a state machine that can write its whole state and load it back. A
// RaftNode whose state machine is one compacts its log: once the log has grown by
// SnapshotLogBytes since the last snapshot, the applier writes a snapshot at its applied
// index, and the WAL is rewritten to start there.
type Snapshotter interface {
	Snapshot(w io.Writer) error
	Restore(r io.Reader) error
}

// AsyncSnapshotter is a Snapshotter that can capture its state at once, on the applier,
// and write it afterwards while applying goes on (kvstore's copy-on-write snapshots).
// The write that BeginSnapshot returns is called exactly once, even when there is
// nowhere to write: it is what ends the snapshot (until then kvstore refuses another,
// and keeps saving what the applier changes for this one).
type AsyncSnapshotter interface {
	Snapshotter
	BeginSnapshot() (write func(io.Writer) error, err error)
}

// Snapshot files are snap-<index, 16 hex digits>.snap, written as .tmp, fsynced and
// renamed, so a crash leaves either the old snapshot or the new one, never half of one.
func snapshotPath(dir string, index uint64) string {
	return filepath.Join(dir, fmt.Sprintf("snap-%016x.snap", index))
}

// writeSnapshotFile writes a state machine's state (write) to the snapshot file for
// index.
func writeSnapshotFile(dir string, index uint64, write func(io.Writer) error) (int64, error) {
	final := snapshotPath(dir, index)
	tmp := final + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		write(failedWriter{err}) // it fails at once, and ends the snapshot it began
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	size, _ := f.Seek(0, io.SeekCurrent)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("snapshot %d: %w", index, err)
	}
	return size, nil
}

// openLatestSnapshot opens the newest snapshot file in dir, for a reader outside the
// member (SYNC). The member may write a newer one meanwhile and remove this one; once
// open, the file stays readable, and a file removed between the listing and the open
// is looked for again.
func openLatestSnapshot(dir string) (*os.File, uint64, error) {
	for tries := 0; ; tries++ {
		index, err := latestSnapshot(dir)
		if err != nil {
			return nil, 0, err
		}
		if index == 0 {
			return nil, 0, ErrNoSnapshots
		}
		f, err := os.Open(snapshotPath(dir, index))
		if errors.Is(err, os.ErrNotExist) && tries < 10 {
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("snapshot %d: %w", index, err)
		}
		return f, index, nil
	}
}

// failedWriter fails every write with err.
type failedWriter struct{ err error }

func (w failedWriter) Write([]byte) (int, error) { return 0, w.err }

// loadSnapshotFile restores sm from the snapshot file for index.
func loadSnapshotFile(dir string, index uint64, sm Snapshotter) error {
	f, err := os.Open(snapshotPath(dir, index))
	if err != nil {
		return fmt.Errorf("snapshot %d: %w", index, err)
	}
	defer f.Close()
	if err := sm.Restore(f); err != nil {
		return fmt.Errorf("snapshot %d: %w", index, err)
	}
	return nil
}

// removeOldSnapshots deletes the snapshot files older than keep's. A running member
// removes only finished snapshots (.snap) below keep: a .tmp may be the snapshot its
// applier is writing, and a .recv one the leader is sending, or has sent and the Raft
// loop is about to install; deleting that one made the install fail and stopped the
// member. A newer .snap is spared too: the removal runs after the compaction that asked
// for it (cleanUp), when a later one may have finished. With leftovers (at start, when
// nothing is in flight) every file but keep's goes, the .tmp and .recv files a crash left
// and a snapshot written but never recorded in the WAL.
func removeOldSnapshots(dir string, keep uint64, leftovers bool) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	want := filepath.Base(snapshotPath(dir, keep))
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, "snap-") || name == want {
			continue
		}
		var index uint64
		older := strings.HasSuffix(name, ".snap") && len(name) == len(want)
		if older {
			_, err := fmt.Sscanf(name, "snap-%016x.snap", &index)
			older = err == nil && index < keep
		}
		if leftovers || older {
			os.Remove(filepath.Join(dir, name))
		}
	}
}

// compact records a snapshot in the WAL and returns the segments it makes useless. It
// starts a new segment holding the snapshot record and the hard state and syncs it; the
// older segments holding no entry after keepAfter (the snapshot's index, or below it
// for the entries the core keeps and may read back) can go then, and the caller
// removes them (RaftNode.cleanUp). Entries after the snapshot stay where they are, so
// the member's loop never rewrites its log (that would hold heartbeats back under load).
// With dropAll (a snapshot received from the leader, which replaces the whole log) every
// older segment goes. A crash at any point replays to the same state: old segments
// first, then the snapshot record, which drops what it covers.
func (s *raftStorage) compact(meta raft.SnapshotMeta, hs raft.HardState, keepAfter uint64, dropAll bool) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, err := listPrefixed(s.w.dir, s.w.prefix)
	if err != nil {
		return nil, err
	}
	if err := s.w.rotate(s.w.seq + 1); err != nil {
		return nil, err
	}
	rd := raft.Ready{Snapshot: &meta, HardState: hs, HardStateChanged: true}
	b, _ := s.encode(&rd)
	if _, err := s.w.write(b, 0); err != nil {
		return nil, err
	}
	s.saved = hs
	if err := s.w.sync(); err != nil {
		return nil, err
	}
	var useless []string
	for _, name := range old {
		var seq uint64
		fmt.Sscanf(strings.TrimPrefix(name, s.w.prefix+"-"), "%x", &seq)
		if seq == s.w.seq || (!dropAll && s.last[seq] > keepAfter) {
			continue
		}
		useless = append(useless, filepath.Join(s.w.dir, name))
		delete(s.last, seq)
	}
	// The locs of deleted segments go; with dropAll, every loc: the log starts again
	// after the snapshot.
	kept := s.locs[:0]
	for _, l := range s.locs {
		if _, ok := s.last[l.seq]; ok && !dropAll {
			kept = append(kept, l)
		}
	}
	s.locs = kept
	if dropAll {
		s.written, s.sinceLoc = 0, 0
	}
	return useless, nil
}
