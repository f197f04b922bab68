package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanokv/nanokv/consensus"
	"github.com/redis/go-redis/v9"
)

func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.RedisAddr == "" {
		cfg.RedisAddr = "127.0.0.1:0"
	}
	if cfg.DataDir == "" && !cfg.MemoryOnly {
		cfg.DataDir = t.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = log.New(io.Discard, "", 0)
	}
	s, err := Start(cfg)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return s
}

func client(t *testing.T, s *Server, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: s.RedisAddr(), Protocol: 2, DisableIdentity: true}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestGoRedisBasics(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	ctx := context.Background()
	c := client(t, s)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("get: %q %v", v, err)
	}
	if _, err := c.Get(ctx, "missing").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("get missing: %v", err)
	}
	if n, err := c.Incr(ctx, "n").Result(); err != nil || n != 1 {
		t.Fatalf("incr: %d %v", n, err)
	}
	if err := c.Incr(ctx, "k").Err(); err == nil || err.Error() != "ERR value is not an integer or out of range" {
		t.Fatalf("incr on a string: %v", err)
	}
	if err := c.Set(ctx, "ttl", "x", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if d, err := c.TTL(ctx, "ttl").Result(); err != nil || d < 59*time.Minute {
		t.Fatalf("ttl: %v %v", d, err)
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 3 {
		t.Fatalf("dbsize: %d %v", n, err)
	}
	// SELECT isolates databases per connection
	c1 := client(t, s, func(o *redis.Options) { o.DB = 1 })
	if n, err := c1.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("db1 dbsize: %d %v", n, err)
	}
}

func TestPipelineMixedReadsSeeEarlierWrites(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	ctx := context.Background()
	c := client(t, s)
	var gets []*redis.StringCmd
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < 100; i++ {
			p.Set(ctx, "p", i, 0)                // blind write
			p.Incr(ctx, "counter")               // state-dependent write
			gets = append(gets, p.Get(ctx, "p")) // must see the SET just before it
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range gets {
		if g.Val() != fmt.Sprint(i) {
			t.Fatalf("GET %d in pipeline saw %q", i, g.Val())
		}
	}
	if v, _ := c.Get(ctx, "counter").Int(); v != 100 {
		t.Fatalf("counter %d", v)
	}
}

func TestWatchAbortsExecWhenKeyChanges(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	ctx := context.Background()
	c := client(t, s)
	other := client(t, s)
	c.Set(ctx, "w", "1", 0)
	err := c.Watch(ctx, func(tx *redis.Tx) error {
		if err := other.Set(ctx, "w", "2", 0).Err(); err != nil {
			return err
		}
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "w", "3", 0)
			return nil
		})
		return err
	}, "w")
	if !errors.Is(err, redis.TxFailedErr) {
		t.Fatalf("EXEC after a watched key changed: %v, want TxFailedErr", err)
	}
	if v, _ := c.Get(ctx, "w").Result(); v != "2" {
		t.Fatalf("w = %q, want 2 (the transaction must not have run)", v)
	}
	// unchanged watch: EXEC runs every command atomically
	err = c.Watch(ctx, func(tx *redis.Tx) error {
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "w", "4", 0)
			p.Incr(ctx, "txn")
			return nil
		})
		return err
	}, "w")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Get(ctx, "w").Result(); v != "4" {
		t.Fatalf("w = %q", v)
	}
}

func TestWatchSeesOwnWritesOnly(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	r := rawConn(t, s)
	// the watching connection's own write to the key aborts EXEC, as in Redis
	r.expect(t, "+OK", "WATCH", "k")
	r.expect(t, "+OK", "SET", "k", "mine")
	r.expect(t, "+OK", "MULTI")
	r.expect(t, "+QUEUED", "INCR", "n")
	r.expect(t, "*-1", "EXEC")
	// a write elsewhere, even one that locks the whole keyspace, does not
	r.expect(t, "+OK", "WATCH", "k")
	r.expect(t, ":1", "ZADD", "src", "1", "a")
	r.expect(t, ":1", "ZUNIONSTORE", "dst", "1", "src")
	r.expect(t, "+OK", "MULTI")
	r.expect(t, "+QUEUED", "INCR", "n")
	r.expect(t, "*1\r\n:1", "EXEC")
}

