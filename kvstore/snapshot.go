package kvstore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// Snapshot format (all integers uvarint unless said otherwise):
//
//	magic "NKVSNAP5" applied ver
//	per shard, per db: tombFloor ntomb (key:bytes ver)* nkeys (key record)*
//	key record := key:bytes type:byte ver flags ttl:varint(0 = none) value:bytes
//	  (flags: memcached's client flags, and bit 32 for a binary key: mcFlagsArg)
//	the ZooKeeper tree (zk_snapshot.go)
//	the idempotent-request table (idempotent.go)
//	the script cache: n (body:bytes)*, in the order of their SHA-1s (script.go)
//	the function libraries: n (code:bytes)*, in the order of their names (function.go)
//
// and in the header, after the version counter, a pending memcached flush_all's second
// (Store.mcFlushLive; 0: none).
//
// Older snapshots lack the later sections and restore with them empty: "NKVSNAP1" has
// neither the ZooKeeper tree nor the table, "NKVSNAP2" has no table, "NKVSNAP3" no
// scripts, "NKVSNAP4" no functions, "NKVSNAP5" no pending flush_all.
//
// Everything that decides a future reply is in it, including the version counter and
// the deletion watermarks WATCH compares against: a replica restored from a snapshot must
// go on exactly like one that applied the whole log.
//
// Keys are written in their table's order, which depends on the order they were
// inserted in, so two stores with the same state may write different bytes (Digest is
// what compares states). Sorting them had been three quarters of a snapshot's time:
// 365-410 ms for 1M keys against 98-107 ms now (BenchmarkSnapshot1MKeys), with a
// 1M-entry array to sort in.
const snapshotMagic = "NKVSNAP6"

// The magics of older snapshots: without the ZooKeeper section (V1), without the
// idempotent-request table (V2), without the script cache (V3), without the function
// libraries (V4), without the pending flush_all (V5).
const (
	snapshotMagicV1 = "NKVSNAP1"
	snapshotMagicV2 = "NKVSNAP2"
	snapshotMagicV3 = "NKVSNAP3"
	snapshotMagicV4 = "NKVSNAP4"
	snapshotMagicV5 = "NKVSNAP5"
)

// snapHead is a snapshot's header.
type snapHead struct {
	magic        string
	applied, ver uint64
	mcFlushLive  int64
}

// readHead reads a snapshot's header, of any magic this build reads.
func (r *snapReader) readHead() (snapHead, error) {
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(r.r, magic); err != nil || !slices.Contains([]string{snapshotMagic, snapshotMagicV1, snapshotMagicV2, snapshotMagicV3, snapshotMagicV4, snapshotMagicV5}, string(magic)) {
		return snapHead{}, fmt.Errorf("%w: magic", ErrBadSnapshot)
	}
	h := snapHead{magic: string(magic), applied: r.uvarint(), ver: r.uvarint()}
	if h.magic == snapshotMagic {
		h.mcFlushLive = int64(r.uvarint())
	}
	return h, r.err
}

// ErrBadSnapshot reports a snapshot that does not decode.
var ErrBadSnapshot = errors.New("kvstore: bad snapshot")

// Snapshot writes the whole state to w. It must not run concurrently with Apply (call it
// from the applier); readers may go on meanwhile.
func (s *Store) Snapshot(w io.Writer) error {
	write, err := s.BeginSnapshot()
	if err != nil {
		return err
	}
	return write(w)
}

