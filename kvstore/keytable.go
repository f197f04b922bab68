package kvstore

import (
	"encoding/binary"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// keyTable is one db shard's keyspace: an open-addressing hash table (linear probing,
// a power-of-two number of entries, at most three quarters full) from a key to its slot.
//
// It is not a Go map because of cache misses. Once the keyspace outgrows the caches,
// every access to a random key misses: in a map[string]slot a lookup misses on the
// group's control word, on the slot that holds the key's header, and on the key's bytes,
// three times before a SET can overwrite the slot. Here an entry holds a 24-bit tag of
// the key's hash, the key itself when it is short (inlineKey bytes, which covers the keys
// of redis-benchmark and memaslap), the slot and the key's access clock, in 48 bytes: a
// lookup of a short key misses once. (Random SETs over 1M keys of 16 bytes,
// BenchmarkKeyTableSET1M against BenchmarkGoMapSET1M, three alternating runs: 182–210 ns
// against 382–437 ns per SET; BenchmarkApplySET1MKeys measures the store around it.)
// Growing copies entries without touching the keys: the tag holds the bits that place
// an entry.
//
// A key longer than inlineKey is kept in front of its value, in one string.
//
// Iteration order is the table's order, which depends on the history of the table; like
// a Go map's, it must never leak into replicated state.
type keyTable struct {
	ents []kent
	// acc is the store's access tracking (access.go), which every entry's clock counts
	// in; nil for a table whose accesses nobody reads.
	acc *accessClock
	n   int // live entries
	// frozen is the table as a snapshot being written needs it, while the table's
	// entries array is still the one frozen shares (see frozenTable).
	frozen *frozenTable
}

// inlineKey is the longest key an entry holds itself.
const inlineKey = 16

// kent is an entry of a keyTable.
type kent struct {
	// str is the value of a string key ("" for other types); for a key longer than
	// inlineKey, the key followed by the value.
	str  string
	meta uint64 // slot.meta; 0 marks a free entry (a live key always has a type)
	// hk holds the key's tag (tagOf: bits of its hash, the low ones its home index) in
	// its low 24 bits, and in its high 8 the key's length when the entry holds the key
	// itself, or longKey when str does.
	hk uint32
	// clock is the key's access clock (access.go). Readers update it under the shard's
	// read lock, with atomics.
	clock uint32
	// k is the key, when it is inline; otherwise its first four bytes are the key's
	// length, little-endian.
	k [inlineKey]byte
}

const (
	tagBits = 24
	tagMask = 1<<tagBits - 1
	longKey = 0xff // kent.hk's length byte for a key kept in str
)

// tagOf is the tag of a key of hash h: the high half of the hash, to 24 bits. (The low
// bits pick the shard.) A table of more than 1<<24 entries would have more homes than
// tags, which costs it probes, not correctness: 12 million keys in one shard's database.
func tagOf(h uint64) uint32 { return uint32(h>>32) & tagMask }

// newEntry is a free entry made ready for key, of hash h, without its slot.
func newEntry[K ~string | ~[]byte](h uint64, key K) kent {
	e := kent{hk: tagOf(h)}
	if len(key) <= inlineKey {
		e.hk |= uint32(len(key)) << tagBits
		copy(e.k[:], key)
	} else {
		e.hk |= longKey << tagBits
		binary.LittleEndian.PutUint32(e.k[:4], uint32(len(key)))
	}
	return e
}

func (e *kent) tag() uint32  { return e.hk & tagMask }
func (e *kent) inline() bool { return e.hk>>tagBits != longKey }

// klen is the length of the entry's key.
func (e *kent) klen() int {
	if n := e.hk >> tagBits; n != longKey {
		return int(n)
	}
	return int(binary.LittleEndian.Uint32(e.k[:4]))
}

// keyOf is the entry's key as a string of its own: a copy for an inline key, a part of
// str (which is immutable) for a long one.
func (e *kent) keyOf() string {
	if e.inline() {
		return string(e.k[:e.klen()])
	}
	return e.str[:e.klen()]
}

func (e *kent) slot() slot {
	if e.inline() {
		return slot{str: e.str, meta: e.meta}
	}
	return slot{str: e.str[e.klen():], meta: e.meta}
}

// keyIs reports whether the entry's key is key.
func keyIs[K ~string | ~[]byte](e *kent, key K) bool {
	if n := e.hk >> tagBits; n != longKey {
		return int(n) == len(key) && string(e.k[:n]) == string(key)
	}
	return e.klen() == len(key) && e.str[:len(key)] == string(key)
}

// hashKey is the key's xxhash, which picks its shard (low bits) and its place in the
// shard's table (the tag, high bits). A []byte key is hashed as it is: converted to a
// string, a key over 32 bytes would be copied to the heap on every access.
func hashKey[K ~string | ~[]byte](key K) uint64 {
	switch k := any(key).(type) {
	case []byte:
		return xxhash.Sum64(k)
	case string:
		return xxhash.Sum64String(k)
	}
	return xxhash.Sum64String(string(key))
}

// find returns the index of key's entry and true, or the free entry where it would go
// and false. The table must have entries.
func find[K ~string | ~[]byte](t *keyTable, h uint64, key K) (int, bool) {
	tag := tagOf(h)
	mask := uint32(len(t.ents) - 1)
	for i := tag & mask; ; i = (i + 1) & mask {
		e := &t.ents[i]
		if e.meta == 0 {
			return int(i), false
		}
		if e.hk&tagMask == tag && keyIs(e, key) {
			return int(i), true
		}
	}
}

// tableGet returns key's slot.
func tableGet[K ~string | ~[]byte](t *keyTable, key K) (slot, bool) {
	return tableGetH(t, hashKey(key), key)
}

// tableGetH is tableGet for a caller that has hashed the key (hashKey) already.
func tableGetH[K ~string | ~[]byte](t *keyTable, h uint64, key K) (slot, bool) {
	if t.n == 0 {
		return slot{}, false
	}
	i, ok := find(t, h, key)
	if !ok {
		return slot{}, false
	}
	return t.ents[i].slot(), true
}

// tableSet stores s at key, over the key's slot if it has one. The table keeps a copy of
// the key; s.meta must not be 0.
func tableSet[K ~string | ~[]byte](t *keyTable, key K, s slot) {
	tableSetH(t, hashKey(key), key, s)
}

// tableSetH is tableSet for a caller that has hashed the key already; it returns the
// index of the key's entry.
func tableSetH[K ~string | ~[]byte](t *keyTable, h uint64, key K, s slot) int {
	i, ok := place(t, h, key, s.meta)
	t.beforeChange(i)
	e := &t.ents[i]
	if !ok {
		*e = newEntry(h, key)
		t.written(e)
	}
	e.meta = s.meta
	if e.inline() {
		e.str = s.str
		return i
	}
	// The key goes in front of the value: one string, allocated here unless it is
	// already laid out so (tableSetJoinedH), or there is no value to add to the key the
	// entry holds (a collection's slot changes on every write to it).
	if ok && s.str == "" {
		e.str = e.str[:e.klen()]
		return i
	}
	e.str = string(key) + s.str
	return i
}

// tableSetJoinedH stores the value kv[klen:] at the key kv[:klen] (whose hash is h),
// keeping kv itself for a long key; it returns the index of the key's entry.
func tableSetJoinedH(t *keyTable, h uint64, kv string, klen int, meta uint64) int {
	key := kv[:klen]
	if klen <= inlineKey {
		return tableSetH(t, h, key, slot{str: kv[klen:], meta: meta})
	}
	i, existed := place(t, h, key, meta)
	t.beforeChange(i)
	e := &t.ents[i]
	if !existed {
		*e = newEntry(h, key)
		t.written(e)
	}
	e.str, e.meta = kv, meta
	return i
}

// written gives e, a new key's entry the applier is about to store, its first access
// clock (a store over an existing key is counted as an access by Ctx.storeAt).
func (t *keyTable) written(e *kent) {
	if m := t.acc.tracking(); m != accessOff {
		e.clock = freshClock(m, t.acc.writeNow)
	}
}

// place returns the index of key's entry and true, or of the free entry it is to take
// and false; then it counts the key as live, having grown the table if it was full.
// meta is the slot the caller will store there.
func place[K ~string | ~[]byte](t *keyTable, h uint64, key K, meta uint64) (int, bool) {
	if meta == 0 {
		panic("kvstore: a slot without a type") // it would read as a free entry
	}
	if len(t.ents) == 0 {
		t.ents = make([]kent, 8)
	}
	i, ok := find(t, h, key)
	if ok {
		return i, true
	}
	if (t.n+1)*4 > len(t.ents)*3 {
		t.grow()
		i, _ = find(t, h, key)
	}
	t.n++
	return i, false
}

// tableDelete removes key; false if it was absent. Later entries of the probe run move
// back into the gap (no tombstones), so a deletion during each is not allowed.
func tableDelete[K ~string | ~[]byte](t *keyTable, key K) bool {
	if t.n == 0 {
		return false
	}
	i, ok := find(t, hashKey(key), key)
	if !ok {
		return false
	}
	mask := len(t.ents) - 1
	for j := (i + 1) & mask; t.ents[j].meta != 0; j = (j + 1) & mask {
		// The entry at j may fill the gap at i unless its home lies cyclically in (i, j].
		home := int(t.ents[j].tag()) & mask
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			t.beforeChange(i)
			t.ents[i] = t.ents[j]
			i = j
		}
	}
	t.beforeChange(i)
	t.ents[i] = kent{}
	t.n--
	return true
}

