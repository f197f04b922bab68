package kvstore

import (
	"math"
	"strconv"
	"strings"
	"sync/atomic"
)

// The memcached frontend's writes are kvstore commands like any other, so they replicate
// and apply deterministically, but they live in a registry of their own: RESP's Lookup
// never finds them (COMMAND does not list them and a Redis client sending "mcstore" gets
// "unknown command"), and they reach Apply only through their own op kind, opMemcache,
// which only AppendMemcache produces. Items live in database 0 as Redis strings; the
// memcached client flags are kept beside the value (item.flags), and the CAS unique is the
// key's version.
//
// Every memcached command replies with exactly one of
//
//	Error(line)                                   the whole memcached error line
//	Array(5) Status(code) value flags cas ttl     value: BulkString or Null; ttl: whole
//	                                              seconds left, −1 for none
//
// so that the frontend can render the classic or the meta form of the reply.

// opMemcache is a memcached command: db:uvarint nargs:uvarint (len:uvarint bytes)*.
const opMemcache byte = 4

// Memcached reply codes (Status of the reply array).
const (
	MCStored    = "STORED"
	MCNotStored = "NOT_STORED"
	MCExists    = "EXISTS"
	MCNotFound  = "NOT_FOUND"
	MCDeleted   = "DELETED"
	MCTouched   = "TOUCHED"
	MCOK        = "OK"
	// MCWon answers an mg that won the item's recache token (mcmget): memcached's W.
	MCWon = "WON"
)

// MCNonNumeric is memcached's reply to incr/decr of a value that is not a number.
const MCNonNumeric = "CLIENT_ERROR cannot increment or decrement non-numeric value"

const (
	// mcItemOverhead is what memcached 1.6 counts besides key and value in an item's size
	// on 64-bit: a 48-byte header, the 8-byte CAS, the key's NUL and the value's "\r\n";
	// non-zero flags take 4 more bytes. Measured against memcached 1.6.18: with -I 1m, a
	// 1-byte key and flags 0 take at most a 1048516-byte value.
	mcItemOverhead = 48 + 8 + 1 + 2
	// MCChunkMax is memcached's slab_chunk_size_max (half its 1 MiB slab page): an item
	// larger than that is stored in chunks.
	MCChunkMax = 512 << 10
)

// MCItemSize is the bytes memcached 1.6's item for a key of keyLen bytes, flags and a
// value of vlen bytes takes: what its size limit, me and lru_crawler metadump count.
func MCItemSize(keyLen int, flags uint32, vlen int) int {
	size := mcItemOverhead + keyLen + vlen
	if flags != 0 {
		size += 4
	}
	return size
}

// mcMaxRelative is memcached's REALTIME_MAXDELTA: an exptime up to 30 days is relative to
// now, a larger one is an absolute unix time.
const mcMaxRelative = 60 * 60 * 24 * 30

var mcCommands = map[string]*Spec{}

func registerMC(specs ...*Spec) {
	for _, s := range specs {
		if _, dup := mcCommands[s.Name]; dup {
			panic("kvstore: memcached command registered twice: " + s.Name)
		}
		mcCommands[s.Name] = s
	}
}

func init() {
	// Arity and key positions as for Redis commands: the lock set comes from them.
	registerMC(
		// mcstore mode key value flags exptime cas vivify
		&Spec{Name: "mcstore", Arity: 8, Flags: FlagWrite, FirstKey: 2, LastKey: 2, Step: 1, Run: mcStoreCmd},
		// mcdelete key cas
		&Spec{Name: "mcdelete", Arity: 3, Flags: FlagWrite, FirstKey: 1, LastKey: 1, Step: 1, Run: mcDeleteCmd},
		// mcincr key +|- delta cas vivify initial touch
		&Spec{Name: "mcincr", Arity: 8, Flags: FlagWrite, FirstKey: 1, LastKey: 1, Step: 1, Run: mcIncrCmd},
		// mctouch key exptime
		&Spec{Name: "mctouch", Arity: 3, Flags: FlagWrite, FirstKey: 1, LastKey: 1, Step: 1, Run: mcTouchCmd},
		// mcmget key touch vivify recache bump: an mg that may change the item
		&Spec{Name: "mcmget", Arity: 6, Flags: FlagWrite, FirstKey: 1, LastKey: 1, Step: 1, Run: mcMetaGetCmd},
		// mcinvalidate key cas exptime: md with I
		&Spec{Name: "mcinvalidate", Arity: 4, Flags: FlagWrite, FirstKey: 1, LastKey: 1, Step: 1, Run: mcInvalidateCmd},
		// mcflushall exptime: flush_all
		&Spec{Name: "mcflushall", Arity: 2, Flags: FlagWrite | FlagAllKeys, Run: mcFlushAllCmd},
		// mcflush delay: flush_all as logs written before mcflushall have it
		&Spec{Name: "mcflush", Arity: 2, Flags: FlagWrite | FlagAllKeys, Run: mcFlushCmd},
	)
}