// BeginSnapshot captures the state as it is now, between two entries, and returns the
// function that writes it; Apply may go on while it runs, on another goroutine. It must
// be called from the applier (or with no Apply running), one snapshot at a time.
//
// The capture is copy-on-write at shard granularity: the header and the small sections
// (the ZooKeeper tree, the idempotent-request table) are serialized now; a shard is
// serialized by the writer when it gets there, or by the applier just before the first
// entry that would change it, whichever comes first. So applying pauses for at most one
// shard (1/256 of the keyspace) per shard it touches, instead of for the whole store.
func (s *Store) BeginSnapshot() (func(io.Writer) error, error) {
	tx := &snapTx{}
	tx.head = append(tx.head, snapshotMagic...)
	tx.head = binary.AppendUvarint(tx.head, s.applied)
	tx.head = binary.AppendUvarint(tx.head, s.ver)
	tx.head = binary.AppendUvarint(tx.head, uint64(s.mcFlushLive.Load()))
	tx.tail = s.zk.appendSnapshot(nil)
	tx.tail = s.appendIdemSnapshot(tx.tail)
	tx.tail = s.scripts.appendSnapshot(tx.tail)
	tx.tail = s.functions.appendSnapshot(tx.tail)
	if !s.snap.CompareAndSwap(nil, tx) {
		return nil, errors.New("kvstore: a snapshot is already being written")
	}
	return func(w io.Writer) error {
		defer s.endSnapshot(tx)
		bw := bufio.NewWriterSize(w, 1<<16)
		if _, err := bw.Write(tx.head); err != nil {
			return err
		}
		var buf []byte
		for i := range s.shards {
			// A read lock keeps the applier out, which write-locks a shard to change it.
			// A shard it has not captured yet is serialized as it is. One it has is
			// serialized from its capture, whose key tables share the pages the applier
			// has not changed with the live ones: under the lock too.
			sh := &s.shards[i]
			sh.mu.RLock()
			if tx.captured[i] {
				c := tx.shards[i]
				tx.shards[i] = nil
				buf = appendShardCopy(buf[:0], c)
				c.release()
			} else {
				tx.captured[i] = true
				buf = appendLiveShard(buf[:0], sh)
			}
			sh.mu.RUnlock()
			if _, err := bw.Write(buf); err != nil {
				return err
			}
		}
		if _, err := bw.Write(tx.tail); err != nil {
			return err
		}
		return bw.Flush()
	}, nil
}

// endSnapshot lets the applier go on without a snapshot. A capture the writer did not
// reach (it failed) is released, so that its live tables stop saving pages for it.
func (s *Store) endSnapshot(tx *snapTx) {
	for i, c := range tx.shards {
		if c != nil {
			s.shards[i].mu.RLock()
			c.release()
			s.shards[i].mu.RUnlock()
		}
	}
	s.snap.Store(nil)
}

// snapTx is a snapshot being written: what was captured when it began, and each shard
// once copied (under the shard's lock).
type snapTx struct {
	head, tail []byte
	shards     [numShards]*shardCopy
	captured   [numShards]bool
}

// shardCopy is a shard as it was when the snapshot began. Its key tables are frozen
// (copy-on-write); slots are values, so copying the maps copies them; collections change
// in place, so they are serialized.
type shardCopy [NumDBs]dbCopy

type dbCopy struct {
	keys      *frozenTable // nil: no keys
	flags     map[string]uint32
	ttl       map[string]int64
	tomb      map[string]uint64
	tombFloor uint64
	colls     map[string][]byte // appendTo of each collection
}

// captureShard captures shard i into tx unless it already is. The caller holds the
// shard's write lock. The key tables are frozen, not copied (frozenTable), and the side
// maps are copied rather than serialized, which keeps the applier's pause short: the
// encoding happens on the writer's goroutine.
func (s *Store) captureShard(tx *snapTx, i int) {
	if tx.captured[i] {
		return
	}
	tx.captured[i] = true
	c := new(shardCopy)
	for db := range s.shards[i].dbs {
		d, cp := &s.shards[i].dbs[db], &c[db]
		cp.tombFloor = d.tombFloor
		cp.tomb = maps.Clone(d.tomb)
		if d.keys.len() == 0 {
			continue
		}
		cp.keys, cp.flags, cp.ttl = d.keys.freeze(), maps.Clone(d.flags), maps.Clone(d.ttl)
		if len(d.colls) > 0 {
			cp.colls = make(map[string][]byte, len(d.colls))
			for k, coll := range d.colls {
				cp.colls[k] = coll.appendTo(nil)
			}
		}
	}
	tx.shards[i] = c
}

// release tells the live tables that the capture is written: they stop saving pages,
// and what the frozen tables hold goes (a live table keeps pointing to its frozen one
// until its next change). The caller holds the shard's lock (a read lock is enough: the
// applier is out).
func (c *shardCopy) release() {
	for db := range c {
		if f := c[db].keys; f != nil {
			f.done, f.ents, f.saved = true, nil, nil
		}
	}
}

