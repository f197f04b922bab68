package kvstore

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

// Flags describe a command, as COMMAND INFO reports them and as the frontends route it.
type Flags uint32

const (
	// FlagWrite commands change the store: they go through consensus and run in Apply.
	FlagWrite Flags = 1 << iota
	// FlagReadOnly commands run on the read path after the read barrier.
	FlagReadOnly
	// FlagDenyOOM, FlagFast: reported by COMMAND INFO as Redis does.
	FlagDenyOOM
	FlagFast
	// FlagAllKeys commands touch the whole keyspace (KEYS, SCAN, FLUSHDB...): they lock
	// every shard instead of the shards of their keys.
	FlagAllKeys
	// FlagConn commands answer without touching the store (PING, ECHO, SELECT); kvstore
	// only runs them inside a transaction, where their reply is part of EXEC's.
	FlagConn
	// FlagNoMulti commands are refused inside MULTI.
	FlagNoMulti
	// FlagScript commands run a script, which may reach keys it did not declare: on the
	// applier it holds its declared keys' shards and takes the others as it reaches them
	// (Ctx.held).
	FlagScript
	// FlagBlocking commands (BLPOP...) wait for a key when a client sends them outside
	// MULTI; in the log they are their non-blocking selves (blocking.go).
	FlagBlocking
	// FlagPubSub commands are pub/sub's (PUBLISH): COMMAND INFO reports "pubsub" where
	// a write's "write" would be, though PUBLISH goes through the log (pubsub.go).
	FlagPubSub
	// FlagReadLookups write commands look their keys up as Redis's lookupKeyRead does
	// (GETDEL, a STORE command's sources): a miss publishes keymiss, as a read's does.
	// The key such a command writes it does not look up.
	FlagReadLookups
)

// Spec is one command: its Redis metadata and its implementation.
type Spec struct {
	Name  string // lower case
	Arity int    // Redis convention: n means exactly n arguments (name included), -n at least n
	Flags Flags
	// FirstKey, LastKey, Step locate the keys (COMMAND INFO, lock sets). LastKey −1 is the
	// last argument. Commands whose keys cannot be located this way set FlagAllKeys.
	FirstKey, LastKey, Step int
	Group                   string // COMMAND DOCS group: string, generic, list, ...
	Since                   string // COMMAND DOCS since
	Summary                 string
	// Run executes the command. It finds its keys already locked.
	Run func(c *Ctx, args [][]byte)
	// Blind reports whether the reply to this write is known before it is applied (plain
	// SET, MSET...): such writes are acknowledged at commit. nil means never.
	Blind func(args [][]byte) bool
	// ReadOnlyCall reports whether a call of this write command only reads (SORT or
	// GEORADIUS without STORE): it then takes the read path instead of going through
	// the log. Called on calls of a valid arity. nil means never.
	ReadOnlyCall func(args [][]byte) bool
	// MoreKeys returns the keys a call names outside FirstKey..LastKey (GEORADIUS's
	// STORE key): they are locked too, and reported by COMMAND GETKEYS.
	MoreKeys func(args [][]byte) [][]byte
	// Subcommands are a container command's subcommands and their arities, for
	// CheckSubcommand (OBJECT, XINFO, XGROUP); nil for any other command.
	Subcommands map[string]int
	// Check, when set, is run by the frontend before it proposes a call: an error reply
	// refuses the call there, before the log (FUNCTION LOAD's timeout).
	Check func(args [][]byte) string

	// statID is the index of its INFO commandstats counters in a Store's table, and
	// subStatIDs its subcommands' (set when it is registered; cmdstats.go).
	statID     int
	subStatIDs map[string]int
}

// Writes reports whether this call changes the store: a write command, unless the
// call only reads (ReadOnlyCall).
func (s *Spec) Writes(args [][]byte) bool {
	return s.Flags&FlagWrite != 0 && (s.ReadOnlyCall == nil || !s.ReadOnlyCall(args))
}

// numkeysKeys is MoreKeys for the commands whose keys follow a numkeys argument at
// index at and come before at least one more argument (LMPOP, ZMPOP, BLMPOP, BZMPOP).
// A numkeys the command refuses yields nil: it is refused before any key is read.
func numkeysKeys(at int) func(args [][]byte) [][]byte {
	return func(args [][]byte) [][]byte {
		n, ok := ParseInt(args[at])
		if !ok || n < 1 || n > int64(len(args)-at-2) {
			return nil
		}
		return args[at+1 : at+1+int(n)]
	}
}

