package fastclock

import (
	"testing"
	"time"
)

// measure times a sleep of d with the package's clock, and returns that and the time
// the monotonic clock saw around it.
func measure(d time.Duration) (got, outer time.Duration) {
	t0 := time.Now()
	r0 := Now()
	time.Sleep(d)
	r1 := Now()
	return time.Duration(Nanos(r0, r1)), time.Since(t0)
}

// checkAgrees requires the package's clock to see a sleep as the monotonic clock does:
// at least the sleep, at most what the monotonic clock saw around it (each within a
// part in a hundred, the calibration's error while the process is young being far less).
func checkAgrees(t *testing.T) {
	t.Helper()
	for _, d := range []time.Duration{2 * time.Millisecond, 20 * time.Millisecond, 60 * time.Millisecond} {
		got, outer := measure(d)
		if got < d*99/100 || got > outer*101/100 {
			t.Errorf("a sleep of %v measured %v (the monotonic clock saw %v around it)", d, got, outer)
		}
	}
}

func TestClockAgreesWithMonotonic(t *testing.T) {
	t.Logf("time-stamp counter in use: %v", useTSC)
	checkAgrees(t) // also across the calibration, 50 ms after the package started
	if useTSC && scale.Load() == 0 {
		t.Error("the counter's rate was not fixed after the calibration span")
	}
	checkAgrees(t)
}

func TestMonotonicFallback(t *testing.T) {
	saved := useTSC
	useTSC = false
	defer func() { useTSC = saved }()
	checkAgrees(t)
}

func TestReadings(t *testing.T) {
	for i := 0; i < 1000; i++ {
		if Now() == 0 {
			t.Fatal("a reading of 0, which callers take for no reading")
		}
	}
	a := Now()
	b := Now()
	if Nanos(b, a) != 0 && Nanos(a, b) == 0 {
		t.Errorf("readings go backwards: %d then %d", a, b)
	}
	if n := Nanos(a+1000, a); n != 0 {
		t.Errorf("an end before the start measured %d ns, want 0", n)
	}
}

// The benchmarks behind the package comment: a random increment over a table of 64
// MiB, alone, with a monotonic clock read after each, and with a reading of this clock.
var table = make([]uint64, 8<<20)

func missing(b *testing.B, read func() int64) {
	x, sum := uint64(12345), int64(0)
	for i := 0; i < b.N; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		table[(x>>20)&(8<<20-1)]++
		sum += read()
	}
	sink = sum
}

var sink int64

func BenchmarkReadMissingNone(b *testing.B) { missing(b, func() int64 { return 0 }) }
func BenchmarkReadMissingSince(b *testing.B) {
	missing(b, func() int64 { return int64(time.Since(base)) })
}
func BenchmarkReadMissingNow(b *testing.B) { missing(b, Now) }
func BenchmarkNow(b *testing.B) {
	for i := 0; i < b.N; i++ {
		sink += Now()
	}
}
