package raft

import (
	"fmt"
	"math"
	"slices"
)

// raftLog is the log as the core sees it: a compaction point (offset, the index and term
// of the last entry folded into a snapshot) followed by every later entry, in memory.
// The driver's WAL holds the durable copy; stable marks how far it reaches.
//
// The entries live in chunks of chunkLen: appending fills the last chunk and then starts
// a new one, so no append moves the entries before it, and compaction drops whole
// chunks. One growing slice instead copied the whole log each time it grew: at 1M
// entries, a 35 ms pause of the Raft loop, taken by every member at about the same
// index (BenchmarkLogAppend1M).
//
// With a reader, the log keeps the data of at most about cacheBytes of entries that are
// both applied and persisted: older entries keep their index, term and clock, and their
// data is read back from the driver's WAL when a follower that lags needs it (RedisRaft's
// log-max-cache-size). Held until a snapshot instead, the data of every write since the
// last snapshot (up to log-max-file-size, 64 MiB) stayed on the heap, and a member's heap
// grew by all of it, in fresh pages: under redis-benchmark SET -P 16 the page faults of
// that growth were about half of a follower's and of a leader's.
//
// Invariants: offset ≤ committed ≤ lastIndex; applied ≤ committed; offset ≤ stable ≤
// lastIndex; evicted ≤ min(applied, stable) or evicted ≤ offset. Every chunk but the
// last holds chunkLen entries; entry offset+1 is chunks[0][head] (the chunk's earlier
// entries are compacted away).
type raftLog struct {
	offset     uint64 // entries ≤ offset are compacted away
	offsetTerm uint64
	offsetTime int64 // clock of the entry at offset
	chunks     [][]Entry
	head       int
	n          int // entries after offset

	// reader reads evicted entries back (nil: nothing is evicted); entries ≤ evicted
	// hold no data here. cached is the data bytes of the entries after max(offset,
	// evicted); past cacheBytes, shrink evicts applied and persisted ones.
	reader     LogReader
	cacheBytes int
	evicted    uint64
	cached     int

	stable    uint64 // last index the driver has persisted
	committed uint64
	applied   uint64 // last index handed out in Ready.CommittedEntries
}

// chunkLen is the number of entries in a chunk (56 bytes each: 224 KiB).
const chunkLen = 4096

func (l *raftLog) lastIndex() uint64 { return l.offset + uint64(l.n) }

// at returns the entry at index i, which must be in the log (offset < i ≤ lastIndex).
func (l *raftLog) at(i uint64) *Entry {
	p := l.head + int(i-l.offset-1)
	return &l.chunks[p/chunkLen][p%chunkLen]
}

// lastTime is the clock of the last entry: new entries are stamped no earlier.
func (l *raftLog) lastTime() int64 {
	if l.n == 0 {
		return l.offsetTime
	}
	return l.at(l.lastIndex()).Time
}

func (l *raftLog) lastTerm() uint64 {
	if l.n == 0 {
		return l.offsetTerm
	}
	return l.at(l.lastIndex()).Term
}

// term returns the term of the entry at i, and false when i is compacted or beyond the
// end (the offset itself is known).
func (l *raftLog) term(i uint64) (uint64, bool) {
	switch {
	case i == l.offset:
		return l.offsetTerm, true
	case i < l.offset || i > l.lastIndex():
		return 0, false
	}
	return l.at(i).Term, true
}

func (l *raftLog) matchTerm(i, term uint64) bool {
	t, ok := l.term(i)
	return ok && t == term
}

// isUpToDate is Raft §5.4.1: a log with (lastIndex, lastTerm) is at least as up to date as
// ours.
func (l *raftLog) isUpToDate(index, term uint64) bool {
	lt := l.lastTerm()
	return term > lt || (term == lt && index >= l.lastIndex())
}

// noLimit is slice's maxBytes for a caller that wants the whole range (Ready).
const noLimit = math.MaxInt

