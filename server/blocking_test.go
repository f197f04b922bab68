package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// waitBlockedClients polls INFO clients until blocked_clients is n.
func waitBlockedClients(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	want := fmt.Sprintf("blocked_clients:%d\r\n", n)
	var info string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		info = c.Info(context.Background(), "clients").Val()
		if strings.Contains(info, want) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("want %q in %q", want, info)
}

// BLPOP waits for a push, BLMOVE and BZPOPMIN for theirs, and a timeout ends a wait
// with the nil Redis gives.
func TestBlockingCommandsWait(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	ctx := context.Background()
	admin, c := client(t, s), client(t, s)

	type popped struct {
		v   []string
		err error
	}
	got := make(chan popped, 1)
	go func() {
		v, err := c.BLPop(ctx, 10*time.Second, "q0", "q1").Result()
		got <- popped{v, err}
	}()
	waitBlockedClients(t, admin, 1)
	if err := admin.RPush(ctx, "q1", "job", "next").Err(); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.err != nil || !slices.Equal(r.v, []string{"q1", "job"}) {
		t.Fatalf("BLPOP: %q %v", r.v, r.err)
	}
	if v := admin.LRange(ctx, "q1", 0, -1).Val(); !slices.Equal(v, []string{"next"}) {
		t.Fatalf("after BLPOP the list holds %q", v)
	}
	waitBlockedClients(t, admin, 0)

	moved := make(chan error, 1)
	go func() {
		v, err := c.BLMove(ctx, "src", "dst", "RIGHT", "LEFT", 10*time.Second).Result()
		if err == nil && v != "x" {
			err = fmt.Errorf("moved %q", v)
		}
		moved <- err
	}()
	waitBlockedClients(t, admin, 1)
	admin.LPush(ctx, "src", "x")
	if err := <-moved; err != nil {
		t.Fatal(err)
	}
	if v := admin.LRange(ctx, "dst", 0, -1).Val(); !slices.Equal(v, []string{"x"}) {
		t.Fatalf("dst: %q", v)
	}

	zgot := make(chan *redis.ZWithKey, 1)
	go func() {
		z, _ := c.BZPopMin(ctx, 10*time.Second, "z").Result()
		zgot <- z
	}()
	waitBlockedClients(t, admin, 1)
	admin.ZAdd(ctx, "z", redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 1, Member: "a"})
	if z := <-zgot; z == nil || z.Key != "z" || z.Member != "a" || z.Score != 1 {
		t.Fatalf("BZPOPMIN: %+v", z)
	}

	// (go-redis rounds timeouts under a second up to one)
	r := rawConn(t, s)
	start := time.Now()
	r.expect(t, "*-1", "BRPOP", "empty", "0.05")
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("BRPOP with a 50 ms timeout returned after %v", d)
	}
	r.send("HELLO", "3")
	r.readReply(t)
	r.expect(t, "_", "BLMOVE", "empty", "x", "LEFT", "LEFT", "0.01") // RESP3's null
}

