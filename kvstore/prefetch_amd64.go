package kvstore

// prefetch asks the processor for each of ents (PREFETCHT0 on both cache lines an entry
// may straddle) and returns at once: the misses, and their page walks, proceed while
// Apply runs the commands before them.
//
//go:noescape
func prefetch(ents []*kent)
