package server

import (
	"context"
	"strconv"
	"strings"
	"sync"
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

// TestClusterMemcacheWinTokenOnce: memcached's recache token is replicated state the log
// decides, so among clients racing on the leader and on a proxying follower exactly one
// mg wins each key (W), the others see Z; after md I exactly one wins the stale item
// (X W), the others see Z X; and every member ends with the same store.
func TestClusterMemcacheWinTokenOnce(t *testing.T) {
	servers := startMCCluster(t)
	leadID, lead := leaderOf(t, servers, 0)
	var conns []*raw
	for id, s := range servers {
		if id == leadID {
			conns = append(conns, rawDial(t, s.MemcacheAddr()), rawDial(t, s.MemcacheAddr()))
			continue
		}
		awaitLeaderKnown(t, s, leadID)
		if err := client(t, s).ConfigSet(context.Background(), "raft.follower-proxy", "yes").Err(); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, rawDial(t, s.MemcacheAddr()))
	}
	// race sends req on every connection at once and returns the replies (one line each)
	race := func(req string) []string {
		t.Helper()
		replies := make([]string, len(conns))
		errs := make([]error, len(conns))
		var wg sync.WaitGroup
		for i, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, errs[i] = c.nc.Write([]byte(req)); errs[i] == nil {
					replies[i], errs[i] = c.r.ReadString('\n')
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		return replies
	}
	count := func(replies []string, won, lost string) {
		t.Helper()
		wins := 0
		for _, r := range replies {
			switch r {
			case won:
				wins++
			case lost:
			default:
				t.Fatalf("reply %q, want %q or %q", r, won, lost)
			}
		}
		if wins != 1 {
			t.Fatalf("%d of %d racing clients won the token (%q), want 1", wins, len(replies), replies)
		}
	}
	for i := range 20 {
		k := "w" + strconv.Itoa(i)
		count(race("mg "+k+" N30\r\n"), "HD W\r\n", "HD Z\r\n")
		rawDial(t, lead.MemcacheAddr()).exchange(t, "md "+k+" I\r\n", "HD\r\n")
		count(race("mg "+k+"\r\n"), "HD X W\r\n", "HD Z X\r\n")
	}
	awaitSameStores(t, servers, lead)
}

// awaitSameStores waits until every member has applied what the leader has and holds
// the same store (AppliedDigest: a digest taken between two entries, as the applier
// may be applying one).
func awaitSameStores(t *testing.T, servers map[uint64]*Server, lead *Server) {
	t.Helper()
	for id, s := range servers {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			li, ld := lead.Store().AppliedDigest()
			i, d := s.Store().AppliedDigest()
			if i == li && d == ld {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d's store (entry %d) differs from the leader's (entry %d)", id, i, li)
			}
		}
	}
}

// TestClusterMemcacheDelayedFlush: a delayed flush_all is replicated state that the
// entries' clock decides: every member hides the items once the flush's second comes,
// empties database 0 at the same entry after it, and ends with the same store.
func TestClusterMemcacheDelayedFlush(t *testing.T) {
	servers := startMCCluster(t)
	_, lead := leaderOf(t, servers, 0)
	l := rawDial(t, lead.MemcacheAddr())
	l.exchange(t, "set a 0 0 1\r\n1\r\nset b 0 0 1\r\n2\r\nflush_all 2\r\nget a\r\n", "STORED\r\nSTORED\r\nOK\r\nVALUE a 0 1\r\n1\r\nEND\r\n")
	for id, s := range servers {
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			_, a := s.Store().MCGet([]byte("a"), time.Now().UnixMilli())
			_, b := s.Store().MCGet([]byte("b"), time.Now().UnixMilli())
			if !a && !b {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d still has the items 5 s after flush_all 2", id)
			}
		}
	}
	// Written during the flush's second, c is flushed too; the first write after it
	// empties database 0 first, and c stays.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		l.exchange(t, "set c 0 0 1\r\n3\r\n", "STORED\r\n")
		if lead.Store().DBSize(0) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("database 0 still holds %d keys 5 s after flush_all 2", lead.Store().DBSize(0))
		}
	}
	l.exchange(t, "get a b c\r\n", "VALUE c 0 1\r\n3\r\nEND\r\n")
	awaitSameStores(t, servers, lead)
	for id, s := range servers {
		if n := s.Store().DBSize(0); n != 1 {
			t.Fatalf("member %d: %d keys in database 0", id, n)
		}
	}
}
