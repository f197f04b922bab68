package server

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nanokv/nanokv/consensus/raft"
	"github.com/nanokv/nanokv/resp"
	"github.com/redis/go-redis/v9"
)

func withSharding(cfg *Config) { cfg.Sharding = true }

// startShardedCluster starts three members with sharding and returns them once every
// one knows the leader (a follower that has not heard from it yet answers CLUSTERDOWN
// where the tests expect MOVED).
func startShardedCluster(t *testing.T) (servers map[uint64]*Server, leadID uint64, lead *Server) {
	t.Helper()
	servers = startCluster(t, 3, withSharding)
	leadID, lead = leaderOf(t, servers, 0)
	for _, s := range servers {
		awaitLeaderKnown(t, s, leadID)
	}
	return servers, leadID, lead
}

// respBulk is s as a RESP bulk string.
func respBulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// With sharding, every member describes the one shard group as RedisRaft does: CLUSTER
// SLOTS names the leader as master of slots 0-16383 and the others (by id) as its
// replicas, CLUSTER NODES lists them with RedisRaft's flags, and the rest of CLUSTER
// is refused with RedisRaft's errors.
func TestShardingDescribesTheGroup(t *testing.T) {
	servers, leadID, lead := startShardedCluster(t)
	fol := followerOf(servers, leadID)
	c := fol.cl()
	nodeID := func(id uint64) string { return fmt.Sprintf("%032x%08x", c.id, id) }
	order := []uint64{leadID}
	for id := uint64(1); id <= 3; id++ {
		if id != leadID {
			order = append(order, id)
		}
	}
	wantSlots := "*1\r\n*5\r\n:0\r\n:16383\r\n"
	var wantNodes strings.Builder
	for _, id := range order {
		host, port, _ := net.SplitHostPort(servers[id].RedisAddr())
		wantSlots += "*3\r\n" + respBulk(host) + ":" + port + "\r\n" + respBulk(nodeID(id))
		flags, master := "master", "-"
		if id != leadID {
			flags, master = "slave", nodeID(leadID)
		}
		if id == c.nodeID {
			flags = "myself," + flags
		}
		term := c.raft.Status().Term
		fmt.Fprintf(&wantNodes, "%s %s:%s@%s %s %s 0 0 %d connected 0-16383\r\n", nodeID(id), host, port, port, flags, master, term)
	}
	r := rawConn(t, fol)
	r.expect(t, strings.TrimSuffix(wantSlots, "\r\n"), "CLUSTER", "SLOTS")
	r.expect(t, strings.TrimSuffix(respBulk(wantNodes.String()), "\r\n"), "cluster", "nodes")
	r.expect(t, "-ERR Unknown subcommand.", "CLUSTER", "INFO")
	r.expect(t, "-ERR wrong number of arguments for 'cluster' command", "cluster", "keyslot", "k")
	if info := client(t, fol).Info(context.Background(), "cluster").Val(); !strings.Contains(info, "cluster_enabled:1\r\n") {
		t.Fatalf("INFO cluster with sharding on:\n%s", info)
	}
	r.expect(t, "*2\r\n$13\r\nraft.sharding\r\n$3\r\nyes", "CONFIG", "GET", "raft.sharding")

	// A follower sends a key to the leader with the key's slot, as a Redis Cluster node
	// does (Redis Cluster's specification: foo is slot 12182; a hash tag picks the slot).
	leadAddr := lead.RedisAddr()
	r.expect(t, "-MOVED 12182 "+leadAddr, "SET", "foo", "bar")
	r.expect(t, "-MOVED "+strconv.Itoa(resp.KeySlot([]byte("user1000")))+" "+leadAddr, "GET", "{user1000}.following")
	r.expect(t, "-MOVED 0 "+leadAddr, "DBSIZE") // no key: slot 0, as RedisRaft
	r.expect(t, "+PONG", "PING")                // the connection's own commands run here
	r.expect(t, "-ERR wrong number of arguments for 'get' command", "GET")

	// Keys in more than one slot are refused, on any member, in a transaction at EXEC.
	r.expect(t, "-CROSSSLOT Keys in request don't hash to the same slot", "MSET", "a", "1", "b", "2")
	// counted as Redis counts a redirection: a rejected call, an error of its kind
	info := client(t, fol).Info(context.Background(), "commandstats", "errorstats").Val()
	for _, want := range []string{"cmdstat_set:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0",
		"cmdstat_mset:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0",
		"errorstat_CROSSSLOT:count=1", "errorstat_MOVED:count=3"} {
		if !strings.Contains(info, want+"\r\n") {
			t.Fatalf("INFO commandstats errorstats lacks %q:\n%s", want, info)
		}
	}
	lr := rawConn(t, lead)
	lr.expect(t, "-CROSSSLOT Keys in request don't hash to the same slot", "MSET", "a", "1", "b", "2")
	lr.expect(t, "-CROSSSLOT Keys in request don't hash to the same slot", "EVAL", "return 1", "2", "a", "b")
	lr.expect(t, "+OK", "MSET", "{t}a", "1", "{t}b", "2")
	lr.expect(t, "+OK", "MULTI")
	lr.expect(t, "+QUEUED", "SET", "a", "1")
	lr.expect(t, "+QUEUED", "SET", "b", "2")
	lr.expect(t, "-CROSSSLOT Keys in request don't hash to the same slot", "EXEC")
	lr.expect(t, "$-1", "GET", "a") // discarded
	lr.expect(t, "-ERR EXEC without MULTI", "EXEC")
	lr.expect(t, "+OK", "MULTI")
	lr.expect(t, "+QUEUED", "INCR", "{t}a")
	lr.expect(t, "+QUEUED", "GET", "{t}b")
	lr.expect(t, "*2\r\n:2\r\n$1\r\n2", "EXEC")

	// Inside MULTI each command is checked as it is queued, as Redis Cluster checks it,
	// and a refused one aborts the transaction; WATCH's keys are checked as a command's.
	const execAbort = "-EXECABORT Transaction discarded because of previous errors."
	r.expect(t, "+OK", "MULTI")
	r.expect(t, "-MOVED 12182 "+leadAddr, "SET", "foo", "bar")
	r.expect(t, "+QUEUED", "PING")
	r.expect(t, execAbort, "EXEC")
	r.expect(t, "-MOVED 12182 "+leadAddr, "WATCH", "foo")
	r.expect(t, "-CROSSSLOT Keys in request don't hash to the same slot", "WATCH", "a", "b")
	r.expect(t, "+OK", "MULTI")
	r.expect(t, "+QUEUED", "PING")
	r.expect(t, "-MOVED 0 "+leadAddr, "EXEC") // every EXEC is an entry of the leader's log
	r.expect(t, "+OK", "MULTI")
	r.expect(t, "+QUEUED", "PING")
	// a wrong arity first, as Redis checks it before the redirection
	r.expect(t, "-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command", "EXEC", "x")
	r.expect(t, "-ERR EXEC without MULTI", "EXEC")
	lr.expect(t, "+OK", "MULTI")
	lr.expect(t, "-CROSSSLOT Keys in request don't hash to the same slot", "MSET", "a", "1", "b", "2")
	lr.expect(t, "+QUEUED", "SET", "a", "1")
	lr.expect(t, execAbort, "EXEC")
	lr.expect(t, "$-1", "GET", "a")
	lr.expect(t, "-CROSSSLOT Keys in request don't hash to the same slot", "WATCH", "a", "b")
	lr.expect(t, "+OK", "WATCH", "{t}a", "{t}b")
	lr.expect(t, "+OK", "MULTI")
	lr.expect(t, "+QUEUED", "GET", "{t}a")
	lr.expect(t, "*1\r\n$1\r\n2", "EXEC")
	info = client(t, fol).Info(context.Background(), "commandstats", "errorstats").Val()
	for _, want := range []string{"cmdstat_watch:calls=0,usec=0,usec_per_call=0.00,rejected_calls=2,failed_calls=0",
		"errorstat_CROSSSLOT:count=2", "errorstat_MOVED:count=6"} {
		if !strings.Contains(info, want+"\r\n") {
			t.Fatalf("INFO commandstats errorstats lacks %q:\n%s", want, info)
		}
	}
	// EXEC as Redis counts it: the two that ran (EXECABORT, EXEC without MULTI) failed;
	// those refused (MOVED, a wrong arity) were rejected, not run
	if !regexp.MustCompile(`\r\ncmdstat_exec:calls=2,usec=\d+,usec_per_call=[\d.]+,rejected_calls=2,failed_calls=2\r\n`).MatchString(info) {
		t.Fatalf("INFO commandstats: EXEC should have two calls, failed, and two rejected:\n%s", info)
	}

	// Turned off, the member is a plain RedisRaft member again.
	r.expect(t, "+OK", "CONFIG", "SET", "raft.sharding", "no")
	r.expect(t, "-ERR This instance has cluster support disabled", "CLUSTER", "SLOTS")
	r.expect(t, "-MOVED 0 "+leadAddr, "SET", "foo", "bar")
	r.expect(t, "-ERR CONFIG SET failed (possibly related to argument 'raft.sharding') - argument must be 'yes' or 'no'", "CONFIG", "SET", "raft.sharding", "maybe")
	// the leader's setting is its own: it still refuses
	lr.expect(t, "-CROSSSLOT Keys in request don't hash to the same slot", "MSET", "a", "1", "b", "2")
}

