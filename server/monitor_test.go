package server

import (
	"regexp"
	"testing"
)

var monitorStamp = regexp.MustCompile(`^\+\d+\.\d{6} \[(\d+) 127\.0\.0\.1:\d+\] `)

// monitorLine reads one MONITOR line, with its timestamp and client address masked.
func monitorLine(t *testing.T, m *raw) string {
	t.Helper()
	return monitorStamp.ReplaceAllString(m.readReply(t), "[$1] ")
}

// MONITOR shows what clients run as Redis 7.0 writes it (checked line by line against
// redis-server): commands once they ran, the database they ran in, quoted arguments,
// credentials redacted, a transaction's commands at EXEC; no administrative commands and
// no refused ones. A monitor cannot touch the keyspace; RESET ends monitoring.
func TestMonitor(t *testing.T) {
	for _, member := range []bool{false, true} {
		cfg := Config{MemoryOnly: true}
		if member {
			cfg = memberConfig(t, cfg) // connections start on the asynchronous event loop
		}
		s := startServer(t, cfg)
		if member {
			awaitLead(t, s)
		}
		m := rawConn(t, s)
		m.expect(t, "+OK", "MONITOR")
		c := rawConn(t, s)
		for _, cmd := range [][]string{
			{"SET", `k"`, "a\nb\x01\\"}, {"AUTH", "secret"}, {"SELECT", "1"}, {"MULTI"}, {"GET", "k"},
			{"EXEC"}, {"CONFIG", "GET", "port"}, {"FOO"}, {"GET"}, {"HELLO", "2", "AUTH", "u", "p"}, {"INCR", "n"},
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
		m.expect(t, "+RESET", "RESET")
		m.expect(t, "$-1", "GET", "k") // no longer a monitor, and nothing more queued for it
		c.expect(t, "+OK", "QUIT")
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
