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
// The clock is a field of the key table's entry, beside the key, so it costs an access
// no cache miss of its own. Every non-LFU policy keeps LRU clocks, as Redis does: OBJECT
// IDLETIME answers under all of them, OBJECT FREQ under an LFU one. Switching between
// LRU and LFU starts every key's clock afresh (Redis reinterprets the bits, and says the
// data "will take some time to adjust").
//
// Clocks are not replicated state: every member keeps its own, from the accesses it
// serves and the writes it applies, and only the member that evicts (a single node, a
// cluster's leader) reads them, to pick the victims its evict op names. Their time is
// the one the command runs at (Ctx.Now: the reader's clock, or the log entry's): a
// time.Now for every access cost 70 ns on this project's machines.

// accessMode is what a store's key tables track.
type accessMode uint32

const (
	accessOff accessMode = iota // a table nobody reads clocks of (no accessClock)
	accessLRU
	accessLFU
)

// lfuInitVal is the LFU counter of a new key, as Redis's.
const lfuInitVal = 5

// Redis's defaults of lfu-log-factor (how slowly the counter grows) and lfu-decay-time
// (minutes per decrement of an idle key's counter; 0: no decay).
const (
	defaultLFULogFactor = 10
	defaultLFUDecayTime = 1
)

// accessClock is a store's access tracking, shared by its key tables.
type accessClock struct {
	mode atomic.Uint32 // accessMode
	// writeNow is the time of the entry being applied (unix ms), the time of the
	// accesses its writes make; only the applier touches it.
	writeNow int64
	// logFactor and decayTime are lfu-log-factor and lfu-decay-time.
	logFactor, decayTime atomic.Int64
}

func newAccessClock() *accessClock {
	a := &accessClock{}
	a.mode.Store(uint32(accessLRU))
	a.logFactor.Store(defaultLFULogFactor)
	a.decayTime.Store(defaultLFUDecayTime)
	return a
}

// SetLFU sets lfu-log-factor and lfu-decay-time (both >= 0).
func (s *Store) SetLFU(logFactor, decayTime int64) {
	s.acc.logFactor.Store(logFactor)
	s.acc.decayTime.Store(decayTime)
}

// LFU returns lfu-log-factor and lfu-decay-time.
func (s *Store) LFU() (logFactor, decayTime int64) {
	return s.acc.logFactor.Load(), s.acc.decayTime.Load()
}

func (a *accessClock) tracking() accessMode {
	if a == nil {
		return accessOff
	}
	return accessMode(a.mode.Load())
}

// A clock's low 24 bits count in its mode's unit, from unix ms: LRU seconds, wrapping
// as Redis's LRU clock does (every 194 days), or LFU minutes in 16 bits above an 8-bit
// counter. Its top bit is memcached's fetched flag: the key was read since it was last
// stored (mg's h, me's fetch).
const (
	clockBits    = 24
	clockMask    = 1<<clockBits - 1 // Redis's LRU_CLOCK_MAX
	clockFetched = 1 << 31
)

func seconds(nowMS int64) uint32 { return uint32(nowMS/1000) & clockMask }
func minutes(nowMS int64) uint32 { return uint32(nowMS/60000) & 0xffff }

// freshClock is a new key's clock under mode m at nowMS.
func freshClock(m accessMode, nowMS int64) uint32 {
	if m == accessLFU {
		return minutes(nowMS)<<8 | lfuInitVal
	}
	return seconds(nowMS)
}

// touched is the clock v becomes at an access under mode m at nowMS; it keeps v's
// fetched flag.
func (a *accessClock) touched(m accessMode, v uint32, nowMS int64) uint32 {
	if m == accessLFU {
		return minutes(nowMS)<<8 | a.lfuLogIncr(a.lfuCounter(v, nowMS)) | v&clockFetched
	}
	return seconds(nowMS) | v&clockFetched
}

// idleSeconds is OBJECT IDLETIME of an LRU clock v at nowMS (Redis's
// estimateObjectIdleTime, wrap included).
func idleSeconds(v uint32, nowMS int64) int64 {
	now, then := int64(seconds(nowMS)), int64(v&clockMask)
	if now >= then {
		return now - then
	}
	return now + clockMask - then
}

// lfuIdleSeconds is how long ago, in seconds, a key with LFU clock v was last accessed
// at nowMS, to the minute: the clock keeps the minute of the last access (Redis's
// ldt, which every access sets) beside the counter. memcached's la and mg l under an LFU
// policy; Redis answers OBJECT IDLETIME there with an error instead.
func lfuIdleSeconds(v uint32, nowMS int64) int64 {
	ldt, now := int64(v>>8&0xffff), int64(minutes(nowMS))
	if now < ldt { // the 16-bit minute clock wrapped
		return (0xffff - ldt + now) * 60
	}
	return (now - ldt) * 60
}

