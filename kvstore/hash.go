package kvstore

import (
	"encoding/binary"
	"math"
	"math/big"
	"strconv"
)

// Hash commands (Redis 7.0 t_hash.c semantics).
//
// A hash is a dense slice of (field, value) entries plus a map from field to its slice
// index. Every reply and every random choice walks the slice, never the map, so that the
// result depends only on the operations applied: deletion swaps the last entry into the
// hole, which every replica does identically.

func init() {
	collectionDecoders[TypeHash] = decodeHash
	const (
		w  = FlagWrite | FlagDenyOOM | FlagFast
		wf = FlagWrite | FlagFast
		rf = FlagReadOnly | FlagFast
		r  = FlagReadOnly
	)
	register(
		&Spec{Name: "hset", Arity: -4, Flags: w, FirstKey: 1, LastKey: 1, Step: 1, Group: "hash", Since: "2.0.0", Summary: "Set the string value of a hash field", Run: hsetCmd},
		&Spec{Name: "hsetnx", Arity: 4, Flags: w, FirstKey: 1, LastKey: 1, Step: 1, Group: "hash", Since: "2.0.0", Summary: "Set the value of a hash field, only if the field does not exist", Run: hsetnxCmd},
		&Spec{Name: "hget", Arity: 3, Flags: rf, FirstKey: 1, LastKey: 1, Step: 1, Group: "hash", Since: "2.0.0", Summary: "Get the value of a hash field", Run: hgetCmd},
		&Spec{Name: "hmset", Arity: -4, Flags: w, FirstKey: 1, LastKey: 1, Step: 1, Group: "hash", Since: "2.0.0", Summary: "Set multiple hash fields to multiple values", Run: hsetCmd},
		&Spec{Name: "hmget", Arity: -3, Flags: rf, FirstKey: 1, LastKey: 1, Step: 1, Group: "hash", Since: "2.0.0", Summary: "Get the values of all the given hash fields", Run: hmgetCmd},
		&Spec{Name: "hdel", Arity: -3, Flags: wf, FirstKey: 1, LastKey: 1, Step: 1, Group: "hash", Since: "2.0.0", Summary: "Delete one or more hash fields", Run: hdelCmd},
		&Spec{Name: "hlen", Arity: 2, Flags: rf, FirstKey: 1, LastKey: 1, Step: 1, Group: "hash", Since: "2.0.0", Summary: "Get the number of fields in a hash", Run: hlenCmd},
		&Spec{Name: "hstrlen", Arity: 3, Flags: rf, FirstKey: 1, LastKey: 1, Step: 1, Group: "hash", Since: "3.2.0", Summary: "Get the length of the value of a hash field", Run: hstrlenCmd},
		&Spec{Name: "hexists", Arity: 3, Flags: rf, FirstKey: 1, LastKey: 1, Step: 1, Group: "hash", Since: "2.0.0", Summary: "Determine if a hash field exists", Run: hexistsCmd},
		&Spec{Name: "hkeys", Arity: 2, Flags: r, FirstKey: 1, LastKey: 1, Step: 1, Group: "hash", Since: "2.0.0", Summary: "Get all the fields in a hash", Run: hashListCmd(true, false)},
		&Spec{Name: "hvals", Arity: 2, Flags: r, FirstKey: 1, LastKey: 1, Step: 1, Group: "hash", Since: "2.0.0", Summary: "Get all the values in a hash", Run: hashListCmd(false, true)},
		&Spec{Name: "hgetall", Arity: 2, Flags: r, FirstKey: 1, LastKey: 1, Step: 1, Group: "hash", Since: "2.0.0", Summary: "Get all the fields and values in a hash", Run: hashListCmd(true, true)},
		&Spec{Name: "hincrby", Arity: 4, Flags: w, FirstKey: 1, LastKey: 1, Step: 1, Group: "hash", Since: "2.0.0", Summary: "Increment the integer value of a hash field by the given number", Run: hincrbyCmd},
		&Spec{Name: "hincrbyfloat", Arity: 4, Flags: w, FirstKey: 1, LastKey: 1, Step: 1, Group: "hash", Since: "2.6.0", Summary: "Increment the float value of a hash field by the given amount", Run: hincrbyfloatCmd},
		&Spec{Name: "hrandfield", Arity: -2, Flags: r, FirstKey: 1, LastKey: 1, Step: 1, Group: "hash", Since: "6.2.0", Summary: "Get one or multiple random fields from a hash", Run: hrandfieldCmd},
		&Spec{Name: "hscan", Arity: -3, Flags: r, FirstKey: 1, LastKey: 1, Step: 1, Group: "hash", Since: "2.8.0", Summary: "Incrementally iterate hash fields and associated values", Run: hscanCmd},
	)
}