// MCStore is the mode of a memcached storage command.
type MCStore string

const (
	MCSet     MCStore = "set"
	MCAdd     MCStore = "add"
	MCReplace MCStore = "replace"
	MCAppend  MCStore = "append"
	MCPrepend MCStore = "prepend"
)

// MCNoValue marks an optional numeric argument as absent (no CAS to compare, no
// autovivify, no TTL update).
const MCNoValue = ""

// AppendMemcache appends one memcached command (built by the MC* helpers below).
func AppendMemcache(dst []byte, args [][]byte) []byte {
	dst = append(dst, opMemcache)
	return appendArgs(dst, 0, args)
}

// mcMark is the state memcached keeps in an item's it_flags that nanokv keeps too, in
// three spare bits of the key's slot (keyspace.go). A command that changes an item in
// place (a touch, md with I, a counter whose digits fit) keeps the marks; one that makes
// a new item (any store, an append, a counter that grows) starts from none, as
// memcached's new item does: each rule was checked against memcached 1.6.18.
type mcMark uint8

const (
	// mcBinKey is ITEM_KEY_BINARY: ms with b stored the item, so mg's k and me show its
	// key in base64.
	mcBinKey mcMark = 1 << iota
	// mcStale is ITEM_STALE: md with I (or ms with I and an older CAS) invalidated the
	// item, which mg still serves, flagged X.
	mcStale
	// mcWon is ITEM_TOKEN_SENT: one mg won the right to recache the item (W); every
	// other sees Z until a new item replaces it or md I invalidates it again.
	mcWon
	mcMarkMask = 1<<3 - 1
)

// AppendMCStore appends a storage command. cas, when not MCNoValue, must equal the key's
// CAS unique (classic cas, ms C). vivify, when not MCNoValue, is the exptime with which
// append/prepend create a missing item (ms N).
func AppendMCStore(dst []byte, mode MCStore, key, value []byte, flags uint32, exptime int64, cas, vivify string) []byte {
	return AppendMCMetaStore(dst, mode, key, value, flags, false, false, exptime, cas, vivify)
}

// AppendMCMetaStore is AppendMCStore for ms: its b flag (binKey) marks the item it
// stores as one of a binary key; its I flag (invalidate) makes a set whose CAS is older
// than the item's store the value stale instead of failing. They travel as bits 32 and
// 33 of the flags argument, so entries written before them read the same, and a member
// that does not know bit 33 refuses the entry rather than storing something else.
func AppendMCMetaStore(dst []byte, mode MCStore, key, value []byte, flags uint32, binKey, invalidate bool, exptime int64, cas, vivify string) []byte {
	var m mcMark
	if binKey {
		m |= mcBinKey
	}
	if invalidate {
		m |= mcStale
	}
	var fb, eb [24]byte
	return AppendMemcache(dst, [][]byte{[]byte("mcstore"), []byte(mode), key, value,
		strconv.AppendUint(fb[:0], mcFlagsArg(flags, m), 10), strconv.AppendInt(eb[:0], exptime, 10), []byte(cas), []byte(vivify)})
}

// mcFlagsArg packs an item's memcached fields into one number: the client flags, and
// the marks from bit 32 (the log's mcstore argument, snapshot records, mcReply).
func mcFlagsArg(flags uint32, m mcMark) uint64 {
	return uint64(flags) | uint64(m)<<32
}

// MCMarks unpacks the marks mcReply sends in its flags field.
func MCMarks(flagsArg int64) (binKey, stale, won bool) {
	m := mcMark(uint64(flagsArg) >> 32)
	return m&mcBinKey != 0, m&mcStale != 0, m&mcWon != 0
}

// AppendMCDelete appends a delete, compared against cas unless it is MCNoValue.
func AppendMCDelete(dst []byte, key []byte, cas string) []byte {
	return AppendMemcache(dst, [][]byte{[]byte("mcdelete"), key, []byte(cas)})
}

// AppendMCIncr appends incr (decr=false) or decr by delta. vivify (an exptime), initial
// and touch (an exptime) are ma's N, J and T; cas is ma's C.
func AppendMCIncr(dst []byte, key []byte, decr bool, delta uint64, cas, vivify string, initial uint64, touch string) []byte {
	dir := "+"
	if decr {
		dir = "-"
	}
	var db, ib [24]byte
	return AppendMemcache(dst, [][]byte{[]byte("mcincr"), key, []byte(dir), strconv.AppendUint(db[:0], delta, 10),
		[]byte(cas), []byte(vivify), strconv.AppendUint(ib[:0], initial, 10), []byte(touch)})
}

