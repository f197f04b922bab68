package server

import (
	"context"
	"fmt"
	"github.com/nanokv/nanokv/consensus"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// pipeline sends every command in one write and compares the replies, read as lines.
func pipeline(t *testing.T, c *raw, cmds [][]string, want string) {
	t.Helper()
	var req strings.Builder
	for _, cmd := range cmds {
		req.WriteString(respCommand(cmd...))
	}
	c.exchange(t, req.String(), want)
}

// TestClusterRedisEventLoop: a member's Redis connections start on its asynchronous
// event loop. A pipeline mixing writes, reads, errors and connection commands is
// answered in order, each read seeing the writes before it; a transaction moves the
// connection to a goroutine of its own with the rest of its pipeline, which it answers
// too; and the connection goes on from there.
func TestClusterRedisEventLoop(t *testing.T) {
	servers := startCluster(t, 3)
	_, lead := leaderOf(t, servers, 0)
	c := rawConn(t, lead)
	pipeline(t, c, [][]string{{"PING"}}, "+PONG\r\n")
	if n := lead.redis.LoopClients(); n != 1 {
		t.Fatalf("%d connections on the event loop, want 1", n)
	}
	pipeline(t, c, [][]string{
		{"SET", "a", "1"}, {"INCR", "a"}, {"GET", "a"}, {"PING"}, {"SET", "b", "x"},
		{"NOSUCH"}, {"APPEND", "b", "y"}, {"GET"}, {"SELECT", "1"}, {"GET", "b"}, {"SET", "b", "z"},
		{"SELECT", "0"}, {"MGET", "a", "b"},
	}, "+OK\r\n:2\r\n$1\r\n2\r\n+PONG\r\n+OK\r\n"+
		"-ERR unknown command 'NOSUCH', with args beginning with: \r\n:2\r\n"+
		"-ERR wrong number of arguments for 'get' command\r\n+OK\r\n$-1\r\n+OK\r\n"+
		"+OK\r\n*2\r\n$1\r\n2\r\n$2\r\nxy\r\n")
	// MULTI moves the connection to a goroutine, with what follows it in the pipeline.
	pipeline(t, c, [][]string{
		{"SET", "c", "1"}, {"MULTI"}, {"INCR", "c"}, {"INCR", "a"}, {"EXEC"}, {"GET", "c"}, {"SET", "d", "4"},
	}, "+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:2\r\n:3\r\n$1\r\n2\r\n+OK\r\n")
	if n := lead.redis.LoopClients(); n != 0 {
		t.Fatalf("%d connections on the event loop after MULTI, want 0", n)
	}
	pipeline(t, c, [][]string{{"GET", "d"}, {"CLIENT", "GETNAME"}, {"QUIT"}}, "$1\r\n4\r\n$-1\r\n+OK\r\n")
	if _, err := c.r.ReadByte(); err == nil {
		t.Fatal("the connection is open after QUIT")
	}
}

// Concurrent clients on the event loop each read their own writes, and every write
// reaches the store once: the shared counter ends at the number of increments.
func TestClusterRedisEventLoopConcurrentClients(t *testing.T) {
	servers := startCluster(t, 3)
	_, lead := leaderOf(t, servers, 0)
	const clients, rounds = 16, 100
	ctx := context.Background()
	var wg sync.WaitGroup
	errc := make(chan error, clients)
	for i := range clients {
		cl := client(t, lead, func(o *redis.Options) { o.PoolSize = 1 })
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("k%d", i)
			for j := range rounds {
				p := cl.Pipeline()
				p.Set(ctx, key, j, 0)
				p.Incr(ctx, "shared")
				get := p.Get(ctx, key)
				if _, err := p.Exec(ctx); err != nil {
					errc <- err
					return
				}
				if v, _ := get.Int(); v != j {
					errc <- fmt.Errorf("client %d round %d read %d", i, j, v)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if n, err := client(t, lead).Get(ctx, "shared").Int(); err != nil || n != clients*rounds {
		t.Fatalf("shared counter %d, %v; want %d", n, err, clients*rounds)
	}
}

// leaderLeftAlone writes k on the cluster's leader and stops every other member; it
// returns the leader and a client of it that does not retry.
func leaderLeftAlone(t *testing.T, servers map[uint64]*Server) (*Server, *redis.Client) {
	t.Helper()
	leadID, lead := leaderOf(t, servers, 0)
	cl := client(t, lead, func(o *redis.Options) { o.MaxRetries = -1; o.ReadTimeout = 10 * time.Second })
	if err := cl.Set(context.Background(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for id, s := range servers {
		if id != leadID {
			s.Close()
		}
	}
	return lead, cl
}

// A write on a leader that lost its quorum is answered -TIMEOUT by the event loop, as
// by a goroutine: the loop keeps the request timeout itself.
func TestClusterRedisEventLoopTimesOut(t *testing.T) {
	_, cl := leaderLeftAlone(t, startCluster(t, 3))
	err := cl.Set(context.Background(), "k", "w", 0).Err()
	if err == nil || !(strings.HasPrefix(err.Error(), "TIMEOUT") || strings.HasPrefix(err.Error(), "CLUSTERDOWN")) {
		t.Fatalf("SET without quorum: %v, want TIMEOUT or CLUSTERDOWN", err)
	}
	t.Logf("%v", err)
}

// A read the leader cannot confirm with a majority in time is answered with RedisRaft's
// "TIMEOUT no quorum for read"; a write whose entry left the log, with its "TIMEOUT not
// committed yet". Strict reads (a ReadIndex round per read) and a request timeout well
// inside the election timeout keep the leader leading while the read waits. The event
// loop times the read out itself; a connection's own goroutine through its context.
func TestClusterTimeoutsInRedisRaftsWords(t *testing.T) {
	for _, loop := range []bool{true, false} {
		t.Run(fmt.Sprintf("event loop %v", loop), func(t *testing.T) { testTimeoutsInRedisRaftsWords(t, loop) })
	}
}

func testTimeoutsInRedisRaftsWords(t *testing.T, loop bool) {
	servers := startCluster(t, 3, func(cfg *Config) {
		cfg.ReadConsistency, cfg.RequestTimeout, cfg.ElectionTicks = "strict", 100*time.Millisecond, 200
		cfg.RedisNoEventLoop = !loop
	})
	lead, cl := leaderLeftAlone(t, servers)
	if err := cl.Get(context.Background(), "k").Err(); err == nil || err.Error() != "TIMEOUT no quorum for read" {
		t.Fatalf("GET without quorum: %v, want TIMEOUT no quorum for read", err)
	}
	if err := lead.cl().clientError(consensus.ErrDropped); err == nil || err.Error() != "TIMEOUT not committed yet" {
		t.Fatalf("a dropped proposal: %v, want TIMEOUT not committed yet", err)
	}
}