// slice returns entries [lo, hi], capped at maxBytes of data (at least one entry). Within
// one chunk it aliases the log; the log never writes into memory it has handed out
// (truncation copies). Across chunks it copies.
func (l *raftLog) slice(lo, hi uint64, maxBytes int) []Entry {
	if lo > hi {
		return nil
	}
	if lo <= l.offset || hi > l.lastIndex() {
		panic(fmt.Sprintf("raft: slice [%d,%d] outside log (%d,%d]", lo, hi, l.offset, l.lastIndex()))
	}
	for i, size := lo, 0; i <= hi && maxBytes < noLimit; i++ {
		size += len(l.at(i).Data)
		if i > lo && size > maxBytes {
			hi = i - 1
			break
		}
	}
	p, q := l.head+int(lo-l.offset-1), l.head+int(hi-l.offset-1)
	if p/chunkLen == q/chunkLen {
		c := l.chunks[p/chunkLen]
		return c[p%chunkLen : q%chunkLen+1 : q%chunkLen+1]
	}
	out := make([]Entry, 0, hi-lo+1)
	for ; p <= q; p = (p/chunkLen + 1) * chunkLen {
		c := l.chunks[p/chunkLen]
		out = append(out, c[p%chunkLen:min(chunkLen, q-p/chunkLen*chunkLen+1)]...)
	}
	return out
}

// append adds entries that directly follow the last one.
func (l *raftLog) append(ents ...Entry) {
	if len(ents) > 0 && ents[0].Index != l.lastIndex()+1 {
		panic(fmt.Sprintf("raft: append %d after last %d", ents[0].Index, l.lastIndex()))
	}
	for len(ents) > 0 {
		last := len(l.chunks) - 1
		if last < 0 || len(l.chunks[last]) == chunkLen {
			l.chunks = append(l.chunks, make([]Entry, 0, chunkLen))
			last++
		}
		k := min(len(ents), chunkLen-len(l.chunks[last]))
		for i := range ents[:k] {
			l.cached += len(ents[i].Data)
		}
		l.chunks[last] = append(l.chunks[last], ents[:k]...)
		l.n += k
		ents = ents[k:]
	}
}

// truncateAndAppend replaces everything from ents[0].Index on. Replacing a committed
// entry breaks Raft's safety and panics.
func (l *raftLog) truncateAndAppend(ents []Entry) {
	first := ents[0].Index
	if first <= l.committed {
		panic(fmt.Sprintf("raft: entry %d conflicts with committed %d", first, l.committed))
	}
	// The chunk that holds first keeps its entries before it, in a copy rather than in
	// place: messages built earlier may still alias the tail being replaced.
	for i := first; i <= l.lastIndex(); i++ {
		l.cached -= len(l.at(i).Data) // after committed, so never evicted
	}
	p := l.head + int(first-l.offset-1)
	c := p / chunkLen
	fresh := make([]Entry, p%chunkLen, chunkLen)
	copy(fresh, l.chunks[c])
	clear(l.chunks[c+1:])
	l.chunks = append(l.chunks[:c], fresh)
	l.n = int(first - l.offset - 1)
	l.append(ents...)
	if l.stable >= first {
		l.stable = first - 1
	}
}

// maybeAppend is the follower side of AppendEntries (§5.3): if the entry at prev matches
// prevTerm, append ents (dropping any conflicting suffix) and return the index of the
// last new entry.
func (l *raftLog) maybeAppend(prev, prevTerm uint64, ents []Entry) (uint64, bool) {
	if !l.matchTerm(prev, prevTerm) {
		return 0, false
	}
	last := prev + uint64(len(ents))
	for i := range ents {
		e := &ents[i]
		if e.Index <= l.offset {
			continue // already compacted, so committed, so identical
		}
		if t, ok := l.term(e.Index); ok && t == e.Term {
			continue
		}
		if e.Index <= l.lastIndex() {
			l.truncateAndAppend(ents[i:])
		} else {
			l.append(ents[i:]...)
		}
		break
	}
	return last, true
}

// conflictHint finds, for a rejected AppendEntries at (index, term), the largest index ≤
// index whose term is ≤ term: the leader can skip every entry after it in one round trip
// instead of probing one index at a time.
func (l *raftLog) conflictHint(index, term uint64) (uint64, uint64) {
	if li := l.lastIndex(); index > li {
		index = li
	}
	for index > l.offset {
		t, _ := l.term(index)
		if t <= term {
			return index, t
		}
		index--
	}
	return l.offset, l.offsetTerm
}