// AppendMCInvalidate appends md with I: the item is marked stale rather than deleted,
// compared against cas unless it is MCNoValue, and given exptime unless that is
// MCNoValue.
func AppendMCInvalidate(dst []byte, key []byte, cas, exptime string) []byte {
	return AppendMemcache(dst, [][]byte{[]byte("mcinvalidate"), key, []byte(cas), []byte(exptime)})
}

// AppendMCMetaGet appends an mg that may change the item, which the frontend sends
// through the log rather than answering from its copy: one with T (touch), one with N
// (vivify) that missed, one that may win the recache token (a stale item, or R with the
// item's TTL below recache). touch, vivify and recache are MCNoValue when absent; bump
// is false for mg's u, which leaves the item unfetched.
func AppendMCMetaGet(dst []byte, key []byte, touch, vivify, recache string, bump bool) []byte {
	b := "0"
	if bump {
		b = "1"
	}
	return AppendMemcache(dst, [][]byte{[]byte("mcmget"), key, []byte(touch), []byte(vivify), []byte(recache), []byte(b)})
}

// AppendMCTouch appends a touch (touch, gat).
func AppendMCTouch(dst []byte, key []byte, exptime int64) []byte {
	var eb [24]byte
	return AppendMemcache(dst, [][]byte{[]byte("mctouch"), key, strconv.AppendInt(eb[:0], exptime, 10)})
}

// AppendMCFlush appends flush_all with its exptime argument (0: now).
func AppendMCFlush(dst []byte, exptime int64) []byte {
	var eb [24]byte
	return AppendMemcache(dst, [][]byte{[]byte("mcflushall"), strconv.AppendInt(eb[:0], exptime, 10)})
}

func (s *Store) applyMemcache(c *Ctx, d *decoder) {
	_, args := d.command()
	if d.err != nil {
		return
	}
	c.runMemcache(mcCommands[string(args[0])], args)
}

// runMemcache runs a memcached command of spec (nil: one this build does not know).
func (c *Ctx) runMemcache(spec *Spec, args [][]byte) {
	// memcached has one keyspace: database 0, whatever the encoding says
	c.DB = 0
	if spec == nil {
		c.Error("ERROR")
		return
	}
	c.runSpec(spec, args, true)
}

// mcExpiry is what an exptime means at the entry's time.
type mcExpiry struct {
	at      int64 // deadline in unix ms; 0: none
	expired bool  // negative, or absolute and already past
}

// mcDeadline interprets a memcached exptime as memcached's realtime() does: 0 is no
// expiry, up to 30 days is relative to now (the entry's time), beyond that an absolute
// unix time; a negative one or an absolute one in the past is already expired.
func mcDeadline(exptime, now int64) mcExpiry {
	switch {
	case exptime == 0:
		return mcExpiry{}
	case exptime < 0:
		return mcExpiry{expired: true}
	case exptime <= mcMaxRelative:
		return mcExpiry{at: now + exptime*1000}
	}
	at := exptime * 1000
	if at <= now {
		return mcExpiry{expired: true}
	}
	return mcExpiry{at: at}
}

// mcLookup returns the live string item at key: memcached sees no other type.
func (c *Ctx) mcLookup(key []byte) (item, bool) {
	it, ok := c.lookup(key)
	if !ok || it.typ != TypeString {
		return item{}, false
	}
	return it, true
}

// taken reports whether key holds a live value of any type. One of another Redis type
// (a list, say) is a miss to memcached's reads, and its vivifying commands (mg N, ma N)
// leave it alone rather than overwrite it.
func (c *Ctx) taken(key []byte) bool {
	_, taken := c.lookup(key)
	return taken
}

// mcTTL is the whole seconds left before key expires (rounded up), −1 if it never does.
func (c *Ctx) mcTTL(key []byte) int64 {
	at, ok := c.expireAt(key)
	if !ok {
		return -1
	}
	return mcSecondsLeft(at, c.Now)
}

func mcSecondsLeft(at, now int64) int64 {
	if at <= now {
		return 0
	}
	return (at - now + 999) / 1000
}

// mcReply writes the reply array for the item now at key (or a miss).
func (c *Ctx) mcReply(code string, key []byte) {
	if c.W == Discard {
		return // a blind write's reply was given at commit: skip the lookups
	}
	c.W.Array(5)
	c.W.Status(code)
	outer := c.noTouch
	c.noTouch = true // reading back what the command wrote is no access to the key
	it, ok := c.mcLookup(key)
	c.noTouch = outer
	if !ok {
		c.W.Null()
		c.W.Int(0)
		c.W.Int(0)
		c.W.Int(-1)
		return
	}
	c.W.BulkString(it.str)
	c.W.Int(int64(mcFlagsArg(it.flags, it.mc)))
	c.W.Int(int64(it.ver))
	c.W.Int(c.mcTTL(key))
}

