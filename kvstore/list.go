package kvstore

import (
	"encoding/binary"
)

// Lists: the non-blocking LIST command family of Redis 7.0.
//
// A list is a deque of Go strings held in a ring buffer: O(1) amortised pushes and pops at
// both ends, O(1) indexed access (LINDEX, LSET, and LRANGE in O(range)), and one string
// header per element, with no per-element pointer beyond the string's own. The buffer
// grows geometrically and shrinks when it is less than a quarter full, so its size stays
// within a small factor of the length.

func init() {
	collectionDecoders[TypeList] = decodeList
	register(
		&Spec{Name: "lpush", Arity: -3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "list", Since: "1.0.0", Summary: "Prepend one or multiple elements to a list", Run: listPushCmd(true, false)},
		&Spec{Name: "rpush", Arity: -3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "list", Since: "1.0.0", Summary: "Append one or multiple elements to a list", Run: listPushCmd(false, false)},
		&Spec{Name: "lpushx", Arity: -3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "list", Since: "2.2.0", Summary: "Prepend an element to a list, only if the list exists", Run: listPushCmd(true, true)},
		&Spec{Name: "rpushx", Arity: -3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "list", Since: "2.2.0", Summary: "Append an element to a list, only if the list exists", Run: listPushCmd(false, true)},
		&Spec{Name: "lpop", Arity: -2, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "list", Since: "1.0.0", Summary: "Remove and get the first elements in a list", Run: listPopCmd("lpop", true)},
		&Spec{Name: "rpop", Arity: -2, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "list", Since: "1.0.0", Summary: "Remove and get the last elements in a list", Run: listPopCmd("rpop", false)},
		&Spec{Name: "llen", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "list", Since: "1.0.0", Summary: "Get the length of a list", Run: llenCmd},
		&Spec{Name: "lindex", Arity: 3, Flags: FlagReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "list", Since: "1.0.0", Summary: "Get an element from a list by its index", Run: lindexCmd},
		&Spec{Name: "lset", Arity: 4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "list", Since: "1.0.0", Summary: "Set the value of an element in a list by its index", Run: lsetCmd},
		&Spec{Name: "lrange", Arity: 4, Flags: FlagReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "list", Since: "1.0.0", Summary: "Get a range of elements from a list", Run: lrangeCmd},
		&Spec{Name: "ltrim", Arity: 4, Flags: FlagWrite, FirstKey: 1, LastKey: 1, Step: 1, Group: "list", Since: "1.0.0", Summary: "Trim a list to the specified range", Run: ltrimCmd},
		&Spec{Name: "linsert", Arity: 5, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "list", Since: "2.2.0", Summary: "Insert an element before or after another element in a list", Run: linsertCmd},
		&Spec{Name: "lrem", Arity: 4, Flags: FlagWrite, FirstKey: 1, LastKey: 1, Step: 1, Group: "list", Since: "1.0.0", Summary: "Remove elements from a list", Run: lremCmd},
		&Spec{Name: "lpos", Arity: -3, Flags: FlagReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "list", Since: "6.0.6", Summary: "Return the index of matching elements on a list", Run: lposCmd},
		&Spec{Name: "lmove", Arity: 5, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 2, Step: 1, Group: "list", Since: "6.2.0", Summary: "Pop an element from a list, push it to another list and return it", Run: lmoveCmd},
		&Spec{Name: "rpoplpush", Arity: 3, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 2, Step: 1, Group: "list", Since: "1.2.0", Summary: "Remove the last element in a list, prepend it to another list and return it", Run: rpoplpushCmd},
		// LMPOP's keys follow numkeys, which FirstKey/LastKey/Step cannot describe.
		&Spec{Name: "lmpop", Arity: -4, Flags: FlagWrite, Group: "list", Since: "7.0.0", Summary: "Pop elements from a list", Run: lmpopCmd, MoreKeys: numkeysKeys(1)},
	)
}

// Error replies specific to lists, word for word as Redis 7.0 sends them.
const (
	errListRankZero      = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"
	errListCountNegative = "ERR COUNT can't be negative"
	errListMaxlenNeg     = "ERR MAXLEN can't be negative"
	errListNumkeys       = "ERR numkeys should be greater than 0"
	errListCountPositive = "ERR count should be greater than 0"
)

