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
// the entry where each one's first key's probe starts, and loads them all in one tight
// loop, whose loads are independent, so the processor has their misses in flight at
// once. The commands then find their entries in the cache. It only reads: the entries it
// loads may be changed by the commands before them, which is harmless, since a load
// decides nothing. It stops at the first op that is not a plain command (a transaction,
// a memcached or ZooKeeper op), which Apply then runs without it.

// prefetchAhead is how many commands the prefetcher loads at once: enough for their
// misses to overlap, few enough that their entries are still cached when they run.
const prefetchAhead = 16

type prefetcher struct {
	d     decoder // the entry from the first op not yet read ahead
	ahead int     // commands read ahead and not yet applied
	done  bool    // nothing more to read ahead in this entry
	sink  uint64  // what the loads read, kept so that they are not optimised away
}

// before is called before Apply runs each op: when few of the commands read ahead are
// left, it reads ahead the next prefetchAhead.
func (p *prefetcher) before(s *Store) {
	if p.ahead > 0 {
		p.ahead--
	}
	if p.done || p.ahead >= prefetchAhead/4 {
		return
	}
	var ents [prefetchAhead]*kent
	n := 0
	for range prefetchAhead {
		if len(p.d.b) == 0 || p.d.b[0] != opCommand {
			p.done = true
			break
		}
		p.d.b = p.d.b[1:]
		if e := p.keyEntry(s); e != nil {
			ents[n] = e
			n++
		}
		if p.d.err != nil {
			p.done = true
			break
		}
		p.ahead++
	}
	for _, e := range ents[:n] {
		// An entry of 48 bytes may straddle two cache lines; find reads both.
		p.sink += e.meta + uint64(e.k[inlineKey-1])
	}
}

// keyEntry decodes one command and returns the entry where the probe for its first key
// starts, or nil when it names no key or its table is empty.
func (p *prefetcher) keyEntry(s *Store) *kent {
	d := &p.d
	db := int(d.uvarint(NumDBs - 1))
	argc := d.uvarint(maxArgs)
	if d.err != nil || argc == 0 {
		d.err = ErrCorrupt
		return nil
	}
	spec := Lookup(d.bytes())
	var key []byte
	for i := 1; i < int(argc) && d.err == nil; i++ {
		a := d.bytes()
		if spec != nil && i == spec.FirstKey {
			key = a
		}
	}
	if key == nil || d.err != nil {
		return nil
	}
	h := hashKey(key)
	t := &s.shards[h%numShards].dbs[db].keys
	if len(t.ents) == 0 {
		return nil
	}
	return &t.ents[tagOf(h)&uint32(len(t.ents)-1)]
}
