package server

import "testing"

// The tuner's decisions, window by window: busy is the cores the process kept busy,
// rate what it delivered (any unit).
func TestProcTunerKeepsWhatDelivers(t *testing.T) {
	type step struct {
		busy, rate float64
		want       int
	}
	repeat := func(n int, s step) []step {
		out := make([]step, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	run := func(name string, steps ...[]step) {
		t.Helper()
		tu := newProcTuner(2)
		i := 0
		for _, part := range steps {
			for _, s := range part {
				if got := tu.next(s.busy, s.rate); got != s.want {
					t.Fatalf("%s: step %d (busy %.2f, rate %.0f): %d Ps, want %d", name, i, s.busy, s.rate, got, s.want)
				}
				i++
			}
		}
	}
	// Pipelined load: one P saturates; two deliver more (measured over two windows)
	// and stay. A trial of one P every hold loses, and the hold doubles.
	run("pipelined",
		[]step{{0.9, 600, 1}, {0.99, 700, 2}, {1.2, 900, 2}, {1.2, 900, 2}},
		repeat(procsMinHold-1, step{1.2, 900, 2}),
		[]step{{1.2, 900, 1}, {0.99, 700, 1}, {0.99, 700, 2}},
		repeat(2*procsMinHold-1, step{1.2, 900, 2}),
		[]step{{1.2, 900, 1}, {0.99, 880, 1}, {0.99, 860, 1}}, // one P holds its own now: it stays
	)
	// Request-response load: one P saturates, two deliver no more: back to one, and no
	// new trial before the hold runs out, however busy.
	run("request-response",
		[]step{{0.99, 1000, 2}, {1.05, 1020, 2}, {1.05, 1010, 1}},
		repeat(2*procsMinHold-1, step{0.99, 1000, 1}),
		[]step{{0.99, 1000, 2}},
	)
	// A load that changes ends the hold: its trial comes at once.
	run("changed load",
		[]step{{0.99, 1000, 2}, {1.05, 1010, 2}, {1.05, 1000, 1}, {0.99, 1000, 1}},
		[]step{{0.99, 3000, 2}},
	)
	// A trial judges the mean of its windows, against the mean of the two before.
	run("noisy",
		[]step{{0.95, 900, 1}, {0.99, 1100, 2}, {1.1, 950, 2}, {1.1, 1150, 2}}, // 1050 ≥ 1.03 × 1000
	)
	// Not saturated: one P, never a trial. The load stopping resets everything.
	run("light", []step{{0.9, 100, 1}, {0.95, 100, 1}, {0.99, 100, 2}, {0.1, 10, 1}, {0.9, 100, 1}})

	// A follower delivers nothing to clients: busy but below saturation it never tries
	// two Ps; saturated, a trial shows no gain, so it returns to one and holds there.
	run("follower", repeat(50, step{0.9, 0, 1}))
	run("saturated follower",
		[]step{{0.99, 0, 2}, {1.1, 0, 2}, {1.1, 0, 1}},
		repeat(2*procsMinHold-1, step{0.99, 0, 1}),
		[]step{{0.99, 0, 2}},
	)
}
