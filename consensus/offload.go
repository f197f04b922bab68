package consensus

import (
	"sync/atomic"
	"time"

	"github.com/nanokv/nanokv/consensus/raft"
	"github.com/nanokv/nanokv/nicoffload"
)

// Offload mode (--mode offload): the common case of replication runs in a
// nicoffload.Engine, driven by raft.Offload (Waverunner's split: the software core keeps
// elections, heartbeats, reads, membership, snapshots and every repair; the engine
// carries new entries). The loop owns the driver as it owns the core and plays its host:
// the UDP transport carries the datagrams, and the engine's commit answers the waiting
// proposers, before the core's.
type OffloadConfig struct {
	Engine nicoffload.Config
	// Send hands datagrams to the transport; it must not block.
	Send func(dgs []nicoffload.Outgoing)
}

// startOffload creates the driver beside the core (the loop calls it once n.r exists).
func (n *RaftNode) startOffload(cfg OffloadConfig) {
	// The engine sees datagrams only through StepDatagrams, which copies them: it may
	// keep those copies instead of copying them again.
	cfg.Engine.KeepData = true
	n.offCfg = cfg
	n.off = raft.NewOffload(n.r, n.cfg.ID, cfg.Engine, raft.OffloadHost{
		Send: func(dgs []nicoffload.Outgoing) {
			// A leader's datagrams carry its commit index: whatever a follower answers
			// once it hears of it, a lease read here must see (leaseRead). The engine's
			// own commits are raised by Release, which comes first.
			n.raiseReadIndex(n.r.Committed())
			cfg.Send(dgs)
		},
		Release: n.releaseOffloaded,
		Drop:    n.failOffloaded,
		Logf:    n.cfg.Logf,
	})
}

// StepDatagrams delivers datagrams from the offload transport. The packets are copied:
// the transport reuses its buffers once this returns. Like Step it never blocks.
func (n *RaftNode) StepDatagrams(pkts []nicoffload.Packet) {
	if n.dgramc == nil {
		return
	}
	select {
	case n.dgramc <- copyPackets(pkts):
	default:
	}
}

// copyPackets copies pkts out of the transport's buffers in three allocations, whatever
// the number of entries: the packets, their entries and all the entries' data, each
// contiguous. The copy is the only one a follower makes: the engine keeps the entries it
// appends as they are here (nicoffload.Config.KeepData), and so do the Raft log and the
// applier. Copied entry by entry, it was the largest item (18%) of a follower's
// allocation profile under redis-benchmark -P 1; BenchmarkCopyPackets: 15 allocations
// -> 3.
func copyPackets(pkts []nicoffload.Packet) []nicoffload.Packet {
	nents, size := 0, 0
	for i := range pkts {
		nents += len(pkts[i].Entries)
		for j := range pkts[i].Entries {
			size += len(pkts[i].Entries[j].Data)
		}
	}
	cp := make([]nicoffload.Packet, len(pkts))
	var ents []nicoffload.Entry
	var data []byte
	if nents > 0 {
		ents = make([]nicoffload.Entry, 0, nents)
		data = make([]byte, 0, size)
	}
	for i := range pkts {
		cp[i] = pkts[i]
		if len(pkts[i].Entries) == 0 {
			continue
		}
		first := len(ents)
		for _, e := range pkts[i].Entries {
			off := len(data)
			data = append(data, e.Data...)
			e.Data = data[off:len(data):len(data)]
			ents = append(ents, e)
		}
		cp[i].Entries = ents[first:len(ents):len(ents)]
	}
	return cp
}

// monoNow is the driver's clock, in nanoseconds: only differences matter, so it reads
// the monotonic clock alone (time.Now reads the wall clock too).
func monoNow() int64 { return int64(time.Since(monoBase)) }

var monoBase = time.Now()

