package kvstore

import (
	"encoding/binary"
	"math"
	"strconv"
	"sync/atomic"

	"github.com/tidwall/btree"
)

// Sorted sets (Redis 7.0 t_zset.c semantics).
//
// A sorted set is a map from member to score plus a B-tree of (score, member) entries in
// Redis's order: by score, then by member bytes. The tree keeps subtree sizes, so an entry
// is found by rank in O(log n) (GetAt) and a rank is found by a binary search over ranks
// (O(log² n)). Every reply, random choice and serialisation walks the tree, never the map,
// so results depend only on the operations applied.
//
// Stored scores never hold -0: Redis 7.0 keeps small sorted sets in a listpack, whose score
// encoding turns -0 into 0, so ZADD z -0 m; ZSCORE z m answers "0". Replies computed
// without storing (ZADD INCR's reply, ZUNION...) keep the sign, as Redis's do.

func init() {
	collectionDecoders[TypeZSet] = decodeZSet
}

// zentry is one member of a sorted set, as the ordered index holds it.
type zentry struct {
	score  float64
	member string
}

// zentryLess is Redis's zset order: score, then member compared bytewise (memcmp, the
// shorter first on a common prefix). Scores are never NaN; -0 and 0 compare equal.
func zentryLess(a, b zentry) bool {
	if a.score < b.score {
		return true
	}
	if a.score > b.score {
		return false
	}
	return a.member < b.member
}

// zentryCompare is zentryLess as a three-way comparison, for slices.SortFunc.
func zentryCompare(a, b zentry) int {
	switch {
	case zentryLess(a, b):
		return -1
	case zentryLess(b, a):
		return 1
	}
	return 0
}

type zset struct {
	dict map[string]float64
	tree *btree.BTreeG[zentry]
	// large: Redis would hold it in a skiplist, not a listpack (object.go). SORT, a
	// read, sets it too.
	large atomic.Bool
}

func newZSet(hint int) *zset {
	return &zset{
		dict: make(map[string]float64, hint),
		// The store's shard locks already exclude writers from readers.
		tree: btree.NewBTreeGOptions(zentryLess, btree.Options{NoLocks: true}),
	}
}

// zsetFromSorted builds a sorted set from entries already in zset order with distinct
// members, normalising -0 scores as storing does.
func zsetFromSorted(es []zentry) *zset {
	z := newZSet(len(es))
	for _, e := range es {
		e.score = zstoredScore(e.score)
		z.load(e)
	}
	return z
}

// load appends e, which sorts after every entry the set holds and is not in it.
func (z *zset) load(e zentry) {
	z.dict[e.member] = e.score
	z.tree.Load(e)
	z.noteInsert(e.member)
}

// zstoredScore is the score a sorted set keeps for s: -0 becomes 0 (see above).
func zstoredScore(s float64) float64 {
	if s == 0 {
		return 0
	}
	return s
}

func (z *zset) Len() int { return len(z.dict) }

func (z *zset) score(member []byte) (float64, bool) {
	s, ok := z.dict[string(member)]
	return s, ok
}

// insert adds a member that is not in the set.
func (z *zset) insert(member string, score float64) {
	score = zstoredScore(score)
	z.dict[member] = score
	z.tree.Set(zentry{score, member})
	z.noteInsert(member)
}

// rescore changes the score of a member that is in the set with score old. It keeps the
// member string the set already holds, which the map key shares.
func (z *zset) rescore(member string, old, score float64) {
	score = zstoredScore(score)
	prev, _ := z.tree.Delete(zentry{old, member})
	z.tree.Set(zentry{score, prev.member})
	z.dict[prev.member] = score
}

// remove deletes member; it reports whether it was there.
func (z *zset) remove(member []byte) bool {
	s, ok := z.dict[string(member)]
	if !ok {
		return false
	}
	z.removeEntry(zentry{s, string(member)})
	return true
}

