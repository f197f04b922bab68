package kvstore

import (
	"fmt"
	"math"
	"strconv"
)

func init() {
	register(
		&Spec{Name: "del", Arity: -2, Flags: FlagWrite, FirstKey: 1, LastKey: -1, Step: 1, Group: "generic", Since: "1.0.0", Summary: "Delete a key", Run: delCmd},
		&Spec{Name: "unlink", Arity: -2, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: -1, Step: 1, Group: "generic", Since: "4.0.0", Summary: "Delete a key asynchronously in another thread", Run: delCmd},
		&Spec{Name: "exists", Arity: -2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: -1, Step: 1, Group: "generic", Since: "1.0.0", Summary: "Determine if a key exists", Run: existsCmd},
		&Spec{Name: "touch", Arity: -2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: -1, Step: 1, Group: "generic", Since: "3.2.1", Summary: "Alters the last access time of a key(s). Returns the number of existing keys specified.", Run: touchCmd},
		&Spec{Name: "type", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "1.0.0", Summary: "Determine the type stored at key", Run: typeCmd},
		&Spec{Name: "expire", Arity: -3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "1.0.0", Summary: "Set a key's time to live in seconds", Run: expireCmd(true, false)},
		&Spec{Name: "pexpire", Arity: -3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "2.6.0", Summary: "Set a key's time to live in milliseconds", Run: expireCmd(false, false)},
		&Spec{Name: "expireat", Arity: -3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "1.2.0", Summary: "Set the expiration for a key as a UNIX timestamp", Run: expireCmd(true, true)},
		&Spec{Name: "pexpireat", Arity: -3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "2.6.0", Summary: "Set the expiration for a key as a UNIX timestamp specified in milliseconds", Run: expireCmd(false, true)},
		&Spec{Name: "ttl", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "1.0.0", Summary: "Get the time to live for a key in seconds", Run: ttlCmd(true, false)},
		&Spec{Name: "pttl", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "2.6.0", Summary: "Get the time to live for a key in milliseconds", Run: ttlCmd(false, false)},
		&Spec{Name: "expiretime", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "7.0.0", Summary: "Get the expiration Unix timestamp for a key", Run: ttlCmd(true, true)},
		&Spec{Name: "pexpiretime", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "7.0.0", Summary: "Get the expiration Unix timestamp for a key in milliseconds", Run: ttlCmd(false, true)},
		&Spec{Name: "persist", Arity: 2, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "2.2.0", Summary: "Remove the expiration from a key", Run: persistCmd},
		&Spec{Name: "rename", Arity: 3, Flags: FlagWrite, FirstKey: 1, LastKey: 2, Step: 1, Group: "generic", Since: "1.0.0", Summary: "Rename a key", Run: renameCmd(false)},
		&Spec{Name: "renamenx", Arity: 3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 2, Step: 1, Group: "generic", Since: "1.0.0", Summary: "Rename a key, only if the new key does not exist", Run: renameCmd(true)},
		&Spec{Name: "keys", Arity: 2, Flags: FlagReadOnly | FlagAllKeys, Group: "generic", Since: "1.0.0", Summary: "Find all keys matching the given pattern", Run: keysCmd},
		&Spec{Name: "scan", Arity: -2, Flags: FlagReadOnly | FlagAllKeys, Group: "generic", Since: "2.8.0", Summary: "Incrementally iterate the keys space", Run: scanCmd},
		&Spec{Name: "randomkey", Arity: 1, Flags: FlagReadOnly | FlagAllKeys, Group: "generic", Since: "1.0.0", Summary: "Return a random key from the keyspace", Run: randomkeyCmd},
		&Spec{Name: "dbsize", Arity: 1, Flags: FlagReadOnly | FlagFast | FlagAllKeys, Group: "server", Since: "1.0.0", Summary: "Return the number of keys in the selected database", Run: dbsizeCmd},
		&Spec{Name: "flushdb", Arity: -1, Flags: FlagWrite | FlagAllKeys, Group: "server", Since: "1.0.0", Summary: "Remove all keys from the current database", Run: flushCmd(false), Blind: flushIsBlind},
		&Spec{Name: "flushall", Arity: -1, Flags: FlagWrite | FlagAllKeys, Group: "server", Since: "1.0.0", Summary: "Remove all keys from all databases", Run: flushCmd(true), Blind: flushIsBlind},
		&Spec{Name: "copy", Arity: -3, Flags: FlagWrite | FlagDenyOOM | FlagReadLookups, FirstKey: 1, LastKey: 2, Step: 1, Group: "generic", Since: "6.2.0", Summary: "Copy a key", Run: copyCmd},
		&Spec{Name: "move", Arity: 3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "1.0.0", Summary: "Move a key to another database", Run: moveCmd},
		&Spec{Name: "object", Arity: -2, Flags: FlagReadOnly, FirstKey: 2, LastKey: 2, Step: 1, Group: "generic", Since: "2.2.3", Summary: "A container for object introspection commands", Run: objectCmd, Subcommands: objectArity},
		&Spec{Name: "swapdb", Arity: 3, Flags: FlagWrite | FlagFast | FlagAllKeys, Group: "server", Since: "4.0.0", Summary: "Swaps two Redis databases", Run: swapdbCmd},
		// Connection commands that may be queued in MULTI: their replies belong in EXEC's.
		&Spec{Name: "ping", Arity: -1, Flags: FlagConn | FlagFast, Group: "connection", Since: "1.0.0", Summary: "Ping the server", Run: pingCmd},
		&Spec{Name: "echo", Arity: 2, Flags: FlagConn | FlagFast, Group: "connection", Since: "1.0.0", Summary: "Echo the given string", Run: echoCmd},
		&Spec{Name: "select", Arity: 2, Flags: FlagConn | FlagFast, Group: "connection", Since: "1.0.0", Summary: "Change the selected database for the current connection", Run: selectCmd},
	)
}

