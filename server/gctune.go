package server

import (
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
//	GOGC = 100 * max(minHeadroom, headroomRatio*live) / live
//
// It leaves GOGC alone when the user set the environment variable.
const (
	minHeadroom   = 32 << 20
	headroomRatio = 0.25
	minPercent    = 10
	maxPercent    = 400
)

func gcPercentFor(live uint64) int {
	if live == 0 {
		return maxPercent
	}
	headroom := max(float64(minHeadroom), headroomRatio*float64(live))
	p := int(100 * headroom / float64(live))
	return min(max(p, minPercent), maxPercent)
}

// gcTuner re-computes the GC percent after every collection: a finalizer on a sentinel
// object runs once per GC cycle and re-arms itself, so the percent follows the live heap
// as it grows instead of lagging behind a timer while a bulk load runs.
type gcTuner struct {
	stop   <-chan struct{}
	sample []metrics.Sample
	last   int
}

type gcSentinel struct{ t *gcTuner }

// startGCTuner starts tuning until stop is closed.
func startGCTuner(stop <-chan struct{}) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	t := &gcTuner{stop: stop, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}, last: -1}
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
	if p := gcPercentFor(t.sample[0].Value.Uint64()); p != t.last {
		debug.SetGCPercent(p)
		t.last = p
	}
}