func (z *zset) removeEntry(e zentry) {
	z.tree.Delete(e)
	delete(z.dict, e.member)
}

// at returns the entry of rank i (0 ≤ i < Len).
func (z *zset) at(i int) zentry {
	e, _ := z.tree.GetAt(i)
	return e
}

// search returns the smallest rank i in [0, Len] whose entry satisfies pred, for a pred
// that is false then true along the zset order (Len when no entry does).
func (z *zset) search(pred func(zentry) bool) int {
	lo, hi := 0, z.Len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if pred(z.at(mid)) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// rank returns the 0-based rank of member in ascending order.
func (z *zset) rank(member []byte) (int, bool) {
	s, ok := z.dict[string(member)]
	if !ok {
		return 0, false
	}
	e := zentry{s, string(member)}
	return z.search(func(x zentry) bool { return !zentryLess(x, e) }), true
}

// collect returns k entries starting at rank i, ascending, or descending when rev.
func (z *zset) collect(i, k int, rev bool) []zentry {
	if k <= 0 || i < 0 || i >= z.Len() {
		return nil
	}
	out := make([]zentry, 0, k)
	iter := func(e zentry) bool {
		out = append(out, e)
		return len(out) < k
	}
	if rev {
		z.tree.Descend(z.at(i), iter)
	} else {
		z.tree.Ascend(z.at(i), iter)
	}
	return out
}

// entries returns every entry, ascending.
func (z *zset) entries() []zentry {
	out := make([]zentry, 0, z.Len())
	z.tree.Scan(func(e zentry) bool {
		out = append(out, e)
		return true
	})
	return out
}

// zbounds is a score or lex interval, tested against entries.
type zbounds interface {
	gteMin(e zentry) bool
	lteMax(e zentry) bool
}

// zsetListpackEntries is Redis's zset-max-listpack-entries default: sets up to this size
// are listpacks in Redis, whose lex range lookups are linear scans.
const zsetListpackEntries = 128

// linear reports whether r is located by a linear scan. Lex ranges assume that all scores
// are equal (as Redis documents); when they are not, Redis's answer depends on its
// encoding. For sets small enough to be listpacks this follows the listpack's scans
// exactly; bigger sets, skiplists in Redis (whose answer then depends on random node
// levels), use the binary search, which gives the same result whenever scores are equal.
func (z *zset) linear(r zbounds) bool {
	_, lex := r.(*zlexRange)
	return lex && z.Len() <= zsetListpackEntries
}

// firstIn returns the rank of the first entry in r, or -1.
func (z *zset) firstIn(r zbounds) int {
	n := z.Len()
	if n == 0 {
		return -1
	}
	i := -1
	if z.linear(r) {
		// zzlFirstInLexRange: the set's ends must reach into the range, then the first
		// entry not below it is the answer if it is not above it
		if !r.gteMin(z.at(n-1)) || !r.lteMax(z.at(0)) {
			return -1
		}
		k := 0
		z.tree.Scan(func(e zentry) bool {
			if r.gteMin(e) {
				i = k
				return false
			}
			k++
			return true
		})
	} else {
		i = z.search(r.gteMin)
	}
	if i >= 0 && i < n && r.lteMax(z.at(i)) {
		return i
	}
	return -1
}

// lastIn returns the rank of the last entry in r, or -1.
func (z *zset) lastIn(r zbounds) int {
	n := z.Len()
	if n == 0 {
		return -1
	}
	i := -1
	if z.linear(r) {
		if !r.gteMin(z.at(n-1)) || !r.lteMax(z.at(0)) {
			return -1
		}
		k := n - 1
		z.tree.Reverse(func(e zentry) bool {
			if r.lteMax(e) {
				i = k
				return false
			}
			k--
			return true
		})
	} else {
		i = z.search(func(e zentry) bool { return !r.lteMax(e) }) - 1
	}
	if i >= 0 && r.gteMin(z.at(i)) {
		return i
	}
	return -1
}

// countIn is the number of entries in r: from the first one, as long as they are not
// above it (O(log² n) by ranks, or a walk where lookups are linear anyway).
func (z *zset) countIn(r zbounds) int {
	first := z.firstIn(r)
	if first < 0 {
		return 0
	}
	if z.linear(r) {
		n := 0
		z.tree.Ascend(z.at(first), func(e zentry) bool {
			if !r.lteMax(e) {
				return false
			}
			n++
			return true
		})
		return n
	}
	last := z.lastIn(r)
	if last < first {
		return 0
	}
	return last - first + 1
}

// rangeIn returns the entries of r after skipping offset of them, at most limit (all when
// limit < 0), from the low end or, when rev, from the high end. Like Redis, it skips the
// offset without looking, then takes entries while they are in range. A negative offset
// selects nothing: Redis walks off the end of the set trying to skip it.
func (z *zset) rangeIn(r zbounds, offset, limit int64, rev bool) []zentry {
	if offset < 0 || offset >= int64(z.Len()) || limit == 0 {
		return nil
	}
	var start int
	if rev {
		last := z.lastIn(r)
		if last < 0 || int64(last) < offset {
			return nil
		}
		start = last - int(offset)
	} else {
		first := z.firstIn(r)
		if first < 0 || int64(z.Len()-first) <= offset {
			return nil
		}
		start = first + int(offset)
	}
	var out []zentry
	iter := func(e zentry) bool {
		if (rev && !r.gteMin(e)) || (!rev && !r.lteMax(e)) {
			return false
		}
		out = append(out, e)
		return limit < 0 || int64(len(out)) < limit
	}
	if rev {
		z.tree.Descend(z.at(start), iter)
	} else {
		z.tree.Ascend(z.at(start), iter)
	}
	return out
}

// --- collection ------------------------------------------------------------------------

// clone copies the set. The copy shares no tree nodes with the original, so that the two
// may be read and written under different shard locks.
func (z *zset) clone() collection {
	n := newZSet(z.Len())
	z.tree.Scan(func(e zentry) bool {
		n.dict[e.member] = e.score
		n.tree.Load(e)
		return true
	})
	n.large.Store(z.large.Load())
	return n
}

// appendTo writes count:uvarint, then per entry in (score, member) order the member
// (len:uvarint bytes) and the score's IEEE 754 bits (8 bytes, little endian).
func (z *zset) appendTo(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(z.Len()))
	z.tree.Scan(func(e zentry) bool {
		dst = binary.AppendUvarint(dst, uint64(len(e.member)))
		dst = append(dst, e.member...)
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(e.score))
		return true
	})
	return dst
}

