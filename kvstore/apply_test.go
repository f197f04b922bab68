package kvstore

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestBatchRoundTrip(t *testing.T) {
	var b []byte
	b = AppendCommand(b, 3, [][]byte{[]byte("SET"), []byte("k"), []byte("v")})
	b = AppendTx(b, []Watch{{DB: 3, Key: []byte("w"), Ver: 0}}, []TxCommand{{DB: 3, Args: [][]byte{[]byte("INCR"), []byte("n")}}})
	b = AppendExpire(b, 3, []string{"gone"})
	s := New()
	var w tree
	if err := s.Apply(Entry{Index: 1, Term: 1, Time: 1000, Data: b}, &w); err != nil {
		t.Fatal(err)
	}
	// SET's reply, then EXEC's: the watched key is absent with its shard's deletion
	// watermark still 0, so the transaction runs; then the expire op's count.
	want := fmt.Sprint([]any{Status("OK"), []any{int64(1)}, int64(1)})
	if got := fmt.Sprint(w.out); got != want {
		t.Fatalf("replies %s, want %s", got, want)
	}
	// the same transaction watching k, which the SET before it changed, does not run
	b = AppendCommand(nil, 3, [][]byte{[]byte("SET"), []byte("k"), []byte("v2")})
	b = AppendTx(b, []Watch{{DB: 3, Key: []byte("k"), Ver: s.KeyVersion(3, []byte("k"), 1000)}}, []TxCommand{{DB: 3, Args: [][]byte{[]byte("INCR"), []byte("n")}}})
	w = tree{}
	s.Apply(Entry{Index: 2, Term: 1, Time: 1000, Data: b}, &w)
	if got := fmt.Sprint(w.out); got != fmt.Sprint([]any{Status("OK"), nil}) {
		t.Fatalf("watched key changed in the same entry: replies %s", got)
	}
}

func TestApplyRejectsCorruptBatches(t *testing.T) {
	good := AppendCommand(nil, 0, [][]byte{[]byte("SET"), []byte("k"), []byte("v")})
	for name, data := range map[string][]byte{
		"unknown op":      {99},
		"mark for no op":  {opOverMemory},
		"truncated":       good[:len(good)-1],
		"db out of range": AppendCommand(nil, 99, [][]byte{[]byte("GET"), []byte("k")}),
		"no args":         {opCommand, 0, 0},
	} {
		s := New()
		if err := s.Apply(Entry{Index: 1, Data: data}, nil); err == nil {
			t.Errorf("%s: applied without error", name)
		}
	}
}

func TestApplyOutOfOrderIsAnError(t *testing.T) {
	s := New()
	s.Apply(Entry{Index: 5}, nil)
	if err := s.Apply(Entry{Index: 5}, nil); err == nil {
		t.Fatal("applying index 5 twice succeeded")
	}
}