// mcStatus writes a reply that carries no item.
func (c *Ctx) mcStatus(code string) {
	c.W.Array(5)
	c.W.Status(code)
	c.W.Null()
	c.W.Int(0)
	c.W.Int(0)
	c.W.Int(-1)
}

// mcPut stores a new value at key with flags and an expiry; an expired one deletes the
// key instead (memcached stores it and never shows it again).
func (c *Ctx) mcPut(key, val []byte, flags uint32, mark mcMark, exp mcExpiry) {
	if exp.expired {
		c.del(key)
		return
	}
	c.setStringMC(key, val, flags, mark, false)
	c.notify(notifyString, "set", key)
	if exp.at != 0 {
		c.setExpire(key, exp.at)
		c.notify(notifyGeneric, "expire", key)
	}
}

// mcArgs parses the numeric arguments the frontend encoded; a malformed one (only a
// corrupt or hand-made entry has one) is an error reply, never a panic.
type mcArgs struct {
	c   *Ctx
	bad bool
}

func (p *mcArgs) int(b []byte) int64 {
	v, ok := ParseInt(b)
	if !ok {
		p.bad = true
	}
	return v
}

func (p *mcArgs) uint(b []byte) uint64 {
	v, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		p.bad = true
	}
	return v
}

// optional parses an argument that may be MCNoValue.
func (p *mcArgs) optional(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	return p.int(b), true
}

func (p *mcArgs) optionalUint(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	return p.uint(b), true
}

func (p *mcArgs) failed() bool {
	if p.bad {
		p.c.Error("SERVER_ERROR bad internal command")
	}
	return p.bad
}

func mcStoreCmd(c *Ctx, args [][]byte) {
	p := mcArgs{c: c}
	mode, key, val := MCStore(args[1]), args[2], args[3]
	flags := p.uint(args[4])
	exptime := p.int(args[5])
	cas, hasCAS := p.optionalUint(args[6])
	vivify, hasVivify := p.optional(args[7])
	if flags > mcFlagsArg(math.MaxUint32, mcBinKey|mcStale) {
		p.bad = true
	}
	mark := mcMark(flags>>32) & mcBinKey
	invalidate := flags>>32&uint64(mcStale) != 0
	if p.failed() {
		return
	}
	var old item
	var exists bool
	if hasCAS || mode != MCSet {
		old, exists = c.mcLookup(key) // a plain set overwrites: store expires what it must
	}
	if hasCAS {
		// What the unique means depends on the mode, as in memcached 1.6's ms:
		switch {
		case mode == MCSet || mode == MCReplace:
			// classic cas: NOT_FOUND for a missing item, EXISTS for another unique
			switch {
			case !exists:
				c.mcStatus(MCNotFound)
				return
			case old.ver != cas && invalidate && cas != 0 && cas < old.ver:
				// ms I with an older unique: the value is stored stale, keeping the
				// item's TTL and its won token, as memcached's set_stale does (a
				// unique of 0 is none, which memcached 1.6.18 refuses as EXISTS)
				it := item{typ: TypeString, flags: uint32(flags), mc: mark | mcStale | old.mc&mcWon}
				it.str = string(val)
				c.store(key, it, true)
				c.notify(notifyString, "set", key)
				c.mcReply(MCStored, key)
				return
			case old.ver != cas:
				c.mcStatus(MCExists)
				return
			}
		case mode == MCAppend || mode == MCPrepend:
			// a unique other than 0 is checked against an item that exists
			if exists && cas != 0 && old.ver != cas {
				c.mcStatus(MCExists)
				return
			}
		}
		// add ignores it
	}
	exp := mcDeadline(exptime, c.Now) // the new item's; an append keeps the old one's
	switch mode {
	case MCSet:
		c.mcPut(key, val, uint32(flags), mark, exp)
	case MCAdd:
		// a key of another Redis type is taken too
		if c.taken(key) {
			c.mcStatus(MCNotStored)
			return
		}
		c.mcPut(key, val, uint32(flags), mark, exp)
	case MCReplace:
		if !exists {
			c.mcStatus(MCNotStored)
			return
		}
		c.mcPut(key, val, uint32(flags), mark, exp)
	case MCAppend, MCPrepend:
		if !exists {
			if !hasVivify {
				c.mcStatus(MCNotStored)
				return
			}
			exp = mcDeadline(vivify, c.Now)
			c.mcPut(key, val, uint32(flags), mark, exp)
			break
		}
		exp = mcExpiry{}
		if len(old.str)+len(val) > maxStringSize {
			c.Error("SERVER_ERROR object too large for cache")
			return
		}
		// flags and exptime of the command are ignored: the item keeps its own
		var b strings.Builder
		b.Grow(len(old.str) + len(val))
		if mode == MCAppend {
			b.WriteString(old.str)
			b.Write(val)
		} else {
			b.Write(val)
			b.WriteString(old.str)
		}
		old.str, old.enc = b.String(), strRaw // as APPEND makes it
		old.mc = 0                            // memcached's joined item is a new one, unmarked
		c.store(key, old, true)
		c.notify(notifyString, string(mode), key) // "append" or "prepend"
	default:
		c.Error("SERVER_ERROR bad internal command")
		return
	}
	if exp.expired {
		c.mcStoredExpired()
		return
	}
	c.mcReply(MCStored, key)
}

