package consensus

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nanokv/nanokv/consensus/raft"
	"github.com/nanokv/nanokv/kvstore"
)

func ents(term uint64, from, to uint64) []raft.Entry {
	var out []raft.Entry
	for i := from; i <= to; i++ {
		out = append(out, raft.Entry{Index: i, Term: term, Data: []byte{byte(i), byte(term)}})
	}
	return out
}

func TestRaftStorageReplaysTruncationsAndHardState(t *testing.T) {
	dir := t.TempDir()
	s, st, err := openRaftStorage(dir, FsyncAlways, t.Logf)
	if err != nil || len(st.Entries) != 0 {
		t.Fatalf("fresh: %v %+v", err, st)
	}
	steps := []raft.Ready{
		{Entries: ents(1, 1, 5), HardState: raft.HardState{Term: 1, Vote: 2, Commit: 2}, HardStateChanged: true},
		// A new leader replaced the uncommitted tail from 3 on.
		{Entries: ents(2, 3, 4), HardState: raft.HardState{Term: 2, Vote: 3, Commit: 4}, HardStateChanged: true},
	}
	for i := range steps {
		if err := s.save(&steps[i]); err != nil {
			t.Fatal(err)
		}
	}
	s.close()
	_, st, err = openRaftStorage(dir, FsyncAlways, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	want := append(ents(1, 1, 2), ents(2, 3, 4)...)
	if len(st.Entries) != len(want) {
		t.Fatalf("replayed %d entries, want %d", len(st.Entries), len(want))
	}
	for i, e := range st.Entries {
		if e.Index != want[i].Index || e.Term != want[i].Term || string(e.Data) != string(want[i].Data) {
			t.Fatalf("entry %d: %+v, want %+v", i, e, want[i])
		}
	}
	if st.HardState != (raft.HardState{Term: 2, Vote: 3, Commit: 4}) {
		t.Fatalf("hard state %+v", st.HardState)
	}
}

// A crash in the middle of a write leaves a torn record at the end: it is dropped, and
// everything before it survives.
func TestRaftStorageTornTail(t *testing.T) {
	dir := t.TempDir()
	s, _, err := openRaftStorage(dir, FsyncNo, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	rd := raft.Ready{Entries: ents(1, 1, 3)}
	if err := s.save(&rd); err != nil {
		t.Fatal(err)
	}
	s.close()
	seg := filepath.Join(dir, segmentName("raft", 1))
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(seg, b[:len(b)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	_, st, err := openRaftStorage(dir, FsyncNo, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Entries) != 2 {
		t.Fatalf("replayed %d entries after a torn third", len(st.Entries))
	}
}

func TestRaftStorageRefusesGaps(t *testing.T) {
	dir := t.TempDir()
	s, _, err := openRaftStorage(dir, FsyncNo, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []raft.Ready{{Entries: ents(1, 1, 2)}, {Entries: ents(1, 5, 5)}, {Entries: ents(1, 6, 6)}} {
		if err := s.save(&r); err != nil {
			t.Fatal(err)
		}
	}
	s.close()
	if _, _, err := openRaftStorage(dir, FsyncNo, t.Logf); err == nil {
		t.Fatal("a log with a gap in the middle opened")
	}
}

// A hard state that only advances the commit index is not written on its own: it rides
// with the next entries. A new term or vote is written at once, and a Ready that carries
// no hard state never overwrites the saved one.
func TestCommitAloneWaitsForTheNextWrite(t *testing.T) {
	dir := t.TempDir()
	s, _, err := openRaftStorage(dir, FsyncNo, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		fi, err := os.Stat(filepath.Join(dir, segmentName("raft", 1)))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	save := func(rd raft.Ready) {
		t.Helper()
		if err := s.save(&rd); err != nil {
			t.Fatal(err)
		}
	}
	save(raft.Ready{Entries: ents(1, 1, 3), HardState: raft.HardState{Term: 1, Vote: 1, Commit: 1}, HardStateChanged: true})
	before := size()
	save(raft.Ready{HardState: raft.HardState{Term: 1, Vote: 1, Commit: 3}, HardStateChanged: true})
	if size() != before {
		t.Fatal("a commit-only hard state was written on its own")
	}
	save(raft.Ready{Entries: ents(1, 4, 4), HardState: raft.HardState{Term: 1, Vote: 1, Commit: 3}})
	save(raft.Ready{Entries: ents(1, 5, 5)}) // no hard state: the saved one stands
	s.close()
	s, st, err := openRaftStorage(dir, FsyncNo, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if want := (raft.HardState{Term: 1, Vote: 1, Commit: 3}); st.HardState != want || len(st.Entries) != 5 {
		t.Fatalf("replayed %+v and %d entries, want %+v and 5", st.HardState, len(st.Entries), want)
	}
	grown := size()
	save(raft.Ready{HardState: raft.HardState{Term: 2, Vote: 3, Commit: 3}, HardStateChanged: true})
	if size() == grown {
		t.Fatal("a new term and vote were not written")
	}
	s.close()
	_, st, err = openRaftStorage(dir, FsyncNo, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if want := (raft.HardState{Term: 2, Vote: 3, Commit: 3}); st.HardState != want || len(st.Entries) != 5 {
		t.Fatalf("replayed %+v and %d entries, want %+v and 5", st.HardState, len(st.Entries), want)
	}
}

func FuzzReadRaftWAL(f *testing.F) {
	dir := f.TempDir()
	s, _, err := openRaftStorage(dir, FsyncNo, f.Logf)
	if err != nil {
		f.Fatal(err)
	}
	rd := raft.Ready{Entries: ents(1, 1, 3), HardState: raft.HardState{Term: 1, Commit: 2}, HardStateChanged: true}
	if err := s.save(&rd); err != nil {
		f.Fatal(err)
	}
	s.close()
	seed, _ := os.ReadFile(filepath.Join(dir, segmentName("raft", 1)))
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, segmentName("raft", 1)), b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, st, err := openRaftStorage(dir, FsyncNo, func(string, ...any) {})
		if err != nil {
			return
		}
		defer s.close()
		for i := 1; i < len(st.Entries); i++ {
			if st.Entries[i].Index != st.Entries[i-1].Index+1 {
				t.Fatalf("replayed entries out of order: %d after %d", st.Entries[i].Index, st.Entries[i-1].Index)
			}
		}
		if n := len(st.Entries); st.HardState.Commit > 0 && (n == 0 || st.HardState.Commit > st.Entries[n-1].Index) {
			t.Fatalf("commit %d beyond the log", st.HardState.Commit)
		}
	})
}

// Compaction keeps segments that still hold entries after the snapshot and hands back
// the rest for removal; after two compactions the oldest kept segment starts with a gap
// that the newer snapshot covers, and replay must skip it. Replay is the same whether
// the useless segments were removed or not (a crash before the member's cleanUp).
func TestRaftStorageReplaysAcrossCompactions(t *testing.T) {
	dir := t.TempDir()
	s, _, err := openRaftStorage(dir, FsyncNo, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	hs := raft.HardState{Term: 1, Commit: 1}
	save := func(from, to uint64) {
		hs.Commit = to
		rd := raft.Ready{Entries: ents(1, from, to), HardState: hs, HardStateChanged: true}
		if err := s.save(&rd); err != nil {
			t.Fatal(err)
		}
	}
	var useless []string
	compact := func(index uint64) {
		u, err := s.compact(raft.SnapshotMeta{Index: index, Term: 1}, hs, index, false)
		if err != nil {
			t.Fatal(err)
		}
		useless = append(useless, u...)
	}
	save(1, 10)
	compact(5) // segment 1 still holds 6–10
	if len(useless) != 0 {
		t.Fatalf("useless after a snapshot at 5: %v", useless)
	}
	save(11, 20)
	compact(15) // segment 1 is covered; segment 2 still holds 16–20
	save(21, 22)
	s.close()
	if want := filepath.Join(dir, segmentName("raft", 1)); len(useless) != 1 || useless[0] != want {
		t.Fatalf("useless after a snapshot at 15: %v, want [%s]", useless, want)
	}
	check := func(when string) {
		t.Helper()
		_, st, err := openRaftStorage(dir, FsyncNo, t.Logf)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if st.Snapshot == nil || st.Snapshot.Index != 15 {
			t.Fatalf("%s: snapshot %+v", when, st.Snapshot)
		}
		if len(st.Entries) != 7 || st.Entries[0].Index != 16 || st.Entries[6].Index != 22 {
			t.Fatalf("%s: entries after the snapshot: %d from %d", when, len(st.Entries), st.Entries[0].Index)
		}
		if st.HardState.Commit != 22 {
			t.Fatalf("%s: hard state %+v", when, st.HardState)
		}
	}
	check("useless segment still there")
	for _, path := range useless {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	if segs, _ := filepath.Glob(filepath.Join(dir, "raft-*.log")); len(segs) != 2 {
		t.Fatalf("segments after two compactions: %v", segs)
	}
	check("useless segment removed")
}

// A running member that finishes its own snapshot must not delete a snapshot the leader
// is sending, or has sent and the Raft loop is about to install: that install then
// failed with "no such file or directory" and stopped the member (seen as a flaky
// TestClusterCatchUpBySnapshot). Only at start, with nothing in flight, do leftovers go.
func TestRemoveOldSnapshotsSparesThoseInFlight(t *testing.T) {
	dir := t.TempDir()
	files := map[string]bool{ // name: kept while running
		filepath.Base(snapshotPath(dir, 10)):                  false, // older snapshot
		filepath.Base(snapshotPath(dir, 20)):                  true,  // the one kept
		filepath.Base(snapshotPath(dir, 25)):                  true,  // newer, finished after the compaction for 20
		filepath.Base(snapshotPath(dir, 30)) + ".tmp":         true,  // the applier writing one
		filepath.Base(receivedSnapshotPath(dir, 40)):          true,  // received, not installed yet
		filepath.Base(receivedSnapshotPath(dir, 50)) + ".tmp": true,  // being received
		"wal-0000000000000001":                                true,  // not a snapshot
	}
	for name := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	removeOldSnapshots(dir, 20, false)
	for name, kept := range files {
		if exists(name) != kept {
			t.Errorf("running member: %s exists %v, want %v", name, exists(name), kept)
		}
	}
	removeOldSnapshots(dir, 20, true)
	for name := range files {
		want := name == filepath.Base(snapshotPath(dir, 20)) || name == "wal-0000000000000001"
		if exists(name) != want {
			t.Errorf("at start: %s exists %v, want %v", name, exists(name), want)
		}
	}
}

// FsyncEverySec's periodic fsync runs beside the Raft loop's writes. It takes no lock:
// while the syncer held the storage's lock, the loop waited out fsyncs of a second's
// writes (15–28 ms on every member under redis-benchmark -P 16). A segment that a
// compaction rotates away meanwhile is no error. Under -race (as CI runs this package)
// the test also finds any state the two goroutines share without synchronisation.
func TestRaftStorageSyncBehindRunsBesideTheLoop(t *testing.T) {
	dir := t.TempDir()
	s, _, err := openRaftStorage(dir, FsyncEverySec, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock() // as the loop holds it while it writes
	done := make(chan error, 1)
	go func() { done <- s.syncBehind() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("syncBehind waits for the storage's lock")
	}
	s.mu.Unlock()

	stop := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if err := s.syncBehind(); err != nil {
				done <- err
				return
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	hs := raft.HardState{Term: 1}
	for from := uint64(1); from <= 200; from += 10 {
		hs.Commit = from + 9
		if err := s.save(&raft.Ready{Entries: ents(1, from, from+9), HardState: hs, HardStateChanged: true}); err != nil {
			t.Fatal(err)
		}
		if from%50 == 1 { // a compaction starts a segment and closes the current one
			if _, err := s.compact(raft.SnapshotMeta{Index: from, Term: 1}, hs, from, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("syncBehind beside writes and rotations: %v", err)
	}
	s.close()
	_, st, err := openRaftStorage(dir, FsyncEverySec, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if st.Snapshot == nil || st.Snapshot.Index != 151 || len(st.Entries) != 49 || st.Entries[48].Index != 200 {
		t.Fatalf("replayed snapshot %+v and %d entries", st.Snapshot, len(st.Entries))
	}
}

// A snapshot file that cannot be created still ends the snapshot the state machine began:
// kvstore refuses a second snapshot until the first one's write has run, so a member
// whose disk refused one file would otherwise never snapshot again (and its key tables
// would go on saving pages for the snapshot that never ended).
func TestWriteSnapshotFileEndsTheSnapshotWhenItCannotCreateTheFile(t *testing.T) {
	dir := t.TempDir()
	s := kvstore.New()
	if err := s.Apply(kvstore.Entry{Index: 1, Time: 1, Data: kvstore.AppendCommand(nil, 0, [][]byte{[]byte("SET"), []byte("k"), []byte("v")})}, nil); err != nil {
		t.Fatal(err)
	}
	// The temporary file's name is taken by a directory: os.Create fails, root or not.
	if err := os.Mkdir(snapshotPath(dir, 1)+".tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	write, err := s.BeginSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writeSnapshotFile(dir, 1, write); err == nil {
		t.Fatal("writeSnapshotFile succeeded over a directory")
	}
	write, err = s.BeginSnapshot()
	if err != nil {
		t.Fatalf("the failed snapshot was never ended: %v", err)
	}
	if _, err := writeSnapshotFile(dir, 2, write); err != nil {
		t.Fatal(err)
	}
	h := kvstore.New()
	if err := loadSnapshotFile(dir, 2, h); err != nil {
		t.Fatal(err)
	}
	if h.Digest() != s.Digest() {
		t.Fatal("the snapshot written after the failed one does not restore the store")
	}
}

// ReadEntries against a model of the log: batches appended, tails replaced by a later
// term, compactions (deleting the segments they make useless), reopens (which rebuild
// the locations from the segments), across many segments and past locSpacing within
// one. Every read of entries after the last compaction's kept point returns the model's
// entries, from the one asked for, within the bounds asked for.
func TestRaftStorageReadsEntriesBack(t *testing.T) {
	old := segmentSize
	segmentSize = 1 << 20
	t.Cleanup(func() { segmentSize = old })
	dir := t.TempDir()
	s, _, err := openRaftStorage(dir, FsyncNo, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.close() }()
	rng := rand.New(rand.NewPCG(1, 2))
	data := func(index, term uint64, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(index*7 + term*13 + uint64(i))
		}
		return b
	}
	model := map[uint64]raft.Entry{}      // the log: index → entry
	var last, term, kept uint64 = 0, 1, 0 // kept: entries after it are readable
	hs := raft.HardState{Term: 1}
	reads, maxLocs := 0, 0
	for step := range 1500 {
		switch op := rng.IntN(20); {
		case op < 12 || last == kept: // a batch after the last entry, or over a replaced tail
			first := last + 1
			if op < 3 && last > kept+1 {
				first = kept + 2 + uint64(rng.IntN(int(last-kept-1)))
				term++
			}
			var batch []raft.Entry
			for i := first; i < first+1+uint64(rng.IntN(30)); i++ {
				e := raft.Entry{Index: i, Term: term, Time: int64(step), Data: data(i, term, rng.IntN(1200))}
				batch = append(batch, e)
			}
			for i := first; i <= last; i++ {
				delete(model, i)
			}
			for _, e := range batch {
				model[e.Index] = e
			}
			last = batch[len(batch)-1].Index
			hs.Term = term
			if err := s.save(&raft.Ready{Entries: batch, HardState: hs, HardStateChanged: true}); err != nil {
				t.Fatal(err)
			}
		case op < 13 && last > kept+20: // a snapshot, keeping the 10 entries before it
			at := kept + 11 + uint64(rng.IntN(int(last-kept-20)))
			useless, err := s.compact(raft.SnapshotMeta{Index: at, Term: model[at].Term}, hs, at-10, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range useless {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
			for i := kept + 1; i <= at-10; i++ {
				delete(model, i)
			}
			kept = at - 10
		case op < 14: // a restart
			if err := s.close(); err != nil {
				t.Fatal(err)
			}
			if s, _, err = openRaftStorage(dir, FsyncNo, t.Logf); err != nil {
				t.Fatal(err)
			}
		}
		if last == kept {
			continue
		}
		lo := kept + 1 + uint64(rng.IntN(int(last-kept)))
		hi := lo + uint64(rng.IntN(int(last-lo)+1))
		maxBytes := rng.IntN(8000)
		got, err := s.ReadEntries(lo, hi, maxBytes)
		if err != nil {
			t.Fatalf("step %d: read [%d,%d]: %v", step, lo, hi, err)
		}
		size := 0
		for i, e := range got {
			want := model[lo+uint64(i)]
			size += len(e.Data)
			if e.Index != want.Index || e.Term != want.Term || e.Time != want.Time || !bytes.Equal(e.Data, want.Data) {
				t.Fatalf("step %d: read [%d,%d]: entry %d is %d/%d (%d bytes), want %d/%d", step, lo, hi, i, e.Index, e.Term, len(e.Data), want.Index, want.Term)
			}
			if e.Index > hi || i > 0 && size > maxBytes {
				t.Fatalf("step %d: read [%d,%d] max %d went past its bounds at %d", step, lo, hi, maxBytes, e.Index)
			}
		}
		if len(got) == 0 {
			t.Fatalf("step %d: read [%d,%d] returned nothing", step, lo, hi)
		}
		reads += len(got)
		maxLocs = max(maxLocs, len(s.locs))
	}
	if segs, _ := listPrefixed(dir, "raft"); len(segs) < 2 || maxLocs < 10 || reads < 1000 {
		t.Fatalf("too little exercised: %d segments, at most %d locations, %d entries read", len(segs), maxLocs, reads)
	}
}

// detachNewest copies the data of the newest entries that fit its budget, and only
// theirs, out of the buffer they were replayed from; the data stays the same, and each
// copy is capped at its length, so that appending to one cannot overwrite the next.
func TestDetachNewestCopiesTheNewestEntriesData(t *testing.T) {
	seg := []byte("aaaabbbbccccdddd")
	var ents []raft.Entry
	for i := range 4 {
		ents = append(ents, raft.Entry{Index: uint64(i + 1), Data: seg[4*i : 4*i+4]})
	}
	detachNewest(ents, 9) // the newest two fit, not three
	for i, e := range ents {
		if aliased := &e.Data[0] == &seg[4*i]; aliased != (i < 2) {
			t.Errorf("entry %d: aliases the segment %v, want %v", e.Index, aliased, i < 2)
		}
		if string(e.Data) != string(seg[4*i:4*i+4]) || i >= 2 && cap(e.Data) != len(e.Data) {
			t.Errorf("entry %d: data %q (cap %d), want %q", e.Index, e.Data, cap(e.Data), seg[4*i:4*i+4])
		}
	}
	detachNewest(nil, 8) // nothing replayed
	empty := []raft.Entry{{Index: 1}, {Index: 2, Data: []byte("x")}}
	detachNewest(empty, 8)
	if empty[0].Data != nil || string(empty[1].Data) != "x" {
		t.Errorf("entries without data and with one byte came out as %q and %q", empty[0].Data, empty[1].Data)
	}
}
