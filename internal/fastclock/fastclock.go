// Package fastclock times short sections of code, such as one command, with the CPU's
// time-stamp counter where the kernel itself keeps time with it.
//
// The Go runtime reads the monotonic clock through the kernel's vDSO, which on x86 reads
// the counter behind a fence (rdtsc_ordered): the read waits for every load before it to
// complete. Between two commands of an applier that prefetches the keys of the next ones,
// that wait is the cache miss the prefetch was to hide: over a table of 64 MiB a random
// increment took 13 ns, 168 ns with a time.Since after each and 44 ns with a reading of
// this clock, a bare RDTSC (BenchmarkReadMissing*). Redis times its commands with the counter too
// (monotonic.c's processor clock).
//
// The counter is used only when the kernel's clocksource is "tsc": the kernel has then
// found it constant-rate and synchronized across CPUs. Otherwise, and on other
// architectures, a reading is the monotonic clock's.
package fastclock

import (
	"math"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

var (
	useTSC bool
	// base is when the package started, on the monotonic clock and the counter: the
	// counter's rate is measured from it.
	base      time.Time
	baseTicks int64
	// scale is the counter's nanoseconds per tick (float64 bits), once measured over
	// calibrateSpan; 0 before.
	scale atomic.Uint64
)

// calibrateSpan is how long after base the counter's rate is fixed: over it the error of
// the two clocks' reads (tens of ns) is a part in a million.
const calibrateSpan = 50 * time.Millisecond

func init() {
	if haveTicks {
		src, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
		useTSC = err == nil && strings.TrimSpace(string(src)) == "tsc"
	}
	// the two together: the rate is measured from this pair
	base, baseTicks = time.Now(), ticks()
}

// Now returns a reading of the clock, never 0 (callers may use 0 for "not timed").
// Readings are comparable within the process only, through Nanos.
func Now() int64 {
	if useTSC {
		return ticks() | 1
	}
	return int64(time.Since(base)) + 1
}

// Nanos returns the nanoseconds between two readings, start and end (never negative).
func Nanos(start, end int64) int64 {
	d := end - start
	if d <= 0 {
		return 0
	}
	if !useTSC {
		return d
	}
	return int64(float64(d) * nanosPerTick())
}

// Since returns the nanoseconds since the reading start.
func Since(start int64) int64 { return Nanos(start, Now()) }

// nanosPerTick is the counter's rate: measured once calibrateSpan has passed since base,
// and until then estimated from the time since base at every call (the first moments of
// a process only). The counter is read between two reads of the monotonic clock; a
// measurement that a preemption may have stretched (the two further apart than
// maxReadGap) is taken again, a few times, and not kept as the rate.
func nanosPerTick() float64 {
	if s := scale.Load(); s != 0 {
		return math.Float64frombits(s)
	}
	var s float64
	for range 3 {
		before := time.Since(base)
		t := ticks()
		after := time.Since(base)
		if t <= baseTicks || after <= 0 {
			return 1 // no tick yet: any small figure will do
		}
		s = float64(before+after) / 2 / float64(t-baseTicks)
		if after-before <= maxReadGap {
			if before >= calibrateSpan {
				scale.Store(math.Float64bits(s))
			}
			break
		}
	}
	return s
}

const maxReadGap = 20 * time.Microsecond
