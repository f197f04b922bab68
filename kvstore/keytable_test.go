package kvstore

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// checkTable compares t with the model m: the same keys and slots, a live count that
// agrees, and every key found where probing looks for it.
func checkTable(t *testing.T, tb *keyTable, m map[string]slot) {
	t.Helper()
	if tb.len() != len(m) {
		t.Fatalf("len %d, model has %d", tb.len(), len(m))
	}
	seen := map[string]bool{}
	tb.each(func(k string, s slot) bool {
		if seen[k] {
			t.Fatalf("each gave %q twice", k)
		}
		seen[k] = true
		if want, ok := m[k]; !ok || want != s {
			t.Fatalf("each: %q = %+v, model has %+v (%v)", k, s, want, ok)
		}
		return true
	})
	for k, want := range m {
		got, ok := tableGet(tb, k)
		if !ok || got != want {
			t.Fatalf("get %q = %+v %v, want %+v", k, got, ok, want)
		}
		if got, ok := tableGet(tb, []byte(k)); !ok || got != want {
			t.Fatalf("get []byte %q = %+v %v, want %+v", k, got, ok, want)
		}
	}
}

// TestKeyTableAgainstAMap runs random sets, joined sets and deletes of short and long
// keys against a Go map: small key sets make long probe runs, growth and deletions
// that wrap around the end of the table.
func TestKeyTableAgainstAMap(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		universe := 5 + rng.IntN(400)
		var tb keyTable
		m := map[string]slot{}
		key := func() string {
			i := rng.IntN(universe)
			switch i % 4 {
			case 0:
				return fmt.Sprint(i) // short
			case 1:
				return strings.Repeat("k", inlineKey-2) + fmt.Sprintf("%02d", i%100) // exactly inline when i%100 < 100
			case 2:
				return fmt.Sprintf("a-long-key-of-more-than-sixteen-bytes-%d", i)
			}
			if i%8 == 3 {
				return "" // the empty key is a key
			}
			return fmt.Sprintf("%017d", i) // one byte too long to be inline
		}
		for op := range 3000 {
			k := key()
			switch r := rng.IntN(10); {
			case r < 4:
				s := slot{str: fmt.Sprint("v", op), meta: uint64(op)<<metaVerShift | uint64(TypeString)}
				tableSet(&tb, k, s)
				m[k] = s
			case r < 6:
				v := fmt.Sprint("kv", op)
				meta := uint64(op)<<metaVerShift | uint64(TypeString)
				tableSetJoinedH(&tb, hashKey(k), k+v, len(k), meta)
				m[k] = slot{str: v, meta: meta}
			case r < 7:
				s := slot{meta: uint64(op)<<metaVerShift | uint64(TypeHash)}
				tableSet(&tb, []byte(k), s)
				m[k] = s
			default:
				_, had := m[k]
				if got := tableDelete(&tb, k); got != had {
					t.Fatalf("seed %d op %d: delete %q = %v, want %v", seed, op, k, got, had)
				}
				delete(m, k)
			}
			if op%50 == 0 || op > 2900 {
				checkTable(t, &tb, m)
			}
		}
	}
}

// frozenContent is what a frozen table holds, as keys and slots.
func frozenContent(t *testing.T, f *frozenTable) map[string]slot {
	t.Helper()
	got := map[string]slot{}
	for p := range f.pages() {
		for _, e := range f.page(p) {
			if e.meta == 0 {
				continue
			}
			k := e.keyOf()
			if _, dup := got[k]; dup {
				t.Fatalf("frozen table gives %q twice", k)
			}
			got[k] = e.slot()
		}
	}
	if len(got) != f.n {
		t.Fatalf("frozen table gives %d keys, counts %d", len(got), f.n)
	}
	return got
}

