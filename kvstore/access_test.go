package kvstore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// trackedHarness is a harness whose store tracks accesses under policy; its commands
// run at the harness's clock.
func trackedHarness(t *testing.T, policy EvictPolicy) *harness {
	h := newHarness(t)
	h.s.SetEvictPolicy(policy)
	return h
}

// Every key's clock stays with its key while the table grows, and while deletions move
// later entries back into the gaps they leave: against a model of the clock each key
// should have, through random writes, reads and deletions.
func TestAccessClocksStayWithTheirKeys(t *testing.T) {
	now := int64(1_700_000_000_000)
	acc := newAccessClock()
	acc.mode.Store(uint32(accessLRU))
	tb := keyTable{acc: acc}
	model := map[string]uint32{}
	rnd := rand.New(rand.NewPCG(3, 4))
	for step := range 20000 {
		now += 1000 // every step a second later: each access leaves a clock of its own
		acc.writeNow = now
		key := fmt.Sprintf("key-%d", rnd.IntN(500))
		if step%7 == 0 {
			key += "-long-enough-not-to-be-inline"
		}
		switch r := rnd.IntN(10); {
		case r < 5:
			tableSet(&tb, key, slot{str: "v", meta: uint64(TypeString)})
			if _, ok := model[key]; !ok { // a new key's clock (Ctx.storeAt counts the overwrite)
				model[key] = seconds(now)
			}
		case r < 8:
			if _, ok := model[key]; ok {
				touchKey(&tb, key, now)
				model[key] = seconds(now)
			}
		default:
			if tableDelete(&tb, key) != (model[key] != 0) {
				t.Fatalf("step %d: delete %q disagrees with the model", step, key)
			}
			delete(model, key)
		}
		if step%500 != 0 {
			continue
		}
		for k, want := range model {
			if got, m := clockOf(&tb, []byte(k)); m != accessLRU || got != want {
				t.Fatalf("step %d: %q has clock %d (%v), want %d", step, k, got, m, want)
			}
		}
	}
	// switching policy starts every clock afresh
	now += 5000
	acc.mode.Store(uint32(accessLFU))
	tb.resetClocks(accessLFU, now)
	for k := range model {
		if got, m := clockOf(&tb, []byte(k)); m != accessLFU || got != minutes(now)<<8|lfuInitVal {
			t.Fatalf("%q under LFU: clock %x", k, got)
		}
	}
	// a table without tracking has no clocks to read
	if _, m := clockOf(&keyTable{ents: tb.ents, n: tb.n}, []byte("key-1")); m != accessOff {
		t.Fatal("a clock read from a table that tracks nothing")
	}
}

// OBJECT IDLETIME is the seconds since the key's last access under an LRU policy. Reads,
// writes and TOUCH are accesses; TYPE, TTL, EXISTS and OBJECT are not (Redis's
// LOOKUP_NOTOUCH).
func TestObjectIdletimeUnderLRU(t *testing.T) {
	h := trackedHarness(t, EvictAllKeysLRU)
	h.do("SET", "k", "hello")
	h.do("RPUSH", "l", "a")
	h.now += 7000
	h.expect(int64(7), "OBJECT", "IDLETIME", "k")
	h.expect(int64(7), "OBJECT", "IDLETIME", "k") // OBJECT itself is no access
	h.expect(Status("string"), "TYPE", "k")
	h.expect(int64(-1), "TTL", "k")
	h.expect(int64(-1), "PTTL", "k")
	h.expect(int64(1), "EXISTS", "k")
	h.expect(int64(7), "OBJECT", "IDLETIME", "k")
	h.expect("hello", "GET", "k")
	h.expect(int64(0), "OBJECT", "IDLETIME", "k")
	h.expect(int64(7), "OBJECT", "IDLETIME", "l")
	h.expect(int64(1), "TOUCH", "l", "nosuch")
	h.expect(int64(0), "OBJECT", "IDLETIME", "l")
	h.expect(Err(errNoLFU), "OBJECT", "FREQ", "k")
	h.now += 3000
	h.do("RPUSH", "l", "b") // a write is an access
	h.do("APPEND", "k", "!")
	for key, want := range map[string]int64{"l": 0, "k": 0} {
		if got := h.do("OBJECT", "IDLETIME", key); got != want {
			t.Fatalf("OBJECT IDLETIME %s after a write: %v", key, got)
		}
	}
	// a read inside MULTI, run by the applier, is an access too
	h.now += 4000
	h.do("MULTI")
	h.do("GET", "k")
	h.do("EXEC")
	if got := h.do("OBJECT", "IDLETIME", "k"); got != int64(0) {
		t.Fatalf("OBJECT IDLETIME k after GET in MULTI: %v", got)
	}
	// a memcached get is an access
	h.now += 2000
	if _, ok := h.s.MCGet([]byte("k"), h.now); !ok {
		t.Fatal("MCGet k")
	}
	if got := h.do("OBJECT", "IDLETIME", "k"); got != int64(0) {
		t.Fatalf("OBJECT IDLETIME k after a memcached get: %v", got)
	}
	// every policy but the LFU ones keeps the LRU clock, as Redis does
	h.now += 5000
	for _, p := range []EvictPolicy{EvictVolatileTTL, EvictNone, EvictAllKeysRandom, EvictVolatileRandom, EvictVolatileLRU} {
		h.s.SetEvictPolicy(p)
		if got := h.do("OBJECT", "IDLETIME", "k"); got != int64(5) {
			t.Fatalf("OBJECT IDLETIME under %v: %v, want 5", p, got)
		}
	}
}

