package kvstore

import (
	"math"
	"slices"
)

// --- ZPOPMIN, ZPOPMAX, ZMPOP -------------------------------------------------------------

func zpopCmd(max bool) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		if len(args) > 3 {
			c.Error(ErrSyntax)
			return
		}
		count := int64(-1) // a plain single pop
		if len(args) == 3 {
			v, ok := ParseInt(args[2])
			if !ok || v < 0 {
				c.Error(ErrNotPositive)
				return
			}
			count = v
		}
		// RESP3 nests [member, score] pairs only when a count was given
		nested := c.W.Resp3() && count != -1
		zpopGeneric(c, args[1:2], max, false, count, nested)
	}
}

// zpopGeneric is Redis's genericZpopCommand for ZPOPMIN/ZPOPMAX (emitKey false: an empty
// array when there is nothing to pop) and ZMPOP (emitKey: [key, [[member, score]...]], a
// null array when there is nothing to pop). It pops from the first non-empty key.
func zpopGeneric(c *Ctx, keys [][]byte, max, emitKey bool, count int64, nested bool) {
	var key []byte
	var it item
	var z *zset
	for _, k := range keys {
		var wrong bool
		if it, z, wrong = c.zsetAt(k); wrong {
			return
		}
		if z != nil {
			key = k
			break
		}
	}
	if z == nil {
		if emitKey {
			c.W.NullArray()
		} else {
			c.W.Array(0)
		}
		return
	}
	if count == 0 {
		c.W.Array(0)
		return
	}
	if count == -1 {
		count = 1
	}
	n := int(min(count, int64(z.Len())))
	switch {
	case emitKey:
		c.W.Array(2)
		c.W.Bulk(key)
		c.W.Array(n)
	case nested:
		c.W.Array(n)
	default:
		c.W.Array(2 * n)
	}
	for i := 0; i < n; i++ {
		e := z.popEdge(max)
		if nested {
			c.W.Array(2)
		}
		c.W.BulkString(e.member)
		c.W.Double(e.score)
	}
	c.notify(notifyZSet, zpopEvent(max), key)
	c.touched(key, it)
}

// zpopEvent names a pop's keyspace event.
func zpopEvent(max bool) string {
	if max {
		return "zpopmax"
	}
	return "zpopmin"
}

// popEdge removes and returns the member with the lowest score (the highest with max)
// of a non-empty set.
func (z *zset) popEdge(max bool) zentry {
	var e zentry
	if max {
		e, _ = z.tree.PopMax()
	} else {
		e, _ = z.tree.PopMin()
	}
	delete(z.dict, e.member)
	return e
}