func delCmd(c *Ctx, args [][]byte) {
	n := 0
	for _, k := range args[1:] {
		if c.del(k) {
			n++
		}
	}
	c.W.Int(int64(n))
}

// existsCmd is EXISTS, which leaves the keys' access clocks alone.
func existsCmd(c *Ctx, args [][]byte) {
	c.noTouch = true
	touchCmd(c, args)
}

// touchCmd is TOUCH: EXISTS that counts as an access to each key.
func touchCmd(c *Ctx, args [][]byte) {
	n := 0
	for _, k := range args[1:] {
		if _, ok := c.lookup(k); ok {
			n++
		}
	}
	c.W.Int(int64(n))
}

func typeCmd(c *Ctx, args [][]byte) {
	c.noTouch = true
	it, ok := c.lookup(args[1])
	if !ok {
		c.W.Status("none")
		return
	}
	c.W.Status(it.typ.String())
}

const (
	expNX = 1 << iota
	expXX
	expGT
	expLT
)

func expireCmd(seconds, absolute bool) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		name := string(lowerName(args[0]))
		flags := 0
		for _, a := range args[3:] {
			switch {
			case eq(a, "nx"):
				flags |= expNX
			case eq(a, "xx"):
				flags |= expXX
			case eq(a, "gt"):
				flags |= expGT
			case eq(a, "lt"):
				flags |= expLT
			default:
				c.Error("ERR Unsupported option " + string(a))
				return
			}
		}
		if flags&expNX != 0 && flags&(expXX|expGT|expLT) != 0 {
			c.Error("ERR NX and XX, GT or LT options at the same time are not compatible")
			return
		}
		if flags&expGT != 0 && flags&expLT != 0 {
			c.Error("ERR GT and LT options at the same time are not compatible")
			return
		}
		when, ok := c.parseIntArg(args[2])
		if !ok {
			return
		}
		if seconds {
			if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
				c.Error(fmt.Sprintf(ErrInvalidExp, name))
				return
			}
			when *= 1000
		}
		if !absolute {
			if when > math.MaxInt64-c.Now {
				c.Error(fmt.Sprintf(ErrInvalidExp, name))
				return
			}
			when += c.Now
		}
		key := args[1]
		if _, ok := c.lookup(key); !ok {
			c.W.Int(0)
			return
		}
		if flags != 0 {
			cur, has := c.expireAt(key)
			if (flags&expNX != 0 && has) || (flags&expXX != 0 && !has) ||
				(flags&expGT != 0 && (!has || when <= cur)) ||
				(flags&expLT != 0 && has && when >= cur) {
				c.W.Int(0)
				return
			}
		}
		if when <= c.Now {
			c.del(key)
		} else {
			c.setExpire(key, when)
			c.notify(notifyGeneric, "expire", key)
		}
		c.W.Int(1)
	}
}

