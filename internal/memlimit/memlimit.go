// Package memlimit is Redis's maxmemory for a Go process: a limit on the memory the
// keyspace and everything else on the heap may use, past which the frontends refuse
// the commands that would use more (Redis's noeviction policy; memcached's -M), or
// the node evicts keys (an evicting maxmemory-policy: the gauge wakes the evictor and
// credits what it frees).
//
// Used memory is INFO's used_memory: the heap's objects, read from runtime/metrics,
// which reads them without stopping the world. A Go heap also holds garbage that the
// next collection frees (up to as much again as the live data, with GOGC=100), which
// Redis's allocator does not count; so when the heap is over the limit while the last
// collection found it under, the gauge collects first and decides after. While over, it
// collects once a second too: a client that deletes keys to get under the limit sees
// its deletes count within a second, although writes refused allocate too little to
// bring the next collection on.
//
// The gauge samples every SamplePeriod, as Redis's serverCron samples its rates; a
// command decides on the last sample. Whether to refuse is decided where a command
// enters, never while it is applied, and what to evict is decided by one node and sent
// through the log: replicas apply the same log whatever their memory.
package memlimit

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// SamplePeriod is how often Run samples the heap.
const SamplePeriod = 100 * time.Millisecond

// Gauge tracks the heap against a limit. The zero value has no limit; a nil *Gauge is
// never over.
type Gauge struct {
	limit atomic.Int64 // bytes; 0: none
	over  atomic.Bool
	used  atomic.Uint64
	// policy is the maxmemory-policy, as its user numbers them; 0 evicts nothing.
	// evictFailed: the evictor found nothing to evict while over the limit.
	policy      atomic.Int32
	evictFailed atomic.Bool
	keySamples  atomic.Int32 // maxmemory-samples; 0: DefaultSamples
	// credit is what evictions freed since the last collection: garbage until then,
	// which used still counts. creditGC is the collection count it was given at.
	credit   atomic.Int64
	creditGC atomic.Uint64
	wake     chan struct{}
	wakeOnce sync.Once

	mu      sync.Mutex // one sample at a time
	samples []metrics.Sample
	lastGC  time.Time // the last collection Sample ran
	// overSince is when used memory last went over the limit (zero while under), and
	// overTotal how long it was over before that (INFO's eviction_exceeded_time)
	overSince time.Time
	overTotal time.Duration
}

// gcEvery is how often a gauge that stays over the limit collects to learn whether
// deletes brought the live heap under it.
const gcEvery = time.Second

// Limit is the limit in bytes, 0 for none (Redis's maxmemory).
func (g *Gauge) Limit() int64 {
	if g == nil {
		return 0
	}
	return g.limit.Load()
}

// SetLimit sets the limit (0: none) and samples at once, so that the next command
// sees the new limit.
func (g *Gauge) SetLimit(n int64) {
	g.limit.Store(max(n, 0))
	g.Sample()
}

// Over reports whether used memory was over the limit at the last sample.
func (g *Gauge) Over() bool { return g != nil && g.over.Load() }

// Refusing reports whether commands that take memory are refused: used memory is over
// the limit, and the policy evicts nothing or the evictor found nothing to evict
// (Redis's EVICT_FAIL). Under an evicting policy a command goes on while the evictor
// makes room.
func (g *Gauge) Refusing() bool {
	if !g.Over() {
		return false
	}
	if g.policy.Load() == 0 || g.evictFailed.Load() {
		return true
	}
	g.Wake()
	return false
}

// SetPolicy sets the maxmemory-policy (0: none evicts).
func (g *Gauge) SetPolicy(p int) {
	g.policy.Store(int32(p))
	g.evictFailed.Store(false)
}

// DefaultSamples is maxmemory-samples until SetSamples: Redis's default.
const DefaultSamples = 5

// SetSamples sets maxmemory-samples: how many keys a sampling policy compares for each
// victim.
func (g *Gauge) SetSamples(n int) { g.keySamples.Store(int32(max(n, 1))) }

