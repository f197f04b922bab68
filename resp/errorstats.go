package resp

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nanokv/nanokv/kvstore"
)

// errorStats counts the error replies this member sends its clients, by their first word
// (INFO errorstats, total_error_replies), as Redis 7.0 does. Like Redis it tracks at
// most maxErrorCodes distinct words; later ones are counted in the total only.
type errorStats struct {
	total  atomic.Uint64
	mu     sync.Mutex
	byCode map[string]uint64
}

const maxErrorCodes = 128

func (e *errorStats) record(msg string) {
	e.total.Add(1)
	code, _, _ := strings.Cut(msg, " ")
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byCode == nil {
		e.byCode = map[string]uint64{}
	}
	if _, known := e.byCode[code]; known || len(e.byCode) < maxErrorCodes {
		e.byCode[code]++
	}
}

func (e *errorStats) reset() {
	e.total.Store(0)
	e.mu.Lock()
	e.byCode = nil
	e.mu.Unlock()
}

func (e *errorStats) appendInfo(b *strings.Builder) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, code := range slices.Sorted(maps.Keys(e.byCode)) {
		fmt.Fprintf(b, "errorstat_%s:count=%d\r\n", code, e.byCode[code])
	}
}

// newConnStats makes the counters of the connection commands the store does not know
// (PING, ECHO and SELECT count in the store's), and of their subcommands.
func newConnStats(t *kvstore.LatencyTracking) map[string]*kvstore.CmdStats {
	m := map[string]*kvstore.CmdStats{}
	for name := range connCommands {
		if kvstore.Lookup([]byte(name)) != nil {
			continue
		}
		m[name] = kvstore.NewCmdStats(t)
		for _, sub := range connSubcommands[name] {
			m[name+"|"+sub] = kvstore.NewCmdStats(t)
		}
	}
	return m
}

// cmdStats returns the counters of a call of cs (or of a store command: the store's)
// with args; nil counts nowhere.
func (s *Server) cmdStats(cs *connSpec, args [][]byte) *kvstore.CmdStats {
	if kv := kvstore.Lookup([]byte(cs.Name)); kv != nil {
		return s.b.Store().CommandStats(kv, args)
	}
	if len(args) > 1 && len(connSubcommands[cs.Name]) > 0 {
		return s.connStats[cs.Name+"|"+strings.ToLower(string(args[1]))] // nil if unknown
	}
	return s.connStats[cs.Name]
}

// appendCommandStats writes INFO commandstats: every command that was called or refused,
// the store's and the connection's, by name.
func (s *Server) appendCommandStats(b *strings.Builder) {
	s.eachCommandStats(func(name string, st *kvstore.CmdStats) {
		calls, usec, rejected, failed := st.Snapshot()
		if calls == 0 && rejected == 0 && failed == 0 {
			return
		}
		perCall := 0.0
		if calls > 0 {
			perCall = float64(usec) / float64(calls)
		}
		fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
			name, calls, usec, perCall, rejected, failed)
	})
}

// eachCommandStats calls fn with every command's counters, the store's and the
// connection's, by name.
func (s *Server) eachCommandStats(line func(name string, st *kvstore.CmdStats)) {
	names := slices.Sorted(maps.Keys(s.connStats))
	s.b.Store().EachCommandStats(func(name string, st *kvstore.CmdStats) {
		for len(names) > 0 && names[0] < name {
			line(names[0], s.connStats[names[0]])
			names = names[1:]
		}
		line(name, st)
	})
	for _, n := range names {
		line(n, s.connStats[n])
	}
}

// commandsProcessed is INFO's total_commands_processed: the calls of every command, the
// store's and the connection's, as Redis counts them.
func (s *Server) commandsProcessed() uint64 {
	n := s.b.Store().CommandCalls()
	for _, st := range s.connStats {
		n += st.Calls()
	}
	return n
}

// resetCommandStats zeroes every command's counters (CONFIG RESETSTAT).
func (s *Server) resetCommandStats() {
	s.b.Store().EachCommandStats(func(_ string, st *kvstore.CmdStats) { st.Reset() })
	for _, st := range s.connStats {
		st.Reset()
	}
}