// A cluster-aware client (go-redis's ClusterClient) given any member finds the leader
// through CLUSTER SLOTS, after a leadership transfer follows -MOVED to the new leader by
// itself, and after the leader stops finds the next one in the map it reloads: every
// increment counts once.
func TestShardingClusterClientFollowsTheLeader(t *testing.T) {
	servers, leadID, _ := startShardedCluster(t)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{followerOf(servers, leadID).RedisAddr()},
		Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { cc.Close() })
	ctx := context.Background()
	incr := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			deadline := time.Now().Add(10 * time.Second)
			for {
				err := cc.Incr(ctx, "counter").Err()
				if err == nil {
					break
				}
				// only the moments without a leader may fail; the next try must not
				// count twice, which an INCR refused before it was proposed does not
				if !strings.HasPrefix(err.Error(), "CLUSTERDOWN") || time.Now().After(deadline) {
					t.Fatalf("INCR through the cluster client: %v", err)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	incr(20)
	target := followerOf(servers, leadID)
	var targetID uint64
	for id, s := range servers {
		if s == target {
			targetID = id
		}
	}
	// A transaction queued on the leader before it hands over is sent to the new leader
	// at EXEC, not run.
	old := servers[leadID]
	tx := rawConn(t, old)
	tx.expect(t, "+OK", "MULTI")
	tx.expect(t, "+QUEUED", "INCR", "counter")
	if err := client(t, servers[leadID]).Do(ctx, "RAFT.TRANSFER_LEADER", targetID).Err(); err != nil {
		t.Fatalf("RAFT.TRANSFER_LEADER %d: %v", targetID, err)
	}
	for _, s := range servers {
		awaitLeaderKnown(t, s, targetID)
	}
	tx.expect(t, "-MOVED "+strconv.Itoa(resp.KeySlot([]byte("counter")))+" "+target.RedisAddr(), "EXEC")
	// The client's map still names the old leader: its transaction is refused there as
	// it is queued (MOVED, then EXECABORT) and runs once on the new leader.
	var second *redis.IntCmd
	if _, err := cc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, "counter")
		second = p.Incr(ctx, "counter")
		return nil
	}); err != nil || second.Val() != 22 {
		t.Fatalf("a transaction through the cluster client after the transfer: %v, second INCR %d, want 22", err, second.Val())
	}
	if info := client(t, old).Info(ctx, "errorstats").Val(); !strings.Contains(info, "errorstat_EXECABORT:count=1\r\n") {
		t.Fatalf("the old leader's errorstats after the client's transaction, want one EXECABORT:\n%s", info)
	}
	incr(18)
	if v, err := client(t, target).Get(ctx, "counter").Int(); err != nil || v != 40 {
		t.Fatalf("counter on the new leader: %d %v, want 40", v, err)
	}
	if got := cc.ClusterSlots(ctx).Val(); len(got) != 1 || got[0].Nodes[0].Addr != target.RedisAddr() {
		t.Fatalf("CLUSTER SLOTS after the transfer: %+v, want %s first", got, target.RedisAddr())
	}

	// The leader stops: the client finds the one the others elect. When its retries
	// give up on a master that refuses connections, go-redis does not reload its map
	// before its timer (ClusterStateReloadInterval, a minute by default), so the
	// application asks for it (redis-py's RedisCluster reloads after five refusals). The retries
	// go through IDEMPOTENT, so that one whose first try committed unseen (a lost
	// connection, a timeout) counts once.
	target.Close()
	delete(servers, targetID)
	for seq := 1; seq <= 20; seq++ {
		deadline := time.Now().Add(20 * time.Second)
		for {
			err := cc.Do(ctx, "IDEMPOTENT", "cc-test", seq, "INCR", "counter").Err()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("IDEMPOTENT INCR %d through the cluster client after the leader stopped: %v", seq, err)
			}
			time.Sleep(5 * time.Millisecond)
			cc.ReloadState(ctx)
		}
	}
	newID, newLead := leaderOf(t, servers, 0)
	if v, err := client(t, newLead).Get(ctx, "counter").Int(); err != nil || v != 60 {
		t.Fatalf("counter on member %d, leading after the stop: %d %v, want 60", newID, v, err)
	}
}

