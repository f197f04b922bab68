package kvstore

import "unsafe"

// prefetch48 asks the processor for the 48 bytes at each of the n pointers at ptrs
// (PREFETCHT0 on both cache lines they may straddle) and returns at once: the misses,
// and their page walks, proceed while the caller goes on (Apply with the commands before
// them, a snapshot with the page before).
//
//go:noescape
func prefetch48(ptrs unsafe.Pointer, n int)

// prefetch prefetches each of ents.
func prefetch(ents []*kent) {
	if len(ents) > 0 {
		prefetch48(unsafe.Pointer(&ents[0]), len(ents))
	}
}

// prefetchTables prefetches the header of each of ts, whose entries array the
// prefetcher reads next.
func prefetchTables(ts []*keyTable) {
	if len(ts) > 0 {
		prefetch48(unsafe.Pointer(&ts[0]), len(ts))
	}
}

// prefetchBytes prefetches the first bytes (up to 48) at each of ptrs.
func prefetchBytes(ptrs []unsafe.Pointer) {
	if len(ptrs) > 0 {
		prefetch48(unsafe.Pointer(&ptrs[0]), len(ptrs))
	}
}

// An entry and a table's header are 48 bytes, which prefetch48 covers (a constant that
// would underflow, and so not compile, were either larger).
const (
	_ = 48 - unsafe.Sizeof(kent{})
	_ = 48 - unsafe.Sizeof(keyTable{})
)