func TestMultiExecReplies(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	r := rawConn(t, s)
	r.expect(t, "+OK", "MULTI")
	r.expect(t, "+QUEUED", "SET", "a", "1")
	r.expect(t, "+QUEUED", "INCR", "a")
	r.expect(t, "+QUEUED", "LPUSH", "a", "x")
	r.expect(t, "+QUEUED", "SELECT", "2")
	r.expect(t, "+QUEUED", "SET", "b", "in-db-2")
	r.expect(t, "*5\r\n+OK\r\n:2\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n+OK\r\n+OK", "EXEC")
	r.expect(t, "$7\r\nin-db-2", "GET", "b") // SELECT inside MULTI sticks after EXEC
	r.expect(t, "+OK", "MULTI")
	r.expect(t, "-ERR unknown command 'NOSUCH', with args beginning with: 'x' ", "NOSUCH", "x")
	r.expect(t, "-ERR wrong number of arguments for 'get' command", "GET")
	r.expect(t, "-EXECABORT Transaction discarded because of previous errors.", "EXEC")
	// a container's subcommand is looked up and checked when it is queued
	r.expect(t, "+OK", "MULTI")
	r.expect(t, "-ERR unknown subcommand 'FOO'. Try OBJECT HELP.", "OBJECT", "FOO", "k")
	r.expect(t, "-ERR wrong number of arguments for 'xgroup|destroy' command", "XGROUP", "DESTROY", "k")
	r.expect(t, "+QUEUED", "OBJECT", "ENCODING", "k")
	r.expect(t, "-EXECABORT Transaction discarded because of previous errors.", "EXEC")
	r.expect(t, "-ERR EXEC without MULTI", "EXEC")
	r.expect(t, "-ERR DISCARD without MULTI", "DISCARD")
	r.expect(t, "+OK", "MULTI")
	r.expect(t, "-ERR MULTI calls can not be nested", "MULTI")
	r.expect(t, "+OK", "DISCARD")

	// a SELECT queued in a transaction that does not run leaves the connection's db alone
	r.expect(t, "+OK", "SELECT", "0")
	r.expect(t, "+OK", "SET", "marker", "db0")
	r.expect(t, "+OK", "WATCH", "marker")
	other := rawConn(t, s)
	other.expect(t, "+OK", "SET", "marker", "changed")
	r.expect(t, "+OK", "MULTI")
	r.expect(t, "+QUEUED", "SELECT", "5")
	r.expect(t, "*-1", "EXEC")
	r.expect(t, "$7\r\nchanged", "GET", "marker")
}

// Connection and server commands inside MULTI, as redis-server 7.0 answers them:
// queued, checked for arity and subcommand when queued, run by EXEC after the store's
// commands with their replies in their places (also among commands the ACL refuses at
// EXEC), not run when a watched key changed; SAVE, SHUTDOWN refused; WAIT not waiting
// and MONITOR refused inside EXEC, as Redis's EXEC does not let its client block.
func TestConnCommandsInMultiAgainstRedis(t *testing.T) {
	raddr := startRedisServer(t)
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	steps := []trackStep{
		st("", "MULTI"),
		st("", "SET", "k", "1"),
		st("", "PING", "hi"),
		st("", "CLIENT", "SETNAME", "first"),
		st("", "CLIENT", "GETNAME"),
		st("", "CONFIG", "GET", "maxmemory-policy"),
		st("", "INCR", "k"),
		st("", "CLIENT", "SETNAME", "a b"), // its own error, at EXEC
		st("", "DBSIZE"),
		st("", "WAIT", "1", "5000"), // does not wait
		st("", "MONITOR"),
		st("", "PUBSUB", "NUMSUB", "ch"),
		st("", "EXEC"),
		st("", "CLIENT", "GETNAME"),
		// refused when queued: the transaction is discarded
		st("", "MULTI"),
		st("", "CLIENT", "SETNAME", "second"),
		st("", "CLIENT", "NOSUCH"),
		st("", "EXEC"),
		st("", "MULTI"),
		st("", "CLIENT", "SETNAME"),
		st("", "EXEC"),
		st("", "MULTI"),
		st("", "PUBSUB", "NUMPAT", "x"),
		st("", "EXEC"),
		st("", "MULTI"),
		st("", "SAVE"),
		st("", "EXEC"),
		st("", "MULTI"),
		st("", "SHUTDOWN"),
		st("", "EXEC"),
		st("", "CLIENT", "GETNAME"),
		// a watched key changed: nothing runs, the connection's own commands neither
		st("", "WATCH", "k"),
		st("other", "SET", "k", "changed"),
		st("", "MULTI"),
		st("", "CLIENT", "SETNAME", "third"),
		st("", "SELECT", "3"),
		st("", "EXEC"),
		st("", "CLIENT", "GETNAME"),
		st("", "DBSIZE"),
		// SELECT inside MULTI: the commands after it run in its database
		st("", "SET", "n", "1"),
		st("", "MULTI"),
		st("", "SELECT", "4"),
		st("", "MEMORY", "USAGE", "n"),
		st("", "DBSIZE"),
		st("", "EXEC"),
		// rules changed before EXEC: the denied command's place is an error, the others
		// run in theirs
		st("", "ACL", "SETUSER", "u", "on", ">p", "~*", "+@all"),
		st("u", "AUTH", "u", "p"),
		st("u", "MULTI"),
		st("u", "SET", "k", "2"),
		st("u", "CONFIG", "GET", "maxmemory-policy"),
		st("u", "CLIENT", "SETNAME", "fourth"),
		st("u", "GET", "k"),
		st("", "ACL", "SETUSER", "u", "-config"),
		st("u", "EXEC"),
		st("u", "CLIENT", "GETNAME"),
	}
	same := func(r string) string { return r }
	compareTranscripts(t, transcript(t, raddr, steps, same), transcript(t, s.RedisAddr(), steps, same))
}

