package kvstore

import (
	"math"
	"math/big"
	"sync"
	"sync/atomic"
)

// The blocking commands: BLPOP BRPOP BRPOPLPUSH BLMOVE BLMPOP BZPOPMIN BZPOPMAX BZMPOP.
//
// In the log a blocking command is its non-blocking self: it pops when one of its keys
// holds something and replies nil when none does, as Redis runs it inside MULTI (and
// BLMPOP and BZMPOP inside a script). Every replica applies it alike. The waiting is the
// frontend's (package resp): it proposes the command, and when the reply is the nil of
// "nothing to pop" it waits for one of the keys to become ready (AwaitKeys) and proposes
// the command again, until its timeout. A key a client waits on is absent (a key of
// another type is WRONGTYPE at once, a non-empty one is popped), so it becomes ready when
// the applier creates it as a list or a sorted set: what Redis's signalKeyAsReady
// watches for.

func init() {
	const (
		w  = FlagWrite | FlagBlocking
		wd = FlagWrite | FlagDenyOOM | FlagBlocking
	)
	register(
		&Spec{Name: "blpop", Arity: -3, Flags: w, FirstKey: 1, LastKey: -2, Step: 1, Group: "list", Since: "2.0.0", Summary: "Remove and get the first element in a list, or block until one is available", Run: blockingPopCmd(true)},
		&Spec{Name: "brpop", Arity: -3, Flags: w, FirstKey: 1, LastKey: -2, Step: 1, Group: "list", Since: "2.0.0", Summary: "Remove and get the last element in a list, or block until one is available", Run: blockingPopCmd(false)},
		&Spec{Name: "brpoplpush", Arity: 4, Flags: wd, FirstKey: 1, LastKey: 2, Step: 1, Group: "list", Since: "2.2.0", Summary: "Pop an element from a list, push it to another list and return it; or block until one is available", Run: brpoplpushCmd},
		&Spec{Name: "blmove", Arity: 6, Flags: wd, FirstKey: 1, LastKey: 2, Step: 1, Group: "list", Since: "6.2.0", Summary: "Pop an element from a list, push it to another list and return it; or block until one is available", Run: blmoveCmd},
		&Spec{Name: "blmpop", Arity: -5, Flags: w, Group: "list", Since: "7.0.0", Summary: "Pop elements from a list, or block until one is available", Run: blmpopCmd, MoreKeys: numkeysKeys(2)},
		&Spec{Name: "bzpopmin", Arity: -3, Flags: w | FlagFast, FirstKey: 1, LastKey: -2, Step: 1, Group: "sorted-set", Since: "5.0.0", Summary: "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available", Run: bzpopCmd(false)},
		&Spec{Name: "bzpopmax", Arity: -3, Flags: w | FlagFast, FirstKey: 1, LastKey: -2, Step: 1, Group: "sorted-set", Since: "5.0.0", Summary: "Remove and return the member with the highest score from one or more sorted sets, or block until one is available", Run: bzpopCmd(true)},
		&Spec{Name: "bzmpop", Arity: -5, Flags: w, Group: "sorted-set", Since: "7.0.0", Summary: "Remove and return members with scores in a sorted set or block until one is available", Run: bzmpopCmd, MoreKeys: numkeysKeys(2)},
	)
}

// Error replies of the blocking commands' timeout, as Redis 7.0 words them.
const (
	errTimeoutNotFloat = "ERR timeout is not a float or out of range"
	errTimeoutNegative = "ERR timeout is negative"
)

// ParseBlockTimeout parses a blocking command's timeout, in seconds, as Redis 7.0 does:
// a long double (strtold: "0x10" and "1e-3" too, not "nan"), times 1000, rounded up to
// whole milliseconds. 0 waits for ever. A value whose milliseconds do not fit in 64 bits
// ("inf", "1e300") is negative there: Redis converts it to LLONG_MIN. errMsg is the reply
// for a bad timeout.
func ParseBlockTimeout(b []byte) (ms int64, errMsg string) {
	f, ok := parseLongDouble(b)
	if !ok {
		return 0, errTimeoutNotFloat
	}
	if f.IsInf() {
		return 0, errTimeoutNegative
	}
	f.Mul(f, big.NewFloat(1000))
	if f.Cmp(big.NewFloat(math.MaxInt64)) >= 0 || f.Cmp(big.NewFloat(math.MinInt64)) < 0 {
		return 0, errTimeoutNegative
	}
	i, acc := f.Int64() // towards zero
	if acc == big.Below {
		i++ // ceil of a positive fraction (its overflow, just under 2^63, is negative too)
	}
	if i < 0 {
		return 0, errTimeoutNegative
	}
	return i, ""
}

// timeoutOK checks a blocking command's timeout argument; false: the error is replied.
func (c *Ctx) timeoutOK(b []byte) bool {
	if _, msg := ParseBlockTimeout(b); msg != "" {
		c.Error(msg)
		return false
	}
	return true
}

// BlockingCall returns the keys a call of a blocking command (spec.Flags has
// FlagBlocking) waits on and its timeout in milliseconds (0: for ever). ok is false for
// a call that does not wait (XREAD without BLOCK) or is malformed: it runs once, and
// the store replies (a malformed call with Redis's error, in the order of its checks).
func BlockingCall(args [][]byte) (keys [][]byte, ms int64, ok bool) {
	spec := Lookup(args[0])
	if spec == nil {
		return nil, 0, false
	}
	var timeout []byte
	switch spec.Name {
	case "xread", "xreadgroup":
		a, msg := ParseXRead(args)
		if msg != "" || a.BlockMS < 0 {
			return nil, 0, false
		}
		return a.Keys, a.BlockMS, true
	case "blpop", "brpop", "bzpopmin", "bzpopmax":
		keys, timeout = args[1:len(args)-1], args[len(args)-1]
	case "brpoplpush":
		keys, timeout = args[1:2], args[3]
	case "blmove":
		keys, timeout = args[1:2], args[5]
	case "blmpop", "bzmpop":
		if keys = spec.MoreKeys(args); keys == nil {
			return nil, 0, false
		}
		timeout = args[1]
	default:
		return nil, 0, false
	}
	ms, msg := ParseBlockTimeout(timeout)
	return keys, ms, msg == ""
}

