package consensus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// recorder is a state machine that remembers what it was given.
type recorder struct {
	mu      sync.Mutex
	entries []Entry
	locals  []any
}

func (r *recorder) Apply(e Entry, local any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Data = bytes.Clone(e.Data)
	r.entries = append(r.entries, e)
	r.locals = append(r.locals, local)
}

func (r *recorder) snapshot() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Entry(nil), r.entries...)
}

func openTest(t *testing.T, dir string, sm StateMachine, fsync FsyncPolicy) *Node {
	t.Helper()
	n, err := Open(Config{Dir: dir, Fsync: fsync, SM: sm, Logf: t.Logf})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return n
}

func TestProposeCommitsAndAppliesInOrder(t *testing.T) {
	sm := &recorder{}
	n := openTest(t, t.TempDir(), sm, FsyncNo)
	defer n.Close()
	for i := 1; i <= 100; i++ {
		idx, err := n.Propose([]byte(fmt.Sprint(i)), i)
		if err != nil {
			t.Fatal(err)
		}
		if idx != uint64(i) {
			t.Fatalf("proposal %d got index %d", i, idx)
		}
	}
	if err := n.WaitApplied(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
	got := sm.snapshot()
	if len(got) != 100 {
		t.Fatalf("applied %d entries, want 100", len(got))
	}
	var lastTime int64
	for i, e := range got {
		if e.Index != uint64(i+1) || string(e.Data) != fmt.Sprint(i+1) || sm.locals[i] != i+1 {
			t.Fatalf("entry %d: %+v local %v", i, e, sm.locals[i])
		}
		if e.Time < lastTime {
			t.Fatalf("entry %d: time went backwards: %d < %d", e.Index, e.Time, lastTime)
		}
		lastTime = e.Time
	}
}

func TestProposeManyIsOneWALWriteOfEntriesInOrder(t *testing.T) {
	dir := t.TempDir()
	sm := &recorder{}
	n := openTest(t, dir, sm, FsyncNo)
	if _, err := n.Propose([]byte("first"), "p"); err != nil {
		t.Fatal(err)
	}
	writes := n.Stats().WALWrites.Load()
	data := [][]byte{[]byte("a"), []byte("b"), []byte("c")}
	if err := n.ProposeMany(data, []any{"la", nil, "lc"}); err != nil {
		t.Fatal(err)
	}
	if got := n.Stats().WALWrites.Load() - writes; got != 1 {
		t.Fatalf("ProposeMany of 3 entries made %d WAL writes, want 1", got)
	}
	if st := n.Status(); st.CommitIndex != 4 || st.LastIndex != 4 {
		t.Fatalf("after ProposeMany: %+v, want last and commit index 4", st)
	}
	if err := n.ProposeMany(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := n.WaitApplied(context.Background(), 4); err != nil {
		t.Fatal(err)
	}
	got := sm.snapshot()
	want := []struct {
		data  string
		local any
	}{{"first", "p"}, {"a", "la"}, {"b", nil}, {"c", "lc"}}
	if len(got) != len(want) {
		t.Fatalf("applied %d entries, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].Index != uint64(i+1) || string(got[i].Data) != w.data || sm.locals[i] != w.local {
			t.Fatalf("entry %d: %+v local %v, want data %q local %v", i, got[i], sm.locals[i], w.data, w.local)
		}
	}
	if got[1].Time != got[3].Time {
		t.Fatalf("one ProposeMany stamped different times: %d and %d", got[1].Time, got[3].Time)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.ProposeMany(data, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("ProposeMany on a closed node: %v, want ErrClosed", err)
	}

	replay := &recorder{}
	n = openTest(t, dir, replay, FsyncNo)
	defer n.Close()
	if got := replay.snapshot(); len(got) != 4 || string(got[3].Data) != "c" {
		t.Fatalf("replayed %d entries (%+v), want the 4 proposed", len(got), got)
	}
}

func TestEntryTimeNeverDecreases(t *testing.T) {
	clock := int64(1000)
	sm := &recorder{}
	n, err := Open(Config{MemoryOnly: true, SM: sm, Now: func() int64 { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	n.Propose(nil, nil)
	clock = 500 // the wall clock steps back
	n.Propose(nil, nil)
	n.WaitApplied(context.Background(), 2)
	got := sm.snapshot()
	if got[1].Time != 1000 {
		t.Fatalf("second entry time %d, want 1000 (the log's clock must not run backwards)", got[1].Time)
	}
}

func TestRestartReplaysWAL(t *testing.T) {
	for _, policy := range []FsyncPolicy{FsyncAlways, FsyncEverySec, FsyncNo} {
		t.Run(policy.String(), func(t *testing.T) {
			dir := t.TempDir()
			n := openTest(t, dir, &recorder{}, policy)
			for i := 0; i < 50; i++ {
				if _, err := n.Propose([]byte(fmt.Sprintf("cmd-%d", i)), nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			sm := &recorder{}
			n = openTest(t, dir, sm, policy)
			defer n.Close()
			got := sm.snapshot()
			if len(got) != 50 {
				t.Fatalf("replayed %d entries, want 50", len(got))
			}
			for i, e := range got {
				if string(e.Data) != fmt.Sprintf("cmd-%d", i) {
					t.Fatalf("entry %d data %q", i, e.Data)
				}
			}
			// new proposals continue the log
			idx, err := n.Propose([]byte("next"), nil)
			if err != nil || idx != 51 {
				t.Fatalf("after restart: index %d err %v, want 51", idx, err)
			}
		})
	}
}

func walFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range names {
		names[i] = filepath.Join(dir, names[i])
	}
	return names
}

func TestTornTailIsTruncated(t *testing.T) {
	cases := map[string]func(b []byte) []byte{
		"cut in the header":  func(b []byte) []byte { return b[:len(b)-len(lastRecord(b))+3] },
		"cut in the payload": func(b []byte) []byte { return b[:len(b)-2] },
		"zeros appended":     func(b []byte) []byte { return append(b, make([]byte, 100)...) },
		"last record garbled": func(b []byte) []byte {
			c := bytes.Clone(b)
			c[len(c)-1] ^= 0xff
			return c
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			n := openTest(t, dir, &recorder{}, FsyncAlways)
			for i := 0; i < 10; i++ {
				n.Propose([]byte(fmt.Sprintf("v%d", i)), nil)
			}
			n.Close()
			path := walFiles(t, dir)[0]
			b, _ := os.ReadFile(path)
			os.WriteFile(path, damage(b), 0o644)

			sm := &recorder{}
			n = openTest(t, dir, sm, FsyncAlways)
			got := sm.snapshot()
			want := 10
			if name != "zeros appended" {
				want = 9 // the damaged last record is dropped
			}
			if len(got) != want {
				t.Fatalf("replayed %d entries, want %d", len(got), want)
			}
			// the log continues right after what survived, and survives another restart
			idx, err := n.Propose([]byte("after"), nil)
			if err != nil || idx != uint64(want+1) {
				t.Fatalf("propose after recovery: %d %v", idx, err)
			}
			n.Close()
			sm = &recorder{}
			n = openTest(t, dir, sm, FsyncAlways)
			defer n.Close()
			if got := sm.snapshot(); len(got) != want+1 || string(got[want].Data) != "after" {
				t.Fatalf("second restart replayed %d entries", len(got))
			}
		})
	}
}

// lastRecord returns the last record of a segment's bytes.
func lastRecord(b []byte) []byte {
	off := 0
	var last []byte
	for off < len(b) {
		_, n, err := parseRecord(b[off:])
		if err != nil {
			break
		}
		last = b[off : off+n]
		off += n
	}
	return last
}

func TestCorruptionBeforeTheTailIsAnError(t *testing.T) {
	dir := t.TempDir()
	n := openTest(t, dir, &recorder{}, FsyncAlways)
	for i := 0; i < 10; i++ {
		n.Propose([]byte(fmt.Sprintf("value-%d", i)), nil)
	}
	n.Close()
	path := walFiles(t, dir)[0]
	b, _ := os.ReadFile(path)
	b[20] ^= 0xff // inside the first record
	os.WriteFile(path, b, 0o644)
	if _, err := Open(Config{Dir: dir, SM: &recorder{}}); err == nil {
		t.Fatal("open succeeded on a WAL corrupted before its tail")
	}
}

func TestConcurrentProposersGroupCommit(t *testing.T) {
	sm := &recorder{}
	dir := t.TempDir()
	n := openTest(t, dir, sm, FsyncAlways)
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := n.Propose([]byte(fmt.Sprintf("%d/%d", w, i)), nil); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	st := n.Status()
	if st.CommitIndex != writers*each {
		t.Fatalf("commit index %d, want %d", st.CommitIndex, writers*each)
	}
	syncs := n.Stats().WALSyncs.Load()
	n.Close()
	if syncs == 0 || syncs > writers*each {
		t.Fatalf("%d fsyncs for %d proposals", syncs, writers*each)
	}
	t.Logf("%d proposals, %d fsyncs", writers*each, syncs)
	// everything acknowledged is on disk, in an order consistent with each writer's
	sm = &recorder{}
	n = openTest(t, dir, sm, FsyncAlways)
	defer n.Close()
	next := make([]int, writers)
	for _, e := range sm.snapshot() {
		var w, i int
		fmt.Sscanf(string(e.Data), "%d/%d", &w, &i)
		if i != next[w] {
			t.Fatalf("writer %d: entry %d after %d", w, i, next[w]-1)
		}
		next[w]++
	}
	for w, c := range next {
		if c != each {
			t.Fatalf("writer %d: %d entries survived, want %d", w, c, each)
		}
	}
}

func TestReadBarrierWaitsForApply(t *testing.T) {
	release := make(chan struct{})
	sm := &blockingSM{release: release}
	n, err := Open(Config{MemoryOnly: true, SM: sm})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	n.Propose([]byte("x"), nil) // committed, but the applier is blocked
	done := make(chan error, 1)
	go func() { done <- n.ReadBarrier(context.Background()) }()
	select {
	case <-done:
		t.Fatal("read barrier passed before the committed entry was applied")
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n.Status().AppliedIndex < 1 {
		t.Fatal("barrier returned before apply")
	}
}

type blockingSM struct{ release chan struct{} }

func (b *blockingSM) Apply(Entry, any) { <-b.release }

func TestRecordRoundTrip(t *testing.T) {
	e := Entry{Index: 1 << 40, Term: 7, Time: -5, Data: []byte("hello")}
	b := appendRecord(nil, &e)
	got, n, err := parseRecord(b)
	if err != nil || n != len(b) || got.Index != e.Index || got.Term != e.Term || got.Time != e.Time || string(got.Data) != "hello" {
		t.Fatalf("round trip: %+v %d %v", got, n, err)
	}
}

func FuzzReadWAL(f *testing.F) {
	f.Add(appendRecord(nil, &Entry{Index: 1, Term: 1, Time: 1, Data: []byte("abc")}))
	f.Add([]byte{255, 255, 255, 255, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		off := 0
		for off < len(b) {
			e, n, err := parseRecord(b[off:])
			if err != nil {
				return
			}
			if n <= 0 || off+n > len(b) {
				t.Fatalf("record length %d at %d of %d", n, off, len(b))
			}
			// what parses re-encodes to the same bytes
			if re := appendRecord(nil, &e); !bytes.Equal(re, b[off:off+n]) {
				// varints may be non-minimal in fuzzed input; the decoded entry must still
				// re-encode and parse to itself
				e2, _, err := parseRecord(re)
				if err != nil || e2.Index != e.Index || e2.Term != e.Term || e2.Time != e.Time || !bytes.Equal(e2.Data, e.Data) {
					t.Fatalf("re-encoding changed the entry: %+v vs %+v (%v)", e, e2, err)
				}
			}
			off += n
		}
	})
}

// A WAL that outgrows a segment goes on in a new one: every record replays, in order,
// across the two. Writing past presyncAhead before the end starts the early fsync of the
// segment, and close waits for it. (Under -race, as CI runs this package, the early
// fsync's goroutine must share nothing unsynchronised with the writer.)
func TestWALRotatesPastASegmentAndReplays(t *testing.T) {
	dir := t.TempDir()
	w, err := openWAL(dir, 0, t.Logf, func(Entry) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("x"), 64<<10)
	n := uint64(int(segmentSize)/len(data) + 8) // a little more than one segment
	var buf []byte
	for i := uint64(1); i <= n; i++ {
		e := Entry{Index: i, Term: 1, Time: int64(i), Data: data}
		buf = appendRecord(buf[:0], &e)
		if _, err := w.write(buf, i+1); err != nil {
			t.Fatal(err)
		}
		if w.size >= segmentSize-presyncAhead && w.seq == 1 && !w.presynced {
			t.Fatalf("entry %d: %d bytes into the first segment, and no early fsync started", i, w.size)
		}
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	if segs, _ := listSegments(dir); len(segs) != 2 {
		t.Fatalf("segments %v, want two", segs)
	}
	var next uint64 = 1
	w, err = openWAL(dir, 0, t.Logf, func(e Entry) error {
		if e.Index != next || !bytes.Equal(e.Data, data) {
			return fmt.Errorf("replayed entry %d (%d bytes), want %d", e.Index, len(e.Data), next)
		}
		next++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	w.close()
	if next != n+1 {
		t.Fatalf("replayed %d entries, want %d", next-1, n)
	}
}
