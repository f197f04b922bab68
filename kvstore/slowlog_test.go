package kvstore

import (
	"testing"
	"time"
)

// TestSlowlogMeasures checks the times the slow log gives its commands: an applied
// script's is within the time measured around its Apply, and a command a frontend times
// across a sleep takes at least the sleep; under the threshold nothing is logged.
func TestSlowlogMeasures(t *testing.T) {
	h := newHarness(t)
	h.s.SetSlowlog(0, 128)
	const script = "local n = 0 for i = 1, tonumber(ARGV[1]) do n = n + i end return n"
	t0 := time.Now()
	h.applied("EVAL", script, "0", "300000")
	outer := time.Since(t0).Microseconds()
	got := h.s.SlowlogGet(-1)
	if len(got) != 1 || got[0].Args[0] != "EVAL" || got[0].Micros < 1 || got[0].Micros > outer {
		t.Fatalf("after an Apply of a script that took %d µs, the slow log holds %+v", outer, got)
	}

	h.s.SetSlowlog(10_000, 128)
	h.s.SlowlogReset()
	spec, args := Lookup([]byte("KEYS")), [][]byte{[]byte("KEYS"), []byte("*")} // not a fast command: timed
	for _, sleep := range []time.Duration{0, 20 * time.Millisecond} {
		t0 := time.Now()
		start := h.s.SlowStart(spec, args)
		time.Sleep(sleep)
		h.s.SlowEnd(start, args, "127.0.0.1:1", "")
		outer := time.Since(t0).Microseconds()
		got := h.s.SlowlogGet(-1)
		switch {
		case sleep == 0 && len(got) != 0:
			t.Fatalf("a command of %d µs at most was logged past 10 ms: %+v", outer, got)
		case sleep > 0 && (len(got) != 1 || got[0].Micros < sleep.Microseconds() || got[0].Micros > outer):
			t.Fatalf("a command across a sleep of %v (%d µs around it): %+v", sleep, outer, got)
		}
	}
}