// storeKeys is MoreKeys for the commands whose STORE or STOREDIST option names a key:
// the argument after every argument so spelled (a superset: locking more is safe).
func storeKeys(args [][]byte) [][]byte {
	var keys [][]byte
	for i := 2; i+1 < len(args); i++ {
		if eq(args[i], "store") || eq(args[i], "storedist") {
			keys = append(keys, args[i+1])
		}
	}
	return keys
}

// withoutStore is ReadOnlyCall for the commands that write only with a STORE or
// STOREDIST option. Any argument spelled so counts, even a member's name: such a call
// goes through the log, which is always safe.
func withoutStore(args [][]byte) bool {
	for _, a := range args[min(2, len(args)):] {
		if eq(a, "store") || eq(a, "storedist") {
			return false
		}
	}
	return true
}

var commands = map[string]*Spec{}

func register(specs ...*Spec) {
	for _, s := range specs {
		if _, dup := commands[s.Name]; dup {
			panic("kvstore: command registered twice: " + s.Name)
		}
		s.addStats()
		commands[s.Name] = s
		byName.add(s)
	}
}

// specTable finds a command by its name, folding case as it hashes, with linear probing
// in a table kept at most a quarter full. Every request looks its command up, on the
// leader twice (the frontend routes it, Apply runs it) and once on every other member:
// the map with a lower-cased copy of the name took 27 ns per SET, and 3.8% of a leader's
// CPU under redis-benchmark -P 16; this takes 11 ns (BenchmarkLookupSET).
type specTable struct {
	slots []*Spec
}

var byName specTable

// nameHash is FNV-1a over the lower-cased name.
func nameHash[N ~string | ~[]byte](name N) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h ^ h>>32
}

func (t *specTable) add(s *Spec) {
	if 4*(len(commands)) > len(t.slots) {
		old := t.slots
		n := 64 // a power of two
		for n < 8*len(commands) {
			n *= 2
		}
		t.slots = make([]*Spec, n)
		for _, o := range old {
			if o != nil {
				t.put(o)
			}
		}
	}
	t.put(s)
}

func (t *specTable) put(s *Spec) {
	mask := uint64(len(t.slots) - 1)
	i := nameHash(s.Name) & mask
	for t.slots[i] != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = s
}

// Lookup finds a command by name, case-insensitively, without allocating.
func Lookup(name []byte) *Spec {
	t := &byName
	if len(t.slots) == 0 {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := nameHash(name) & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == nil || eq(name, s.Name) {
			return s
		}
	}
}

// Commands returns every registered command (for COMMAND and its subcommands).
func Commands() []*Spec {
	out := make([]*Spec, 0, len(commands))
	for _, s := range commands {
		out = append(out, s)
	}
	return out
}

// CheckArity reports whether args fit the spec's arity.
func (s *Spec) CheckArity(args [][]byte) bool {
	if s.Arity >= 0 {
		return len(args) == s.Arity
	}
	return len(args) >= -s.Arity
}

// ArgsError is the error a call gets before it runs, or is queued in a transaction, for
// the wrong number of arguments or a container's unknown or malformed subcommand; ""
// when it has none.
func (s *Spec) ArgsError(args [][]byte) string {
	if !s.CheckArity(args) {
		return WrongArgs(s.Name)
	}
	if s.Subcommands != nil {
		_, msg := CheckSubcommand(args, s.Name, s.Subcommands)
		return msg
	}
	return ""
}

// Keys appends the key arguments of args to dst (COMMAND GETKEYS, WATCH routing).
func (s *Spec) Keys(dst [][]byte, args [][]byte) [][]byte {
	if s.FirstKey > 0 {
		last := s.LastKey
		if last < 0 {
			last = len(args) + last
		}
		for i := s.FirstKey; i <= last && i < len(args); i += s.Step {
			dst = append(dst, args[i])
		}
	}
	if s.MoreKeys != nil {
		dst = append(dst, s.MoreKeys(args)...)
	}
	return dst
}

