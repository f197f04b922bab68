package kvstore

import (
	"cmp"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"unsafe"
)

// Eviction is Redis's maxmemory-policy: the random policies, volatile-ttl, and the LRU
// and LFU ones, which pick by the access clocks the store keeps under them (access.go).
//
// Which keys to evict is decided by the node that proposes writes, from its own memory
// and a sample of its own keyspace, and the decision travels in the log as an evict op
// naming each victim with the version it had when it was picked: every replica deletes
// the same keys, and a victim written since it was picked is spared on all of them
// alike. Applying a victim is Redis's eviction of a key: it is deleted, counted in
// evicted_keys and published as an "evicted" keyspace event.
//
//	evict := n:uvarint keyVer{n}   (apply.go's keyVer)

const opEvict byte = 10

// EvictPolicy is a maxmemory-policy that evicts.
type EvictPolicy int

const (
	EvictNone           EvictPolicy = iota // noeviction
	EvictAllKeysRandom                     // allkeys-random
	EvictVolatileRandom                    // volatile-random
	EvictVolatileTTL                       // volatile-ttl
	EvictAllKeysLRU                        // allkeys-lru
	EvictVolatileLRU                       // volatile-lru
	EvictAllKeysLFU                        // allkeys-lfu
	EvictVolatileLFU                       // volatile-lfu
)

// evictPolicyNames are the policies' maxmemory-policy names, by EvictPolicy.
var evictPolicyNames = []string{"noeviction", "allkeys-random", "volatile-random", "volatile-ttl",
	"allkeys-lru", "volatile-lru", "allkeys-lfu", "volatile-lfu"}

// volatile reports whether p evicts only keys with a TTL.
func (p EvictPolicy) volatile() bool {
	return p == EvictVolatileRandom || p == EvictVolatileTTL || p == EvictVolatileLRU || p == EvictVolatileLFU
}

func (p EvictPolicy) String() string {
	if int(p) < len(evictPolicyNames) && p >= 0 {
		return evictPolicyNames[p]
	}
	return "noeviction"
}

// ParseEvictPolicy returns the policy a maxmemory-policy name (lower case) names, if
// nanokv has it.
func ParseEvictPolicy(name string) (EvictPolicy, bool) {
	for i, n := range evictPolicyNames {
		if n == name {
			return EvictPolicy(i), true
		}
	}
	return EvictNone, false
}

// Victim is a key picked for eviction.
type Victim struct {
	DB    int
	Key   string
	Ver   uint64 // the key's version when it was picked: a later write spares it
	Bytes int    // what deleting it frees, by MEMORY USAGE's accounting
}

// AppendEvict appends an op that evicts victims.
func AppendEvict(dst []byte, victims []Victim) []byte {
	dst = append(dst, opEvict)
	dst = binary.AppendUvarint(dst, uint64(len(victims)))
	for _, v := range victims {
		dst = appendKeyVer(dst, v.DB, v.Key, v.Ver)
	}
	return dst
}

// applyEvict deletes the victims that still have the version they were picked at, and
// replies with how many it deleted.
func (s *Store) applyEvict(c *Ctx, d *decoder) {
	n := d.uvarint(maxArgs)
	evicted := 0
	for i := uint64(0); i < n && d.err == nil; i++ {
		db, key, ver := d.keyVer()
		if d.err != nil {
			break
		}
		c.DB = db
		id := shardOf(key)
		sh := &s.shards[id]
		sh.mu.Lock()
		s.beforeWrite(id)
		if it, ok := c.lookup(key); ok && it.ver == ver {
			if !fetchedIn(&sh.dbs[db].keys, key, false) {
				s.stats.EvictedUnfetched.Add(1)
			}
			c.removeKey(&sh.dbs[db], key)
			s.stats.EvictedKeys.Add(1)
			c.notify(notifyEvicted, "evicted", key)
			evicted++
		}
		sh.mu.Unlock()
	}
	c.W.Int(int64(evicted))
}

// EvictedCount is the number of keys evicted (INFO evicted_keys, memcached's
// evictions).
func (s *Store) EvictedCount() uint64 { return s.stats.EvictedKeys.Load() }

// usage is what the item of a key klen bytes long holds by MEMORY USAGE's accounting:
// its table entry (and the key when the entry cannot hold it), its value, and its
// collection's and TTL's entries.
func usage(klen int, it item) int {
	n := int(unsafe.Sizeof(kent{})) + len(it.str)
	if klen > inlineKey {
		n += klen
	}
	if it.coll != nil {
		n += it.coll.memUsage() + klen // and the colls map's entry
	}
	if it.hasTTL {
		n += 24 + klen // the ttl map's entry
	}
	return n
}

// EvictionVictims picks keys to evict under policy, until what they hold reaches need
// bytes or max keys are picked; none when there are no candidates (Redis's
// EVICT_FAIL). The random policies pick at random among the candidates; the others
// sample samples candidates for each victim and pick the best of them and of the best
// sampled before (Redis's eviction pool): the one that expires first, or was idle
// longest, or is least often used, at nowMS. It reads under the shards' read locks,
// from any goroutine; its picks depend on this node's keyspace and rnd, and are made
// replicated by the evict op that deletes them.
func (s *Store) EvictionVictims(policy EvictPolicy, samples int, need int64, max int, nowMS int64, rnd *rand.Rand) []Victim {
	var out []Victim
	picked := map[Victim]bool{}
	var got int64
	p := picker{s: s, rnd: rnd, policy: policy, volatile: policy.volatile(), samples: samples, now: nowMS}
	p.count()
	// a small keyspace brings the same keys up again: give up after as many repeats as
	// keys are wanted, and some
	for misses := 0; got < need && len(out) < max && misses < 4*max+8; {
		v, ok := p.pick(picked)
		if !ok {
			break // no candidate anywhere
		}
		key := Victim{DB: v.DB, Key: v.Key}
		if picked[key] {
			misses++
			continue
		}
		picked[key] = true
		out = append(out, v)
		got += int64(v.Bytes)
	}
	return out
}

