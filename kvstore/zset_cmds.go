package kvstore

import (
	"math"
)

func init() {
	const (
		w   = FlagWrite | FlagDenyOOM | FlagFast
		wf  = FlagWrite | FlagFast
		ws  = FlagWrite
		wd  = FlagWrite | FlagDenyOOM
		rf  = FlagReadOnly | FlagFast
		r   = FlagReadOnly
		grp = "sorted-set"
	)
	register(
		&Spec{Name: "zadd", Arity: -4, Flags: w, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "1.2.0", Summary: "Add one or more members to a sorted set, or update its score if it already exists", Run: zaddCmd},
		&Spec{Name: "zincrby", Arity: 4, Flags: w, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "1.2.0", Summary: "Increment the score of a member in a sorted set", Run: zincrbyCmd},
		&Spec{Name: "zrem", Arity: -3, Flags: wf, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "1.2.0", Summary: "Remove one or more members from a sorted set", Run: zremCmd},
		&Spec{Name: "zcard", Arity: 2, Flags: rf, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "1.2.0", Summary: "Get the number of members in a sorted set", Run: zcardCmd},
		&Spec{Name: "zscore", Arity: 3, Flags: rf, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "1.2.0", Summary: "Get the score associated with the given member in a sorted set", Run: zscoreCmd},
		&Spec{Name: "zmscore", Arity: -3, Flags: rf, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "6.2.0", Summary: "Get the score associated with the given members in a sorted set", Run: zmscoreCmd},
		&Spec{Name: "zrank", Arity: 3, Flags: rf, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "2.0.0", Summary: "Determine the index of a member in a sorted set", Run: zrankCmd(false)},
		&Spec{Name: "zrevrank", Arity: 3, Flags: rf, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "2.0.0", Summary: "Determine the index of a member in a sorted set, with scores ordered from high to low", Run: zrankCmd(true)},
		&Spec{Name: "zcount", Arity: 4, Flags: rf, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "2.0.0", Summary: "Count the members in a sorted set with scores within the given values", Run: zcountCmd},
		&Spec{Name: "zlexcount", Arity: 4, Flags: rf, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "2.8.9", Summary: "Count the number of members in a sorted set between a given lexicographical range", Run: zlexcountCmd},
		&Spec{Name: "zrange", Arity: -4, Flags: r, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "1.2.0", Summary: "Return a range of members in a sorted set", Run: zrangeCmd(zbyAuto, zdirAuto)},
		&Spec{Name: "zrangebyscore", Arity: -4, Flags: r, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "1.0.5", Summary: "Return a range of members in a sorted set, by score", Run: zrangeCmd(zbyScore, zdirForward)},
		&Spec{Name: "zrevrangebyscore", Arity: -4, Flags: r, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "2.2.0", Summary: "Return a range of members in a sorted set, by score, with scores ordered from high to low", Run: zrangeCmd(zbyScore, zdirReverse)},
		&Spec{Name: "zrangebylex", Arity: -4, Flags: r, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "2.8.9", Summary: "Return a range of members in a sorted set, by lexicographical range", Run: zrangeCmd(zbyLex, zdirForward)},
		&Spec{Name: "zrevrangebylex", Arity: -4, Flags: r, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "2.8.9", Summary: "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings.", Run: zrangeCmd(zbyLex, zdirReverse)},
		&Spec{Name: "zrevrange", Arity: -4, Flags: r, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "1.2.0", Summary: "Return a range of members in a sorted set, by index, with scores ordered from high to low", Run: zrangeCmd(zbyRank, zdirReverse)},
		&Spec{Name: "zrangestore", Arity: -5, Flags: wd | FlagReadLookups, FirstKey: 1, LastKey: 2, Step: 1, Group: grp, Since: "6.2.0", Summary: "Store a range of members from sorted set into another key", Run: zrangestoreCmd},
		&Spec{Name: "zremrangebyrank", Arity: 4, Flags: ws, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "2.0.0", Summary: "Remove all members in a sorted set within the given indexes", Run: zremrangeCmd(zbyRank)},
		&Spec{Name: "zremrangebyscore", Arity: 4, Flags: ws, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "1.2.0", Summary: "Remove all members in a sorted set within the given scores", Run: zremrangeCmd(zbyScore)},
		&Spec{Name: "zremrangebylex", Arity: 4, Flags: ws, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "2.8.9", Summary: "Remove all members in a sorted set between the given lexicographical range", Run: zremrangeCmd(zbyLex)},
		&Spec{Name: "zpopmin", Arity: -2, Flags: wf, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "5.0.0", Summary: "Remove and return members with the lowest scores in a sorted set", Run: zpopCmd(false)},
		&Spec{Name: "zpopmax", Arity: -2, Flags: wf, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "5.0.0", Summary: "Remove and return members with the highest scores in a sorted set", Run: zpopCmd(true)},
		&Spec{Name: "zmpop", Arity: -4, Flags: ws, Group: grp, Since: "7.0.0", Summary: "Remove and return members with scores in a sorted set", Run: zmpopCmd, MoreKeys: numkeysKeys(1)},
		&Spec{Name: "zrandmember", Arity: -2, Flags: r, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "6.2.0", Summary: "Get one or multiple random elements from a sorted set", Run: zrandmemberCmd},
		&Spec{Name: "zunion", Arity: -3, Flags: r | FlagAllKeys, Group: grp, Since: "6.2.0", Summary: "Add multiple sorted sets", Run: zsetopCmd(zopUnion, false, false)},
		&Spec{Name: "zinter", Arity: -3, Flags: r | FlagAllKeys, Group: grp, Since: "6.2.0", Summary: "Intersect multiple sorted sets", Run: zsetopCmd(zopInter, false, false)},
		&Spec{Name: "zdiff", Arity: -3, Flags: r | FlagAllKeys, Group: grp, Since: "6.2.0", Summary: "Subtract multiple sorted sets", Run: zsetopCmd(zopDiff, false, false)},
		&Spec{Name: "zunionstore", Arity: -4, Flags: wd | FlagAllKeys | FlagReadLookups, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "2.0.0", Summary: "Add multiple sorted sets and store the resulting sorted set in a new key", Run: zsetopCmd(zopUnion, true, false)},
		&Spec{Name: "zinterstore", Arity: -4, Flags: wd | FlagAllKeys | FlagReadLookups, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "2.0.0", Summary: "Intersect multiple sorted sets and store the resulting sorted set in a new key", Run: zsetopCmd(zopInter, true, false)},
		&Spec{Name: "zdiffstore", Arity: -4, Flags: wd | FlagAllKeys | FlagReadLookups, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "6.2.0", Summary: "Subtract multiple sorted sets and store the resulting sorted set in a new key", Run: zsetopCmd(zopDiff, true, false)},
		&Spec{Name: "zintercard", Arity: -3, Flags: r | FlagAllKeys, Group: grp, Since: "7.0.0", Summary: "Intersect multiple sorted sets and return the cardinality of the result", Run: zsetopCmd(zopInter, false, true)},
		&Spec{Name: "zscan", Arity: -3, Flags: r, FirstKey: 1, LastKey: 1, Step: 1, Group: grp, Since: "2.8.0", Summary: "Incrementally iterate sorted sets elements and associated scores", Run: zscanCmd},
	)
}