// memUsage estimates: per member, its map entry (string header, float, bucket overhead),
// its tree entry (float, string header, node slack) and its bytes, once: both share them.
func (z *zset) memUsage() int {
	n := 128
	z.tree.Scan(func(e zentry) bool {
		n += 88 + len(e.member)
		return true
	})
	return n
}

// decodeZSet rebuilds a sorted set from appendTo's bytes. It refuses anything appendTo
// cannot produce: an empty set, NaN scores, entries out of order, repeated members,
// truncated or trailing bytes.
func decodeZSet(b []byte) (collection, error) {
	n, k := binary.Uvarint(b)
	// every entry takes at least 9 bytes; an empty zset never exists
	if k <= 0 || n == 0 || n > uint64(len(b)-k)/9 {
		return nil, ErrCorrupt
	}
	b = b[k:]
	z := newZSet(int(n))
	var prev zentry
	for i := uint64(0); i < n; i++ {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) || uint64(len(b)-k)-l < 8 {
			return nil, ErrCorrupt
		}
		b = b[k:]
		e := zentry{member: string(b[:l])}
		b = b[l:]
		e.score = math.Float64frombits(binary.LittleEndian.Uint64(b))
		b = b[8:]
		if math.IsNaN(e.score) || (i > 0 && !zentryLess(prev, e)) {
			return nil, ErrCorrupt
		}
		if _, dup := z.dict[e.member]; dup {
			return nil, ErrCorrupt
		}
		z.load(e)
		prev = e
	}
	if len(b) != 0 {
		return nil, ErrCorrupt
	}
	return z, nil
}

