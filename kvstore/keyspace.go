package kvstore

// The keyspace table (keytable.go) keeps a small slot per key. Memory is the reason: the
// tables run 37–75% full, so every byte of an entry costs almost two. Measured with 1M
// keys of 32-byte values, a 48-byte item per map slot made the live heap 199 MB against
// Redis's 121 MB; the rarely used parts of a value therefore live in side maps that only
// keys needing them pay for:
//
//	colls  the value of every non-string key
//	ttl    deadlines (hasTTL bit in meta)
//	flags  memcached client flags when not zero (hasFlags bit in meta)
//
// Commands never see slots: they get and put item views.
type slot struct {
	str  string
	meta uint64 // ver<<metaVerShift | mcMark<<metaMCShift | strEnc<<metaEncShift | hasFlags | hasTTL | type
}

const (
	metaTypeMask  = 0x7
	metaHasTTL    = 1 << 3
	metaHasFlags  = 1 << 4
	metaEncShift  = 5
	metaEncMask   = 3 << metaEncShift
	metaMCShift   = 7
	metaMCMask    = uint64(mcMarkMask) << metaMCShift
	metaVerShift  = 10
	maxVersion    = 1<<(64-metaVerShift) - 1
	metaFlagsMask = metaHasTTL | metaHasFlags
)

func packSlot(it item) slot {
	m := uint64(it.typ) | it.ver<<metaVerShift | uint64(it.enc)<<metaEncShift | uint64(it.mc)<<metaMCShift
	if it.hasTTL {
		m |= metaHasTTL
	}
	if it.flags != 0 {
		m |= metaHasFlags
	}
	return slot{str: it.str, meta: m}
}

// view rebuilds the item for key k from its slot.
func (d *dbShard) view(k string, s slot) item {
	it := item{str: s.str, typ: Type(s.meta & metaTypeMask), ver: s.meta >> metaVerShift, hasTTL: s.meta&metaHasTTL != 0,
		enc: strEnc(s.meta&metaEncMask) >> metaEncShift, mc: mcMark((s.meta & metaMCMask) >> metaMCShift)}
	if it.typ != TypeString {
		it.coll = d.colls[k]
	}
	if s.meta&metaHasFlags != 0 {
		it.flags = d.flags[k]
	}
	return it
}

// get returns the item at key regardless of its TTL.
func (d *dbShard) get(key []byte) (item, bool) {
	s, ok := tableGet(&d.keys, key)
	if !ok {
		return item{}, false
	}
	return d.view(string(key), s), true
}

// deadline returns the key's TTL deadline if the slot says it has one.
func (d *dbShard) deadline(key []byte) (int64, bool) {
	s, ok := tableGet(&d.keys, key)
	if !ok || s.meta&metaHasTTL == 0 {
		return 0, false
	}
	return d.ttl[string(key)], true
}

// put stores it at key, keeping the side maps in step with the slot. It does not touch
// the ttl map: callers decide about deadlines (it.hasTTL must match what they do).
func (d *dbShard) put(key []byte, it item) {
	h := hashKey(key)
	old, existed := tableGetH(&d.keys, h, key)
	d.putOver(h, key, old, existed, it, "")
}

// putOver is put for a caller that has already hashed key (h) and looked up its slot
// (old, existed). kv is "" or, for a string, the key followed by it.str in one string,
// which the table then keeps as it is when the key is too long to sit in its entry. It
// returns the index of the key's table entry.
func (d *dbShard) putOver(h uint64, key []byte, old slot, existed bool, it item, kv string) int {
	if existed {
		if Type(old.meta&metaTypeMask) != TypeString && it.typ == TypeString {
			delete(d.colls, string(key))
		}
		if old.meta&metaHasFlags != 0 && it.flags == 0 {
			delete(d.flags, string(key))
		}
	}
	if len(d.tomb) > 0 {
		delete(d.tomb, string(key)) // a live key answers WATCH with its own version
	}
	if it.typ != TypeString {
		if d.colls == nil {
			d.colls = make(map[string]collection)
		}
		d.colls[string(key)] = it.coll
	}
	if it.flags != 0 {
		if d.flags == nil {
			d.flags = make(map[string]uint32)
		}
		d.flags[string(key)] = it.flags
	}
	if kv != "" {
		return tableSetJoinedH(&d.keys, h, kv, len(key), packSlot(it).meta)
	}
	return tableSetH(&d.keys, h, key, packSlot(it))
}

// remove deletes key and everything the side maps hold for it.
func (d *dbShard) remove(key []byte) {
	s, ok := tableGet(&d.keys, key)
	if !ok {
		return
	}
	if Type(s.meta&metaTypeMask) != TypeString {
		delete(d.colls, string(key))
	}
	if s.meta&metaHasTTL != 0 {
		delete(d.ttl, string(key))
	}
	if s.meta&metaHasFlags != 0 {
		delete(d.flags, string(key))
	}
	tableDelete(&d.keys, key)
}

// each calls fn for every key and its item, TTL or not, until fn returns false. fn must
// not add or delete keys.
func (d *dbShard) each(fn func(k string, it item) bool) bool { return d.eachFrom(0, fn) }

// eachFrom is each from entry start of the table on (keyTable.eachFrom).
func (d *dbShard) eachFrom(start uint64, fn func(k string, it item) bool) bool {
	return d.keys.eachFrom(start, func(k string, s slot) bool {
		return fn(k, d.view(k, s))
	})
}

// reset empties the db shard.
func (d *dbShard) reset() {
	d.keys = keyTable{acc: d.keys.acc}
	d.colls, d.ttl, d.flags, d.tomb = nil, nil, nil, nil
}