// A frozen table stays as the table was when it was frozen, whatever the live table does
// meanwhile: overwrites, deletions that shift entries back across pages, growth to a
// new array, and being replaced (FLUSHDB); and once it is done, the live table stops
// saving pages for it.
func TestKeyTableFreezeIsCopyOnWrite(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		var tb keyTable
		m := map[string]slot{}
		set := func(k string, op int) {
			s := slot{str: fmt.Sprint("v", op), meta: uint64(op)<<metaVerShift | uint64(TypeString)}
			if op%3 == 0 {
				tableSetJoinedH(&tb, hashKey(k), k+s.str, len(k), s.meta)
			} else {
				tableSet(&tb, k, s)
			}
			m[k] = s
		}
		key := func(i int) string {
			if i%2 == 0 {
				return fmt.Sprint("k", i)
			}
			return fmt.Sprintf("a-long-key-of-more-than-sixteen-bytes-%d", i)
		}
		for op := range 500 + rng.IntN(1000) {
			set(key(rng.IntN(2000)), op)
		}
		f, want := tb.freeze(), maps.Clone(m)
		grew := false
		for op := range 3000 {
			k := key(rng.IntN(4000)) // half of them new: the table grows
			if rng.IntN(3) == 0 {
				tableDelete(&tb, k)
				delete(m, k)
			} else {
				before := len(tb.ents)
				set(k, 10000+op)
				grew = grew || len(tb.ents) != before
			}
			if op%500 == 0 {
				if got := frozenContent(t, f); !maps.Equal(got, want) {
					t.Fatalf("seed %d op %d: the frozen table changed", seed, op)
				}
			}
		}
		checkTable(t, &tb, m) // the live table is whole
		if !grew {
			t.Fatalf("seed %d: the table never grew while frozen", seed)
		}
		if got := frozenContent(t, f); !maps.Equal(got, want) {
			t.Fatalf("seed %d: the frozen table changed", seed)
		}

		// Frozen again, done, then changed: no page is saved any more.
		f2 := tb.freeze()
		f2.done = true
		for k := range m {
			tableDelete(&tb, k)
			delete(m, k)
			break
		}
		for i, page := range f2.saved {
			if page != nil {
				t.Fatalf("seed %d: page %d saved for a done frozen table", seed, i)
			}
		}
		if tb.frozen != nil {
			t.Fatalf("seed %d: the table still points to a done frozen table", seed)
		}
		checkTable(t, &tb, m)

		// Frozen, then replaced as FLUSHDB does: the frozen table keeps the old array.
		f3, want3 := tb.freeze(), maps.Clone(m)
		tb = keyTable{}
		set("after-flush", 1)
		if got := frozenContent(t, f3); !maps.Equal(got, want3) {
			t.Fatalf("seed %d: the frozen table changed after a flush", seed)
		}
	}
}

// TestKeyTableLongKeyValueIsItsOwn: a long key's slot holds only the value, and the key
// each gives is the key, for a value set either way.
func TestKeyTableLongKeyValueIsItsOwn(t *testing.T) {
	var tb keyTable
	long := strings.Repeat("x", 40)
	tableSet(&tb, long, slot{str: "value", meta: 1})
	tableSetJoinedH(&tb, hashKey(long+"2"), long+"2"+"other", len(long)+1, 1)
	for _, c := range []struct{ k, v string }{{long, "value"}, {long + "2", "other"}} {
		s, ok := tableGet(&tb, c.k)
		if !ok || s.str != c.v {
			t.Fatalf("%q: %+v %v, want value %q", c.k, s, ok, c.v)
		}
	}
	n := 0
	tb.each(func(k string, s slot) bool {
		n++
		if k != long && k != long+"2" {
			t.Fatalf("each gave key %q", k)
		}
		return true
	})
	if n != 2 {
		t.Fatalf("each gave %d keys, want 2", n)
	}
}

// TestKeyTableLookupsDoNotAllocate: a lookup by []byte (with the shard's hash) of a
// short or a long key, and an overwrite of a short key's slot, allocate nothing.
func TestKeyTableLookupsDoNotAllocate(t *testing.T) {
	var tb keyTable
	short := []byte("key:000000123456")
	long := []byte("a-key-that-is-much-longer-than-thirty-two-bytes")
	tableSet(&tb, short, slot{str: "v", meta: 1})
	tableSet(&tb, long, slot{str: "v", meta: 1})
	keys := [][]byte{short, long}
	shards := []int{shardOfString(string(short)), shardOfString(string(long))}
	if n := testing.AllocsPerRun(100, func() {
		for i, k := range keys {
			if _, ok := tableGet(&tb, k); !ok {
				t.Fatalf("lost %q", k)
			}
			if got := shardOf(k); got != shards[i] {
				t.Fatalf("shard of %q: %d by bytes, %d by string", k, got, shards[i])
			}
		}
		tableSet(&tb, short, slot{str: "w", meta: 1})
	}); n != 0 {
		t.Fatalf("%v allocations per round of lookups and an overwrite, want 0", n)
	}
}

// TestRandomKeySpreadsOverTheKeyspace: RANDOMKEY starts at a random entry of a random
// shard's table, so it returns many keys, not the first key of each shard.
func TestRandomKeySpreadsOverTheKeyspace(t *testing.T) {
	h := newHarness(t)
	const keys = 20000 // ~78 per shard
	for i := range keys {
		h.do("SET", fmt.Sprint("k", i), "v")
	}
	seen := map[string]bool{}
	const draws = 2000
	for range draws {
		k, ok := h.applied("RANDOMKEY").(string)
		if !ok {
			t.Fatal("RANDOMKEY found no key")
		}
		seen[k] = true
	}
	// Drawing uniformly, 2000 draws from 20000 keys repeat about 100 times; the first
	// key of each shard could give at most 256 distinct ones.
	if len(seen) < draws*3/4 {
		t.Fatalf("%d distinct keys in %d draws from %d", len(seen), draws, keys)
	}
}