// zmpopCmd is ZMPOP numkeys key [key ...] MIN|MAX [COUNT count].
func zmpopCmd(c *Ctx, args [][]byte) {
	numkeys, ok := ParseInt(args[1])
	if !ok || numkeys < 1 {
		c.Error("ERR numkeys should be greater than 0")
		return
	}
	if numkeys >= int64(len(args)-2) {
		// the MIN|MAX argument would be missing
		c.Error(ErrSyntax)
		return
	}
	whereIdx := 2 + int(numkeys)
	var max bool
	switch {
	case eq(args[whereIdx], "min"):
	case eq(args[whereIdx], "max"):
		max = true
	default:
		c.Error(ErrSyntax)
		return
	}
	count := int64(-1)
	for j := whereIdx + 1; j < len(args); j++ {
		if count == -1 && eq(args[j], "count") && j+1 < len(args) {
			j++
			v, ok := ParseInt(args[j])
			if !ok || v < 1 {
				c.Error("ERR count should be greater than 0")
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
	zpopGeneric(c, args[2:whereIdx], max, true, count, true)
}

// --- ZRANDMEMBER -------------------------------------------------------------------------

// zrandMaxRepeat bounds the count of ZRANDMEMBER with a negative count (members may
// repeat, so the reply is as long as asked). Redis has no bound and would try to build a
// reply of up to 2^63 elements; a replicated state machine must not, so larger counts get
// Redis's out-of-range error.
const zrandMaxRepeat = 1 << 24

func zrandmemberCmd(c *Ctx, args [][]byte) {
	if len(args) >= 3 {
		l, ok := c.parseIntArg(args[2])
		if !ok {
			return
		}
		if l == math.MinInt64 {
			c.Error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
			return
		}
		if len(args) > 4 || (len(args) == 4 && !eq(args[3], "withscores")) {
			c.Error(ErrSyntax)
			return
		}
		withScores := len(args) == 4
		if withScores && (l < -math.MaxInt64/2 || l > math.MaxInt64/2) {
			c.Error("ERR value is out of range")
			return
		}
		zrandWithCount(c, args[1], l, withScores)
		return
	}
	_, z, wrong := c.zsetAt(args[1])
	switch {
	case wrong:
	case z == nil:
		c.W.Null()
	default:
		c.W.BulkString(z.at(c.rnd.intn(z.Len())).member)
	}
}

// zrandWithCount follows Redis's four cases: repeats allowed (negative count, or 1), the
// whole set, most of the set (drop random members), a few of a big set (pick random
// members until enough distinct ones). Choices come from c.rnd and ranks in the tree, so
// they depend only on the set and the entry.
func zrandWithCount(c *Ctx, key []byte, l int64, withScores bool) {
	_, z, wrong := c.zsetAt(key)
	if wrong {
		return
	}
	if z == nil || l == 0 {
		c.W.Array(0)
		return
	}
	size := z.Len()
	uniq := l > 0
	count := l
	if !uniq {
		count = -l
		if count > zrandMaxRepeat {
			c.Error("ERR value is out of range")
			return
		}
	}
	resp3 := c.W.Resp3()
	emit := func(e zentry) {
		if withScores && resp3 {
			c.W.Array(2)
		}
		c.W.BulkString(e.member)
		if withScores {
			c.W.Double(e.score)
		}
	}
	replyLen := func(n int) {
		if withScores && !resp3 {
			c.W.Array(2 * n)
		} else {
			c.W.Array(n)
		}
	}
	if !uniq || count == 1 {
		replyLen(int(count))
		for i := int64(0); i < count; i++ {
			emit(z.at(c.rnd.intn(size)))
		}
		return
	}
	if count >= int64(size) {
		// the whole set, in the order Redis iterates it (highest first)
		replyLen(size)
		z.tree.Reverse(func(e zentry) bool {
			emit(e)
			return true
		})
		return
	}
	n := int(count)
	replyLen(n)
	if n*3 > size {
		// drop random members until count remain
		all := z.entries()
		for len(all) > n {
			i := c.rnd.intn(len(all))
			all[i] = all[len(all)-1]
			all = all[:len(all)-1]
		}
		for _, e := range all {
			emit(e)
		}
		return
	}
	picked := make(map[int]struct{}, n)
	for len(picked) < n {
		i := c.rnd.intn(size)
		if _, dup := picked[i]; dup {
			continue
		}
		picked[i] = struct{}{}
		emit(z.at(i))
	}
}

// --- ZSCAN -------------------------------------------------------------------------------

// zscanCmd returns every (MATCH-filtered) member and score in one reply with cursor 0, as
// Redis does for sets small enough for a listpack; scores print as that encoding does.
func zscanCmd(c *Ctx, args [][]byte) {
	if _, ok := c.parseCursor(args[2]); !ok {
		return
	}
	_, z, wrong := c.zsetAt(args[1])
	if wrong {
		return
	}
	if z == nil {
		c.W.Array(2)
		c.W.BulkString("0")
		c.W.Array(0)
		return
	}
	o, ok := c.parseScanOptions(args[3:], false)
	if !ok {
		return
	}
	var out []zentry
	z.tree.Scan(func(e zentry) bool {
		if o.match == nil || Glob(o.match, []byte(e.member)) {
			out = append(out, e)
		}
		return true
	})
	c.W.Array(2)
	c.W.BulkString("0")
	c.W.Array(2 * len(out))
	for _, e := range out {
		c.W.BulkString(e.member)
		c.W.BulkString(zscanScore(e.score))
	}
}

// --- ZUNION, ZINTER, ZDIFF, their STORE forms, ZINTERCARD ---------------------------------

// zopSource is one input of a set operation: a sorted set, a plain set (Redis accepts
// sets there, every member scoring 1), or nothing.
type zopSource struct {
	z      *zset
	set    *setColl
	weight float64
}

func (s *zopSource) len() int {
	switch {
	case s.z != nil:
		return s.z.Len()
	case s.set != nil:
		return s.set.Len()
	}
	return 0
}

func (s *zopSource) find(member string) (float64, bool) {
	switch {
	case s.z != nil:
		v, ok := s.z.dict[member]
		return v, ok
	case s.set != nil:
		_, ok := s.set.index[member]
		return 1, ok
	}
	return 0, false
}

// each walks the input: a sorted set from its highest entry down, as Redis iterates it; a
// set in its (deterministic) slice order.
func (s *zopSource) each(fn func(member string, score float64) bool) {
	switch {
	case s.z != nil:
		s.z.tree.Reverse(func(e zentry) bool { return fn(e.member, e.score) })
	case s.set != nil:
		for _, m := range s.set.members {
			if !fn(m, 1) {
				return
			}
		}
	}
}

type zsetOp int

const (
	zopUnion zsetOp = iota
	zopInter
	zopDiff
)

const (
	zaggSum = iota
	zaggMin
	zaggMax
)

// zaggregate folds val into *target as Redis's zunionInterAggregate: a sum that is NaN
// (inf + -inf) is 0; MIN and MAX ignore a NaN val.
func zaggregate(target *float64, val float64, agg int) {
	switch agg {
	case zaggSum:
		*target += val
		if math.IsNaN(*target) {
			*target = 0
		}
	case zaggMin:
		if val < *target {
			*target = val
		}
	case zaggMax:
		if val > *target {
			*target = val
		}
	}
}

// zsetopCmd builds Redis's zunionInterDiffGenericCommand for one command: store commands
// take the destination first (numkeys at 2), others have numkeys at 1; cardOnly is
// ZINTERCARD.
func zsetopCmd(op zsetOp, store, cardOnly bool) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		numkeysIdx := 1
		var dst []byte
		if store {
			numkeysIdx = 2
			dst = args[1]
		}
		zsetopGeneric(c, args, dst, numkeysIdx, op, cardOnly)
	}
}

func zsetopGeneric(c *Ctx, args [][]byte, dst []byte, numkeysIdx int, op zsetOp, cardOnly bool) {
	setnum, ok := c.parseIntArg(args[numkeysIdx])
	if !ok {
		return
	}
	if setnum < 1 {
		c.Error("ERR at least 1 input key is needed for '" + string(lowerName(args[0])) + "' command")
		return
	}
	if setnum > int64(len(args)-numkeysIdx-1) {
		c.Error(ErrSyntax)
		return
	}
	srcs := make([]zopSource, setnum)
	j := numkeysIdx + 1
	for i := range srcs {
		srcs[i].weight = 1
		it, ok := c.lookup(args[j])
		j++
		if !ok {
			continue
		}
		switch it.typ {
		case TypeZSet:
			srcs[i].z = it.coll.(*zset)
			continue
		case TypeSet:
			if s, ok := it.coll.(*setColl); ok {
				srcs[i].set = s
				continue
			}
		}
		c.Error(ErrWrongType)
		return
	}
	agg := zaggSum
	withScores := false
	var limit int64
	for j < len(args) {
		remaining := len(args) - j
		a := args[j]
		switch {
		case op != zopDiff && !cardOnly && remaining >= len(srcs)+1 && eq(a, "weights"):
			j++
			for i := range srcs {
				w, ok := ParseFloat(args[j])
				if !ok {
					c.Error("ERR weight value is not a float")
					return
				}
				srcs[i].weight = w
				j++
			}
		case op != zopDiff && !cardOnly && remaining >= 2 && eq(a, "aggregate"):
			switch b := args[j+1]; {
			case eq(b, "sum"):
				agg = zaggSum
			case eq(b, "min"):
				agg = zaggMin
			case eq(b, "max"):
				agg = zaggMax
			default:
				c.Error(ErrSyntax)
				return
			}
			j += 2
		case dst == nil && !cardOnly && eq(a, "withscores"):
			withScores = true
			j++
		case cardOnly && remaining >= 2 && eq(a, "limit"):
			v, ok := ParseInt(args[j+1])
			if !ok || v < 0 {
				c.Error("ERR LIMIT can't be negative")
				return
			}
			limit = v
			j += 2
		default:
			c.Error(ErrSyntax)
			return
		}
	}
	if op != zopDiff {
		// smallest first, as Redis sorts them (glibc's qsort is a stable merge sort)
		slices.SortStableFunc(srcs, func(a, b zopSource) int { return a.len() - b.len() })
	}
	var es []zentry
	switch op {
	case zopInter:
		var card int64
		if srcs[0].len() > 0 {
			srcs[0].each(func(m string, s float64) bool {
				score := srcs[0].weight * s
				if math.IsNaN(score) {
					score = 0
				}
				for k := 1; k < len(srcs); k++ {
					v, ok := srcs[k].find(m)
					if !ok {
						return true
					}
					zaggregate(&score, v*srcs[k].weight, agg)
				}
				if cardOnly {
					card++
					return limit == 0 || card < limit
				}
				es = append(es, zentry{score, m})
				return true
			})
		}
		if cardOnly {
			c.W.Int(card)
			return
		}
	case zopUnion:
		acc := make(map[string]int) // member -> index in es
		for i := range srcs {
			src := &srcs[i]
			src.each(func(m string, s float64) bool {
				score := src.weight * s
				if math.IsNaN(score) {
					score = 0
				}
				if k, ok := acc[m]; ok {
					zaggregate(&es[k].score, score, agg)
				} else {
					acc[m] = len(es)
					es = append(es, zentry{score, m})
				}
				return true
			})
		}
	case zopDiff:
		if srcs[0].len() > 0 {
			srcs[0].each(func(m string, s float64) bool {
				for k := 1; k < len(srcs); k++ {
					if _, ok := srcs[k].find(m); ok {
						return true
					}
				}
				es = append(es, zentry{s, m})
				return true
			})
		}
	}
	// members are distinct, so this order is total and the result independent of the
	// order in which the inputs were walked
	slices.SortFunc(es, zentryCompare)
	if dst != nil {
		c.zstoreResult(dst, es, [...]string{zopUnion: "zunionstore", zopInter: "zinterstore", zopDiff: "zdiffstore"}[op])
		return
	}
	c.zreplyEntries(es, withScores)
}
