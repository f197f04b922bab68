package server

import (
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// An in-memory store's heap is mostly live data. Go's default GOGC=100 lets the heap grow
// to twice the live data before collecting, which for a data server doubles its RSS. The
// tuner instead aims at a fixed fraction of headroom over the live heap, but never less
// than minHeadroom, so that a small store is not collected over and over:
//
//	GOGC = 100 * max(minHeadroom, ratio*live) / live
//
// The ratio is a trade of memory for CPU, and the two kinds of process weigh it apart:
//
//   - a single node keeps 25%: its RSS is half of what it is judged by against
//     redis-server, and it has the cores to itself;
//
//   - a cluster member keeps 100% (the runtime's own default), drawn anew each cycle
//     between 60% and 140% (memberJitter). Its collections compete with its peers' for
//     the same cores, so it collects a quarter as often. And members apply the same log,
//     so they allocate alike: with a fixed percent, the four followers of a 5-member
//     cluster started marking their 280 MB heaps within 10 ms of each other, marked for
//     0.3-0.55 s on two shared cores, and 0.35 s later the leader stepped down, having
//     heard from too few of them for an election timeout. Drawn at random, the goals drift
//     apart, and a majority is out of its mark phase.
//
//     Measured (nanokv bench --full --scenarios redis, -n 1M -r 1M, 3 and 5 members,
//     offload and raft): SET -P 16 on 3 members went from 207k (offload) and 163k (raft)
//     ops/s with 25% (one run) to 253-255k and 263-269k with this (two runs); in those
//     two runs one leader change remained (5 members, raft), where the runs with 25%
//     and with a fixed 100% had one or two each.
//
// It leaves GOGC alone when the user set the environment variable.
const (
	minHeadroom    = 32 << 20
	singleHeadroom = 0.25
	memberHeadroom = 1.0
	memberJitter   = 0.4
	minPercent     = 10
	maxPercent     = 400
)

func gcPercentFor(live uint64, ratio float64) int {
	if live == 0 {
		return maxPercent
	}
	headroom := max(float64(minHeadroom), ratio*float64(live))
	p := int(100 * headroom / float64(live))
	return min(max(p, minPercent), maxPercent)
}

// gcTuner re-computes the GC percent after every collection: a finalizer on a sentinel
// object runs once per GC cycle and re-arms itself, so the percent follows the live heap
// as it grows instead of lagging behind a timer while a bulk load runs.
type gcTuner struct {
	stop   <-chan struct{}
	ratio  float64
	jitter float64 // each cycle's ratio is drawn from ratio × [1−jitter, 1+jitter]
	sample []metrics.Sample
	last   int
}

type gcSentinel struct{ t *gcTuner }

// startGCTuner starts tuning, to a headroom of ratio × the live heap (± jitter of it,
// drawn each cycle), until stop is closed.
func startGCTuner(stop <-chan struct{}, ratio, jitter float64) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	t := &gcTuner{stop: stop, ratio: ratio, jitter: jitter, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}, last: -1}
	t.tune()
	t.arm()
}

func (t *gcTuner) arm() {
	s := &gcSentinel{t: t}
	runtime.SetFinalizer(s, func(s *gcSentinel) {
		select {
		case <-s.t.stop:
			debug.SetGCPercent(100)
			return
		default:
		}
		s.t.tune()
		s.t.arm()
	})
}

func (t *gcTuner) tune() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	ratio := t.ratio * (1 + t.jitter*(2*rand.Float64()-1))
	if p := gcPercentFor(t.sample[0].Value.Uint64(), ratio); p != t.last {
		debug.SetGCPercent(p)
		t.last = p
	}
}
