package kvstore

import (
	"encoding/binary"
	"sort"
)

// Set commands (Redis 7.0 t_set.c semantics).
//
// A set is a dense slice of members plus a map from member to its slice index, like a
// hash: replies and random choices walk the slice, so they depend only on the operations
// applied, never on Go's map order.

func init() {
	collectionDecoders[TypeSet] = decodeSet
	const (
		w  = FlagWrite | FlagDenyOOM | FlagFast
		wf = FlagWrite | FlagFast
		wd = FlagWrite | FlagDenyOOM
		rf = FlagReadOnly | FlagFast
		r  = FlagReadOnly
	)
	register(
		&Spec{Name: "sadd", Arity: -3, Flags: w, FirstKey: 1, LastKey: 1, Step: 1, Group: "set", Since: "1.0.0", Summary: "Add one or more members to a set", Run: saddCmd},
		&Spec{Name: "srem", Arity: -3, Flags: wf, FirstKey: 1, LastKey: 1, Step: 1, Group: "set", Since: "1.0.0", Summary: "Remove one or more members from a set", Run: sremCmd},
		&Spec{Name: "smembers", Arity: 2, Flags: r, FirstKey: 1, LastKey: 1, Step: 1, Group: "set", Since: "1.0.0", Summary: "Get all the members in a set", Run: smembersCmd},
		&Spec{Name: "sismember", Arity: 3, Flags: rf, FirstKey: 1, LastKey: 1, Step: 1, Group: "set", Since: "1.0.0", Summary: "Determine if a given value is a member of a set", Run: sismemberCmd},
		&Spec{Name: "smismember", Arity: -3, Flags: rf, FirstKey: 1, LastKey: 1, Step: 1, Group: "set", Since: "6.2.0", Summary: "Returns the membership associated with the given elements for a set", Run: smismemberCmd},
		&Spec{Name: "scard", Arity: 2, Flags: rf, FirstKey: 1, LastKey: 1, Step: 1, Group: "set", Since: "1.0.0", Summary: "Get the number of members in a set", Run: scardCmd},
		&Spec{Name: "spop", Arity: -2, Flags: wf, FirstKey: 1, LastKey: 1, Step: 1, Group: "set", Since: "1.0.0", Summary: "Remove and return one or multiple random members from a set", Run: spopCmd},
		&Spec{Name: "srandmember", Arity: -2, Flags: r, FirstKey: 1, LastKey: 1, Step: 1, Group: "set", Since: "1.0.0", Summary: "Get one or multiple random members from a set", Run: srandmemberCmd},
		&Spec{Name: "smove", Arity: 4, Flags: wf, FirstKey: 1, LastKey: 2, Step: 1, Group: "set", Since: "1.0.0", Summary: "Move a member from one set to another", Run: smoveCmd},
		&Spec{Name: "sinter", Arity: -2, Flags: r, FirstKey: 1, LastKey: -1, Step: 1, Group: "set", Since: "1.0.0", Summary: "Intersect multiple sets", Run: sinterCmd},
		&Spec{Name: "sinterstore", Arity: -3, Flags: wd | FlagReadLookups, FirstKey: 1, LastKey: -1, Step: 1, Group: "set", Since: "1.0.0", Summary: "Intersect multiple sets and store the resulting set in a key", Run: sinterstoreCmd},
		// SINTERCARD's keys follow a numkeys argument: it locks the whole store
		&Spec{Name: "sintercard", Arity: -3, Flags: r | FlagAllKeys, Group: "set", Since: "7.0.0", Summary: "Intersect multiple sets and return the cardinality of the result", Run: sintercardCmd},
		&Spec{Name: "sunion", Arity: -2, Flags: r, FirstKey: 1, LastKey: -1, Step: 1, Group: "set", Since: "1.0.0", Summary: "Add multiple sets", Run: sunionCmd},
		&Spec{Name: "sunionstore", Arity: -3, Flags: wd | FlagReadLookups, FirstKey: 1, LastKey: -1, Step: 1, Group: "set", Since: "1.0.0", Summary: "Add multiple sets and store the resulting set in a key", Run: sunionstoreCmd},
		&Spec{Name: "sdiff", Arity: -2, Flags: r, FirstKey: 1, LastKey: -1, Step: 1, Group: "set", Since: "1.0.0", Summary: "Subtract multiple sets", Run: sdiffCmd},
		&Spec{Name: "sdiffstore", Arity: -3, Flags: wd | FlagReadLookups, FirstKey: 1, LastKey: -1, Step: 1, Group: "set", Since: "1.0.0", Summary: "Subtract multiple sets and store the resulting set in a key", Run: sdiffstoreCmd},
		&Spec{Name: "sscan", Arity: -3, Flags: r, FirstKey: 1, LastKey: 1, Step: 1, Group: "set", Since: "2.8.0", Summary: "Incrementally iterate Set elements", Run: sscanCmd},
	)
}