// Error replies of the hash commands, word for word as Redis 7.0 sends them.
const (
	errHashNotInteger = "ERR hash value is not an integer"
	errHashNotFloat   = "ERR hash value is not a float"
	errHashIncrNaNInf = "ERR value is NaN or Infinity"
	errHashIncrResult = "ERR increment would produce NaN or Infinity"
	hsErrRandRange    = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
	hsErrOutOfRange   = "ERR value is out of range"
)

// hsMaxRandomRepeat bounds the reply of SRANDMEMBER and HRANDFIELD with a negative count
// (elements may repeat, so the reply is not bounded by the collection). Redis would try
// to build a reply of up to 2^63 elements; here the command may run on the applier (in a
// transaction), where it would stall every replica, so larger counts are refused.
const hsMaxRandomRepeat = 1 << 20

// --- the hash value ------------------------------------------------------------------------

type hashEntry struct {
	field, value string
}

// hashColl is a hash: entries in insertion order (modulo swap-deletes) and an index.
type hashColl struct {
	entries []hashEntry
	index   map[string]int
	large   bool // Redis would hold it in a hashtable (object.go)
}

func newHashColl(capacity int) *hashColl {
	return &hashColl{entries: make([]hashEntry, 0, capacity), index: make(map[string]int, capacity)}
}

func (h *hashColl) Len() int { return len(h.entries) }

func (h *hashColl) get(field []byte) (string, bool) {
	i, ok := h.index[string(field)]
	if !ok {
		return "", false
	}
	return h.entries[i].value, true
}

// set stores value at field; it reports whether the field is new.
func (h *hashColl) set(field, value string) bool {
	if i, ok := h.index[field]; ok {
		h.entries[i].value = value
		h.noteSet(field, value)
		return false
	}
	h.index[field] = len(h.entries)
	h.entries = append(h.entries, hashEntry{field, value})
	h.noteSet(field, value)
	return true
}

// del removes field, moving the last entry into its slot; it reports whether it was there.
func (h *hashColl) del(field []byte) bool {
	i, ok := h.index[string(field)]
	if !ok {
		return false
	}
	last := len(h.entries) - 1
	if i != last {
		h.entries[i] = h.entries[last]
		h.index[h.entries[i].field] = i
	}
	h.entries[last] = hashEntry{}
	h.entries = h.entries[:last]
	delete(h.index, string(field))
	return true
}

func (h *hashColl) clone() collection {
	n := newHashColl(len(h.entries))
	n.entries = append(n.entries, h.entries...)
	for f, i := range h.index {
		n.index[f] = i
	}
	n.large = h.large
	return n
}

// appendTo writes count, then (field, value) pairs in slice order, each length-prefixed.
func (h *hashColl) appendTo(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(h.entries)))
	for _, e := range h.entries {
		dst = binary.AppendUvarint(dst, uint64(len(e.field)))
		dst = append(dst, e.field...)
		dst = binary.AppendUvarint(dst, uint64(len(e.value)))
		dst = append(dst, e.value...)
	}
	return dst
}

// memUsage estimates: the slice entry (two string headers), the map entry (key header,
// int, bucket overhead) and the bytes of field and value.
func (h *hashColl) memUsage() int {
	n := 64
	for _, e := range h.entries {
		n += 32 + 48 + len(e.field) + len(e.value)
	}
	return n
}