// mcStoredExpired replies STORED for an item that expired as it was stored. memcached
// gives such an item a CAS unique of its own, and a client may send it back (ms with c,
// then C): it must be one no item has, so a fresh version, taken whether or not this
// member writes the reply, as every replica takes it.
func (c *Ctx) mcStoredExpired() { c.mcStoredExpiredAs(MCStored, false) }

// mcStoredExpiredAs is mcStoredExpired with another reply code, and with an empty value
// for an mg that vivified the item.
func (c *Ctx) mcStoredExpiredAs(code string, empty bool) {
	ver := c.nextVer()
	if c.W == Discard {
		return
	}
	c.W.Array(5)
	c.W.Status(code)
	if empty {
		c.W.BulkString("")
	} else {
		c.W.Null()
	}
	c.W.Int(0)
	c.W.Int(int64(ver))
	c.W.Int(-1)
}

func mcDeleteCmd(c *Ctx, args [][]byte) {
	p := mcArgs{c: c}
	cas, hasCAS := p.optionalUint(args[2])
	if p.failed() {
		return
	}
	it, ok := c.mcLookup(args[1])
	switch {
	case !ok:
		c.mcStatus(MCNotFound)
	case hasCAS && it.ver != cas:
		c.mcStatus(MCExists)
	default:
		c.del(args[1])
		c.mcStatus(MCDeleted)
	}
}

// MCParseCounter parses an item's value as incr/decr do (memcached's safe_strtoull):
// optional leading white space and '+', decimal digits without overflow, then the end or
// white space. A '-' is refused.
func MCParseCounter(s string) (uint64, bool) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	if i < len(s) && s[i] == '+' {
		i++
	}
	start := i
	var v uint64
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		d := uint64(s[i] - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
		i++
	}
	if i == start || (i < len(s) && !isCSpace(s[i])) {
		return 0, false
	}
	return v, true
}

func mcIncrCmd(c *Ctx, args [][]byte) {
	p := mcArgs{c: c}
	key := args[1]
	decr := string(args[2]) == "-"
	delta := p.uint(args[3])
	cas, hasCAS := p.optionalUint(args[4])
	vivify, hasVivify := p.optional(args[5])
	initial := p.uint(args[6])
	touch, hasTouch := p.optional(args[7])
	if p.failed() {
		return
	}
	it, ok := c.mcLookup(key)
	if !ok {
		if !hasVivify || c.taken(key) {
			c.mcStatus(MCNotFound)
			return
		}
		// ma N: create the counter with the initial value; the delta is not applied.
		// STORED tells the frontend it was created (memcached answers that even to q).
		var num [20]byte // mcPut copies it
		c.mcPut(key, strconv.AppendUint(num[:0], initial, 10), 0, 0, mcDeadline(vivify, c.Now))
		c.mcTouchReply(MCStored, key, touch, hasTouch) // T applies to the new counter too
		return
	}
	// memcached refuses an empty value, and one it keeps in chunks ("too large to be a
	// number"), before it looks at the CAS unique
	if it.str == "" || MCItemSize(len(key), it.flags, len(it.str)) > MCChunkMax {
		c.Error(MCNonNumeric)
		return
	}
	if hasCAS && it.ver != cas {
		c.mcStatus(MCExists)
		return
	}
	cur, numeric := MCParseCounter(it.str)
	if !numeric {
		c.Error(MCNonNumeric)
		return
	}
	switch {
	case !decr:
		cur += delta // wraps at 2^64, as memcached's does
	case delta > cur:
		cur = 0
	default:
		cur -= delta
	}
	// memcached changes a counter in place when its digits fit the item, which stays
	// fetched (and keeps its marks) if it was, and pads a shorter number with spaces to
	// the item's length ("10", decr 1: "9 "); a longer one is a new item. The reply is
	// the number alone: the frontend trims the padding.
	digits := strconv.FormatUint(cur, 10)
	inPlace := len(digits) <= len(it.str)
	keepFetched := inPlace && c.fetchedKey(key, false)
	if inPlace && len(digits) < len(it.str) {
		digits += strings.Repeat(" ", len(it.str)-len(digits))
	}
	it.str = digits
	if !inPlace {
		it.mc = 0
	}
	c.store(key, it, true)
	if keepFetched {
		c.fetchedKey(key, true)
	}
	c.notify(notifyString, "incrby", key)
	c.mcTouchReply(MCOK, key, touch, hasTouch)
}