// Error replies of SINTERCARD, word for word as Redis 7.0 sends them.
const (
	errSetNumKeys     = "ERR numkeys should be greater than 0"
	errSetNumKeysArgs = "ERR Number of keys can't be greater than number of args"
	errSetLimit       = "ERR LIMIT can't be negative"
)

// --- the set value -------------------------------------------------------------------------

// setColl is a set: members in insertion order (modulo swap-deletes) and an index.
type setColl struct {
	members []string
	index   map[string]int
	large   bool // Redis would hold it in a hashtable, not an intset (object.go)
}

func newSetColl(capacity int) *setColl {
	return &setColl{members: make([]string, 0, capacity), index: make(map[string]int, capacity)}
}

func (s *setColl) Len() int { return len(s.members) }

func (s *setColl) has(m []byte) bool {
	_, ok := s.index[string(m)]
	return ok
}

// add inserts m; it reports whether m is new.
func (s *setColl) add(m string) bool {
	if _, ok := s.index[m]; ok {
		return false
	}
	s.index[m] = len(s.members)
	s.members = append(s.members, m)
	s.noteAdd(m)
	return true
}

// remove deletes m, moving the last member into its slot; it reports whether m was there.
func (s *setColl) remove(m []byte) bool {
	i, ok := s.index[string(m)]
	if !ok {
		return false
	}
	s.removeAt(i)
	return true
}

func (s *setColl) removeAt(i int) {
	last := len(s.members) - 1
	delete(s.index, s.members[i])
	if i != last {
		s.members[i] = s.members[last]
		s.index[s.members[i]] = i
	}
	s.members[last] = ""
	s.members = s.members[:last]
}

func (s *setColl) clone() collection {
	n := newSetColl(len(s.members))
	n.members = append(n.members, s.members...)
	for m, i := range s.index {
		n.index[m] = i
	}
	n.large = s.large
	return n
}

// appendTo writes count, then the members in slice order, each length-prefixed.
func (s *setColl) appendTo(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s.members)))
	for _, m := range s.members {
		dst = binary.AppendUvarint(dst, uint64(len(m)))
		dst = append(dst, m...)
	}
	return dst
}

// memUsage estimates: the slice entry (a string header), the map entry and the bytes.
func (s *setColl) memUsage() int {
	n := 64
	for _, m := range s.members {
		n += 16 + 48 + len(m)
	}
	return n
}

// decodeSet rebuilds a set from appendTo's bytes, in the same order.
func decodeSet(b []byte) (collection, error) {
	r := hsReader{b: b}
	n := r.uvarint()
	// every member takes at least one byte; an empty set never exists
	if r.bad || n == 0 || n > uint64(len(r.b)) {
		return nil, ErrCorrupt
	}
	s := newSetColl(int(n))
	for i := uint64(0); i < n; i++ {
		m := r.str()
		if r.bad {
			return nil, ErrCorrupt
		}
		if !s.add(m) {
			return nil, ErrCorrupt // duplicate member
		}
	}
	if len(r.b) != 0 {
		return nil, ErrCorrupt
	}
	return s, nil
}

// --- keyspace access -----------------------------------------------------------------------

