package server

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client-side caching (CLIENT TRACKING), checked against redis-server: each scenario
// runs on both, and every connection's transcript must be the same, invalidations and
// their place among the replies included.
//
// Invalidations are asynchronous here (the applier sends them), so the runner syncs after
// every step, the same way on both servers: a read on a connection of its own (its read
// barrier: every write acknowledged so far is applied, its invalidations queued), then a
// PING on each listening connection, whose reply leaves behind whatever was queued
// before it. Redis has sent everything by then anyway.

type trackStep struct {
	conn string
	args []string // "$ID:x" stands for connection x's CLIENT ID on that server
	// quiet: not recorded (a reply that differs between the servers, HELLO's id)
	quiet bool
}

type trackScenario struct {
	name   string
	listen []string // the connections invalidations reach, read after every step
	steps  []trackStep
}

func st(conn string, args ...string) trackStep { return trackStep{conn: conn, args: args} }
func stQuiet(conn string, args ...string) trackStep {
	return trackStep{conn: conn, args: args, quiet: true}
}

var trackScenarios = []trackScenario{
	{
		name:   "resp3 default mode",
		listen: []string{"a"},
		steps: []trackStep{
			stQuiet("a", "HELLO", "3"),
			st("a", "CLIENT", "TRACKING", "ON"),
			st("b", "SET", "k1", "v1"),
			st("a", "GET", "k1"),
			st("b", "SET", "k1", "v2"), // invalidates k1
			st("b", "SET", "k1", "v3"), // no longer remembered: nothing
			st("a", "GET", "k1"),
			st("a", "GET", "k2"), // a missing key is remembered too
			st("b", "MSET", "k1", "a", "k2", "b", "k9", "c"),
			st("a", "MGET", "k1", "k2"),
			st("b", "DEL", "k1", "k2"),
			st("a", "HGETALL", "h"),
			st("b", "HSET", "h", "f", "v"),
			st("a", "SMEMBERS", "s"),
			st("b", "SADD", "s", "x"),
			st("a", "TTL", "h"),
			st("b", "EXPIRE", "h", "100"),
			st("a", "GET", "own"),
			st("a", "SET", "own", "1"), // its own write: told too, after the reply
			st("a", "GET", "r1"),
			st("b", "RENAME", "k9", "r1"),
			st("a", "ZUNION", "2", "z1", "z2"), // keys a count names
			st("b", "ZADD", "z2", "1", "m"),
			st("a", "ZINTERCARD", "1", "z3"),
			st("b", "ZADD", "z3", "1", "m"),
			st("a", "SINTERCARD", "2", "s1", "s2"),
			st("b", "SADD", "s2", "m"),
			st("a", "MULTI"),
			st("a", "GET", "tx"),
			st("a", "EXEC"),
			st("b", "SET", "tx", "1"),
			st("a", "CLIENT", "TRACKINGINFO"),
			st("a", "CLIENT", "GETREDIR"),
			st("a", "GET", "k1"),
			st("b", "FLUSHALL"), // everything, a null
			st("b", "SET", "k1", "x"),
			st("a", "GET", "k1"),
			st("a", "CLIENT", "TRACKING", "OFF"),
			st("b", "SET", "k1", "y"), // off: nothing (the key stays remembered)
			st("a", "CLIENT", "TRACKINGINFO"),
			st("a", "CLIENT", "GETREDIR"),
			st("a", "CLIENT", "TRACKING", "ON"),
			st("b", "SET", "k1", "z"), // on again: told of what it read before
			st("a", "CLIENT", "CACHING", "yes"),
		},
	},
	{
		name:   "optin and optout",
		listen: []string{"a", "o"},
		steps: []trackStep{
			stQuiet("a", "HELLO", "3"),
			st("a", "CLIENT", "TRACKING", "ON", "OPTIN"),
			st("a", "GET", "x"), // not opted in
			st("b", "SET", "x", "1"),
			st("a", "CLIENT", "CACHING", "yes"),
			st("a", "CLIENT", "TRACKINGINFO"), // CLIENT commands keep the flag
			st("a", "GET", "x"),
			st("b", "SET", "x", "2"),
			st("a", "CLIENT", "CACHING", "yes"),
			st("a", "PING"),
			st("a", "GET", "y"), // the flag went with PING
			st("b", "SET", "y", "1"),
			st("a", "CLIENT", "CACHING", "yes"),
			st("a", "MULTI"),
			st("a", "GET", "m1"),
			st("a", "GET", "m2"),
			st("a", "EXEC"), // the whole transaction opted in
			st("b", "MSET", "m1", "1", "m2", "2"),
			st("a", "CLIENT", "CACHING", "no"),
			st("a", "CLIENT", "CACHING", "maybe"),
			st("a", "CLIENT", "TRACKING", "ON", "OPTOUT"),
			st("a", "CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT"),
			stQuiet("o", "HELLO", "3"),
			st("o", "CLIENT", "CACHING", "yes"),
			st("o", "CLIENT", "TRACKING", "ON", "OPTOUT", "NOLOOP"),
			st("o", "GET", "z"),
			st("o", "SET", "z", "mine"), // NOLOOP: its own write is not told
			st("b", "SET", "z", "theirs"),
			st("o", "GET", "z"),
			st("b", "SET", "z", "again"),
			st("o", "CLIENT", "CACHING", "no"),
			st("o", "GET", "w"), // opted out
			st("b", "SET", "w", "1"),
			st("o", "CLIENT", "CACHING", "yes"),
			st("o", "CLIENT", "TRACKINGINFO"),
		},
	},
	{
		name:   "broadcast",
		listen: []string{"a", "n"},
		steps: []trackStep{
			stQuiet("a", "HELLO", "3"),
			st("a", "CLIENT", "TRACKING", "ON", "PREFIX", "a:"),
			st("a", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "b:", "PREFIX", "a:"),
			st("b", "SET", "a:1", "x"),
			st("b", "MSET", "b:2", "x", "c:1", "y", "a:2", "z", "a:0", "w"),
			st("b", "SET", "c:2", "x"),
			st("a", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a"),
			st("a", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "d:", "PREFIX", "d:x"),
			st("a", "CLIENT", "TRACKING", "ON"),
			st("a", "CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"),
			st("a", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "e:"),
			st("a", "CLIENT", "TRACKINGINFO"),
			st("b", "SET", "e:1", "x"),
			stQuiet("n", "HELLO", "3"),
			st("n", "CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP"),
			st("n", "SET", "q", "1"), // its own: not told
			st("b", "SET", "q", "2"),
			st("b", "DEL", "q", "a:1"),
			st("b", "FLUSHDB"),
			st("n", "CLIENT", "TRACKINGINFO"),
		},
	},
	{
		name:   "resp2 redirect",
		listen: []string{"r"},
		steps: []trackStep{
			st("r", "SUBSCRIBE", "__redis__:invalidate"),
			st("a", "CLIENT", "TRACKING", "ON", "REDIRECT", "$ID:r"),
			st("a", "GET", "k"),
			st("b", "SET", "k", "1"),
			st("a", "GET", "k"),
			st("a", "GET", "j"),
			st("b", "MSET", "k", "2", "j", "2"),
			st("a", "GET", "k"),
			st("b", "FLUSHALL"),
			st("a", "CLIENT", "TRACKING", "ON", "REDIRECT", "notanumber"),
			st("a", "CLIENT", "TRACKING", "ON", "REDIRECT", "999999"),
			st("a", "CLIENT", "TRACKING", "ON", "REDIRECT", "$ID:r", "REDIRECT", "$ID:r"),
			st("a", "CLIENT", "TRACKING", "ON", "BOGUS"),
			st("a", "CLIENT", "TRACKING", "MAYBE"),
			st("a", "CLIENT", "TRACKING"),
			st("a", "CLIENT", "TRACKING", "ON", "REDIRECT"),
			st("a", "GET", "k"),
			st("r", "QUIT"),
			st("b", "SET", "k", "3"), // the redirect is broken: nobody told
			st("a", "CLIENT", "TRACKINGINFO"),
		},
	},
	{
		name:   "resp3 redirect, then broken",
		listen: []string{"r", "a"},
		steps: []trackStep{
			stQuiet("r", "HELLO", "3"),
			st("r", "SUBSCRIBE", "x"),
			stQuiet("a", "HELLO", "3"),
			st("a", "CLIENT", "TRACKING", "ON", "REDIRECT", "$ID:r"),
			st("a", "GET", "k"),
			st("b", "SET", "k", "1"),
			st("a", "GET", "k"),
			st("r", "QUIT"),
			st("b", "SET", "k", "2"), // a hears that r is gone
			st("a", "GET", "k"),
			st("b", "SET", "k", "3"),
		},
	},
}

// trackRun runs a scenario against the server at addr and returns its transcript.
func trackRun(t *testing.T, addr string, sc trackScenario) []string {
	t.Helper()
	conns := map[string]*rconn{}
	ids := map[string]string{}
	var log []string
	dial := func(name string) *rconn {
		if c := conns[name]; c != nil {
			return c
		}
		c, err := dialRESP(addr)
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.do("CLIENT", "ID")
		if err != nil {
			t.Fatal(err)
		}
		conns[name], ids[name] = c, strconv.FormatInt(v.num, 10)
		return c
	}
	defer closeConns(conns)
	// names renders v with the connection ids it carries (GETREDIR's reply,
	// TRACKINGINFO's redirect, a tracking-redir-broken push) replaced by the
	// connections' names, which are the same on both servers.
	names := func(v rval, getredir bool) string {
		name := func(e *rval) {
			for n, id := range ids {
				if e.kind == ':' && strconv.FormatInt(e.num, 10) == id {
					*e = rval{kind: '+', str: "$ID:" + n}
				}
			}
		}
		switch {
		case getredir:
			name(&v)
		case v.kind == '%' || (v.kind == '*' && len(v.elems) == 6): // TRACKINGINFO
			for i := 0; i+1 < len(v.elems); i += 2 {
				if v.elems[i].str == "redirect" {
					name(&v.elems[i+1])
				}
			}
		case v.kind == '>' && len(v.elems) == 2 && v.elems[0].str == "tracking-redir-broken":
			name(&v.elems[1])
		}
		return render(v)
	}
	isPush := func(v rval) bool {
		return (v.kind == '>' || v.kind == '*') && len(v.elems) > 0 &&
			slices.Contains([]string{"invalidate", "tracking-redir-broken", "message"}, v.elems[0].str)
	}
	inMulti := map[string]bool{} // a listener in MULTI would queue the PING
	sync := dial("sync")
	dial("b").do("FLUSHALL")
	closed := map[string]bool{}
	for i, s := range sc.steps {
		c := dial(s.conn)
		args := make([]string, len(s.args))
		for j, a := range s.args {
			if id, ok := strings.CutPrefix(a, "$ID:"); ok {
				a = ids[id]
			}
			args[j] = a
		}
		if err := c.send(args...); err != nil {
			t.Fatal(err)
		}
		for {
			v, err := c.recv()
			if err != nil {
				t.Fatalf("step %d %q: %v", i, s.args, err)
			}
			if !s.quiet {
				getredir := len(args) == 2 && strings.EqualFold(args[1], "getredir")
				log = append(log, fmt.Sprintf("%d %s< %s", i, s.conn, names(v, getredir && !isPush(v))))
			}
			if !isPush(v) {
				break
			}
		}
		switch strings.ToUpper(s.args[0]) {
		case "QUIT":
			closed[s.conn] = true
		case "MULTI":
			inMulti[s.conn] = true
		case "EXEC", "DISCARD":
			inMulti[s.conn] = false
		}
		if _, err := sync.do("DBSIZE"); err != nil {
			t.Fatal(err)
		}
		for _, l := range sc.listen {
			if closed[l] || inMulti[l] {
				continue
			}
			lc := dial(l)
			if err := lc.send("PING"); err != nil {
				t.Fatal(err)
			}
			for {
				v, err := lc.recv()
				if err != nil {
					t.Fatalf("step %d, listener %s: %v", i, l, err)
				}
				if (v.kind == '+' && v.str == "PONG") || (v.kind == '*' && len(v.elems) == 2 && v.elems[0].str == "pong") {
					break
				}
				log = append(log, fmt.Sprintf("%d %s<< %s", i, l, names(v, false)))
			}
		}
	}
	return log
}

func TestTrackingAgainstRedis(t *testing.T) {
	raddr := startRedisServer(t)
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	for _, sc := range trackScenarios {
		t.Run(strings.ReplaceAll(sc.name, " ", "_"), func(t *testing.T) {
			compareTranscripts(t, trackRun(t, raddr, sc), trackRun(t, s.RedisAddr(), sc))
		})
	}
}

// compareTranscripts fails t at the first line where nanokv's transcript (got) differs
// from redis-server's (want), showing both.
func compareTranscripts(t *testing.T, want, got []string) {
	t.Helper()
	for i := 0; i < max(len(want), len(got)); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Fatalf("transcripts differ at line %d:\nredis-server: %s\nnanokv:       %s\n\nredis-server's:\n%s\n\nnanokv's:\n%s",
				i, w, g, strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
	}
}

// HELLO 3 and CLIENT TRACKING ON pipelined with the first read and write, as a client
// library connects: the write's invalidation reaches the client. (It was dropped: the
// connection's pusher, made by CLIENT TRACKING, took the connection for RESP2 until
// its first output was queued, and under RESP2 pushes nothing.)
func TestTrackingFromTheFirstPipeline(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	r := rawConn(t, s)
	if _, err := r.nc.Write([]byte("HELLO 3\r\nCLIENT TRACKING on\r\nGET k\r\nSET k 2\r\n")); err != nil {
		t.Fatal(err)
	}
	if hello := r.readReply(t); !strings.HasPrefix(hello, "%7") {
		t.Fatalf("HELLO 3: %q", hello)
	}
	for _, want := range []string{"+OK", "_", "+OK"} {
		if got := r.readReply(t); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	r.expect(t, ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk", "GET", "k") // before the read's reply
	if got := r.readReply(t); got != "$1\r\n2" {
		t.Fatalf("GET after the invalidation: %q", got)
	}
}

// A cached read stays correct under a concurrent writer: go-redis with RESP3 caches GET
// replies by hand here (a map the push handler clears), while another client writes.
// Once the writes stop and the last invalidation is in, every cached value must be the
// key's value: a missing or misordered invalidation leaves a stale one.
func TestTrackingCacheStaysCoherent(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "single", true: "cluster_follower"}[cluster], func(t *testing.T) {
			var readAddr, writeAddr string
			if cluster {
				servers := startCluster(t, 3, func(c *Config) { c.FollowerProxy = true })
				i, lead := leaderOf(t, servers, 0)
				writeAddr, readAddr = lead.RedisAddr(), servers[i%3+1].RedisAddr()
			} else {
				s := startServer(t, Config{MemoryOnly: true})
				defer s.Close()
				readAddr, writeAddr = s.RedisAddr(), s.RedisAddr()
			}
			trackCoherence(t, readAddr, writeAddr)
		})
	}
}