// Clients blocked on the same lists each get a different element, and every element
// pushed reaches exactly one of them: none lost, none popped twice.
func TestBlockedClientsSharePushes(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	ctx := context.Background()
	admin := client(t, s)
	const n = 8
	var mu sync.Mutex
	var all []string
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		c := client(t, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				v, err := c.BRPop(ctx, 10*time.Second, "a", "b").Result()
				if err != nil {
					t.Errorf("BRPOP: %v", err)
					return
				}
				mu.Lock()
				all = append(all, v[0]+"/"+v[1])
				mu.Unlock()
			}
		}()
	}
	waitBlockedClients(t, admin, n)
	var want []string
	for j := 0; j < 5*n; j++ {
		key := []string{"a", "b"}[j%2]
		e := fmt.Sprint(j)
		want = append(want, key+"/"+e)
		if err := admin.LPush(ctx, key, e).Err(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	slices.Sort(all)
	slices.Sort(want)
	if !slices.Equal(all, want) {
		t.Fatalf("popped %q\nwant  %q", all, want)
	}
	if k := admin.Exists(ctx, "a", "b").Val(); k != 0 {
		t.Fatalf("%d lists left", k)
	}
}

// A client that leaves while blocked takes nothing: an element pushed after it left
// stays in the list. And replies pipelined before a blocking command are not held back
// by its wait; those after it come after its reply.
func TestBlockedClientThatLeftPopsNothing(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	ctx := context.Background()
	admin := client(t, s)

	r := rawConn(t, s)
	r.nc.Write([]byte(respCommand("RPUSH", "other", "x") + respCommand("BLPOP", "q", "0") + respCommand("GET", "g")))
	if got := r.readReply(t); got != ":1" {
		t.Fatalf("RPUSH before BLPOP: %q", got)
	}
	waitBlockedClients(t, admin, 1)
	admin.Set(ctx, "g", "v", 0)
	admin.RPush(ctx, "q", "e")
	if got := r.readReply(t); got != "*2\r\n$1\r\nq\r\n$1\r\ne" {
		t.Fatalf("BLPOP: %q", got)
	}
	if got := r.readReply(t); got != "$1\r\nv" {
		t.Fatalf("GET after BLPOP: %q", got)
	}

	gone := rawConn(t, s)
	gone.send("BRPOPLPUSH", "q", "dst", "0")
	waitBlockedClients(t, admin, 1)
	gone.nc.Close()
	waitBlockedClients(t, admin, 0)
	admin.RPush(ctx, "q", "kept")
	if v := admin.LRange(ctx, "q", 0, -1).Val(); !slices.Equal(v, []string{"kept"}) {
		t.Fatalf("q holds %q after a departed client's BRPOPLPUSH", v)
	}
	if n := admin.Exists(ctx, "dst").Val(); n != 0 {
		t.Fatal("a departed client's BRPOPLPUSH moved an element")
	}
}

// On a cluster member the connection leaves the event loop for the wait, and the
// member's own applier wakes it when the push is applied there.
func TestClusterBlockingPop(t *testing.T) {
	servers := startCluster(t, 3)
	_, lead := leaderOf(t, servers, 0)
	ctx := context.Background()
	admin := client(t, lead)
	r := rawConn(t, lead)
	r.send("BLPOP", "q", "10")
	waitBlockedClients(t, admin, 1)
	if n := lead.redis.LoopClients(); n != 0 {
		t.Fatalf("%d connections on the event loop while one is blocked, want 0", n)
	}
	admin.RPush(ctx, "q", "e")
	if got := r.readReply(t); got != "*2\r\n$1\r\nq\r\n$1\r\ne" {
		t.Fatalf("BLPOP: %q", got)
	}
	r.expect(t, "*-1", "BLPOP", "q", "0.01")
	r.expect(t, "+PONG", "PING")
}

// XREAD BLOCK waits for an XADD to one of its streams, created or not yet; "$" means
// the entries added after the call, however long it waits.
func TestXReadBlocks(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	ctx := context.Background()
	admin, c := client(t, s), client(t, s)
	admin.XAdd(ctx, &redis.XAddArgs{Stream: "events", ID: "1-0", Values: []string{"old", "1"}})

	got := make(chan []redis.XStream, 1)
	go func() {
		v, err := c.XRead(ctx, &redis.XReadArgs{Streams: []string{"events", "other", "$", "0"}, Block: 10 * time.Second}).Result()
		if err != nil {
			t.Errorf("XREAD BLOCK: %v", err)
		}
		got <- v
	}()
	waitBlockedClients(t, admin, 1)
	admin.XAdd(ctx, &redis.XAddArgs{Stream: "events", ID: "2-0", Values: []string{"new", "2"}})
	v := <-got
	if len(v) != 1 || v[0].Stream != "events" || len(v[0].Messages) != 1 || v[0].Messages[0].ID != "2-0" {
		t.Fatalf("XREAD BLOCK with $: %+v", v)
	}

	go func() {
		v, err := c.XRead(ctx, &redis.XReadArgs{Streams: []string{"fresh", "0"}, Block: 10 * time.Second}).Result()
		if err != nil {
			t.Errorf("XREAD BLOCK: %v", err)
		}
		got <- v
	}()
	waitBlockedClients(t, admin, 1)
	admin.XAdd(ctx, &redis.XAddArgs{Stream: "fresh", ID: "5-1", Values: []string{"k", "v"}})
	if v := <-got; len(v) != 1 || v[0].Stream != "fresh" || v[0].Messages[0].ID != "5-1" {
		t.Fatalf("XREAD BLOCK on a stream it creates: %+v", v)
	}

	r := rawConn(t, s)
	r.expect(t, "*-1", "XREAD", "BLOCK", "20", "STREAMS", "events", "$")
	r.expect(t, "*1\r\n*2\r\n$6\r\nevents\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$3\r\nnew\r\n$1\r\n2", "XREAD", "BLOCK", "0", "STREAMS", "events", "1-0")
}

// CLIENT UNBLOCK ends a wait as a timeout or as an error; CLIENT KILL closes a blocked
// client, which then pops nothing; CLIENT LIST shows who is blocked.
func TestClientUnblockAndKill(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	ctx := context.Background()
	admin := client(t, s)

	r := rawConn(t, s)
	id := fmt.Sprint(connID(t, r))
	for _, c := range []struct{ reason, want string }{
		{"TIMEOUT", "*-1"},
		{"ERROR", "-UNBLOCKED client unblocked via CLIENT UNBLOCK"},
	} {
		r.send("BLPOP", "q", "0")
		waitBlockedClients(t, admin, 1)
		// as Redis, the line shows the command it is blocked in (it ran CLIENT ID before)
		if l := admin.ClientList(ctx).Val(); !strings.Contains(l, "id="+id+" ") || !strings.Contains(l, "flags=b ") || !strings.Contains(l, " cmd=blpop ") {
			t.Fatalf("CLIENT LIST while blocked: %q", l)
		}
		if n := admin.Do(ctx, "CLIENT", "UNBLOCK", id, c.reason).Val(); n != int64(1) {
			t.Fatalf("CLIENT UNBLOCK %s: %v", c.reason, n)
		}
		if got := r.readReply(t); got != c.want {
			t.Fatalf("unblocked with %s: %q, want %q", c.reason, got, c.want)
		}
	}
	if n := admin.Do(ctx, "CLIENT", "UNBLOCK", id).Val(); n != int64(0) {
		t.Fatalf("CLIENT UNBLOCK of a client that is not blocked: %v", n)
	}

	r.send("BRPOPLPUSH", "q", "dst", "0")
	waitBlockedClients(t, admin, 1)
	if n := admin.Do(ctx, "CLIENT", "KILL", "ID", id).Val(); n != int64(1) {
		t.Fatalf("CLIENT KILL ID: %v", n)
	}
	if _, err := r.r.ReadByte(); err == nil {
		t.Fatal("the killed client's connection is open")
	}
	waitBlockedClients(t, admin, 0)
	admin.RPush(ctx, "q", "kept")
	if v := admin.LRange(ctx, "q", 0, -1).Val(); len(v) != 1 {
		t.Fatalf("q after a killed client's BRPOPLPUSH: %q", v)
	}
}

// connID asks a raw connection for its CLIENT ID.
func connID(t *testing.T, r *raw) int64 {
	t.Helper()
	r.send("CLIENT", "ID")
	var id int64
	fmt.Sscanf(r.readReply(t), ":%d", &id)
	return id
}

// CLIENT KILL TYPE pubsub closes the subscribers, on a cluster member's event loop too
// (a connection still on the loop is shut down there).
func TestClientKillOnAClusterMember(t *testing.T) {
	servers := startCluster(t, 3)
	_, lead := leaderOf(t, servers, 0)
	ctx := context.Background()
	admin := client(t, lead)
	onLoop := rawConn(t, lead)
	onLoop.expect(t, "+PONG", "PING")
	sub := rawConn(t, lead)
	sub.expect(t, "*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1", "SUBSCRIBE", "c")
	if l := admin.Do(ctx, "CLIENT", "LIST", "TYPE", "pubsub").Val(); !strings.Contains(fmt.Sprint(l), "flags=P ") || !strings.Contains(fmt.Sprint(l), "sub=1 ") {
		t.Fatalf("CLIENT LIST TYPE pubsub: %q", l)
	}
	if n := admin.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Val(); n != int64(1) {
		t.Fatalf("CLIENT KILL TYPE pubsub: %v", n)
	}
	if _, err := sub.r.ReadByte(); err == nil {
		t.Fatal("the subscriber's connection is open")
	}
	if n := lead.redis.LoopClients(); n < 1 {
		t.Fatalf("%d connections on the event loop", n)
	}
	if n := admin.Do(ctx, "CLIENT", "KILL", "LADDR", lead.RedisAddr(), "SKIPME", "yes").Val(); n.(int64) < 1 {
		t.Fatalf("CLIENT KILL LADDR: %v", n)
	}
	if _, err := onLoop.r.ReadByte(); err == nil {
		t.Fatal("a killed connection on the event loop is open")
	}
	if err := admin.Ping(ctx).Err(); err != nil {
		t.Fatalf("the killer was killed: %v", err)
	}
}

// A consumer group through go-redis: XREADGROUP BLOCK waits for an XADD, the entry is
// pending until XACK, and another consumer claims what the first left pending.
func TestStreamConsumerGroup(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	ctx := context.Background()
	admin, c := client(t, s), client(t, s)
	if err := admin.XGroupCreateMkStream(ctx, "jobs", "workers", "$").Err(); err != nil {
		t.Fatal(err)
	}
	got := make(chan []redis.XStream, 1)
	go func() {
		v, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "workers", Consumer: "w1", Streams: []string{"jobs", ">"}, Block: 10 * time.Second}).Result()
		if err != nil {
			t.Errorf("XREADGROUP BLOCK: %v", err)
		}
		got <- v
	}()
	waitBlockedClients(t, admin, 1)
	admin.XAdd(ctx, &redis.XAddArgs{Stream: "jobs", ID: "1-0", Values: []string{"task", "a"}})
	admin.XAdd(ctx, &redis.XAddArgs{Stream: "jobs", ID: "2-0", Values: []string{"task", "b"}})
	v := <-got
	if len(v) != 1 || len(v[0].Messages) == 0 || v[0].Messages[0].ID != "1-0" {
		t.Fatalf("XREADGROUP BLOCK: %+v", v)
	}
	pending := admin.XPending(ctx, "jobs", "workers").Val()
	if pending == nil || pending.Count != int64(len(v[0].Messages)) || pending.Consumers["w1"] != pending.Count {
		t.Fatalf("XPENDING after the read: %+v", pending)
	}
	if n := admin.XAck(ctx, "jobs", "workers", "1-0").Val(); n != 1 {
		t.Fatalf("XACK: %d", n)
	}
	if len(v[0].Messages) == 1 { // 2-0 came after the wake: read it now
		c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "workers", Consumer: "w1", Streams: []string{"jobs", ">"}})
	}
	ids, _, err := admin.XAutoClaimJustID(ctx, &redis.XAutoClaimArgs{Stream: "jobs", Group: "workers", Consumer: "w2", Start: "0"}).Result()
	if err != nil || len(ids) != 1 || ids[0] != "2-0" {
		t.Fatalf("XAUTOCLAIM: %q %v", ids, err)
	}
	groups := admin.XInfoGroups(ctx, "jobs").Val()
	if len(groups) != 1 || groups[0].Pending != 1 || groups[0].LastDeliveredID != "2-0" || groups[0].Lag != 0 {
		t.Fatalf("XINFO GROUPS: %+v", groups)
	}
}