// decodeHash rebuilds a hash from appendTo's bytes, in the same order.
func decodeHash(b []byte) (collection, error) {
	r := hsReader{b: b}
	n := r.uvarint()
	// every entry takes at least two bytes; an empty hash never exists
	if r.bad || n == 0 || n > uint64(len(r.b))/2 {
		return nil, ErrCorrupt
	}
	h := newHashColl(int(n))
	for i := uint64(0); i < n; i++ {
		f := r.str()
		v := r.str()
		if r.bad {
			return nil, ErrCorrupt
		}
		if !h.set(f, v) {
			return nil, ErrCorrupt // duplicate field
		}
	}
	if len(r.b) != 0 {
		return nil, ErrCorrupt
	}
	return h, nil
}

// hsReader reads appendTo's encoding (shared by hashes and sets).
type hsReader struct {
	b   []byte
	bad bool
}

func (r *hsReader) uvarint() uint64 {
	if r.bad {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *hsReader) str() string {
	n := r.uvarint()
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// --- keyspace access -----------------------------------------------------------------------

// hashAt returns the hash at key, nil when there is none. For a key of another type it
// replies WRONGTYPE and reports wrong.
func (c *Ctx) hashAt(key []byte) (it item, h *hashColl, wrong bool) {
	it, ok, wrong := c.lookupType(key, TypeHash)
	if !ok {
		return it, nil, wrong
	}
	return it, it.coll.(*hashColl), false
}

// hashForWrite returns the hash at key, or a new empty one (not yet in the keyspace: the
// caller stores it with c.touched once it has fields).
func (c *Ctx) hashForWrite(key []byte) (it item, h *hashColl, wrong bool) {
	it, h, wrong = c.hashAt(key)
	if wrong || h != nil {
		return it, h, wrong
	}
	h = newHashColl(1)
	return item{typ: TypeHash, coll: h}, h, false
}

// --- commands ------------------------------------------------------------------------------

// hsetCmd is HSET (replies the number of new fields) and HMSET (replies OK).
func hsetCmd(c *Ctx, args [][]byte) {
	if len(args)%2 != 0 {
		c.Error(WrongArgs(string(lowerName(args[0]))))
		return
	}
	it, h, wrong := c.hashForWrite(args[1])
	if wrong {
		return
	}
	added := 0
	for i := 2; i < len(args); i += 2 {
		if h.set(string(args[i]), string(args[i+1])) {
			added++
		}
	}
	c.touched(args[1], it)
	c.notify(notifyHash, "hset", args[1])
	if eq(args[0], "hmset") {
		c.W.Status("OK")
	} else {
		c.W.Int(int64(added))
	}
}

func hsetnxCmd(c *Ctx, args [][]byte) {
	it, h, wrong := c.hashForWrite(args[1])
	if wrong {
		return
	}
	if _, exists := h.get(args[2]); exists {
		c.W.Int(0)
		return
	}
	h.set(string(args[2]), string(args[3]))
	c.touched(args[1], it)
	c.notify(notifyHash, "hset", args[1])
	c.W.Int(1)
}

func hgetCmd(c *Ctx, args [][]byte) {
	_, h, wrong := c.hashAt(args[1])
	if wrong {
		return
	}
	if h != nil {
		if v, ok := h.get(args[2]); ok {
			c.W.BulkString(v)
			return
		}
	}
	c.W.Null()
}

func hmgetCmd(c *Ctx, args [][]byte) {
	_, h, wrong := c.hashAt(args[1])
	if wrong {
		return
	}
	c.W.Array(len(args) - 2)
	for _, f := range args[2:] {
		if h != nil {
			if v, ok := h.get(f); ok {
				c.W.BulkString(v)
				continue
			}
		}
		c.W.Null()
	}
}

func hdelCmd(c *Ctx, args [][]byte) {
	it, h, wrong := c.hashAt(args[1])
	if wrong {
		return
	}
	if h == nil {
		c.W.Int(0)
		return
	}
	n := 0
	for _, f := range args[2:] {
		if h.del(f) {
			n++
			if h.Len() == 0 {
				break
			}
		}
	}
	if n > 0 {
		c.notify(notifyHash, "hdel", args[1])
		c.touched(args[1], it)
	}
	c.W.Int(int64(n))
}

func hlenCmd(c *Ctx, args [][]byte) {
	_, h, wrong := c.hashAt(args[1])
	if wrong {
		return
	}
	if h == nil {
		c.W.Int(0)
		return
	}
	c.W.Int(int64(h.Len()))
}

func hstrlenCmd(c *Ctx, args [][]byte) {
	_, h, wrong := c.hashAt(args[1])
	if wrong {
		return
	}
	n := 0
	if h != nil {
		v, _ := h.get(args[2])
		n = len(v)
	}
	c.W.Int(int64(n))
}

func hexistsCmd(c *Ctx, args [][]byte) {
	_, h, wrong := c.hashAt(args[1])
	if wrong {
		return
	}
	if h != nil {
		if _, ok := h.get(args[2]); ok {
			c.W.Int(1)
			return
		}
	}
	c.W.Int(0)
}

// hashListCmd answers HKEYS (fields), HVALS (values) and HGETALL (both, as a map), in
// the hash's dense order.
func hashListCmd(fields, values bool) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		_, h, wrong := c.hashAt(args[1])
		if wrong {
			return
		}
		n := 0
		if h != nil {
			n = h.Len()
		}
		if fields && values {
			c.W.Map(n)
		} else {
			c.W.Array(n)
		}
		if h == nil {
			return
		}
		for _, e := range h.entries {
			if fields {
				c.W.BulkString(e.field)
			}
			if values {
				c.W.BulkString(e.value)
			}
		}
	}
}

