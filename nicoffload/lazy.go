package nicoffload

import (
	"cmp"
	"slices"
)

// Lazy followers. A leader needs the acknowledgements of a quorum to commit; the
// followers beyond it (one of two in a three-member cluster) can get their entries a
// little later and in larger batches. Each batch costs a follower a wake-up, a receive,
// a WAL write and an acknowledgement, and the leader an acknowledgement to take in,
// whatever the batch's size, so batching them for the followers commits do not wait
// for takes that CPU off the two machines' worth of work that every write costs. Both
// replication paths do it: software Raft's transport (consensus.TCPTransport.SetLazy)
// and the engine (Config.LazyDelay).

// PickLazy chooses a leader's lazy followers among its voting followers: all but the
// (len(followers)+1)/2 that hold the most (match), which with the leader make a majority
// of the voters. Among followers that hold as much, the ones that were eager (not in
// was) stay eager, so that a lazy follower takes an eager one's place only by holding
// more: one that stops answering falls behind the lazy ones and is replaced, and two
// that keep up do not trade places at every choice.
func PickLazy(followers []uint64, match func(id uint64) uint64, was map[uint64]bool) map[uint64]bool {
	order := slices.Clone(followers)
	slices.SortFunc(order, func(a, b uint64) int {
		if ma, mb := match(a), match(b); ma != mb {
			return cmp.Compare(mb, ma) // more first
		}
		if was[a] != was[b] {
			if was[b] {
				return -1 // the eager one first
			}
			return 1
		}
		return cmp.Compare(a, b)
	})
	lazy := make(map[uint64]bool, len(order))
	for _, id := range order[(len(order)+1)/2:] {
		lazy[id] = true
	}
	return lazy
}