// A connection that sent READONLY reads from a follower, as from a Redis Cluster
// replica, and every read is linearizable: it sees each write acknowledged before it
// was sent, though blind writes are acknowledged before any member has applied them.
// Writes, transactions and blocking commands still go to the leader; READWRITE and
// RESET end the replica reads. go-redis's ClusterClient with ReadOnly sends its reads
// to the replicas CLUSTER SLOTS names.
func TestShardingReplicaReads(t *testing.T) {
	servers, leadID, lead := startShardedCluster(t)
	fol := followerOf(servers, leadID)
	leadAddr := lead.RedisAddr()
	moved := func(key string) string {
		return "-MOVED " + strconv.Itoa(resp.KeySlot([]byte(key))) + " " + leadAddr
	}
	r, lr := rawConn(t, fol), rawConn(t, lead)
	r.expect(t, moved("k"), "GET", "k")
	r.expect(t, "+OK", "READONLY")
	for i := 0; i < 100; i++ {
		v := strconv.Itoa(i)
		lr.expect(t, "+OK", "SET", "k", v)
		r.expect(t, respBulk(v)[:len(respBulk(v))-2], "GET", "k")
	}
	r.expect(t, ":1", "DBSIZE")
	r.expect(t, moved("k"), "SET", "k", "x")
	r.expect(t, moved("list"), "BLPOP", "list", "0")
	r.expect(t, "-CROSSSLOT Keys in request don't hash to the same slot", "MGET", "a", "b")
	r.expect(t, "+OK", "MULTI")
	r.expect(t, moved("k"), "GET", "k")
	r.expect(t, "-EXECABORT Transaction discarded because of previous errors.", "EXEC")
	r.expect(t, "+OK", "ASKING")
	if info := client(t, fol).Info(context.Background(), "commandstats").Val(); !regexp.MustCompile(`\r\ncmdstat_get:calls=100,`).MatchString(info) {
		t.Fatalf("the follower should have served the 100 GETs:\n%s", info)
	}
	flags := func() string {
		t.Helper()
		r.send("CLIENT", "INFO")
		m := regexp.MustCompile(` flags=(\w+) `).FindStringSubmatch(r.readReply(t))
		if m == nil {
			t.Fatal("CLIENT INFO without flags")
		}
		return m[1]
	}
	r.expect(t, "+OK", "CLIENT", "TRACKING", "on")
	if f := flags(); f != "tr" {
		t.Fatalf("CLIENT INFO flags=%s, want tr (Redis's order)", f)
	}
	// a key read on a follower is invalidated when the leader's write reaches it
	t3 := rawConn(t, fol)
	t3.send("HELLO", "3")
	t3.readReply(t)
	t3.expect(t, "+OK", "READONLY")
	t3.expect(t, "+OK", "CLIENT", "TRACKING", "on")
	t3.expect(t, "$2\r\n99", "GET", "k")
	lr.expect(t, "+OK", "SET", "k", "new")
	if got := t3.readReply(t); got != ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk" {
		t.Fatalf("a follower's tracking connection after the leader's write: %q, want the invalidation", got)
	}
	r.expect(t, "+OK", "READWRITE")
	r.expect(t, moved("k"), "GET", "k")
	r.expect(t, "+OK", "READONLY")
	r.expect(t, "+RESET", "RESET")
	r.expect(t, moved("k"), "GET", "k")
	if f := flags(); f != "N" {
		t.Fatalf("CLIENT INFO flags=%s after RESET, want N", f)
	}
	r.expect(t, "+OK", "READONLY")
	if list := client(t, fol).ClientList(context.Background()).Val(); !regexp.MustCompile(` flags=r .* cmd=readonly `).MatchString(list) {
		t.Fatalf("CLIENT LIST should show the READONLY connection's flag r:\n%s", list)
	}
	r.expect(t, "+OK", "READWRITE")

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{leadAddr}, ReadOnly: true,
		Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { cc.Close() })
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		key, v := "key:"+strconv.Itoa(i), strconv.Itoa(i)
		if err := cc.Set(ctx, key, v, 0).Err(); err != nil {
			t.Fatalf("SET %s through the cluster client: %v", key, err)
		}
		if got, err := cc.Get(ctx, key).Result(); err != nil || got != v {
			t.Fatalf("GET %s through the cluster client right after its SET: %q %v, want %q", key, got, err, v)
		}
	}
	getsAt := func(s *Server) int {
		m := regexp.MustCompile(`\r\ncmdstat_get:calls=(\d+),`).FindStringSubmatch(client(t, s).Info(ctx, "commandstats").Val())
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	replicaGets := -101 // the raw connections'
	for id, s := range servers {
		if id != leadID {
			replicaGets += getsAt(s)
		}
	}
	if replicaGets != 50 || getsAt(lead) != 0 {
		t.Fatalf("the cluster client's GETs: %d on the followers, %d on the leader; want all 50 on the followers", replicaGets, getsAt(lead))
	}

	// Without sharding, READONLY is refused again, and the connection's reads go to
	// the leader.
	r.expect(t, "+OK", "READONLY")
	r.expect(t, "+OK", "CONFIG", "SET", "raft.sharding", "no")
	r.expect(t, "-ERR This instance has cluster support disabled", "READONLY")
	r.expect(t, "-MOVED 0 "+leadAddr, "GET", "k")
}

