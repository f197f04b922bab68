package kvstore

import (
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Access tracking is what the LRU and LFU maxmemory-policies evict by: for every key, as
// Redis keeps in every value's 24-bit lru field, either the second it was last accessed
// (LRU) or a logarithmic access counter with the minute it was last decremented (LFU).
// Reads and writes update it; TYPE, TTL, EXISTS and OBJECT do not (Redis's
// LOOKUP_NOTOUCH).
//
// The clocks live beside a key table's entries, in an array of their own indexed as the
// entries are, and only while the policy is an LRU or LFU one: there is no room left
// in an entry, and an array that every access updates costs every access a second cache
// miss, which a store that never evicts by it should not pay. So OBJECT IDLETIME
// answers only under an LRU policy (Redis answers under every policy but the LFU ones),
// and OBJECT FREQ under an LFU one, as in Redis. Switching policy starts every key's
// clock afresh (Redis reinterprets the bits, and says the data "will take some time to
// adjust").
//
// Clocks are not replicated state: every member keeps its own, from the accesses it
// serves and the writes it applies, and only the member that evicts (a single node, a
// cluster's leader) reads them, to pick the victims its evict op names.

// accessMode is what a store's key tables track.
type accessMode uint32

const (
	accessOff accessMode = iota
	accessLRU
	accessLFU
)

// Redis's LFU settings: lfu-log-factor (how slowly the counter grows), lfu-decay-time
// (minutes per decrement of an idle key's counter) and the counter of a new key.
const (
	lfuLogFactor    = 10
	lfuDecayMinutes = 1
	lfuInitVal      = 5
)

// accessClock is a store's access tracking, shared by its key tables.
type accessClock struct {
	mode atomic.Uint32 // accessMode
	// nowMS is the clock, unix ms: time.Now's; tests set their own.
	nowMS func() int64
}

func newAccessClock() *accessClock {
	return &accessClock{nowMS: func() int64 { return time.Now().UnixMilli() }}
}

func (a *accessClock) tracking() accessMode {
	if a == nil {
		return accessOff
	}
	return accessMode(a.mode.Load())
}

// fresh is a new key's clock under mode m.
func (a *accessClock) fresh(m accessMode) uint32 {
	if m == accessLFU {
		return a.minutes()<<8 | lfuInitVal
	}
	return a.seconds()
}

// touched is the clock v becomes at an access under mode m.
func (a *accessClock) touched(m accessMode, v uint32) uint32 {
	if m == accessLFU {
		c := lfuLogIncr(a.lfuCounter(v))
		return a.minutes()<<8 | c
	}
	return a.seconds()
}

func (a *accessClock) seconds() uint32 { return uint32(a.nowMS() / 1000) }
func (a *accessClock) minutes() uint32 { return uint32(a.nowMS()/60000) & 0xffff }

// idleSeconds is OBJECT IDLETIME of an LRU clock v.
func (a *accessClock) idleSeconds(v uint32) int64 {
	return max(int64(a.seconds())-int64(v), 0)
}

// lfuCounter is OBJECT FREQ of an LFU clock v: its counter less one for every
// lfu-decay-time minutes since it was last decremented (Redis's LFUDecrAndReturn).
func (a *accessClock) lfuCounter(v uint32) uint32 {
	ldt, counter := v>>8, v&0xff
	now := a.minutes()
	elapsed := now - ldt
	if now < ldt { // the 16-bit minute clock wrapped
		elapsed = 0xffff - ldt + now
	}
	if periods := elapsed / lfuDecayMinutes; periods < counter {
		return counter - periods
	}
	return 0
}

// lfuLogIncr is an access's increment of an LFU counter: certain up to lfuInitVal, then
// less and less likely as the counter grows, up to 255 (Redis's LFULogIncr).
func lfuLogIncr(counter uint32) uint32 {
	if counter == 255 {
		return 255
	}
	base := max(int(counter)-lfuInitVal, 0)
	if rand.Float64() < 1/float64(base*lfuLogFactor+1) {
		counter++
	}
	return counter
}

// evictScore is how good a victim a key with clock v is under mode m: the higher, the
// sooner evicted (Redis's eviction pool idle value).
func (a *accessClock) evictScore(m accessMode, v uint32) int64 {
	if m == accessLFU {
		return 255 - int64(a.lfuCounter(v))
	}
	return a.idleSeconds(v)
}

// accessModeOf is the tracking policy p needs.
func accessModeOf(p EvictPolicy) accessMode {
	switch p {
	case EvictAllKeysLRU, EvictVolatileLRU:
		return accessLRU
	case EvictAllKeysLFU, EvictVolatileLFU:
		return accessLFU
	}
	return accessOff
}

// SetEvictPolicy makes the store track what policy evicts by: access times under an LRU
// policy, access frequencies under an LFU one, nothing otherwise. Every key starts
// afresh when the tracking changes. Safe from any goroutine.
func (s *Store) SetEvictPolicy(p EvictPolicy) {
	m := accessModeOf(p)
	s.accessMu.Lock()
	defer s.accessMu.Unlock()
	if s.acc.tracking() == m {
		return
	}
	s.acc.mode.Store(uint32(m))
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for db := range sh.dbs {
			sh.dbs[db].keys.startTracking(m)
		}
		sh.mu.Unlock()
	}
}

// startTracking gives every entry a fresh clock under m (none under accessOff). The
// caller holds the table's shard exclusively.
func (t *keyTable) startTracking(m accessMode) {
	t.clock = nil
	if m == accessOff || len(t.ents) == 0 {
		return
	}
	t.clock = make([]uint32, len(t.ents))
	v := t.acc.fresh(m)
	for i := range t.clock {
		t.clock[i] = v
	}
}

// touch records an access to entry i. Readers call it under their shard's read lock,
// many at once, so the clock changes by atomics, and only when its value does (an LRU
// clock once a second at most).
func (t *keyTable) touch(i int) {
	if t.clock == nil {
		return
	}
	p := &t.clock[i]
	old := atomic.LoadUint32(p)
	if v := t.acc.touched(t.acc.tracking(), old); v != old {
		atomic.StoreUint32(p, v)
	}
}

// touchKey records an access to key, if the table tracks accesses and holds it.
func touchKey[K ~string | ~[]byte](t *keyTable, key K) {
	if t.clock == nil || t.n == 0 {
		return
	}
	if i, ok := find(t, hashKey(key), key); ok {
		t.touch(i)
	}
}

// setAccessClock sets key's clock as RESTORE's IDLETIME (idle seconds, when idle) or
// FREQ (an LFU counter) asks, under the policy that tracks that; the caller holds the
// shard exclusively.
func setAccessClock(t *keyTable, key []byte, idle bool, v int64) {
	if t.clock == nil || t.n == 0 {
		return
	}
	i, ok := find(t, hashKey(key), key)
	if !ok {
		return
	}
	switch m := t.acc.tracking(); {
	case m == accessLRU && idle:
		t.clock[i] = uint32(max(int64(t.acc.seconds())-v, 0))
	case m == accessLFU && !idle:
		t.clock[i] = t.acc.minutes()<<8 | uint32(v)
	}
}

// clockOf is key's access clock and the mode it counts in; accessOff when the table
// does not track or has no such key. The caller holds the shard (read lock enough).
func clockOf(t *keyTable, key []byte) (uint32, accessMode) {
	if t.clock == nil || t.n == 0 {
		return 0, accessOff
	}
	i, ok := find(t, hashKey(key), key)
	if !ok {
		return 0, accessOff
	}
	return atomic.LoadUint32(&t.clock[i]), t.acc.tracking()
}