// --- the deque ---------------------------------------------------------------------------

// listColl is a list value: a ring buffer of elements. Element i (0 is the head) lives at
// buf[(head+i) mod len(buf)]; len(buf) is the capacity. Unused slots hold "" so that
// removed elements are not kept alive.
type listColl struct {
	buf   []string
	head  int
	n     int
	bytes int // total length of the elements, for memUsage
}

// listMinShrink is the capacity below which a list's buffer is never shrunk.
const listMinShrink = 16

func (l *listColl) Len() int { return l.n }

// slot maps a logical index in [0, n] (n only when n < capacity) to a buffer index.
func (l *listColl) slot(i int) int {
	j := l.head + i
	if j >= len(l.buf) {
		j -= len(l.buf)
	}
	return j
}

func (l *listColl) at(i int) string     { return l.buf[l.slot(i)] }
func (l *listColl) set(i int, v string) { l.buf[l.slot(i)] = v }

// copyTo copies the elements in order into dst, which must hold at least n.
func (l *listColl) copyTo(dst []string) {
	end := l.head + l.n
	if end <= len(l.buf) {
		copy(dst, l.buf[l.head:end])
		return
	}
	k := copy(dst, l.buf[l.head:])
	copy(dst[k:], l.buf[:end-len(l.buf)])
}

// resize moves the elements into a fresh buffer of capacity c >= n, starting at slot 0.
func (l *listColl) resize(c int) {
	nb := make([]string, c)
	l.copyTo(nb)
	l.buf = nb
	l.head = 0
}

// grow makes room for extra more elements.
func (l *listColl) grow(extra int) {
	need := l.n + extra
	c := len(l.buf)
	if need <= c {
		return
	}
	if c == 0 {
		// a new list starts exactly as large as its first push needs
		l.resize(need)
		return
	}
	for c < need {
		if c < 1024 {
			c *= 2
		} else {
			c += c / 2
		}
	}
	l.resize(c)
}

// shrink releases most of the buffer once it is less than a quarter full. After a resize
// the buffer is half full, so both growing and shrinking again take Ω(n) more operations:
// the copies are amortised O(1) per push or pop.
func (l *listColl) shrink() {
	if len(l.buf) <= listMinShrink || l.n >= len(l.buf)/4 {
		return
	}
	if l.n == 0 {
		// the key is about to go, or an LMOVE on one key pushes the element right back
		l.buf, l.head = nil, 0
		return
	}
	l.resize(max(2*l.n, listMinShrink/2))
}

func (l *listColl) pushFront(v string) {
	l.grow(1)
	l.head--
	if l.head < 0 {
		l.head += len(l.buf)
	}
	l.buf[l.head] = v
	l.n++
	l.bytes += len(v)
}

func (l *listColl) pushBack(v string) {
	l.grow(1)
	l.buf[l.slot(l.n)] = v
	l.n++
	l.bytes += len(v)
}

func (l *listColl) push(v string, front bool) {
	if front {
		l.pushFront(v)
	} else {
		l.pushBack(v)
	}
}

// popFront and popBack remove an element of a non-empty list.
func (l *listColl) popFront() string {
	v := l.buf[l.head]
	l.buf[l.head] = ""
	l.head++
	if l.head == len(l.buf) {
		l.head = 0
	}
	l.n--
	l.bytes -= len(v)
	l.shrink()
	return v
}

func (l *listColl) popBack() string {
	s := l.slot(l.n - 1)
	v := l.buf[s]
	l.buf[s] = ""
	l.n--
	l.bytes -= len(v)
	l.shrink()
	return v
}

func (l *listColl) pop(front bool) string {
	if front {
		return l.popFront()
	}
	return l.popBack()
}

