package kvstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// A batch is what one log entry carries: a sequence of ops, each producing exactly one
// reply. It is encoded once by the frontend that proposes it and decoded by every replica.
//
//	op      := kind:byte body
//	command := db:uvarint nargs:uvarint (len:uvarint bytes)*
//	tx      := nwatch:uvarint keyVer* ncmd:uvarint command* (keyVer: appendKeyVer)
//	expire  := db:uvarint nkeys:uvarint key:bytes*
//	memcache := command (memcache.go: a command of the memcached registry)
//	idem    := client:bytes seq:uvarint command (idempotent.go)
//	asUser  := rules:bytes command (scriptacl.go: a script checked against a user's ACL)
//	txAsUser := rules:bytes tx (scriptacl.go: a transaction's scripts checked so)
//	zk      := a ZooKeeper transaction (zk_apply.go)
//	overMemory := (no body) the next op was proposed over maxmemory (maxmemory.go)
//	evict   := victims picked under maxmemory-policy (evict.go)
const (
	opCommand byte = 1
	opTx      byte = 2
	opExpire  byte = 3
)

// Limits applied while decoding, so that a corrupt entry cannot make the decoder allocate
// without bound (the frontends enforce the same limits on clients).
const (
	maxArgs    = 1 << 20
	maxArgSize = 512 << 20
)

// ErrCorrupt reports an entry whose batch does not decode.
var ErrCorrupt = errors.New("kvstore: corrupt batch")

// Frontends build batches back to back in shared chunks, with CutBatch, instead of one
// allocation per batch: an allocation per batch grown by append was a third of a
// single node's allocated bytes under redis-benchmark's pipelined SET.
const (
	batchChunk   = 4 << 10  // a fresh chunk holds this many bytes of batches
	batchMinFree = 256      // less room than this after a batch: start a fresh chunk
	batchMaxKeep = 64 << 10 // a chunk a huge batch grew is not kept for the next one
)

// CutBatch ends the batch b and starts the next one. The batch comes back with its
// capacity cut to its length, so nothing appended later can write into it while the log
// holds it; next is empty and starts in the free space after it, or in a fresh chunk when
// too little is left, or when the space is the tail of an array a huge batch grew (a
// connection must not keep that after its entry is applied). A chunk is freed once every
// batch in it is.
func CutBatch(b []byte) (batch, next []byte) {
	batch = b[:len(b):len(b)]
	next = b[len(b):]
	if free := cap(next); free < batchMinFree || free > batchMaxKeep {
		next = make([]byte, 0, batchChunk)
	}
	return batch, next
}

// AppendCommand appends one client command, run in database db.
func AppendCommand(dst []byte, db int, args [][]byte) []byte {
	dst = append(dst, opCommand)
	return appendArgs(dst, db, args)
}

func appendArgs(dst []byte, db int, args [][]byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(db))
	dst = binary.AppendUvarint(dst, uint64(len(args)))
	for _, a := range args {
		dst = binary.AppendUvarint(dst, uint64(len(a)))
		dst = append(dst, a...)
	}
	return dst
}

// Watch is a key version observed by WATCH; EXEC aborts if it changed.
type Watch struct {
	DB  int
	Key []byte
	Ver uint64
}

// TxCommand is one queued command of a transaction.
type TxCommand struct {
	DB   int
	Args [][]byte
}

// AppendTx appends a MULTI/EXEC transaction: all its commands apply in this one entry, or
// none if a watched key changed (EXEC then replies with a null array).
func AppendTx(dst []byte, watches []Watch, cmds []TxCommand) []byte {
	return appendTxBody(append(dst, opTx), watches, cmds)
}

func appendTxBody(dst []byte, watches []Watch, cmds []TxCommand) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(watches)))
	for _, w := range watches {
		dst = appendKeyVer(dst, w.DB, w.Key, w.Ver)
	}
	dst = binary.AppendUvarint(dst, uint64(len(cmds)))
	for _, c := range cmds {
		dst = appendArgs(dst, c.DB, c.Args)
	}
	return dst
}

// AppendExpire appends the deletion of keys the leader found past their TTL. Each key is
// deleted only if it is still expired at the entry's time (it may have been rewritten).
func AppendExpire(dst []byte, db int, keys []string) []byte {
	dst = append(dst, opExpire)
	dst = binary.AppendUvarint(dst, uint64(db))
	dst = binary.AppendUvarint(dst, uint64(len(keys)))
	for _, k := range keys {
		dst = binary.AppendUvarint(dst, uint64(len(k)))
		dst = append(dst, k...)
	}
	return dst
}

// decoder walks a batch without copying: the args it returns point into the batch.
type decoder struct {
	b    []byte
	args [][]byte // reused between commands
	err  error
}