// grow doubles the table.
func (t *keyTable) grow() {
	old := t.ents
	t.ents = make([]kent, 2*len(old))
	touchPages(t.ents)
	mask := uint32(len(t.ents) - 1)
	for k := range old {
		e := &old[k]
		if e.meta == 0 {
			continue
		}
		i := e.tag() & mask
		for t.ents[i].meta != 0 {
			i = (i + 1) & mask
		}
		t.ents[i] = *e
	}
}

// touchPages writes to every memory page of ents. A large array fresh from the OS is
// mapped on first touch, and the first touch of a new table's page would be a read: the
// probe that looks for a free entry. That maps the shared zero page, and the write that
// follows takes a second, copy-on-write fault, which flushes the TLB of every CPU the
// process ran on, by interrupt. A write first makes it one fault per page. (A single
// node under memcaslap set-only spent 5% of its CPU in these faults.) On Linux one
// madvise maps them all first (populatePages): a fault per page cost twice as much, and
// tables growing under a load of new keys took 12% of a leader's CPU and 20% of a
// follower's in these faults.
func touchPages(ents []kent) {
	if len(ents) == 0 {
		return
	}
	_ = populatePages(unsafe.Pointer(&ents[0]), uintptr(len(ents))*unsafe.Sizeof(kent{}))
	const stride = pageSize / int(unsafe.Sizeof(kent{}))
	for i := 0; i < len(ents); i += stride {
		ents[i].meta = 0
	}
}