// A go-redis transaction pipeline with connection and server commands in it, as an
// application sends one: every command's result comes back in its place.
func TestGoRedisTxPipelineWithServerCommands(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	ctx := context.Background()
	c := client(t, s)
	var set *redis.StatusCmd
	var tm *redis.TimeCmd
	var cfg *redis.MapStringStringCmd
	var name *redis.StringCmd
	var incr *redis.IntCmd
	var wait *redis.Cmd
	if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		set = p.Set(ctx, "k", "41", 0)
		tm = p.Time(ctx)
		cfg = p.ConfigGet(ctx, "maxmemory-policy")
		p.Do(ctx, "CLIENT", "SETNAME", "tx")
		name = p.ClientGetName(ctx)
		incr = p.Incr(ctx, "k")
		wait = p.Do(ctx, "WAIT", 0, 0)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if set.Val() != "OK" || time.Since(tm.Val()).Abs() > time.Minute || cfg.Val()["maxmemory-policy"] != "noeviction" ||
		name.Val() != "tx" || incr.Val() != 42 || wait.Val() != int64(0) {
		t.Fatalf("results: %v / %v / %v / %v / %v / %v", set, tm, cfg, name, incr, wait)
	}
}

func TestRandomReadsVary(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	ctx := context.Background()
	c := client(t, s)
	for i := 0; i < 50; i++ {
		c.SAdd(ctx, "s", i)
	}
	seen := map[string]bool{}
	for i := 0; i < 50; i++ {
		seen[c.SRandMember(ctx, "s").Val()] = true
	}
	if len(seen) < 5 {
		t.Fatalf("SRANDMEMBER returned only %d distinct members in 50 calls", len(seen))
	}
}