func (s *Spec) lockSet(args [][]byte, write bool, c *Ctx) lockSet {
	l := lockSet{write: write}
	if s.Flags&FlagAllKeys != 0 {
		l.all = true
		return l
	}
	if s.FirstKey > 0 {
		last := s.LastKey
		if last < 0 {
			last = len(args) + last
		}
		for i := s.FirstKey; i <= last && i < len(args) && !l.all; i += s.Step {
			l.add(int(c.keyHash(args[i]) % numShards))
		}
	}
	if s.MoreKeys != nil {
		for _, k := range s.MoreKeys(args) {
			l.add(shardOf(k))
		}
	}
	return l
}

// Ctx is what a command runs against: one database of the store, a clock and a reply.
type Ctx struct {
	s  *Store
	DB int
	// hashed is a key of the command being applied that the prefetcher hashed (its
	// first), and hash its hash: keyHash gives it without hashing the key again. The
	// key is part of the entry, whose bytes never change, so the same bytes at the same
	// address have the same hash; Apply clears it once the command is done.
	hashed []byte
	hash   uint64
	// overMemory: the op being applied was proposed while the proposing node was over
	// maxmemory; its scripts' first denyoom call fails (maxmemory.go)
	overMemory bool
	Now        int64 // unix ms: the entry's time when applying, the reader's clock when reading
	W          ReplyWriter
	// writing is true in Apply: lookups of expired keys then delete them (deterministically,
	// at the entry's time) and version counters advance.
	writing bool
	// rnd is the applier's deterministic random stream, seeded per entry.
	rnd rng
	// held is, on the applier, the shards a script's command or transaction holds, so
	// that a script can take the rest it reaches (scriptVM.reach); nil elsewhere.
	held *shardSet
	// errs counts the error replies written through Error (a command failed if it
	// wrote one: INFO commandstats).
	errs int
	// readCmd: the command running looks keys up as Redis's lookupKeyRead does (a miss
	// publishes keymiss): a read command, on the applier too (MULTI, scripts), or a write
	// with FlagReadLookups.
	readCmd bool
	// noTouch is set by the commands whose lookups leave a key's access clock alone
	// (Redis's LOOKUP_NOTOUCH: TYPE, TTL, EXISTS, OBJECT; and MEMORY USAGE).
	noTouch bool
	// touchedKeys are the entries the command's last lookups touched, which its stores
	// must not count again (storeAt): a command accesses a key once.
	touchedKeys touchedEntries
	// acl, when not nil, is the ACL of the user whose script runs: its calls are
	// checked against it (scriptacl.go); aclLog keeps the denials, on the member the
	// client is connected to.
	acl       CallACL
	aclLog    ACLLogger
	scriptCmd string // the command that runs the script, for aclLog
}

var readSeq atomic.Uint64

// ctxPool recycles read contexts: a Ctx escapes through the command's function value, so
// without the pool every GET would allocate one.
var ctxPool = sync.Pool{New: func() any { return new(Ctx) }}

// Read runs a read-only command against the store with the caller's clock (unix ms). The
// caller has passed the read barrier. Unknown commands and arity errors are reported too.
func (s *Store) Read(db int, now int64, args [][]byte, w ReplyWriter) {
	s.ReadSpec(Lookup(args[0]), db, now, args, w)
}

// ReadSpec is Read for a caller that has already looked the command up (spec may be nil).
func (s *Store) ReadSpec(spec *Spec, db int, now int64, args [][]byte, w ReplyWriter) {
	s.ReadSpecAs(spec, db, now, args, w, nil, nil)
}

func (c *Ctx) run(args [][]byte, write bool) { c.runSpec(Lookup(args[0]), args, write) }

func (c *Ctx) runSpec(spec *Spec, args [][]byte, write bool) {
	if spec == nil {
		c.Error(UnknownCommand(args))
		return
	}
	if msg := spec.ArgsError(args); msg != "" {
		c.reject(spec, args)
		c.Error(msg)
		return
	}
	if !write && spec.Writes(args) {
		c.reject(spec, args)
		c.Error("ERR write command '" + spec.Name + "' on the read path")
		return
	}
	l := spec.lockSet(args, write, c)
	c.s.lock(&l)
	if write && spec.Flags&FlagScript != 0 {
		held := l.shards()
		c.held = &held
		defer func() { c.held = nil }()
	}
	c.call(spec, args)
	c.s.unlock(&l)
}