// appendLiveShard serializes a shard as it is now, as appendShardCopy would a copy of it.
func appendLiveShard(buf []byte, sh *shard) []byte {
	for db := range sh.dbs {
		d := &sh.dbs[db]
		keys := &frozenTable{ents: d.keys.ents, n: d.keys.n} // read under the lock, not frozen
		view := dbCopy{keys: keys, flags: d.flags, ttl: d.ttl, tomb: d.tomb, tombFloor: d.tombFloor}
		buf = appendDB(buf, &view, d.colls)
	}
	return buf
}

// appendShardCopy serializes a captured shard in the snapshot format.
func appendShardCopy(buf []byte, c *shardCopy) []byte {
	for db := range c {
		buf = appendDB(buf, &c[db], nil)
	}
	return buf
}

// appendDB serializes one db of a shard: cp's maps, and its collections from cp.colls,
// or from live when cp is a view of the shard itself rather than a copy.
func appendDB(buf []byte, cp *dbCopy, live map[string]collection) []byte {
	buf = binary.AppendUvarint(buf, cp.tombFloor)
	buf = binary.AppendUvarint(buf, uint64(len(cp.tomb)))
	for _, k := range sortedKeys(cp.tomb) {
		buf = appendBytes(buf, k)
		buf = binary.AppendUvarint(buf, cp.tomb[k])
	}
	if cp.keys == nil {
		return binary.AppendUvarint(buf, 0)
	}
	buf = binary.AppendUvarint(buf, uint64(cp.keys.n))
	pages := cp.keys.pages()
	if pages > 0 {
		prefetchValues(cp.keys.page(0))
	}
	for p := range pages {
		page := cp.keys.page(p)
		if p+1 < pages {
			prefetchValues(cp.keys.page(p + 1))
		}
		for i := range page {
			switch e := &page[i]; {
			case e.meta == 0:
			case e.inline():
				buf = appendEntryRecord(buf, e.k[:e.klen()], e.slot(), cp, live)
			default:
				buf = appendEntryRecord(buf, e.str[:e.klen()], e.slot(), cp, live)
			}
		}
	}
	return buf
}

// prefetchValues prefetches every value a page of entries points to. Values live
// wherever the applier allocated them, so serializing a page paid a cache miss per key,
// one after the other (the copy of the value was most of a snapshot's time); appendDB
// prefetches the next page's values while it serializes a page, so that their misses
// overlap each other and the work (the prefetcher of prefetch.go does the same for
// Apply's key entries).
func prefetchValues(page []kent) {
	var vals [frozenPage]unsafe.Pointer
	k := 0
	for i := range page[:min(len(page), frozenPage)] {
		if e := &page[i]; len(e.str) > 0 {
			vals[k] = unsafe.Pointer(unsafe.StringData(e.str))
			k++
		}
	}
	prefetchBytes(vals[:k])
}

// appendEntryRecord appends the record of key, whose slot is sl, for appendDB.
func appendEntryRecord[K ~string | ~[]byte](buf []byte, key K, sl slot, cp *dbCopy, live map[string]collection) []byte {
	typ := Type(sl.meta & metaTypeMask)
	var flags uint32
	if sl.meta&metaHasFlags != 0 {
		flags = cp.flags[string(key)]
	}
	var ttl int64
	if sl.meta&metaHasTTL != 0 {
		ttl = cp.ttl[string(key)]
	}
	val := sl.str
	switch {
	case typ == TypeString:
	case live != nil:
		val = string(live[string(key)].appendTo(nil))
	default:
		val = string(cp.colls[string(key)])
	}
	return appendRecord(buf, key, typ, sl.meta>>metaVerShift, mcFlagsArg(flags, mcMark((sl.meta&metaMCMask)>>metaMCShift)), ttl, val)
}