// setsLookup returns the set at key, nil when there is none. For a key of another type it
// replies WRONGTYPE and reports wrong.
func (c *Ctx) setsLookup(key []byte) (it item, s *setColl, wrong bool) {
	it, ok, wrong := c.lookupType(key, TypeSet)
	if !ok {
		return it, nil, wrong
	}
	return it, it.coll.(*setColl), false
}

// setsLookupAll looks up every key as a set (nil for a missing key). If any key holds another
// type it replies WRONGTYPE and reports false: Redis checks every key before it answers,
// even when an earlier key is missing.
func (c *Ctx) setsLookupAll(keys [][]byte) ([]*setColl, bool) {
	sets := make([]*setColl, len(keys))
	for i, k := range keys {
		it, ok := c.lookup(k)
		if !ok {
			continue
		}
		if it.typ != TypeSet {
			c.Error(ErrWrongType)
			return nil, false
		}
		sets[i] = it.coll.(*setColl)
	}
	return sets, true
}

// --- commands ------------------------------------------------------------------------------

func saddCmd(c *Ctx, args [][]byte) {
	it, s, wrong := c.setsLookup(args[1])
	if wrong {
		return
	}
	if s == nil {
		s = newSetColl(len(args) - 2)
		it = item{typ: TypeSet, coll: s}
	}
	n := 0
	for _, m := range args[2:] {
		if s.add(string(m)) {
			n++
		}
	}
	if n > 0 {
		c.touched(args[1], it)
		c.notify(notifySet, "sadd", args[1])
	}
	c.W.Int(int64(n))
}

func sremCmd(c *Ctx, args [][]byte) {
	it, s, wrong := c.setsLookup(args[1])
	if wrong {
		return
	}
	if s == nil {
		c.W.Int(0)
		return
	}
	n := 0
	for _, m := range args[2:] {
		if s.remove(m) {
			n++
			if s.Len() == 0 {
				break
			}
		}
	}
	if n > 0 {
		c.notify(notifySet, "srem", args[1])
		c.touched(args[1], it)
	}
	c.W.Int(int64(n))
}

// setsReply sends members as a set reply (an array in RESP2).
func setsReply(c *Ctx, members []string) {
	c.W.Set(len(members))
	for _, m := range members {
		c.W.BulkString(m)
	}
}

func smembersCmd(c *Ctx, args [][]byte) {
	_, s, wrong := c.setsLookup(args[1])
	if wrong {
		return
	}
	if s == nil {
		c.W.Set(0)
		return
	}
	setsReply(c, s.members)
}

func sismemberCmd(c *Ctx, args [][]byte) {
	_, s, wrong := c.setsLookup(args[1])
	if wrong {
		return
	}
	if s != nil && s.has(args[2]) {
		c.W.Int(1)
	} else {
		c.W.Int(0)
	}
}

func smismemberCmd(c *Ctx, args [][]byte) {
	_, s, wrong := c.setsLookup(args[1])
	if wrong {
		return
	}
	c.W.Array(len(args) - 2)
	for _, m := range args[2:] {
		if s != nil && s.has(m) {
			c.W.Int(1)
		} else {
			c.W.Int(0)
		}
	}
}

func scardCmd(c *Ctx, args [][]byte) {
	_, s, wrong := c.setsLookup(args[1])
	if wrong {
		return
	}
	if s == nil {
		c.W.Int(0)
		return
	}
	c.W.Int(int64(s.Len()))
}

func spopCmd(c *Ctx, args [][]byte) {
	if len(args) > 3 {
		c.Error(ErrSyntax)
		return
	}
	key := args[1]
	if len(args) == 2 {
		it, s, wrong := c.setsLookup(key)
		switch {
		case wrong:
		case s == nil:
			c.W.Null()
		default:
			i := c.rnd.intn(s.Len())
			m := s.members[i]
			s.removeAt(i)
			c.notify(notifySet, "spop", key)
			c.touched(key, it)
			c.W.BulkString(m)
		}
		return
	}
	count, ok := ParseInt(args[2])
	if !ok || count < 0 {
		c.Error(ErrNotPositive)
		return
	}
	it, s, wrong := c.setsLookup(key)
	if wrong {
		return
	}
	if s == nil || count == 0 {
		c.W.Set(0)
		return
	}
	if count >= int64(s.Len()) {
		// the whole set goes: reply with it and delete the key
		setsReply(c, s.members)
		c.notify(notifySet, "spop", key)
		c.del(key)
		return
	}
	c.W.Set(int(count))
	for i := int64(0); i < count; i++ {
		j := c.rnd.intn(s.Len())
		c.W.BulkString(s.members[j])
		s.removeAt(j)
	}
	c.notify(notifySet, "spop", key)
	c.touched(key, it)
}