func (d *decoder) uvarint(limit uint64) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || v > limit {
		d.err = ErrCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint(maxArgSize)
	if d.err != nil || uint64(len(d.b)) < n {
		d.err = ErrCorrupt
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) command() (db int, args [][]byte) {
	db = int(d.uvarint(NumDBs - 1))
	n := d.uvarint(maxArgs)
	if d.err != nil || n == 0 || n > uint64(len(d.b)) { // every arg takes at least one byte
		d.err = ErrCorrupt
		return 0, nil
	}
	args = d.args[:0]
	for i := uint64(0); i < n && d.err == nil; i++ {
		args = append(args, d.bytes())
	}
	d.args = args
	return db, args
}

// appendKeyVer appends a key of a database at a version (a WATCH, an eviction's victim):
//
//	keyVer := db:uvarint key:bytes ver:uvarint
func appendKeyVer[K ~string | ~[]byte](dst []byte, db int, key K, ver uint64) []byte {
	dst = binary.AppendUvarint(dst, uint64(db))
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	return binary.AppendUvarint(dst, ver)
}

// keyVer decodes what appendKeyVer appended.
func (d *decoder) keyVer() (db int, key []byte, ver uint64) {
	db = int(d.uvarint(NumDBs - 1))
	key = d.bytes()
	ver = d.uvarint(math.MaxUint64)
	return db, key, ver
}

// Entry is a committed log entry as the store sees it.
type Entry struct {
	Index uint64
	Term  uint64
	Time  int64 // the leader's clock when it appended the entry, unix ms
	Data  []byte
}

// Apply applies one committed entry. Replies to its ops go to w in order (nil: dropped).
// It must be called by a single goroutine, in log order. A batch that fails to decode is
// applied up to the damage and reported; since every replica decodes the same bytes the
// same way, state stays identical.
func (s *Store) Apply(e Entry, w ReplyWriter) error {
	if w == nil {
		w = Discard
	}
	s.entryMu.RLock()
	defer s.entryMu.RUnlock()
	if e.Index <= s.applied && s.applied != 0 {
		return fmt.Errorf("kvstore: apply %d after %d", e.Index, s.applied)
	}
	s.applied = e.Index
	s.acc.writeNow = e.Time
	c := &s.applyCtx
	*c = Ctx{s: s, Now: e.Time, W: w, writing: true, rnd: rng{state: e.Index*0x9e3779b97f4a7c15 ^ e.Term}}
	s.mcFlushDue(c, e.Time)
	d := decoder{b: e.Data, args: s.applyArgs}
	pf := prefetcher{d: decoder{b: e.Data}, ring: &s.prefetched}
	defer func() {
		clear(d.args[:cap(d.args)]) // keep the scratch, not the entry it pointed into
		s.applyArgs = d.args[:0]
		pf.release() // the same for the commands read ahead
		*c = Ctx{}   // nor the writer
	}()
	var mark int64 // the end of the last timed command, while nothing else ran since
	for len(d.b) > 0 && d.err == nil {
		pf.before(s)
		kind := d.b[0]
		d.b = d.b[1:]
		if kind != opCommand {
			mark = 0
		}
		switch kind {
		case opCommand:
			var args [][]byte
			var spec *Spec
			if pc := pf.next(); pc != nil {
				c.DB, args, spec = pc.db, pc.args, pc.spec
				pc.resume(c, &d, e.Data)
			} else {
				var db int
				if db, args = d.command(); d.err != nil {
					break
				}
				c.DB, spec = db, Lookup(args[0])
			}
			start := s.slowStart(spec, args, mark)
			c.runSpec(spec, args, true)
			c.hashed = nil
			mark = s.slowEnd(start, args, w)
		case opTx:
			s.applyTx(c, &d)
		case opExpire:
			s.applyExpire(c, &d)
		case opMemcache:
			if pc := pf.next(); pc != nil {
				pc.resume(c, &d, e.Data)
				c.runMemcache(pc.spec, pc.args)
				c.hashed = nil
			} else {
				s.applyMemcache(c, &d)
			}
		case opIdem:
			s.applyIdem(c, &d)
		case opAsUser:
			s.applyAsUser(c, &d)
		case opTxAsUser:
			s.applyTxAsUser(c, &d)
		case opZK:
			s.applyZK(c, &d)
		case opEvict:
			s.applyEvict(c, &d)
		case opOverMemory:
			if len(d.b) == 0 {
				d.err = ErrCorrupt // a mark for no op
				break
			}
			c.overMemory = true
			continue // for the next op
		default:
			d.err = ErrCorrupt
		}
		c.overMemory = false
	}
	if b := s.tracker.Load(); b != nil {
		b.t.EntryDone()
	}
	if d.err != nil {
		return fmt.Errorf("kvstore: apply entry %d: %w", e.Index, d.err)
	}
	return nil
}

func (s *Store) applyTx(c *Ctx, d *decoder) {
	nw := d.uvarint(maxArgs)
	clean := true
	for i := uint64(0); i < nw && d.err == nil; i++ {
		var key []byte
		var ver uint64
		c.DB, key, ver = d.keyVer()
		if d.err == nil && s.keyVersion(c.DB, key, c.Now) != ver {
			clean = false
		}
	}
	n := d.uvarint(maxArgs)
	if d.err != nil {
		return
	}
	if !clean {
		// skip the queued commands: EXEC answers nil and nothing runs
		for i := uint64(0); i < n && d.err == nil; i++ {
			d.command()
		}
		c.W.NullArray()
		return
	}
	c.W.Array(int(n))
	// The transaction holds the shards of all its commands' keys from its first command to
	// its last: Redis runs EXEC atomically, and a reader must not observe half of it.
	held := s.txShards(decoder{b: d.b, args: s.txArgs}, n)
	s.lockShards(held)
	c.held = &held
	defer func() {
		c.held = nil
		s.unlockShards(held)
	}()
	var mark int64 // as in Apply
	for i := uint64(0); i < n && d.err == nil; i++ {
		db, args := d.command()
		if d.err != nil {
			return
		}
		c.DB = db
		spec := Lookup(args[0])
		switch {
		case spec == nil:
			c.Error(UnknownCommand(args))
		case spec.ArgsError(args) != "":
			c.reject(spec, args)
			c.Error(spec.ArgsError(args))
			mark = 0
		default:
			start := s.slowStart(spec, args, mark)
			c.call(spec, args)
			mark = s.slowEnd(start, args, c.W)
		}
	}
}

// shardSet is a set of shards, one bit each.
type shardSet [numShards / 64]uint64

// txShards decodes a transaction's n commands ahead of the applier (d reads the same
// bytes, with a scratch of its own) and returns the shards their keys are in: every shard
// when one of them may touch any key (FlagAllKeys: SORT BY, FLUSHDB...) or does not
// decode.
func (s *Store) txShards(d decoder, n uint64) shardSet {
	var set shardSet
	defer func() {
		clear(d.args[:cap(d.args)]) // keep the scratch, not the entry it pointed into
		s.txArgs = d.args[:0]
	}()
	for i := uint64(0); i < n; i++ {
		_, args := d.command()
		if d.err != nil {
			return allShards()
		}
		spec := Lookup(args[0])
		if spec == nil || !spec.CheckArity(args) {
			continue // answered with an error, touches nothing
		}
		l := spec.lockSet(args, true, nil)
		if l.all {
			return allShards()
		}
		for _, id := range l.ids[:l.n] {
			set.add(int(id))
		}
	}
	return set
}

func (set *shardSet) add(i int)      { set[i/64] |= 1 << (i % 64) }
func (set *shardSet) remove(i int)   { set[i/64] &^= 1 << (i % 64) }
func (set *shardSet) has(i int) bool { return set[i/64]&(1<<(i%64)) != 0 }

func allShards() shardSet {
	var set shardSet
	for i := range set {
		set[i] = ^uint64(0)
	}
	return set
}

// lockShards write-locks the shards of set, in ascending order as every goroutine does.
func (s *Store) lockShards(set shardSet) {
	for i := range s.shards {
		if set.has(i) {
			s.shards[i].mu.Lock()
			s.beforeWrite(i)
		}
	}
}

func (s *Store) unlockShards(set shardSet) {
	for i := range s.shards {
		if set.has(i) {
			s.shards[i].mu.Unlock()
		}
	}
}

func (s *Store) applyExpire(c *Ctx, d *decoder) {
	c.DB = int(d.uvarint(NumDBs - 1))
	n := d.uvarint(maxArgs)
	for i := uint64(0); i < n && d.err == nil; i++ {
		key := d.bytes()
		if d.err != nil {
			break
		}
		sh := &s.shards[shardOf(key)]
		sh.mu.Lock()
		s.beforeWrite(shardOf(key))
		c.lookup(key) // deletes the key if its deadline has passed at the entry's time
		sh.mu.Unlock()
	}
	c.W.Int(int64(n))
}

// KeyVersion returns the version WATCH records for key: the item's version, or for an
// absent key the version of its deletion (see dbShard.tomb). now decides whether a TTL
// has passed.
func (s *Store) KeyVersion(db int, key []byte, now int64) uint64 {
	sh := &s.shards[shardOf(key)]
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return s.keyVersion(db, key, now)
}

func (s *Store) keyVersion(db int, key []byte, now int64) uint64 {
	d := &s.shards[shardOf(key)].dbs[db]
	s2, ok := tableGet(&d.keys, key)
	if ok && (s2.meta&metaHasTTL == 0 || d.ttl[string(key)] > now) && !(db == 0 && s.mcFlushed(now)) {
		return s2.meta >> metaVerShift
	}
	if v, ok := d.tomb[string(key)]; ok {
		return v
	}
	return d.tombFloor
}
