package kvstore

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nanokv/nanokv/internal/fastclock"
)

// The slow log (SLOWLOG): commands that ran longer than slowlog-log-slower-than
// microseconds, the newest first, at most slowlog-max-len of them. Each member keeps its
// own, as each Redis node does: the applier times the writes it applies (every member
// applies every write), the read path the reads it serves. As in Redis, a transaction's
// commands are timed one by one and a script as a whole.
//
// One difference: commands Redis flags "fast" (O(1): GET, INCR, HGET...) are not timed,
// so that the common path pays no clock reads; short of a value of many megabytes they
// cannot take the default 10 ms. With slowlog-log-slower-than 0, Redis's "log every
// command", they are timed and logged too.

// Redis's defaults and limits.
const (
	slowlogDefaultThreshold = 10000 // µs
	slowlogDefaultMaxLen    = 128
	slowlogMaxArgs          = 32
	slowlogMaxArgLen        = 128
)

// SlowEntry is one slow command.
type SlowEntry struct {
	ID     uint64
	Time   int64 // unix seconds when it was logged, as Redis: when the command ended
	Micros int64
	Args   []string // at most slowlogMaxArgs, each cut at slowlogMaxArgLen, as Redis keeps them
	Addr   string   // the client's, when known ("" for a write another member proposed)
	Name   string
}

type slowlog struct {
	threshold atomic.Int64 // µs; negative: off
	maxLen    atomic.Int64
	mu        sync.Mutex
	nextID    uint64
	entries   []SlowEntry // oldest first
}

// SlowClient is what a ReplyWriter tells the slow log of its client, if it knows it.
type SlowClient interface {
	SlowClient() (addr, name string)
}

// SetSlowlog sets slowlog-log-slower-than (µs, negative turns the log off) and
// slowlog-max-len; the log is trimmed at once.
func (s *Store) SetSlowlog(thresholdMicros, maxLen int64) {
	s.slow.threshold.Store(thresholdMicros)
	s.slow.maxLen.Store(maxLen)
	s.slow.mu.Lock()
	s.slow.trim()
	s.slow.mu.Unlock()
}

// Slowlog returns slowlog-log-slower-than and slowlog-max-len.
func (s *Store) Slowlog() (thresholdMicros, maxLen int64) {
	return s.slow.threshold.Load(), s.slow.maxLen.Load()
}

// Commands are timed with fastclock: a reading is one read of the CPU's time-stamp
// counter where the kernel keeps time with it, and the wall clock is read only for a
// command that is logged. A follower under SET -P 16 spent 10% of its CPU in the three
// time.Now of each command, and with one monotonic read per command the applier still
// waited at each for the cache misses of the command before it (fastclock's comment).

// slowStart returns the reading a command starts at, or 0 when it is not timed (a command
// refused before it runs is not). prev, when not 0, is a reading taken just before: the
// end of the command that ran before this one, so that commands that follow each other
// take one clock read each.
func (s *Store) slowStart(spec *Spec, args [][]byte, prev int64) int64 {
	th := s.slow.threshold.Load()
	if spec == nil || spec.Flags&FlagFast != 0 && th != 0 || th < 0 && s.latency.threshold.Load() == 0 || !spec.CheckArity(args) {
		return 0
	}
	if prev != 0 {
		return prev
	}
	return fastclock.Now()
}

// SlowStart is slowStart for the frontends' own timing (reads, connection commands).
func (s *Store) SlowStart(spec *Spec, args [][]byte) int64 { return s.slowStart(spec, args, 0) }

// slowEnd logs the command that started at start (slowStart) if it took long enough,
// with the client w knows of (a write another member proposed has none here), and
// returns the reading it ended at for the next command to start from (0 when there is
// none to reuse).
func (s *Store) slowEnd(start int64, args [][]byte, w ReplyWriter) int64 {
	if start == 0 {
		return 0
	}
	end := fastclock.Now()
	micros := fastclock.Nanos(start, end) / 1000
	if s.slowEnough(micros) {
		var addr, name string
		if c, ok := w.(SlowClient); ok {
			addr, name = c.SlowClient()
		}
		s.logSlow(micros, args, addr, name)
		return 0 // the next command's time must not include the logging
	}
	return end
}

// SlowEnd logs the command of client addr (named name) that started at start
// (SlowStart) if it took long enough.
func (s *Store) SlowEnd(start int64, args [][]byte, addr, name string) {
	if start == 0 {
		return
	}
	if micros := fastclock.Since(start) / 1000; s.slowEnough(micros) {
		s.logSlow(micros, args, addr, name)
	}
}

// slowEnough reports whether a command of micros µs goes to the latency monitor or the
// slow log.
func (s *Store) slowEnough(micros int64) bool {
	lat, slow := s.latency.threshold.Load(), s.slow.threshold.Load()
	return lat != 0 && micros/1000 >= lat || slow >= 0 && micros >= slow
}

// logSlow gives a command that took micros µs, and ended now, to the latency monitor and,
// past slowlog-log-slower-than, to the slow log.
func (s *Store) logSlow(micros int64, args [][]byte, addr, name string) {
	now := time.Now()
	event := "command"
	if spec := Lookup(args[0]); spec != nil && spec.Flags&FlagFast != 0 {
		event = "fast-command" // timed only under slowlog-log-slower-than 0
	}
	s.latency.addSample(event, micros/1000, now.Unix())
	if th := s.slow.threshold.Load(); th < 0 || micros < th {
		return
	}
	e := SlowEntry{Time: now.Unix(), Micros: micros, Addr: addr, Name: name}
	n := min(len(args), slowlogMaxArgs)
	for i := 0; i < n; i++ {
		if i == slowlogMaxArgs-1 && len(args) > slowlogMaxArgs {
			e.Args = append(e.Args, "... ("+strconv.Itoa(len(args)-slowlogMaxArgs+1)+" more arguments)")
			break
		}
		a := args[i]
		if len(a) > slowlogMaxArgLen {
			e.Args = append(e.Args, string(a[:slowlogMaxArgLen])+"... ("+strconv.Itoa(len(a)-slowlogMaxArgLen)+" more bytes)")
			continue
		}
		e.Args = append(e.Args, string(a))
	}
	s.slow.mu.Lock()
	e.ID = s.slow.nextID
	s.slow.nextID++
	s.slow.entries = append(s.slow.entries, e)
	s.slow.trim()
	s.slow.mu.Unlock()
}

// trim drops the oldest entries past maxLen. Called with mu held.
func (l *slowlog) trim() {
	if over := len(l.entries) - int(max(l.maxLen.Load(), 0)); over > 0 {
		l.entries = append(l.entries[:0], l.entries[over:]...)
	}
}

// SlowlogGet returns up to n entries, the newest first (n < 0: all).
func (s *Store) SlowlogGet(n int) []SlowEntry {
	s.slow.mu.Lock()
	defer s.slow.mu.Unlock()
	if n < 0 || n > len(s.slow.entries) {
		n = len(s.slow.entries)
	}
	out := make([]SlowEntry, n)
	for i := range out {
		out[i] = s.slow.entries[len(s.slow.entries)-1-i]
	}
	return out
}

// SlowlogLen is how many entries the log holds.
func (s *Store) SlowlogLen() int {
	s.slow.mu.Lock()
	defer s.slow.mu.Unlock()
	return len(s.slow.entries)
}

// SlowlogReset empties the log.
func (s *Store) SlowlogReset() {
	s.slow.mu.Lock()
	s.slow.entries = nil
	s.slow.mu.Unlock()
}
