package kvstore

import (
	"bytes"
	"math"
	"slices"
	"strings"
)

func init() {
	// BY and GET patterns read keys no position can name: both lock the whole store.
	register(
		&Spec{Name: "sort", Arity: -2, Flags: FlagWrite | FlagDenyOOM | FlagAllKeys | FlagReadLookups, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "1.0.0", Summary: "Sort the elements in a list, set or sorted set", Run: sortCmd(false), ReadOnlyCall: withoutStore, MoreKeys: storeKeys},
		&Spec{Name: "sort_ro", Arity: -2, Flags: FlagReadOnly | FlagAllKeys, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "7.0.0", Summary: "Sort the elements in a list, set or sorted set. Read-only variant of SORT.", Run: sortCmd(true)},
	)
}

// sortElem is one element being sorted and what it sorts by.
type sortElem struct {
	v     string
	score float64 // numeric sort
	by    string  // ALPHA with BY: the looked-up value
	hasBy bool
}

// sortCmd implements SORT and SORT_RO as Redis 7.0's sortCommandGeneric: the options,
// LIMIT clamping, BY/GET pattern lookups ("#" is the element, "key*->field" a hash field),
// numeric scores parsed with strtod (ties broken by the elements' bytes), ALPHA in byte
// order, the native order of lists and sorted sets when nothing is to be sorted, and STORE
// writing a list (or deleting the destination when empty).
func sortCmd(readonly bool) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		var desc, alpha, dontSort bool
		var by []byte
		var gets [][]byte
		var store []byte
		limitStart, limitCount := int64(0), int64(-1)
		for j := 2; j < len(args); j++ {
			left := len(args) - j - 1
			a := args[j]
			switch {
			case eq(a, "asc"):
				desc = false
			case eq(a, "desc"):
				desc = true
			case eq(a, "alpha"):
				alpha = true
			case eq(a, "limit") && left >= 2:
				s, ok1 := ParseInt(args[j+1])
				n, ok2 := ParseInt(args[j+2])
				if !ok1 || !ok2 {
					c.Error(ErrNotInteger)
					return
				}
				limitStart, limitCount = s, n
				j += 2
			case !readonly && eq(a, "store") && left >= 1:
				store = args[j+1]
				j++
			case eq(a, "by") && left >= 1:
				by = args[j+1]
				dontSort = bytes.IndexByte(by, '*') < 0
				j++
			case eq(a, "get") && left >= 1:
				gets = append(gets, args[j+1])
				j++
			default:
				c.Error(ErrSyntax)
				return
			}
		}
		it, ok := c.lookup(args[1])
		if ok && it.typ != TypeList && it.typ != TypeSet && it.typ != TypeZSet {
			c.Error(ErrWrongType)
			return
		}
		if z, isZSet := it.coll.(*zset); isZSet {
			// Redis converts a sorted set it sorts to a skiplist for good (on a read
			// path, under a shared lock: large is atomic for that)
			z.large.Store(true)
		}
		typ := it.typ
		if !ok {
			typ = TypeList
		}
		// a set in its own order would store an order replicas need not share: sort it
		if dontSort && typ == TypeSet && store != nil {
			dontSort, alpha, by = false, true, nil
		}
		n := 0
		if ok {
			n = it.coll.Len()
		}
		start := max(limitStart, 0)
		end := int64(n - 1)
		if limitCount >= 0 {
			end = start + limitCount - 1
		}
		if start >= int64(n) {
			start, end = int64(n-1), int64(n-2)
		}
		end = min(end, int64(n-1))

		var elems []sortElem
		switch {
		case ok && dontSort && (typ == TypeList || typ == TypeZSet):
			// native order, DESC reversed, only the LIMIT window
			all := sortNative(it.coll)
			if desc {
				slices.Reverse(all)
			}
			for k := start; k <= end; k++ {
				elems = append(elems, sortElem{v: all[k]})
			}
			end -= start
			start = 0
		case ok:
			for _, v := range sortNative(it.coll) {
				elems = append(elems, sortElem{v: v})
			}
		}

		if !dontSort {
			for k := range elems {
				e := &elems[k]
				val := e.v
				if by != nil {
					v, found := c.sortLookup(by, e.v)
					if !found {
						continue
					}
					val = v
				}
				if alpha {
					if by != nil {
						e.by, e.hasBy = val, true
					}
					continue
				}
				f, used, erange := strtod([]byte(val))
				if used != len(val) || erange || math.IsNaN(f) {
					c.Error("ERR One or more scores can't be converted into double")
					return
				}
				e.score = f
			}
			slices.SortStableFunc(elems, func(x, y sortElem) int {
				cmp := 0
				switch {
				case !alpha:
					switch {
					case x.score > y.score:
						cmp = 1
					case x.score < y.score:
						cmp = -1
					default:
						cmp = strings.Compare(x.v, y.v)
					}
				case by != nil:
					switch {
					case !x.hasBy || !y.hasBy:
						cmp = boolCmp(x.hasBy, y.hasBy)
					default:
						cmp = strings.Compare(x.by, y.by)
					}
				default:
					cmp = strings.Compare(x.v, y.v)
				}
				if desc {
					return -cmp
				}
				return cmp
			})
		}

		var out []string
		var present []bool
		for k := start; k <= end && k >= 0; k++ {
			e := elems[k]
			if len(gets) == 0 {
				out, present = append(out, e.v), append(present, true)
				continue
			}
			for _, g := range gets {
				v, found := c.sortLookup(g, e.v)
				out, present = append(out, v), append(present, found)
			}
		}
		if store == nil {
			c.W.Array(len(out))
			for k, v := range out {
				if present[k] {
					c.W.BulkString(v)
				} else {
					c.W.Null()
				}
			}
			return
		}
		if len(out) == 0 {
			c.del(store)
			c.W.Int(0)
			return
		}
		l := &listColl{}
		for _, v := range out { // a missing GET stores ""
			l.pushBack(v)
		}
		c.store(store, item{typ: TypeList, coll: l}, false)
		c.notify(notifyList, "sortstore", store)
		c.W.Int(int64(len(out)))
	}
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// sortNative lists a collection's elements in its own order: a list front to back, a set
// in its dense order, a sorted set by score.
func sortNative(coll collection) []string {
	var out []string
	switch v := coll.(type) {
	case *listColl:
		out = make([]string, v.n)
		v.copyTo(out)
	case *setColl:
		out = slices.Clone(v.members)
	case *zset:
		v.tree.Scan(func(e zentry) bool {
			out = append(out, e.member)
			return true
		})
	}
	return out
}

// sortLookup resolves a BY/GET pattern for element v as Redis's lookupKeyByPattern: "#" is
// v itself; otherwise the first '*' is replaced by v, and "->field" after it reads a hash
// field instead of a string. A pattern without '*' names nothing.
func (c *Ctx) sortLookup(pattern []byte, v string) (string, bool) {
	if len(pattern) == 1 && pattern[0] == '#' {
		return v, true
	}
	star := bytes.IndexByte(pattern, '*')
	if star < 0 {
		return "", false
	}
	keyPart, field := pattern, []byte(nil)
	if f := bytes.Index(pattern[star+1:], []byte("->")); f >= 0 && star+1+f+2 < len(pattern) {
		keyPart, field = pattern[:star+1+f], pattern[star+1+f+2:]
	}
	key := make([]byte, 0, len(keyPart)+len(v))
	key = append(key, keyPart[:star]...)
	key = append(key, v...)
	key = append(key, keyPart[star+1:]...)
	it, ok := c.lookup(key)
	if !ok {
		return "", false
	}
	if field == nil {
		if it.typ != TypeString {
			return "", false
		}
		return it.str, true
	}
	h, isHash := it.coll.(*hashColl)
	if !isHash {
		return "", false
	}
	return h.get(field)
}