// --- keyspace access -----------------------------------------------------------------------

// zsetAt returns the sorted set at key, nil when there is none. For a key of another type
// it replies WRONGTYPE and reports wrong.
func (c *Ctx) zsetAt(key []byte) (it item, z *zset, wrong bool) {
	it, ok, wrong := c.lookupType(key, TypeZSet)
	if !ok {
		return it, nil, wrong
	}
	return it, it.coll.(*zset), false
}

// zstoreResult replaces dst with a sorted set of es (in zset order, distinct members) and
// replies its size; an empty result deletes dst and replies 0 (the *STORE commands).
// event is the command's keyspace event.
func (c *Ctx) zstoreResult(dst []byte, es []zentry, event string) {
	if len(es) == 0 {
		c.del(dst)
		c.W.Int(0)
		return
	}
	c.store(dst, item{typ: TypeZSet, coll: zsetFromSorted(es)}, false)
	c.notify(notifyZSet, event, dst)
	c.W.Int(int64(len(es)))
}

// zreplyEntries replies members, with their scores when withScores: a flat array in RESP2,
// an array of [member, score] pairs in RESP3, as Redis 7.0 does.
func (c *Ctx) zreplyEntries(es []zentry, withScores bool) {
	switch {
	case !withScores:
		c.W.Array(len(es))
		for _, e := range es {
			c.W.BulkString(e.member)
		}
	case c.W.Resp3():
		c.W.Array(len(es))
		for _, e := range es {
			c.W.Array(2)
			c.W.BulkString(e.member)
			c.W.Double(e.score)
		}
	default:
		c.W.Array(2 * len(es))
		for _, e := range es {
			c.W.BulkString(e.member)
			c.W.Double(e.score)
		}
	}
}