// FuzzApplyBatch feeds arbitrary entry data to Apply: a replica must never panic, whatever
// bytes reach it, and two replicas applying the same bytes must end in the same state,
// whether or not one of them reads the entries ahead (PrefetchEntries) first.
func FuzzApplyBatch(f *testing.F) {
	f.Add(AppendCommand(nil, 0, [][]byte{[]byte("SET"), []byte("k"), []byte("v")}))
	f.Add(AppendCommand(nil, 1, [][]byte{[]byte("RPUSH"), []byte("l"), []byte("a"), []byte("b")}))
	f.Add(AppendTx(nil, nil, []TxCommand{{Args: [][]byte{[]byte("ZADD"), []byte("z"), []byte("1"), []byte("m")}}}))
	f.Add(AppendExpire(nil, 0, []string{"k"}))
	f.Add(AppendMCStore(nil, MCAppend, []byte("k"), []byte("v"), 1, 100, "", "0"))
	f.Add(AppendCommand(nil, 0, [][]byte{[]byte("SETBIT"), []byte("b"), []byte("77"), []byte("1")}))
	f.Add(AppendCommand(nil, 1, [][]byte{[]byte("BLMPOP"), []byte("0x1p-3"), []byte("2"), []byte("l"), []byte("m"), []byte("RIGHT"), []byte("COUNT"), []byte("2")}))
	f.Add(AppendTx(nil, nil, []TxCommand{{Args: [][]byte{[]byte("BZPOPMIN"), []byte("z"), []byte("y"), []byte("1e-3")}}}))
	f.Add(AppendTx(nil, nil, []TxCommand{
		{Args: [][]byte{[]byte("XGROUP"), []byte("CREATE"), []byte("s"), []byte("g"), []byte("$"), []byte("MKSTREAM")}},
		{Args: [][]byte{[]byte("XADD"), []byte("s"), []byte("MAXLEN"), []byte("3"), []byte("*"), []byte("f"), []byte("v")}},
		{Args: [][]byte{[]byte("XREADGROUP"), []byte("GROUP"), []byte("g"), []byte("c"), []byte("STREAMS"), []byte("s"), []byte(">")}},
		{Args: [][]byte{[]byte("XAUTOCLAIM"), []byte("s"), []byte("g"), []byte("d"), []byte("0"), []byte("0-0")}},
	}))
	f.Add(AppendCommand(nil, 0, [][]byte{[]byte("BITFIELD"), []byte("b"), []byte("OVERFLOW"), []byte("SAT"),
		[]byte("INCRBY"), []byte("i5"), []byte("#3"), []byte("-40"), []byte("GET"), []byte("u63"), []byte("9")}))
	f.Add(AppendTx(nil, nil, []TxCommand{{Args: [][]byte{[]byte("BITOP"), []byte("XOR"), []byte("d"), []byte("b"), []byte("c")}}}))
	f.Add(AppendCommand(nil, 0, [][]byte{[]byte("GEOADD"), []byte("g"), []byte("13.36"), []byte("38.11"), []byte("p")}))
	f.Add(AppendCommand(nil, 0, [][]byte{[]byte("GEOSEARCHSTORE"), []byte("d"), []byte("g"), []byte("FROMLONLAT"), []byte("15"),
		[]byte("37"), []byte("BYBOX"), []byte("400"), []byte("300"), []byte("km"), []byte("STOREDIST")}))
	f.Add(AppendCommand(nil, 0, [][]byte{[]byte("EVAL"), []byte("redis.call('sadd', KEYS[1], math.random(9)) return redis.call('spop', KEYS[1])"), []byte("1"), []byte("s")}))
	f.Add(AppendCommand(nil, 0, [][]byte{[]byte("SCRIPT"), []byte("LOAD"), []byte("return redis.call('time')")}))
	f.Add(AppendCommand(nil, 0, [][]byte{[]byte("EVAL"), []byte("return cjson.encode(cjson.decode(ARGV[1]))"), []byte("0"), []byte(`{"a":[1,2.5e3,"\u00e9",null,{}]}`)}))
	f.Add(AppendCommand(AppendOverMemory(nil), 0, [][]byte{[]byte("EVAL"), []byte("redis.call('del', 'x') return redis.call('set', 'k', 'v')"), []byte("0")}))
	f.Add(AppendEvict(AppendCommand(nil, 0, [][]byte{[]byte("SET"), []byte("k"), []byte("v")}), []Victim{{Key: "k", Ver: 1}, {DB: 2, Key: "m"}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, b := New(), New()
		for i := uint64(1); i <= 2; i++ { // the second time, over what the first stored
			a.PrefetchEntries([][]byte{data, data})
			errA := a.Apply(Entry{Index: i, Term: 1, Time: 1e12, Data: data}, nil)
			errB := b.Apply(Entry{Index: i, Term: 1, Time: 1e12, Data: data}, nil)
			if (errA == nil) != (errB == nil) || a.Digest() != b.Digest() {
				t.Fatalf("replicas disagree: %v / %v", errA, errB)
			}
		}
	})
}

// BenchmarkApplySET measures the applier's cost per blind write, batched as a pipeline
// of 16 is.
func BenchmarkApplySET(b *testing.B) {
	s := New()
	var batch []byte
	for i := 0; i < 16; i++ {
		batch = AppendCommand(batch, 0, [][]byte{[]byte("SET"), []byte(fmt.Sprintf("key:%06d", i)), []byte("0123456789abcdef0123456789abcdef")})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 16 {
		s.Apply(Entry{Index: uint64(i/16 + 1), Time: 1e12, Data: batch}, nil)
	}
}

// BenchmarkApplySET1MKeys is BenchmarkApplySET on a store of 1M keys, overwriting keys
// chosen at random, as redis-benchmark -r 1000000 does: mostly cache misses.
func BenchmarkApplySET1MKeys(b *testing.B) { benchApplySET1M(b, EvictNone) }

// BenchmarkApplySET1MKeysLRU is BenchmarkApplySET1MKeys under allkeys-lru: what the
// access clocks cost a write.
func BenchmarkApplySET1MKeysLRU(b *testing.B) { benchApplySET1M(b, EvictAllKeysLRU) }

func benchApplySET1M(b *testing.B, policy EvictPolicy) {
	s, index := store1M()
	s.SetEvictPolicy(policy)
	rng := rand.New(rand.NewPCG(1, 2))
	batches := make([][]byte, 1<<12)
	for i := range batches {
		for range 16 {
			batches[i] = AppendCommand(batches[i], 0, [][]byte{[]byte("SET"), fmt.Appendf(nil, "key:%07d", rng.IntN(1_000_000)), []byte("0123456789abcdef0123456789abcdef")})
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 16 {
		index++
		s.Apply(Entry{Index: index, Time: 1e12, Data: batches[(i/16)&(len(batches)-1)]}, nil)
	}
}

// BenchmarkApplyMCSet1MKeys is a memcached set of a 32-byte value to
// one of 1M keys at random, an entry each: what a single node applies under memcaslap
// -c 50, whose connections send one request at a time.
func BenchmarkApplyMCSet1MKeys(b *testing.B) {
	s, index := store1M()
	rng := rand.New(rand.NewPCG(1, 2))
	entries := make([][]byte, 1<<16)
	for i := range entries {
		key := fmt.Appendf(nil, "key:%07d", rng.IntN(1_000_000)) // the keys store1M holds
		entries[i] = AppendMCStore(nil, MCSet, key, []byte("0123456789abcdef0123456789abcdef"), 0, 0, MCNoValue, MCNoValue)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		index++
		s.Apply(Entry{Index: index, Time: 1e12, Data: entries[i&(len(entries)-1)]}, nil)
	}
}

// BenchmarkApplyMCSetPipelined1MKeys is BenchmarkApplyMCSet1MKeys with 16 sets an
// entry, as a client that pipelines its sets (a bulk load of `set ... noreply`, say)
// has them applied. Per set.
func BenchmarkApplyMCSetPipelined1MKeys(b *testing.B) {
	s, index := store1M()
	rng := rand.New(rand.NewPCG(1, 2))
	entries := make([][]byte, 1<<16) // a million sets: their keys miss
	for i := range entries {
		for range 16 {
			key := fmt.Appendf(nil, "key:%07d", rng.IntN(1_000_000))
			entries[i] = AppendMCStore(entries[i], MCSet, key, []byte("0123456789abcdef0123456789abcdef"), 0, 0, MCNoValue, MCNoValue)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 16 {
		index++
		s.Apply(Entry{Index: index, Time: 1e12, Data: entries[(i/16)&(len(entries)-1)]}, nil)
	}
}

// BenchmarkReadGET measures a GET on the read path (shard read lock, lookup, reply).
func BenchmarkReadGET(b *testing.B) {
	s := New()
	s.Apply(Entry{Index: 1, Data: AppendCommand(nil, 0, [][]byte{[]byte("SET"), []byte("key"), []byte("value")})}, nil)
	args := [][]byte{[]byte("GET"), []byte("key")}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.Read(0, 1e12, args, Discard)
		}
	})
}

// BenchmarkReadGET1MKeys is BenchmarkReadGET on a store of 1M keys read at random, as
// redis-benchmark -r 1000000 reads them: mostly cache misses, in the shard table, the
// map and the value.
func BenchmarkReadGET1MKeys(b *testing.B) { benchReadGET1M(b, EvictNone) }

// BenchmarkReadGET1MKeysLRU is BenchmarkReadGET1MKeys under allkeys-lru: what the
// access clocks cost a read.
func BenchmarkReadGET1MKeysLRU(b *testing.B) { benchReadGET1M(b, EvictAllKeysLRU) }

func benchReadGET1M(b *testing.B, policy EvictPolicy) {
	s, _ := store1M()
	s.SetEvictPolicy(policy)
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%07d", rng.IntN(1_000_000))
	}
	args := [][]byte{[]byte("GET"), nil}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		args[1] = keys[i&(len(keys)-1)]
		s.Read(0, 1e12, args, Discard)
	}
}

func TestWatchVersionOfAbsentKeys(t *testing.T) {
	h := newHarness(t)
	// two keys that share a shard: deleting one must not disturb a WATCH on the other
	a := "watched"
	var b string
	for i := 0; ; i++ {
		if k := fmt.Sprintf("other%d", i); shardOf([]byte(k)) == shardOf([]byte(a)) {
			b = k
			break
		}
	}
	h.do("SET", b, "1")
	v0 := h.s.KeyVersion(0, []byte(a), h.now)
	h.do("DEL", b)
	if v := h.s.KeyVersion(0, []byte(a), h.now); v != v0 {
		t.Fatalf("deleting %s changed the version of absent %s: %d -> %d", b, a, v0, v)
	}
	// created and deleted again between WATCH and EXEC: the version moves
	h.do("SET", a, "x")
	h.do("DEL", a)
	v1 := h.s.KeyVersion(0, []byte(a), h.now)
	if v1 == v0 {
		t.Fatal("a key created and deleted again kept its absent version")
	}
	// the tombstones stay bounded; dropping them moves every absent key's version
	for i := 0; i <= maxTombstones; i++ {
		k := fmt.Sprintf("t%d", i)
		for shardOf([]byte(k)) != shardOf([]byte(a)) {
			k += "x"
		}
		h.do("SET", k, "1")
		h.do("DEL", k)
	}
	if n := len(h.s.shards[shardOf([]byte(a))].dbs[0].tomb); n > maxTombstones {
		t.Fatalf("%d tombstones kept, limit %d", n, maxTombstones)
	}
	if h.s.KeyVersion(0, []byte(a), h.now) == v1 {
		t.Fatal("dropping tombstones left an absent key's version unchanged")
	}
}

// A plain SET does not look the key up before store does: store itself must expire a
// key whose deadline passed (counted, as Redis counts it), drop a live key's deadline,
// and replace a key of another type with all its side state.
func TestPlainSetOverwrites(t *testing.T) {
	h := newHarness(t)
	h.expect(Status("OK"), "SET", "k", "old", "PX", "100")
	h.now += 200
	h.expect(Status("OK"), "SET", "k", "new")
	if n := h.s.ExpiredCount(); n != 1 {
		t.Fatalf("expired keys after overwriting an expired key: %d, want 1", n)
	}
	h.expect(int64(-1), "PTTL", "k")
	h.expect("new", "GET", "k")

	h.expect(Status("OK"), "SET", "live", "a", "PX", "1000")
	h.expect(Status("OK"), "SET", "live", "b")
	h.expect(int64(-1), "PTTL", "live")
	h.expect(Status("OK"), "SET", "live", "c", "PX", "1000")
	h.expect(Status("OK"), "SET", "live", "d", "KEEPTTL")
	h.expect(int64(1000), "PTTL", "live")
	if n := h.s.ExpiredCount(); n != 1 {
		t.Fatalf("expired keys after overwriting live keys: %d, want 1", n)
	}

	h.expect(int64(1), "HSET", "h", "f", "v")
	h.expect(Status("OK"), "SET", "h", "s")
	h.expect(Status("string"), "TYPE", "h")
	h.expectErr("WRONGTYPE", "HGET", "h", "f")
	h.expect("s", "GET", "h")
}

func TestCutBatchKeepsBatchesApart(t *testing.T) {
	var b []byte
	var batches [][]byte
	for i := range 200 {
		b = AppendCommand(b, 0, [][]byte{[]byte("SET"), fmt.Appendf(nil, "k%d", i), []byte("v")})
		var batch []byte
		batch, b = CutBatch(b)
		if len(b) != 0 {
			t.Fatalf("next batch starts with %d bytes", len(b))
		}
		batches = append(batches, batch)
	}
	// appending to an old batch must not write into the batches after it
	batches[0] = append(batches[0], "garbage"...)
	for i, batch := range batches[1:] {
		want := AppendCommand(nil, 0, [][]byte{[]byte("SET"), fmt.Appendf(nil, "k%d", i+1), []byte("v")})
		if string(batch) != string(want) {
			t.Fatalf("batch %d = %q, want %q", i+1, batch, want)
		}
	}
	// a chunk that a huge batch grew is not kept for the next batch
	huge := AppendCommand(nil, 0, [][]byte{[]byte("SET"), []byte("k"), make([]byte, 1<<20)})
	grown := make([]byte, len(huge), len(huge)+256<<10)
	copy(grown, huge)
	_, next := CutBatch(grown)
	if cap(next) > batchMaxKeep {
		t.Fatalf("next batch keeps %d bytes of a huge batch's array", cap(next))
	}
}

// TestSetStoresItsOwnCopies: SET and memcached's set keep a short key in its table entry
// with the value in an allocation of its own, and a long key in front of its value in
// one string; either way the store must own copies of both (the entry's bytes may be
// reused), and overwrites, an empty value, TTLs, APPEND, RENAME, a collection at the
// key, KEYS and DEL behave alike.
func TestSetStoresItsOwnCopies(t *testing.T) {
	const now = 1_700_000_000_000
	for _, k := range []string{"k1", "a-key-longer-than-sixteen-bytes"} {
		t.Run(fmt.Sprint(len(k), " bytes"), func(t *testing.T) {
			s := New()
			mk := "m" + k
			data := AppendCommand(nil, 0, [][]byte{[]byte("SET"), []byte(k), []byte("value-1")})
			data = AppendMCStore(data, MCSet, []byte(mk), []byte("mc-value"), 7, 0, "", "")
			if err := s.Apply(Entry{Index: 1, Time: now, Data: data}, nil); err != nil {
				t.Fatal(err)
			}
			for i := range data {
				data[i] = 'x' // the log may reuse the entry's bytes
			}
			if it, ok := s.MCGet([]byte(k), now); !ok || it.Value != "value-1" || it.Flags != 0 {
				t.Fatalf("%s = %+v %v, want value-1 with flags 0", k, it, ok)
			}
			if it, ok := s.MCGet([]byte(mk), now); !ok || it.Value != "mc-value" || it.Flags != 7 {
				t.Fatalf("%s = %+v %v, want mc-value with flags 7", mk, it, ok)
			}

			h := newHarness(t)
			other, ttl := k+"-renamed", k+"-ttl"
			for _, c := range []struct {
				args []string
				want any
			}{
				{[]string{"SET", k, "first"}, Status("OK")},
				{[]string{"SET", k, "second-longer"}, Status("OK")},
				{[]string{"GET", k}, "second-longer"},
				{[]string{"SET", ttl, "", "EX", "100"}, Status("OK")},
				{[]string{"GET", ttl}, ""},
				{[]string{"TTL", ttl}, int64(100)},
				{[]string{"APPEND", k, "!"}, int64(14)},
				{[]string{"RENAME", k, other}, Status("OK")},
				{[]string{"EXISTS", k}, int64(0)},
				{[]string{"GET", other}, "second-longer!"},
				{[]string{"RPUSH", k, "x", "y"}, int64(2)}, // a collection at the key
				{[]string{"RPUSH", k, "z"}, int64(3)},
				{[]string{"LRANGE", k, "0", "-1"}, []any{"x", "y", "z"}},
				{[]string{"KEYS", k + "*"}, []any{k, other, ttl}},
				{[]string{"DEL", k, other, ttl}, int64(3)},
				{[]string{"DBSIZE"}, int64(0)},
			} {
				got := h.do(c.args...)
				if keys, ok := got.([]any); ok && c.args[0] == "KEYS" {
					slices.SortFunc(keys, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
				}
				if !reflect.DeepEqual(got, c.want) {
					t.Fatalf("%q = %#v, want %#v", c.args, got, c.want)
				}
			}
		})
	}
}

// TestApplyAllocatesOnlyTheValue: applying an overwrite of a short key, by Redis SET
// and by memcached set, allocates the new value and nothing else: no context, no
// decoding scratch.
func TestApplyAllocatesOnlyTheValue(t *testing.T) {
	s := New()
	key := []byte("key:000000123456")
	val := []byte("0123456789abcdef0123456789abcdef")
	entries := map[string][]byte{
		"SET":          AppendCommand(nil, 0, [][]byte{[]byte("SET"), key, val}),
		"memcache set": AppendMCStore(nil, MCSet, key, val, 0, 0, "", ""),
	}
	for name, data := range entries {
		idx := s.applied
		apply := func() {
			idx++
			if err := s.Apply(Entry{Index: idx, Term: 1, Time: 1, Data: data}, Discard); err != nil {
				t.Fatal(err)
			}
		}
		apply() // the key exists from here on
		if n := testing.AllocsPerRun(100, apply); n != 1 {
			t.Errorf("%s: %v allocations per applied entry, want 1 (the value)", name, n)
		}
	}
}

// BenchmarkApplyTx is a MULTI/EXEC of two SETs, as a redis-py pipeline sends by default.
func BenchmarkApplyTx(b *testing.B) {
	s := New()
	entry := AppendTx(nil, nil, []TxCommand{
		{Args: [][]byte{[]byte("SET"), []byte("a"), []byte("1")}},
		{Args: [][]byte{[]byte("SET"), []byte("b"), []byte("2")}},
	})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		s.Apply(Entry{Index: uint64(i + 1), Time: 1e12, Data: entry}, nil)
	}
}

// A leader may join the batches of blind writes proposed together into one entry
// (consensus.RaftConfig.JoinBlind): applying the concatenation must be applying the
// batches one after the other. Random batches of every kind of op are applied as
// entries of their own by one store and joined in random runs by another; the replies
// and the states (Digest) must be the same. The joined entry takes the index of its last
// batch, so both stores end at the same applied index. Left out: what keys state by the
// entry's index, the same on every replica but not the same joined: the random seed of
// SPOP and the like, and the idempotent-request table's last use of a client (its
// eviction order). Neither is a blind write: both reply with what the apply made.
func TestJoinedBatchesApplyAsTheBatches(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		key := func() []byte { return fmt.Appendf(nil, "k%d", rng.IntN(8)) }
		arg := func(s ...string) [][]byte {
			out := make([][]byte, len(s))
			for i := range s {
				out[i] = []byte(s[i])
			}
			return out
		}
		batch := func() []byte {
			var b []byte
			if rng.IntN(20) == 0 {
				b = AppendOverMemory(b)
			}
			k := string(key())
			switch rng.IntN(10) {
			case 0:
				return AppendCommand(b, 0, arg("SET", k, fmt.Sprint(rng.IntN(100))))
			case 1:
				return AppendCommand(b, rng.IntN(2), arg("INCR", k))
			case 2:
				return AppendCommand(b, 0, arg("DEL", k, string(key())))
			case 3:
				return AppendCommand(b, 0, arg("SET", k, "x", "PX", fmt.Sprint(1+rng.IntN(3))))
			case 4:
				return AppendExpire(b, 0, []string{k})
			case 5:
				return AppendCommand(b, 0, arg("RPUSH", k, "a", "b"))
			case 6:
				return AppendCommand(b, 0, arg("HSET", k, "f", fmt.Sprint(rng.IntN(5))))
			case 7:
				return AppendTx(b, []Watch{{DB: 0, Key: key(), Ver: uint64(rng.IntN(40))}},
					[]TxCommand{{DB: 0, Args: arg("INCR", k)}, {DB: 0, Args: arg("APPEND", string(key()), "z")}})
			case 8:
				return AppendMCStore(b, MCSet, key(), []byte("mc"), 3, 0, MCNoValue, MCNoValue)
			default:
				return AppendMCIncr(b, key(), rng.IntN(2) == 0, 2, MCNoValue, MCNoValue, 0, MCNoValue)
			}
		}
		apart, joined := New(), New()
		var wantReplies, gotReplies tree
		index, now := uint64(0), int64(1e12)
		for range 300 {
			now += int64(rng.IntN(3)) * 1e6 // PX 1-3 ms: some keys expire between entries
			var data []byte
			for range 1 + rng.IntN(5) {
				b := batch()
				index++
				if err := apart.Apply(Entry{Index: index, Term: 1, Time: now, Data: b}, &wantReplies); err != nil {
					t.Fatal(err)
				}
				data = append(data, b...)
			}
			if err := joined.Apply(Entry{Index: index, Term: 1, Time: now, Data: data}, &gotReplies); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := fmt.Sprint(gotReplies.out), fmt.Sprint(wantReplies.out); got != want {
			t.Fatalf("seed %d: joined replies\n%s\nwant\n%s", seed, got, want)
		}
		if apart.Digest() != joined.Digest() {
			t.Fatalf("seed %d: the joined store differs from the one given the batches apart", seed)
		}
	}
}
