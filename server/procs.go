package server

import (
	"runtime"
	"time"

	"github.com/nanokv/nanokv/internal/cputime"
	"github.com/nanokv/nanokv/internal/netserve"
)

// A single node's work is nearly serial: a connection reads, proposes and writes, and
// one applier applies. On a machine of two cores that the clients share (the machine
// this project is measured on: redis-benchmark and memcaslap are single-threaded and
// need a core of their own), a second P often costs throughput instead of adding it:
// the runtime wakes an idle thread for every batch of ready connections, and the two
// threads crowd the client's core. Measured with 50 connections: redis-benchmark -P 1
// made 82–92k ops/s at GOMAXPROCS=2 against 98–106k at 1, and memcaslap 9:1 get:set
// 121k against 139k, both with one core saturated at one P; while -P 16 SET, whose
// applier runs beside the connections, needs two (904k against 708k).
//
// Saturation alone therefore cannot decide; throughput can. The tuner runs one P until
// that P is saturated (procsUpWindows windows in a row at procsUpBusy of a core). Then
// it tries the other Ps for procsTrial windows, and keeps them only if the process then
// delivers procsUpGain more (bytes written to clients per second, by every frontend).
// While at more than one P it tries one P again every hold, and keeps it unless
// delivery drops by procsDownLoss. A trial that confirms the current setting doubles the
// hold (up to procsMaxHold); a delivery rate far from the one the trial settled on ends
// the hold, and a window with the load gone (below procsIdleBusy of a core) returns to
// one P at once. A switch takes effect at once (GOMAXPROCS stops the world for it), so
// the window after it measures the new setting.
//
// Cluster members run the same tuner with the same margins. They had margins of their
// own for a while (a trial of two Ps from 0.6 of a core busy, kept for any gain),
// because a leader under pipelined load did better on two Ps while under a core busy.
// That was sysmon handing Ps between threads (sysmon.go); with sysmon kept awake, these
// margins measured (three members, redis-benchmark -t set -c 50 -d 3 -r 1000000,
// alternating runs, members' own margins -> these):
//
//	raft    -P 1: 69.5k / 68.3k -> 74.3k / 79.3k     -P 16: 419k / 424k -> 429k / 456k
//	offload -P 1: 65.7k / 67.8k -> 73.9k / 70.4k     -P 16 (four runs, median): 379k -> 384k
//
// and memcaslap set-only on three members and ZooKeeper setData the same within noise.
const (
	procsWindow    = 100 * time.Millisecond
	procsUpBusy    = 0.985
	procsUpWindows = 1
	// procsLoadChange: a delivery rate this far (either way) from the one the last trial
	// settled on ends the hold: the load changed (a pipelined run after a
	// request-response one), and what the trial found no longer applies.
	procsLoadChange = 0.3
	procsIdleBusy   = 0.5
	procsUpGain     = 0.03 // more Ps must deliver this much more than one
	procsDownLoss   = 0.05 // one P is kept unless it delivers this much less
	procsTrial      = 2    // windows a trial is measured over
	procsMinHold    = 10   // windows
	procsMaxHold    = 80
	// procsMaxCPUs: on larger machines the clients do not crowd the server's cores, and
	// the runtime's default stands.
	procsMaxCPUs = 2
)

// procTuner decides GOMAXPROCS, window by window, from CPU time and delivery rate.
type procTuner struct {
	max int // the runtime's default: one P per core
	cur int

	sat      int     // consecutive saturated windows at one P
	hold     int     // windows before the next trial is allowed
	holdLen  int     // the hold a confirming trial doubles
	trial    int     // windows of the running trial measured so far; 0: none
	trialSum float64 // their rates
	prevRate float64 // the rate of the window before, at the same setting; 0: none
	from     int     // the setting the trial left
	baseRate float64 // delivery rate in the setting the trial left
	holdRate float64 // delivery rate of the setting the last trial settled on
}