// --- ZADD, ZINCRBY, ZREM -------------------------------------------------------------------

const (
	zaddNX = 1 << iota
	zaddXX
	zaddGT
	zaddLT
	zaddIncr
	zaddCH
)

// zadd outcomes for one member, as Redis's zsetAdd reports them.
const (
	zaddOutNop = iota
	zaddOutAdded
	zaddOutUpdated
	zaddOutSame // processed without a change (same score)
	zaddOutNaN
)

// addWithFlags applies one score-member pair of ZADD. newScore is the member's score
// afterwards as computed (before -0 normalisation), valid unless the outcome is Nop/NaN.
func (z *zset) addWithFlags(member []byte, score float64, flags int) (out int, newScore float64) {
	cur, exists := z.dict[string(member)]
	if exists {
		if flags&zaddNX != 0 {
			return zaddOutNop, 0
		}
		if flags&zaddIncr != 0 {
			score += cur
			if math.IsNaN(score) {
				return zaddOutNaN, 0
			}
		}
		if (flags&zaddLT != 0 && score >= cur) || (flags&zaddGT != 0 && score <= cur) {
			return zaddOutNop, 0
		}
		if score != cur {
			z.rescore(string(member), cur, score)
			return zaddOutUpdated, score
		}
		return zaddOutSame, score
	}
	if flags&zaddXX != 0 {
		return zaddOutNop, 0
	}
	z.insert(string(member), score)
	return zaddOutAdded, score
}

func zaddCmd(c *Ctx, args [][]byte) { zaddGeneric(c, args, 0) }

// ZINCRBY is ZADD with INCR; like Redis it parses ZADD's options too, which can only make
// its fixed arity come out wrong (a syntax error).
func zincrbyCmd(c *Ctx, args [][]byte) { zaddGeneric(c, args, zaddIncr) }

func zaddGeneric(c *Ctx, args [][]byte, flags int) {
	i := 2
options:
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case eq(a, "nx"):
			flags |= zaddNX
		case eq(a, "xx"):
			flags |= zaddXX
		case eq(a, "ch"):
			flags |= zaddCH
		case eq(a, "incr"):
			flags |= zaddIncr
		case eq(a, "gt"):
			flags |= zaddGT
		case eq(a, "lt"):
			flags |= zaddLT
		default:
			break options
		}
	}
	elements := len(args) - i
	if elements == 0 || elements%2 != 0 {
		c.Error(ErrSyntax)
		return
	}
	n := elements / 2
	nx, xx, gt, lt, incr := flags&zaddNX != 0, flags&zaddXX != 0, flags&zaddGT != 0, flags&zaddLT != 0, flags&zaddIncr != 0
	if nx && xx {
		c.Error("ERR XX and NX options at the same time are not compatible")
		return
	}
	if (gt && nx) || (lt && nx) || (gt && lt) {
		c.Error("ERR GT, LT, and/or NX options at the same time are not compatible")
		return
	}
	if incr && n > 1 {
		c.Error("ERR INCR option supports a single increment-element pair")
		return
	}
	// all scores are checked before anything changes: the command applies fully or not at all
	scores := make([]float64, n)
	for j := range scores {
		v, ok := ParseFloat(args[i+2*j])
		if !ok {
			c.Error(ErrNotFloat)
			return
		}
		scores[j] = v
	}
	key := args[1]
	it, z, wrong := c.zsetAt(key)
	if wrong {
		return
	}
	if z == nil && !xx {
		z = newZSet(n)
		it = item{typ: TypeZSet, coll: z}
	}
	added, updated, processed := 0, 0, 0
	var score float64
	if z != nil {
		for j := 0; j < n; j++ {
			out, ns := z.addWithFlags(args[i+1+2*j], scores[j], flags)
			switch out {
			case zaddOutNaN:
				// only INCR gets here, with its single pair: nothing has changed
				c.Error(ErrNaN)
				return
			case zaddOutAdded:
				added++
			case zaddOutUpdated:
				updated++
			}
			if out != zaddOutNop {
				processed++
				score = ns
			}
		}
	}
	if added+updated > 0 {
		c.touched(key, it)
		event := "zadd"
		if incr {
			event = "zincr"
		}
		c.notify(notifyZSet, event, key)
	}
	switch {
	case incr && processed > 0:
		c.W.Double(score)
	case incr:
		c.W.Null()
	case flags&zaddCH != 0:
		c.W.Int(int64(added + updated))
	default:
		c.W.Int(int64(added))
	}
}

