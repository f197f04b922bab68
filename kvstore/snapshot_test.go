package kvstore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// canonicalSnapshot returns snapshot b with every db's key records sorted. A snapshot
// lists keys in its tables' order, which depends on the order the keys were inserted
// in: two stores with the same state, one of them restored, may write them in different
// orders, and compare equal once both are canonical. It reads b with Restore's
// snapReader and writes it back with the snapshot's own encoders.
func canonicalSnapshot(t *testing.T, b []byte) []byte {
	t.Helper()
	r := &snapReader{r: bufio.NewReader(bytes.NewReader(b[len(snapshotMagic):]))}
	out := append([]byte(nil), b[:len(snapshotMagic)]...)
	out = binary.AppendUvarint(out, r.uvarint()) // applied
	out = binary.AppendUvarint(out, r.uvarint()) // ver
	out = binary.AppendUvarint(out, r.uvarint()) // mcFlushLive
	for range numShards {
		for range NumDBs {
			out = binary.AppendUvarint(out, r.uvarint()) // tombFloor
			nt := r.uvarint()
			out = binary.AppendUvarint(out, nt)
			for ; nt > 0 && r.err == nil; nt-- {
				out = appendBytes(out, r.bytes())
				out = binary.AppendUvarint(out, r.uvarint())
			}
			recs := make([][]byte, r.uvarint())
			out = binary.AppendUvarint(out, uint64(len(recs)))
			for i := range recs {
				key := r.bytes()
				typ, err := r.r.ReadByte()
				if err != nil {
					t.Fatalf("snapshot: %v", err)
				}
				ver, flags, ttl, val := r.uvarint(), r.uvarint(), r.varint(), r.bytes()
				recs[i] = appendRecord(nil, key, Type(typ), ver, flags, ttl, string(val))
			}
			slices.SortFunc(recs, bytes.Compare)
			for _, rec := range recs {
				out = append(out, rec...)
			}
		}
	}
	tail, err := io.ReadAll(r.r)
	if r.err != nil || err != nil {
		t.Fatalf("snapshot: %v %v", r.err, err)
	}
	return append(out, tail...)
}

// populate applies a mixed workload touching every type, TTLs, deletions and databases.
func populate(h *harness, n int) {
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("k%d", i%37)
		switch i % 9 {
		case 0:
			h.do("SET", k, fmt.Sprint(i))
		case 1:
			h.do("RPUSH", "l"+k, fmt.Sprint(i), "x")
		case 2:
			h.do("HSET", "h"+k, fmt.Sprint(i%5), fmt.Sprint(i))
		case 3:
			h.do("SADD", "s"+k, fmt.Sprint(i%11))
		case 4:
			h.do("ZADD", "z"+k, fmt.Sprint(i%13), fmt.Sprint(i%7))
		case 5:
			h.do("EXPIRE", k, "1000")
		case 6:
			h.do("DEL", "l"+k)
		case 7:
			h.db = (h.db + 1) % 3
		case 8:
			h.do("INCR", "counter")
			h.do("XADD", "x"+k, "MAXLEN", "5", fmt.Sprintf("%d-*", i), "f", fmt.Sprint(i))
			h.do("XGROUP", "CREATE", "x"+k, "g", "0")
			h.do("XREADGROUP", "GROUP", "g", fmt.Sprint("c", i%3), "COUNT", "2", "STREAMS", "x"+k, ">")
		}
	}
}

// TestCanonicalSnapshotTellsStatesApart keeps canonicalSnapshot honest: it keeps every
// record (its output is as long as its input), and one changed value shows.
func TestCanonicalSnapshotTellsStatesApart(t *testing.T) {
	a := newHarness(t)
	populate(a, 2000)
	var before, after bytes.Buffer
	a.s.Snapshot(&before)
	a.do("SET", "k5", "another value")
	a.s.Snapshot(&after)
	cb, ca := canonicalSnapshot(t, before.Bytes()), canonicalSnapshot(t, after.Bytes())
	if len(cb) != before.Len() || len(ca) != after.Len() {
		t.Fatalf("canonical form lost bytes: %d of %d, %d of %d", len(cb), before.Len(), len(ca), after.Len())
	}
	if bytes.Equal(cb, ca) {
		t.Fatal("a changed value left the canonical snapshot unchanged")
	}
}