// mcTouchReply sets the TTL of ma's T, if it has one, and replies with code for the item
// at key. A T that expires the item is applied after the reply: memcached answers with
// the counter, which is then gone.
func (c *Ctx) mcTouchReply(code string, key []byte, touch int64, hasTouch bool) {
	if hasTouch && mcDeadline(touch, c.Now).expired {
		c.mcReply(code, key)
		c.del(key)
		return
	}
	if hasTouch {
		c.mcTouch(key, touch)
	}
	c.mcReply(code, key)
}

// mcTouch sets key's expiry from an exptime; it reports whether the item still exists.
// The item keeps its CAS unique, as memcached's touch, gat and mg T keep it: a client's
// cas after another's touch still stores. The key's version is that unique, so this is
// also no change for a Redis WATCH.
func (c *Ctx) mcTouch(key []byte, exptime int64) bool {
	exp := mcDeadline(exptime, c.Now)
	switch {
	case exp.expired:
		c.del(key)
		return false
	case exp.at == 0:
		if c.dropDeadline(key, false) {
			c.notify(notifyGeneric, "persist", key)
		}
	default:
		c.setDeadline(key, exp.at, false)
		c.notify(notifyGeneric, "expire", key)
	}
	return true
}

func mcTouchCmd(c *Ctx, args [][]byte) {
	p := mcArgs{c: c}
	exptime := p.int(args[2])
	if p.failed() {
		return
	}
	key := args[1]
	if _, ok := c.mcLookup(key); !ok {
		c.mcStatus(MCNotFound)
		return
	}
	c.fetchedKey(key, true) // a touch fetches the item, as memcached's
	if mcDeadline(exptime, c.Now).expired {
		// a touch that expires the item still found it: gat returns it one last time
		c.mcReply(MCTouched, key)
		c.del(key)
		return
	}
	c.mcTouch(key, exptime)
	c.mcReply(MCTouched, key)
}

// mcMetaGetCmd is an mg that may change the item, as memcached 1.6's process_mget_command
// does past its lookup: a miss with vivify creates an empty item (flags 0, TTL vivify)
// whose token this mg wins; a hit is touched (T) first, then wins the token if no mg
// has and the item is stale or its TTL is below recache (R). The reply is MCWon for a
// win, MCTouched for another hit, MCNotFound for a miss; the item's marks (X, Z) are in
// its flags field.
func mcMetaGetCmd(c *Ctx, args [][]byte) {
	p := mcArgs{c: c}
	key := args[1]
	touch, hasTouch := p.optional(args[2])
	vivify, hasVivify := p.optional(args[3])
	recache, hasRecache := p.optional(args[4])
	bump := string(args[5]) == "1"
	if p.failed() {
		return
	}
	it, ok := c.mcLookup(key)
	if !ok {
		if !hasVivify || c.taken(key) {
			c.mcStatus(MCNotFound)
			return
		}
		exp := mcDeadline(vivify, c.Now)
		c.mcPut(key, nil, 0, mcWon, exp)
		if exp.expired {
			c.mcStoredExpiredAs(MCWon, true) // memcached answers for the item it then drops
			return
		}
		c.mcReply(MCWon, key)
		if bump {
			c.fetchedKey(key, true)
		}
		return
	}
	if bump {
		c.fetchedKey(key, true)
	}
	expiring := hasTouch && mcDeadline(touch, c.Now).expired
	if hasTouch && !expiring {
		c.mcTouch(key, touch)
	}
	code := MCTouched
	if it.mc&mcWon == 0 {
		ttl := c.mcTTL(key) // after the touch, as memcached checks it
		if it.mc&mcStale != 0 || (hasRecache && ttl >= 0 && ttl < recache) {
			code = MCWon
			// the token changes no value: no new CAS unique (the item as touched)
			d := c.db(key)
			now, _ := d.get(key)
			now.mc |= mcWon
			d.put(key, now)
		}
	}
	c.mcReply(code, key)
	if expiring {
		c.del(key) // answered for, then gone, as a touch that expires it
	}
}