func zremCmd(c *Ctx, args [][]byte) {
	it, z, wrong := c.zsetAt(args[1])
	if wrong {
		return
	}
	if z == nil {
		c.W.Int(0)
		return
	}
	deleted := 0
	for _, m := range args[2:] {
		if z.remove(m) {
			deleted++
		}
		if z.Len() == 0 {
			break
		}
	}
	if deleted > 0 {
		c.notify(notifyZSet, "zrem", args[1])
		c.touched(args[1], it)
	}
	c.W.Int(int64(deleted))
}

// --- single-key reads ----------------------------------------------------------------------

func zcardCmd(c *Ctx, args [][]byte) {
	_, z, wrong := c.zsetAt(args[1])
	switch {
	case wrong:
	case z == nil:
		c.W.Int(0)
	default:
		c.W.Int(int64(z.Len()))
	}
}

func zscoreCmd(c *Ctx, args [][]byte) {
	_, z, wrong := c.zsetAt(args[1])
	if wrong {
		return
	}
	if z != nil {
		if s, ok := z.score(args[2]); ok {
			c.W.Double(s)
			return
		}
	}
	c.W.Null()
}

func zmscoreCmd(c *Ctx, args [][]byte) {
	_, z, wrong := c.zsetAt(args[1])
	if wrong {
		return
	}
	c.W.Array(len(args) - 2)
	for _, m := range args[2:] {
		if z != nil {
			if s, ok := z.score(m); ok {
				c.W.Double(s)
				continue
			}
		}
		c.W.Null()
	}
}

func zrankCmd(rev bool) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		_, z, wrong := c.zsetAt(args[1])
		if wrong {
			return
		}
		if z != nil {
			if r, ok := z.rank(args[2]); ok {
				if rev {
					r = z.Len() - 1 - r
				}
				c.W.Int(int64(r))
				return
			}
		}
		c.W.Null()
	}
}

func zcountCmd(c *Ctx, args [][]byte) {
	r, ok := zparseScoreRange(args[2], args[3])
	if !ok {
		c.Error(ErrMinMaxFloat)
		return
	}
	zcountIn(c, args[1], &r)
}

func zlexcountCmd(c *Ctx, args [][]byte) {
	r, ok := zparseLexRange(args[2], args[3])
	if !ok {
		c.Error(ErrMinMaxLex)
		return
	}
	zcountIn(c, args[1], &r)
}

func zcountIn(c *Ctx, key []byte, r zbounds) {
	_, z, wrong := c.zsetAt(key)
	switch {
	case wrong:
	case z == nil:
		c.W.Int(0)
	default:
		c.W.Int(int64(z.countIn(r)))
	}
}

// --- ZRANGE and friends --------------------------------------------------------------------

type zrangeBy int

const (
	zbyAuto zrangeBy = iota
	zbyRank
	zbyScore
	zbyLex
)

type zrangeDir int

const (
	zdirAuto zrangeDir = iota
	zdirForward
	zdirReverse
)

func zrangeCmd(by zrangeBy, dir zrangeDir) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) { zrangeGeneric(c, args, 1, nil, by, dir) }
}

func zrangestoreCmd(c *Ctx, args [][]byte) { zrangeGeneric(c, args, 2, args[1], zbyAuto, zdirAuto) }

