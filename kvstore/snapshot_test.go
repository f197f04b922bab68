package kvstore

import (
	"bytes"
	"fmt"
	"testing"
)

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
		}
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
	if !bytes.Equal(snap.Bytes(), again.Bytes()) {
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

// BenchmarkSnapshot1MKeys measures writing a snapshot of 1M keys with 32-byte values: a
// Raft member's applier spends this long not applying when it takes one (the longest
// apply stall of a compaction).
func BenchmarkSnapshot1MKeys(b *testing.B) {
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

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}