// Samples is maxmemory-samples.
func (g *Gauge) Samples() int {
	if g == nil || g.keySamples.Load() == 0 {
		return DefaultSamples
	}
	return int(g.keySamples.Load())
}

// Policy is the maxmemory-policy SetPolicy set.
func (g *Gauge) Policy() int {
	if g == nil {
		return 0
	}
	return int(g.policy.Load())
}

// Excess is how far used memory, less what evictions freed since the last collection,
// is over the limit: what the evictor must free (0 or less: nothing).
func (g *Gauge) Excess() int64 {
	limit := g.limit.Load()
	if limit == 0 || !g.over.Load() {
		return 0
	}
	return int64(g.used.Load()) - g.credit.Load() - limit
}

// Evicted records bytes that evictions freed, which count as free until the next
// collection frees them; and whether the evictor found nothing to evict (ok false).
func (g *Gauge) Evicted(bytes int64, ok bool) {
	g.evictFailed.Store(!ok)
	if bytes > 0 {
		g.credit.Add(bytes)
		g.Sample()
	}
}

// Woken is signalled when the evictor should look at the gauge: a sample found it over
// the limit, or a command went on over it.
func (g *Gauge) Woken() <-chan struct{} {
	g.wakeOnce.Do(func() { g.wake = make(chan struct{}, 1) })
	return g.wake
}

// Wake signals Woken without waiting.
func (g *Gauge) Wake() {
	g.wakeOnce.Do(func() { g.wake = make(chan struct{}, 1) })
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// OverTime is how long used memory has been over the limit since it last went over
// (0 while under) and in all since the gauge was made, as of the last sample: Redis's
// current_ and total_eviction_exceeded_time.
func (g *Gauge) OverTime() (current, total time.Duration) {
	if g == nil {
		return 0, 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	total = g.overTotal
	if !g.overSince.IsZero() {
		current = time.Since(g.overSince)
		total += current
	}
	return current, total
}

// Used is the heap's objects at the last sample, in bytes.
func (g *Gauge) Used() uint64 {
	if g == nil {
		return 0
	}
	return g.used.Load()
}

// Sample reads the heap and decides whether it is over the limit.
func (g *Gauge) Sample() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.samples == nil {
		g.samples = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	}
	used, live, cycles := g.read()
	if cycles != g.creditGC.Load() {
		// a collection since the evictions: their garbage is gone from used
		g.credit.Store(0)
		g.creditGC.Store(cycles)
	}
	limit := uint64(g.limit.Load())
	if limit > 0 && used > limit && (live <= limit || time.Since(g.lastGC) >= gcEvery) && g.credit.Load() == 0 {
		// perhaps over only with the garbage counted: collect it before deciding
		runtime.GC()
		g.lastGC = time.Now()
		used, _, cycles = g.read()
		g.creditGC.Store(cycles)
	}
	g.used.Store(used)
	over := limit > 0 && int64(used)-g.credit.Load() > int64(limit)
	g.over.Store(over)
	switch now := time.Now(); {
	case over && g.overSince.IsZero():
		g.overSince = now
	case !over && !g.overSince.IsZero():
		g.overTotal += now.Sub(g.overSince)
		g.overSince = time.Time{}
	}
	if over && g.policy.Load() != 0 {
		g.Wake()
	}
}

func (g *Gauge) read() (used, live, cycles uint64) {
	metrics.Read(g.samples)
	if v := g.samples[0].Value; v.Kind() == metrics.KindUint64 {
		used = v.Uint64()
	}
	if v := g.samples[1].Value; v.Kind() == metrics.KindUint64 {
		live = v.Uint64()
	}
	if v := g.samples[2].Value; v.Kind() == metrics.KindUint64 {
		cycles = v.Uint64()
	}
	return used, live, cycles
}

// Run samples every SamplePeriod until stop is closed. Without a limit a sample is a
// read of three runtime metrics.
func (g *Gauge) Run(stop <-chan struct{}) {
	t := time.NewTicker(SamplePeriod)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			g.Sample()
		}
	}
}