// beforeWrite runs when the applier has write-locked shard i: a snapshot being written
// takes the shard's content first (copy-on-write).
func (s *Store) beforeWrite(i int) {
	if tx := s.snap.Load(); tx != nil {
		s.captureShard(tx, i)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func appendBytes[B ~string | ~[]byte](dst []byte, b B) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

func appendKeyRecord(dst []byte, key string, it item, ttl int64) []byte {
	if !it.hasTTL {
		ttl = 0
	}
	val := it.str
	if it.typ != TypeString {
		val = string(it.coll.appendTo(nil))
	}
	return appendRecord(dst, key, it.typ, it.ver, mcFlagsArg(it.flags, it.mc), ttl, val)
}

// appendRecord appends one key record: key type ver flags ttl (0: none) value, where
// flags are the memcached client flags and the binary-key mark (mcFlagsArg).
func appendRecord[K ~string | ~[]byte](dst []byte, key K, typ Type, ver uint64, flags uint64, ttl int64, val string) []byte {
	dst = appendBytes(dst, key)
	dst = append(dst, byte(typ))
	dst = binary.AppendUvarint(dst, ver)
	dst = binary.AppendUvarint(dst, flags)
	dst = binary.AppendVarint(dst, ttl)
	return appendBytes(dst, val)
}

// snapReader reads snapshot fields, bounding every length by what is left to read.
type snapReader struct {
	r   *bufio.Reader
	err error
}

func (r *snapReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(r.r)
	if err != nil {
		r.err = fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	return v
}

func (r *snapReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, err := binary.ReadVarint(r.r)
	if err != nil {
		r.err = fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	return v
}

func (r *snapReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > maxArgSize*2 {
		r.err = fmt.Errorf("%w: length %d", ErrBadSnapshot, n)
		return nil
	}
	// read in bounded steps so that a lying length cannot allocate more than the input has
	var out []byte
	for uint64(len(out)) < n {
		step := min(n-uint64(len(out)), 1<<20)
		start := len(out)
		out = append(out, make([]byte, step)...)
		if _, err := io.ReadFull(r.r, out[start:]); err != nil {
			r.err = fmt.Errorf("%w: %v", ErrBadSnapshot, err)
			return nil
		}
	}
	return out
}

// Restore replaces the whole state with a snapshot's. On error the store is unchanged.
func (s *Store) Restore(rd io.Reader) error {
	r := &snapReader{r: bufio.NewReaderSize(rd, 1<<16)}
	head, err := r.readHead()
	if err != nil {
		return err
	}
	fresh := New()
	fresh.applied, fresh.ver = head.applied, head.ver
	err = r.readShards(func(i, db int, floor uint64, tomb map[string]uint64) {
		d := &fresh.shards[i].dbs[db]
		d.tombFloor, d.tomb = floor, tomb
	}, func(i, db int, key string, it item, ttl int64) {
		d := &fresh.shards[i].dbs[db]
		if it.hasTTL {
			if d.ttl == nil {
				d.ttl = map[string]int64{}
			}
			d.ttl[key] = ttl
		}
		d.put([]byte(key), it)
	})
	if err != nil {
		return err
	}
	scripts, libs, err := r.readTail(head.magic, fresh)
	if err != nil {
		return err
	}
	s.entryMu.RLock()
	defer s.entryMu.RUnlock()
	s.lockAll(true)
	m, now := s.acc.tracking(), time.Now().UnixMilli()
	for i := range s.shards {
		s.shards[i].dbs = fresh.shards[i].dbs
		for db := range s.shards[i].dbs {
			t := &s.shards[i].dbs[db].keys
			t.acc = s.acc // not the throw-away store's
			t.resetClocks(m, now)
		}
	}
	s.applied, s.ver, s.idem = fresh.applied, fresh.ver, fresh.idem
	s.mcFlushLive.Store(head.mcFlushLive)
	s.scripts.replace(scripts)
	s.functions.join(libs, true, false, "")
	s.unlockAll(true)
	s.zk.replace(&fresh.zk)
	s.allReady()
	if b := s.tracker.Load(); b != nil {
		b.t.Flushed()
	}
	return nil
}

// readShards reads a snapshot's keyspace: for each shard and each of its databases,
// its tombstones (tombs) and then each of its keys (key), whose item holds the value,
// version and flags, and hasTTL when ttl is its deadline.
func (r *snapReader) readShards(tombs func(shard, db int, floor uint64, tomb map[string]uint64), key func(shard, db int, k string, it item, ttl int64)) error {
	for i := range numShards {
		for db := range NumDBs {
			floor := r.uvarint()
			nt := r.uvarint()
			if nt > maxTombstones {
				return fmt.Errorf("%w: %d tombstones", ErrBadSnapshot, nt)
			}
			var tomb map[string]uint64
			for k := uint64(0); k < nt && r.err == nil; k++ {
				k := string(r.bytes())
				if tomb == nil {
					tomb = map[string]uint64{}
				}
				tomb[k] = r.uvarint()
			}
			tombs(i, db, floor, tomb)
			n := r.uvarint()
			for k := uint64(0); k < n && r.err == nil; k++ {
				k := string(r.bytes())
				tb, err := r.r.ReadByte()
				if err != nil && r.err == nil {
					r.err = fmt.Errorf("%w: %v", ErrBadSnapshot, err)
				}
				typ := Type(tb)
				it := item{typ: typ, ver: r.uvarint()}
				mc := r.uvarint()
				it.flags, it.mc = uint32(mc), mcMark(mc>>32)
				if mc>>32 > uint64(mcMarkMask) {
					return fmt.Errorf("%w: memcached marks %#x", ErrBadSnapshot, mc>>32)
				}
				ttl := r.varint()
				val := r.bytes()
				if r.err != nil {
					break
				}
				if shardOfString(k) != i {
					return fmt.Errorf("%w: key in the wrong shard", ErrBadSnapshot)
				}
				switch {
				case typ == TypeString:
					it.str = string(val)
				case collectionDecoders[typ] != nil:
					c, err := collectionDecoders[typ](val)
					if err != nil {
						return fmt.Errorf("%w: %v", ErrBadSnapshot, err)
					}
					it.coll = c
				default:
					return fmt.Errorf("%w: type %d", ErrBadSnapshot, typ)
				}
				if it.ver > maxVersion {
					return fmt.Errorf("%w: version %d", ErrBadSnapshot, it.ver)
				}
				it.hasTTL = ttl != 0
				key(i, db, k, it, ttl)
			}
		}
	}
	return r.err
}

// readTail reads the sections after the keyspace that a snapshot of this magic has:
// the ZooKeeper tree and the idempotent-request table into s, the scripts and the
// function libraries returned.
func (r *snapReader) readTail(magic string, s *Store) (scripts map[string]string, libs []*funcLibrary, err error) {
	if magic != snapshotMagicV1 {
		if err := s.zk.restore(r); err != nil {
			return nil, nil, err
		}
	}
	if magic == snapshotMagic || magic == snapshotMagicV5 || magic == snapshotMagicV4 || magic == snapshotMagicV3 {
		if s.idem = r.idemTable(); r.err != nil {
			return nil, nil, r.err
		}
	}
	if magic == snapshotMagic || magic == snapshotMagicV5 || magic == snapshotMagicV4 {
		if scripts = r.scriptBodies(); r.err != nil {
			return nil, nil, r.err
		}
	}
	if magic == snapshotMagic || magic == snapshotMagicV5 {
		if libs = r.libraries(); r.err != nil {
			return nil, nil, r.err
		}
	}
	return scripts, libs, nil
}

// Digest is a hash of the whole state (every key, value, TTL, version and deletion
// watermark), equal on two stores exactly when they hold the same state. The simulator
// compares it across replicas at equal applied indexes. Like Snapshot, it must not run
// concurrently with Apply.
func (s *Store) Digest() uint64 {
	// per-key hashes are combined by addition, so map iteration order does not matter
	var sum uint64
	var buf []byte
	for i := range s.shards {
		for db := range s.shards[i].dbs {
			d := &s.shards[i].dbs[db]
			if d.tombFloor == 0 && len(d.tomb) == 0 && d.keys.len() == 0 {
				continue // an empty db of a shard adds nothing (most of the 16 dbs are empty)
			}
			buf = binary.AppendUvarint(buf[:0], uint64(db))
			buf = binary.AppendUvarint(buf, uint64(i))
			buf = binary.AppendUvarint(buf, d.tombFloor)
			sum += xxhash.Sum64(buf)
			for k, v := range d.tomb {
				buf = binary.AppendUvarint(buf[:0], uint64(db)+1<<32)
				buf = appendBytes(buf, k)
				buf = binary.AppendUvarint(buf, v)
				sum += xxhash.Sum64(buf)
			}
			d.each(func(k string, it item) bool {
				buf = binary.AppendUvarint(buf[:0], uint64(db))
				buf = appendKeyRecord(buf, k, it, d.ttl[k])
				sum += xxhash.Sum64(buf)
				return true
			})
		}
	}
	buf = binary.AppendUvarint(buf[:0], s.ver)
	if live := s.mcFlushLive.Load(); live != 0 {
		// only then: a store with none has the digest an older build gives it
		buf = binary.AppendUvarint(buf, uint64(live))
	}
	return (sum + s.zk.digest() + s.idemDigest() + s.scripts.digest() + s.functions.digest()) ^ xxhash.Sum64(buf)
}
