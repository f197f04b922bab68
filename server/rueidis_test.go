package server

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// rueidis turns client-side caching on by default (CLIENT TRACKING ON OPTIN on every
// connection, CLIENT CACHING YES before each cached read) and refuses to start against
// a server without it. Its cache must serve repeated reads and drop a key once another
// client writes it: on a single node, and on a follower under follower-proxy (the write
// through the leader, the invalidation from the follower's own applier).
func TestRueidisClientSideCaching(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "single", true: "cluster_follower"}[cluster], func(t *testing.T) {
			var readAddr string
			var writer *Server
			if cluster {
				servers := startCluster(t, 3, func(c *Config) { c.FollowerProxy = true })
				i, lead := leaderOf(t, servers, 0)
				writer, readAddr = lead, servers[i%3+1].RedisAddr()
			} else {
				writer = startServer(t, Config{MemoryOnly: true})
				defer writer.Close()
				readAddr = writer.RedisAddr()
			}
			c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{readAddr}})
			if err != nil {
				t.Fatalf("rueidis against nanokv: %v", err)
			}
			defer c.Close()
			w := client(t, writer)
			ctx := context.Background()
			get := func() (string, bool) {
				r := c.DoCache(ctx, c.B().Get().Key("k").Cache(), time.Minute)
				v, err := r.ToString()
				if err != nil && !rueidis.IsRedisNil(err) {
					t.Fatal(err)
				}
				return v, r.IsCacheHit()
			}
			for round := 0; round < 5; round++ {
				want := strconv.Itoa(round)
				if err := w.Set(ctx, "k", want, 0).Err(); err != nil {
					t.Fatal(err)
				}
				// the invalidation of the previous value comes once the write is applied
				deadline := time.Now().Add(10 * time.Second)
				for {
					v, _ := get()
					if v == want {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("round %d: the cache still serves %q, the key holds %q", round, v, want)
					}
					time.Sleep(time.Millisecond)
				}
				// Then reads are served from the cache. (On a follower the first may miss
				// once more: a write applied there after the cached read was registered,
				// but before it in the log, invalidates it: spare, never stale.)
				for {
					v, hit := get()
					if v != want {
						t.Fatalf("round %d: read %q after %q, with no write between", round, v, want)
					}
					if hit {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("round %d: no read of %q was a cache hit", round, want)
					}
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
}
