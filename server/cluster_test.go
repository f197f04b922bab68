package server

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nanokv/nanokv/resp"
	"github.com/redis/go-redis/v9"
)

// clusterMode is the replication of startCluster's members: offload, nanokv's default, or
// raft. CI runs this package once in each.
var clusterMode = flag.String("cluster.mode", "offload", "replication of startCluster's members: offload or raft")

// startCluster starts n members of a static cluster in this process, on loopback ports
// chosen by the kernel; opts adjust each member's configuration.
func startCluster(t *testing.T, n int, opts ...func(*Config)) map[uint64]*Server {
	t.Helper()
	lns, peers := memberListeners(t, n)
	servers := map[uint64]*Server{}
	for id := uint64(1); id <= uint64(n); id++ {
		cfg := Config{NodeID: id, Peers: peers, ClusterListener: lns[id],
			TickInterval: 5 * time.Millisecond, ElectionTicks: 10, Fsync: 0, Offload: offloadMode(t)}
		for _, o := range opts {
			o(&cfg)
		}
		s := startServer(t, cfg)
		servers[id] = s
		t.Cleanup(func() { s.Close() })
	}
	return servers
}

// withWAL gives each member of startCluster a WAL (and so snapshots) in a temp dir.
func withWAL(t *testing.T) func(*Config) {
	return func(cfg *Config) { cfg.DataDir = t.TempDir() }
}

// memberConfig makes cfg a one-member cluster's, whose connections the asynchronous event
// loops serve; awaitLead waits for its election.
func memberConfig(t *testing.T, cfg Config) Config {
	t.Helper()
	lns, peers := memberListeners(t, 1)
	cfg.NodeID, cfg.Peers, cfg.ClusterListener = 1, peers, lns[1]
	cfg.TickInterval, cfg.ElectionTicks = 5*time.Millisecond, 10
	return cfg
}

func awaitLead(t *testing.T, s *Server) {
	t.Helper()
	leaderOf(t, map[uint64]*Server{1: s}, 0)
}

// memberListeners opens n member listeners on loopback ports the kernel picks, so the
// peer list is known before any member starts.
func memberListeners(t *testing.T, n int) (map[uint64]net.Listener, map[uint64]string) {
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
	return lns, peers
}

func offloadMode(t *testing.T) bool {
	switch *clusterMode {
	case "offload":
		return true
	case "raft":
		return false
	}
	t.Fatalf("-cluster.mode %q: want offload or raft", *clusterMode)
	return false
}

// leaderOf polls until one of the servers (other than the excluded) leads and, in offload
// mode, until its engine has opened its term: the writes that follow go through the
// engine, not through the software Raft that carries the first moments of a term.
func leaderOf(t *testing.T, servers map[uint64]*Server, exclude uint64) (uint64, *Server) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for id, s := range servers {
			if id == exclude || !s.cl().isLeader() {
				continue
			}
			if o := s.cl().raft.Status().Offload; o != nil && !o.Accelerated {
				continue
			}
			return id, s
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("no leader elected, or its engine never opened its term")
	return 0, nil
}

// followerOf returns a member other than the leader leadID.
func followerOf(servers map[uint64]*Server, leadID uint64) *Server {
	for id, s := range servers {
		if id != leadID {
			return s
		}
	}
	return nil
}