// keyHash is hashKey(key), from hashed when key is that very key. A nil c hashes.
func (c *Ctx) keyHash(key []byte) uint64 {
	if c != nil && len(key) > 0 && len(key) == len(c.hashed) && &key[0] == &c.hashed[0] {
		return c.hash
	}
	return hashKey(key)
}

// CheckSubcommand looks a container command's subcommand (args[1]) up in arity, whose
// arities count the container and the subcommand (Redis's convention), and returns it
// lower-cased, or the error Redis gives for an unknown one or a wrong argument count.
func CheckSubcommand(args [][]byte, container string, arity map[string]int) (sub, errMsg string) {
	sub = strings.ToLower(string(args[1]))
	a, known := arity[sub]
	switch {
	case !known:
		return "", "ERR unknown subcommand '" + string(args[1]) + "'. Try " + strings.ToUpper(container) + " HELP."
	case a > 0 && len(args) != a || a < 0 && len(args) < -a:
		return "", WrongArgs(container + "|" + sub)
	}
	return sub, ""
}

// UnknownCommand is Redis 7.0's reply to a command it does not know. Redis formats it
// with printf: "%.128s" for the name and "'%.*s' " per argument while the argument text
// is under 128 bytes, so each piece stops at a NUL byte, as C strings do. CR and LF become
// spaces when the error is written.
func UnknownCommand(args [][]byte) string {
	var list []byte
	for i := 1; i < len(args) && len(list) < 128; i++ {
		a := cString(args[i], 128-len(list))
		list = append(list, '\'')
		list = append(list, a...)
		list = append(list, '\'', ' ')
	}
	return "ERR unknown command '" + string(cString(args[0], 128)) + "', with args beginning with: " + string(list)
}

// cString is what printf's "%.*s" prints of b: up to max bytes, stopping at a NUL.
func cString(b []byte, max int) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) > max {
		b = b[:max]
	}
	return b
}

// --- keyspace access for command implementations -----------------------------------------

func (c *Ctx) db(key []byte) *dbShard { return &c.s.shards[shardOf(key)].dbs[c.DB] }

// lookup returns the live item at key. A key whose TTL has passed is absent; when applying,
// it is also deleted then and there, which every replica does at the same entry.
//
// The read path counts its lookups, found or not (INFO's keyspace_hits and misses, as
// Redis counts its read lookups); the applier's are writes' and run on every member.
func (c *Ctx) lookup(key []byte) (item, bool) {
	sh := &c.s.shards[shardOf(key)]
	d := &sh.dbs[c.DB]
	var it item
	var ok bool
	if d.keys.acc != nil && !c.noTouch { // a lookup is an access (access.go)
		var i int
		if it, i, ok = d.getTouched(key, c.Now); ok {
			c.touchedKeys.add(&d.keys, i)
			if !c.writing || c.readCmd { // a read, on the applier too (MULTI, scripts)
				d.keys.fetch(i)
			}
		}
	} else {
		it, ok = d.get(key)
	}
	if ok && it.hasTTL && d.ttl[string(key)] <= c.Now {
		if c.writing {
			c.expire(d, key)
		}
		it, ok = item{}, false
	}
	if ok && c.DB == 0 && c.s.mcFlushed(c.Now) {
		if c.writing {
			c.removeKey(d, key) // flushed: what the command does next finds no key
		}
		it, ok = item{}, false
	}
	if !c.writing {
		if ok {
			sh.hits.Add(1)
		} else {
			sh.misses.Add(1)
		}
	}
	if !ok && c.readCmd {
		c.notifyMiss(key)
	}
	return it, ok
}

// lookupWrite is lookup for a key the command is about to write (Redis's lookupKeyWrite:
// a STORE command's destination, the key DEL removes), or one Redis looks up with
// LOOKUP_NONOTIFY (OBJECT): a miss publishes no keymiss.
func (c *Ctx) lookupWrite(key []byte) (item, bool) { return c.lookupPublishing(key, false) }

// lookupRead is lookup for a write command's read of a key (Redis's lookupKeyRead, as
// SET ... GET reads the old value): a miss publishes keymiss.
func (c *Ctx) lookupRead(key []byte) (item, bool) { return c.lookupPublishing(key, true) }

// lookupPublishing is lookup that publishes keymiss on a miss when miss is true.
func (c *Ctx) lookupPublishing(key []byte, miss bool) (item, bool) {
	outer := c.readCmd
	c.readCmd = miss
	it, ok := c.lookup(key)
	c.readCmd = outer
	return it, ok
}