func TestSnapshotRestoreIsTheSameState(t *testing.T) {
	a := newHarness(t)
	populate(a, 2000)
	var snap bytes.Buffer
	if err := a.s.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	b := newHarness(t)
	b.index, b.now, b.db = a.index, a.now, a.db
	if err := b.s.Restore(bytes.NewReader(snap.Bytes())); err != nil {
		t.Fatal(err)
	}
	if a.s.Digest() != b.s.Digest() {
		t.Fatal("digest differs after restore")
	}
	var again bytes.Buffer
	b.s.Snapshot(&again)
	if !bytes.Equal(canonicalSnapshot(t, snap.Bytes()), canonicalSnapshot(t, again.Bytes())) {
		t.Fatal("snapshot of the restored store differs from the original snapshot")
	}
	// both go on identically: same replies, same state, including WATCH outcomes that
	// depend on versions and deletion watermarks, and random choices
	for _, h := range []*harness{a, b} {
		populate(h, 500)
	}
	if a.s.Digest() != b.s.Digest() {
		t.Fatal("stores diverged after restore")
	}
	for _, args := range [][]string{{"SPOP", "sk1", "3"}, {"SRANDMEMBER", "sk2", "-5"}, {"LRANGE", "lk3", "0", "-1"}, {"GET", "counter"}} {
		ra, rb := fmt.Sprint(a.applied(args...)), fmt.Sprint(b.applied(args...))
		if ra != rb {
			t.Fatalf("%v: %s vs %s", args, ra, rb)
		}
	}
}

func TestDigestSeesEveryChange(t *testing.T) {
	h := newHarness(t)
	populate(h, 300)
	d0 := h.s.Digest()
	h.do("SET", "k1", "changed")
	d1 := h.s.Digest()
	if d0 == d1 {
		t.Fatal("digest unchanged by SET")
	}
	h.do("PERSIST", "k1")
	h.do("EXPIRE", "k1", "5000")
	if h.s.Digest() == d1 {
		t.Fatal("digest unchanged by a TTL change")
	}
}

func TestApplySameEntriesSameDigest(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	populate(a, 1500)
	populate(b, 1500)
	if a.s.Digest() != b.s.Digest() {
		t.Fatal("two stores given the same entries differ")
	}
}

