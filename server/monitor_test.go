package server

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var monitorStamp = regexp.MustCompile(`^\+\d+\.\d{6} \[(\d+) 127\.0\.0\.1:\d+\] `)

// monitorLine reads one MONITOR line, with its timestamp and client address masked.
func monitorLine(t *testing.T, m *raw) string {
	t.Helper()
	return monitorStamp.ReplaceAllString(m.readReply(t), "[$1] ")
}

// monitored starts a node (a single-member cluster when member: its connections start
// on the asynchronous event loop) with a monitor m and a client c.
func monitored(t *testing.T, member bool) (s *Server, m, c *raw) {
	t.Helper()
	cfg := Config{MemoryOnly: true}
	if member {
		cfg = memberConfig(t, cfg)
	}
	s = startServer(t, cfg)
	if member {
		awaitLead(t, s)
	}
	m = rawConn(t, s)
	m.expect(t, "+OK", "MONITOR")
	return s, m, rawConn(t, s)
}

// MONITOR shows what clients run as Redis 7.0 writes it (checked line by line against
// redis-server): commands once they ran, the database they ran in, quoted arguments,
// credentials redacted, a transaction's commands at EXEC; no administrative commands and
// no refused ones. A monitor cannot touch the keyspace; RESET ends monitoring.
func TestMonitor(t *testing.T) {
	for _, member := range []bool{false, true} {
		s, m, c := monitored(t, member)
		for _, cmd := range [][]string{
			{"SET", `k"`, "a\nb\x01\\"}, {"AUTH", "secret"}, {"SELECT", "1"}, {"MULTI"}, {"GET", "k"},
			{"EXEC"}, {"CONFIG", "GET", "port"}, {"FOO"}, {"GET"}, {"CLIENT"}, {"HELLO", "2", "AUTH", "u", "p"}, {"INCR", "n"},
		} {
			c.send(cmd...)
			c.readReply(t)
		}
		for _, want := range []string{
			`[0] "SET" "k\"" "a\nb\x01\\"`, `[0] "AUTH" "(redacted)"`, `[1] "SELECT" "1"`, `[1] "MULTI"`,
			`[1] "GET" "k"`, `[1] "EXEC"`, `[1] "HELLO" "2" "AUTH" "(redacted)" "(redacted)"`, `[1] "INCR" "n"`,
		} {
			if got := monitorLine(t, m); got != want {
				t.Fatalf("member %v: %q, want %q", member, got, want)
			}
		}
		m.expect(t, "-ERR Replica can't interact with the keyspace", "GET", "k")
		m.expect(t, "+PONG", "PING")
		if got := monitorLine(t, m); got != `[0] "PING"` {
			t.Fatalf("the monitor's own PING: %q", got)
		}
		m.send("CLIENT", "LIST")
		if list := m.readReply(t); strings.Count(list, "flags=O ") != 1 {
			t.Fatalf("CLIENT LIST shows no monitor (flags=O):\n%s", list)
		}
		m.expect(t, "+PONG", "PING")
		if got := monitorLine(t, m); got != `[0] "PING"` { // CLIENT LIST is admin: not shown
			t.Fatalf("after the monitor's own CLIENT LIST: %q", got)
		}
		m.expect(t, "+RESET", "RESET")
		m.expect(t, "$-1", "GET", "k") // no longer a monitor, and nothing more queued for it
		c.expect(t, "+OK", "QUIT")
		s.Close()
	}
}

// MONITOR leaves out what Redis flags admin, subcommands by their own flags (CLIENT LIST
// but not CLIENT SETNAME): the lines redis-server 7.0.15 shows for these commands.
func TestMonitorHidesAdminCommands(t *testing.T) {
	for _, member := range []bool{false, true} {
		s, m, c := monitored(t, member)
		for _, cmd := range []string{"CLIENT LIST", "CLIENT SETNAME x", "SLOWLOG GET", "SLOWLOG LEN",
			"CONFIG GET maxmemory", "INFO server", "LASTSAVE", "ACL WHOAMI", "ACL LIST", "REPLCONF capa eof",
			"LATENCY LATEST", "MEMORY STATS", "DBSIZE", "ROLE", "CLIENT NO-EVICT on", "MODULE LIST",
			"CLIENT PAUSE 1", "CLIENT UNPAUSE", "RAFT.DEBUG DIGEST", "PING done"} {
			c.send(strings.Fields(cmd)...)
			c.readReply(t)
		}
		for _, want := range []string{`[0] "CLIENT" "SETNAME" "x"`, `[0] "INFO" "server"`, `[0] "LASTSAVE"`,
			`[0] "ACL" "WHOAMI"`, `[0] "MEMORY" "STATS"`, `[0] "DBSIZE"`, `[0] "ROLE"`, `[0] "PING" "done"`} {
			if got := monitorLine(t, m); got != want {
				t.Fatalf("member %v: %q, want %q", member, got, want)
			}
		}
		s.Close()
	}
}