// awaitLeaderKnown polls until member s has heard from leader leadID. Right after an
// election a follower may not have yet, and answers CLUSTERDOWN instead of MOVED.
func awaitLeaderKnown(t *testing.T, s *Server, leadID uint64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); s.cl().raft.Status().Lead != leadID; {
		if time.Now().After(deadline) {
			t.Fatalf("a member never heard from leader %d", leadID)
		}
		time.Sleep(time.Millisecond)
	}
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
		// The writes above needed one follower's ack: the other may not have heard from
		// the new leader yet, and would answer CLUSTERDOWN until it does.
		awaitLeaderKnown(t, s, leadID)
		fc := client(t, s)
		for _, err := range []error{fc.Get(ctx, "k").Err(), fc.Set(ctx, "k", "x", 0).Err()} {
			if err == nil || err.Error() != "MOVED 0 "+lead.RedisAddr() {
				t.Fatalf("member %d: %v, want MOVED 0 %s", id, err, lead.RedisAddr())
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			st := s.cl().raft.Status()
			if st.AppliedIndex >= lead.cl().raft.Status().CommitIndex {
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

// RAFT.TRANSFER_LEADER answers as RedisRaft does: its errors for a bad id, a member
// that does not lead and a transfer already running, "transfer timed out" when the
// target never takes over, and +OK once the chosen member leads (-1, RedisRaft's "no
// node", picks the one that holds the most of the log). FAILOVER, the same transfer,
// answers with Redis's error while one runs.
func TestRaftTransferLeaderRepliesAsRedisRaft(t *testing.T) {
	// An election timeout of half a second: a transfer to a dead member runs that long.
	servers := startCluster(t, 3, func(cfg *Config) { cfg.ElectionTicks = 100 })
	ctx := context.Background()
	leadID, lead := leaderOf(t, servers, 0)
	lc := client(t, lead)
	down, live := leadID%3+1, (leadID+1)%3+1
	expect := func(c *redis.Client, want string, args ...any) {
		t.Helper()
		if err := c.Do(ctx, args...).Err(); err == nil || err.Error() != want {
			t.Fatalf("%v: %v, want %q", args, err, want)
		}
	}
	for _, bad := range []string{"x", "+2", "4294967298"} { // not an int as Redis reads one
		expect(lc, "ERR invalid target node id", "RAFT.TRANSFER_LEADER", bad)
	}
	expect(lc, "ERR wrong number of arguments for 'raft.transfer_leader' command", "RAFT.TRANSFER_LEADER", 1, 2)
	for _, id := range []uint64{0, leadID, 9} {
		expect(lc, "ERR invalid node id", "RAFT.TRANSFER_LEADER", id)
	}
	expect(client(t, servers[live]), "ERR not leader", "RAFT.TRANSFER_LEADER", leadID)

	// A transfer to a member that is gone runs until the leader gives up on it; a
	// second one meanwhile is refused.
	servers[down].Close()
	first := make(chan error, 1)
	go func() { first <- lc.Do(ctx, "RAFT.TRANSFER_LEADER", down).Err() }()
	deadline := time.Now().Add(10 * time.Second)
	for lead.cl().raft.Status().Transferee != down {
		if time.Now().After(deadline) {
			t.Fatal("the transfer to the dead member never started")
		}
		time.Sleep(time.Millisecond)
	}
	expect(client(t, lead), "ERR leader transfer is in progress", "RAFT.TRANSFER_LEADER", live)
	expect(client(t, lead), "ERR FAILOVER already in progress.", "FAILOVER") // Redis's words
	if err := <-first; err == nil || err.Error() != "ERR transfer timed out" {
		t.Fatalf("transfer to the dead member: %v, want ERR transfer timed out", err)
	}
	if !lead.cl().isLeader() {
		t.Fatal("the leader stepped down after a transfer that did not happen")
	}

	// Writes the dead member misses make the live one the most up to date: -1 picks it.
	if err := lc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := lc.Do(ctx, "RAFT.TRANSFER_LEADER", -1).Err(); err != nil {
		t.Fatal(err)
	}
	if !servers[live].cl().isLeader() {
		t.Fatalf("member %d does not lead after RAFT.TRANSFER_LEADER -1", live)
	}
}

func TestRaftAdminCommands(t *testing.T) {
	servers := startCluster(t, 3)
	ctx := context.Background()
	leadID, lead := leaderOf(t, servers, 0)
	lc := client(t, lead)
	if err := lc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// RAFT.TRANSFER_LEADER <id> answers once the target leads.
	target := leadID%3 + 1
	if err := lc.Do(ctx, "RAFT.TRANSFER_LEADER", target).Err(); err != nil {
		t.Fatal(err)
	}
	if st := servers[target].cl().raft.Status(); st.Role.String() != "leader" {
		t.Fatalf("member %d is %v after the transfer", target, st.Role)
	}
	for _, bad := range [][]any{{"RAFT.TRANSFER_LEADER", "x"}, {"RAFT.TRANSFER_LEADER", 1, 2}} {
		if err := lc.Do(ctx, bad...).Err(); err == nil {
			t.Fatalf("%v accepted", bad)
		}
	}
	// RAFT.TIMEOUT_NOW makes a follower take over at once.
	other := target%3 + 1
	if err := client(t, servers[other]).Do(ctx, "RAFT.TIMEOUT_NOW").Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !servers[other].cl().isLeader() {
		if time.Now().After(deadline) {
			t.Fatalf("member %d did not take over after RAFT.TIMEOUT_NOW", other)
		}
		time.Sleep(time.Millisecond)
	}
	// RAFT.DEBUG EXEC reads locally, on any member.
	for id, s := range servers {
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, err := client(t, s).Do(ctx, "RAFT.DEBUG", "EXEC", "GET", "k").Text()
			if err == nil && got == "v" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d RAFT.DEBUG EXEC GET: %q %v", id, got, err)
			}
			time.Sleep(time.Millisecond)
		}
	}
	if err := client(t, servers[1]).Do(ctx, "RAFT.DEBUG", "EXEC", "SET", "k", "x").Err(); err == nil {
		t.Fatal("RAFT.DEBUG EXEC ran a write")
	}
	// RAFT.NODE REMOVE on the leader shrinks the membership.
	leadID, lead = leaderOf(t, servers, 0)
	lc = client(t, lead)
	victim := leadID%3 + 1
	if err := lc.Do(ctx, "RAFT.NODE", "REMOVE", 99).Err(); err == nil || err.Error() != "ERR node id does not exist" {
		t.Fatalf("removing an unknown node: %v", err)
	}
	// ids are read by Redis's rules for an integer, as RedisRaft reads them: a sign, a
	// leading zero or a negative id is refused, and nothing changes
	for _, bad := range [][]any{{"REMOVE", "+" + strconv.FormatUint(victim, 10)}, {"REMOVE", "0" + strconv.FormatUint(victim, 10)},
		{"REMOVE", 0}, {"ADD", -5, "127.0.0.1:1"}, {"ADD", "+7", "127.0.0.1:1"}} {
		if err := lc.Do(ctx, append([]any{"RAFT.NODE"}, bad...)...).Err(); err == nil || err.Error() != "ERR invalid node id" {
			t.Fatalf("RAFT.NODE %v: %v, want ERR invalid node id", bad, err)
		}
	}
	if info := lc.Info(ctx, "raft").Val(); !strings.Contains(info, "raft_num_voting_nodes:3") || !strings.Contains(info, "raft_num_nodes:3") {
		t.Fatalf("after refused RAFT.NODE calls:\n%s", info)
	}
	if err := lc.Do(ctx, "RAFT.NODE", "REMOVE", victim).Err(); err != nil {
		t.Fatal(err)
	}
	if info := lc.Info(ctx, "raft").Val(); !strings.Contains(info, "raft_num_voting_nodes:2") {
		t.Fatalf("after RAFT.NODE REMOVE:\n%s", info)
	}
	if err := lc.Set(ctx, "k", "after", 0).Err(); err != nil {
		t.Fatalf("write with two voters: %v", err)
	}
}

func TestRaftCommandsOnASingleNode(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	err := client(t, s).Do(context.Background(), "RAFT.TIMEOUT_NOW").Err()
	if err == nil || err.Error() != "NOCLUSTER No Raft Cluster" {
		t.Fatalf("got %v", err)
	}
}

// WAIT answers how many members besides the leader hold every acknowledged write.
func TestClusterWait(t *testing.T) {
	servers := startCluster(t, 3)
	ctx := context.Background()
	leadID, lead := leaderOf(t, servers, 0)
	c := client(t, lead)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Do(ctx, "WAIT", 2, 5000).Int64(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 5000 with every member up: %d %v", n, err)
	}
	down := leadID%3 + 1
	servers[down].Close()
	if err := c.Set(ctx, "k", "w", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Do(ctx, "WAIT", 2, 50).Int64(); err != nil || n != 1 {
		t.Fatalf("WAIT 2 50 with one member down: %d %v", n, err)
	}
	follower := 6 - leadID - down
	err := client(t, servers[follower]).Do(ctx, "WAIT", 1, 0).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "MOVED 0 ") {
		t.Fatalf("WAIT on a follower: %v", err)
	}
}

// On a single node WAIT behaves as on a standalone Redis without replicas.
func TestWaitOnASingleNode(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	c := client(t, s)
	ctx := context.Background()
	if n, err := c.Do(ctx, "WAIT", 0, 0).Int64(); err != nil || n != 0 {
		t.Fatalf("WAIT 0 0: %d %v", n, err)
	}
	start := time.Now()
	if n, err := c.Do(ctx, "WAIT", 1, 30).Int64(); err != nil || n != 0 || time.Since(start) < 30*time.Millisecond {
		t.Fatalf("WAIT 1 30: %d %v after %v", n, err, time.Since(start))
	}
	for args, want := range map[[2]string]string{
		{"x", "0"}:  "ERR value is not an integer or out of range",
		{"1", "x"}:  "ERR timeout is not an integer or out of range",
		{"1", "-1"}: "ERR timeout is negative",
	} {
		if err := c.Do(ctx, "WAIT", args[0], args[1]).Err(); err == nil || err.Error() != want {
			t.Fatalf("WAIT %v: %v, want %s", args, err, want)
		}
	}
}

// Members snapshot the store and compact as the log grows, and a member restarted
// from its snapshot serves the same data.
func TestClusterSnapshotsTheStore(t *testing.T) {
	lns, peers := memberListeners(t, 3)
	dirs := map[uint64]string{}
	servers := map[uint64]*Server{}
	for id := uint64(1); id <= 3; id++ {
		dirs[id] = t.TempDir()
		s := startServer(t, Config{NodeID: id, Peers: peers, ClusterListener: lns[id], DataDir: dirs[id],
			TickInterval: 5 * time.Millisecond, SnapshotLogBytes: 4096})
		servers[id] = s
		t.Cleanup(func() { s.Close() })
	}
	ctx := context.Background()
	_, lead := leaderOf(t, servers, 0)
	c := client(t, lead)
	for i := range 500 {
		if err := c.Set(ctx, fmt.Sprintf("key:%d", i), fmt.Sprintf("value-%d", i), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if raftSnapshots(t, c) == 0 {
		t.Fatal("no snapshot after 500 writes")
	}
	// Restart every member on its directory: each loads its snapshot.
	for id, s := range servers {
		s.Close()
		ln, err := net.Listen("tcp", peers[id])
		if err != nil {
			t.Fatal(err)
		}
		lns[id] = ln
	}
	for id := uint64(1); id <= 3; id++ {
		s := startServer(t, Config{NodeID: id, Peers: peers, ClusterListener: lns[id], DataDir: dirs[id],
			TickInterval: 5 * time.Millisecond, SnapshotLogBytes: 4096})
		servers[id] = s
		t.Cleanup(func() { s.Close() })
	}
	_, lead = leaderOf(t, servers, 0)
	c = client(t, lead)
	for _, i := range []int{0, 250, 499} {
		if got := c.Get(ctx, fmt.Sprintf("key:%d", i)).Val(); got != fmt.Sprintf("value-%d", i) {
			t.Fatalf("key:%d = %q after restart", i, got)
		}
	}
	if n := c.DBSize(ctx).Val(); n != 500 {
		t.Fatalf("DBSIZE %d after restart", n)
	}
}

// A member that was down while the others compacted past its position catches up from
// a snapshot the leader sends it.
// laggingCluster starts three members that compact their logs after 2 KB, and stops one
// follower: what the test writes next reaches it only by snapshot. rejoin restarts it and
// waits until it holds keys keys; it returns the member's client.
type laggingCluster struct {
	t       *testing.T
	servers map[uint64]*Server
	lead    *Server
	lagger  uint64
	lns     map[uint64]net.Listener
	peers   map[uint64]string
	dirs    map[uint64]string
}

func newLaggingCluster(t *testing.T) *laggingCluster {
	lc := &laggingCluster{t: t, servers: map[uint64]*Server{}, dirs: map[uint64]string{}}
	lc.lns, lc.peers = memberListeners(t, 3)
	for id := uint64(1); id <= 3; id++ {
		lc.dirs[id] = t.TempDir()
		lc.start(id)
	}
	leadID, lead := leaderOf(t, lc.servers, 0)
	lc.lead, lc.lagger = lead, leadID%3+1
	lc.servers[lc.lagger].Close()
	return lc
}

func (lc *laggingCluster) start(id uint64) {
	s := startServer(lc.t, Config{NodeID: id, Peers: lc.peers, ClusterListener: lc.lns[id], DataDir: lc.dirs[id],
		TickInterval: 5 * time.Millisecond, SnapshotLogBytes: 2048, SnapshotTrailing: 10})
	lc.servers[id] = s
	lc.t.Cleanup(func() { s.Close() })
}

func (lc *laggingCluster) rejoin(keys int64) *redis.Client {
	t := lc.t
	// The running members compact their logs up to what they applied (but the trailing
	// few), so that what the lagger needs is gone from every log, whoever leads when it
	// returns. Without this it could catch up from a log, in two ways seen in CI:
	// snapshots are written in the background and the log is compacted only when one is
	// done; and the leader may have sent the lagger, into its transport queue, up to a
	// window of messages before the lagger stopped answering, which the queue delivers
	// when the lagger is back (a one-entry message per write of a sequential client: the
	// tests write more than the window, 256, after the lagger stops).
	for id, s := range lc.servers {
		if id == lc.lagger {
			continue
		}
		if err := client(t, s).Do(context.Background(), "RAFT.DEBUG", "COMPACT").Err(); err != nil {
			t.Fatalf("RAFT.DEBUG COMPACT on member %d: %v", id, err)
		}
	}
	ln, err := net.Listen("tcp", lc.peers[lc.lagger])
	if err != nil {
		t.Fatal(err)
	}
	lc.lns[lc.lagger] = ln
	lc.start(lc.lagger)
	c := client(t, lc.servers[lc.lagger])
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := c.Do(context.Background(), "RAFT.DEBUG", "EXEC", "DBSIZE").Int64()
		if err == nil && n == keys {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("lagging member has %d keys (%v)", n, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// infoField returns the value of one "name:value" line of an INFO reply.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

// raftSnapshots is the member's count of snapshots written (INFO raft).
func raftSnapshots(t *testing.T, c *redis.Client) int { return raftInfoInt(t, c, "raft_snapshots") }

// raftInfoInt is the member's INFO raft field name, a number.
func raftInfoInt(t *testing.T, c *redis.Client, name string) int {
	t.Helper()
	v := infoField(c.Info(context.Background(), "raft").Val(), name)
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("INFO raft: %s %q", name, v)
	}
	return n
}

// caughtUpBySnapshot fails the test unless the member installed a snapshot.
func caughtUpBySnapshot(t *testing.T, c *redis.Client) {
	t.Helper()
	if info := c.Info(context.Background(), "raft").Val(); !strings.Contains(info, "raft_snapshots_installed:1") {
		t.Fatalf("the lagging member did not catch up through a snapshot:\n%s", info)
	}
}

func TestClusterCatchUpBySnapshot(t *testing.T) {
	lc := newLaggingCluster(t)
	ctx := context.Background()
	c := client(t, lc.lead)
	for i := range 2000 {
		if err := c.Set(ctx, fmt.Sprintf("key:%d", i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	lagc := lc.rejoin(2000)
	// The snapshots it replaced go, on a goroutine of their own (RaftNode.cleanUp).
	deadline := time.Now().Add(20 * time.Second)
	for {
		snaps, _ := filepath.Glob(filepath.Join(lc.dirs[lc.lagger], "snap-*.snap"))
		if len(snaps) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lagging member's snapshots: %v", snaps)
		}
		time.Sleep(5 * time.Millisecond)
	}
	caughtUpBySnapshot(t, lagc)
}

// A new node joins a running cluster through a follower's redis address (following the
// redirect), catches up, is promoted to voter, and after a restart is still a member
// without joining again.
func TestClusterJoin(t *testing.T) {
	servers := startCluster(t, 3)
	ctx := context.Background()
	leadID, lead := leaderOf(t, servers, 0)
	c := client(t, lead)
	for i := range 100 {
		if err := c.Set(ctx, fmt.Sprintf("key:%d", i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	follower := servers[leadID%3+1]
	dir := t.TempDir()
	addr := "127.0.0.1:0" // then the same address again: the cluster knows it by it
	join := func() *Server {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		addr = ln.Addr().String()
		s := startServer(t, Config{JoinAddr: follower.RedisAddr(), ClusterListener: ln, DataDir: dir,
			TickInterval: 5 * time.Millisecond, Logger: log.New(tlogWriter{t}, "", 0)})
		t.Cleanup(func() { s.Close() })
		return s
	}
	newbie := join()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				info, err := c.Info(ctx, "raft").Result()
				t.Fatalf("timed out waiting for %s; newbie %+v; leader says (%v):\n%s", what, newbie.cl().raft.Status(), err, info)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	nc := client(t, newbie)
	waitFor("the new member to vote", func() bool {
		return strings.Contains(c.Info(ctx, "raft").Val(), "raft_num_voting_nodes:4")
	})
	waitFor("the new member to hold the data", func() bool {
		n, err := nc.Do(ctx, "RAFT.DEBUG", "EXEC", "DBSIZE").Int64()
		return err == nil && n == 100
	})
	id := newbie.cl().raft.Status().ID
	// Its member id and the cluster id survive a restart; it does not join twice.
	newbie.Close()
	again := join()
	if got := again.cl().raft.Status().ID; got != id {
		t.Fatalf("restarted as member %d, was %d", got, id)
	}
	if err := c.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	ac := client(t, again)
	waitFor("the restarted member to catch up", func() bool {
		v, err := ac.Do(ctx, "RAFT.DEBUG", "EXEC", "GET", "after").Text()
		return err == nil && v == "1"
	})
	if info := c.Info(ctx, "raft").Val(); !strings.Contains(info, "raft_num_nodes:4") {
		t.Fatalf("membership after the restart:\n%s", info)
	}
	// Adding an id that is taken, or a bad address, is refused.
	if err := c.Do(ctx, "RAFT.NODE", "ADD", id, "127.0.0.1:1").Err(); err == nil || err.Error() != "ERR node id has already been used in this cluster" {
		t.Fatalf("duplicate id: %v", err)
	}
	if err := c.Do(ctx, "RAFT.NODE", "ADD", 0, "nowhere").Err(); err == nil || err.Error() != "ERR invalid node address" {
		t.Fatalf("bad address: %v", err)
	}
}

type tlogWriter struct{ t *testing.T }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// RedisRaft's way to form a cluster: nodes start uninitialized (NOCLUSTER), one runs
// RAFT.CLUSTER INIT, the others RAFT.CLUSTER JOIN it.
func TestClusterInitAndJoin(t *testing.T) {
	ctx := context.Background()
	start := func(dir string, addr string) (*Server, string) {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		s := startServer(t, Config{ClusterListener: ln, DataDir: dir, NodeID: 0, TickInterval: 5 * time.Millisecond})
		t.Cleanup(func() { s.Close() })
		return s, ln.Addr().String()
	}
	dirA := t.TempDir()
	a, addrA := start(dirA, "127.0.0.1:0")
	b, _ := start(t.TempDir(), "127.0.0.1:0")
	ca, cb := client(t, a), client(t, b)
	if err := ca.Set(ctx, "k", "v", 0).Err(); err == nil || err.Error() != "NOCLUSTER No Raft Cluster" {
		t.Fatalf("SET before INIT: %v", err)
	}
	if info := ca.Info(ctx, "raft").Val(); !strings.Contains(info, "raft_state:uninitialized") {
		t.Fatalf("INFO raft before INIT:\n%s", info)
	}
	reply, err := ca.Do(ctx, "RAFT.CLUSTER", "INIT").Text()
	if err != nil || !strings.HasPrefix(reply, "OK ") || len(reply) != 3+16 {
		t.Fatalf("RAFT.CLUSTER INIT: %q %v", reply, err)
	}
	if err := ca.Do(ctx, "RAFT.CLUSTER", "INIT").Err(); err == nil || err.Error() != "ERR Already cluster member" {
		t.Fatalf("second INIT: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for ca.Set(ctx, "k", "v", 0).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the initialized node never accepted a write")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cb.Do(ctx, "RAFT.CLUSTER", "JOIN", a.RedisAddr()).Err(); err != nil {
		t.Fatalf("RAFT.CLUSTER JOIN: %v", err)
	}
	for {
		v, _ := cb.Do(ctx, "RAFT.DEBUG", "EXEC", "GET", "k").Text()
		if v == "v" && strings.Contains(ca.Info(ctx, "raft").Val(), "raft_num_voting_nodes:2") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B did not join and catch up:\n%s", ca.Info(ctx, "raft").Val())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A restarted member rejoins from cluster.meta instead of waiting for INIT again.
	a.Close()
	a2, _ := start(dirA, addrA)
	if a2.cl() == nil {
		t.Fatal("a restarted member came back uninitialized")
	}
}

// CONFIG GET/SET raft.*: what RedisRaft users read and set.
func TestClusterConfig(t *testing.T) {
	servers := startCluster(t, 3)
	_, lead := leaderOf(t, servers, 0)
	c := client(t, lead)
	ctx := context.Background()
	got := c.ConfigGet(ctx, "raft.*").Val()
	for k, want := range map[string]string{"raft.election-timeout": "50", "raft.follower-proxy": "no",
		"raft.quorum-reads": "yes", "raft.request-timeout": "2000", "raft.log-fsync": "no"} {
		if got[k] != want {
			t.Fatalf("CONFIG GET %s = %q, want %q (all: %v)", k, got[k], want, got)
		}
	}
	if got["raft.id"] == "" || got["raft.addr"] == "" {
		t.Fatalf("CONFIG GET raft.*: %v", got)
	}
	if err := c.ConfigSet(ctx, "raft.request-timeout", "500").Err(); err != nil {
		t.Fatal(err)
	}
	if v := c.ConfigGet(ctx, "raft.request-timeout").Val()["raft.request-timeout"]; v != "500" {
		t.Fatalf("request-timeout after SET: %q", v)
	}
	if v := got["raft.log-max-file-size"]; v != "67108864" {
		t.Fatalf("CONFIG GET raft.log-max-file-size = %q, want RedisRaft's 64 MiB", v)
	}
	if v := got["raft.log-max-cache-size"]; v != "8388608" {
		t.Fatalf("CONFIG GET raft.log-max-cache-size = %q, want RedisRaft's 8 MiB", v)
	}
	if err := c.ConfigSet(ctx, "raft.log-max-file-size", "1mb").Err(); err != nil {
		t.Fatal(err)
	}
	if v := c.ConfigGet(ctx, "raft.log-max-file-size").Val()["raft.log-max-file-size"]; v != "1048576" {
		t.Fatalf("log-max-file-size after SET 1mb: %q", v)
	}
	for name, val := range map[string]string{"raft.follower-proxy": "maybe", "raft.election-timeout": "100", "raft.request-timeout": "-1",
		"raft.log-max-file-size": "0", "raft.log-max-cache-size": "lots"} {
		if err := c.ConfigSet(ctx, name, val).Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR CONFIG SET failed (possibly related to argument '"+name+"')") {
			t.Fatalf("CONFIG SET %s %s: %v", name, val, err)
		}
	}
	// As in Redis, CONFIG SET sets everything it names or nothing: a bad value anywhere
	// leaves the good ones before and after it unset.
	before := c.ConfigGet(ctx, "*").Val()
	for _, args := range [][]any{
		{"raft.request-timeout", "700", "raft.log-max-file-size", "2mb", "save", "", "raft.follower-proxy", "maybe"},
		{"raft.follower-proxy", "yes", "save", "1 x", "raft.request-timeout", "700"},
		{"maxmemory", "1mb", "raft.log-max-file-size", "2mb", "raft.request-timeout", "0"},
		{"raft.log-max-cache-size", "1mb", "raft.log-max-file-size", "2mb", "raft.log-max-cache-size", "0"},
		{"raft.log-max-file-size", "2mb", "raft.log-max-cache-size", "1mb", "raft.election-timeout", "100"},
	} {
		if err := c.Do(ctx, append([]any{"CONFIG", "SET"}, args...)...).Err(); err == nil {
			t.Fatalf("CONFIG SET %v: no error", args)
		}
		if after := c.ConfigGet(ctx, "*").Val(); !maps.Equal(after, before) {
			for k, v := range after {
				if before[k] != v {
					t.Errorf("CONFIG SET %v failed but changed %s from %q to %q", args, k, before[k], v)
				}
			}
		}
	}
}

// CONFIG SET raft.log-max-file-size changes when the member it is sent to snapshots,
// at once, and only that member's.
func TestClusterLogMaxFileSizeAtRunTime(t *testing.T) {
	servers := startCluster(t, 3, withWAL(t))
	ctx := context.Background()
	leadID, lead := leaderOf(t, servers, 0)
	c := client(t, lead)
	snapshots := func(s *Server) int { return raftSnapshots(t, client(t, s)) }
	write := func(from, to int) {
		for i := from; i < to; i++ {
			if err := c.Set(ctx, fmt.Sprintf("key:%d", i), strings.Repeat("v", 100), 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(0, 100) // 10 KB of log: far below the default
	if n := snapshots(lead); n != 0 {
		t.Fatalf("the leader snapshotted %d times with 64 MiB to go", n)
	}
	// The log has already grown past the new size: the member snapshots without waiting
	// for more.
	if err := c.ConfigSet(ctx, "raft.log-max-file-size", "4kb").Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for snapshots(lead) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no snapshot after log-max-file-size fell below the log's size")
		}
		time.Sleep(5 * time.Millisecond)
	}
	write(100, 300)
	for id, s := range servers {
		if id != leadID {
			if n := snapshots(s); n != 0 {
				t.Fatalf("member %d snapshotted %d times: the setting is the leader's alone", id, n)
			}
		}
	}
}

// CONFIG SET raft.log-max-cache-size shrinks the member's cache of entry data at once
// (INFO raft's raft_log_cached_bytes), as RedisRaft's log-max-cache-size.
func TestClusterLogMaxCacheSizeAtRunTime(t *testing.T) {
	servers := startCluster(t, 3, withWAL(t))
	ctx := context.Background()
	_, lead := leaderOf(t, servers, 0)
	c := client(t, lead)
	cached := func() int { return raftInfoInt(t, c, "raft_log_cached_bytes") }
	for i := range 100 {
		if err := c.Set(ctx, fmt.Sprintf("key:%d", i), strings.Repeat("v", 100), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n := cached(); n < 100*100 {
		t.Fatalf("the leader holds %d bytes of entry data after 10 KB of writes, with 8 MiB of cache", n)
	}
	if err := c.ConfigSet(ctx, "raft.log-max-cache-size", "1kb").Err(); err != nil {
		t.Fatal(err)
	}
	if v := c.ConfigGet(ctx, "raft.log-max-cache-size").Val()["raft.log-max-cache-size"]; v != "1024" {
		t.Fatalf("log-max-cache-size after SET 1kb: %q", v)
	}
	deadline := time.Now().Add(10 * time.Second)
	for n := cached(); n > 1024; n = cached() {
		if time.Now().After(deadline) {
			t.Fatalf("the leader still holds %d bytes of entry data with a cache of 1 KiB", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// raft.log-max-file-size and raft.log-max-cache-size set on a node waiting for
// RAFT.CLUSTER INIT are the member's once it is one.
func TestLogMaxFileSizeSetBeforeInit(t *testing.T) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, Config{ClusterListener: ln, DataDir: t.TempDir(), TickInterval: 5 * time.Millisecond})
	t.Cleanup(func() { s.Close() })
	c := client(t, s)
	if err := c.ConfigSet(ctx, "raft.log-max-file-size", "4kb").Err(); err != nil {
		t.Fatal(err)
	}
	if v := c.ConfigGet(ctx, "raft.log-max-file-size").Val()["raft.log-max-file-size"]; v != "4096" {
		t.Fatalf("log-max-file-size before INIT: %q", v)
	}
	if err := c.ConfigSet(ctx, "raft.log-max-cache-size", "2kb").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "RAFT.CLUSTER", "INIT").Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; raftSnapshots(t, c) == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatal("no snapshot: the member did not take the size set before INIT")
		}
		if err := c.Set(ctx, fmt.Sprintf("key:%d", i), strings.Repeat("v", 100), 0).Err(); err != nil {
			time.Sleep(5 * time.Millisecond) // not leader yet
		}
	}
	if v := c.ConfigGet(ctx, "raft.log-max-cache-size").Val()["raft.log-max-cache-size"]; v != "2048" {
		t.Fatalf("log-max-cache-size after INIT: %q", v)
	}
	// Of the 4 KiB and more written, the log keeps 2 KiB at most once they are applied
	// (with the default 8 MiB, it would keep them all: compaction leaves the trailing
	// entries in the log).
	for n := raftInfoInt(t, c, "raft_log_cached_bytes"); n > 2048; n = raftInfoInt(t, c, "raft_log_cached_bytes") {
		if time.Now().After(deadline) {
			t.Fatalf("the member holds %d bytes of entry data with a cache of 2 KiB", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A join whose answer is lost is retried without adding the node twice: the retry with
// the same id hears "already used" and takes the membership it already has.
func TestJoinRetryAfterALostAnswer(t *testing.T) {
	servers := startCluster(t, 3)
	_, lead := leaderOf(t, servers, 0)
	// A proxy in front of the leader that swallows the first answer.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for first := true; ; first = false {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", lead.RedisAddr())
			if err != nil {
				c.Close()
				return
			}
			go func() { io.Copy(up, c); up.Close() }()
			if first {
				// Wait until the leader answered, then drop the answer.
				buf := make([]byte, 1)
				up.Read(buf)
				c.Close()
				continue
			}
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	id, cid, err := joinCluster(ln.Addr().String(), 0, "127.0.0.1:9", t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if want := lead.cl().id; cid != want {
		t.Fatalf("cluster id %016x, want %016x", cid, want)
	}
	m := lead.cl().raft.Status().Membership
	if !m.IsLearner(id) || len(m.Learners) != 1 {
		t.Fatalf("membership after a retried join: %+v (id %d)", m, id)
	}
}

// With follower-proxy a follower serves Redis clients itself: writes are forwarded to
// the leader, reads pass a barrier through the leader's log, so a client of a follower
// reads what any client wrote just before.
func TestClusterFollowerProxy(t *testing.T) {
	servers := startCluster(t, 3)
	leadID, lead := leaderOf(t, servers, 0)
	follower := followerOf(servers, leadID)
	ctx := context.Background()
	awaitLeaderKnown(t, follower, leadID)
	fc, lc := client(t, follower), client(t, lead)
	if err := fc.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "MOVED 0 ") {
		t.Fatalf("SET on a follower without proxy: %v", err)
	}
	if err := fc.ConfigSet(ctx, "raft.follower-proxy", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	if v := fc.ConfigGet(ctx, "raft.follower-proxy").Val()["raft.follower-proxy"]; v != "yes" {
		t.Fatalf("follower-proxy after SET: %q", v)
	}
	for i := range 20 {
		if err := fc.Set(ctx, "k", i, 0).Err(); err != nil {
			t.Fatalf("proxied SET: %v", err)
		}
		if got, err := fc.Incr(ctx, "n").Result(); err != nil || got != int64(i+1) {
			t.Fatalf("proxied INCR: %d, %v", got, err)
		}
		// Written through the leader, read back through the follower at once.
		if err := lc.Set(ctx, "l", i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if got, err := fc.Get(ctx, "l").Int(); err != nil || got != i {
			t.Fatalf("proxied GET after a write on the leader: %d, %v (want %d)", got, err, i)
		}
	}
	if got, err := lc.Get(ctx, "k").Int(); err != nil || got != 19 {
		t.Fatalf("leader sees %d, %v", got, err)
	}
	if err := fc.ConfigSet(ctx, "raft.follower-proxy", "no").Err(); err != nil {
		t.Fatal(err)
	}
	if err := fc.Get(ctx, "k").Err(); err == nil || !strings.HasPrefix(err.Error(), "MOVED 0 ") {
		t.Fatalf("GET on a follower after proxy off: %v", err)
	}
}

// RAFT.DEBUG COMPACT snapshots and compacts now, on any member with a WAL, whatever the
// log's size.
func TestRaftDebugCompact(t *testing.T) {
	servers := startCluster(t, 3, withWAL(t))
	ctx := context.Background()
	_, lead := leaderOf(t, servers, 0)
	c := client(t, lead)
	for i := range 20 {
		if err := c.Set(ctx, fmt.Sprintf("k%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n := raftSnapshots(t, c); n != 0 {
		t.Fatalf("%d snapshots before COMPACT: the log is far below the threshold", n)
	}
	for _, s := range servers {
		sc := client(t, s)
		if got, err := sc.Do(ctx, "RAFT.DEBUG", "COMPACT").Text(); err != nil || got != "OK" {
			t.Fatalf("RAFT.DEBUG COMPACT: %q, %v", got, err)
		}
		if n := raftSnapshots(t, sc); n != 1 {
			t.Fatalf("%d snapshots after COMPACT, want 1", n)
		}
	}
	mem := startServer(t, Config{MemoryOnly: true})
	if err := client(t, mem).Do(ctx, "RAFT.DEBUG", "COMPACT").Err(); err == nil || !strings.Contains(err.Error(), "NOCLUSTER") {
		t.Fatalf("COMPACT on a node that is no cluster member: %v", err)
	}
}

// IDEMPOTENT: a write retried with the same client id and sequence number is applied
// once, also when the retry reaches a new leader after a failover, and the retry gets
// the first reply.
func TestIdempotentRetryAcrossFailover(t *testing.T) {
	servers := startCluster(t, 3)
	leadID, lead := leaderOf(t, servers, 0)
	ctx := context.Background()
	c := client(t, lead)
	for seq := 1; seq <= 3; seq++ {
		if got, err := c.Do(ctx, "IDEMPOTENT", "app-1", seq, "INCR", "n").Int(); err != nil || got != seq {
			t.Fatalf("IDEMPOTENT INCR %d: %d, %v", seq, got, err)
		}
	}
	if got, err := c.Do(ctx, "IDEMPOTENT", "app-1", 3, "INCR", "n").Int(); err != nil || got != 3 {
		t.Fatalf("retry on the same leader: %d, %v", got, err)
	}
	lead.Close()
	_, lead = leaderOf(t, servers, leadID)
	c = client(t, lead)
	if got, err := c.Do(ctx, "IDEMPOTENT", "app-1", 3, "INCR", "n").Int(); err != nil || got != 3 {
		t.Fatalf("retry on the new leader: %d, %v", got, err)
	}
	if got, err := c.Get(ctx, "n").Int(); err != nil || got != 3 {
		t.Fatalf("n = %d, %v: a retry was applied twice", got, err)
	}
	if err := c.Do(ctx, "IDEMPOTENT", "app-1", 2, "INCR", "n").Err(); err == nil || !strings.Contains(err.Error(), "older") {
		t.Fatalf("stale sequence number: %v", err)
	}
	for _, bad := range [][]any{{"IDEMPOTENT", "a", "x", "INCR", "n"}, {"IDEMPOTENT", "a", 1, "GET", "n"}, {"IDEMPOTENT", "a", 1, "NOSUCH"}} {
		if err := c.Do(ctx, bad...).Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR ") {
			t.Fatalf("%v: %v", bad, err)
		}
	}
}

// Scripts on a cluster: what a script or a function draws (math.random, SPOP, TIME) is
// the same on every member, and the script cache and the function libraries reach a
// member that catches up by snapshot, so EVALSHA and FCALL work wherever it stands.
func TestClusterScripts(t *testing.T) {
	lc := newLaggingCluster(t)
	ctx := context.Background()
	c := client(t, lc.lead)
	const draw = "redis.call('sadd', KEYS[1], 'a', 'b', 'c', 'd', 'e')\n" +
		"local t = redis.call('time')\n" +
		"local v = math.random(1000000) .. ':' .. redis.call('spop', KEYS[1]) .. ':' .. t[1] .. '.' .. t[2]\n" +
		"redis.call('set', KEYS[2], v)\n" +
		"return v"
	sha, err := c.ScriptLoad(ctx, draw).Result()
	if err != nil {
		t.Fatal(err)
	}
	library := "#!lua name=draws\nredis.register_function('draw', function(KEYS)\n" + draw + "\nend)"
	if err := c.FunctionLoad(ctx, library).Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := range 400 { // more writes than the window rejoin speaks of
		key := fmt.Sprintf("drawn:%d", i)
		keys := []string{fmt.Sprintf("set:%d", i), key}
		v, err := c.EvalSha(ctx, sha, keys).Text()
		if i%2 == 1 {
			v, err = c.FCall(ctx, "draw", keys).Text()
		}
		if err != nil {
			t.Fatal(err)
		}
		want[key] = v
	}
	lagc := lc.rejoin(800)
	for id, s := range lc.servers {
		sc := client(t, s)
		for key, v := range want {
			if got, err := sc.Do(ctx, "RAFT.DEBUG", "EXEC", "GET", key).Text(); err != nil || got != v {
				t.Fatalf("member %d: %s = %q (%v), the leader's script returned %q", id, key, got, err, v)
			}
		}
		if ok, err := sc.Do(ctx, "RAFT.DEBUG", "EXEC", "SCRIPT", "EXISTS", sha).Slice(); err != nil || ok[0] != int64(1) {
			t.Fatalf("member %d does not have the script: %v (%v)", id, ok, err)
		}
		if libs, err := sc.Do(ctx, "RAFT.DEBUG", "EXEC", "FUNCTION", "LIST").Slice(); err != nil || len(libs) != 1 {
			t.Fatalf("member %d does not have the library: %v (%v)", id, libs, err)
		}
	}
	caughtUpBySnapshot(t, lagc)
}
