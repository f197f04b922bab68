// Package kvstore is nanokv's deterministic state machine: a Redis-style keyspace of 16
// databases (strings, lists, hashes, sets, sorted sets) that every protocol frontend maps
// its commands onto.
//
// Determinism is the whole point: the same entries applied in the same order give the
// same state, byte for byte, on every replica. So the package never reads the wall clock
// or a random source while applying: time and randomness come from the entry (Entry.Time,
// Entry.Index), and every iteration whose order can leak into state (SPOP, HRANDFIELD on a
// write, snapshots) walks dense arrays in a replicated order, never Go maps or the key
// tables, whose order depends on each replica's history.
//
// Concurrency: exactly one goroutine, the applier, mutates the store (Apply). Any number
// of readers run read-only commands at the same time (Read); they exclude the applier per
// shard, not per store, so a read of one key never waits for a batch writing others.
//
// kvstore must not import net, time or math/rand: what it needs of them arrives in entries.
package kvstore

import (
	"sync"
	"sync/atomic"
)

// NumDBs is the number of logical databases, as Redis's default `databases 16`.
const NumDBs = 16

// maxTombstones bounds the deletion versions kept per shard and db (see dbShard.tomb).
const maxTombstones = 1024

// numShards splits the keyspace so that readers and the applier rarely meet on one lock,
// and so that no single key table grows past ~1/256 of a db's keys: a table doubles in one
// step, under its shard's lock (at 1M keys, a copy of ~200 KB).
const numShards = 256

// Type is the type of a value, as TYPE reports it.
type Type uint8

const (
	TypeNone Type = iota
	TypeString
	TypeList
	TypeHash
	TypeSet
	TypeZSet
	TypeStream
)

func (t Type) String() string {
	switch t {
	case TypeString:
		return "string"
	case TypeList:
		return "list"
	case TypeHash:
		return "hash"
	case TypeSet:
		return "set"
	case TypeZSet:
		return "zset"
	case TypeStream:
		return "stream"
	}
	return "none"
}

// collection is the behaviour every non-string value shares. Implementations iterate in a
// deterministic order: the order of their dense arrays, which snapshots preserve.
type collection interface {
	// Len is the number of elements; a collection that reaches zero is deleted with its key.
	Len() int
	// clone returns a deep copy (COPY).
	clone() collection
	// appendTo serialises the elements in iteration order (snapshot, digest, DUMP-like uses).
	appendTo(dst []byte) []byte
	// memUsage estimates the bytes held, for INFO memory.
	memUsage() int
}

// collectionDecoders rebuild a collection from appendTo's bytes, per type.
var collectionDecoders = map[Type]func(b []byte) (collection, error){}

// item is what commands see of a key's value. The keyspace stores it packed (keyspace.go).
type item struct {
	str    string     // TypeString: the value
	coll   collection // other types
	ver    uint64     // store-wide modification counter when last written (WATCH, CAS); < 2^54
	flags  uint32     // memcached client flags; 0 for Redis writes
	typ    Type
	enc    strEnc // TypeString: how Redis would have represented it (OBJECT ENCODING)
	hasTTL bool   // a deadline is in the db's ttl map
	mc     mcMark // memcached's state of the item (memcache.go)
}

// dbShard is one shard's slice of one database.
type dbShard struct {
	keys  keyTable
	colls map[string]collection // values of non-string keys (see keyspace.go)
	flags map[string]uint32     // memcached flags, only for keys with hasFlags
	ttl   map[string]int64      // absolute deadline in unix ms, only for keys with hasTTL
	// WATCH on an absent key records its tombstone version, or tombFloor when it has
	// none; EXEC compares again. tomb holds the version at which recently deleted keys
	// were deleted, so a key created and deleted between WATCH and EXEC still aborts the
	// transaction while deletions of other keys do not. It is bounded: when it outgrows
	// maxTombstones it is dropped whole and tombFloor rises to the current version, which
	// aborts the (rare) transactions that watched an absent key across that moment.
	tomb      map[string]uint64
	tombFloor uint64
}