// idleIn is the seconds since the last access of a key with clock v under mode m.
func idleIn(m accessMode, v uint32, nowMS int64) int64 {
	switch m {
	case accessLRU:
		return idleSeconds(v, nowMS)
	case accessLFU:
		return lfuIdleSeconds(v, nowMS)
	}
	return 0
}

// lruClockIdle is the LRU clock of a key idle for idle seconds at nowMS, as RESTORE's
// IDLETIME sets it: half the clock's range back when idle reaches past its start
// (Redis's objectSetLRUOrLFU).
func lruClockIdle(idle, nowMS int64) uint32 {
	now := int64(seconds(nowMS))
	if abs := now - idle; abs >= 0 {
		return uint32(abs)
	}
	return uint32((now + clockMask/2) % clockMask)
}

// lfuCounter is OBJECT FREQ of an LFU clock v at nowMS: its counter less one for every
// lfu-decay-time minutes since it was last decremented (Redis's LFUDecrAndReturn).
func (a *accessClock) lfuCounter(v uint32, nowMS int64) uint32 {
	decay := a.decayTime.Load()
	if decay == 0 {
		return v & 0xff
	}
	ldt, counter := int64(v>>8&0xffff), int64(v&0xff)
	now := int64(minutes(nowMS))
	elapsed := now - ldt
	if now < ldt { // the 16-bit minute clock wrapped
		elapsed = 0xffff - ldt + now
	}
	if periods := elapsed / decay; periods < counter {
		return uint32(counter - periods)
	}
	return 0
}

// lfuLogIncr is an access's increment of an LFU counter: certain up to lfuInitVal, then
// less and less likely as the counter grows, by lfu-log-factor, up to 255 (Redis's
// LFULogIncr).
func (a *accessClock) lfuLogIncr(counter uint32) uint32 {
	if counter == 255 {
		return 255
	}
	base := max(int64(counter)-lfuInitVal, 0)
	if rand.Float64() < 1/float64(base*a.logFactor.Load()+1) {
		counter++
	}
	return counter
}

// evictScore is how good a victim a key with clock v is under mode m at nowMS: the
// higher, the sooner evicted (Redis's eviction pool idle value).
func (a *accessClock) evictScore(m accessMode, v uint32, nowMS int64) int64 {
	if m == accessLFU {
		return 255 - int64(a.lfuCounter(v, nowMS))
	}
	return idleSeconds(v, nowMS)
}

// accessModeOf is the tracking policy p needs: LFU for the LFU policies, LRU for the
// others (which Redis keeps too: it answers OBJECT IDLETIME).
func accessModeOf(p EvictPolicy) accessMode {
	switch p {
	case EvictAllKeysLFU, EvictVolatileLFU:
		return accessLFU
	}
	return accessLRU
}

// SetEvictPolicy makes the store track what policy evicts by: access frequencies under
// an LFU policy, access times under the others. Every key starts afresh when the
// tracking changes. Safe from any goroutine.
func (s *Store) SetEvictPolicy(p EvictPolicy) {
	m := accessModeOf(p)
	s.accessMu.Lock()
	defer s.accessMu.Unlock()
	if s.acc.tracking() == m {
		return
	}
	s.acc.mode.Store(uint32(m))
	now := time.Now().UnixMilli()
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for db := range sh.dbs {
			sh.dbs[db].keys.resetClocks(m, now)
		}
		sh.mu.Unlock()
	}
}

// resetClocks gives every entry a fresh clock under m at nowMS. The caller holds the
// table's shard exclusively.
func (t *keyTable) resetClocks(m accessMode, nowMS int64) {
	v := freshClock(m, nowMS)
	for i := range t.ents {
		if t.ents[i].meta != 0 {
			t.ents[i].clock = v
		}
	}
}

// touch records an access to entry i at nowMS. Readers call it under their shard's
// read lock, many at once, so the clock changes by atomics, and only when its value
// does (an LRU clock once a second at most).
func (t *keyTable) touch(i int, nowMS int64) {
	if t.acc == nil {
		return
	}
	p := &t.ents[i].clock
	old := atomic.LoadUint32(p)
	if v := t.acc.touched(t.acc.tracking(), old, nowMS); v != old {
		atomic.StoreUint32(p, v)
	}
}

// fetch sets entry i's fetched flag: a client read the key (a read command, a memcached
// get or touch; not a write command's lookup, as memcached's add of an existing item
// is no fetch). Readers call it under the shard's read lock, like touch.
func (t *keyTable) fetch(i int) {
	if t.acc == nil {
		return
	}
	p := &t.ents[i].clock
	if old := atomic.LoadUint32(p); old&clockFetched == 0 {
		atomic.StoreUint32(p, old|clockFetched)
	}
}

