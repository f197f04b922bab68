package server

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nanokv/nanokv/resp"
	"github.com/redis/go-redis/v9"
)

// startCluster starts n members of a static cluster in this process, on loopback ports
// chosen by the kernel.
func startCluster(t *testing.T, n int) map[uint64]*Server {
	t.Helper()
	lns := map[uint64]net.Listener{}
	peers := map[uint64]string{}
	for id := uint64(1); id <= uint64(n); id++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[id], peers[id] = ln, ln.Addr().String()
	}
	servers := map[uint64]*Server{}
	for id := uint64(1); id <= uint64(n); id++ {
		s := startServer(t, Config{NodeID: id, Peers: peers, ClusterListener: lns[id],
			TickInterval: 5 * time.Millisecond, ElectionTicks: 10, Fsync: 0})
		servers[id] = s
		t.Cleanup(func() { s.Close() })
	}
	return servers
}

// leaderOf polls until one of the servers (other than the excluded) leads.
func leaderOf(t *testing.T, servers map[uint64]*Server, exclude uint64) (uint64, *Server) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for id, s := range servers {
			if id != exclude && s.cluster.isLeader() {
				return id, s
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("no leader elected")
	return 0, nil
}

func TestClusterReplicatesAndRedirects(t *testing.T) {
	servers := startCluster(t, 3)
	ctx := context.Background()
	leadID, lead := leaderOf(t, servers, 0)
	c := client(t, lead)
	if err := c.Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Incr(ctx, "n").Result(); err != nil || got != 1 {
		t.Fatalf("INCR: %v %v", got, err)
	}
	if got := c.Get(ctx, "k").Val(); got != "v1" {
		t.Fatalf("GET on the leader: %q", got)
	}
	info := c.Info(ctx, "raft").Val()
	for _, want := range []string{"raft_role:leader", "raft_num_voting_nodes:3", "raft_is_voting:yes"} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO raft lacks %q:\n%s", want, info)
		}
	}
	// A follower redirects reads and writes to the leader, as RedisRaft does; once it has
	// applied the write its store holds it too.
	for id, s := range servers {
		if id == leadID {
			continue
		}
		fc := client(t, s)
		for _, err := range []error{fc.Get(ctx, "k").Err(), fc.Set(ctx, "k", "x", 0).Err()} {
			if err == nil || err.Error() != "MOVED 0 "+lead.RedisAddr() {
				t.Fatalf("member %d: %v, want MOVED 0 %s", id, err, lead.RedisAddr())
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			st := s.cluster.raft.Status()
			if st.AppliedIndex >= lead.cluster.raft.Status().CommitIndex {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d did not apply: %+v", id, st)
			}
			time.Sleep(time.Millisecond)
		}
		var w resp.Writer
		s.Store().Read(0, time.Now().UnixMilli(), [][]byte{[]byte("get"), []byte("k")}, &w)
		if got := string(w.B); got != "$2\r\nv1\r\n" {
			t.Fatalf("member %d store: %q", id, got)
		}
	}
}

func TestClusterFailover(t *testing.T) {
	servers := startCluster(t, 3)
	ctx := context.Background()
	leadID, lead := leaderOf(t, servers, 0)
	if err := client(t, lead).Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	lead.Close()
	start := time.Now()
	_, next := leaderOf(t, servers, leadID)
	t.Logf("failover took %v", time.Since(start))
	c := client(t, next)
	if got := c.Get(ctx, "k").Val(); got != "before" {
		t.Fatalf("acknowledged write lost in failover: %q", got)
	}
	if err := c.Set(ctx, "k", "after", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got := c.Get(ctx, "k").Val(); got != "after" {
		t.Fatalf("GET after failover: %q", got)
	}
}

// With no leader reachable, a member answers -CLUSTERDOWN instead of hanging.
func TestClusterDownWithoutQuorum(t *testing.T) {
	servers := startCluster(t, 3)
	leadID, _ := leaderOf(t, servers, 0)
	var survivor *Server
	for id, s := range servers {
		if id != leadID && survivor == nil {
			survivor = s
			continue
		}
		s.Close()
	}
	c := client(t, survivor, func(o *redis.Options) { o.MaxRetries = -1 })
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.Set(context.Background(), "k", "v", 0).Err()
		if err != nil && strings.HasPrefix(err.Error(), "CLUSTERDOWN") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("last answer %v, want CLUSTERDOWN", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