// expire deletes key, whose deadline has passed at the entry's time.
func (c *Ctx) expire(d *dbShard, key []byte) {
	if !fetchedIn(&d.keys, key, false) {
		c.s.stats.ExpiredUnfetched.Add(1)
	}
	c.removeKey(d, key)
	c.s.stats.ExpiredKeys.Add(1)
	c.notify(notifyExpired, "expired", key)
}

// lookupType returns the item at key if it has type t. When a key of another type is
// there it replies WRONGTYPE and returns ok=false, wrong=true.
func (c *Ctx) lookupType(key []byte, t Type) (it item, ok, wrong bool) {
	it, ok = c.lookup(key)
	if ok && it.typ != t {
		c.Error(ErrWrongType)
		return it, false, true
	}
	return it, ok, false
}

func (c *Ctx) nextVer() uint64 {
	c.s.ver++
	if c.s.ver > maxVersion {
		panic(fmt.Sprintf("kvstore: version counter %d exhausted", c.s.ver))
	}
	return c.s.ver
}

// store writes it at key with a fresh version. keepTTL keeps the key's deadline if it
// has one; otherwise any deadline is dropped (as SET and every overwrite in Redis do).
// A key whose deadline has passed is expired first, as lookup would have done, so a
// caller that overwrites whatever is there (a plain SET) need not look it up: store
// does its work in one lookup and one assignment of the keyspace table.
func (c *Ctx) store(key []byte, it item, keepTTL bool) {
	c.storeAt(key, it, "", keepTTL)
}

// storeAt is store with kv: "" or the key followed by the value it.str, in one string
// that the table keeps for a key too long for its entry (putOver).
func (c *Ctx) storeAt(key []byte, it item, kv string, keepTTL bool) {
	h := c.keyHash(key)
	d := &c.s.shards[h%numShards].dbs[c.DB] // c.db(key), hashing once
	old, existed := tableGetH(&d.keys, h, key)
	it.hasTTL = false
	if existed && c.DB == 0 && c.s.mcFlushed(c.Now) {
		c.removeKey(d, key) // as lookup does
		existed = false
	}
	if existed && old.meta&metaHasTTL != 0 {
		switch {
		case d.ttl[string(key)] <= c.Now:
			c.expire(d, key)
			existed = false
		case keepTTL:
			it.hasTTL = true
		default:
			delete(d.ttl, string(key))
		}
	}
	it.ver = c.nextVer()
	i := d.putOver(h, key, old, existed, it, kv)
	if existed && d.keys.acc != nil && !c.noTouch {
		c.touchStored(&d.keys, i)
	}
	c.modified(key)
	if !existed {
		if (it.typ == TypeList || it.typ == TypeZSet) && c.s.ready.n.Load() > 0 {
			c.s.keyReady(c.DB, key)
		}
		c.notify(notifyNew, "new", key)
	}
}

// setString stores a string value as SET makes it (strAuto); it drops any TTL unless
// keepTTL.
func (c *Ctx) setString(key []byte, v string, keepTTL bool) {
	c.store(key, item{str: v, typ: TypeString}, keepTTL)
}

// setStringEnc is setString for a command that makes the string otherwise in Redis.
func (c *Ctx) setStringEnc(key []byte, v string, enc strEnc, keepTTL bool) {
	c.store(key, item{str: v, typ: TypeString, enc: enc}, keepTTL)
}

// putQuietly puts it at key as it is, without a new version: Redis changed the value's
// representation, or the value without signalling the key, so a WATCH on it holds.
func (c *Ctx) putQuietly(key []byte, it item) {
	h := c.keyHash(key)
	d := &c.s.shards[h%numShards].dbs[c.DB]
	prev, existed := tableGetH(&d.keys, h, key)
	d.putOver(h, key, prev, existed, it, "")
}

// unshare makes the string at key "raw", as Redis's dbUnshareStringValue does to a string
// a command is about to change in place, whether or not the command then changes it.
func (c *Ctx) unshare(key []byte) {
	outer := c.noTouch
	c.noTouch = true // Redis is handed the value: no second lookup, no second access
	it, ok := c.lookup(key)
	c.noTouch = outer
	if ok && it.typ == TypeString {
		c.unshareItem(key, it)
	}
}