func TestAuth(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true, RequirePass: "secret"})
	defer s.Close()
	r := rawConn(t, s)
	r.expect(t, "-NOAUTH Authentication required.", "GET", "k")
	r.expect(t, "-WRONGPASS invalid username-password pair or user is disabled.", "AUTH", "nope")
	r.expect(t, "-ERR syntax error", "AUTH", "default", "secret", "more") // as redis-server 7.0.15
	r.expect(t, "+OK", "AUTH", "secret")
	r.expect(t, "$-1", "GET", "k")
	c := client(t, s, func(o *redis.Options) { o.Password = "secret" })
	if err := c.Set(context.Background(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	open := startServer(t, Config{MemoryOnly: true})
	defer open.Close()
	r = rawConn(t, open)
	r.expect(t, "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?", "AUTH", "x")
}

func TestResp3(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	ctx := context.Background()
	c := client(t, s, func(o *redis.Options) { o.Protocol = 3 })
	c.HSet(ctx, "h", "f", "v")
	m, err := c.HGetAll(ctx, "h").Result()
	if err != nil || m["f"] != "v" {
		t.Fatalf("HGETALL over RESP3: %v %v", m, err)
	}
	r := rawConn(t, s)
	r.expect(t, "-NOPROTO unsupported protocol version", "HELLO", "4")
	r.send("HELLO", "3")
	if got := r.readReply(t); !strings.HasPrefix(got, "%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n") {
		t.Fatalf("HELLO 3: %q", got)
	}
	r.expect(t, "_", "GET", "missing")
	r.expect(t, "%1\r\n$1\r\nf\r\n$1\r\nv", "HGETALL", "h")
}

func TestRestartKeepsAcknowledgedState(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := startServer(t, Config{DataDir: dir, Fsync: consensus.FsyncAlways})
	c := client(t, s)
	for i := 0; i < 200; i++ {
		c.Set(ctx, fmt.Sprintf("k%d", i), i, 0)
	}
	c.RPush(ctx, "list", "a", "b", "c")
	c.ZAdd(ctx, "z", redis.Z{Score: 1.5, Member: "m"})
	c.Expire(ctx, "k0", time.Hour)
	c.Close()
	s.Close()

	s = startServer(t, Config{DataDir: dir, Fsync: consensus.FsyncAlways})
	defer s.Close()
	c = client(t, s)
	for i := 0; i < 200; i++ {
		if v, err := c.Get(ctx, fmt.Sprintf("k%d", i)).Int(); err != nil || v != i {
			t.Fatalf("k%d after restart: %d %v", i, v, err)
		}
	}
	if l, _ := c.LRange(ctx, "list", 0, -1).Result(); strings.Join(l, ",") != "a,b,c" {
		t.Fatalf("list after restart: %v", l)
	}
	if sc, _ := c.ZScore(ctx, "z", "m").Result(); sc != 1.5 {
		t.Fatalf("zscore after restart: %v", sc)
	}
	if d, _ := c.TTL(ctx, "k0").Result(); d <= 0 {
		t.Fatalf("ttl lost on restart: %v", d)
	}
}

func TestActiveExpiryDeletesThroughTheLog(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true, ExpireEvery: 5 * time.Millisecond})
	defer s.Close()
	ctx := context.Background()
	c := client(t, s)
	c.Set(ctx, "short", "x", 20*time.Millisecond)
	c.Set(ctx, "long", "x", time.Hour)
	deadline := time.Now().Add(5 * time.Second)
	for s.Store().DBSize(0) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("expired key not deleted: dbsize %d", s.Store().DBSize(0))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if s.Store().ExpiredCount() != 1 {
		t.Fatalf("expired_keys %d", s.Store().ExpiredCount())
	}
}

func TestProtocolErrorClosesOnlyThatConnection(t *testing.T) {
	member := startServer(t, memberConfig(t, Config{MemoryOnly: true}))
	defer member.Close()
	awaitLead(t, member)
	single := startServer(t, Config{MemoryOnly: true})
	defer single.Close()
	// a single node's goroutine per connection, and a member's event loop, where the
	// write before the bad frame is still in flight when the frame is parsed
	for name, s := range map[string]*Server{"single node": single, "cluster member": member} {
		good := client(t, s)
		ctx := context.Background()
		good.Set(ctx, "k", "v", 0)
		for i, bad := range []string{
			"*1\r\n$999999999999\r\n",
			"*2\r\n$3\r\nGET\r\nXX",
			"set \"open\r\n",
			"*abc\r\n",
		} {
			nc, err := net.Dial("tcp", s.RedisAddr())
			if err != nil {
				t.Fatal(err)
			}
			// a valid write first: its reply must arrive before the error, and it lands
			fmt.Fprintf(nc, "SET w%d x\r\n%s", i, bad)
			nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			all, _ := io.ReadAll(nc) // the server closes the connection
			nc.Close()
			if !strings.HasPrefix(string(all), "+OK\r\n-ERR Protocol error: ") {
				t.Fatalf("%s, %q: got %q", name, bad, all)
			}
			if v, err := good.Get(ctx, fmt.Sprintf("w%d", i)).Result(); err != nil || v != "x" {
				t.Fatalf("%s, %q: the write before it: %q %v", name, bad, v, err)
			}
		}
		if v, err := good.Get(ctx, "k").Result(); err != nil || v != "v" {
			t.Fatalf("%s: other connection after protocol errors: %q %v", name, v, err)
		}
	}
}

func TestManyClientsConcurrently(t *testing.T) {
	s := startServer(t, Config{Fsync: consensus.FsyncAlways})
	defer s.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: s.RedisAddr(), DisableIdentity: true})
			defer c.Close()
			for i := 0; i < 100; i++ {
				if err := c.Incr(ctx, "shared").Err(); err != nil {
					t.Error(err)
					return
				}
				if err := c.Set(ctx, fmt.Sprintf("w%d", w), i, 0).Err(); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	c := client(t, s)
	if v, _ := c.Get(ctx, "shared").Int(); v != 1600 {
		t.Fatalf("shared counter %d, want 1600", v)
	}
}

