package server

import (
	"math/rand/v2"
	"time"

	"github.com/nanokv/nanokv/kvstore"
)

// evictBatch is the most keys one evict entry names: a round frees what the gauge says
// is over in entries of at most this many, so that one entry stays small and quick to
// apply.
const evictBatch = 1024

// evictRounds bounds the entries one wake-up proposes, so that a keyspace whose keys
// free less than MEMORY USAGE says cannot keep the evictor proposing without end; the
// next sample wakes it again.
const evictRounds = 16

// runEvictor makes room under maxmemory-policy: when used memory is over maxmemory it
// picks victims from this node's keyspace (kvstore.EvictionVictims) and proposes their
// deletion, on a single node or a cluster's leader (the others apply what the leader
// proposes). Redis evicts before each command; here a command over the limit goes on
// and wakes the evictor, so used memory can pass the limit by what arrives before the
// evictor's entry is applied. When there is nothing to evict (volatile policies without
// keys that expire), the gauge says so and the frontends refuse as noeviction does.
// It sleeps until the gauge wakes it: every sample over the limit under an evicting
// policy does (memlimit.Gauge.Sample), and so does a command that goes on over it.
func (s *Server) runEvictor() {
	defer s.wg.Done()
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x6e616e6f6b76))
	for {
		select {
		case <-s.stop:
			return
		case <-s.mem.Woken():
		}
		for range evictRounds {
			policy := kvstore.EvictPolicy(s.mem.Policy())
			need := s.mem.Excess()
			if policy == kvstore.EvictNone || need <= 0 || !s.decides() {
				break
			}
			victims := s.store.EvictionVictims(policy, s.mem.Samples(), need, evictBatch, time.Now().UnixMilli(), rnd)
			if len(victims) == 0 {
				s.mem.Evicted(0, false)
				break
			}
			if !s.proposeOwn(kvstore.AppendEvict(nil, victims), "eviction") {
				break
			}
			var freed int64
			for _, v := range victims {
				freed += int64(v.Bytes)
			}
			s.mem.Evicted(freed, true)
		}
	}
}