// unshareItem is unshare for a caller that holds the string's item.
func (c *Ctx) unshareItem(key []byte, it item) {
	if it.enc != strRaw {
		it.enc = strRaw
		c.putQuietly(key, it)
	}
}

// setStringBytes stores a copy of val at key, with memcached flags; it drops any TTL
// unless keepTTL. A string set from a client (SET, memcached's set) comes this way, and
// costs one allocation: of the value alone for a key short enough to sit in its table
// entry, of the key followed by the value for a longer one.
func (c *Ctx) setStringBytes(key, val []byte, flags uint32, keepTTL bool) {
	c.setStringMC(key, val, flags, 0, keepTTL)
}

// setStringMC is setStringBytes for memcached, which may mark the item (item.mc).
func (c *Ctx) setStringMC(key, val []byte, flags uint32, mark mcMark, keepTTL bool) {
	it := item{typ: TypeString, flags: flags, mc: mark}
	if len(key) <= inlineKey {
		it.str = string(val)
		c.storeAt(key, it, "", keepTTL)
		return
	}
	var b strings.Builder
	b.Grow(len(key) + len(val))
	b.Write(key)
	b.Write(val)
	kv := b.String()
	it.str = kv[len(key):]
	c.storeAt(key, it, kv, keepTTL)
}

// touched records an in-place change to the collection at key: it bumps the version and
// deletes the key when the collection became empty (Redis never keeps empty aggregates),
// with the "del" event that follows the command's own.
func (c *Ctx) touched(key []byte, it item) {
	if it.coll != nil && it.coll.Len() == 0 {
		c.removeKey(c.db(key), key)
		c.notify(notifyGeneric, "del", key)
		return
	}
	c.store(key, it, true)
}

// del deletes key, with a "del" event; it reports whether a live key was there.
func (c *Ctx) del(key []byte) bool {
	if _, ok := c.lookupWrite(key); !ok {
		return false
	}
	c.removeKey(c.db(key), key)
	c.notify(notifyGeneric, "del", key)
	return true
}

func (c *Ctx) removeKey(d *dbShard, key []byte) {
	d.remove(key)
	c.modified(key)
	v := c.nextVer()
	if len(d.tomb) >= maxTombstones {
		d.tomb, d.tombFloor = nil, v
		return
	}
	if d.tomb == nil {
		d.tomb = make(map[string]uint64)
	}
	d.tomb[string(key)] = v
}

// dropTombstones forgets every deletion in d: absent keys now all read as version v.
func (d *dbShard) dropTombstones(v uint64) { d.tomb, d.tombFloor = nil, v }

// expireAt returns the key's deadline (unix ms), if it has one.
func (c *Ctx) expireAt(key []byte) (int64, bool) { return c.db(key).deadline(key) }

// setExpire gives an existing key a deadline (unix ms), and a new version: a Redis
// EXPIRE modifies the key (WATCH).
func (c *Ctx) setExpire(key []byte, at int64) { c.setDeadline(key, at, true) }

// setDeadline gives an existing key a deadline (unix ms), and a new version if bump.
// memcached's touch keeps the version, its CAS unique (mcTouch).
func (c *Ctx) setDeadline(key []byte, at int64, bump bool) {
	d := c.db(key)
	it, _ := d.get(key)
	it.hasTTL = true
	if bump {
		it.ver = c.nextVer()
	}
	if d.ttl == nil {
		d.ttl = make(map[string]int64)
	}
	d.ttl[string(key)] = at
	d.put(key, it)
	c.modified(key)
}

// persist drops key's deadline, with a new version; it reports whether there was one.
func (c *Ctx) persist(key []byte) bool { return c.dropDeadline(key, true) }

// dropDeadline drops key's deadline, with a new version if bump; it reports whether
// there was one.
func (c *Ctx) dropDeadline(key []byte, bump bool) bool {
	d := c.db(key)
	it, ok := d.get(key)
	if !ok || !it.hasTTL {
		return false
	}
	it.hasTTL = false
	if bump {
		it.ver = c.nextVer()
	}
	delete(d.ttl, string(key))
	d.put(key, it)
	c.modified(key)
	return true
}

// rng is a small deterministic generator (splitmix64) seeded from the entry, so that
// SPOP, SRANDMEMBER and friends choose the same elements on every replica.
type rng struct{ state uint64 }

func (r *rng) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a number in [0, n).
func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }
