package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// go-redis's PubSub against one node: channel and pattern subscriptions, the counts
// PUBLISH and PUBSUB report, and unsubscribing.
func TestPubSubGoRedis(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	ctx := context.Background()
	c := client(t, s)
	sub := c.Subscribe(ctx, "news")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	if err := sub.PSubscribe(ctx, "n*"); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Publish(ctx, "news", "hello").Result(); err != nil || n != 2 {
		t.Fatalf("PUBLISH to a channel and a pattern subscriber: %d %v", n, err)
	}
	for _, want := range []redis.Message{{Channel: "news", Payload: "hello"}, {Channel: "news", Pattern: "n*", Payload: "hello"}} {
		m, err := sub.ReceiveMessage(ctx)
		if err != nil || m.Channel != want.Channel || m.Pattern != want.Pattern || m.Payload != want.Payload {
			t.Fatalf("message %+v %v, want %+v", m, err, want)
		}
	}
	if v := c.PubSubNumSub(ctx, "news", "other").Val(); v["news"] != 1 || v["other"] != 0 {
		t.Fatalf("NUMSUB: %v", v)
	}
	if n := c.PubSubNumPat(ctx).Val(); n != 1 {
		t.Fatalf("NUMPAT: %d", n)
	}
	// a script sees 0: every member runs it, and its counts differ
	if n, err := c.Eval(ctx, "return redis.call('publish', 'news', 'from a script')", nil).Int(); err != nil || n != 0 {
		t.Fatalf("PUBLISH in a script: %d %v", n, err)
	}
	if m, err := sub.ReceiveMessage(ctx); err != nil || m.Payload != "from a script" {
		t.Fatalf("message from a script: %+v %v", m, err)
	}
	sub.ReceiveMessage(ctx) // its pattern twin
	if err := sub.Unsubscribe(ctx, "news"); err != nil {
		t.Fatal(err)
	}
	if err := sub.PUnsubscribe(ctx, "n*"); err != nil {
		t.Fatal(err)
	}
	pollFor(t, func() bool { return c.PubSubNumSub(ctx, "news").Val()["news"] == 0 && c.PubSubNumPat(ctx).Val() == 0 })
	if n := c.Publish(ctx, "news", "nobody").Val(); n != 0 {
		t.Fatalf("PUBLISH after unsubscribing: %d", n)
	}
}

// pollFor polls cond until it holds, or fails the test after 10 s.
func pollFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not reached in 10 s")
}

// RESP2's subscribed context, byte for byte as redis-server 7.0.15 answers it.
func TestPubSubSubscribedContext(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	r := rawConn(t, s)
	r.expect(t, "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1", "SUBSCRIBE", "a")
	r.expect(t, "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", "GET", "k")
	r.expect(t, "-ERR wrong number of arguments for 'get' command", "GET")
	r.expect(t, "*2\r\n$4\r\npong\r\n$0\r\n", "PING")
	r.expect(t, "*2\r\n$4\r\npong\r\n$1\r\nx", "PING", "x")
	r.expect(t, "*3\r\n$12\r\npunsubscribe\r\n$1\r\np\r\n:1", "PUNSUBSCRIBE", "p")
	r.expect(t, "*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:0", "UNSUBSCRIBE")
	r.expect(t, "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0", "UNSUBSCRIBE")
	r.expect(t, "+PONG", "PING") // out of the context again
	r.expect(t, "*3\r\n$10\r\nssubscribe\r\n$1\r\ns\r\n:1", "SSUBSCRIBE", "s")
	r.expect(t, "+RESET", "RESET")
	r.expect(t, "$-1", "GET", "k")
	r.expect(t, "*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:1", "SUBSCRIBE", "b")
	r.expect(t, "+OK", "QUIT")
	if _, err := r.r.ReadByte(); err == nil {
		t.Fatal("the connection is open after QUIT")
	}
}

// A message published through any member reaches the subscribers of every member: the
// PUBLISH goes through the log, and each member's applier hands it to its own clients.
// PUBLISH counts the proposing member's subscribers only, as Redis Cluster does.
func TestPubSubAcrossClusterMembers(t *testing.T) {
	servers := startCluster(t, 3)
	_, lead := leaderOf(t, servers, 0)
	ctx := context.Background()
	var subs []*redis.PubSub
	for _, s := range servers {
		sub := client(t, s).Subscribe(ctx, "events")
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub)
	}
	if n, err := client(t, lead).Publish(ctx, "events", "e1").Result(); err != nil || n != 1 {
		t.Fatalf("PUBLISH on the leader: %d %v (want its one subscriber)", n, err)
	}
	for i, sub := range subs {
		if m, err := sub.ReceiveMessage(ctx); err != nil || m.Payload != "e1" {
			t.Fatalf("member %d's subscriber: %+v %v", i, m, err)
		}
	}
}

// onNodeAndLeader runs check against a single node and against a 3-member cluster's
// leader, whose connections start on the asynchronous event loop.
func onNodeAndLeader(t *testing.T, check func(*testing.T, *Server)) {
	t.Run("node", func(t *testing.T) {
		s := startServer(t, Config{MemoryOnly: true})
		defer s.Close()
		check(t, s)
	})
	t.Run("cluster leader", func(t *testing.T) {
		_, lead := leaderOf(t, startCluster(t, 3), 0)
		check(t, lead)
	})
}

// PUBSUB's argument errors, as redis-server 7.0.15 words them: past the arity check, a
// CHANNELS with two patterns is a subcommand syntax error, named as the client wrote it.
func TestPubSubArgumentErrors(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	r := rawConn(t, s)
	r.expect(t, "-ERR wrong number of arguments for 'pubsub' command", "PUBSUB")
	r.expect(t, "-ERR unknown subcommand 'FOO'. Try PUBSUB HELP.", "PUBSUB", "FOO")
	r.expect(t, "-ERR wrong number of arguments for 'pubsub|numpat' command", "PUBSUB", "NUMPAT", "x")
	r.expect(t, "-ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP.", "PUBSUB", "CHANNELS", "a", "b")
	r.expect(t, "-ERR unknown subcommand or wrong number of arguments for 'shardChannels'. Try PUBSUB HELP.", "PUBSUB", "shardChannels", "a", "b")
	r.expect(t, "*0", "PUBSUB", "CHANNELS", "a")
}

// (Un)subscribing inside MULTI, byte for byte as redis-server 7.0.15 answers it: EXEC
// runs the subscriptions, its reply holds their confirmations, and the connection is
// subscribed from then on; SSUBSCRIBE is refused there. An UNSUBSCRIBE with nothing to
// leave counts what the connection still holds.
func TestPubSubInsideMulti(t *testing.T) {
	check := func(t *testing.T, s *Server) {
		ctx := context.Background()
		c := client(t, s)
		r := rawConn(t, s)
		r.exchange(t, "MULTI\r\nSUBSCRIBE ch\r\nEXEC\r\n",
			"+OK\r\n+QUEUED\r\n*1\r\n*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n")
		r.expect(t, "*2\r\n$4\r\npong\r\n$0\r\n", "PING") // subscribed
		if n := c.PubSubNumSub(ctx, "ch").Val()["ch"]; n != 1 {
			t.Fatalf("NUMSUB after EXEC subscribed: %d", n)
		}
		if n, err := c.Publish(ctx, "ch", "hi").Result(); err != nil || n != 1 {
			t.Fatalf("PUBLISH: %d %v", n, err)
		}
		if m := r.readReply(t); m != "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi" {
			t.Fatalf("message: %q", m)
		}
		r.expect(t, "*3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:0", "UNSUBSCRIBE")

		r.exchange(t, "MULTI\r\nPSUBSCRIBE c*\r\nUNSUBSCRIBE\r\nSSUBSCRIBE s\r\nSET a 1\r\nSUBSCRIBE gone\r\nUNSUBSCRIBE gone\r\nEXEC\r\n",
			"+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*6\r\n"+
				"*3\r\n$10\r\npsubscribe\r\n$2\r\nc*\r\n:1\r\n"+
				"*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:1\r\n"+
				"-ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client\r\n"+
				"+OK\r\n"+
				"*3\r\n$9\r\nsubscribe\r\n$4\r\ngone\r\n:2\r\n"+
				"*3\r\n$11\r\nunsubscribe\r\n$4\r\ngone\r\n:1\r\n")
		if v := c.Get(ctx, "a").Val(); v != "1" {
			t.Fatalf("the transaction's SET: %q", v)
		}
		if n, numpat := c.PubSubNumSub(ctx, "gone").Val()["gone"], c.PubSubNumPat(ctx).Val(); n != 0 || numpat != 1 {
			t.Fatalf("after EXEC: NUMSUB gone %d (left in the transaction), NUMPAT %d", n, numpat)
		}
		r.expect(t, "*3\r\n$12\r\npunsubscribe\r\n$2\r\nc*\r\n:0", "PUNSUBSCRIBE")
		r.expect(t, "+PONG", "PING")
	}
	onNodeAndLeader(t, check)
}