func srandmemberCmd(c *Ctx, args [][]byte) {
	if len(args) > 3 {
		c.Error(ErrSyntax)
		return
	}
	key := args[1]
	if len(args) == 2 {
		_, s, wrong := c.setsLookup(key)
		switch {
		case wrong:
		case s == nil:
			c.W.Null()
		default:
			c.W.BulkString(s.members[c.rnd.intn(s.Len())])
		}
		return
	}
	count, ok := c.hsParseRandCount(args[2])
	if !ok {
		return
	}
	_, s, wrong := c.setsLookup(key)
	if wrong {
		return
	}
	if s == nil || count == 0 {
		c.W.Array(0)
		return
	}
	size := s.Len()
	switch {
	case count < 0:
		if -count > hsMaxRandomRepeat {
			c.Error(hsErrOutOfRange)
			return
		}
		c.W.Array(int(-count))
		for i := int64(0); i < -count; i++ {
			c.W.BulkString(s.members[c.rnd.intn(size)])
		}
	case count >= int64(size):
		c.W.Array(size)
		for _, m := range s.members {
			c.W.BulkString(m)
		}
	default:
		idx := hsSample(&c.rnd, size, int(count))
		c.W.Array(len(idx))
		for _, i := range idx {
			c.W.BulkString(s.members[i])
		}
	}
}

func smoveCmd(c *Ctx, args [][]byte) {
	src, dst, m := args[1], args[2], args[3]
	srcIt, srcOK := c.lookup(src)
	if !srcOK {
		c.W.Int(0)
		return
	}
	dstIt, dstOK := c.lookup(dst)
	if srcIt.typ != TypeSet || (dstOK && dstIt.typ != TypeSet) {
		c.Error(ErrWrongType)
		return
	}
	ss := srcIt.coll.(*setColl)
	if string(src) == string(dst) {
		if ss.has(m) {
			c.W.Int(1)
		} else {
			c.W.Int(0)
		}
		return
	}
	if !ss.remove(m) {
		c.W.Int(0)
		return
	}
	c.notify(notifySet, "srem", src)
	c.touched(src, srcIt)
	if !dstOK {
		dstIt = item{typ: TypeSet, coll: newSetColl(1)}
	}
	if dstIt.coll.(*setColl).add(string(m)) {
		c.touched(dst, dstIt)
		c.notify(notifySet, "sadd", dst)
	}
	c.W.Int(1)
}

// setsInter returns the members common to all sets, in the order of the smallest set (the
// first given among equals); limit > 0 stops after that many. A missing set empties it.
func setsInter(sets []*setColl, limit int) []string {
	for _, s := range sets {
		if s == nil {
			return nil
		}
	}
	order := make([]*setColl, len(sets))
	copy(order, sets)
	sort.SliceStable(order, func(i, j int) bool { return order[i].Len() < order[j].Len() })
	var out []string
	for _, m := range order[0].members {
		in := true
		for _, o := range order[1:] {
			if o == order[0] {
				continue
			}
			if _, ok := o.index[m]; !ok {
				in = false
				break
			}
		}
		if in {
			out = append(out, m)
			if limit > 0 && len(out) >= limit {
				break
			}
		}
	}
	return out
}

// setsUnion returns the members of any set, first seen first.
func setsUnion(sets []*setColl) *setColl {
	n := 0
	for _, s := range sets {
		if s != nil {
			n = max(n, s.Len())
		}
	}
	out := newSetColl(n)
	for _, s := range sets {
		if s == nil {
			continue
		}
		for _, m := range s.members {
			out.add(m)
		}
	}
	return out
}