// insert puts v at index i in [0, n], moving whichever side of i is shorter.
func (l *listColl) insert(i int, v string) {
	l.grow(1)
	if i < l.n/2 {
		l.head--
		if l.head < 0 {
			l.head += len(l.buf)
		}
		for j := 0; j < i; j++ {
			l.set(j, l.at(j+1))
		}
	} else {
		for j := l.n; j > i; j-- {
			l.set(j, l.at(j-1))
		}
	}
	l.set(i, v)
	l.n++
	l.bytes += len(v)
}

// remove deletes up to limit elements equal to v (limit 0: all of them), the first ones
// from the head, or from the tail when fromTail. It returns how many it removed. The work
// is proportional to the distance from the scanned end to the last element removed.
func (l *listColl) remove(v string, limit uint64, fromTail bool) int {
	removed := uint64(0)
	last := -1
	if !fromTail {
		for i := 0; i < l.n; i++ {
			if l.at(i) == v {
				removed++
				last = i
				if removed == limit {
					break
				}
			}
		}
		if removed == 0 {
			return 0
		}
		// every match in [0, last] goes; the survivors there slide toward the tail
		w := last
		for r := last; r >= 0; r-- {
			if e := l.at(r); e != v {
				l.set(w, e)
				w--
			}
		}
		for i := 0; i <= w; i++ {
			l.set(i, "")
		}
		l.head = l.slot(int(removed))
	} else {
		for i := l.n - 1; i >= 0; i-- {
			if l.at(i) == v {
				removed++
				last = i
				if removed == limit {
					break
				}
			}
		}
		if removed == 0 {
			return 0
		}
		// every match in [last, n) goes; the survivors there slide toward the head
		w := last
		for r := last; r < l.n; r++ {
			if e := l.at(r); e != v {
				l.set(w, e)
				w++
			}
		}
		for i := w; i < l.n; i++ {
			l.set(i, "")
		}
	}
	l.n -= int(removed)
	l.bytes -= int(removed) * len(v)
	if l.n == 0 {
		l.head = 0
	}
	l.shrink()
	return int(removed)
}

// trim keeps only the elements in [lo, hi).
func (l *listColl) trim(lo, hi int) {
	if hi < lo {
		hi = lo
	}
	for i := 0; i < lo; i++ {
		l.bytes -= len(l.at(i))
		l.set(i, "")
	}
	for i := hi; i < l.n; i++ {
		l.bytes -= len(l.at(i))
		l.set(i, "")
	}
	if hi > lo {
		l.head = l.slot(lo)
	} else {
		l.head = 0
	}
	l.n = hi - lo
	l.shrink()
}

func (l *listColl) clone() collection {
	c := &listColl{buf: make([]string, l.n), n: l.n, bytes: l.bytes}
	l.copyTo(c.buf)
	return c
}

// appendTo writes count:uvarint (len:uvarint bytes)*, head to tail.
func (l *listColl) appendTo(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(l.n))
	for i := 0; i < l.n; i++ {
		e := l.at(i)
		dst = binary.AppendUvarint(dst, uint64(len(e)))
		dst = append(dst, e...)
	}
	return dst
}

// memUsage counts the buffer's string headers, the element bytes and the fixed parts.
func (l *listColl) memUsage() int {
	const fixed = 16 + 48 // the interface in the item, listColl itself
	return fixed + 16*len(l.buf) + l.bytes
}

// decodeList rebuilds a list from appendTo's bytes. It refuses an empty list (lists never
// exist empty), lengths that run past the input and trailing bytes; since every element
// takes at least one byte, what it allocates is bounded by a constant times len(b).
func decodeList(b []byte) (collection, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, ErrCorrupt
	}
	b = b[k:]
	if n == 0 || n > uint64(len(b)) {
		return nil, ErrCorrupt
	}
	l := &listColl{buf: make([]string, n), n: int(n)}
	for i := range l.buf {
		sz, k := binary.Uvarint(b)
		if k <= 0 || sz > uint64(len(b)-k) {
			return nil, ErrCorrupt
		}
		b = b[k:]
		l.buf[i] = string(b[:sz])
		b = b[sz:]
		l.bytes += int(sz)
	}
	if len(b) != 0 {
		return nil, ErrCorrupt
	}
	return l, nil
}

// --- command helpers ---------------------------------------------------------------------

