package kvstore

import (
	"strings"
	"testing"
)

// TestLatencyMonitor keeps Redis's rules: samples under the threshold are dropped, one
// sample per second (the largest), the latest 160 seconds, the largest ever apart.
func TestLatencyMonitor(t *testing.T) {
	s := New()
	m := &s.latency
	m.addSample("command", 50, 1000) // off: threshold 0
	if got := s.LatencyLatest(); len(got) != 0 {
		t.Fatalf("a sample with the monitor off: %v", got)
	}
	if !strings.HasPrefix(s.LatencyDoctor(), "I'm sorry, Dave, I can't do that.") {
		t.Fatalf("doctor, off: %q", s.LatencyDoctor())
	}
	s.SetLatencyThreshold(10)
	if !strings.HasPrefix(s.LatencyDoctor(), "Dave, no latency spike was observed") {
		t.Fatalf("doctor, no spike: %q", s.LatencyDoctor())
	}
	m.addSample("command", 9, 1000) // under the threshold
	m.addSample("command", 20, 1000)
	m.addSample("command", 15, 1000) // same second, smaller: kept 20
	m.addSample("command", 30, 1001)
	if got, want := s.LatencyHistory("command"), [][2]int64{{1000, 20}, {1001, 30}}; !equalPairs(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	if got := s.LatencyLatest(); len(got) != 1 || got[0] != (LatencyEvent{"command", 1001, 30, 30}) {
		t.Fatalf("latest %v", got)
	}
	for i := range int64(200) {
		m.addSample("command", 10+i%3, 2000+i)
	}
	h := s.LatencyHistory("command")
	if len(h) != latencyTSLen || h[0][0] != 2040 || h[latencyTSLen-1][0] != 2199 {
		t.Fatalf("after 200 seconds: %d samples from %v to %v", len(h), h[0], h[len(h)-1])
	}
	if got := s.LatencyLatest()[0]; got.Max != 30 || got.Latest != 10+199%3 {
		t.Fatalf("latest after 200 seconds: %+v", got)
	}
	n, avg, mad, period := m.events["command"].analyze(2199 + 10)
	if n != 160 || avg != 11 || mad != 0 || period != 169 {
		t.Fatalf("analyze: %d samples, avg %d, mad %d, period %d", n, avg, mad, period)
	}
	report := s.LatencyDoctor()
	for _, want := range []string{"Dave, I have observed latency spikes", "1. command: 160 latency spikes (average 11ms, mean deviation 0ms, period ",
		"Worst all time event 30ms.", "- Check your Slow Log", "- Deleting, expiring or evicting"} {
		if !strings.Contains(report, want) {
			t.Errorf("doctor lacks %q:\n%s", want, report)
		}
	}
	if n := s.LatencyReset("nosuch", "command"); n != 1 || len(s.LatencyLatest()) != 0 {
		t.Fatalf("reset: %d, then %v", n, s.LatencyLatest())
	}
}

func equalPairs(a, b [][2]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
