//go:build !amd64

package kvstore

import (
	"sync/atomic"
	"unsafe"
)

// Go has no prefetch instruction of its own (amd64 uses one): here the prefetches are
// loads in one loop, independent of each other, so that their misses are in flight
// together. Their sum is kept where the compiler cannot drop them.

// prefetch loads each of ents.
func prefetch(ents []*kent) {
	var sum uint64
	for _, e := range ents {
		// An entry of 48 bytes may straddle two cache lines.
		sum += e.meta + uint64(e.k[inlineKey-1])
	}
	prefetchSink.Add(sum)
}

// prefetchTables loads the header of each of ts.
func prefetchTables(ts []*keyTable) {
	var sum uint64
	for _, t := range ts {
		sum += uint64(len(t.ents))
	}
	prefetchSink.Add(sum)
}

// prefetchBytes loads the first byte at each of ptrs.
func prefetchBytes(ptrs []unsafe.Pointer) {
	var sum uint64
	for _, p := range ptrs {
		sum += uint64(*(*byte)(p))
	}
	prefetchSink.Add(sum)
}

var prefetchSink atomic.Uint64