// OBJECT FREQ under an LFU policy is Redis's logarithmic counter: 5 for a new key, 6
// after its first access (certain), down by one for each idle minute.
func TestObjectFreqUnderLFU(t *testing.T) {
	h := trackedHarness(t, EvictAllKeysLFU)
	h.do("SET", "s", "hello")
	h.expect(int64(5), "OBJECT", "FREQ", "s")
	h.expect("hello", "GET", "s")
	h.expect(int64(6), "OBJECT", "FREQ", "s")
	h.expect(Status("string"), "TYPE", "s")
	h.expect(int64(6), "OBJECT", "FREQ", "s")
	h.expect(Err(errLFUIdle), "OBJECT", "IDLETIME", "s")
	h.expect(nil, "OBJECT", "FREQ", "nosuch")
	h.now += 2*60_000 + 1
	if got := h.do("OBJECT", "FREQ", "s"); got != int64(4) {
		t.Fatalf("OBJECT FREQ after two idle minutes: %v, want 4", got)
	}
	// the counter grows ever more slowly, and never past 255
	for range 3000 {
		h.do("GET", "s")
	}
	f := h.do("OBJECT", "FREQ", "s").(int64)
	if f < 15 || f > 60 {
		t.Fatalf("OBJECT FREQ after 3000 reads: %d, want the logarithmic counter's 15..60", f)
	}
	if c := h.s.acc.lfuLogIncr(255); c != 255 {
		t.Fatalf("the counter passed 255: %d", c)
	}
	// lfu-log-factor 0 counts every access; lfu-decay-time 0 never decays
	h.s.SetLFU(0, 0)
	for range 3 {
		h.do("GET", "s")
	}
	h.now += 10 * 60_000
	if got := h.do("OBJECT", "FREQ", "s"); got != f+3 {
		t.Fatalf("OBJECT FREQ after 3 more reads at lfu-log-factor 0, 10 minutes idle at lfu-decay-time 0: %v, want %d", got, f+3)
	}
}

// Under an LRU policy the victims are the keys idle longest; under an LFU one, the
// least often used: half the keys read, half not, every victim is one not read.
func TestEvictionByAccess(t *testing.T) {
	for _, policy := range []EvictPolicy{EvictAllKeysLRU, EvictAllKeysLFU, EvictVolatileLRU, EvictVolatileLFU} {
		t.Run(policy.String(), func(t *testing.T) {
			h := trackedHarness(t, policy)
			for i := range 200 {
				h.do("SET", fmt.Sprintf("k%d", i), "0123456789", "EX", "1000")
			}
			h.now += 100_000
			for i := range 100 {
				h.do("GET", fmt.Sprintf("k%d", i))
			}
			// 20 samples a victim: the 20th pick misses the 81 idle keys left with a
			// chance of (119/200)^20, 3e-5 (and the seed is fixed)
			rnd := rand.New(rand.NewPCG(5, 6))
			victims := h.s.EvictionVictims(policy, 20, 1<<30, 20, h.now, rnd)
			if len(victims) != 20 {
				t.Fatalf("%d victims, want 20", len(victims))
			}
			for _, v := range victims {
				var i int
				fmt.Sscanf(v.Key, "k%d", &i)
				if i < 100 {
					t.Fatalf("picked %s, which was read, over the keys that were not: %v", v.Key, victims)
				}
			}
		})
	}
}