func ttlCmd(seconds, absolute bool) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		c.noTouch = true
		if _, ok := c.lookup(args[1]); !ok {
			c.W.Int(-2)
			return
		}
		at, has := c.expireAt(args[1])
		if !has {
			c.W.Int(-1)
			return
		}
		v := at
		if !absolute {
			v = at - c.Now
			if v < 0 {
				v = 0
			}
		}
		if seconds {
			if absolute {
				v /= 1000
			} else {
				v = (v + 500) / 1000
			}
		}
		c.W.Int(v)
	}
}

func persistCmd(c *Ctx, args [][]byte) {
	if _, ok := c.lookup(args[1]); !ok {
		c.W.Int(0)
		return
	}
	if c.persist(args[1]) {
		c.notify(notifyGeneric, "persist", args[1])
		c.W.Int(1)
	} else {
		c.W.Int(0)
	}
}

func renameCmd(nx bool) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		src, dst := args[1], args[2]
		it, ok := c.lookup(src)
		if !ok {
			c.Error(ErrNoSuchKey)
			return
		}
		if string(src) == string(dst) {
			if nx {
				c.W.Int(0)
			} else {
				c.W.Status("OK")
			}
			return
		}
		_, exists := c.lookup(dst)
		if exists && nx {
			c.W.Int(0)
			return
		}
		at, hasTTL := c.expireAt(src)
		clock, m := clockOf(&c.db(src).keys, src)
		c.removeKey(c.db(src), src)
		c.store(dst, it, false)
		clockCarried(&c.db(dst).keys, dst, clock, m)
		if exists {
			// Redis deletes the old dst and adds the key anew
			c.notify(notifyNew, "new", dst)
		}
		if hasTTL {
			c.setExpire(dst, at)
		}
		c.notify(notifyGeneric, "rename_from", src)
		c.notify(notifyGeneric, "rename_to", dst)
		if nx {
			c.W.Int(1)
		} else {
			c.W.Status("OK")
		}
	}
}

// liveKeys calls fn for every key of the context's db in shard i whose TTL has not passed.
func (c *Ctx) liveKeys(i int, fn func(key string, it item) bool) bool {
	return c.liveKeysFrom(i, 0, fn)
}

// liveKeysFrom is liveKeys in the shard's table order from entry start on.
func (c *Ctx) liveKeysFrom(i int, start uint64, fn func(key string, it item) bool) bool {
	d := &c.s.shards[i].dbs[c.DB]
	if c.DB == 0 && c.s.mcFlushed(c.Now) {
		return true // flush_all hides them all
	}
	return d.eachFrom(start, func(k string, it item) bool {
		if it.hasTTL && d.ttl[k] <= c.Now {
			return true
		}
		return fn(k, it)
	})
}

func keysCmd(c *Ctx, args [][]byte) {
	pattern := args[1]
	all := len(pattern) == 1 && pattern[0] == '*'
	var out []string
	for i := range c.s.shards {
		c.liveKeys(i, func(k string, _ item) bool {
			if all || Glob(pattern, []byte(k)) {
				out = append(out, k)
			}
			return true
		})
	}
	c.W.Array(len(out))
	for _, k := range out {
		c.W.BulkString(k)
	}
}

// scanOptions are the MATCH, COUNT and TYPE options of the SCAN family.
type scanOptions struct {
	match []byte
	count int
	typ   Type
	typed bool
}

