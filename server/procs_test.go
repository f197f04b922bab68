package server

import "testing"

func TestProcTunerFollowsSaturation(t *testing.T) {
	steps := []struct {
		busy float64
		want int
	}{
		{0.90, 1}, // -P 1 load fits in one P
		{0.99, 1}, // one saturated window is not enough
		{0.93, 1},
		{0.99, 1},
		{0.99, 2}, // two in a row: add the other P
		{1.15, 2},
		{0.94, 2}, // below procsDownBusy: one ...
		{1.02, 2}, // ... busy again: the count starts over
		{0.94, 2},
		{0.93, 2},
		{0.92, 1}, // three in a row: the work fits in one P
		{0.99, 1},
		{0.99, 2},
		{0.10, 1}, // the load stopped
	}
	tu := &procTuner{max: 2, cur: 1}
	for i, s := range steps {
		if got := tu.next(s.busy); got != s.want {
			t.Fatalf("step %d (busy %.2f): %d Ps, want %d", i, s.busy, got, s.want)
		}
	}
}