type shard struct {
	mu  sync.RWMutex
	dbs [NumDBs]dbShard
	// hits and misses count the read path's lookups in this shard (INFO's
	// keyspace_hits and keyspace_misses)
	hits, misses atomic.Uint64
}

// Store is the keyspace. The zero value is not usable; call New.
type Store struct {
	shards [numShards]shard
	// ver counts modifications. Only the applier writes it, under shard locks.
	ver uint64
	// applied is the index of the last entry applied (only the applier touches it).
	applied uint64
	// entryMu is read-held by the applier for each whole entry (Apply, Restore), so that
	// AppliedDigest, holding it exclusively, sees a state between two entries.
	entryMu sync.RWMutex
	// snap is the snapshot being written, if any (BeginSnapshot): the applier hands it
	// each shard before its first change.
	snap atomic.Pointer[snapTx]
	// idem is the idempotent-request table, by client id (idempotent.go); only the
	// applier touches it.
	idem map[string]*idemClient
	// scriptACLs are the ACLs of the rules scripts carried (scriptacl.go)
	scriptACLs aclCache
	// stats counted by the applier for INFO.
	stats Stats
	// mcFlushLive is a pending memcached flush_all: the second (unix time) at and before
	// which every item of database 0 was stored, gone once it has come (memcache.go,
	// mcFlushAllCmd); 0: none. The applier writes it; readers load it.
	mcFlushLive atomic.Int64
	// applyArgs is the applier's scratch for a command's arguments, kept between
	// entries so that decoding a command allocates nothing.
	applyArgs [][]byte
	// txArgs is txShards's scratch, as applyArgs is the applier's.
	txArgs [][]byte
	// aheadArgs is PrefetchEntries's scratch, as applyArgs is the applier's.
	aheadArgs [][]byte
	// prefetched is the applier's ring of commands read ahead (prefetch.go), kept
	// between entries so that decoding them allocates nothing.
	prefetched [prefetchRing]decodedCmd
	// tracking switches the commands' latency histograms (latency-tracking).
	tracking LatencyTracking
	// scripts is the Lua script cache (script.go): replicated state, in snapshots.
	scripts scriptCache
	// functions are the function libraries (function.go): replicated state, in
	// snapshots.
	functions funcLibs
	// latency is the latency monitor (LATENCY; latency.go): this member's.
	latency latencyMonitor
	// cmdStats are the commands' INFO commandstats counters, by Spec.statIndex
	// (cmdstats.go): this member's, not replicated.
	cmdStats []CmdStats
	// scriptRunning is set while the applier runs a script (SCRIPT KILL's answer).
	scriptRunning atomic.Bool
	// acc is the access tracking of the LRU and LFU eviction policies (access.go),
	// shared by every key table; accessMu serialises its changes of mode.
	acc      *accessClock
	accessMu sync.Mutex
	// applyCtx is the applier's context, reset for every entry: a Ctx escapes through
	// the command's function value, and one allocated per entry was a sixth of a single
	// node's allocated bytes under memcaslap set-only (one entry per connection a round).
	applyCtx Ctx
	// zkApplier is the applier's scratch for ZooKeeper transactions (zk_apply.go).
	zkApplier zkApplier
	// zk is the ZooKeeper data tree (zk.go), with a lock of its own.
	zk zkTree
	// ready are the keys blocked clients wait on (blocking.go).
	ready readyKeys
	// publisher hands PUBLISH's messages to this member's subscribers (pubsub.go).
	publisher atomic.Pointer[publisherBox]
	// tracker hears of changed keys for client-side caching (tracking.go).
	tracker atomic.Pointer[trackerBox]
	// scriptMonitor hears of the commands scripts run (script.go, SetScriptMonitor).
	scriptMonitor atomic.Pointer[ScriptMonitor]
	// notifyFlags: the keyspace events this member publishes (notify.go).
	notifyFlags atomic.Uint32
	// slow is the member's slow log (slowlog.go).
	slow slowlog
}