// --- number parsing and printing as Redis does -----------------------------------------

// zscoreRange is a score interval: "(" before a bound excludes it.
type zscoreRange struct {
	min, max     float64
	minex, maxex bool
}

func (r *zscoreRange) gteMin(e zentry) bool {
	if r.minex {
		return e.score > r.min
	}
	return e.score >= r.min
}

func (r *zscoreRange) lteMax(e zentry) bool {
	if r.maxex {
		return e.score < r.max
	}
	return e.score <= r.max
}

// zparseScoreBound parses one bound as Redis's zslParseRange: an optional "(", then
// anything strtod reads up to the end of the C string (so "" is 0 and leading blanks are
// allowed), except NaN.
func zparseScoreBound(b []byte) (v float64, ex, ok bool) {
	if len(b) > 0 && b[0] == '(' {
		ex = true
		b = b[1:]
	}
	v, n, _ := strtod(b)
	if (n < len(b) && b[n] != 0) || math.IsNaN(v) {
		return 0, false, false
	}
	return v, ex, true
}

func zparseScoreRange(minArg, maxArg []byte) (zscoreRange, bool) {
	var r zscoreRange
	var ok bool
	if r.min, r.minex, ok = zparseScoreBound(minArg); !ok {
		return r, false
	}
	if r.max, r.maxex, ok = zparseScoreBound(maxArg); !ok {
		return r, false
	}
	return r, true
}

// zlexBound is one end of a lex interval: "-" (below everything), "+" (above everything),
// or "[value" / "(value" (inclusive / exclusive).
type zlexBound struct {
	inf int8 // -1 for "-", +1 for "+", 0 for a value
	ex  bool
	s   string
}

type zlexRange struct{ min, max zlexBound }

func (r *zlexRange) gteMin(e zentry) bool {
	switch r.min.inf {
	case -1:
		return true
	case 1:
		return false
	}
	if r.min.ex {
		return e.member > r.min.s
	}
	return e.member >= r.min.s
}

func (r *zlexRange) lteMax(e zentry) bool {
	switch r.max.inf {
	case -1:
		return false
	case 1:
		return true
	}
	if r.max.ex {
		return e.member < r.max.s
	}
	return e.member <= r.max.s
}

// zparseLexBound parses one bound as Redis's zslParseLexRangeItem ("+" and "-" stand
// alone, up to the end of the C string).
func zparseLexBound(b []byte) (zlexBound, bool) {
	if len(b) == 0 {
		return zlexBound{}, false
	}
	switch b[0] {
	case '+', '-':
		if len(b) > 1 && b[1] != 0 {
			return zlexBound{}, false
		}
		if b[0] == '+' {
			return zlexBound{inf: 1, ex: true}, true
		}
		return zlexBound{inf: -1, ex: true}, true
	case '(':
		return zlexBound{ex: true, s: string(b[1:])}, true
	case '[':
		return zlexBound{s: string(b[1:])}, true
	}
	return zlexBound{}, false
}

func zparseLexRange(minArg, maxArg []byte) (zlexRange, bool) {
	var r zlexRange
	var ok bool
	if r.min, ok = zparseLexBound(minArg); !ok {
		return r, false
	}
	if r.max, ok = zparseLexBound(maxArg); !ok {
		return r, false
	}
	return r, true
}

// zscanScore prints a score as ZSCAN does for Redis 7.0's listpack encoding (d2string):
// an integral value within ±2^62 in integer form, otherwise %.17g.
func zscanScore(f float64) string {
	if f >= -0x1p62 && f <= 0x1p62 && f == math.Trunc(f) {
		return strconv.FormatInt(int64(f), 10)
	}
	return FormatDouble(f)
}