func newProcTuner(max int) *procTuner {
	return &procTuner{max: max, cur: 1, holdLen: procsMinHold}
}

// next returns the number of Ps for the next window, given the cores the process kept
// busy in the last one (CPU seconds per wall second) and the rate it delivered.
func (t *procTuner) next(busy, rate float64) int {
	prev := t.prevRate
	t.prevRate = rate
	if busy < procsIdleBusy {
		t.cur, t.sat, t.trial, t.hold, t.holdLen = 1, 0, 0, 0, procsMinHold
		return t.cur
	}
	if t.trial > 0 {
		t.trial++
		t.trialSum += rate
		if t.trial <= procsTrial {
			return t.cur
		}
		mean := t.trialSum / procsTrial
		var keep bool
		if t.cur == 1 {
			keep = mean >= t.baseRate*(1-procsDownLoss) // one P need only not lose
		} else {
			// More Ps must earn their cost. A process that delivers nothing to clients (a
			// busy follower, a noreply load) shows no gain: without mean > 0 its 0 ≥ 0
			// would keep them, and the next trial of one P would take them back, over
			// and over.
			keep = mean > 0 && mean >= t.baseRate*(1+procsUpGain)
		}
		t.trial = 0
		t.holdRate = mean
		if keep {
			t.holdLen = procsMinHold
		} else {
			t.holdRate = t.baseRate
			t.cur, t.prevRate = t.from, 0
			t.holdLen = min(2*t.holdLen, procsMaxHold)
		}
		t.hold, t.sat = t.holdLen, 0
		return t.cur
	}
	if t.hold > 0 {
		t.hold--
		if rate > t.holdRate*(1+procsLoadChange) || rate < t.holdRate*(1-procsLoadChange) {
			t.hold = 0
		}
	}
	if t.cur == 1 {
		if busy >= procsUpBusy {
			t.sat++
		} else {
			t.sat = 0
		}
		if t.sat < procsUpWindows || t.hold > 0 {
			return t.cur
		}
		t.startTrial(t.max, rate, prev)
		return t.cur
	}
	if t.hold == 0 {
		t.startTrial(1, rate, prev)
	}
	return t.cur
}

// startTrial leaves the current setting, whose rate was rate in the last window and
// prev in the one before (0: that one ran another setting), for to.
func (t *procTuner) startTrial(to int, rate, prev float64) {
	t.from, t.baseRate = t.cur, rate
	if prev > 0 {
		t.baseRate = (rate + prev) / 2
	}
	t.cur, t.trial, t.trialSum, t.sat, t.prevRate = to, 1, 0, 0, 0
}

// startProcTuner runs the tuner until stop is closed; it does nothing on a machine with
// more than procsMaxCPUs cores or fewer than two. GOMAXPROCS is restored on stop.
func startProcTuner(stop <-chan struct{}) {
	n := runtime.NumCPU()
	if n < 2 || n > procsMaxCPUs {
		return
	}
	t := newProcTuner(runtime.GOMAXPROCS(0))
	if t.max < 2 {
		return
	}
	runtime.GOMAXPROCS(1)
	go func() {
		tick := time.NewTicker(procsWindow)
		defer tick.Stop()
		lastCPU, lastOut, lastWall := cputime.Process(), netserve.Written(), time.Now()
		for {
			select {
			case <-stop:
				runtime.GOMAXPROCS(t.max)
				return
			case <-tick.C:
			}
			cpu, out, wall := cputime.Process(), netserve.Written(), time.Now()
			secs := wall.Sub(lastWall).Seconds()
			busy := (cpu - lastCPU).Seconds() / secs
			rate := float64(out-lastOut) / secs
			lastCPU, lastOut, lastWall = cpu, out, wall
			prev := t.cur
			if p := t.next(busy, rate); p != prev {
				runtime.GOMAXPROCS(p)
			}
		}
	}()
}
