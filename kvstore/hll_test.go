package kvstore

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The expected replies are what redis-server 7.0.15 answers for the same commands, in
// the same order, on an empty server: the HLL bytes GET shows included.
func TestHyperLogLogCommands(t *testing.T) {
	h := newHarness(t)
	// PFADD creates a sparse HLL; a repeated element changes nothing
	h.expect(1, "PFADD", "h", "a", "b", "c")
	h.expect(0, "PFADD", "h", "a")
	h.expect(0, "PFADD", "h")
	h.expect(1, "PFADD", "empty")
	h.expect("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff", "GET", "empty")
	h.expect(27, "STRLEN", "h")
	h.expect(Status("sparse"), "PFDEBUG", "ENCODING", "h")
	h.expect("Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603", "PFDEBUG", "DECODE", "h")
	h.expect("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80`\xf3\x80P\xb1\x84K\xfb\x80BZ", "GET", "h")
	// PFCOUNT caches the count in the header: the second call reads it back
	h.expect(3, "PFCOUNT", "h")
	h.expect("HYLL\x01\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00`\xf3\x80P\xb1\x84K\xfb\x80BZ", "GET", "h")
	h.expect(3, "PFCOUNT", "h")
	h.expect(0, "PFCOUNT", "missing")
	h.expect(3, "PFCOUNT", "h", "missing")
	h.expect(1, "PFADD", "g", "c", "d", "e", "f")
	h.expect(6, "PFCOUNT", "h", "g")
	h.expect(Status("OK"), "PFMERGE", "m", "h", "g")
	h.expect(6, "PFCOUNT", "m")
	h.expect("Z:1646 v:1,1 Z:5645 v:1,1 Z:1143 v:1,1 Z:4274 v:2,1 Z:2445 v:1,1 Z:622 v:1,1 Z:603", "PFDEBUG", "DECODE", "m")
	h.expect("HYLL\x01\x00\x00\x00\x06\x00\x00\x00\x00\x00\x00\x00Fm\x80V\x0c\x80Dv\x80P\xb1\x84I\x8c\x80Bm\x80BZ", "GET", "m")
	h.expect(Status("OK"), "PFMERGE", "m")
	h.expect(Status("OK"), "PFMERGE", "fresh")
	h.expect("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff", "GET", "fresh")
	// runs: VAL opcodes of equal value merge; a long ZERO becomes XZERO
	h.expect(1, "PFADD", "r", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17", "18", "19", "20")
	h.expect("Z:495 v:2,1 Z:1042 v:1,1 Z:1041 v:1,1 Z:1087 v:1,1 Z:227 v:1,1 Z:246 v:3,1 Z:529 v:1,1 Z:1237 v:1,1 Z:1394 v:5,1 Z:220 v:1,1 Z:854 v:1,1 Z:850 v:4,1 Z:273 v:1,1 Z:1317 v:1,1 Z:147 v:1,1 Z:3136 v:1,1 Z:728 v:1,1 Z:531 v:4,1 Z:185 v:1,1 z:22 v:2,1 Z:803", "PFDEBUG", "DECODE", "r")
	h.expect(20, "PFCOUNT", "r")
	// conversions
	h.expect(1, "PFDEBUG", "TODENSE", "r")
	h.expect(0, "PFDEBUG", "TODENSE", "r")
	h.expect(Status("dense"), "PFDEBUG", "ENCODING", "r")
	h.expect(12304, "STRLEN", "r")
	h.expect(20, "PFCOUNT", "r")
	h.expect(1, "PFADD", "r", "21", "22")
	h.expect(22, "PFCOUNT", "r")
	h.expectErr("ERR HLL encoding is not sparse", "PFDEBUG", "DECODE", "r")
	h.expect(Status("OK"), "PFMERGE", "m2", "h", "r")
	h.expect(Status("dense"), "PFDEBUG", "ENCODING", "m2")
	h.expect(25, "PFCOUNT", "m2")
	// errors
	h.expect(Status("OK"), "SET", "s", "foo")
	h.expectErr("WRONGTYPE Key is not a valid HyperLogLog string value.", "PFADD", "s", "a")
	h.expectErr("WRONGTYPE Key is not a valid HyperLogLog string value.", "PFCOUNT", "s")
	h.expectErr("WRONGTYPE Key is not a valid HyperLogLog string value.", "PFCOUNT", "h", "s")
	h.expectErr("WRONGTYPE Key is not a valid HyperLogLog string value.", "PFMERGE", "h", "s")
	h.expectErr("WRONGTYPE Key is not a valid HyperLogLog string value.", "PFDEBUG", "ENCODING", "s")
	h.expectErr("ERR The specified key does not exist", "PFDEBUG", "ENCODING", "nokey")
	h.expectErr("ERR Unknown PFDEBUG subcommand 'BOGUS'", "PFDEBUG", "BOGUS", "h")
	h.expectErr("ERR The specified key does not exist", "PFDEBUG", "BOGUS", "nokey")
	h.expect(1, "RPUSH", "l", "a")
	h.expectErr("WRONGTYPE Operation against a key holding the wrong kind of value", "PFADD", "l", "a")
	h.expectErr("WRONGTYPE Operation against a key holding the wrong kind of value", "PFCOUNT", "l")
	h.expectErr("WRONGTYPE Operation against a key holding the wrong kind of value", "PFCOUNT", "h", "l")
	h.expectErr("WRONGTYPE Operation against a key holding the wrong kind of value", "PFMERGE", "l", "h")
	h.expectErr("WRONGTYPE Operation against a key holding the wrong kind of value", "PFDEBUG", "GETREG", "l")
	h.expect(Status("OK"), "SET", "fake", "HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	h.expectErr("WRONGTYPE Key is not a valid HyperLogLog string value.", "PFADD", "fake", "a")
	h.expect(Status("OK"), "SET", "fake", "HYLL\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	h.expectErr("WRONGTYPE Key is not a valid HyperLogLog string value.", "PFADD", "fake", "a")
	h.expect(Status("OK"), "SET", "fake", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff")
	h.expect(0, "PFCOUNT", "fake")
	h.expect(1, "PFADD", "fake", "a")
	h.expect(Status("OK"), "PFMERGE", "m", "fake")
	h.expect(6, "PFCOUNT", "m", "fake")
	h.expect(Status("OK"), "SET", "short", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xfe")
	h.expectErr("INVALIDOBJ Corrupted HLL object detected", "PFCOUNT", "short")
	h.expect(1, "PFADD", "short", "zzz")
	h.expectErr("INVALIDOBJ Corrupted HLL object detected", "PFDEBUG", "TODENSE", "short")
	h.expectErr("ERR wrong number of arguments for 'pfadd' command", "PFADD")
	h.expectErr("ERR wrong number of arguments for 'pfcount' command", "PFCOUNT")
	h.expectErr("ERR wrong number of arguments for 'pfmerge' command", "PFMERGE")
	h.expectErr("ERR wrong number of arguments for 'pfdebug' command", "PFDEBUG", "ENCODING")
	h.expectErr("ERR wrong number of arguments for 'pfdebug' command", "PFDEBUG", "ENCODING", "h", "extra")
	h.expect("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80ka\x88T\x9b", "GET", "short")
	h.expect("HYLL\x01\x00\x00\x00\x06\x00\x00\x00\x00\x00\x00\x80Fm\x80V\x0c\x80Dv\x80P\xb1\x84I\x8c\x80Bm\x80BZ", "GET", "m")
	h.expect("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80q\xa6\x84NW", "GET", "fake")
}

// TestHyperLogLogGrowth adds sets of growing size: the sparse code's length, the switch
// to dense past hll-sparse-max-bytes, the estimates and the bytes (by their SHA-256) are
// redis-server 7.0.15's.
func TestHyperLogLogGrowth(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		n            int
		enc          string
		strlen, card int
		sum          string
	}{
		{100, "sparse", 285, 100, "aebee27e50c67272"},
		{700, "sparse", 1403, 704, "ce9617f34cd6e219"},
		{1500, "sparse", 2719, 1509, "27fd190c99857ded"},
		{3000, "dense", 12304, 2979, "a79c6647dea1e857"},
		{20000, "dense", 12304, 19901, "e0b65a9f0a68fd60"},
	} {
		key := fmt.Sprint("big", c.n)
		args := []string{"PFADD", key}
		for i := range c.n {
			args = append(args, fmt.Sprint("e", i))
		}
		h.expect(1, args...)
		h.expect(Status(c.enc), "PFDEBUG", "ENCODING", key)
		h.expect(c.strlen, "STRLEN", key)
		h.expect(c.card, "PFCOUNT", key)
		if got := sha(h.do("GET", key)); got != c.sum {
			t.Errorf("GET %s: sha256 %s, redis-server's %s", key, got, c.sum)
		}
	}
	h.expect(19901, "PFCOUNT", "big100", "big700", "big1500", "big3000", "big20000")
	h.expect(Status("OK"), "PFMERGE", "all", "big100", "big700")
	h.expect(Status("sparse"), "PFDEBUG", "ENCODING", "all")
	h.expect(1403, "STRLEN", "all")
	if got := sha(h.do("GET", "all")); got != "c54641c009f11dba" {
		t.Errorf("GET all: sha256 %s", got)
	}

	// Sparse sources whose union outgrows the sparse code: the destination turns dense
	// in the middle of the merge, and the rest of the registers are set densely.
	for _, n := range []int{700, 1500} {
		for _, prefix := range []string{"s", "t"} {
			args := []string{"PFADD", fmt.Sprint(prefix, n)}
			for i := range n {
				args = append(args, fmt.Sprint(map[string]string{"s": "e", "t": "f"}[prefix], i))
			}
			h.expect(1, args...)
		}
	}
	h.expect(Status("OK"), "PFMERGE", "u", "s700", "s1500", "t700", "t1500")
	h.expect(Status("dense"), "PFDEBUG", "ENCODING", "u")
	h.expect(12304, "STRLEN", "u")
	h.expect(3004, "PFCOUNT", "u")
	if got := sha(h.do("GET", "u")); got != "4f660c4525697ded" {
		t.Errorf("GET u: sha256 %s", got)
	}
}

func sha(v any) string {
	s, _ := v.(string)
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// TestHyperLogLogWatch: which calls change the key's version, as redis-server signals
// (checked there with WATCH around each call). PFCOUNT rewrites the header, and signals,
// only when the cached count was stale; PFDEBUG's conversions change the bytes without a
// signal.
func TestHyperLogLogWatch(t *testing.T) {
	h := newHarness(t)
	h.expect(1, "PFADD", "k", "x", "y")
	h.expectVersionMoves("k", [][]string{{"PFCOUNT", "k"}, {"PFADD", "k", "zz"}, {"PFMERGE", "k"}, {"PFCOUNT", "k"}})
	h.expectVersionStays("k", [][]string{
		{"PFCOUNT", "k"}, {"PFADD", "k", "x"}, {"PFADD", "k"}, {"PFCOUNT", "k", "j"},
		{"PFDEBUG", "TODENSE", "k"}, {"PFDEBUG", "GETREG", "k"}, {"PFDEBUG", "ENCODING", "k"},
	})
}

// TestHyperLogLogKeepsTTL: Redis edits an HLL in place, so its deadline stays.
func TestHyperLogLogKeepsTTL(t *testing.T) {
	h := newHarness(t)
	h.expect(1, "PFADD", "t", "a")
	h.expect(1, "EXPIRE", "t", "100")
	h.expect(1, "PFADD", "t", "b", "c")
	h.expect(Status("OK"), "PFMERGE", "t", "t")
	h.expect(3, "PFCOUNT", "t")
	h.expect(100, "TTL", "t")
}

func TestMurmurHash64A(t *testing.T) {
	// The register index and pattern length redis-server 7.0.15 gives these elements
	// (PFADD of one element to an empty key, then PFDEBUG DECODE).
	for _, c := range []struct {
		ele          string
		index, count int
	}{
		{"a", 12711, 2}, {"b", 15780, 1}, {"c", 8436, 1},
	} {
		i, n := hllPatLen([]byte(c.ele))
		if i != c.index || n != c.count {
			t.Errorf("%q: register %d, pattern %d; want %d, %d", c.ele, i, n, c.index, c.count)
		}
	}
}

// FuzzHyperLogLog feeds the HLL commands any string as an HLL (corrupt ones must fail as
// Redis fails, never panic), and checks that elements added to a sparse HLL and to a
// dense one give the same registers and the same count, as Redis's PFSELFTEST does.
func FuzzHyperLogLog(f *testing.F) {
	f.Add([]byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff"), []byte("a b c"))
	f.Add([]byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xfe"), []byte("zzz"))
	f.Add([]byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x40\x00\x7f\xfe\x9f"), []byte("1 2 3 4"))
	f.Add([]byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f"), []byte("q"))
	f.Add([]byte(nil), []byte(strings.Repeat("e ", 40)))
	f.Fuzz(func(t *testing.T, value, elems []byte) {
		h := newHarness(t)
		h.do("SET", "k", string(value))
		els := strings.Fields(string(elems))
		h.do(append([]string{"PFADD", "k"}, els...)...)
		for _, args := range [][]string{
			{"PFCOUNT", "k"}, {"PFCOUNT", "k", "j"}, {"PFMERGE", "m", "k"}, {"PFDEBUG", "DECODE", "k"},
			{"PFDEBUG", "TODENSE", "k"}, {"PFCOUNT", "k"},
		} {
			h.do(args...)
		}

		h.do("PFADD", "d")
		h.do("PFDEBUG", "TODENSE", "d")
		for _, key := range []string{"s", "d"} {
			h.do(append([]string{"PFADD", key}, els...)...)
		}
		h.do("PFMERGE", "u", "s", "k")
		h.do("PFMERGE", "v", "d", "s", "k")
		cs, cd := h.do("PFCOUNT", "s"), h.do("PFCOUNT", "d")
		if !reflect.DeepEqual(cs, cd) {
			t.Fatalf("sparse counts %v, dense %v", cs, cd)
		}
		h.do("PFDEBUG", "TODENSE", "s")
		vs, _ := h.do("GET", "s").(string)
		vd, _ := h.do("GET", "d").(string)
		if len(vs) != hllDenseSize || vs[hllHdrSize:] != vd[hllHdrSize:] {
			t.Fatal("sparse and dense registers differ")
		}
	})
}

// BenchmarkPFMergeDense merges two dense HLLs into a third: the registers decoded
// 16384 at a time are what PFMERGE and PFCOUNT of several keys cost.
func BenchmarkPFMergeDense(b *testing.B) {
	h := newHarness(b)
	for _, key := range []string{"a", "b"} {
		args := []string{"PFADD", key}
		for i := range 5000 {
			args = append(args, fmt.Sprint(key, i))
		}
		h.do(args...)
	}
	b.ResetTimer()
	for range b.N {
		h.do("PFMERGE", "dst", "a", "b")
	}
}
