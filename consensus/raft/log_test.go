package raft

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// BenchmarkLogAppend1M appends 1M entries to the log in batches of 16, as a member that
// has not compacted for a while holds them (64 MiB of WAL at ~60 bytes an entry), and
// reports the longest single append: the pause the Raft loop takes when the log's storage
// grows.
func BenchmarkLogAppend1M(b *testing.B) {
	data := make([]byte, 64)
	var longest time.Duration
	for range b.N {
		l := &raftLog{}
		for i := uint64(1); i <= 1<<20; i += 16 {
			var ents [16]Entry
			for j := range ents {
				ents[j] = Entry{Index: i + uint64(j), Term: 1, Data: data}
			}
			t := time.Now()
			l.append(ents[:]...)
			longest = max(longest, time.Since(t))
		}
	}
	b.ReportMetric(float64(longest.Microseconds())/1000, "max-append-ms")
}

// The chunked log against the plainest model of it, a slice of every entry after the
// offset: random appends, conflicting appends (truncations), compactions and slices, many
// across chunk boundaries, must read back the same entries.
func TestLogMatchesSliceModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	l := &raftLog{}
	var model []Entry // model[k] is entry l.offset+1+k
	term := uint64(1)
	check := func(step int) {
		t.Helper()
		if l.lastIndex() != l.offset+uint64(len(model)) {
			t.Fatalf("step %d: last index %d, model %d", step, l.lastIndex(), l.offset+uint64(len(model)))
		}
		for _, k := range []int{0, len(model) / 2, len(model) - 1, rng.IntN(len(model) + 1)} {
			if k < 0 || k >= len(model) {
				continue
			}
			if got := *l.at(model[k].Index); got.Index != model[k].Index || got.Term != model[k].Term || got.Time != model[k].Time {
				t.Fatalf("step %d: entry %d is %+v, model %+v", step, model[k].Index, got, model[k])
			}
		}
		if len(model) == 0 {
			return
		}
		lo := l.offset + 1 + uint64(rng.IntN(len(model)))
		hi := lo + uint64(rng.IntN(int(l.lastIndex()-lo)+1))
		maxBytes := noLimit
		if rng.IntN(2) == 0 {
			maxBytes = rng.IntN(64 * 10000)
		}
		got := l.slice(lo, hi, maxBytes)
		want := model[lo-l.offset-1 : hi-l.offset]
		size := 0
		for i, e := range want {
			size += len(e.Data)
			if i > 0 && size > maxBytes {
				want = want[:i]
				break
			}
		}
		if len(got) != len(want) {
			t.Fatalf("step %d: slice [%d,%d] max %d has %d entries, want %d", step, lo, hi, maxBytes, len(got), len(want))
		}
		for i := range got {
			if got[i].Index != want[i].Index || got[i].Term != want[i].Term {
				t.Fatalf("step %d: slice [%d,%d] entry %d is %d/%d, want %d/%d", step, lo, hi, i, got[i].Index, got[i].Term, want[i].Index, want[i].Term)
			}
		}
	}
	data := make([]byte, 64)
	for step := range 3000 {
		switch op := rng.IntN(10); {
		case op < 6: // append up to 3 chunks' worth
			ents := entriesFrom(l.lastIndex()+1, 1+rng.IntN(3*chunkLen), func(i uint64) Entry {
				return Entry{Index: i, Term: term, Time: int64(step), Data: data}
			})
			l.append(ents...)
			model = append(model, ents...)
		case op < 8 && len(model) > 0: // a new term overwrites an uncommitted suffix
			k, first, ok := uncommittedFrom(l, model, rng)
			if !ok {
				continue
			}
			term++
			ents := entriesFrom(first, 1+rng.IntN(chunkLen), func(i uint64) Entry {
				return Entry{Index: i, Term: term, Time: int64(step), Data: data}
			})
			old := l.slice(first, l.lastIndex(), 1<<30) // a message built earlier
			oldTerm := old[0].Term
			l.truncateAndAppend(ents)
			model = append(model[:k:k], ents...)
			if old[0].Term != oldTerm {
				t.Fatalf("step %d: truncation wrote into entries handed out before", step)
			}
		case len(model) > 0: // commit, apply and compact a prefix
			k := rng.IntN(len(model))
			i := model[k].Index
			l.commitTo(max(l.committed, i))
			l.applied = max(l.applied, i)
			l.compact(i)
			if l.offsetTerm != model[k].Term {
				t.Fatalf("step %d: compacted to %d with term %d, want %d", step, i, l.offsetTerm, model[k].Term)
			}
			model = model[k+1:]
		}
		check(step)
	}
}

// entriesFrom makes n entries, of indexes from on, as mk makes each.
func entriesFrom(from uint64, n int, mk func(index uint64) Entry) []Entry {
	ents := make([]Entry, n)
	for i := range ents {
		ents[i] = mk(from + uint64(i))
	}
	return ents
}