// raw is a plain TCP client for checking exact reply bytes.
type raw struct {
	nc net.Conn
	r  *bufio.Reader
}

func rawConn(t *testing.T, s *Server) *raw {
	t.Helper()
	return rawDial(t, s.RedisAddr())
}

// rawDial connects a raw client to addr (any of the node's protocols).
func rawDial(t *testing.T, addr string) *raw {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return &raw{nc: nc, r: bufio.NewReader(nc)}
}

func (r *raw) send(args ...string) {
	r.nc.Write([]byte(respCommand(args...)))
}

// respCommand encodes one command as a RESP array of bulk strings.
func respCommand(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// exchange writes req in one write and reads as many lines as want has, which it
// compares with want.
func (r *raw) exchange(t *testing.T, req, want string) {
	t.Helper()
	if _, err := r.nc.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for range strings.Count(want, "\n") {
		line, err := r.r.ReadString('\n')
		got.WriteString(line)
		if err != nil {
			t.Fatalf("after %q: %v", got.String(), err)
		}
	}
	if got.String() != want {
		t.Fatalf("%q:\n got %q\nwant %q", req, got.String(), want)
	}
}

// readReply reads one whole reply and returns its bytes without the final CRLF.
func (r *raw) readReply(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	var read func()
	read = func() {
		line, err := r.r.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v (so far %q)", err, b.String())
		}
		b.WriteString(line)
		n := 0
		switch line[0] {
		case '$', '=':
			fmt.Sscanf(line[1:], "%d", &n)
			if n >= 0 {
				buf := make([]byte, n+2)
				io.ReadFull(r.r, buf)
				b.Write(buf)
			}
		case '*', '~', '>':
			fmt.Sscanf(line[1:], "%d", &n)
			for i := 0; i < n; i++ {
				read()
			}
		case '%':
			fmt.Sscanf(line[1:], "%d", &n)
			for i := 0; i < 2*n; i++ {
				read()
			}
		}
	}
	read()
	return strings.TrimSuffix(b.String(), "\r\n")
}

func (r *raw) expect(t *testing.T, want string, args ...string) {
	t.Helper()
	r.send(args...)
	if got := r.readReply(t); got != want {
		t.Fatalf("%q:\n got %q\nwant %q", args, got, want)
	}
}

// A read pipelined behind a write never sees a clock earlier than the write's: PTTL right
// after SET ... PX n is at most n.
func TestPipelinedTTLNeverExceedsWhatWasSet(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	c := client(t, s)
	ctx := context.Background()
	for i := range 2000 {
		pipe := c.Pipeline()
		pipe.Set(ctx, "k", i, 100*time.Second)
		pttl := pipe.PTTL(ctx, "k")
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if d := pttl.Val(); d > 100*time.Second || d <= 0 {
			t.Fatalf("PTTL %v right after SET PX 100000", d)
		}
	}
}

// go-redis's Script runs EVALSHA and falls back to EVAL on NOSCRIPT, as most clients'
// script helpers do; a lock released by a compare-and-delete script, the usual use.
func TestGoRedisScripts(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	ctx := context.Background()
	c := client(t, s)
	unlock := redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)
	if ok, err := c.SetNX(ctx, "lock", "me", time.Minute).Result(); err != nil || !ok {
		t.Fatalf("setnx: %v %v", ok, err)
	}
	if n, err := unlock.Run(ctx, c, []string{"lock"}, "someone else").Int(); err != nil || n != 0 {
		t.Fatalf("unlock by another owner: %d %v", n, err)
	}
	if n, err := unlock.Run(ctx, c, []string{"lock"}, "me").Int(); err != nil || n != 1 {
		t.Fatalf("unlock: %d %v", n, err)
	}
	if ok, err := unlock.Exists(ctx, c).Result(); err != nil || !ok[0] {
		t.Fatalf("the first Run's EVAL did not cache the script: %v %v", ok, err)
	}
	if err := c.Eval(ctx, "return redis.call('incr', KEYS[1])", []string{"lock"}).Err(); err != nil {
		t.Fatal(err)
	}
	err := c.Eval(ctx, "return redis.call('lpush', KEYS[1], 'x')", []string{"lock"}).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE Operation against a key holding the wrong kind of value script: ") {
		t.Fatalf("a failing call: %v", err)
	}
}