func hincrbyCmd(c *Ctx, args [][]byte) {
	incr, ok := c.parseIntArg(args[3])
	if !ok {
		return
	}
	it, h, wrong := c.hashForWrite(args[1])
	if wrong {
		return
	}
	var cur int64
	if s, exists := h.get(args[2]); exists {
		if cur, ok = ParseInt([]byte(s)); !ok {
			c.Error(errHashNotInteger)
			return
		}
	}
	if (incr < 0 && cur < 0 && incr < math.MinInt64-cur) || (incr > 0 && cur > 0 && incr > math.MaxInt64-cur) {
		c.Error(ErrOverflow)
		return
	}
	cur += incr
	h.set(string(args[2]), strconv.FormatInt(cur, 10))
	c.touched(args[1], it)
	c.notify(notifyHash, "hincrby", args[1])
	c.W.Int(cur)
}

func hincrbyfloatCmd(c *Ctx, args [][]byte) {
	incr, ok := parseLongDouble(args[3])
	if !ok {
		c.Error(ErrNotFloat)
		return
	}
	if incr.IsInf() {
		c.Error(errHashIncrNaNInf)
		return
	}
	it, h, wrong := c.hashForWrite(args[1])
	if wrong {
		return
	}
	cur := new(big.Float).SetPrec(longDoublePrec)
	if s, exists := h.get(args[2]); exists {
		if cur, ok = parseLongDouble([]byte(s)); !ok {
			c.Error(errHashNotFloat)
			return
		}
	}
	if cur.IsInf() {
		c.Error(errHashIncrResult)
		return
	}
	out, ok := addLongDouble(cur, incr)
	if !ok {
		c.Error(errHashIncrResult)
		return
	}
	h.set(string(args[2]), out)
	c.touched(args[1], it)
	c.notify(notifyHash, "hincrbyfloat", args[1])
	c.W.BulkString(out)
}

// hsParseRandCount parses the count of SRANDMEMBER and HRANDFIELD: any integer but
// LLONG_MIN, with Redis's errors.
func (c *Ctx) hsParseRandCount(b []byte) (int64, bool) {
	v, ok := c.parseIntArg(b)
	if !ok {
		return 0, false
	}
	if v == math.MinInt64 {
		c.Error(hsErrRandRange)
		return 0, false
	}
	return v, true
}

