package kvstore

// Once the keyspace outgrows the caches, a write to a random key waits for the key
// table entry it hashes to: a cache miss and, with a table spread over more pages than
// the TLB maps, a page walk. Under a virtual machine's nested paging that is the largest
// single cost of applying a SET (about 40% of BenchmarkApplySET1MKeys). One command at a
// time, Apply pays these misses one after another; yet an entry usually carries many
// commands (a leader batches every client's pipeline into one), whose keys are known
// before the first one runs.
//
// The prefetcher reads ahead of Apply's loop: it decodes the next few commands, finds
// the entry where each one's first key's probe starts, and prefetches them all
// (prefetch: PREFETCHT0 on amd64, elsewhere a tight loop of independent loads), so the
// processor has their misses in flight at once. The commands then find their entries in
// the cache. A prefetch instruction does not wait: the commands read ahead before these
// run while the misses proceed, where a load, once the processor's reorder window
// filled behind it, stalled the applier until its miss was served (three offload
// members, SET -P 16 -d 3 after 1M SETs at -P 1, a fresh cluster per run, loads against
// prefetches, seven pairs: medians 688k against 730k ops/s, prefetches ahead in six).
// It only reads: the entries it prefetches may be changed by the commands before them,
// which is harmless, since a prefetch decides nothing. It reads plain commands, Redis's
// and memcached's, and stops at the first other op (a transaction, a ZooKeeper op),
// which Apply then runs without it.

// prefetchAhead is how many commands the prefetcher reads ahead at once: enough for their
// misses to overlap, few enough that their entries are still cached when they run.
const prefetchAhead = 16

// The commands read ahead are kept decoded, so that Apply runs them without decoding
// each twice: the command's arguments, its spec and its place in the entry (decoding
// and looking up a command again were about a tenth of BenchmarkApplySET1MKeys).
// prefetchRing holds what is read ahead at most: fewer than prefetchAhead/4 left, and
// prefetchAhead more.
const prefetchRing = 32

// decodedCmd is a command the prefetcher decoded ahead of Apply.
type decodedCmd struct {
	db     int
	args   [][]byte // into the entry's data; the slice is the ring slot's, reused
	spec   *Spec
	rest   int    // bytes of the entry after the command
	hashed []byte // the first key, when the prefetcher hashed it (Ctx.hashed)
	hash   uint64
}

type prefetcher struct {
	d    decoder                   // the entry from the first op not yet read ahead
	ring *[prefetchRing]decodedCmd // the store's; head is the next command Apply runs
	head int
	n    int  // commands read ahead and not yet applied
	read int  // commands read ahead in this entry: ring slots from 0 were filled in turn
	done bool // nothing more to read ahead in this entry
}

// before is called before Apply runs each op: when few of the commands read ahead are
// left, it reads ahead the next prefetchAhead.
func (p *prefetcher) before(s *Store) {
	if p.done || p.n >= prefetchAhead/4 {
		return
	}
	var ahead tablesAhead
	for range prefetchAhead {
		if len(p.d.b) == 0 || p.d.b[0] != opCommand && p.d.b[0] != opMemcache {
			p.done = true
			break
		}
		op := p.d.b[0]
		p.d.b = p.d.b[1:]
		c := &p.ring[(p.head+p.n)%prefetchRing]
		p.d.args = c.args
		db, args := p.d.command()
		if p.d.err != nil {
			// Apply decodes the command itself, and reports the error. What the slot
			// took of the entry before the error is dropped with the rest (release).
			c.args = p.d.args
			p.read++
			p.done = true
			break
		}
		db, spec := aheadSpec(op, db, args)
		*c = decodedCmd{db: db, args: args, spec: spec, rest: len(p.d.b)}
		p.n++
		p.read++
		ahead.add(s, c)
	}
	var ents [prefetchAhead]*kent
	prefetch(ahead.entries(&ents))
}

// tablesAhead collects the key tables of the commands read ahead, so that their
// headers are prefetched together before their entries are: each table's header (its
// entries array) is in its shard, 256 of them 1.4 KB apart, which the table's own misses
// evict from the caches; read one command at a time, the headers' misses came one after
// the other before the entries' prefetches could leave. (Under SET -P 1 on three
// offload members, `perf record` of a follower: the header's read was 86% of the time
// of the function that did it, 6.3% of the follower's samples; finding the tables, the
// prefetches and find came to 13.8% of them before and 7.2-7.6% after.)
type tablesAhead struct {
	tables [prefetchAhead]*keyTable
	hashes [prefetchAhead]uint64
	n      int
}

