package resp

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nanokv/nanokv/kvstore"
)

// MONITOR: a connection that sends it receives, from then on, a line for every command
// this member's clients run, as Redis 7.0 writes them:
//
//	+1700000000.123456 [0 127.0.0.1:50000] "SET" "key" "value"
//
// Lines follow Redis's rules: commands that fail before they run (unknown, wrong arity,
// NOAUTH) are not shown, nor are those Redis flags admin (CONFIG, SHUTDOWN, CLIENT
// LIST, SLOWLOG, SAVE, SYNC, MONITOR...) and the RAFT.* commands; AUTH's and HELLO's credentials read "(redacted)"; a transaction shows
// MULTI, then its commands and EXEC when EXEC runs them. The commands a script runs
// follow the script's line as "[0 lua]", on the member that answers the script (the
// applier reports them: kvstore.ScriptMonitor); inside a transaction they come before
// it, since a transaction's lines are shown once it has run. A monitor's output goes
// through the subscriber queue (pubsub.go), so a slow monitor never holds a client back
// and is cut off past its output limit (outlimit.go). It may still run commands that
// touch no key, as in Redis; RESET ends monitoring.

func init() {
	connCommands["monitor"] = &connSpec{Spec: kvstore.Spec{Name: "monitor", Arity: 1, Flags: kvstore.FlagConn, Group: "server", Since: "1.0.0",
		Summary: "Listen for all requests received by the server in real time"}, run: monitorCommand}
}

// monitorSet is a member's monitoring connections.
type monitorSet struct {
	n   atomic.Int32 // len(set), read without the lock on every command
	mu  sync.Mutex
	set map[*conn]struct{}
}

func (m *monitorSet) add(c *conn) {
	m.mu.Lock()
	if m.set == nil {
		m.set = map[*conn]struct{}{}
	}
	m.set[c] = struct{}{}
	m.n.Store(int32(len(m.set)))
	m.mu.Unlock()
}

func (m *monitorSet) remove(c *conn) {
	m.mu.Lock()
	delete(m.set, c)
	m.n.Store(int32(len(m.set)))
	m.mu.Unlock()
}

func monitorCommand(c *conn, _ [][]byte) {
	if c.execing > 0 {
		c.Error("ERR MONITOR isn't allowed for DENY BLOCKING client") // as Redis inside EXEC
		return
	}
	if c.monitoring {
		return // Redis ignores a second MONITOR, without a reply
	}
	c.startSub()
	c.monitoring = true
	c.shared.monitor.Store(true)
	c.Status("OK")
	c.flushOut() // +OK is queued before the first line
	c.s.mon.add(c)
}

// stopMonitoring ends monitoring (RESET, or the connection's end).
func (c *conn) stopMonitoring() {
	if c.monitoring {
		c.monitoring = false
		c.shared.monitor.Store(false)
		c.s.mon.remove(c)
	}
}

// notMonitored is the administrative commands of nanokv's own, which Redis's table
// (redisMeta) does not know.
var notMonitored = map[string]bool{
	"raft.cluster": true, "raft.node": true, "raft.debug": true, "raft.transfer_leader": true, "raft.timeout_now": true,
}

// adminCommands are the commands and subcommands ("config|get") Redis flags admin.
var adminCommands = func() map[string]bool {
	m := map[string]bool{}
	for name, meta := range redisMeta {
		if slices.Contains(strings.Fields(meta.flags), "admin") {
			m[name] = true
		}
	}
	return m
}()

// monitored reports whether args, a command that ran, is shown to monitors: not when
// Redis flags it (or its subcommand) admin, as Redis's call() feeds monitors.
func monitored(args [][]byte) bool {
	name := strings.ToLower(string(args[0]))
	if notMonitored[name] {
		return false
	}
	if len(args) > 1 {
		full := name + "|" + strings.ToLower(string(args[1]))
		if _, isSub := redisMeta[full]; isSub {
			return !adminCommands[full]
		}
	}
	return !adminCommands[name]
}

// feedMonitors shows a command c ran in database db to every monitor.
func (c *conn) feedMonitors(db int, args [][]byte) {
	if c.s.mon.n.Load() == 0 || !monitored(args) {
		return
	}
	line := monitorLine(db, c.addr, args)
	if c.monitoring {
		c.flushOut() // a monitor's own command: its reply comes before its line
	}
	c.s.mon.feed(line)
}

// feedScript shows a command a script ran in database db (kvstore.ScriptMonitor), as
// Redis does: "[db lua]", after the script's own line.
func (s *Server) feedScript(db int, args [][]byte) {
	if s.mon.n.Load() == 0 || !monitored(args) {
		return
	}
	s.mon.feed(monitorLine(db, "lua", args))
}

func (m *monitorSet) feed(line []byte) {
	m.mu.Lock()
	for c := range m.set {
		c.sub.add(line, false, false)
	}
	m.mu.Unlock()
}

// monitorLine is a monitor's line for args, run in database db by a client at origin.
func monitorLine(db int, origin string, args [][]byte) []byte {
	now := time.Now()
	line := make([]byte, 0, 64)
	line = append(line, '+')
	line = strconv.AppendInt(line, now.Unix(), 10)
	line = append(line, '.')
	us := strconv.Itoa(now.Nanosecond() / 1000)
	line = append(append(line, "000000"[len(us):]...), us...)
	line = append(line, " ["...)
	line = strconv.AppendInt(line, int64(db), 10)
	line = append(line, ' ')
	line = append(line, origin...)
	line = append(line, ']')
	for i, a := range args {
		line = append(line, ' ')
		if redacted(args, i) {
			line = append(line, `"(redacted)"`...)
			continue
		}
		line = appendRepr(line, a)
	}
	return append(line, '\r', '\n')
}

// redacted reports whether a monitor must not see args[i]: AUTH's arguments, and the
// username and password after HELLO's AUTH.
func redacted(args [][]byte, i int) bool {
	switch {
	case i == 0:
		return false
	case strings.EqualFold(string(args[0]), "auth"):
		return true
	case strings.EqualFold(string(args[0]), "hello"):
		for j := 2; j < i; j++ {
			if strings.EqualFold(string(args[j]), "auth") && i <= j+2 {
				return true
			}
		}
	}
	return false
}

// appendRepr quotes a as Redis's sdscatrepr does: \\ \" \n \r \t \a \b escaped, other
// bytes outside printable ASCII as \xhh.
func appendRepr(b, a []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, ch := range a {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if ch >= 0x20 && ch < 0x7f {
				b = append(b, ch)
			} else {
				b = append(b, '\\', 'x', hex[ch>>4], hex[ch&15])
			}
		}
	}
	return append(b, '"')
}