// getList returns the list at key. For a key of another type it replies WRONGTYPE and
// returns wrong=true.
func (c *Ctx) getList(key []byte) (l *listColl, it item, ok, wrong bool) {
	it, ok, wrong = c.lookupType(key, TypeList)
	if ok {
		l = it.coll.(*listColl)
	}
	return l, it, ok, wrong
}

// storeNewList stores a fresh list at key (which holds no live value).
func (c *Ctx) storeNewList(key []byte, l *listColl) {
	c.store(key, item{coll: l, typ: TypeList}, false)
}

// listWhere parses LEFT or RIGHT; it replies with a syntax error otherwise.
func (c *Ctx) listWhere(b []byte) (front, ok bool) {
	switch {
	case eq(b, "left"):
		return true, true
	case eq(b, "right"):
		return false, true
	}
	c.Error(ErrSyntax)
	return false, false
}

// listIndex resolves a possibly negative index against length n.
func listIndex(idx int64, n int) (int, bool) {
	if idx < 0 {
		idx += int64(n)
	}
	if idx < 0 || idx >= int64(n) {
		return 0, false
	}
	return int(idx), true
}

// popReply pops up to count elements from one end of l and replies with them as an array,
// in the order they were popped.
func (c *Ctx) popReply(l *listColl, front bool, count int64) {
	k := min(count, int64(l.n))
	c.W.Array(int(k))
	for i := int64(0); i < k; i++ {
		c.W.BulkString(l.pop(front))
	}
}

// pushEvent and popEvent name a push's and a pop's keyspace event.
func pushEvent(front bool) string {
	if front {
		return "lpush"
	}
	return "rpush"
}

func popEvent(front bool) string {
	if front {
		return "lpop"
	}
	return "rpop"
}

// --- commands ----------------------------------------------------------------------------

func listPushCmd(front, onlyExisting bool) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		key := args[1]
		l, it, ok, wrong := c.getList(key)
		if wrong {
			return
		}
		if !ok {
			if onlyExisting {
				c.W.Int(0)
				return
			}
			l = &listColl{}
		}
		l.grow(len(args) - 2)
		for _, a := range args[2:] {
			l.push(string(a), front)
		}
		if ok {
			c.touched(key, it)
		} else {
			c.storeNewList(key, l)
		}
		c.notify(notifyList, pushEvent(front), key)
		c.W.Int(int64(l.n))
	}
}

func listPopCmd(name string, front bool) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		if len(args) > 3 {
			c.Error(WrongArgs(name))
			return
		}
		hasCount := len(args) == 3
		var count int64
		if hasCount {
			v, ok := ParseInt(args[2])
			if !ok || v < 0 {
				c.Error(ErrNotPositive)
				return
			}
			count = v
		}
		key := args[1]
		l, it, ok, wrong := c.getList(key)
		switch {
		case wrong:
			return
		case !ok && hasCount:
			c.W.NullArray()
			return
		case !ok:
			c.W.Null()
			return
		case !hasCount:
			v := l.pop(front)
			c.notify(notifyList, popEvent(front), key)
			c.touched(key, it)
			c.W.BulkString(v)
			return
		case count == 0:
			c.W.Array(0)
			return
		}
		c.popReply(l, front, count)
		c.notify(notifyList, popEvent(front), key)
		c.touched(key, it)
	}
}

func llenCmd(c *Ctx, args [][]byte) {
	l, _, ok, wrong := c.getList(args[1])
	switch {
	case wrong:
	case !ok:
		c.W.Int(0)
	default:
		c.W.Int(int64(l.n))
	}
}

func lindexCmd(c *Ctx, args [][]byte) {
	l, _, ok, wrong := c.getList(args[1])
	switch {
	case wrong:
		return
	case !ok:
		c.W.Null()
		return
	}
	idx, ok := c.parseIntArg(args[2])
	if !ok {
		return
	}
	if i, in := listIndex(idx, l.n); in {
		c.W.BulkString(l.at(i))
	} else {
		c.W.Null()
	}
}