// parseScanOptions parses the options after the cursor; it replies with the error if any.
// Only SCAN itself accepts TYPE.
func (c *Ctx) parseScanOptions(args [][]byte, allowType bool) (scanOptions, bool) {
	o := scanOptions{count: 10}
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			c.Error(ErrSyntax)
			return o, false
		}
		switch {
		case eq(args[i], "count"):
			n, ok := c.parseIntArg(args[i+1])
			if !ok {
				return o, false
			}
			if n < 1 {
				c.Error(ErrSyntax)
				return o, false
			}
			o.count = int(min(n, 1<<30))
		case eq(args[i], "match"):
			o.match = args[i+1]
			if len(o.match) == 1 && o.match[0] == '*' {
				o.match = nil
			}
		case allowType && eq(args[i], "type"):
			o.typed = true
			o.typ = typeByName(args[i+1])
		default:
			c.Error(ErrSyntax)
			return o, false
		}
	}
	return o, true
}

func typeByName(b []byte) Type {
	for t := TypeString; t <= TypeStream; t++ {
		if eq(b, t.String()) {
			return t
		}
	}
	return TypeNone // matches nothing, as Redis does for an unknown type name
}

// parseCursor parses a SCAN cursor as Redis's strtoul does: decimal digits with an
// optional sign ("-1" wraps to 2^64-1), nothing before or after.
func (c *Ctx) parseCursor(b []byte) (uint64, bool) {
	digits, neg := b, false
	if len(digits) > 0 && (digits[0] == '-' || digits[0] == '+') {
		neg = digits[0] == '-'
		digits = digits[1:]
	}
	v, err := strconv.ParseUint(string(digits), 10, 64)
	if err != nil || len(digits) == 0 || digits[0] == '+' || digits[0] == '-' {
		c.Error("ERR invalid cursor")
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// scanCmd walks the keyspace shard by shard: the cursor is the next shard to visit, and a
// call returns whole shards until it has visited COUNT keys. Each shard is read under its
// lock, so a key present for the whole iteration is returned at least once, as SCAN
// promises; a call may return more than COUNT keys, which the SCAN contract allows.
func scanCmd(c *Ctx, args [][]byte) {
	cursor, ok := c.parseCursor(args[1])
	if !ok {
		return
	}
	o, ok := c.parseScanOptions(args[2:], true)
	if !ok {
		return
	}
	var out []string
	visited := 0
	next := cursor
	for next < numShards && visited < o.count {
		c.liveKeys(int(next), func(k string, it item) bool {
			visited++
			if o.typed && it.typ != o.typ {
				return true
			}
			if o.match != nil && !Glob(o.match, []byte(k)) {
				return true
			}
			out = append(out, k)
			return true
		})
		next++
	}
	if next >= numShards {
		next = 0
	}
	c.W.Array(2)
	c.W.BulkString(strconv.FormatUint(next, 10))
	c.W.Array(len(out))
	for _, k := range out {
		c.W.BulkString(k)
	}
}

func randomkeyCmd(c *Ctx, _ [][]byte) {
	start := c.rnd.intn(numShards)
	for j := 0; j < numShards; j++ {
		var found string
		ok := false
		// from a random entry of the shard's table: its first key would be the same
		// every time
		c.liveKeysFrom((start+j)%numShards, c.rnd.next(), func(k string, _ item) bool {
			found, ok = k, true
			return false
		})
		if ok {
			c.W.BulkString(found)
			return
		}
	}
	c.W.Null()
}

func dbsizeCmd(c *Ctx, _ [][]byte) {
	n := 0
	for i := range c.s.shards {
		n += c.s.shards[i].dbs[c.DB].keys.len()
	}
	c.W.Int(int64(n))
}

func flushIsBlind(args [][]byte) bool {
	return len(args) == 1 || (len(args) == 2 && (eq(args[1], "async") || eq(args[1], "sync")))
}

func flushCmd(all bool) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		if !flushIsBlind(args) {
			c.Error(ErrSyntax)
			return
		}
		ver := c.nextVer()
		for i := range c.s.shards {
			for db := range c.s.shards[i].dbs {
				if !all && db != c.DB {
					continue
				}
				d := &c.s.shards[i].dbs[db]
				d.reset()
				d.dropTombstones(ver)
			}
		}
		c.flushed()
		c.W.Status("OK")
	}
}