// A follower's connection whose read was refused (MOVED) had asked for the read
// barrier first, which failed; the failure must not answer the connection's next read,
// once the member leads.
func TestShardingRefusedReadLeavesNoBarrierBehind(t *testing.T) {
	servers, leadID, lead := startShardedCluster(t)
	ctx := context.Background()
	if err := client(t, lead).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	var folID uint64
	for id := range servers {
		if id != leadID {
			folID = id
		}
	}
	r := rawConn(t, servers[folID])
	r.expect(t, "-MOVED "+strconv.Itoa(resp.KeySlot([]byte("k")))+" "+lead.RedisAddr(), "GET", "k")
	if err := client(t, lead).Do(ctx, "RAFT.TRANSFER_LEADER", folID).Err(); err != nil {
		t.Fatalf("RAFT.TRANSFER_LEADER %d: %v", folID, err)
	}
	for deadline := time.Now().Add(10 * time.Second); servers[folID].cl().raft.Role() != raft.Leader; {
		if time.Now().After(deadline) {
			t.Fatalf("member %d never led", folID)
		}
		time.Sleep(time.Millisecond)
	}
	r.expect(t, "$1\r\nv", "GET", "k")
}

// A node started with sharding that waits for RAFT.CLUSTER INIT or JOIN answers
// CLUSTER as RedisRaft does before it is a member: NOCLUSTER.
func TestShardingBeforeInit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, Config{ClusterListener: ln, DataDir: t.TempDir(), Sharding: true, TickInterval: 5 * time.Millisecond})
	t.Cleanup(func() { s.Close() })
	r := rawConn(t, s)
	r.expect(t, "-NOCLUSTER No Raft Cluster", "CLUSTER", "SLOTS")
	r.expect(t, "*2\r\n$13\r\nraft.sharding\r\n$3\r\nyes", "CONFIG", "GET", "raft.sharding")
}