// blockingPopCmd is BLPOP / BRPOP key [key ...] timeout: [key, element] from the first
// non-empty list, a nil array when every list is empty.
func blockingPopCmd(front bool) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		if !c.timeoutOK(args[len(args)-1]) {
			return
		}
		for _, key := range args[1 : len(args)-1] {
			l, it, ok, wrong := c.getList(key)
			if wrong {
				return
			}
			if !ok {
				continue
			}
			v := l.pop(front)
			c.notify(notifyList, popEvent(front), key)
			c.touched(key, it)
			c.W.Array(2)
			c.W.Bulk(key)
			c.W.BulkString(v)
			return
		}
		c.W.NullArray()
	}
}

// brpoplpushCmd is BRPOPLPUSH source destination timeout.
func brpoplpushCmd(c *Ctx, args [][]byte) {
	if c.timeoutOK(args[3]) {
		c.listMove(args[1], args[2], false, true)
	}
}

// blmoveCmd is BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout; the directions
// are checked before the timeout, as Redis does.
func blmoveCmd(c *Ctx, args [][]byte) {
	from, ok := c.listWhere(args[3])
	if !ok {
		return
	}
	to, ok := c.listWhere(args[4])
	if !ok || !c.timeoutOK(args[5]) {
		return
	}
	c.listMove(args[1], args[2], from, to)
}

// blmpopCmd is BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]: LMPOP
// after the timeout (LMPOP reads its arguments from args[1], here the timeout's place).
func blmpopCmd(c *Ctx, args [][]byte) {
	if c.timeoutOK(args[1]) {
		lmpopCmd(c, args[1:])
	}
}

// bzmpopCmd is BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count].
func bzmpopCmd(c *Ctx, args [][]byte) {
	if c.timeoutOK(args[1]) {
		zmpopCmd(c, args[1:])
	}
}

// bzpopCmd is BZPOPMIN / BZPOPMAX key [key ...] timeout: [key, member, score] from the
// first non-empty sorted set, a nil array when every one is empty.
func bzpopCmd(max bool) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		if !c.timeoutOK(args[len(args)-1]) {
			return
		}
		for _, key := range args[1 : len(args)-1] {
			it, z, wrong := c.zsetAt(key)
			if wrong {
				return
			}
			if z == nil {
				continue
			}
			e := z.popEdge(max)
			c.notify(notifyZSet, zpopEvent(max), key)
			c.touched(key, it)
			c.W.Array(3)
			c.W.Bulk(key)
			c.W.BulkString(e.member)
			c.W.Double(e.score)
			return
		}
		c.W.NullArray()
	}
}

// readyKeys are the keys clients wait on (AwaitKeys), by database and key.
type readyKeys struct {
	n  atomic.Int64 // waits registered: the applier looks no further while it is 0
	mu sync.Mutex
	m  map[readyKey][]*KeyWait
}

type readyKey struct {
	db  int
	key string
}

// KeyWait is a client's wait for any of its keys to become ready: C is closed when one
// does (or when the keyspace was replaced wholesale: a snapshot restored, SWAPDB).
type KeyWait struct {
	C     chan struct{}
	s     *Store
	keys  []readyKey
	fired bool // under s.ready.mu
}

// AwaitKeys registers a wait for any of keys, in database db, to be created as a list or
// a sorted set. Register before proposing the command that found them empty: a key
// created by an entry applied after it then closes C. Cancel ends the wait.
func (s *Store) AwaitKeys(db int, keys [][]byte) *KeyWait {
	w := &KeyWait{C: make(chan struct{}), s: s, keys: make([]readyKey, len(keys))}
	r := &s.ready
	r.mu.Lock()
	if r.m == nil {
		r.m = make(map[readyKey][]*KeyWait)
	}
	for i, k := range keys {
		w.keys[i] = readyKey{db, string(k)}
		r.m[w.keys[i]] = append(r.m[w.keys[i]], w)
	}
	r.n.Add(1)
	r.mu.Unlock()
	return w
}

// Cancel ends the wait.
func (w *KeyWait) Cancel() {
	r := &w.s.ready
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range w.keys {
		ws := r.m[k]
		for i, o := range ws {
			if o == w {
				ws = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(r.m, k)
		} else {
			r.m[k] = ws
		}
	}
	if w.keys != nil {
		r.n.Add(-1)
		w.keys = nil
	}
}

// keyReady wakes the clients waiting on key in database db (the applier, creating it).
func (s *Store) keyReady(db int, key []byte) {
	r := &s.ready
	r.mu.Lock()
	for _, w := range r.m[readyKey{db, string(key)}] {
		w.fire()
	}
	r.mu.Unlock()
}

// allReady wakes every waiting client: the keyspace changed without keys being created
// one by one (a snapshot restored, SWAPDB). Each proposes its command again.
func (s *Store) allReady() {
	r := &s.ready
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	for _, ws := range r.m {
		for _, w := range ws {
			w.fire()
		}
	}
	r.mu.Unlock()
}

func (w *KeyWait) fire() {
	if !w.fired {
		w.fired = true
		close(w.C)
	}
}
