package server

import (
	"runtime"
	"syscall"
	"time"
)

// A single node's work is nearly serial: a connection reads, proposes and writes, and
// one applier applies. On a machine of two cores that the clients share (the machine
// this project is measured on: redis-benchmark and memcaslap are single-threaded and
// need a core of their own), a second P does not add throughput until one core is
// saturated; before that it costs it. With two Ps the runtime wakes an idle thread for
// every batch of ready connections and the two threads crowd the client's core:
// redis-benchmark -P 1 -c 50 measured 82–92k ops/s with GOMAXPROCS=2 against 98–106k
// with 1, at the same server CPU (~90%). Pipelined load is the opposite case: at -P 16
// one P is saturated (99% CPU) and two give SET 904k against 708k.
//
// The tuner therefore runs one P while one is enough and adds the others only while the
// process keeps a core busy. Every window it reads the process's CPU time: at one P,
// procsUpWindows windows in a row at or above procsUpBusy of a core add the rest (a
// saturated P is losing throughput now); with more, procsDownWindows windows in a row below
// procsDownBusy of a core (the work would fit in one), or one window below procsIdleBusy
// (the load stopped), go back to one. The thresholds sit between what was measured:
// one P runs -P 1 load at 85–93% of a core and saturated load at 99%; two Ps run -P 1
// load at 91–95% and -P 16 load at 102–119%.
const (
	procsWindow      = 100 * time.Millisecond
	procsUpBusy      = 0.985
	procsUpWindows   = 2
	procsDownBusy    = 0.95
	procsDownWindows = 3
	procsIdleBusy    = 0.5
	// procsMaxCPUs: on larger machines the clients do not crowd the server's cores, and
	// the runtime's default stands.
	procsMaxCPUs = 2
)

// procTuner decides GOMAXPROCS from the CPU time of the last window.
type procTuner struct {
	max   int // the runtime's default: one P per core
	cur   int
	quiet int // consecutive windows below procsDownBusy at more than one P
	busy  int // consecutive windows at or above procsUpBusy at one P
}

// next returns the number of Ps for the next window, given the cores the process kept
// busy in the last one (CPU seconds per wall second).
func (t *procTuner) next(busy float64) int {
	switch {
	case t.cur == 1:
		t.busy++
		if busy < procsUpBusy {
			t.busy = 0
		} else if t.busy >= procsUpWindows {
			t.cur, t.busy, t.quiet = t.max, 0, 0
		}
	case busy < procsIdleBusy:
		t.cur, t.quiet = 1, 0
	case busy < procsDownBusy:
		t.quiet++
		if t.quiet >= procsDownWindows {
			t.cur, t.quiet = 1, 0
		}
	default:
		t.quiet = 0
	}
	return t.cur
}

// startProcTuner runs the tuner until stop is closed; it does nothing on a machine with
// more than procsMaxCPUs cores or fewer than two. GOMAXPROCS is restored on stop.
func startProcTuner(stop <-chan struct{}) {
	n := runtime.NumCPU()
	if n < 2 || n > procsMaxCPUs {
		return
	}
	t := &procTuner{max: runtime.GOMAXPROCS(0), cur: 1}
	if t.max < 2 {
		return
	}
	runtime.GOMAXPROCS(1)
	go func() {
		tick := time.NewTicker(procsWindow)
		defer tick.Stop()
		lastCPU, lastWall := cpuTime(), time.Now()
		for {
			select {
			case <-stop:
				runtime.GOMAXPROCS(t.max)
				return
			case <-tick.C:
			}
			cpu, wall := cpuTime(), time.Now()
			busy := (cpu - lastCPU).Seconds() / wall.Sub(lastWall).Seconds()
			lastCPU, lastWall = cpu, wall
			prev := t.cur
			if p := t.next(busy); p != prev {
				runtime.GOMAXPROCS(p)
			}
		}
	}()
}

// cpuTime is the user and system CPU time of the whole process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