func FuzzRestore(f *testing.F) {
	h := newHarness(&testing.T{})
	populate(h, 200)
	var snap bytes.Buffer
	h.s.Snapshot(&snap)
	f.Add(snap.Bytes())
	f.Add([]byte(snapshotMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := New()
		if err := s.Restore(bytes.NewReader(b)); err == nil {
			// whatever restores must snapshot again without trouble
			var out bytes.Buffer
			if err := s.Snapshot(&out); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// BenchmarkSnapshot1MKeys measures writing a snapshot of 1M keys with 32-byte values, on
// the goroutine that writes it while the applier goes on (what the applier pays is
// BenchmarkSnapshotApplyStall1MKeys).
func BenchmarkSnapshot1MKeys(b *testing.B) {
	s, _ := store1M()
	var size int64
	b.ResetTimer()
	for range b.N {
		cw := &countingWriter{}
		if err := s.Snapshot(cw); err != nil {
			b.Fatal(err)
		}
		size = cw.n
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB")
}

// store1M is a store of 1M keys with 32-byte values, and the index it has applied.
func store1M() (*Store, uint64) {
	s := New()
	var batch []byte
	index := uint64(0)
	for i := 0; i < 1_000_000; i++ {
		batch = AppendCommand(batch, 0, [][]byte{[]byte("SET"), fmt.Appendf(nil, "key:%07d", i), []byte("0123456789abcdef0123456789abcdef")})
		if i%1000 == 999 {
			index++
			s.Apply(Entry{Index: index, Time: 1e12, Data: batch}, nil)
			batch = batch[:0]
		}
	}
	return s, index
}

// BenchmarkSnapshotApplyStall1MKeys measures what a copy-on-write snapshot of 1M keys
// costs the applier: the pause of BeginSnapshot, and the longest single Apply (a batch
// of 100 SETs to random keys, each shard's first change paying for its capture) while
// the snapshot is written on another goroutine.
func BenchmarkSnapshotApplyStall1MKeys(b *testing.B) {
	s, index := store1M()
	var begin, longest time.Duration
	rng := rand.New(rand.NewPCG(1, 2))
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		write, err := s.BeginSnapshot()
		if err != nil {
			b.Fatal(err)
		}
		begin = max(begin, time.Since(t0))
		done := make(chan error, 1)
		go func() { done <- write(&countingWriter{}) }()
		for writing := true; writing; {
			select {
			case err := <-done:
				if err != nil {
					b.Fatal(err)
				}
				writing = false
			default:
			}
			var batch []byte
			for range 100 {
				batch = AppendCommand(batch, 0, [][]byte{[]byte("SET"), fmt.Appendf(nil, "key:%07d", rng.IntN(1_000_000)), []byte("x")})
			}
			index++
			t := time.Now()
			s.Apply(Entry{Index: index, Time: 1e12, Data: batch}, nil)
			longest = max(longest, time.Since(t))
		}
	}
	b.ReportMetric(float64(begin.Microseconds())/1000, "begin-ms")
	b.ReportMetric(float64(longest.Microseconds())/1000, "max-apply-ms")
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// checkSnapshotOf fails the test unless snap holds the state of ref: the same records,
// and restored, the same digest.
func checkSnapshotOf(t *testing.T, snap []byte, ref *harness) {
	t.Helper()
	var want bytes.Buffer
	if err := ref.s.Snapshot(&want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(canonicalSnapshot(t, snap), canonicalSnapshot(t, want.Bytes())) {
		t.Fatal("the copy-on-write snapshot differs from the state when it began")
	}
	h := newHarness(t)
	if err := h.s.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	if h.s.Digest() != ref.s.Digest() {
		t.Fatal("restored digest differs")
	}
}

// Every shard changes before the writer starts, so every shard is written from its
// capture, and its key tables from frozen tables whose live tables were changed in place
// (pages saved), grew to new arrays, were flushed, or swapped with another db's.
func TestSnapshotCapturesEveryShardBeforeTheWriter(t *testing.T) {
	a, ref := newHarness(t), newHarness(t)
	for _, h := range []*harness{a, ref} {
		populate(h, 3000)
		for db := range 4 {
			h.db = db
			for i := range 4000 {
				h.do("SET", fmt.Sprintf("key:%d", i), fmt.Sprint("v", db, i))
			}
		}
		h.db = 0
	}
	write, err := a.s.BeginSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20000 { // overwrites, and 16000 new keys: every table grows
		a.do("SET", fmt.Sprintf("key:%d", i), "new")
	}
	for i := 0; i < 4000; i += 3 { // deletions shift entries back within and across pages
		a.do("DEL", fmt.Sprintf("key:%d", i))
	}
	a.db = 1
	a.do("SET", "key:1", "changed")
	a.do("FLUSHDB")
	a.do("SET", "key:1", "after the flush")
	a.db = 0
	a.do("SWAPDB", "2", "3")
	a.db = 2
	a.do("DEL", "key:7")
	a.db = 0
	populate(a, 3000)
	var snap bytes.Buffer
	if err := write(&snap); err != nil {
		t.Fatal(err)
	}
	checkSnapshotOf(t, snap.Bytes(), ref)
	// The live store kept every change, and no table saves pages any more.
	if got := a.do("GET", "key:4"); got != "new" {
		t.Fatalf("key:4 = %v", got)
	}
	for i := range a.s.shards {
		for db := range a.s.shards[i].dbs {
			if f := a.s.shards[i].dbs[db].keys.frozen; f != nil && !f.done {
				t.Fatalf("shard %d db %d still saves pages for a written snapshot", i, db)
			}
		}
	}
}

// A snapshot begun between two entries holds exactly the state of that moment, however
// much is applied while it is written: the applier hands each shard over before its
// first change (copy-on-write). The writer here runs on its own goroutine, racing the
// applier, and the result equals a snapshot of a store that stopped at the same entry.
func TestSnapshotCopyOnWriteWhileApplying(t *testing.T) {
	a, ref := newHarness(t), newHarness(t)
	populate(a, 3000)
	populate(ref, 3000)
	write, err := a.s.BeginSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.s.BeginSnapshot(); err == nil {
		t.Fatal("a second snapshot began while one is being written")
	}
	var snap bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- write(&snap) }()
	populate(a, 3000) // touches every kind of key while the snapshot is written
	for i := 0; i < 500; i++ {
		a.do("SET", fmt.Sprintf("fresh%d", i), "x") // and keys of every shard
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkSnapshotOf(t, snap.Bytes(), ref)
	// The store that went on applying is whole, and a new snapshot may begin.
	if got := a.do("GET", "fresh499"); got != "x" {
		t.Fatalf("fresh499 = %v", got)
	}
	var again bytes.Buffer
	if err := a.s.Snapshot(&again); err != nil {
		t.Fatal(err)
	}
}