// dbIndex parses a database index argument; it replies with Redis's error if it is bad.
func (c *Ctx) dbIndex(b []byte) (int, bool) {
	v, ok := c.parseIntArg(b)
	if !ok {
		return 0, false
	}
	if v < 0 || v >= NumDBs {
		c.Error(ErrDBIndex)
		return 0, false
	}
	return int(v), true
}

func copyCmd(c *Ctx, args [][]byte) {
	src, dst := args[1], args[2]
	dstDB := c.DB
	replace := false
	for i := 3; i < len(args); i++ {
		switch {
		case eq(args[i], "replace"):
			replace = true
		case eq(args[i], "db") && i+1 < len(args):
			i++
			db, ok := c.dbIndex(args[i])
			if !ok {
				return
			}
			dstDB = db
		default:
			c.Error(ErrSyntax)
			return
		}
	}
	if dstDB == c.DB && string(src) == string(dst) {
		c.Error("ERR source and destination objects are the same")
		return
	}
	it, ok := c.lookup(src)
	if !ok {
		c.W.Int(0)
		return
	}
	at, hasTTL := c.expireAt(src)
	dc := *c
	dc.DB = dstDB
	if _, exists := dc.lookupWrite(dst); exists {
		if !replace {
			c.W.Int(0)
			return
		}
		dc.removeKey(dc.db(dst), dst)
	}
	if it.coll != nil {
		it.coll = it.coll.clone()
	}
	it.enc = it.enc.copied()
	dc.store(dst, it, false)
	if hasTTL {
		dc.setExpire(dst, at)
	}
	dc.notify(notifyGeneric, "copy_to", dst)
	c.W.Int(1)
}

func moveCmd(c *Ctx, args [][]byte) {
	db, ok := c.dbIndex(args[2])
	if !ok {
		return
	}
	if db == c.DB {
		c.Error("ERR source and destination objects are the same")
		return
	}
	key := args[1]
	it, ok := c.lookup(key)
	if !ok {
		c.W.Int(0)
		return
	}
	dc := *c
	dc.DB = db
	if _, exists := dc.lookup(key); exists {
		c.W.Int(0)
		return
	}
	at, hasTTL := c.expireAt(key)
	clock, m := clockOf(&c.db(key).keys, key)
	c.removeKey(c.db(key), key)
	dc.store(key, it, false)
	clockCarried(&dc.db(key).keys, key, clock, m)
	if hasTTL {
		dc.setExpire(key, at)
	}
	c.notify(notifyGeneric, "move_from", key)
	dc.notify(notifyGeneric, "move_to", key)
	c.W.Int(1)
}

func swapdbCmd(c *Ctx, args [][]byte) {
	a, ok := ParseInt(args[1])
	if !ok {
		c.Error("ERR invalid first DB index")
		return
	}
	b, ok := ParseInt(args[2])
	if !ok {
		c.Error("ERR invalid second DB index")
		return
	}
	if a < 0 || a >= NumDBs || b < 0 || b >= NumDBs {
		c.Error(ErrDBIndex)
		return
	}
	ver := c.nextVer()
	for i := range c.s.shards {
		sh := &c.s.shards[i]
		sh.dbs[a], sh.dbs[b] = sh.dbs[b], sh.dbs[a]
		sh.dbs[a].dropTombstones(ver)
		sh.dbs[b].dropTombstones(ver)
	}
	// Redis 7.0 leaves cached keys alone here, though every key of both databases now
	// reads differently: its tracking table ignores databases, so a flush is the
	// invalidation that is right.
	c.flushed()
	c.s.allReady()
	c.W.Status("OK")
}

func pingCmd(c *Ctx, args [][]byte) {
	switch len(args) {
	case 1:
		c.W.Status("PONG")
	case 2:
		c.W.Bulk(args[1])
	default:
		c.Error(WrongArgs("ping"))
	}
}

func echoCmd(c *Ctx, args [][]byte) { c.W.Bulk(args[1]) }

func selectCmd(c *Ctx, args [][]byte) {
	if _, ok := c.dbIndex(args[1]); ok {
		c.W.Status("OK")
	}
}