// Stats are counters the applier keeps for INFO.
type Stats struct {
	ExpiredKeys atomic.Uint64
	EvictedKeys atomic.Uint64
	// ExpiredUnfetched and EvictedUnfetched count the expired and evicted keys that were
	// never read since they were stored (memcached's expired_unfetched and
	// evicted_unfetched; the fetched flag is each member's own, access.go).
	ExpiredUnfetched atomic.Uint64
	EvictedUnfetched atomic.Uint64
}

// ExpiredCount is the number of keys deleted because their TTL passed.
func (s *Store) ExpiredCount() uint64 { return s.stats.ExpiredKeys.Load() }

// UnfetchedCounts are how many of the expired and of the evicted keys were never read
// since they were stored.
func (s *Store) UnfetchedCounts() (expired, evicted uint64) {
	return s.stats.ExpiredUnfetched.Load(), s.stats.EvictedUnfetched.Load()
}

// KeyspaceHits returns how many lookups of this member's reads found their key, and how
// many did not (INFO keyspace_hits, keyspace_misses).
func (s *Store) KeyspaceHits() (hits, misses uint64) {
	for i := range s.shards {
		hits += s.shards[i].hits.Load()
		misses += s.shards[i].misses.Load()
	}
	return hits, misses
}

// ResetKeyspaceHits zeroes them (CONFIG RESETSTAT).
func (s *Store) ResetKeyspaceHits() {
	for i := range s.shards {
		s.shards[i].hits.Store(0)
		s.shards[i].misses.Store(0)
	}
}

// LatencyTracking is the switch of the store's latency histograms (latency-tracking).
func (s *Store) LatencyTracking() *LatencyTracking { return &s.tracking }

// New returns an empty store.
func New() *Store {
	s := &Store{cmdStats: make([]CmdStats, len(statNames)), acc: newAccessClock()}
	for i := range s.shards {
		for db := range s.shards[i].dbs {
			s.shards[i].dbs[db].keys.acc = s.acc
		}
	}
	for i := range s.cmdStats {
		s.cmdStats[i].lat = &latencyHist{tracking: &s.tracking}
	}
	s.zk.init()
	s.SetSlowlog(slowlogDefaultThreshold, slowlogDefaultMaxLen)
	return s
}

// shardOf is the shard of key. The shard takes the low bits of the key's hash, and the
// shard's keyTable the high ones (see kent.tag).
func shardOf(key []byte) int { return int(hashKey(key) % numShards) }

func shardOfString(key string) int { return int(hashKey(key) % numShards) }

// AppliedIndex is the index of the last applied entry. Only the applier may call it
// without synchronisation; others learn the applied index from consensus.
func (s *Store) AppliedIndex() uint64 { return s.applied }

// AppliedDigest returns the index of the last entry applied and the Digest of the state
// it left, as one consistent pair, from any goroutine: no entry is applied meanwhile.
// Members of a cluster compare it (RAFT.DEBUG DIGEST).
func (s *Store) AppliedDigest() (uint64, uint64) {
	s.entryMu.Lock()
	defer s.entryMu.Unlock()
	return s.applied, s.Digest()
}

func (s *Store) lockAll(write bool) {
	for i := range s.shards {
		if write {
			s.shards[i].mu.Lock()
			s.beforeWrite(i)
		} else {
			s.shards[i].mu.RLock()
		}
	}
}

func (s *Store) unlockAll(write bool) {
	for i := range s.shards {
		if write {
			s.shards[i].mu.Unlock()
		} else {
			s.shards[i].mu.RUnlock()
		}
	}
}

// lockSet is the set of shards one command holds, kept sorted so that every goroutine
// takes locks in the same order (no deadlock between a multi-key read and the applier).
type lockSet struct {
	all   bool
	n     int
	ids   [8]uint16
	write bool
}