// randomKeys1M returns 1M distinct 16-byte keys and, laid out one after the other so that
// reading them does not miss the cache, 1<<20 of them drawn at random.
func randomKeys1M() (keys [][]byte, draws []byte) {
	keys = make([][]byte, 1_000_000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%012d", i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	draws = make([]byte, 0, 16<<20)
	for range 1 << 20 {
		draws = append(draws, keys[rng.IntN(len(keys))]...)
	}
	return keys, draws
}

// setAll sets every key, then, timed, b.N of the draws.
func setAll(b *testing.B, keys [][]byte, draws []byte, set func(k []byte)) {
	for _, k := range keys {
		set(k)
	}
	b.ResetTimer()
	for i := range b.N {
		j := (i & (1<<20 - 1)) * 16
		set(draws[j : j+16 : j+16])
	}
}

// BenchmarkKeyTableSET1M overwrites random keys of a 1M-key keyspace split over 256 key
// tables, as the store splits it: the data structure alone, without the store around it.
// BenchmarkGoMapSET1M is the same over the map[string]slot the store kept before.
func BenchmarkKeyTableSET1M(b *testing.B) {
	keys, draws := randomKeys1M()
	var ts [numShards]keyTable
	val := []byte("0123456789abcdef0123456789abcdef")
	set := func(k []byte) {
		h := hashKey(k)
		t := &ts[h%numShards]
		meta := uint64(TypeString)
		if old, ok := tableGetH(t, h, k); ok {
			meta = old.meta + 1<<metaVerShift
		}
		tableSetH(t, h, k, slot{str: string(val), meta: meta})
	}
	setAll(b, keys, draws, set)
}

func BenchmarkGoMapSET1M(b *testing.B) {
	keys, draws := randomKeys1M()
	var ms [numShards]map[string]slot
	for i := range ms {
		ms[i] = map[string]slot{}
	}
	val := []byte("0123456789abcdef0123456789abcdef")
	set := func(k []byte) {
		m := ms[hashKey(k)%numShards]
		meta := uint64(TypeString)
		if old, ok := m[string(k)]; ok {
			meta = old.meta + 1<<metaVerShift
		}
		kv := string(k) + string(val) // the key and the value in one allocation, as before
		m[kv[:len(k)]] = slot{str: kv[len(k):], meta: meta}
	}
	setAll(b, keys, draws, set)
}

// TestReadersRunWithTheApplier: GETs on other goroutines run while the applier sets and
// deletes keys, growing the tables and moving entries back on deletion. A reader sees
// either nothing or a value written for the key it asked for. (CI runs it with -race.)
func TestReadersRunWithTheApplier(t *testing.T) {
	s := New()
	const keys, rounds = 2000, 40
	key := func(i int) string {
		if i%2 == 0 {
			return fmt.Sprint("k", i)
		}
		return fmt.Sprint("a-long-key-number-", i)
	}
	stop := make(chan struct{})
	errc := make(chan error, 4)
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				k := key(rng.IntN(keys))
				w := tree{}
				s.Read(0, 1e12, [][]byte{[]byte("GET"), []byte(k)}, &w)
				if v, ok := w.out[0].(string); ok && !strings.HasPrefix(v, k+"=") {
					errc <- fmt.Errorf("GET %s = %q", k, v)
					return
				}
			}
		}()
	}
	index := uint64(0)
	for round := range rounds {
		var batch []byte
		for i := range keys {
			k := key(i)
			if (i+round)%3 == 0 {
				batch = AppendCommand(batch, 0, [][]byte{[]byte("DEL"), []byte(k)})
			} else {
				batch = AppendCommand(batch, 0, [][]byte{[]byte("SET"), []byte(k), fmt.Appendf(nil, "%s=%d", k, round)})
			}
		}
		index++
		if err := s.Apply(Entry{Index: index, Time: 1e12, Data: batch}, nil); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	want := 0
	for i := range keys {
		if (i+rounds-1)%3 != 0 {
			want++
		}
	}
	if n := s.DBSize(0); n != want {
		t.Fatalf("DBSIZE %d after the last round, want %d", n, want)
	}
}

// BenchmarkKeyTableGrowFresh inserts b.N distinct keys into empty tables, so that the
// tables grow from nothing, as a store's do under a load of new keys. Run it in a fresh
// process (-count=1) to see the arrays come from the OS untouched.
func BenchmarkKeyTableGrowFresh(b *testing.B) {
	var ts [numShards]keyTable
	val := "0123456789abcdef0123456789abcdef"
	k := []byte("key:000000000000")
	b.ResetTimer()
	for i := range b.N {
		binary.BigEndian.PutUint64(k[8:], uint64(i))
		h := hashKey(k)
		tableSetH(&ts[h%numShards], h, k, slot{str: val, meta: uint64(TypeString)})
	}
}