// TestInfoCommandAndErrorStats: INFO commandstats and errorstats in Redis 7.0's form,
// errorstats among the default sections, both zeroed by CONFIG RESETSTAT.
func TestInfoCommandAndErrorStats(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	ctx := context.Background()
	c := client(t, s)
	c.Set(ctx, "a", "1", 0)
	c.LPush(ctx, "a", "x")     // WRONGTYPE: a failed call
	c.Do(ctx, "GET")           // arity: a rejected call
	c.Do(ctx, "CLIENT", "ID")  // a connection command's subcommand
	c.Do(ctx, "OBJECT", "FOO") // an unknown subcommand: counted nowhere
	c.Eval(ctx, "return {err='MINE x'}", nil)
	stats := c.Info(ctx, "commandstats").Val()
	for _, want := range []string{
		"# Commandstats\r\n",
		"cmdstat_set:calls=1,usec=",
		"cmdstat_lpush:calls=1,usec=",
		",rejected_calls=0,failed_calls=1\r\n",
		"cmdstat_get:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0\r\n",
		"cmdstat_client|id:calls=1,",
		"cmdstat_eval:calls=1,",
	} {
		if !strings.Contains(stats, want) {
			t.Errorf("INFO commandstats lacks %q:\n%s", want, stats)
		}
	}
	if strings.Contains(stats, "cmdstat_object") {
		t.Errorf("an unknown subcommand was counted:\n%s", stats)
	}
	info := c.Info(ctx).Val()
	for _, want := range []string{"# Errorstats\r\nerrorstat_ERR:count=2\r\nerrorstat_MINE:count=1\r\nerrorstat_WRONGTYPE:count=1\r\n", "total_error_replies:4\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q:\n%s", want, info)
		}
	}
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if stats := c.Info(ctx, "commandstats", "errorstats").Val(); strings.Contains(stats, "cmdstat_set") || strings.Contains(stats, "errorstat_") {
		t.Errorf("after CONFIG RESETSTAT:\n%s", stats)
	}
}

// TestCompatCommands: what clients and tools ask on connecting, answered as redis-server
// 7.0.15 with its defaults answers (replies taken from it), for nanokv's one user.
func TestCompatCommands(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true, RequirePass: "secret"})
	defer s.Close()
	r := rawConn(t, s)
	r.expect(t, "+OK", "AUTH", "secret")
	for _, c := range []struct {
		want string
		args []string
	}{
		{"*0", []string{"MODULE", "LIST"}},
		{"-ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.", []string{"MODULE", "LOAD", "/x.so"}},
		{"-ERR This instance has cluster support disabled", []string{"CLUSTER", "INFO"}},
		{"-ERR This instance has cluster support disabled", []string{"READONLY"}},
		{"-ERR wrong number of arguments for 'cluster' command", []string{"CLUSTER"}},
		{"-ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.", []string{"DEBUG", "OBJECT", "a"}},
		{"$7\r\ndefault", []string{"ACL", "WHOAMI"}},
		{"*1\r\n$93\r\nuser default on #2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b ~* &* +@all", []string{"ACL", "LIST"}},
		{"*12\r\n$5\r\nflags\r\n*1\r\n$2\r\non\r\n$9\r\npasswords\r\n*1\r\n$64\r\n2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b\r\n$8\r\ncommands\r\n$5\r\n+@all\r\n$4\r\nkeys\r\n$2\r\n~*\r\n$8\r\nchannels\r\n$2\r\n&*\r\n$9\r\nselectors\r\n*0", []string{"ACL", "GETUSER", "default"}},
		{"$-1", []string{"ACL", "GETUSER", "nobody"}},
		{"-ERR The 'default' user cannot be removed", []string{"ACL", "DELUSER", "x", "default"}},
		{"-ERR Unknown category 'nope'", []string{"ACL", "CAT", "nope"}},
		{"-ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096", []string{"ACL", "GENPASS", "0"}},
		{"+OK", []string{"ACL", "DRYRUN", "default", "get", "k"}},
		{"-ERR Command 'nosuch' not found", []string{"ACL", "DRYRUN", "default", "nosuch"}},
		{"-ERR unknown subcommand 'FOO'. Try ACL HELP.", []string{"ACL", "FOO"}},
	} {
		r.expect(t, c.want, c.args...)
	}
	ctx := context.Background()
	c := client(t, s, func(o *redis.Options) { o.Password = "secret" })
	if cats := c.Do(ctx, "ACL", "CAT").Val().([]any); len(cats) != 21 || cats[4] != "sortedset" {
		t.Errorf("ACL CAT: %v", cats)
	}
	if cmds := c.Do(ctx, "ACL", "CAT", "string").Val().([]any); !slices.Contains(cmds, any("get")) || slices.Contains(cmds, any("lpush")) {
		t.Errorf("ACL CAT string: %v", cmds)
	}
	if p := c.Do(ctx, "ACL", "GENPASS", "10").Val().(string); len(p) != 3 {
		t.Errorf("ACL GENPASS 10: %q", p)
	}
}