// mcInvalidateCmd is md with I: rather than deleted, the item is marked stale, its
// recache token is free to win again, it gets a new CAS unique and, with an exptime, a
// new TTL (0: none; negative: it expires now).
func mcInvalidateCmd(c *Ctx, args [][]byte) {
	p := mcArgs{c: c}
	key := args[1]
	cas, hasCAS := p.optionalUint(args[2])
	exptime, hasExp := p.optional(args[3])
	if p.failed() {
		return
	}
	it, ok := c.mcLookup(key)
	switch {
	case !ok:
		c.mcStatus(MCNotFound)
		return
	case hasCAS && it.ver != cas:
		c.mcStatus(MCExists)
		return
	}
	fetched := c.fetchedKey(key, false)
	it.mc = it.mc&^mcWon | mcStale
	c.store(key, it, true)
	if fetched {
		c.fetchedKey(key, true) // changed in place: still fetched
	}
	if hasExp {
		c.mcTouch(key, exptime)
	}
	c.mcStatus(MCDeleted)
}

// mcFlushAllCmd is flush_all, as memcached 1.6 has it. memcached records a flush as
// oldest_live, a second on its clock: once that second has come, every item last stored
// (or bumped) at or before it is gone. flush_all with no exptime, 0 or a negative one
// takes the second before now, and flushes the items that exist now (memcached tells
// them by their CAS); a relative exptime N takes the second N-1 from now, an absolute one
// the second before it. So `flush_all 2` empties the cache 1 to 2 seconds later, and
// until the end of that second what is stored is flushed too: probed against memcached
// 1.6.18, a set right after the items vanished vanishes as well.
//
// Here the second is replicated state (Store.mcFlushLive) and the entries' clock decides
// it, the same on every member: while it is pending and its second has come, database 0
// reads as empty (mcFlushed; the items in it were all stored at or before that second,
// since the first entry of a later second empties it: Apply) and a write finds no key
// there.
//
// One difference is left: an absolute exptime before memcached's start flushes nothing
// there (its relative clock cannot express it); here it flushes now, as one after the
// start does to the items stored before it, which is every item a client could have
// stored before that time.
func mcFlushAllCmd(c *Ctx, args [][]byte) {
	p := mcArgs{c: c}
	exptime := p.int(args[1])
	if p.failed() {
		return
	}
	now := c.Now / 1000 // the entry's second (unix time, as memcached's clock is)
	var live int64
	switch {
	case exptime <= 0:
		live = 0 // now, and nothing pending
	case exptime <= mcMaxRelative:
		live = now + exptime - 1
	default:
		live = exptime - 1
	}
	if live <= now {
		c.mcFlushDB0() // the items of this second and before: all of them
	}
	if live < now {
		live = 0 // nothing later is flushed
	}
	c.s.mcFlushLive.Store(live)
	c.mcStatus(MCOK)
}

// mcFlushed reports whether a pending flush_all hides every item of database 0 from a
// reader (or an entry) at now, unix ms.
func (s *Store) mcFlushed(now int64) bool {
	live := s.mcFlushLive.Load()
	return live != 0 && now >= live*1000
}

// mcFlushDue empties database 0 before an entry of time now (unix ms) once a pending
// flush_all's second is over: its items were stored at or before it, and are gone.
func (s *Store) mcFlushDue(c *Ctx, now int64) {
	if live := s.mcFlushLive.Load(); live != 0 && now >= (live+1)*1000 {
		s.lockAll(true)
		c.mcFlushDB0()
		s.unlockAll(true)
		s.mcFlushLive.Store(0)
	}
}

// mcFlushDB0 empties database 0 (FLUSHDB's way: one new version for every key).
func (c *Ctx) mcFlushDB0() {
	ver := c.nextVer()
	for i := range c.s.shards {
		d := &c.s.shards[i].dbs[0]
		d.reset()
		d.dropTombstones(ver)
	}
	c.flushed() // every key may have changed: a cached one is stale
}