// A subscriber that closed its connection is no longer counted by the PUBSUB requests
// that come after the close, though its goroutine may not have read the end of file yet:
// Redis handles the close first, since it came first. Before the hub looked at the
// socket (present), the cluster leader counted the subscriber within the first rounds
// (redis-py against a single node: 22 rounds of 50).
func TestClosedSubscriberIsNotCounted(t *testing.T) {
	check := func(t *testing.T, s *Server) {
		ctx := context.Background()
		c := client(t, s)
		for round := range 30 {
			r := rawConn(t, s)
			r.send("SUBSCRIBE", "ch")
			r.readReply(t)
			r.send("PSUBSCRIBE", "c*")
			r.readReply(t)
			r.nc.Close()
			numsub := c.PubSubNumSub(ctx, "ch").Val()["ch"]
			numpat := c.PubSubNumPat(ctx).Val()
			channels := c.PubSubChannels(ctx, "*").Val()
			if numsub != 0 || numpat != 0 || len(channels) != 0 {
				t.Fatalf("round %d, after the subscriber closed: NUMSUB %d, NUMPAT %d, CHANNELS %q; want none",
					round, numsub, numpat, channels)
			}
		}
	}
	onNodeAndLeader(t, check)
}

// A subscriber that reads nothing while messages pile up is disconnected once its
// queue passes the limit, and its subscriptions end with it; the publisher and the
// node go on.
func TestPubSubSlowSubscriberIsCut(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	ctx := context.Background()
	slow := rawConn(t, s)
	slow.expect(t, "*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1", "SUBSCRIBE", "c")
	c := client(t, s)
	msg := strings.Repeat("x", 1<<20)
	for i := 0; i < 48; i++ { // past the 32 MiB limit and what the socket buffers hold
		if err := c.Publish(ctx, "c", msg).Err(); err != nil {
			t.Fatal(err)
		}
	}
	pollFor(t, func() bool { return c.PubSubNumSub(ctx, "c").Val()["c"] == 0 })
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

// Keyspace notifications on a cluster: each member publishes the events of every write
// it applies to its own subscribers, in the order Redis publishes them, and only the
// classes its own notify-keyspace-events names.
func TestKeyspaceNotificationsOnClusterMembers(t *testing.T) {
	servers := startCluster(t, 3)
	_, lead := leaderOf(t, servers, 0)
	ctx := context.Background()
	var subs []*redis.PubSub
	for _, s := range servers {
		c := client(t, s)
		if err := c.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err(); err != nil {
			t.Fatal(err)
		}
		sub := notifySubscriber(t, c, "AKE", "__keyevent@0__:*") // redis answers AKE for KEA
		defer sub.Close()
		subs = append(subs, sub)
	}
	c := client(t, lead)
	if err := c.Set(ctx, "k", "v", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.LPush(ctx, "l", "a").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Del(ctx, "l").Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"set k", "expire k", "lpush l", "del l"}
	for i, sub := range subs {
		for _, w := range want {
			m, err := sub.ReceiveMessage(ctx)
			if err != nil || m.Channel+" "+m.Payload != "__keyevent@0__:"+w {
				t.Fatalf("member %d: %+v %v, want %s", i, m, err, w)
			}
		}
	}
	err := c.ConfigSet(ctx, "notify-keyspace-events", "KEQ").Err()
	if err == nil || err.Error() != "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'." {
		t.Fatalf("a bad class: %v", err)
	}
}

// notifySubscriber checks that CONFIG GET notify-keyspace-events answers flags, and
// returns a subscription to pattern, confirmed.
func notifySubscriber(t *testing.T, c *redis.Client, flags, pattern string) *redis.PubSub {
	t.Helper()
	ctx := context.Background()
	if got := c.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"]; got != flags {
		t.Fatalf("CONFIG GET notify-keyspace-events: %q, want %q", got, flags)
	}
	sub := c.PSubscribe(ctx, pattern)
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	return sub
}

// notify-keyspace-events at start (--notify-keyspace-events), and a bad one refused.
func TestNotifyKeyspaceEventsAtStart(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true, NotifyKeyspaceEvents: "Kg"})
	defer s.Close()
	ctx := context.Background()
	c := client(t, s)
	sub := notifySubscriber(t, c, "gK", "__keyspace@0__:*")
	defer sub.Close()
	c.Set(ctx, "s", "v", 0)       // a string event: not published
	c.Expire(ctx, "s", time.Hour) // a generic one
	if m, err := sub.ReceiveMessage(ctx); err != nil || m.Channel != "__keyspace@0__:s" || m.Payload != "expire" {
		t.Fatalf("%+v %v, want expire on __keyspace@0__:s", m, err)
	}
	if _, err := Start(Config{MemoryOnly: true, NotifyKeyspaceEvents: "KEZ"}); err == nil {
		t.Fatal("started with an unknown event class")
	}
}