// TestLatencyCommand: LATENCY over the latency monitor, and latency-monitor-threshold as
// redis-server 7.0.15 answers them (a command slower than the threshold is in
// kvstore's TestLatencyMonitor).
func TestLatencyCommand(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	r := rawConn(t, s)
	for _, c := range []struct {
		want string
		args []string
	}{
		{"*0", []string{"LATENCY", "LATEST"}},
		{"*0", []string{"LATENCY", "HISTORY", "command"}},
		{":0", []string{"LATENCY", "RESET"}},
		{"-ERR No samples available for event 'command'", []string{"LATENCY", "GRAPH", "command"}},
		{"*2\r\n$25\r\nlatency-monitor-threshold\r\n$1\r\n0", []string{"CONFIG", "GET", "latency-monitor-threshold"}},
		{"-ERR CONFIG SET failed (possibly related to argument 'latency-monitor-threshold') - argument must be between 0 and 9223372036854775807 inclusive", []string{"CONFIG", "SET", "latency-monitor-threshold", "-1"}},
		{"-ERR CONFIG SET failed (possibly related to argument 'latency-monitor-threshold') - argument couldn't be parsed into an integer", []string{"CONFIG", "SET", "latency-monitor-threshold", "x"}},
		{"+OK", []string{"CONFIG", "SET", "latency-monitor-threshold", "100"}},
		{"-ERR unknown subcommand 'FOO'. Try LATENCY HELP.", []string{"LATENCY", "FOO"}},
	} {
		r.expect(t, c.want, c.args...)
	}
	ctx := context.Background()
	c := client(t, s)
	if d := c.Do(ctx, "LATENCY", "DOCTOR").Val(); !strings.HasPrefix(d.(string), "Dave, no latency spike was observed") {
		t.Errorf("LATENCY DOCTOR: %q", d)
	}
}

// infoFields parses INFO's reply: the sections in order, and each section's field names
// in order.
func infoFields(info string) (sections []string, fields map[string][]string) {
	fields = map[string][]string{}
	var cur string
	for _, line := range strings.Split(info, "\r\n") {
		switch {
		case strings.HasPrefix(line, "# "):
			cur = line[2:]
			sections = append(sections, cur)
		case line != "":
			name, _, _ := strings.Cut(line, ":")
			fields[cur] = append(fields[cur], name)
		}
	}
	return sections, fields
}