// mcFlushCmd is flush_all as nanokv logged it before mcflushall (its entries replay as
// they were applied then): with no delay it empties database 0; with a delay every item
// that exists now expires when the delay has passed, unless it expires sooner. All the
// touched items get one new version, so the order of the walk does not matter.
func mcFlushCmd(c *Ctx, args [][]byte) {
	p := mcArgs{c: c}
	delay := p.int(args[1])
	if p.failed() {
		return
	}
	exp := mcDeadline(delay, c.Now)
	if delay <= 0 || exp.expired {
		c.mcFlushDB0()
		c.mcStatus(MCOK)
		return
	}
	ver := c.nextVer()
	for i := range c.s.shards {
		d := &c.s.shards[i].dbs[0]
		d.each(func(k string, it item) bool { // replaces slots only: allowed in each
			if it.hasTTL && d.ttl[k] <= exp.at {
				return true
			}
			it.hasTTL = true
			it.ver = ver
			if d.ttl == nil {
				d.ttl = make(map[string]int64)
			}
			d.ttl[k] = exp.at
			d.put([]byte(k), it)
			return true
		})
	}
	c.flushed() // every deadline moved: a cached TTL is stale
	c.mcStatus(MCOK)
}

// MCItem is what a memcached read sees of a key.
type MCItem struct {
	Value    string
	Flags    uint32
	CAS      uint64
	Deadline int64 // unix ms; 0: none
	// Idle is the seconds since the key's last access before this read (mg's l, me's
	// la); to the minute under an LFU policy (lfuIdleSeconds).
	Idle int64
	// Fetched: the key was read since it was last stored, before this read (mg's h,
	// me's fetch).
	Fetched bool
	// BinaryKey: a meta command with b stored the item (memcached's ITEM_KEY_BINARY).
	BinaryKey bool
	// Stale: md with I invalidated the item (mg's X); Won: an mg won its recache token
	// (mg's Z for the others).
	Stale, Won bool
	// Expired, Flushed: a read that found no item found one past its TTL, or one
	// flush_all hides (memcached's get_expired, get_flushed).
	Expired, Flushed bool
}

// SecondsLeft is the item's remaining TTL in whole seconds (rounded up), −1 for none.
func (it MCItem) SecondsLeft(now int64) int64 {
	if it.Deadline == 0 {
		return -1
	}
	return mcSecondsLeft(it.Deadline, now)
}

// MCGet reads key in database 0 for a memcached client, at the reader's clock now (unix
// ms): an access to it (access.go). Only string keys are visible. The caller has passed
// the read barrier.
func (s *Store) MCGet(key []byte, now int64) (MCItem, bool) { return s.mcGet(key, now, true) }

// MCPeek is MCGet that is no access: mg with u (no LRU bump), me.
func (s *Store) MCPeek(key []byte, now int64) (MCItem, bool) { return s.mcGet(key, now, false) }

func (s *Store) mcGet(key []byte, now int64, access bool) (MCItem, bool) {
	sh := &s.shards[shardOf(key)]
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	d := &sh.dbs[0]
	t := &d.keys
	if t.n == 0 {
		return MCItem{}, false
	}
	i, ok := find(t, hashKey(key), key)
	if !ok || Type(t.ents[i].meta&metaTypeMask) != TypeString {
		return MCItem{}, false
	}
	it := d.view(string(key), t.ents[i].slot())
	out := mcItemOf(it)
	if it.hasTTL {
		out.Deadline = d.ttl[string(key)]
		if out.Deadline <= now {
			return MCItem{Expired: true}, false
		}
	}
	if s.mcFlushed(now) {
		return MCItem{Flushed: true}, false
	}
	if t.acc != nil {
		clock := atomic.LoadUint32(&t.ents[i].clock)
		out.Fetched = clock&clockFetched != 0
		out.Idle = idleIn(t.acc.tracking(), clock, now)
		if access {
			t.touch(i, now)
			t.fetch(i)
		}
	}
	return out, true
}

func mcItemOf(it item) MCItem {
	return MCItem{Value: it.str, Flags: it.flags, CAS: it.ver, BinaryKey: it.mc&mcBinKey != 0,
		Stale: it.mc&mcStale != 0, Won: it.mc&mcWon != 0}
}

// MCItemCount is the number of keys in database 0 (memcached's curr_items).
func (s *Store) MCItemCount() int { return s.DBSize(0) }

// MCEach calls fn with every item memcached's get would find in database 0 at now (its
// strings), shard by shard under each shard's read lock, in the keyspace table's order
// (lru_crawler metadump). fn must not call back into the store.
func (s *Store) MCEach(now int64, fn func(key string, it MCItem)) {
	if s.mcFlushed(now) {
		return
	}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		d := &sh.dbs[0]
		d.each(func(k string, it item) bool {
			if it.typ != TypeString {
				return true
			}
			out := mcItemOf(it)
			if it.hasTTL {
				if out.Deadline = d.ttl[k]; out.Deadline <= now {
					return true
				}
			}
			if clock, m := clockOf(&d.keys, []byte(k)); m != accessOff {
				out.Fetched = clock&clockFetched != 0
				out.Idle = idleIn(m, clock, now)
			}
			fn(k, out)
			return true
		})
		sh.mu.RUnlock()
	}
}