func lsetCmd(c *Ctx, args [][]byte) {
	key := args[1]
	l, it, ok, wrong := c.getList(key)
	switch {
	case wrong:
		return
	case !ok:
		c.Error(ErrNoSuchKey)
		return
	}
	idx, ok := c.parseIntArg(args[2])
	if !ok {
		return
	}
	i, in := listIndex(idx, l.n)
	if !in {
		c.Error(ErrIndexRange)
		return
	}
	v := string(args[3])
	l.bytes += len(v) - len(l.at(i))
	l.set(i, v)
	c.touched(key, it)
	c.notify(notifyList, "lset", key)
	c.W.Status("OK")
}

func lrangeCmd(c *Ctx, args [][]byte) {
	start, stop, ok := c.parseIntArgs(args[2], args[3])
	if !ok {
		return
	}
	l, _, ok, wrong := c.getList(args[1])
	switch {
	case wrong:
		return
	case !ok:
		c.W.Array(0)
		return
	}
	lo, hi := rangeIndex(start, stop, l.n)
	c.W.Array(hi - lo)
	for i := lo; i < hi; i++ {
		c.W.BulkString(l.at(i))
	}
}

func ltrimCmd(c *Ctx, args [][]byte) {
	start, stop, ok := c.parseIntArgs(args[2], args[3])
	if !ok {
		return
	}
	key := args[1]
	l, it, ok, wrong := c.getList(key)
	switch {
	case wrong:
		return
	case !ok:
		c.W.Status("OK")
		return
	}
	lo, hi := rangeIndex(start, stop, l.n)
	l.trim(lo, hi)
	// Redis signals the key as modified even when nothing was trimmed
	c.notify(notifyList, "ltrim", key)
	c.touched(key, it)
	c.W.Status("OK")
}

func linsertCmd(c *Ctx, args [][]byte) {
	var after bool
	switch {
	case eq(args[2], "after"):
		after = true
	case eq(args[2], "before"):
	default:
		c.Error(ErrSyntax)
		return
	}
	key := args[1]
	l, it, ok, wrong := c.getList(key)
	switch {
	case wrong:
		return
	case !ok:
		c.W.Int(0)
		return
	}
	pivot := string(args[3])
	for i := 0; i < l.n; i++ {
		if l.at(i) == pivot {
			if after {
				i++
			}
			l.insert(i, string(args[4]))
			c.touched(key, it)
			c.notify(notifyList, "linsert", key)
			c.W.Int(int64(l.n))
			return
		}
	}
	c.W.Int(-1)
}

func lremCmd(c *Ctx, args [][]byte) {
	count, ok := c.parseIntArg(args[2])
	if !ok {
		return
	}
	key := args[1]
	l, it, ok, wrong := c.getList(key)
	switch {
	case wrong:
		return
	case !ok:
		c.W.Int(0)
		return
	}
	fromTail := count < 0
	limit := uint64(count)
	if fromTail {
		// -MinInt64 wraps to MinInt64, whose magnitude 2^63 still means "all", as in Redis
		limit = uint64(-count)
	}
	n := l.remove(string(args[3]), limit, fromTail)
	if n > 0 {
		c.notify(notifyList, "lrem", key)
		c.touched(key, it)
	}
	c.W.Int(int64(n))
}