// zrangeGeneric is Redis's zrangeGenericCommand: ZRANGE and ZRANGESTORE (by and dir
// auto, set by options) and the older Z[REV]RANGE[BYSCORE|BYLEX] (fixed). args[src] is
// the source key, followed by min, max and the options. dst is ZRANGESTORE's destination.
func zrangeGeneric(c *Ctx, args [][]byte, src int, dst []byte, by zrangeBy, dir zrangeDir) {
	store := dst != nil
	minIdx, maxIdx := src+1, src+2
	withScores := false
	var offset int64
	limit := int64(-1)
	for j := src + 3; j < len(args); j++ {
		a := args[j]
		left := len(args) - j - 1
		switch {
		case !store && eq(a, "withscores"):
			withScores = true
		case eq(a, "limit") && left >= 2:
			var ok bool
			if offset, ok = c.parseIntArg(args[j+1]); !ok {
				return
			}
			if limit, ok = c.parseIntArg(args[j+2]); !ok {
				return
			}
			j += 2
		case dir == zdirAuto && eq(a, "rev"):
			dir = zdirReverse
		case by == zbyAuto && eq(a, "bylex"):
			by = zbyLex
		case by == zbyAuto && eq(a, "byscore"):
			by = zbyScore
		default:
			c.Error(ErrSyntax)
			return
		}
	}
	if dir == zdirAuto {
		dir = zdirForward
	}
	if by == zbyAuto {
		by = zbyRank
	}
	// like Redis, "LIMIT offset -1" counts as no LIMIT here
	if limit != -1 && by == zbyRank {
		c.Error("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
		return
	}
	if withScores && by == zbyLex {
		c.Error("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
		return
	}
	rev := dir == zdirReverse
	if rev && by != zbyRank {
		// the range is given as max, min
		minIdx, maxIdx = maxIdx, minIdx
	}
	var start, stop int64
	var bounds zbounds
	switch by {
	case zbyRank:
		var ok bool
		if start, ok = c.parseIntArg(args[minIdx]); !ok {
			return
		}
		if stop, ok = c.parseIntArg(args[maxIdx]); !ok {
			return
		}
	case zbyScore:
		r, ok := zparseScoreRange(args[minIdx], args[maxIdx])
		if !ok {
			c.Error(ErrMinMaxFloat)
			return
		}
		bounds = &r
	case zbyLex:
		r, ok := zparseLexRange(args[minIdx], args[maxIdx])
		if !ok {
			c.Error(ErrMinMaxLex)
			return
		}
		bounds = &r
	}
	_, z, wrong := c.zsetAt(args[src])
	if wrong {
		return
	}
	var es []zentry
	if z != nil {
		if by == zbyRank {
			lo, hi := rangeIndex(start, stop, z.Len())
			if rev {
				es = z.collect(z.Len()-1-lo, hi-lo, true)
			} else {
				es = z.collect(lo, hi-lo, false)
			}
		} else {
			es = z.rangeIn(bounds, offset, limit, rev)
		}
	}
	if store {
		c.zstoreResult(dst, es, "zrangestore")
		return
	}
	c.zreplyEntries(es, withScores)
}

func zremrangeCmd(by zrangeBy) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		var start, stop int64
		var bounds zbounds
		switch by {
		case zbyRank:
			var ok bool
			if start, ok = c.parseIntArg(args[2]); !ok {
				return
			}
			if stop, ok = c.parseIntArg(args[3]); !ok {
				return
			}
		case zbyScore:
			r, ok := zparseScoreRange(args[2], args[3])
			if !ok {
				c.Error(ErrMinMaxFloat)
				return
			}
			bounds = &r
		case zbyLex:
			r, ok := zparseLexRange(args[2], args[3])
			if !ok {
				c.Error(ErrMinMaxLex)
				return
			}
			bounds = &r
		}
		it, z, wrong := c.zsetAt(args[1])
		if wrong {
			return
		}
		if z == nil {
			c.W.Int(0)
			return
		}
		var es []zentry
		if by == zbyRank {
			lo, hi := rangeIndex(start, stop, z.Len())
			es = z.collect(lo, hi-lo, false)
		} else {
			es = z.rangeIn(bounds, 0, -1, false)
		}
		for _, e := range es {
			z.removeEntry(e)
		}
		if len(es) > 0 {
			c.notify(notifyZSet, [...]string{zbyRank: "zremrangebyrank", zbyScore: "zremrangebyscore", zbyLex: "zremrangebylex"}[by], args[1])
			c.touched(args[1], it)
		}
		c.W.Int(int64(len(es)))
	}
}