// picker picks candidates at random: a database with the odds of its share of the
// candidates, then a shard at random, then an entry of its table (or of its TTL map).
type picker struct {
	s        *Store
	rnd      *rand.Rand
	policy   EvictPolicy
	volatile bool // candidates are the keys with a TTL
	samples  int  // maxmemory-samples: the candidates sampled for each victim
	now      int64
	counts   [NumDBs]int
	total    int
	// pool holds the best candidates sampled and not picked yet, by score, best last
	// (Redis's eviction pool): a victim is the best of all the samples so far, not of
	// its own few.
	pool []scored
}

// scored is a candidate and how good a victim it is, the higher the better.
type scored struct {
	v     Victim
	score int64
}

// evictPoolSize is how many candidates the pool keeps, Redis's EVPOOL_SIZE.
const evictPoolSize = 16

// offer puts a sampled candidate in the pool if it is among the best sampled.
func (p *picker) offer(v Victim, score int64) {
	if len(p.pool) == evictPoolSize && score <= p.pool[0].score {
		return
	}
	for _, c := range p.pool {
		if c.v.DB == v.DB && c.v.Key == v.Key {
			return // sampled again
		}
	}
	i, _ := slices.BinarySearchFunc(p.pool, score, func(c scored, s int64) int { return cmp.Compare(c.score, s) })
	p.pool = slices.Insert(p.pool, i, scored{v, score})
	if len(p.pool) > evictPoolSize {
		p.pool = slices.Delete(p.pool, 0, 1) // the worst
	}
}

// count counts each database's candidates, one shard at a time.
func (p *picker) count() {
	for i := range p.s.shards {
		sh := &p.s.shards[i]
		sh.mu.RLock()
		for db := range sh.dbs {
			n := sh.dbs[db].keys.n
			if p.volatile {
				n = len(sh.dbs[db].ttl)
			}
			p.counts[db] += n
			p.total += n
		}
		sh.mu.RUnlock()
	}
}

// pick picks one key under p.policy: for the random policies any candidate, for the
// others the best in the pool once p.samples more candidates not picked already have
// been offered to it.
func (p *picker) pick(picked map[Victim]bool) (Victim, bool) {
	if p.policy == EvictAllKeysRandom || p.policy == EvictVolatileRandom {
		v, _, ok := p.randomKey()
		return v, ok
	}
	for range max(p.samples, 1) {
		v, score, ok := p.randomKey()
		if !ok {
			break
		}
		if !picked[Victim{DB: v.DB, Key: v.Key}] {
			p.offer(v, score)
		}
	}
	if len(p.pool) == 0 {
		// every sample was picked already: one of them, for the caller to count
		v, _, ok := p.randomKey()
		return v, ok
	}
	best := p.pool[len(p.pool)-1]
	p.pool = p.pool[:len(p.pool)-1]
	return best.v, true
}

// randomKey returns a candidate at random, and its score. A shard without one sends it
// on to the next; a database without one (the counts are a moment old) to the next
// database.
func (p *picker) randomKey() (Victim, int64, bool) {
	if p.total == 0 {
		return Victim{}, 0, false
	}
	db0 := 0
	for r := p.rnd.IntN(p.total); r >= p.counts[db0]; db0++ {
		r -= p.counts[db0]
	}
	sh0 := p.rnd.IntN(numShards)
	for i := range NumDBs {
		db := (db0 + i) % NumDBs
		if p.counts[db] == 0 {
			continue
		}
		for j := range numShards {
			if v, score, ok := p.randomKeyIn((sh0+j)%numShards, db); ok {
				return v, score, true
			}
		}
	}
	return Victim{}, 0, false
}

// randomKeyIn is a candidate at random in database db of shard id, if it has one, and
// its score: how good a victim it is, the higher the better. Under volatile-ttl that is
// the sooner it expires, under an LRU policy the longer it was idle, under an LFU one
// the less often it was used.
func (p *picker) randomKeyIn(id, db int) (Victim, int64, bool) {
	sh := &p.s.shards[id]
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	d := &sh.dbs[db]
	var key string
	var it item
	var clock uint32
	var mode accessMode
	if p.volatile {
		if len(d.ttl) == 0 {
			return Victim{}, 0, false
		}
		// Go starts every iteration of a map at a random place: its first key is a
		// random one (if not uniformly so), found without walking the map
		for k := range d.ttl {
			key = k
			break
		}
		var ok bool
		if it, ok = d.get([]byte(key)); !ok {
			return Victim{}, 0, false
		}
		clock, mode = clockOf(&d.keys, []byte(key))
	} else {
		t := &d.keys
		if t.n == 0 {
			return Victim{}, 0, false
		}
		mask := len(t.ents) - 1
		for i := p.rnd.IntN(len(t.ents)); ; i = (i + 1) & mask {
			if e := &t.ents[i]; e.meta != 0 {
				key = e.keyOf()
				it = d.view(key, e.slot())
				if t.acc != nil {
					clock, mode = atomic.LoadUint32(&e.clock), t.acc.tracking()
				}
				break
			}
		}
	}
	var score int64
	switch {
	case p.policy == EvictVolatileTTL:
		score = -d.ttl[key]
	case mode == accessModeOf(p.policy): // else not tracked yet: the policy was just set
		score = p.s.acc.evictScore(mode, clock, p.now)
	}
	return Victim{DB: db, Key: key, Ver: it.ver, Bytes: usage(len(key), it)}, score, true
}