// Readers touch clocks under their shard's read lock while the applier writes and the
// policy changes: run with -race, this is where unsynchronised clock updates would show.
func TestAccessTrackingConcurrentReaders(t *testing.T) {
	h := trackedHarness(t, EvictAllKeysLRU)
	for i := range 100 {
		h.do("SET", fmt.Sprintf("k%d", i), "v")
	}
	var reads [3]atomic.Int64
	stopReaders := runReaders(len(reads), func(r, i int) {
		var w tree
		h.s.Read(0, 1_700_000_000_000, [][]byte{[]byte("GET"), fmt.Appendf(nil, "k%d", (i*7+r)%150)}, &w)
		reads[r].Add(1)
	})
	// write (and switch policy) until every reader has read a while alongside
	policies := []EvictPolicy{EvictAllKeysLFU, EvictNone, EvictVolatileLRU, EvictAllKeysLRU}
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 2000 || reads[0].Load() < 1000 || reads[1].Load() < 1000 || reads[2].Load() < 1000; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("the readers read %d, %d and %d times in 10 s", reads[0].Load(), reads[1].Load(), reads[2].Load())
		}
		h.do("SET", fmt.Sprintf("k%d", 100+i%50), "w") // new keys grow the tables
		if i%500 == 0 {
			h.s.SetEvictPolicy(policies[i/500%len(policies)])
		}
	}
	stopReaders()
	// a switch to LFU and back starts every key's clock at the second it happens
	lo := seconds(time.Now().UnixMilli())
	h.s.SetEvictPolicy(EvictAllKeysLFU)
	h.s.SetEvictPolicy(EvictAllKeysLRU)
	hi := seconds(time.Now().UnixMilli())
	for i := range 150 {
		key := fmt.Appendf(nil, "k%d", i)
		v, m := clockOf(&h.s.shards[shardOf(key)].dbs[0].keys, key)
		if m != accessLRU || v < lo || v > hi {
			t.Fatalf("k%d: clock %d (mode %d), want a second in [%d, %d]", i, v, m, lo, hi)
		}
	}
}