func (l *lockSet) add(id int) {
	if l.all {
		return
	}
	for i := 0; i < l.n; i++ {
		if int(l.ids[i]) == id {
			return
		}
	}
	if l.n == len(l.ids) {
		l.all = true
		return
	}
	// insertion keeps ids sorted
	i := l.n
	for i > 0 && int(l.ids[i-1]) > id {
		l.ids[i] = l.ids[i-1]
		i--
	}
	l.ids[i] = uint16(id)
	l.n++
}

func (s *Store) lock(l *lockSet) {
	switch {
	case !l.write && l.all:
		s.rlockShards(numShards, func(i int) int { return i })
	case !l.write && l.n > 1:
		s.rlockShards(l.n, func(i int) int { return int(l.ids[i]) })
	case l.all:
		s.lockAll(true)
	default:
		for i := 0; i < l.n; i++ {
			if l.write {
				s.shards[l.ids[i]].mu.Lock()
				s.beforeWrite(int(l.ids[i]))
			} else {
				s.shards[l.ids[i]].mu.RLock()
			}
		}
	}
}

// rlockShards read-locks n shards (id(0) < id(1) < ...) without ever waiting while it
// holds one: when a shard is taken it lets go of those it holds, waits for that one
// alone, and starts again. So the applier, the only writer, can never wait for a reader
// that waits for it, and may take shards in any order: a script takes those its calls
// reach as it goes (scriptVM.reach).
func (s *Store) rlockShards(n int, id func(int) int) {
	for {
		i := 0
		for i < n && s.shards[id(i)].mu.TryRLock() {
			i++
		}
		if i == n {
			return
		}
		for j := 0; j < i; j++ {
			s.shards[id(j)].mu.RUnlock()
		}
		busy := &s.shards[id(i)].mu
		busy.RLock()
		busy.RUnlock()
	}
}

// shards is the set l locks.
func (l *lockSet) shards() shardSet {
	if l.all {
		return allShards()
	}
	var set shardSet
	for _, id := range l.ids[:l.n] {
		set.add(int(id))
	}
	return set
}

func (s *Store) unlock(l *lockSet) {
	if l.all {
		s.unlockAll(l.write)
		return
	}
	for i := 0; i < l.n; i++ {
		if l.write {
			s.shards[l.ids[i]].mu.Unlock()
		} else {
			s.shards[l.ids[i]].mu.RUnlock()
		}
	}
}

// DBSize is the number of keys in db, counting keys whose TTL has passed but that the
// leader has not yet deleted (as Redis's DBSIZE does).
func (s *Store) DBSize(db int) int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		n += sh.dbs[db].keys.len()
		sh.mu.RUnlock()
	}
	return n
}

// KeyspaceInfo reports, per non-empty db, its number of keys and of keys with a TTL.
func (s *Store) KeyspaceInfo() (keys, expires [NumDBs]int) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		for d := range sh.dbs {
			keys[d] += sh.dbs[d].keys.len()
			expires[d] += len(sh.dbs[d].ttl)
		}
		sh.mu.RUnlock()
	}
	return
}

// ExpiredKeys returns up to max keys of db whose deadline is at or before now. The leader
// proposes their deletion (Expire command); replicas never expire keys on their own.
// Go's randomised map iteration makes this an unbiased sample, which is fine here: the
// result only decides what to propose, never what a replica does.
func (s *Store) ExpiredKeys(now int64, max int) []ExpiredKey {
	var out []ExpiredKey
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		for d := range sh.dbs {
			for k, at := range sh.dbs[d].ttl {
				if at <= now {
					out = append(out, ExpiredKey{DB: d, Key: k})
					if len(out) >= max {
						sh.mu.RUnlock()
						return out
					}
				}
			}
		}
		sh.mu.RUnlock()
	}
	return out
}

// ExpiredKey names one key whose TTL has passed.
type ExpiredKey struct {
	DB  int
	Key string
}