func lposCmd(c *Ctx, args [][]byte) {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for j := 3; j < len(args); j++ {
		opt := args[j]
		more := j+1 < len(args)
		switch {
		case eq(opt, "rank") && more:
			j++
			v, ok := c.parseIntArg(args[j])
			if !ok {
				return
			}
			if v == 0 {
				c.Error(errListRankZero)
				return
			}
			rank = v
		case eq(opt, "count") && more:
			j++
			v, ok := ParseInt(args[j])
			if !ok || v < 0 {
				c.Error(errListCountNegative)
				return
			}
			count = v
		case eq(opt, "maxlen") && more:
			j++
			v, ok := ParseInt(args[j])
			if !ok || v < 0 {
				c.Error(errListMaxlenNeg)
				return
			}
			maxlen = v
		default:
			c.Error(ErrSyntax)
			return
		}
	}
	l, _, ok, wrong := c.getList(args[1])
	switch {
	case wrong:
		return
	case !ok && count != -1:
		c.W.Array(0)
		return
	case !ok:
		c.W.Null()
		return
	}
	fromTail := false
	if rank < 0 {
		// Redis negates with C's wrapping arithmetic: RANK -2^63 stays negative, so every
		// match qualifies; Go's int64 wraps the same way.
		rank = -rank
		fromTail = true
	}
	ele := string(args[2])
	var out []int64
	matches := int64(0)
	for idx := 0; idx < l.n && (maxlen == 0 || int64(idx) < maxlen); idx++ {
		pos := idx
		if fromTail {
			pos = l.n - 1 - idx
		}
		if l.at(pos) != ele {
			continue
		}
		matches++
		if matches < rank {
			continue
		}
		if count == -1 {
			c.W.Int(int64(pos))
			return
		}
		out = append(out, int64(pos))
		if count != 0 && matches-rank+1 >= count {
			break
		}
	}
	if count == -1 {
		c.W.Null()
		return
	}
	c.W.Array(len(out))
	for _, p := range out {
		c.W.Int(p)
	}
}

func lmoveCmd(c *Ctx, args [][]byte) {
	from, ok := c.listWhere(args[3])
	if !ok {
		return
	}
	to, ok := c.listWhere(args[4])
	if !ok {
		return
	}
	c.listMove(args[1], args[2], from, to)
}

func rpoplpushCmd(c *Ctx, args [][]byte) {
	c.listMove(args[1], args[2], false, true)
}

// listMove pops an element from one end of src and pushes it at one end of dst, replying
// with the element (LMOVE, RPOPLPUSH). With src == dst the list rotates. As in Redis, dst
// changes (and its events are published) before src.
func (c *Ctx) listMove(src, dst []byte, fromFront, toFront bool) {
	sl, sit, ok, wrong := c.getList(src)
	switch {
	case wrong:
		return
	case !ok:
		c.W.Null()
		return
	}
	if string(src) == string(dst) {
		v := sl.pop(fromFront)
		sl.push(v, toFront)
		c.touched(src, sit)
		c.notify(notifyList, pushEvent(toFront), src)
		c.notify(notifyList, popEvent(fromFront), src)
		c.W.BulkString(v)
		return
	}
	dl, dit, dok, dwrong := c.getList(dst)
	if dwrong {
		return
	}
	v := sl.pop(fromFront)
	if dok {
		dl.push(v, toFront)
		c.touched(dst, dit)
	} else {
		dl = &listColl{}
		dl.push(v, toFront)
		c.storeNewList(dst, dl)
	}
	c.notify(notifyList, pushEvent(toFront), dst)
	c.notify(notifyList, popEvent(fromFront), src)
	c.touched(src, sit)
	c.W.BulkString(v)
}

func lmpopCmd(c *Ctx, args [][]byte) {
	numkeys, ok := ParseInt(args[1])
	if !ok || numkeys < 1 {
		c.Error(errListNumkeys)
		return
	}
	// LEFT|RIGHT follows the keys: it must be within the arguments
	if numkeys > int64(len(args)-3) {
		c.Error(ErrSyntax)
		return
	}
	whereIdx := 2 + int(numkeys)
	front, ok := c.listWhere(args[whereIdx])
	if !ok {
		return
	}
	count := int64(-1)
	for j := whereIdx + 1; j < len(args); j++ {
		if count == -1 && eq(args[j], "count") && j+1 < len(args) {
			j++
			v, ok := ParseInt(args[j])
			if !ok || v < 1 {
				c.Error(errListCountPositive)
				return
			}
			count = v
			continue
		}
		c.Error(ErrSyntax)
		return
	}
	if count == -1 {
		count = 1
	}
	for _, key := range args[2:whereIdx] {
		l, it, ok, wrong := c.getList(key)
		if wrong {
			return
		}
		if !ok {
			continue
		}
		c.W.Array(2)
		c.W.Bulk(key)
		c.popReply(l, front, count)
		c.notify(notifyList, popEvent(front), key)
		c.touched(key, it)
		return
	}
	c.W.NullArray()
}