func (l *raftLog) commitTo(i uint64) bool {
	if i <= l.committed {
		return false
	}
	if i > l.lastIndex() {
		panic(fmt.Sprintf("raft: commit %d beyond last index %d", i, l.lastIndex()))
	}
	l.committed = i
	return true
}

// compact drops entries up to and including i (which must be applied).
func (l *raftLog) compact(i uint64) {
	if i <= l.offset {
		return
	}
	if i > l.applied {
		panic(fmt.Sprintf("raft: compact %d beyond applied %d", i, l.applied))
	}
	e := *l.at(i)
	for j := max(l.offset, l.evicted) + 1; j <= i; j++ {
		l.cached -= len(l.at(j).Data)
	}
	p := l.head + int(i-l.offset) // the position of entry i+1
	drop := min(p/chunkLen, len(l.chunks))
	clear(l.chunks[:drop])
	l.chunks = l.chunks[drop:]
	l.head = p - drop*chunkLen
	l.n -= int(i - l.offset)
	if len(l.chunks) == 0 {
		l.chunks, l.head = nil, 0
	}
	l.offset, l.offsetTerm, l.offsetTime = i, e.Term, e.Time
}

// restore resets the log to a snapshot at (index, term).
func (l *raftLog) restore(index, term uint64, time int64) {
	l.offset, l.offsetTerm, l.offsetTime = index, term, time
	l.chunks, l.head, l.n = nil, 0, 0
	l.committed, l.applied, l.stable = index, index, index
	l.evicted, l.cached = index, 0
}

// LogReader reads entries back from the driver's durable log, for a log that keeps only
// the newest ones' data in memory (Config.LogReader).
type LogReader interface {
	// ReadEntries returns the entries from lo on, in order, as the durable log holds
	// them: at least one, at most to hi, and past the first no more than maxBytes of
	// data. Their data is the caller's.
	ReadEntries(lo, hi uint64, maxBytes int) ([]Entry, error)
}

// shrink evicts the data of the oldest entries that are applied and persisted until
// the cached data is down to half of cacheBytes, when it is over cacheBytes: half, so
// that the chunks it copies are copied once per cacheBytes/2 of writes. It copies each
// chunk it changes, as truncation does: messages and Readies built earlier may alias it.
// The copy of the last chunk holds its entries only, not chunkLen: append grows it
// (with a small cache, as the simulator runs, a full chunk's capacity cost more than
// the rest of the member's work). When more than half the cache is data not yet
// applied or persisted, it waits until a quarter of the cache can go at once, rather
// than copy a chunk on every call for the few entries each Ready makes evictable.
func (l *raftLog) shrink() {
	if l.reader == nil || l.cached <= l.cacheBytes {
		return
	}
	lo, upto := max(l.offset, l.evicted)+1, min(l.applied, l.stable)
	hi, freed := lo-1, 0
	for hi < upto && l.cached-freed > l.cacheBytes/2 {
		hi++
		freed += len(l.at(hi).Data)
	}
	if freed < l.cacheBytes/4 {
		return
	}
	l.cached -= freed
	for i := lo; i <= hi; {
		p := l.head + int(i-l.offset-1)
		fresh := slices.Clone(l.chunks[p/chunkLen])
		for k := p % chunkLen; k < len(fresh) && i <= hi; k, i = k+1, i+1 {
			fresh[k].Data = nil
		}
		l.chunks[p/chunkLen] = fresh
	}
	l.evicted = max(l.evicted, hi)
}

// read returns entries [lo, hi] for a message, capped at maxBytes of data: from memory,
// or, when lo is evicted, what the reader returns of [lo, evicted].
func (l *raftLog) read(lo, hi uint64, maxBytes int) ([]Entry, error) {
	if lo > l.evicted || lo > hi {
		return l.slice(lo, hi, maxBytes), nil
	}
	ents, err := l.reader.ReadEntries(lo, min(hi, l.evicted), maxBytes)
	if err == nil && (len(ents) == 0 || ents[0].Index != lo || ents[len(ents)-1].Index > min(hi, l.evicted)) {
		err = fmt.Errorf("raft: the log reader returned %d entries for [%d,%d]", len(ents), lo, min(hi, l.evicted))
	}
	return ents, err
}