// A memcached read sees, before it counts, the seconds since the key's last access and
// whether it was read since it was last stored (mg's l and h, me's la and fetch): a
// read sets the flag, a store clears it, a peek (mg u, me) leaves both.
func TestMemcachedReadsSeeIdleAndFetched(t *testing.T) {
	h := newHarness(t)
	mcSet := func(value string) {
		h.index++
		data := AppendMCStore(nil, MCSet, []byte("k"), []byte(value), 0, 0, MCNoValue, MCNoValue)
		var w tree // the proposing member's reply, which reads the item back: no access
		if err := h.s.Apply(Entry{Index: h.index, Term: 1, Time: h.now, Data: data}, &w); err != nil {
			t.Fatal(err)
		}
	}
	read := func(access bool, wantIdle int64, wantFetched bool) {
		t.Helper()
		get := h.s.MCPeek
		if access {
			get = h.s.MCGet
		}
		it, ok := get([]byte("k"), h.now)
		if !ok || it.Idle != wantIdle || it.Fetched != wantFetched {
			t.Fatalf("read (access %v): %+v, want idle %d fetched %v", access, it, wantIdle, wantFetched)
		}
	}
	mcSet("a")
	h.now += 3000
	h.s.MCEach(h.now, func(key string, it MCItem) { // lru_crawler metadump, stats items
		if key != "k" || it.Idle != 3 || it.Fetched {
			t.Fatalf("MCEach: %q %+v, want k idle 3 never fetched", key, it)
		}
	})
	read(false, 3, false) // a peek is no access
	read(true, 3, false)  // the first read: never read before
	read(true, 0, true)
	h.now += 2000
	mcSet("b") // a store over the key: an access, and a new item, never read
	read(false, 0, false)
	h.now += 4000
	h.expect("b", "GET", "k") // a Redis read is a read too
	read(false, 0, true)
	h.do("APPEND", "k", "c") // looked up, then stored
	read(false, 0, false)
	h.applied("GET", "k") // a read on the applier: in MULTI, in a script
	read(false, 0, true)
	h.do("APPEND", "k", "d")
	h.expect(int64(1), "EVAL", "return redis.call('strlen', KEYS[1]) > 0 and 1 or 0", "1", "k")
	read(false, 0, true)
	h.do("APPEND", "k", "e")
	h.do("COPY", "k", "k2") // its source is looked up as a read
	read(false, 0, true)
	// as memcached: an add that finds the item is no fetch; a counter changed in place
	// (its digits fit) stays fetched, a longer one is a new item
	apply := func(data []byte) {
		h.index++
		if err := h.s.Apply(Entry{Index: h.index, Term: 1, Time: h.now, Data: data}, &tree{}); err != nil {
			t.Fatal(err)
		}
	}
	mcSet("8")
	apply(AppendMCStore(nil, MCAdd, []byte("k"), []byte("x"), 0, 0, MCNoValue, MCNoValue))
	read(false, 0, false)
	read(true, 0, false)
	apply(AppendMCStore(nil, MCAdd, []byte("k"), []byte("x"), 0, 0, MCNoValue, MCNoValue))
	read(false, 0, true)
	apply(AppendMCIncr(nil, []byte("k"), false, 1, MCNoValue, MCNoValue, 0, MCNoValue)) // 9
	read(false, 0, true)
	apply(AppendMCIncr(nil, []byte("k"), false, 1, MCNoValue, MCNoValue, 0, MCNoValue)) // 10
	read(false, 0, false)
	// under an LFU policy the clock keeps the minute of the last access: idle to the
	// minute (the switch of policy starts every clock anew, at the wall clock's minute:
	// the store sets the key's at the harness's)
	h.s.SetEvictPolicy(EvictAllKeysLFU)
	h.now += 5000
	mcSet("c")
	read(true, 0, false)
	read(false, 0, true)
	h.now += 3*60_000 + 5000
	read(false, 180, true)
	h.s.MCEach(h.now, func(key string, it MCItem) {
		if key == "k" && (it.Idle != 180 || !it.Fetched) {
			t.Fatalf("MCEach under LFU: %q %+v, want idle 180 fetched", key, it)
		}
	})
	read(true, 180, true)
	read(false, 0, true)
}

// memcached's expired_unfetched and evicted_unfetched: of the keys that expire or are
// evicted, those never read since they were stored.
func TestUnfetchedExpiriesAndEvictions(t *testing.T) {
	h := newHarness(t)
	for _, k := range []string{"read", "stored-since", "unread", "victim-read", "victim-unread"} {
		h.do("SET", k, "v", "PX", "1000")
	}
	h.expect("v", "GET", "read")
	h.expect("v", "GET", "victim-read")
	h.expect("v", "GET", "stored-since")
	h.do("SET", "stored-since", "w", "KEEPTTL") // a store: unread again
	victims := []Victim{{Key: "victim-read", Ver: h.rawItem("victim-read").ver}, {Key: "victim-unread", Ver: h.rawItem("victim-unread").ver}}
	if got := h.applyData(AppendEvict(nil, victims)); got != int64(2) {
		t.Fatalf("evicted %v, want 2", got)
	}
	h.now += 2000
	h.applyData(AppendExpire(nil, 0, []string{"read", "stored-since", "unread"}))
	if exp, ev := h.s.UnfetchedCounts(); exp != 2 || ev != 1 || h.s.ExpiredCount() != 3 || h.s.EvictedCount() != 2 {
		t.Fatalf("unfetched: %d of %d expired, %d of %d evicted; want 2 of 3 and 1 of 2", exp, h.s.ExpiredCount(), ev, h.s.EvictedCount())
	}
}