// add hashes c's first key, keeping the hash in c for Apply, and notes its table; a
// command without a key adds nothing.
func (a *tablesAhead) add(s *Store, c *decodedCmd) {
	if c.spec == nil || c.spec.FirstKey <= 0 || c.spec.FirstKey >= len(c.args) {
		return
	}
	key := c.args[c.spec.FirstKey]
	h := hashKey(key)
	c.hashed, c.hash = key, h
	a.tables[a.n], a.hashes[a.n] = &s.shards[h%numShards].dbs[c.db].keys, h
	a.n++
}

// entries prefetches the tables' headers, then fills ents with the entry where each
// key's probe starts (skipping empty tables) and returns them.
func (a *tablesAhead) entries(ents *[prefetchAhead]*kent) []*kent {
	prefetchTables(a.tables[:a.n])
	k := 0
	for i, t := range a.tables[:a.n] {
		if e := probeStart(t, a.hashes[i]); e != nil {
			ents[k] = e
			k++
		}
	}
	return ents[:k]
}

// next returns the command Apply runs now if it was read ahead, else nil: the
// prefetcher reads only plain commands (opCommand, opMemcache), from the start of the
// entry, so the commands it holds are the ones that come next.
func (p *prefetcher) next() *decodedCmd {
	if p.n == 0 {
		return nil
	}
	c := &p.ring[p.head]
	p.head = (p.head + 1) % prefetchRing
	p.n--
	return c
}

// resume has Apply go on with pc, a command read ahead of the entry data: c takes the
// hash of its first key, and d moves past it.
func (pc *decodedCmd) resume(c *Ctx, d *decoder, data []byte) {
	c.hashed, c.hash = pc.hashed, pc.hash
	d.b = data[len(data)-pc.rest:]
}

// release drops the references into the entry the ring's slots hold, keeping their
// scratch.
func (p *prefetcher) release() {
	for i := range min(p.read, prefetchRing) {
		c := &p.ring[i]
		clear(c.args[:cap(c.args)]) // a longer command's arguments may lie past len
		*c = decodedCmd{args: c.args[:0]}
	}
}

// aheadSpec is the database and spec of a plain command read ahead, encoded as op in
// database db: a memcached command runs in database 0, memcached's one keyspace,
// whatever its encoding says (applyMemcache).
func aheadSpec(op byte, db int, args [][]byte) (int, *Spec) {
	if op == opMemcache {
		return 0, mcCommands[string(args[0])]
	}
	return db, Lookup(args[0])
}

// probeStart returns the entry of t where the probe for a key of hash h starts, or nil
// when t is empty.
func probeStart(t *keyTable, h uint64) *kent {
	if len(t.ents) == 0 {
		return nil
	}
	return &t.ents[tagOf(h)&uint32(len(t.ents)-1)]
}

// PrefetchEntries reads ahead of Apply across entries: it prefetches the key table
// entry where the first command of each of datas (the data of entries about to be
// applied, in order) starts its probe. Within an entry the prefetcher overlaps its
// commands' misses, but an entry of one command, as every entry is when each client has
// one request in flight (redis-benchmark -P 1, memaslap), has nothing to overlap its
// miss with but the entries after it. A memcached command's key is read as a Redis
// command's. It must be called by the applier's goroutine, between two Applys: it reads
// the tables the applier alone changes. At most prefetchAhead entries are read.
func (s *Store) PrefetchEntries(datas [][]byte) {
	var ents [prefetchAhead]*kent
	prefetch(s.entriesAhead(datas, &ents))
}

// entriesAhead fills ents with the key table entries where the first command of each of
// datas starts its probe, for those that have one, and returns them.
func (s *Store) entriesAhead(datas [][]byte, ents *[prefetchAhead]*kent) []*kent {
	var ahead tablesAhead
	d := decoder{args: s.aheadArgs}
	for _, data := range datas {
		if ahead.n == len(ahead.tables) {
			break
		}
		if len(data) == 0 || data[0] != opCommand && data[0] != opMemcache {
			continue
		}
		d.b, d.err = data[1:], nil
		db, args := d.command()
		if d.err != nil {
			continue
		}
		c := decodedCmd{args: args}
		c.db, c.spec = aheadSpec(data[0], db, args)
		ahead.add(s, &c)
	}
	clear(d.args[:cap(d.args)]) // keep the scratch, not the entries it pointed into
	s.aheadArgs = d.args[:0]
	return ahead.entries(ents)
}