// pageSize is the smallest page size of the platforms Go runs on: touching at this
// stride reaches every page of any larger size too.
const pageSize = 4096

func (t *keyTable) len() int { return t.n }

// each calls fn for every key and its slot, until fn returns false. fn may replace the
// slot of the key it is given (tableSet), but must not add or delete keys.
func (t *keyTable) each(fn func(k string, s slot) bool) bool { return t.eachFrom(0, fn) }

// eachFrom is each in the table's order from entry start (modulo its size) on, around
// to the entry before it: a walk from a random start finds a random key (RANDOMKEY).
func (t *keyTable) eachFrom(start uint64, fn func(k string, s slot) bool) bool {
	n := len(t.ents)
	if n == 0 {
		return true
	}
	first := int(start % uint64(n))
	for j := range n {
		e := &t.ents[(first+j)&(n-1)]
		if e.meta == 0 {
			continue
		}
		if !fn(e.keyOf(), e.slot()) {
			return false
		}
	}
	return true
}

// frozenTable is a keyTable as it was when a snapshot began, kept copy-on-write at the
// grain of a page of entries. It shares the live table's entries array, and the live
// table copies a page aside (saved) just before it first changes it. A table that grows
// moves to a new array and leaves the old one as it was, and so does one that FLUSHDB
// replaces: from then on the frozen table owns that array alone.
//
// A snapshot used to copy a shard's whole table at the shard's first change. Under
// random writes every entry changes most shards, so the first entry applied after a
// snapshot began copied the whole keyspace: its longest apply was 29–140 ms for 1M
// keys (BenchmarkSnapshotApplyStall1MKeys, six runs), and the collector then reclaimed
// the copy. Now a change copies one page, and only the pages changed before the writer
// reached them: 13–25 ms in six runs, most of it the collector's.
//
// The applier changes the live table under the shard's write lock; the writer reads
// the frozen one, and sets done, under its read lock.
type frozenTable struct {
	ents  []kent
	n     int
	saved [][]kent // by page of frozenPage entries; nil while the page is unchanged
	done  bool     // written (and ents and saved dropped): the live table saves no more pages
}

// frozenPage is the copy-on-write grain, in entries (1.5 KiB).
const frozenPage = 32

// freeze returns the table as it is now, and makes it save what it changes from now on
// for the frozen table, until the frozen table is done.
func (t *keyTable) freeze() *frozenTable {
	f := &frozenTable{ents: t.ents, n: t.n}
	t.frozen = nil
	if len(t.ents) > 0 {
		f.saved = make([][]kent, (len(t.ents)+frozenPage-1)/frozenPage)
		t.frozen = f
	}
	return f
}

// beforeChange is called before entry j of t.ents changes: it saves j's page for the
// frozen table if that table still shares the array and has not saved the page yet.
func (t *keyTable) beforeChange(j int) {
	f := t.frozen
	if f == nil {
		return
	}
	if f.done || len(t.ents) != len(f.ents) || &t.ents[0] != &f.ents[0] {
		t.frozen = nil // written, or t has moved to an array of its own
		return
	}
	p := j / frozenPage
	if f.saved[p] == nil {
		lo := p * frozenPage
		f.saved[p] = append([]kent(nil), f.ents[lo:min(lo+frozenPage, len(f.ents))]...)
	}
}

// pages is the number of pages of the frozen table; page(p) is page p as it was frozen.
// (A walk by page, with no function value per entry: a snapshot goes through every key.)
func (f *frozenTable) pages() int { return (len(f.ents) + frozenPage - 1) / frozenPage }

func (f *frozenTable) page(p int) []kent {
	if p < len(f.saved) && f.saved[p] != nil {
		return f.saved[p]
	}
	lo := p * frozenPage
	return f.ents[lo:min(lo+frozenPage, len(f.ents))]
}
