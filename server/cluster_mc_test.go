package server

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mcConn is a raw memcached text-protocol connection.
type mcConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dialMC(t *testing.T, s *Server) *mcConn {
	t.Helper()
	c, err := net.Dial("tcp", s.MemcacheAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &mcConn{t: t, c: c, r: bufio.NewReader(c)}
}

// do sends req and reads lines until it has as many as want holds, which it compares.
func (m *mcConn) do(req, want string) {
	m.t.Helper()
	m.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := m.c.Write([]byte(req)); err != nil {
		m.t.Fatal(err)
	}
	var got strings.Builder
	for range strings.Count(want, "\n") {
		line, err := m.r.ReadString('\n')
		got.WriteString(line)
		if err != nil {
			m.t.Fatalf("after %q: %v", got.String(), err)
		}
	}
	if got.String() != want {
		m.t.Fatalf("%q:\n got %q\nwant %q", req, got.String(), want)
	}
}

func startMCCluster(t *testing.T) map[uint64]*Server {
	return startCluster(t, 3, func(c *Config) { c.MemcacheAddr = "127.0.0.1:0" })
}

// TestClusterMemcache: a cluster member's memcached frontend (an asynchronous event loop)
// answers a pipeline of writes and reads in order, reads see the writes before them,
// the writes reach every member, and a follower refuses as the Redis frontend does.
func TestClusterMemcache(t *testing.T) {
	servers := startMCCluster(t)
	leadID, lead := leaderOf(t, servers, 0)
	c := dialMC(t, lead)
	c.do("set a 3 0 1\r\nx\r\nget a\r\nincr n 1\r\nset n 0 0 1\r\n5\r\nincr n 2\r\nappend a 0 0 1\r\ny\r\nget a n\r\n",
		"STORED\r\nVALUE a 3 1\r\nx\r\nEND\r\nNOT_FOUND\r\nSTORED\r\n7\r\nSTORED\r\nVALUE a 3 2\r\nxy\r\nVALUE n 0 1\r\n7\r\nEND\r\n")
	c.do("set q 0 0 1 noreply\r\nz\r\ndelete q\r\ndelete q\r\nmn\r\n", "DELETED\r\nNOT_FOUND\r\nMN\r\n")

	moved := "SERVER_ERROR MOVED 0 " + lead.RedisAddr() + "\r\n"
	for id, s := range servers {
		if id == leadID {
			continue
		}
		awaitLeaderKnown(t, s, leadID)
		f := dialMC(t, s)
		f.do("get a\r\nset b 0 0 1\r\ny\r\nmn\r\n", moved+moved+"MN\r\n")
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			if it, ok := s.Store().MCGet([]byte("a"), time.Now().UnixMilli()); ok && string(it.Value) == "xy" && it.Flags == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d never applied the leader's writes", id)
			}
		}
	}
}

// A write waiting on a leader that lost its quorum is answered with an error once the
// leader steps down, not left hanging: the asynchronous loop has no deadline of its own.
func TestClusterMemcacheWriteWithoutQuorumFails(t *testing.T) {
	servers := startMCCluster(t)
	leadID, lead := leaderOf(t, servers, 0)
	c := dialMC(t, lead)
	c.do("set a 0 0 1\r\nx\r\n", "STORED\r\n")
	for id, s := range servers {
		if id != leadID {
			s.Close()
		}
	}
	c.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.c.Write([]byte("set a 0 0 1\r\ny\r\nget a\r\n")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		line, err := c.r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(line, "SERVER_ERROR ") {
			t.Fatalf("reply %q, want SERVER_ERROR", line)
		}
		t.Logf("%q", line)
	}
}

// With follower-proxy, a follower's memcached clients write through the leader and read
// from the follower what any client wrote before: its loop's barrier is the proxied one
// (an entry through the leader's log), which TryReadBarrier never passes at once.
func TestClusterMemcacheFollowerProxy(t *testing.T) {
	servers := startMCCluster(t)
	leadID, lead := leaderOf(t, servers, 0)
	var follower *Server
	for id, s := range servers {
		if id != leadID {
			follower = s
		}
	}
	awaitLeaderKnown(t, follower, leadID)
	if err := client(t, follower).ConfigSet(context.Background(), "raft.follower-proxy", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	f, l := dialMC(t, follower), dialMC(t, lead)
	for i := range 20 {
		v := strconv.Itoa(i)
		f.do("set k 0 0 "+strconv.Itoa(len(v))+"\r\n"+v+"\r\nincr n 1\r\nget k\r\n",
			"STORED\r\nNOT_FOUND\r\nVALUE k 0 "+strconv.Itoa(len(v))+"\r\n"+v+"\r\nEND\r\n")
		l.do("set l 0 0 "+strconv.Itoa(len(v))+"\r\n"+v+"\r\n", "STORED\r\n")
		f.do("get l\r\n", "VALUE l 0 "+strconv.Itoa(len(v))+"\r\n"+v+"\r\nEND\r\n")
	}
	l.do("get k\r\n", "VALUE k 0 2\r\n19\r\nEND\r\n")
}
