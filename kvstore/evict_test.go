package kvstore

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// applyData applies one entry of raw op bytes through the harness and returns its reply.
func (h *harness) applyData(data []byte) any {
	h.t.Helper()
	h.index++
	var w tree
	if err := h.s.Apply(Entry{Index: h.index, Term: 1, Time: h.now, Data: data}, &w); err != nil {
		h.t.Fatal(err)
	}
	if len(w.out) != 1 {
		h.t.Fatalf("want one reply, got %#v", w.out)
	}
	return w.out[0]
}

// An evict op deletes a victim that still has the version it was picked at, in the
// database it names, counts it and publishes "evicted"; a victim written since, or gone,
// is spared; two replicas end alike.
func TestEvictOpDeletesUnchangedVictims(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	var victims []Victim
	for _, h := range []*harness{a, b} {
		h.do("SET", "same", "1")
		h.do("SET", "rewritten", "1")
		h.do("RPUSH", "list", "x", "y")
		h.db = 3
		h.do("SET", "other-db", "1")
		h.db = 0
	}
	for _, k := range []struct {
		db  int
		key string
	}{{0, "same"}, {0, "rewritten"}, {0, "list"}, {3, "other-db"}, {0, "absent"}} {
		victims = append(victims, Victim{DB: k.db, Key: k.key, Ver: a.s.KeyVersion(k.db, []byte(k.key), a.now)})
	}
	for _, h := range []*harness{a, b} {
		h.do("SET", "rewritten", "2") // after it was picked: spared
		h.do("CONFIG", "SET", "notify-keyspace-events", "Ee")
		if got := h.applyData(AppendEvict(nil, victims)); got != int64(4-1) {
			t.Fatalf("evicted %v, want 3", got)
		}
		h.expect(int64(0), "EXISTS", "same", "list")
		h.expect("2", "GET", "rewritten")
		h.db = 3
		h.expect(int64(0), "EXISTS", "other-db")
		h.db = 0
		if n := h.s.EvictedCount(); n != 3 {
			t.Fatalf("EvictedCount %d, want 3", n)
		}
	}
	if a.s.Digest() != b.s.Digest() {
		t.Fatal("replicas diverged")
	}
}

// EvictionVictims picks, under each policy, only its candidates, different keys, until
// they hold what is asked or max are picked; nothing when there are no candidates.
func TestEvictionVictimsFollowThePolicy(t *testing.T) {
	h := newHarness(t)
	rnd := rand.New(rand.NewPCG(1, 2))
	all := []EvictPolicy{EvictAllKeysRandom, EvictVolatileRandom, EvictVolatileTTL,
		EvictAllKeysLRU, EvictVolatileLRU, EvictAllKeysLFU, EvictVolatileLFU}
	for _, p := range all {
		if v := h.s.EvictionVictims(p, 5, 1<<20, 10, h.now, rnd); len(v) != 0 {
			t.Fatalf("%v on an empty store: %v", p, v)
		}
	}
	for i := range 200 {
		h.do("SET", fmt.Sprintf("k%d", i), "0123456789")
	}
	for _, p := range all {
		if v := h.s.EvictionVictims(p, 5, 1<<20, 10, h.now, rnd); p.volatile() && len(v) != 0 {
			t.Fatalf("%v without keys that expire: %v", p, v)
		}
	}
	for i := range 50 {
		h.do("SET", fmt.Sprintf("t%d", i), "0123456789", "PX", fmt.Sprint(1000+i))
	}
	h.db = 5
	h.do("SET", "in-db-5", "x")
	h.db = 0
	for _, p := range all {
		h.s.SetEvictPolicy(p) // the access clocks, for LRU and LFU
		v := h.s.EvictionVictims(p, 5, 1<<30, 40, h.now, rnd)
		if len(v) < 30 || len(v) > 40 {
			t.Fatalf("%v: %d victims for more than the keyspace holds, at most 40", p, len(v))
		}
		seen := map[Victim]bool{}
		for _, x := range v {
			if x.Bytes <= len(x.Key) || x.Ver != h.s.KeyVersion(x.DB, []byte(x.Key), h.now) {
				t.Fatalf("%v: victim %+v: bytes or version wrong", p, x)
			}
			if p.volatile() && x.Key[0] != 't' {
				t.Fatalf("%v picked %q, which does not expire", p, x.Key)
			}
			x.Bytes = 0
			if seen[x] {
				t.Fatalf("%v picked %q twice", p, x.Key)
			}
			seen[x] = true
		}
		if one := h.s.EvictionVictims(p, 5, 1, 40, h.now, rnd); len(one) != 1 {
			t.Fatalf("%v: %d victims to free one byte", p, len(one))
		}
	}
	// with many samples volatile-ttl finds the key that expires first (t0: a chance in
	// 10^9 that 1000 draws among 50 keys all miss it)
	if v := h.s.EvictionVictims(EvictVolatileTTL, 1000, 1, 1, h.now, rnd); len(v) != 1 || v[0].Key != "t0" {
		t.Fatalf("volatile-ttl with 1000 samples picked %v, want t0", v)
	}
	for _, name := range []string{"noeviction", "allkeys-random", "volatile-random", "volatile-ttl",
		"allkeys-lru", "volatile-lru", "allkeys-lfu", "volatile-lfu"} {
		if p, ok := ParseEvictPolicy(name); !ok || p.String() != name {
			t.Fatalf("policy %q: %v %v", name, p, ok)
		}
	}
	if _, ok := ParseEvictPolicy("allkeys-mru"); ok {
		t.Fatal("allkeys-mru parsed")
	}
}

// BenchmarkEvictionVictims picks 1024 victims (one evict entry's worth) from 1M keys in
// database 0, as the evictor does for each round while over maxmemory.
func BenchmarkEvictionVictims(b *testing.B) { benchEvictionVictims(b, EvictAllKeysRandom) }

// BenchmarkEvictionVictimsLRU is BenchmarkEvictionVictims under allkeys-lru: five
// candidates sampled and compared for each victim.
func BenchmarkEvictionVictimsLRU(b *testing.B) { benchEvictionVictims(b, EvictAllKeysLRU) }

// BenchmarkEvictionVictimsVolatileLRU is BenchmarkEvictionVictimsLRU under
// volatile-lru, every key with a TTL: candidates come from the TTL maps.
func BenchmarkEvictionVictimsVolatileLRU(b *testing.B) { benchEvictionVictims(b, EvictVolatileLRU) }

func benchEvictionVictims(b *testing.B, policy EvictPolicy) {
	s, index := store1M()
	if policy.volatile() {
		var batch []byte
		for i := range 1_000_000 {
			batch = AppendCommand(batch, 0, [][]byte{[]byte("PEXPIRE"), fmt.Appendf(nil, "key:%07d", i), []byte("1000000")})
			if i%1000 == 999 {
				index++
				s.Apply(Entry{Index: index, Time: 1e12, Data: batch}, nil)
				batch = batch[:0]
			}
		}
	}
	s.SetEvictPolicy(policy)
	rnd := rand.New(rand.NewPCG(1, 2))
	b.ResetTimer()
	for range b.N {
		if v := s.EvictionVictims(policy, 5, 1<<40, 1024, 1e12, rnd); len(v) != 1024 {
			b.Fatalf("%d victims", len(v))
		}
	}
}
