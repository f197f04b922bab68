package raft

import "fmt"

// raftLog is the log as the core sees it: a compaction point (offset, the index and term
// of the last entry folded into a snapshot) followed by every later entry, in memory.
// The driver's WAL holds the durable copy; stable marks how far it reaches.
//
// Invariants: offset ≤ committed ≤ lastIndex; applied ≤ committed; offset ≤ stable ≤
// lastIndex.
type raftLog struct {
	offset     uint64 // entries ≤ offset are compacted away
	offsetTerm uint64
	offsetTime int64   // clock of the entry at offset
	entries    []Entry // entries[i].Index == offset+1+i

	stable    uint64 // last index the driver has persisted
	committed uint64
	applied   uint64 // last index handed out in Ready.CommittedEntries
}

func (l *raftLog) lastIndex() uint64 { return l.offset + uint64(len(l.entries)) }

// lastTime is the clock of the last entry: new entries are stamped no earlier.
func (l *raftLog) lastTime() int64 {
	if len(l.entries) == 0 {
		return l.offsetTime
	}
	return l.entries[len(l.entries)-1].Time
}

func (l *raftLog) lastTerm() uint64 {
	if len(l.entries) == 0 {
		return l.offsetTerm
	}
	return l.entries[len(l.entries)-1].Term
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
	return l.entries[i-l.offset-1].Term, true
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

// slice returns entries [lo, hi], capped at maxBytes of data (at least one entry). It
// aliases the log; the log never writes into memory it has handed out (truncate copies).
func (l *raftLog) slice(lo, hi uint64, maxBytes int) []Entry {
	if lo > hi {
		return nil
	}
	if lo <= l.offset || hi > l.lastIndex() {
		panic(fmt.Sprintf("raft: slice [%d,%d] outside log (%d,%d]", lo, hi, l.offset, l.lastIndex()))
	}
	ents := l.entries[lo-l.offset-1 : hi-l.offset]
	size := 0
	for i := range ents {
		size += len(ents[i].Data)
		if i > 0 && size > maxBytes {
			return ents[:i:i]
		}
	}
	return ents[:len(ents):len(ents)]
}

// append adds entries that directly follow the last one.
func (l *raftLog) append(ents ...Entry) {
	if len(ents) > 0 && ents[0].Index != l.lastIndex()+1 {
		panic(fmt.Sprintf("raft: append %d after last %d", ents[0].Index, l.lastIndex()))
	}
	l.entries = append(l.entries, ents...)
}

// truncateAndAppend replaces everything from ents[0].Index on. Replacing a committed
// entry breaks Raft's safety and panics.
func (l *raftLog) truncateAndAppend(ents []Entry) {
	first := ents[0].Index
	if first <= l.committed {
		panic(fmt.Sprintf("raft: entry %d conflicts with committed %d", first, l.committed))
	}
	keep := l.entries[:first-l.offset-1]
	// Copy rather than overwrite in place: messages built earlier may still alias the
	// tail being replaced.
	fresh := make([]Entry, len(keep), len(keep)+len(ents))
	copy(fresh, keep)
	l.entries = append(fresh, ents...)
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
	e := l.entries[i-l.offset-1]
	rest := l.entries[i-l.offset:]
	l.entries = append(make([]Entry, 0, len(rest)+64), rest...)
	l.offset, l.offsetTerm, l.offsetTime = i, e.Term, e.Time
}

// restore resets the log to a snapshot at (index, term).
func (l *raftLog) restore(index, term uint64, time int64) {
	l.offset, l.offsetTerm, l.offsetTime = index, term, time
	l.entries = nil
	l.committed, l.applied, l.stable = index, index, index
}
