package server

import (
	"strings"
	"testing"
)

// CLIENT PAUSE WRITE holds writes and lets reads through; CLIENT UNPAUSE lets the held
// write go on, its reply in order. The replies and errors are redis-server 7.0.15's.
func TestClientPause(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "single", true: "cluster_leader"}[cluster], func(t *testing.T) {
			s := startServer(t, Config{MemoryOnly: true})
			if cluster {
				s.Close()
				_, s = leaderOf(t, startCluster(t, 3), 0)
			} else {
				defer s.Close()
			}
			a, b, c := rawConn(t, s), rawConn(t, s), rawConn(t, s)
			a.expect(t, "-ERR timeout is not an integer or out of range", "CLIENT", "PAUSE", "abc")
			a.expect(t, "-ERR timeout is negative", "CLIENT", "PAUSE", "-1")
			a.expect(t, "-ERR CLIENT PAUSE mode must be WRITE or ALL", "CLIENT", "PAUSE", "10", "BOTH")
			a.expect(t, "-ERR unknown subcommand or wrong number of arguments for 'PAUSE'. Try CLIENT HELP.", "CLIENT", "PAUSE", "10", "WRITE", "x")
			a.expect(t, "-ERR wrong number of arguments for 'client|unpause' command", "CLIENT", "UNPAUSE", "x")

			a.expect(t, "+OK", "CLIENT", "PAUSE", "600000", "WRITE")
			b.send("SET", "k", "v") // held
			for i := 0; i < 50; i++ {
				c.expect(t, "$-1", "GET", "k") // reads go on; the write has not run
			}
			c.expect(t, ":0", "PUBLISH", "ch", "m") // as in Redis, PUBLISH is not held
			a.expect(t, "+OK", "CLIENT", "UNPAUSE")
			if got := b.readReply(t); got != "+OK" {
				t.Fatalf("the held SET: %q", got)
			}
			c.expect(t, "$1\r\nv", "GET", "k")

			// a pause that runs out lets everything go on by itself
			a.expect(t, "+OK", "CLIENT", "PAUSE", "20", "ALL")
			b.expect(t, "+PONG", "PING")
		})
	}
}

// CLIENT REPLY OFF drops every reply until ON, writes' included; SKIP drops the next
// one. Byte for byte what redis-server 7.0.15 sends for the same pipeline.
func TestClientReply(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	r := rawConn(t, s)
	r.exchange(t, respCommand("CLIENT", "REPLY", "SKIP")+respCommand("ECHO", "1")+respCommand("ECHO", "2"), "$1\r\n2\r\n")
	r.exchange(t, respCommand("CLIENT", "REPLY", "OFF")+respCommand("ECHO", "3")+respCommand("SET", "q", "1")+respCommand("BOGUS")+
		respCommand("CLIENT", "REPLY", "SKIP")+respCommand("CLIENT", "REPLY", "ON")+respCommand("ECHO", "4"), "+OK\r\n$1\r\n4\r\n")
	r.exchange(t, respCommand("SET", "q", "2")+respCommand("CLIENT", "REPLY", "SKIP")+respCommand("SET", "q", "3")+respCommand("GET", "q"), "+OK\r\n$1\r\n3\r\n")
	r.expect(t, "-ERR syntax error", "CLIENT", "REPLY", "MAYBE")
	r.expect(t, "-ERR syntax error", "CLIENT", "NO-EVICT", "maybe")
	r.send("CLIENT", "REPLY", "OFF")
	r.expect(t, "+RESET", "RESET") // RESET turns replies back on
	if help := r.readReplyAfter(t, "CLIENT", "HELP"); !strings.Contains(help, "REPLY (ON|OFF|SKIP)") || !strings.Contains(help, "TRACKING (ON|OFF)") {
		t.Fatalf("CLIENT HELP: %q", help)
	}
}

// COMMAND LIST lists subcommands too, and FILTERBY narrows it, as in Redis 7.0.
func TestCommandListFilterBy(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	r := rawConn(t, s)
	r.expect(t, "*4\r\n$5\r\npfadd\r\n$7\r\npfcount\r\n$7\r\npfdebug\r\n$7\r\npfmerge",
		"COMMAND", "LIST", "FILTERBY", "PATTERN", "PF*")
	r.expect(t, "*1\r\n$12\r\nclient|reply",
		"COMMAND", "LIST", "FILTERBY", "PATTERN", "client|re*")
	r.expect(t, "*0", "COMMAND", "LIST", "FILTERBY", "MODULE", "search")
	r.expect(t, "-ERR syntax error", "COMMAND", "LIST", "FILTERBY", "NAME", "x")
	r.expect(t, "-ERR syntax error", "COMMAND", "LIST", "FILTERBY")
	if got := r.readReplyAfter(t, "COMMAND", "LIST", "FILTERBY", "ACLCAT", "hyperloglog"); !strings.Contains(got, "$7\r\npfmerge") || strings.Contains(got, "$3\r\nget") {
		t.Fatalf("ACLCAT hyperloglog: %q", got)
	}
}

// CLIENT LIST shows another connection's name, database, protocol and last command as
// that connection left them.
func TestClientListShowsOtherConnections(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	a, b := rawConn(t, s), rawConn(t, s)
	a.expect(t, "+OK", "CLIENT", "SETNAME", "worker-1")
	b.expect(t, "+OK", "SELECT", "3")
	b.readReplyAfter(t, "HELLO", "3")
	b.expect(t, "_", "GET", "x")
	list := a.readReplyAfter(t, "CLIENT", "LIST")
	var mine, other string
	for _, l := range strings.Split(list, "\n") {
		switch {
		case strings.Contains(l, " name=worker-1 "):
			mine = l
		case strings.Contains(l, "id="):
			other = l
		}
	}
	for _, want := range []string{" db=0 ", " cmd=client|list ", " resp=2"} {
		if !strings.Contains(mine, want) {
			t.Fatalf("CLIENT LIST's own line lacks %q: %q", want, mine)
		}
	}
	for _, want := range []string{" name= ", " db=3 ", " cmd=get ", " resp=3"} {
		if !strings.Contains(other, want) {
			t.Fatalf("CLIENT LIST's line for the other connection lacks %q: %q", want, other)
		}
	}
	b.expect(t, "+OK", "CLIENT", "SETNAME", "worker-2")
	if list := a.readReplyAfter(t, "CLIENT", "LIST"); !strings.Contains(list, " name=worker-2 ") || !strings.Contains(list, " cmd=client|setname ") {
		t.Fatalf("CLIENT LIST after the other's SETNAME: %q", list)
	}
}