// setsDiff returns the members of the first set that are in none of the others.
func setsDiff(sets []*setColl) []string {
	if sets[0] == nil {
		return nil
	}
	var out []string
	for _, m := range sets[0].members {
		in := false
		for _, o := range sets[1:] {
			if o == nil {
				continue
			}
			if _, ok := o.index[m]; ok {
				in = true
				break
			}
		}
		if !in {
			out = append(out, m)
		}
	}
	return out
}

// setsStore stores members (distinct) as a new set at dst, replacing whatever is there and
// its TTL; an empty result deletes dst. It replies with the cardinality. event is the
// command's keyspace event.
func setsStore(c *Ctx, dst []byte, res *setColl, event string) {
	if res.Len() == 0 {
		c.del(dst)
		c.W.Int(0)
		return
	}
	c.store(dst, item{typ: TypeSet, coll: res}, false)
	c.notify(notifySet, event, dst)
	c.W.Int(int64(res.Len()))
}

func setsFromMembers(members []string) *setColl {
	s := newSetColl(len(members))
	for _, m := range members {
		s.add(m)
	}
	return s
}

func sinterCmd(c *Ctx, args [][]byte) {
	sets, ok := c.setsLookupAll(args[1:])
	if ok {
		setsReply(c, setsInter(sets, 0))
	}
}

func sinterstoreCmd(c *Ctx, args [][]byte) {
	sets, ok := c.setsLookupAll(args[2:])
	if ok {
		setsStore(c, args[1], setsFromMembers(setsInter(sets, 0)), "sinterstore")
	}
}

func sintercardCmd(c *Ctx, args [][]byte) {
	numkeys, ok := ParseInt(args[1])
	if !ok || numkeys <= 0 {
		c.Error(errSetNumKeys)
		return
	}
	if numkeys > int64(len(args)-2) {
		c.Error(errSetNumKeysArgs)
		return
	}
	keys := args[2 : 2+numkeys]
	var limit int64
	for i := 2 + int(numkeys); i < len(args); i++ {
		if eq(args[i], "limit") && i+1 < len(args) {
			i++
			v, ok := ParseInt(args[i])
			if !ok || v < 0 {
				c.Error(errSetLimit)
				return
			}
			limit = v
			continue
		}
		c.Error(ErrSyntax)
		return
	}
	sets, ok := c.setsLookupAll(keys)
	if !ok {
		return
	}
	c.W.Int(int64(len(setsInter(sets, int(min(limit, 1<<31))))))
}

func sunionCmd(c *Ctx, args [][]byte) {
	sets, ok := c.setsLookupAll(args[1:])
	if ok {
		setsReply(c, setsUnion(sets).members)
	}
}

func sunionstoreCmd(c *Ctx, args [][]byte) {
	sets, ok := c.setsLookupAll(args[2:])
	if ok {
		setsStore(c, args[1], setsUnion(sets), "sunionstore")
	}
}

func sdiffCmd(c *Ctx, args [][]byte) {
	sets, ok := c.setsLookupAll(args[1:])
	if ok {
		setsReply(c, setsDiff(sets))
	}
}

func sdiffstoreCmd(c *Ctx, args [][]byte) {
	sets, ok := c.setsLookupAll(args[2:])
	if ok {
		setsStore(c, args[1], setsFromMembers(setsDiff(sets)), "sdiffstore")
	}
}

func sscanCmd(c *Ctx, args [][]byte) {
	if _, ok := c.parseCursor(args[2]); !ok {
		return
	}
	_, s, wrong := c.setsLookup(args[1])
	if wrong {
		return
	}
	if s == nil {
		hsEmptyScan(c)
		return
	}
	o, ok := c.parseScanOptions(args[3:], false)
	if !ok {
		return
	}
	out := s.members
	if o.match != nil {
		out = nil
		for _, m := range s.members {
			if Glob(o.match, []byte(m)) {
				out = append(out, m)
			}
		}
	}
	c.W.Array(2)
	c.W.BulkString("0")
	c.W.Array(len(out))
	for _, m := range out {
		c.W.BulkString(m)
	}
}