var luaStamp = regexp.MustCompile(`^\+\d+\.\d{6} \[(\d+) lua\] `)

// MONITOR shows the commands a script runs, as Redis does: after the script's line, as
// "[db lua]", for EVAL and FCALL through the applier and EVAL_RO on the read path.
func TestMonitorShowsScriptCalls(t *testing.T) {
	for _, member := range []bool{false, true} {
		s, m, c := monitored(t, member)
		c.expect(t, "+OK", "SELECT", "2")
		c.expect(t, "$1\r\nv", "EVAL", "redis.call('set', KEYS[1], 'v') return redis.call('get', KEYS[1])", "1", "k")
		c.expect(t, "$1\r\nv", "EVAL_RO", "return redis.call('get', KEYS[1])", "1", "k")
		c.expect(t, "$1\r\nl", "FUNCTION", "LOAD", "#!lua name=l\nredis.register_function('f', function() return redis.call('ping') end)")
		c.expect(t, "+PONG", "FCALL", "f", "0")
		for _, want := range []string{
			`[2] "SELECT" "2"`,
			`[2] "EVAL" "redis.call('set', KEYS[1], 'v') return redis.call('get', KEYS[1])" "1" "k"`,
			`[2 lua] "set" "k" "v"`, `[2 lua] "get" "k"`,
			`[2] "EVAL_RO" "return redis.call('get', KEYS[1])" "1" "k"`, `[2 lua] "get" "k"`,
			`[2] "FUNCTION" "LOAD" "#!lua name=l\nredis.register_function('f', function() return redis.call('ping') end)"`,
			`[2] "FCALL" "f" "0"`, `[2 lua] "ping"`,
		} {
			got := luaStamp.ReplaceAllString(monitorLine(t, m), "[$1 lua] ")
			if got != want {
				t.Fatalf("member %v: %q, want %q", member, got, want)
			}
		}
		s.Close()
	}
}

// Without client-side caching, CLIENT GETREDIR and TRACKINGINFO answer as Redis does for
// a client that never turned tracking on (bytes from redis-server, RESP2 and RESP3).
func TestClientTrackingOff(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	r := rawConn(t, s)
	r.expect(t, ":-1", "CLIENT", "GETREDIR")
	r.expect(t, "*6\r\n$5\r\nflags\r\n*1\r\n$3\r\noff\r\n$8\r\nredirect\r\n:-1\r\n$8\r\nprefixes\r\n*0", "CLIENT", "TRACKINGINFO")
	r.send("HELLO", "3")
	r.readReply(t)
	r.expect(t, "%3\r\n$5\r\nflags\r\n~1\r\n$3\r\noff\r\n$8\r\nredirect\r\n:-1\r\n$8\r\nprefixes\r\n*0", "CLIENT", "TRACKINGINFO")
}

// MEMORY USAGE goes through the read path: nil for a missing key, bytes for a present
// one, Redis's errors for its options.
func TestMemoryUsageCommand(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	r := rawConn(t, s)
	r.expect(t, "+OK", "SET", "k", "hello")
	r.expect(t, "$-1", "MEMORY", "USAGE", "nosuch")
	r.send("MEMORY", "USAGE", "k")
	if got := r.readReply(t); len(got) < 2 || got[0] != ':' || got == ":0" {
		t.Fatalf("MEMORY USAGE k: %q", got)
	}
	r.expect(t, "-ERR syntax error", "MEMORY", "USAGE", "k", "SAMPLES", "-1")
	r.expect(t, "-ERR wrong number of arguments for 'memory|usage' command", "MEMORY", "USAGE")
}