// uncommittedFrom draws the entry of model (entry l.offset+1 first) from which a model
// test overwrites the log: its place in model and its index, and false when it is
// committed.
func uncommittedFrom(l *raftLog, model []Entry, rng *rand.Rand) (int, uint64, bool) {
	k := rng.IntN(len(model))
	return k, model[k].Index, model[k].Index > l.committed
}

// A log that keeps little data (a reader and a small cache) against a model of every
// entry's data: random appends, truncations, persistence, applies, evictions and
// compactions. Only entries both applied and persisted lose their data, the cache's
// count of bytes stays exact, eviction never writes into entries handed out before,
// and every read, from memory or the reader, returns the model's entries.
func TestLogEvictsAppliedPersistedDataAndReadsItBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	d := &disk{}
	l := &raftLog{reader: d, cacheBytes: 4096}
	var model []Entry // model[k] is entry l.offset+1+k, with its data
	term := uint64(1)
	payload := func(index, term uint64) []byte {
		b := make([]byte, 1+rng.IntN(300))
		for i := range b {
			b[i] = byte(index*31 + term + uint64(i))
		}
		return b
	}
	persist := func() { // the driver writes what is not yet stable
		if l.stable < l.lastIndex() {
			d.persist(Ready{Entries: l.slice(l.stable+1, l.lastIndex(), noLimit)})
			l.stable = l.lastIndex()
		}
	}
	evictions := 0
	for step := range 4000 {
		switch op := rng.IntN(10); {
		case op < 4:
			ents := entriesFrom(l.lastIndex()+1, 1+rng.IntN(40), func(i uint64) Entry {
				return Entry{Index: i, Term: term, Data: payload(i, term)}
			})
			l.append(ents...)
			model = append(model, ents...)
		case op < 5 && len(model) > 0: // a new term replaces an uncommitted suffix
			k, first, ok := uncommittedFrom(l, model, rng)
			if !ok {
				continue
			}
			term++
			ents := entriesFrom(first, 1+rng.IntN(20), func(i uint64) Entry {
				return Entry{Index: i, Term: term, Data: payload(i, term)}
			})
			l.truncateAndAppend(ents)
			model = append(model[:k:k], ents...)
		case op < 6:
			persist()
		case op < 9 && l.committed < l.lastIndex(): // commit and apply some, then Advance
			i := l.committed + 1 + uint64(rng.IntN(int(l.lastIndex()-l.committed)))
			l.commitTo(i)
			handed := l.slice(l.applied+1, l.committed, noLimit) // Ready.CommittedEntries
			before := make([]int, len(handed))
			for j := range handed {
				before[j] = len(handed[j].Data)
			}
			l.applied = l.committed
			old := l.evicted
			l.shrink()
			if l.evicted > old {
				evictions++
				freed := 0 // a copy of chunks is worth a quarter of the cache at least
				for i := max(old, l.offset) + 1; i <= l.evicted; i++ {
					freed += len(model[i-model[0].Index].Data)
				}
				if freed < l.cacheBytes/4 {
					t.Fatalf("step %d: evicted %d bytes, under a quarter of the cache", step, freed)
				}
			}
			for j := range handed {
				if len(handed[j].Data) != before[j] {
					t.Fatalf("step %d: eviction changed entry %d, handed out before", step, handed[j].Index)
				}
			}
		case rng.IntN(8) == 0 && min(l.applied, l.stable) > l.offset: // compact a prefix
			i := l.offset + 1 + uint64(rng.IntN(int(min(l.applied, l.stable)-l.offset)))
			l.compact(i)
			model = model[i-model[0].Index+1:]
			d.entries = slices.DeleteFunc(d.entries, func(e Entry) bool { return e.Index <= i })
		}
		// The invariants, and every entry as a read returns it.
		if l.evicted > min(l.applied, l.stable) && l.evicted > l.offset {
			t.Fatalf("step %d: evicted %d past applied %d or stable %d", step, l.evicted, l.applied, l.stable)
		}
		cached := 0
		for _, e := range model {
			inMemory := l.at(e.Index).Data
			if e.Index <= l.evicted {
				if inMemory != nil {
					t.Fatalf("step %d: entry %d is evicted (to %d) but holds its data", step, e.Index, l.evicted)
				}
				continue
			}
			cached += len(inMemory)
		}
		if cached != l.cached {
			t.Fatalf("step %d: %d bytes cached, count says %d", step, cached, l.cached)
		}
		if len(model) == 0 {
			continue
		}
		lo := model[rng.IntN(len(model))].Index
		got, err := l.read(lo, l.lastIndex(), rng.IntN(2000))
		if err != nil {
			t.Fatalf("step %d: read from %d: %v", step, lo, err)
		}
		for j, e := range got {
			want := model[e.Index-model[0].Index]
			if e.Index != lo+uint64(j) || e.Term != want.Term || !slices.Equal(e.Data, want.Data) {
				t.Fatalf("step %d: read from %d: entry %d (term %d, %d bytes) differs from the model's", step, lo, e.Index, e.Term, len(e.Data))
			}
		}
	}
	if evictions < 100 || d.reads == 0 {
		t.Fatalf("too little exercised: %d evictions, %d entries read back", evictions, d.reads)
	}
}