// releaseOffloaded answers the proposers whose entries the engine committed: blind
// writes are acknowledged now; the entries reach the applier when the core commits them.
func (n *RaftNode) releaseOffloaded(from, to uint64) {
	n.raiseReadIndex(to) // before any of them is acknowledged: see leaseRead
	for idx := from; idx <= to; idx++ {
		if p := n.pending[idx]; p != nil && !p.released && p.term == n.r.Term() {
			p.released = true
			p.finish(nil)
		}
	}
}

// failOffloaded fails the proposals of entries that never reached the log.
func (n *RaftNode) failOffloaded(ents []raft.Entry) {
	for _, e := range ents {
		if p := n.pending[e.Index]; p != nil && !p.released {
			delete(n.pending, e.Index)
			p.finish(ErrDropped)
		}
	}
}

// proposeOffloaded proposes through the engine; false when it is not accelerating (the
// caller then proposes through the core).
func (n *RaftNode) proposeOffloaded(typ raft.EntryType, batch []*proposal, data [][]byte) bool {
	if n.off == nil {
		return false
	}
	first, ok := n.off.Propose(monoNow(), n.cfg.Now(), typ, data...)
	if !ok {
		return false
	}
	for i, p := range batch {
		p.index, p.term = first+uint64(i), n.r.Term()
		n.pending[p.index] = p
	}
	return true
}

// closeOffload ends the accelerated term for software's business (why: a transfer, a
// membership change).
func (n *RaftNode) closeOffload(why string) {
	if n.off != nil {
		n.off.Close(monoNow(), false, why)
	}
}

// offloadStatus is the engine's state for Status, but for its counters, which Status
// reads from engStats (the loop publishes it).
func (n *RaftNode) offloadStatus() *OffloadStatus {
	o := n.off
	if o == nil {
		return nil
	}
	st := o.Stats()
	return &OffloadStatus{Accelerated: o.Accelerated(), Opened: st.Opened, Closed: st.Closed,
		Fallbacks: st.Fallbacks, Detached: st.Detached, Rejoined: st.Rejoined}
}

// sameOffload reports whether the published cur still shows the driver's state (all
// but the engine's counters).
func sameOffload(cur *OffloadStatus, o *raft.Offload) bool {
	if cur == nil || o == nil {
		return cur == nil && o == nil
	}
	st := o.Stats()
	return cur.Accelerated == o.Accelerated() && cur.Opened == st.Opened &&
		cur.Closed == st.Closed && cur.Fallbacks == st.Fallbacks && cur.Detached == st.Detached &&
		cur.Rejoined == st.Rejoined
}

// engineCounters holds the engine's counters for Status, stored by the loop after every
// iteration and read by anyone. Each counter is read atomically; a reader may see some
// from one iteration and some from the next.
type engineCounters struct {
	sealed, held, sent, replayed, gapRequests, dropped, acks, duplicates, staleDropped, lazySends atomic.Uint64
}

func (c *engineCounters) store(s nicoffload.Stats) {
	c.sealed.Store(s.Sealed)
	c.held.Store(s.Held)
	c.sent.Store(s.Sent)
	c.replayed.Store(s.Replayed)
	c.gapRequests.Store(s.GapRequests)
	c.dropped.Store(s.Dropped)
	c.acks.Store(s.Acks)
	c.duplicates.Store(s.Duplicates)
	c.staleDropped.Store(s.StaleDropped)
	c.lazySends.Store(s.LazySends)
}

func (c *engineCounters) load() nicoffload.Stats {
	return nicoffload.Stats{Sealed: c.sealed.Load(), Held: c.held.Load(), Sent: c.sent.Load(), Replayed: c.replayed.Load(),
		GapRequests: c.gapRequests.Load(), Dropped: c.dropped.Load(), Acks: c.acks.Load(),
		Duplicates: c.duplicates.Load(), StaleDropped: c.staleDropped.Load(), LazySends: c.lazySends.Load()}
}

// OffloadStatus is what INFO raft shows of the offload engine.
type OffloadStatus struct {
	Accelerated                                   bool
	Opened, Closed, Fallbacks, Detached, Rejoined uint64
	Engine                                        nicoffload.Stats
}