// hsSample returns k distinct indexes of [0, n), 0 < k < n, in the order drawn from r.
func hsSample(r *rng, n, k int) []int {
	if k*4 >= n {
		// partial Fisher–Yates over all the indexes
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		for i := 0; i < k; i++ {
			j := i + r.intn(n-i)
			idx[i], idx[j] = idx[j], idx[i]
		}
		return idx[:k]
	}
	// few of many: draw until k distinct (the map only answers membership)
	out := make([]int, 0, k)
	seen := make(map[int]struct{}, k)
	for len(out) < k {
		i := r.intn(n)
		if _, dup := seen[i]; dup {
			continue
		}
		seen[i] = struct{}{}
		out = append(out, i)
	}
	return out
}

func hrandfieldCmd(c *Ctx, args [][]byte) {
	key := args[1]
	if len(args) == 2 {
		_, h, wrong := c.hashAt(key)
		switch {
		case wrong:
		case h == nil:
			c.W.Null()
		default:
			c.W.BulkString(h.entries[c.rnd.intn(h.Len())].field)
		}
		return
	}
	withValues := false
	if len(args) >= 4 {
		if len(args) > 4 || !eq(args[3], "withvalues") {
			c.Error(ErrSyntax)
			return
		}
		withValues = true
	}
	count, ok := c.hsParseRandCount(args[2])
	if !ok {
		return
	}
	if withValues && (count < -math.MaxInt64/2 || count > math.MaxInt64/2) {
		c.Error(hsErrOutOfRange)
		return
	}
	_, h, wrong := c.hashAt(key)
	if wrong {
		return
	}
	if h == nil || count == 0 {
		c.W.Array(0)
		return
	}
	resp3 := c.W.Resp3()
	header := func(n int) {
		if withValues && !resp3 {
			c.W.Array(2 * n)
		} else {
			c.W.Array(n)
		}
	}
	entry := func(e hashEntry) {
		if !withValues {
			c.W.BulkString(e.field)
			return
		}
		if resp3 {
			c.W.Array(2)
		}
		c.W.BulkString(e.field)
		c.W.BulkString(e.value)
	}
	size := h.Len()
	switch {
	case count < 0:
		if -count > hsMaxRandomRepeat {
			c.Error(hsErrOutOfRange)
			return
		}
		header(int(-count))
		for i := int64(0); i < -count; i++ {
			entry(h.entries[c.rnd.intn(size)])
		}
	case count >= int64(size):
		header(size)
		for _, e := range h.entries {
			entry(e)
		}
	default:
		idx := hsSample(&c.rnd, size, int(count))
		header(len(idx))
		for _, i := range idx {
			entry(h.entries[i])
		}
	}
}

func hscanCmd(c *Ctx, args [][]byte) {
	if _, ok := c.parseCursor(args[2]); !ok {
		return
	}
	_, h, wrong := c.hashAt(args[1])
	if wrong {
		return
	}
	if h == nil {
		hsEmptyScan(c)
		return
	}
	o, ok := c.parseScanOptions(args[3:], false)
	if !ok {
		return
	}
	// no stable cursor over a swap-deleted slice: return everything at once, as Redis does
	// for its small encodings
	var out []hashEntry
	if o.match == nil {
		out = h.entries
	} else {
		for _, e := range h.entries {
			if Glob(o.match, []byte(e.field)) {
				out = append(out, e)
			}
		}
	}
	c.W.Array(2)
	c.W.BulkString("0")
	c.W.Array(2 * len(out))
	for _, e := range out {
		c.W.BulkString(e.field)
		c.W.BulkString(e.value)
	}
}

// hsEmptyScan is the reply of HSCAN/SSCAN on a missing key.
func hsEmptyScan(c *Ctx) {
	c.W.Array(2)
	c.W.BulkString("0")
	c.W.Array(0)
}
