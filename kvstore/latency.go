package kvstore

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The latency monitor (LATENCY), as Redis 7.0 keeps it: with latency-monitor-threshold
// set (milliseconds; 0, the default, turns it off), a command that takes at least that
// long is a sample of the event "command". An event keeps its latest 160 seconds that had
// samples, the largest sample of each second, and its largest ever. Each member keeps its
// own, from the commands it times, which are the slow log's: the writes it applies and
// the reads it serves. The commands Redis flags fast are timed only while
// slowlog-log-slower-than is 0 (slowlog.go); their event is "fast-command".

// latencyTSLen is Redis's LATENCY_TS_LEN: the samples an event keeps.
const latencyTSLen = 160

type latencySample struct {
	time    int64 // unix seconds; 0: unused
	latency int64 // ms
}

type latencySeries struct {
	idx     int
	max     int64
	samples [latencyTSLen]latencySample
}

type latencyMonitor struct {
	threshold atomic.Int64 // ms; 0: off
	mu        sync.Mutex
	events    map[string]*latencySeries
}

// SetLatencyThreshold sets latency-monitor-threshold (ms).
func (s *Store) SetLatencyThreshold(ms int64) { s.latency.threshold.Store(ms) }

// LatencyThreshold returns latency-monitor-threshold (ms).
func (s *Store) LatencyThreshold() int64 { return s.latency.threshold.Load() }

// addSample is Redis's latencyAddSampleIfNeeded: a sample of event when ms reaches the
// threshold, merged into the sample of its second.
func (m *latencyMonitor) addSample(event string, ms int64, now int64) {
	if th := m.threshold.Load(); th == 0 || ms < th {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		m.events = map[string]*latencySeries{}
	}
	ts := m.events[event]
	if ts == nil {
		ts = &latencySeries{}
		m.events[event] = ts
	}
	ts.max = max(ts.max, ms)
	prev := &ts.samples[(ts.idx+latencyTSLen-1)%latencyTSLen]
	if prev.time == now {
		prev.latency = max(prev.latency, ms)
		return
	}
	ts.samples[ts.idx] = latencySample{now, ms}
	ts.idx = (ts.idx + 1) % latencyTSLen
}

// LatencyEvent is one event's line of LATENCY LATEST.
type LatencyEvent struct {
	Name              string
	Time, Latest, Max int64
}

// LatencyLatest returns every event's latest sample and its largest, by name.
func (s *Store) LatencyLatest() []LatencyEvent {
	m := &s.latency
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []LatencyEvent
	for _, name := range slices.Sorted(maps.Keys(m.events)) {
		ts := m.events[name]
		last := ts.samples[(ts.idx+latencyTSLen-1)%latencyTSLen]
		out = append(out, LatencyEvent{Name: name, Time: last.time, Latest: last.latency, Max: ts.max})
	}
	return out
}

// LatencyHistory returns event's samples, oldest first, as (unix seconds, ms) pairs.
func (s *Store) LatencyHistory(event string) [][2]int64 {
	m := &s.latency
	m.mu.Lock()
	defer m.mu.Unlock()
	ts := m.events[event]
	if ts == nil {
		return nil
	}
	var out [][2]int64
	for j := range latencyTSLen {
		if sm := ts.samples[(ts.idx+j)%latencyTSLen]; sm.time != 0 {
			out = append(out, [2]int64{sm.time, sm.latency})
		}
	}
	return out
}

// LatencyReset forgets the named events (every event when none is named) and returns
// how many it forgot.
func (s *Store) LatencyReset(events ...string) int {
	m := &s.latency
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(events) == 0 {
		n := len(m.events)
		m.events = nil
		return n
	}
	n := 0
	for _, e := range events {
		if _, ok := m.events[e]; ok {
			delete(m.events, e)
			n++
		}
	}
	return n
}

// LatencyDoctor is LATENCY DOCTOR's report, Redis 7.0's text for the events nanokv
// records ("command").
func (s *Store) LatencyDoctor() string {
	m := &s.latency
	threshold := m.threshold.Load()
	slowlog := s.slow.threshold.Load()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.events) == 0 {
		if threshold == 0 {
			return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n"
		}
		return "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n"
	}
	var b strings.Builder
	b.WriteString("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n")
	var slowlogEnabled, slowlogTuning, slowlogInspect, largeObjects bool
	now := time.Now().Unix()
	for i, name := range slices.Sorted(maps.Keys(m.events)) {
		ts := m.events[name]
		n, avg, mad, period := ts.analyze(now)
		fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %.2f sec). Worst all time event %dms.",
			i+1, name, n, avg, mad, float64(period)/float64(n), ts.max)
		if name == "command" {
			if slowlog < 0 {
				slowlogEnabled = true
			} else if slowlog/1000 > threshold {
				slowlogTuning = true
			}
			slowlogInspect, largeObjects = true, true
		}
		b.WriteString("\n")
	}
	b.WriteString("\nI have a few advices for you:\n\n")
	if slowlogEnabled {
		fmt.Fprintf(&b, "- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than %d'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n", threshold*1000)
	}
	if slowlogTuning {
		fmt.Fprintf(&b, "- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than %d'.\n", threshold*1000)
	}
	if slowlogInspect {
		b.WriteString("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n")
	}
	if largeObjects {
		b.WriteString("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n")
	}
	return b.String()
}

// analyze is Redis's analyzeLatencyForEvent: the samples, their mean and mean absolute
// deviation (ms, integer division as Redis's), and the seconds since the oldest (at
// least 1).
func (ts *latencySeries) analyze(now int64) (n, avg, mad, period int64) {
	var sum int64
	oldest := int64(0)
	for _, sm := range ts.samples {
		if sm.time == 0 {
			continue
		}
		n++
		sum += sm.latency
		if oldest == 0 || sm.time < oldest {
			oldest = sm.time
		}
	}
	if n == 0 {
		return 0, 0, 0, 0
	}
	avg = sum / n
	period = max(now-oldest, 1)
	var dev int64
	for _, sm := range ts.samples {
		if sm.time != 0 {
			d := avg - sm.latency
			dev += max(d, -d)
		}
	}
	return n, avg, dev / n, period
}
