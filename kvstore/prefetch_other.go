//go:build !amd64

package kvstore

import "sync/atomic"

// prefetch reads each of ents in one loop of independent loads, so that their misses
// are in flight together (Go has no prefetch instruction of its own; amd64 uses one).
// The sum is kept where the compiler cannot drop the loads.
func prefetch(ents []*kent) {
	var sum uint64
	for _, e := range ents {
		// An entry of 48 bytes may straddle two cache lines.
		sum += e.meta + uint64(e.k[inlineKey-1])
	}
	prefetchSink.Add(sum)
}

var prefetchSink atomic.Uint64
