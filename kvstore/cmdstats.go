package kvstore

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/nanokv/nanokv/internal/fastclock"
)

// CmdStats are a command's INFO commandstats counters, as Redis 7.0 keeps them: calls
// that ran (failed ones included), calls refused before they ran (rejected: arity, a
// write on the read path, and what the frontend refuses), calls that ran and replied an
// error (failed). Each Store keeps its own (a member counts what it runs: the writes it
// applies, its clients' reads), and a frontend its connection commands'.
//
// Their time is sampled: one call in statSample is timed, and usec is that sample's
// mean times the calls. The sampling dates from when a pair of clock reads (time.Now and
// time.Since) took 117 ns here, against 163-169 ns for a whole GET on the read path
// (BenchmarkReadGET); a timed call is now read with fastclock (about 10 ns a reading),
// but still records into a histogram under a mutex. Redis times every call.
type CmdStats struct {
	calls, rejected, failed atomic.Uint64
	sampled, sampledNanos   atomic.Uint64
	// lat is the timed calls' latency histogram (LATENCY HISTOGRAM, INFO latencystats)
	lat *latencyHist
	// a cache line each: the read path and the applier count different commands on
	// different cores (GET and SET, side by side in the table)
	_ [64 - 6*8]byte
}

// latencyHist is an HDR histogram of latencies in ns, with Redis's bounds (1 ns to 1 s,
// two significant digits), so that its buckets and percentiles are Redis's for the same
// samples. HdrHistogram's Go port is not safe for concurrent use: a mutex guards it (it
// is taken by the timed calls only, one in statSample).
type latencyHist struct {
	mu       sync.Mutex
	h        *hdrhistogram.Histogram
	tracking *LatencyTracking // nil: always on
}

// LatencyTracking is latency-tracking: whether timed calls go into the latency
// histograms (their time still counts in INFO commandstats, as in Redis). A Store has
// one for its commands' (Store.LatencyTracking); NewCmdStats takes one.
type LatencyTracking struct{ off atomic.Bool }

// Set turns the tracking on or off.
func (t *LatencyTracking) Set(on bool) { t.off.Store(!on) }

// On reports whether the tracking is on.
func (t *LatencyTracking) On() bool { return !t.off.Load() }

func (l *latencyHist) record(ns int64) {
	if l.tracking != nil && !l.tracking.On() {
		return
	}
	l.mu.Lock()
	if l.h == nil {
		l.h = hdrhistogram.New(1, 1e9, 2)
	}
	l.h.RecordValue(min(max(ns, 1), 1e9))
	l.mu.Unlock()
}

// LatencyBucket is a point of LATENCY HISTOGRAM's cumulative distribution: the calls
// that took at most Usec microseconds.
type LatencyBucket struct{ Usec, Calls int64 }

// Latency returns a command's latency distribution as LATENCY HISTOGRAM reports it: the
// timed calls, counted at every power of two from 1024 ns as Redis's logarithmic walk
// of its histogram does, scaled up to all calls (one in statSample is timed); and
// pct, the latency (µs) at each of percentiles. ok is false when no call was timed.
func (st *CmdStats) Latency(percentiles []float64) (calls int64, buckets []LatencyBucket, pct []float64, ok bool) {
	if st.lat == nil {
		return 0, nil, nil, false
	}
	st.lat.mu.Lock()
	defer st.lat.mu.Unlock()
	h := st.lat.h
	if h == nil || h.TotalCount() == 0 {
		return 0, nil, nil, false
	}
	calls = int64(st.calls.Load())
	timed := h.TotalCount()
	scale := func(n int64) int64 { return (n*max(calls, timed) + timed/2) / timed }
	bars := h.Distribution()
	var cum int64
	next, prev := 0, int64(0)
	for level := int64(1024); prev < timed && level <= 1<<31; level *= 2 {
		// the bucket that holds level: its highest equivalent value is Redis's key
		top := level + level>>7 - 1 // two significant digits: 2^(n-7) wide at 2^n
		for next < len(bars) && bars[next].To <= top {
			cum += bars[next].Count
			next++
		}
		if cum > prev {
			buckets = append(buckets, LatencyBucket{Usec: top / 1000, Calls: scale(cum)})
		}
		prev = cum
	}
	for _, p := range percentiles {
		pct = append(pct, float64(h.ValueAtPercentile(p))/1000)
	}
	return max(calls, timed), buckets, pct, true
}

// statSample is the share of calls whose time is measured (one in statSample).
const statSample = 16

// Begin starts a call and returns what End needs: its start (a fastclock reading), when
// it is one of the calls timed, or 0. A nil st counts nowhere.
func (st *CmdStats) Begin() int64 {
	if st != nil && st.calls.Load()%statSample == 0 {
		return fastclock.Now()
	}
	return 0
}

// End counts a call Begin started (after it ran, as Redis counts: INFO does not count
// itself); failed tells whether it replied an error.
func (st *CmdStats) End(start int64, failed bool) {
	if st == nil {
		return
	}
	if start != 0 {
		ns := fastclock.Since(start)
		st.sampledNanos.Add(uint64(ns))
		st.sampled.Add(1)
		st.lat.record(ns)
	}
	st.calls.Add(1)
	if failed {
		st.failed.Add(1)
	}
}