// INFO's sections and fields are redis-server 7.0's, in its order: every field Redis
// gives that nanokv does not is on the list below (nanokv has the thing and does not
// measure it), and nanokv's own come after Redis's. The values that move do:
// instantaneous_ops_per_sec under load, used_memory_peak; the identities do not.
func TestInfoFieldsAsRedis(t *testing.T) {
	raddr := startRedisServer(t)
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: raddr, Protocol: 2, DisableIdentity: true})
	defer rc.Close()
	nc := client(t, s)
	servers := startCluster(t, 3)
	_, lead := leaderOf(t, servers, 0)
	member := redis.NewClient(&redis.Options{Addr: lead.RedisAddr(), Protocol: 2, DisableIdentity: true})
	defer member.Close()
	omitted := map[string]bool{
		"atomicvar_api": true, "client_recent_max_input_buffer": true, "client_recent_max_output_buffer": true,
		"clients_in_timeout_table": true, "used_memory_lua": true,
		"used_memory_vm_eval": true, "used_memory_lua_human": true, "used_memory_scripts_eval": true,
		"used_memory_vm_functions": true, "used_memory_vm_total": true, "used_memory_vm_total_human": true,
		"used_memory_functions": true, "used_memory_scripts": true, "used_memory_scripts_human": true,
		"rdb_last_load_keys_expired": true, "rdb_last_load_keys_loaded": true,
		"expired_stale_perc": true, "expired_time_cap_reached_count": true, "expire_cycle_cpu_milliseconds": true,
		"dump_payload_sanitizations": true,
		"reply_buffer_shrinks":       true, "reply_buffer_expands": true, "used_cpu_sys_main_thread": true,
		"used_cpu_user_main_thread": true,
	}
	for _, n := range []struct {
		name string
		c    *redis.Client
	}{{"single node", nc}, {"cluster member", member}} {
		for _, arg := range [][]string{nil, {"all"}, {"everything"}, {"default"}} {
			rsec, rf := infoFields(rc.Info(ctx, arg...).Val())
			nsec, nf := infoFields(n.c.Info(ctx, arg...).Val())
			if want := slices.DeleteFunc(slices.Clone(nsec), func(s string) bool { return s == "Raft" }); !slices.Equal(rsec, want) {
				t.Fatalf("%s: INFO %v sections %v, redis-server's %v", n.name, arg, nsec, rsec)
			}
			for _, sec := range rsec {
				if sec == "Commandstats" || sec == "Errorstats" || sec == "Latencystats" || sec == "Keyspace" {
					continue // what was run
				}
				want := slices.DeleteFunc(slices.Clone(rf[sec]), func(f string) bool { return omitted[f] })
				got := nf[sec]
				if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
					t.Errorf("%s: INFO %v %s fields:\n%v\nredis-server's (without the omitted ones):\n%v", n.name, arg, sec, got, want)
				}
			}
		}
	}

	info := func() map[string]string {
		m := map[string]string{}
		for _, line := range strings.Split(nc.Info(ctx, "everything").Val(), "\r\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				m[k] = v
			}
		}
		return m
	}
	first := info()
	hex40 := regexp.MustCompile(`^[0-9a-f]{40}$`)
	if !hex40.MatchString(first["run_id"]) || !hex40.MatchString(first["master_replid"]) || first["run_id"] == first["master_replid"] {
		t.Fatalf("run_id %q, master_replid %q", first["run_id"], first["master_replid"])
	}
	// a load of PINGs: the instantaneous rate is the last 1.6 s's
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				nc.Ping(ctx)
			}
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := info()
		ops, _ := strconv.Atoi(m["instantaneous_ops_per_sec"])
		in, _ := strconv.ParseFloat(m["instantaneous_input_kbps"], 64)
		if ops > 0 && in > 0 {
			if m["run_id"] != first["run_id"] || m["master_replid"] != first["master_replid"] {
				t.Fatalf("the identities moved: %q %q", m["run_id"], m["master_replid"])
			}
			used, _ := strconv.ParseUint(m["used_memory"], 10, 64)
			if peak, _ := strconv.ParseUint(m["used_memory_peak"], 10, 64); peak < used {
				t.Fatalf("used_memory_peak %d under used_memory %d", peak, used)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("instantaneous_ops_per_sec %q, instantaneous_input_kbps %q under load", m["instantaneous_ops_per_sec"], m["instantaneous_input_kbps"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	<-done
}

// TestReadsWritesProcessedAsRedis: INFO's total_reads_processed and
// total_writes_processed count network reads and writes as Redis counts them, one each
// for a request and its reply, and CONFIG RESETSTAT zeroes them.
func TestReadsWritesProcessedAsRedis(t *testing.T) {
	real := startRedisServer(t)
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	counts := func(c *rconn) [2]int64 {
		t.Helper()
		v, err := c.do("INFO", "stats")
		if err != nil {
			t.Fatal(err)
		}
		var out [2]int64
		for _, line := range strings.Split(v.str, "\r\n") {
			k, val, _ := strings.Cut(line, ":")
			n, _ := strconv.ParseInt(val, 10, 64)
			switch k {
			case "total_reads_processed":
				out[0] = n
			case "total_writes_processed":
				out[1] = n
			}
		}
		return out
	}
	var deltas [2][2][2]int64
	for i, addr := range []string{s.RedisAddr(), real} {
		c, err := dialRESP(addr)
		if err != nil {
			t.Fatal(err)
		}
		before := counts(c)
		for range 5 {
			if _, err := c.do("PING"); err != nil {
				t.Fatal(err)
			}
		}
		after := counts(c)
		deltas[i][0] = [2]int64{after[0] - before[0], after[1] - before[1]}
		if _, err := c.do("CONFIG", "RESETSTAT"); err != nil {
			t.Fatal(err)
		}
		deltas[i][1] = counts(c) // the RESETSTAT's write and the INFO's read
		c.close()
	}
	if deltas[0] != deltas[1] {
		t.Errorf("reads and writes after five PINGs, then after CONFIG RESETSTAT: %v, Redis %v", deltas[0], deltas[1])
	}
}
