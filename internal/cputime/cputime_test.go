package cputime

import "testing"

// The figure grows while the process computes (bounded: a few seconds of CPU at most).
func TestProcessGrowsWithWork(t *testing.T) {
	before := Process()
	if before <= 0 {
		t.Fatalf("Process() = %v before any work of the test; the runtime has run already", before)
	}
	after, x := before, 1
	for i := 0; after <= before && i < 100000; i++ {
		for j := range 100000 {
			x = x*31 + j
		}
		after = Process()
	}
	if after <= before {
		t.Fatalf("CPU time stayed at %v (x %d)", before, x)
	}
}