func trackCoherence(t *testing.T, readAddr, writeAddr string) {
	reader, err := dialRESP(readAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.close()
	if _, err := reader.do("HELLO", "3"); err != nil {
		t.Fatal(err)
	}
	if v, err := reader.do("CLIENT", "TRACKING", "ON"); err != nil || v.str != "OK" {
		t.Fatalf("CLIENT TRACKING ON: %+v %v", v, err)
	}
	w := redis.NewClient(&redis.Options{Addr: writeAddr, Protocol: 2, DisableIdentity: true})
	defer w.Close()
	ctx := context.Background()
	const keys, rounds = 8, 300
	cache := map[string]string{}
	invalidations, hits := 0, 0
	apply := func(v rval) bool { // a push: drop what it names; false for a reply
		if v.kind != '>' {
			return false
		}
		invalidations++
		if len(v.elems) != 2 || v.elems[0].str != "invalidate" {
			t.Fatalf("unexpected push %s", render(v))
		}
		if v.elems[1].kind == '_' {
			clear(cache)
		}
		for _, k := range v.elems[1].elems {
			delete(cache, k.str)
		}
		return true
	}
	// get reads k into the cache; k == "" sends a PING, which brings in the pushes
	// queued before it
	get := func(k string) {
		args := []string{"PING"}
		if k != "" {
			args = []string{"GET", k}
		}
		if err := reader.send(args...); err != nil {
			t.Fatal(err)
		}
		for {
			v, err := reader.recv()
			if err != nil {
				t.Fatal(err)
			}
			if !apply(v) {
				if k != "" {
					cache[k] = v.str
				}
				return
			}
		}
	}
	// every key is cached before the writer starts, so each is invalidated at least once
	for i := 0; i < keys; i++ {
		get("k" + strconv.Itoa(i))
	}
	done := make(chan error, 1)
	go func() {
		for i := 0; i < rounds; i++ {
			if err := w.Set(ctx, "k"+strconv.Itoa(i%keys), i, 0).Err(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := 0; ; i++ {
		k := "k" + strconv.Itoa(i%keys)
		if _, ok := cache[k]; ok {
			hits++
			get("")
		} else {
			get(k)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			// Writes are over. The reader's next read passes the read barrier of its
			// member, so by its reply every invalidation is in.
			get("sentinel")
			for k, v := range cache {
				if k == "sentinel" {
					continue
				}
				want, err := w.Get(ctx, k).Result()
				if err != nil {
					t.Fatal(err)
				}
				if v != want {
					t.Fatalf("cached %s=%q, the key holds %q: an invalidation was lost or came before the value it undoes", k, v, want)
				}
			}
			if invalidations < keys {
				t.Fatalf("%d invalidations of %d keys, each cached and then written", invalidations, keys)
			}
			// With the writes over, what is cached stays cached: nothing is invalidated
			// that did not change.
			for i := 0; i < keys; i++ {
				if k := "k" + strconv.Itoa(i); cache[k] == "" {
					get(k)
				}
			}
			before := invalidations
			get("") // a PING: any push queued before it is read first
			if invalidations != before || len(cache) < keys {
				t.Fatalf("%d invalidations after the writes stopped", invalidations-before)
			}
			t.Logf("%d invalidations, %d cache hits during the writes", invalidations, hits)
			return
		default:
		}
	}
}

// waitPush sends PINGs on a RESP3 connection until a push other than those already seen
// arrives, and returns it; the test fails after 10 s.
func waitPush(t *testing.T, r *raw) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r.send("PING")
		for {
			v := r.readReply(t)
			if v == "+PONG" {
				break
			}
			if strings.HasPrefix(v, ">") {
				r.readReply(t) // the PING's own reply
				return v
			}
			t.Fatalf("unexpected reply %q", v)
		}
		runtime.Gosched()
	}
	t.Fatal("no push in 10 s")
	return ""
}

// What redis-server cannot show deterministically, and where nanokv differs: the table's
// limit (Redis evicts at random), the figures of INFO and CLIENT LIST, a key expiring,
// SWAPDB.
func TestTrackingTableAndState(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	a, b := rawConn(t, s), rawConn(t, s)
	a.readReplyAfter(t, "HELLO", "3")
	a.expect(t, "+OK", "CLIENT", "TRACKING", "ON")
	b.expect(t, "+OK", "CONFIG", "SET", "tracking-table-max-keys", "2")
	b.expect(t, "*2\r\n$23\r\ntracking-table-max-keys\r\n$1\r\n2", "CONFIG", "GET", "tracking-table-max-keys")
	b.expect(t, "-ERR CONFIG SET failed (possibly related to argument 'tracking-table-max-keys') - argument must be between 0 and 9223372036854775807 inclusive",
		"CONFIG", "SET", "tracking-table-max-keys", "-1")
	a.expect(t, "_", "GET", "t1")
	a.expect(t, "_", "GET", "t2")
	// a third key evicts one of the first two, which a is told of, after the reply
	a.expect(t, "_", "GET", "t3")
	if v := a.readReply(t); v != ">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nt1" && v != ">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nt2" {
		t.Fatalf("eviction from the tracking table: got %q, want an invalidation of t1 or t2", v)
	}
	info := b.readReplyAfter(t, "INFO", "clients")
	if !strings.Contains(info, "tracking_clients:1\r\n") {
		t.Fatalf("INFO clients: %q", info)
	}
	info = b.readReplyAfter(t, "INFO", "stats")
	for _, want := range []string{"tracking_total_keys:2\r\n", "tracking_total_items:2\r\n", "tracking_total_prefixes:0\r\n"} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO stats lacks %q: %q", want, info)
		}
	}
	if list := b.readReplyAfter(t, "CLIENT", "LIST"); !strings.Contains(list, " flags=t ") || !strings.Contains(list, " redir=0 ") {
		t.Fatalf("CLIENT LIST shows no tracking client: %q", list)
	}
	b.expect(t, "+OK", "CONFIG", "SET", "tracking-table-max-keys", "0")

	// a key that expires is told of when the leader's expiry deletes it
	b.expect(t, "+OK", "SET", "e", "v", "PX", "500") // long enough for the GET under load
	a.expect(t, "$1\r\nv", "GET", "e")
	if got, want := waitPush(t, a), ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\ne"; got != want {
		t.Fatalf("expiry: got %q, want %q", got, want)
	}

	// SWAPDB changes what every key reads: a flush (Redis 7.0 says nothing)
	a.expect(t, "_", "GET", "t4")
	b.expect(t, "+OK", "SWAPDB", "0", "1")
	if got, want := waitPush(t, a), ">2\r\n$10\r\ninvalidate\r\n_"; got != want {
		t.Fatalf("SWAPDB: got %q, want %q", got, want)
	}

	// In a pipeline, the invalidation of the connection's own write follows the write's
	// reply and comes before the next read's: byte for byte what redis-server 7.0.15
	// sends for the same pipeline.
	a.exchange(t, respCommand("GET", "p1")+respCommand("SET", "p1", "x")+respCommand("GET", "p2")+respCommand("DEL", "p1"),
		"_\r\n+OK\r\n>2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\np1\r\n_\r\n:1\r\n")

	// RESET turns tracking off
	a.readReplyAfter(t, "RESET")
	info = b.readReplyAfter(t, "INFO", "clients")
	if !strings.Contains(info, "tracking_clients:0\r\n") {
		t.Fatalf("INFO clients after RESET: %q", info)
	}
}

// readReplyAfter sends a command and returns its whole reply.
func (r *raw) readReplyAfter(t *testing.T, args ...string) string {
	t.Helper()
	r.send(args...)
	return r.readReply(t)
}
