package server

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

func startMCCluster(t *testing.T) map[uint64]*Server {
	return startCluster(t, 3, func(c *Config) { c.MemcacheAddr = "127.0.0.1:0" })
}

// TestClusterMemcache: a cluster member's memcached frontend (an asynchronous event loop)
// answers a pipeline of writes and reads in order, reads see the writes before them,
// the writes reach every member, and a follower refuses as the Redis frontend does.
func TestClusterMemcache(t *testing.T) {
	servers := startMCCluster(t)
	leadID, lead := leaderOf(t, servers, 0)
	c := rawDial(t, lead.MemcacheAddr())
	c.exchange(t, "set a 3 0 1\r\nx\r\nget a\r\nincr n 1\r\nset n 0 0 1\r\n5\r\nincr n 2\r\nappend a 0 0 1\r\ny\r\nget a n\r\n",
		"STORED\r\nVALUE a 3 1\r\nx\r\nEND\r\nNOT_FOUND\r\nSTORED\r\n7\r\nSTORED\r\nVALUE a 3 2\r\nxy\r\nVALUE n 0 1\r\n7\r\nEND\r\n")
	c.exchange(t, "set q 0 0 1 noreply\r\nz\r\ndelete q\r\ndelete q\r\nmn\r\n", "DELETED\r\nNOT_FOUND\r\nMN\r\n")

	moved := "SERVER_ERROR MOVED 0 " + lead.RedisAddr() + "\r\n"
	for id, s := range servers {
		if id == leadID {
			continue
		}
		awaitLeaderKnown(t, s, leadID)
		f := rawDial(t, s.MemcacheAddr())
		f.exchange(t, "get a\r\nset b 0 0 1\r\ny\r\nmn\r\n", moved+moved+"MN\r\n")
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
	c := rawDial(t, lead.MemcacheAddr())
	c.exchange(t, "set a 0 0 1\r\nx\r\n", "STORED\r\n")
	for id, s := range servers {
		if id != leadID {
			s.Close()
		}
	}
	if _, err := c.nc.Write([]byte("set a 0 0 1\r\ny\r\nget a\r\n")); err != nil {
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
	f, l := rawDial(t, follower.MemcacheAddr()), rawDial(t, lead.MemcacheAddr())
	for i := range 20 {
		v := strconv.Itoa(i)
		f.exchange(t, "set k 0 0 "+strconv.Itoa(len(v))+"\r\n"+v+"\r\nincr n 1\r\nget k\r\n",
			"STORED\r\nNOT_FOUND\r\nVALUE k 0 "+strconv.Itoa(len(v))+"\r\n"+v+"\r\nEND\r\n")
		l.exchange(t, "set l 0 0 "+strconv.Itoa(len(v))+"\r\n"+v+"\r\n", "STORED\r\n")
		f.exchange(t, "get l\r\n", "VALUE l 0 "+strconv.Itoa(len(v))+"\r\n"+v+"\r\nEND\r\n")
	}
	l.exchange(t, "get k\r\n", "VALUE k 0 2\r\n19\r\nEND\r\n")
}