// Calls is how many calls End counted.
func (st *CmdStats) Calls() uint64 { return st.calls.Load() }

// Reject counts a call refused before it ran (a nil st counts nowhere).
func (st *CmdStats) Reject() {
	if st != nil {
		st.rejected.Add(1)
	}
}

// Snapshot returns the counters, the time estimated from the sample (µs).
func (st *CmdStats) Snapshot() (calls, usec, rejected, failed uint64) {
	calls, rejected, failed = st.calls.Load(), st.rejected.Load(), st.failed.Load()
	if n := st.sampled.Load(); n > 0 {
		usec = uint64(float64(st.sampledNanos.Load()) / float64(n) * float64(calls) / 1e3)
	}
	return calls, usec, rejected, failed
}

// Reset zeroes the counters (CONFIG RESETSTAT).
func (st *CmdStats) Reset() {
	st.calls.Store(0)
	st.rejected.Store(0)
	st.failed.Store(0)
	st.sampled.Store(0)
	st.sampledNanos.Store(0)
	if st.lat != nil {
		st.lat.mu.Lock()
		st.lat.h = nil
		st.lat.mu.Unlock()
	}
}

// NewCmdStats returns counters for a command a frontend runs itself, whose latency
// histogram t switches.
func NewCmdStats(t *LatencyTracking) *CmdStats {
	return &CmdStats{lat: &latencyHist{tracking: t}}
}

// statNames are the names of the commands' counters, by index in a Store's table: a
// container's subcommands have their own ("object|encoding"), as in Redis. register
// gives each Spec its index (statID) and its subcommands' (subStatIDs); 0 is none.
var statNames = []string{""}

func (s *Spec) addStats() {
	s.statID = len(statNames)
	statNames = append(statNames, s.Name)
	if s.Subcommands != nil {
		s.subStatIDs = map[string]int{}
		for _, sub := range slices.Sorted(maps.Keys(s.Subcommands)) {
			s.subStatIDs[sub] = len(statNames)
			statNames = append(statNames, s.Name+"|"+sub)
		}
	}
}

// statIndex returns the index of the counters a call of s counts in: its subcommand's, for a
// container that declares its subcommands, or its own. A container's unknown subcommand
// counts nowhere (0), as an unknown command; so do memcached's commands, which Redis
// does not list.
func (s *Spec) statIndex(args [][]byte) int {
	if s.subStatIDs != nil && len(args) > 1 {
		if len(args[1]) > 32 {
			return 0
		}
		var b [32]byte
		n := copy(b[:], args[1])
		for i := range n {
			if 'A' <= b[i] && b[i] <= 'Z' {
				b[i] += 'a' - 'A'
			}
		}
		return s.subStatIDs[string(b[:n])]
	}
	return s.statID
}

// CommandStats returns the store's counters for a call of spec with args, nil when it
// counts nowhere (a frontend counts its refusals there).
func (s *Store) CommandStats(spec *Spec, args [][]byte) *CmdStats {
	if i := spec.statIndex(args); i != 0 {
		return &s.cmdStats[i]
	}
	return nil
}

// CommandCalls is how many calls of Redis commands the store's counters hold: INFO's
// total_commands_processed, which Redis counts where it counts a command's calls (after
// the command ran, so that INFO does not count itself; never a refused one).
func (s *Store) CommandCalls() uint64 {
	var n uint64
	for i := 1; i < len(s.cmdStats); i++ { // 0 counts memcached's commands, which Redis does not see
		n += s.cmdStats[i].calls.Load()
	}
	return n
}

// EachCommandStats calls fn for every command's counters, by name.
func (s *Store) EachCommandStats(fn func(name string, st *CmdStats)) {
	order := make([]int, 0, len(statNames))
	for i := 1; i < len(statNames); i++ {
		order = append(order, i)
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case statNames[a] < statNames[b]:
			return -1
		case statNames[a] > statNames[b]:
			return 1
		}
		return 0
	})
	for _, i := range order {
		fn(statNames[i], &s.cmdStats[i])
	}
}

// call runs spec with its counters: every execution of a command goes through here
// (the read path, the applier, a transaction's commands, a script's calls).
func (c *Ctx) call(spec *Spec, args [][]byte) {
	// a read's misses publish keymiss, also inside MULTI and scripts (readCmd)
	outer, outerTouch := c.readCmd, c.noTouch
	c.readCmd = spec.Flags&FlagReadLookups != 0 || !spec.Writes(args)
	c.noTouch = false // the command sets it if its lookups are no access
	c.touchedKeys = touchedEntries{}
	if st := c.s.CommandStats(spec, args); st == nil {
		spec.Run(c, args)
	} else {
		errs := c.errs
		start := st.Begin()
		spec.Run(c, args)
		st.End(start, c.errs != errs)
	}
	c.readCmd, c.noTouch = outer, outerTouch
}

// reject counts a call of spec refused before it ran.
func (c *Ctx) reject(spec *Spec, args [][]byte) { c.s.CommandStats(spec, args).Reject() }

// Error replies msg through c.W and counts it: a command that replied an error failed.
func (c *Ctx) Error(msg string) {
	c.errs++
	c.W.Error(msg)
}