// SLOWLOG: with slowlog-log-slower-than 0 every timed command is logged, the newest
// first, its arguments cut as Redis cuts them (32 at most, 128 bytes each), with the
// client's address and name; slowlog-max-len bounds it, RESET empties it.
func TestSlowlog(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	r := rawConn(t, s)
	r.expect(t, "+OK", "CONFIG", "SET", "slowlog-log-slower-than", "0")
	r.expect(t, "+OK", "SLOWLOG", "RESET")
	r.expect(t, "+OK", "CLIENT", "SETNAME", "app")
	long := strings.Repeat("k", 200)
	args := []string{"SUNION", long}
	for i := 1; i < 40; i++ {
		args = append(args, "k"+strconv.Itoa(i))
	}
	r.expect(t, "*0", args...)
	r.expect(t, ":0", "ZUNIONSTORE", "z", "1", "nosuch") // a write, timed by the applier
	r.send("SLOWLOG", "GET", "3")
	got := regexp.MustCompile(`:\d+\r\n:\d+\r\n:\d+\r\n`).ReplaceAllString(r.readReply(t), "ID TIME US\r\n")
	addr := regexp.MustCompile(`127\.0\.0\.1:\d+`).FindString(got)
	sunion := "*" + strconv.Itoa(32) + "\r\n$6\r\nSUNION\r\n$147\r\n" + long[:128] + "... (72 more bytes)\r\n"
	for i := 1; i < 30; i++ {
		k := "k" + strconv.Itoa(i)
		sunion += "$" + strconv.Itoa(len(k)) + "\r\n" + k + "\r\n"
	}
	sunion += "$23\r\n... (10 more arguments)\r\n"
	want := "*3\r\n" +
		"*6\r\nID TIME US\r\n*4\r\n$11\r\nZUNIONSTORE\r\n$1\r\nz\r\n$1\r\n1\r\n$6\r\nnosuch\r\n$15\r\n" + addr + "\r\n$3\r\napp\r\n" +
		"*6\r\nID TIME US\r\n" + sunion + "$15\r\n" + addr + "\r\n$3\r\napp\r\n" +
		"*6\r\nID TIME US\r\n*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$3\r\napp\r\n$15\r\n" + addr + "\r\n$3\r\napp"
	if len(addr) != 15 || got != want {
		t.Fatalf("SLOWLOG GET 3:\n got %q\nwant %q", got, want)
	}
	// At 0 Redis logs every command; nanokv times the ones Redis flags fast then too.
	r.expect(t, "+OK", "SLOWLOG", "RESET")
	r.expect(t, "$-1", "GET", "nosuch")
	r.expect(t, ":1", "INCR", "n")      // a fast write, timed by the applier
	r.expect(t, "+OK", "SET", "s", "v") // a blind write: it waits for its apply at 0
	r.send("SLOWLOG", "GET", "3")
	got = regexp.MustCompile(`:\d+\r\n:\d+\r\n:\d+\r\n`).ReplaceAllString(r.readReply(t), "ID TIME US\r\n")
	want = "*3\r\n" +
		"*6\r\nID TIME US\r\n*3\r\n$3\r\nSET\r\n$1\r\ns\r\n$1\r\nv\r\n$15\r\n" + addr + "\r\n$3\r\napp\r\n" +
		"*6\r\nID TIME US\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n$15\r\n" + addr + "\r\n$3\r\napp\r\n" +
		"*6\r\nID TIME US\r\n*2\r\n$3\r\nGET\r\n$6\r\nnosuch\r\n$15\r\n" + addr + "\r\n$3\r\napp"
	if got != want {
		t.Fatalf("SLOWLOG GET 3 after a GET, an INCR and a SET at slowlog-log-slower-than 0:\n got %q\nwant %q", got, want)
	}
	r.expect(t, "+OK", "CONFIG", "SET", "slowlog-max-len", "2")
	r.expect(t, ":2", "SLOWLOG", "LEN")
	r.expect(t, "+OK", "CONFIG", "SET", "slowlog-log-slower-than", "-1")
	r.expect(t, "+OK", "SLOWLOG", "RESET")
	r.expect(t, "*0", "KEYS", "nosuch*")
	r.expect(t, ":0", "SLOWLOG", "LEN") // off: nothing is logged
}
