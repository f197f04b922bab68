package consensus

import (
	"context"
	"encoding/gob"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// listSM is a state machine that keeps every entry's data, and snapshots it.
type listSM struct {
	mu   sync.Mutex
	data []string
}

func (s *listSM) Apply(e Entry, _ any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data = append(s.data, string(e.Data))
}

func (s *listSM) Snapshot(w io.Writer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return gob.NewEncoder(w).Encode(s.data)
}

func (s *listSM) Restore(r io.Reader) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data = nil
	return gob.NewDecoder(r).Decode(&s.data)
}

func (s *listSM) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.data...)
}

// smallSegments makes WAL segments of 4 KiB for the test.
func smallSegments(t *testing.T) {
	old := segmentSize
	segmentSize = 4 << 10
	t.Cleanup(func() { segmentSize = old })
}

func walBytes(t *testing.T, dir string) (n int64) {
	for _, p := range walFiles(t, dir) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

func proposeN(t *testing.T, n *Node, from, count int) {
	t.Helper()
	for i := from; i < from+count; i++ {
		if _, err := n.Propose([]byte(fmt.Sprintf("entry-%05d-%s", i, strings.Repeat("x", 40))), nil); err != nil {
			t.Fatal(err)
		}
	}
}

func checkList(t *testing.T, got []string, count int) {
	t.Helper()
	if len(got) != count {
		t.Fatalf("%d entries in the state, want %d", len(got), count)
	}
	for i, d := range got {
		if !strings.HasPrefix(d, fmt.Sprintf("entry-%05d-", i)) {
			t.Fatalf("entry %d is %q", i, d)
		}
	}
}

// The WAL gains enough, the applier writes a snapshot by itself, and the segments it
// covers go: the data directory stays about the size of the state. A restart loads the
// snapshot and replays the WAL after it, and the log goes on where it was.
func TestNodeSnapshotsBoundTheWAL(t *testing.T) {
	smallSegments(t)
	dir := t.TempDir()
	n, err := Open(Config{Dir: dir, SM: &listSM{}, Logf: t.Logf, SnapshotLogBytes: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	const total = 3000 // about 200 KiB of entries
	proposeN(t, n, 0, total)
	deadline := time.Now().Add(10 * time.Second)
	for n.SnapshotInfo().Count < 3 || n.SnapshotInfo().Writing {
		if time.Now().After(deadline) {
			t.Fatalf("snapshots: %+v", n.SnapshotInfo())
		}
		time.Sleep(time.Millisecond)
	}
	info := n.SnapshotInfo()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	// The WAL holds what came after the newest snapshot, and at most the segment it
	// ends in and the one being written besides (a record is under 80 bytes here).
	// Where the newest snapshot falls depends on timing (each waits for the WAL to gain
	// the last one's size, and for the one before to be written), not the bound.
	if wb, most := walBytes(t, dir), int64(total-int(info.Index))*80+2*segmentSize; wb > most {
		t.Fatalf("the WAL holds %d bytes after %d snapshots (the newest at %d of %d entries), over %d", wb, info.Count, info.Index, total, most)
	}
	if snaps, _ := filepath.Glob(filepath.Join(dir, "snap-*")); len(snaps) != 1 {
		t.Fatalf("snapshot files: %v, want the newest only", snaps)
	}
	sm := &listSM{}
	n, err = Open(Config{Dir: dir, SM: sm, Logf: t.Logf, SnapshotLogBytes: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	checkList(t, sm.all(), total)
	if idx, err := n.Propose([]byte(fmt.Sprintf("entry-%05d-", total)), nil); err != nil || idx != total+1 {
		t.Fatalf("after restart: index %d, %v; want %d", idx, err, total+1)
	}
}

// Snapshot(true) (SAVE) covers every committed entry; a restart replays nothing before
// it. A snapshot asked for while one is written is refused.
func TestNodeSnapshotOnRequest(t *testing.T) {
	smallSegments(t)
	dir := t.TempDir()
	sm := &listSM{}
	n, err := Open(Config{Dir: dir, SM: sm, Logf: t.Logf, SnapshotLogBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	proposeN(t, n, 0, 500)
	if err := n.ReadBarrier(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := n.SnapshotInfo(); got.Count != 0 || got.ChangesSinceIt != 500 {
		t.Fatalf("before SAVE, with automatic snapshots off: %+v", got)
	}
	if err := n.Snapshot(true); err != nil {
		t.Fatal(err)
	}
	if got := n.SnapshotInfo(); got.Index != 500 || got.Count != 1 || !got.LastOK || got.ChangesSinceIt != 0 {
		t.Fatalf("after SAVE: %+v", got)
	}
	if len(walFiles(t, dir)) != 1 {
		t.Fatalf("WAL segments after SAVE: %v", walFiles(t, dir))
	}
	proposeN(t, n, 500, 10)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	sm = &listSM{}
	n, err = Open(Config{Dir: dir, SM: sm, Logf: t.Logf, SnapshotLogBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	checkList(t, sm.all(), 510)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	// Without the snapshot the WAL starts after a gap: refused, not served short.
	os.Remove(snapshotPath(dir, 500))
	if _, err := Open(Config{Dir: dir, SM: &listSM{}, Logf: t.Logf}); err == nil || !strings.Contains(err.Error(), "gap") {
		t.Fatalf("open without the snapshot the WAL needs: %v", err)
	}
}

// A memory-only node keeps no snapshots, and says so.
func TestNodeSnapshotMemoryOnly(t *testing.T) {
	n, err := Open(Config{MemoryOnly: true, SM: &listSM{}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Snapshot(true); err != ErrNoSnapshots {
		t.Fatalf("Snapshot on a memory-only node: %v", err)
	}
}
