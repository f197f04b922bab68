package server

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Config.OffloadInFlight reaches the leader's engine: with a limit of one batch, writes
// proposed while a batch awaits its commit are held (INFO raft's raft_offload_held
// counts them); with no limit (negative) nothing ever is, under the same load.
func TestOffloadInFlightReachesTheEngine(t *testing.T) {
	for _, tc := range []struct {
		inFlight int
		held     bool
	}{{1, true}, {-1, false}} {
		t.Run(fmt.Sprint(tc.inFlight), func(t *testing.T) {
			servers := startCluster(t, 3, func(c *Config) { c.Offload, c.OffloadInFlight = true, tc.inFlight })
			_, lead := leaderOf(t, servers, 0)
			ctx := context.Background()
			c := client(t, lead)
			field := func(name string) string { return infoField(c.Info(ctx, "raft").Val(), name) }
			for deadline := time.Now().Add(10 * time.Second); field("raft_offload_accelerated") != "yes"; {
				if time.Now().After(deadline) {
					t.Fatal("the engine never opened its term")
				}
				time.Sleep(2 * time.Millisecond)
			}
			// Rounds of eight clients writing at once: with the limit, until one write was
			// held; without, fifty rounds.
			held := func() uint64 { n, _ := strconv.ParseUint(field("raft_offload_held"), 10, 64); return n }
			for round := 0; round < 200; round++ {
				var wg sync.WaitGroup
				for w := range 8 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if err := c.Set(ctx, fmt.Sprintf("k%d:%d", round, w), "v", 0).Err(); err != nil {
							t.Error(err)
						}
					}()
				}
				wg.Wait()
				if tc.held && held() > 0 || !tc.held && round == 49 {
					break
				}
			}
			if got := held() > 0; got != tc.held {
				t.Fatalf("OffloadInFlight %d: raft_offload_held %d", tc.inFlight, held())
			}
			if field("raft_offload_batches") == "0" {
				t.Fatal("no batch went through the engine")
			}
			for _, f := range []string{"raft_offload_detached", "raft_offload_rejoined"} {
				if _, err := strconv.ParseUint(field(f), 10, 64); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
			}
		})
	}
}