// The LRU clock wraps as Redis's does, every 2^24 seconds (194 days): a key idle across
// the wrap is still as idle as it is, and RESTORE's IDLETIME past the clock's start
// sets it half the clock's range back.
func TestIdleTimeAcrossTheClockWrap(t *testing.T) {
	wrap := int64(clockMask+1) * 1000 // the unix ms at which seconds() wraps to 0
	h := newHarness(t)
	h.now = wrap - 10_000
	h.do("SET", "k", "v")
	h.now = wrap + 5_000
	h.expect(int64(14), "OBJECT", "IDLETIME", "k") // Redis counts the wrap's second too
	if got := lruClockIdle(100, 50_000); got != uint32((50+clockMask/2)%clockMask) {
		t.Fatalf("the clock of a key idle 100 s at 50 s past the clock's start: %d", got)
	}
	if got := idleSeconds(lruClockIdle(100, 500_000), 500_000); got != 100 {
		t.Fatalf("idle 100 s at 500 s: %d", got)
	}
}

// RESTORE's IDLETIME sets a key's clock under an LRU policy, FREQ its counter under an
// LFU one; each is ignored under the other.
func TestRestoreSetsAccessClocks(t *testing.T) {
	h := trackedHarness(t, EvictAllKeysLRU)
	h.do("SET", "k", "hello")
	payload := h.do("DUMP", "k").(string)
	h.expect(Status("OK"), "RESTORE", "a", "0", payload, "IDLETIME", "100")
	h.expect(int64(100), "OBJECT", "IDLETIME", "a")
	h.expect(Status("OK"), "RESTORE", "b", "0", payload, "FREQ", "42")
	h.expect(int64(0), "OBJECT", "IDLETIME", "b")
	h.s.SetEvictPolicy(EvictVolatileLFU)
	h.expect(Status("OK"), "RESTORE", "c", "0", payload, "FREQ", "42")
	h.expect(int64(42), "OBJECT", "FREQ", "c")
	h.expect(Status("OK"), "RESTORE", "d", "0", payload, "IDLETIME", "100")
	h.expect(int64(lfuInitVal), "OBJECT", "FREQ", "d")
}

// A member that installs a snapshot keeps tracking accesses: the restored tables start
// with fresh clocks, and keys written later get theirs.
func TestAccessTrackingSurvivesRestore(t *testing.T) {
	src := trackedHarness(t, EvictAllKeysLRU)
	src.do("SET", "k", "v")
	var snap bytes.Buffer
	if err := src.s.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	h := trackedHarness(t, EvictAllKeysLRU)
	if err := h.s.Restore(&snap); err != nil {
		t.Fatal(err)
	}
	h.now = time.Now().UnixMilli() + 10_000 // the restored clocks are the restore's time
	if got, ok := h.do("OBJECT", "IDLETIME", "k").(int64); !ok || got < 9 || got > 11 {
		t.Fatalf("OBJECT IDLETIME of a restored key 10 s later: %v", got)
	}
	h.index = src.index
	h.do("SET", "new", "v")
	if got := h.do("OBJECT", "IDLETIME", "new"); got != int64(0) {
		t.Fatalf("OBJECT IDLETIME of a key written after the restore: %v", got)
	}
}

// How close sampled LRU comes to the true LRU: of 1000 keys last accessed a second
// apart, how many of 100 victims are among the oldest 200. Five samples a victim alone
// find one there with a chance of 1-0.8^5, 67 in 100; the pool, which carries the best
// samples over to the next victims, finds 72 on average over these 20 seeds (59-80).
func TestEvictionLRUApproximation(t *testing.T) {
	h := trackedHarness(t, EvictAllKeysLRU)
	for i := range 1000 {
		h.now += 1000
		h.do("SET", fmt.Sprintf("k%d", i), "v")
	}
	h.now += 1000
	old, all := 0, 0
	for seed := range 20 {
		rnd := rand.New(rand.NewPCG(uint64(seed), 8))
		victims := h.s.EvictionVictims(EvictAllKeysLRU, 5, 1<<40, 100, h.now, rnd)
		all += len(victims)
		for _, v := range victims {
			var i int
			fmt.Sscanf(v.Key, "k%d", &i)
			if i < 200 {
				old++
			}
		}
	}
	if all != 2000 || old < 20*70 {
		t.Fatalf("%d of %d victims among the oldest fifth, want 70 in 100", old, all)
	}
}