// fetchedKey reports key's fetched flag, and sets it when set is true (the applier's
// side of fetch: a memcached touch, a counter changed in place).
func (c *Ctx) fetchedKey(key []byte, set bool) bool { return fetchedIn(&c.db(key).keys, key, set) }

// fetchedIn is fetchedKey in table t.
func fetchedIn(t *keyTable, key []byte, set bool) bool {
	if t.acc == nil || t.n == 0 {
		return false
	}
	i, ok := find(t, hashKey(key), key)
	if !ok {
		return false
	}
	if set {
		t.fetch(i)
	}
	return atomic.LoadUint32(&t.ents[i].clock)&clockFetched != 0
}

// touchKey records an access to key at nowMS, if the table tracks accesses and holds
// it.
func touchKey[K ~string | ~[]byte](t *keyTable, key K, nowMS int64) {
	if t.acc == nil || t.n == 0 {
		return
	}
	if i, ok := find(t, hashKey(key), key); ok {
		t.touch(i, nowMS)
	}
}

// getTouched is get that records the access at nowMS, with the one probe of the table,
// and returns the key's entry.
func (d *dbShard) getTouched(key []byte, nowMS int64) (item, int, bool) {
	t := &d.keys
	if t.n == 0 {
		return item{}, 0, false
	}
	i, ok := find(t, hashKey(key), key)
	if !ok {
		return item{}, 0, false
	}
	t.touch(i, nowMS)
	return d.view(string(key), t.ents[i].slot()), i, true
}

// touchStored records a store over an existing key, whose entry is t.ents[i]: an access
// unless the command's lookup of the key counted one already (a SET that overwrites a
// key without looking it up accesses it, an APPEND that looked it up does not twice),
// and the end of the fetched flag, which a read sets (memcached's: a stored item is
// new). The applier calls it, holding the shard exclusively.
func (c *Ctx) touchStored(t *keyTable, i int) {
	e := &t.ents[i]
	if !c.touchedKeys.has(t, i) {
		e.clock = t.acc.touched(t.acc.tracking(), e.clock, c.Now)
	}
	e.clock &^= clockFetched
}

// touchedEntries remembers the last few entries a command's lookups touched: enough
// for the keys a write command looks up and then stores (SMOVE's source and
// destination); a command that looks up more may count an access to a key it stores
// twice.
type touchedEntries struct {
	t    [4]*keyTable
	i    [4]int
	next int
}

func (e *touchedEntries) add(t *keyTable, i int) {
	e.t[e.next], e.i[e.next] = t, i
	e.next = (e.next + 1) % len(e.t)
}

func (e *touchedEntries) has(t *keyTable, i int) bool {
	for j := range e.t {
		if e.t[j] == t && e.i[j] == i {
			return true
		}
	}
	return false
}

// clockCarried gives key's entry in t the clock v, another entry's: RENAME and MOVE
// move a key with its access history, as Redis moves the value that holds it. The
// applier calls it, holding the shard exclusively.
func clockCarried(t *keyTable, key []byte, v uint32, m accessMode) {
	if t.acc == nil || t.n == 0 || m != t.acc.tracking() {
		return
	}
	if i, ok := find(t, hashKey(key), key); ok {
		t.ents[i].clock = v
	}
}

// setAccessClock sets key's clock as RESTORE's IDLETIME (idle seconds, when idle) or
// FREQ (an LFU counter) asks, under the policy that tracks that; the applier calls it,
// holding the shard exclusively.
func setAccessClock(t *keyTable, key []byte, idle bool, v int64) {
	if t.acc == nil || t.n == 0 {
		return
	}
	i, ok := find(t, hashKey(key), key)
	if !ok {
		return
	}
	switch m, now := t.acc.tracking(), t.acc.writeNow; {
	case m == accessLRU && idle:
		t.ents[i].clock = lruClockIdle(v, now)
	case m == accessLFU && !idle:
		t.ents[i].clock = minutes(now)<<8 | uint32(v)
	}
}

// clockOf is key's access clock and the mode it counts in; accessOff when the table
// does not track or has no such key. The caller holds the shard (read lock enough).
func clockOf(t *keyTable, key []byte) (uint32, accessMode) {
	if t.acc == nil || t.n == 0 {
		return 0, accessOff
	}
	i, ok := find(t, hashKey(key), key)
	if !ok {
		return 0, accessOff
	}
	return atomic.LoadUint32(&t.ents[i].clock), t.acc.tracking()
}
