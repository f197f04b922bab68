package mcproto_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/redis/go-redis/v9"
)

// gomemcache is the memcached client most Go programs use (and the one the Go team's own
// services grew up with): a real client's framing, CAS handling and multiget.
func newClient(t *testing.T, addr string) *memcache.Client {
	c := memcache.New(addr)
	c.Timeout = 5 * time.Second
	t.Cleanup(func() { c.Close() })
	return c
}

func TestGomemcacheClient(t *testing.T) {
	node := startNode(t, 0)
	c := newClient(t, node.MemcacheAddr())
	if err := c.Set(&memcache.Item{Key: "k", Value: []byte("v1"), Flags: 42}); err != nil {
		t.Fatal(err)
	}
	it, err := c.Get("k")
	if err != nil || string(it.Value) != "v1" || it.Flags != 42 {
		t.Fatalf("get: %+v %v", it, err)
	}
	if _, err := c.Get("missing"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("miss: %v", err)
	}
	if err := c.Add(&memcache.Item{Key: "k", Value: []byte("x")}); !errors.Is(err, memcache.ErrNotStored) {
		t.Fatalf("add over an existing key: %v", err)
	}
	if err := c.Replace(&memcache.Item{Key: "nope", Value: []byte("x")}); !errors.Is(err, memcache.ErrNotStored) {
		t.Fatalf("replace of a missing key: %v", err)
	}
	if err := c.Append(&memcache.Item{Key: "k", Value: []byte("+")}); err != nil {
		t.Fatal(err)
	}
	if err := c.Prepend(&memcache.Item{Key: "k", Value: []byte("-")}); err != nil {
		t.Fatal(err)
	}
	// CompareAndSwap: the unique from Get, then a stale one
	it, _ = c.Get("k")
	if string(it.Value) != "-v1+" {
		t.Fatalf("append/prepend: %q", it.Value)
	}
	it.Value = []byte("cas1")
	if err := c.CompareAndSwap(it); err != nil {
		t.Fatalf("cas: %v", err)
	}
	it.Value = []byte("cas2")
	if err := c.CompareAndSwap(it); !errors.Is(err, memcache.ErrCASConflict) {
		t.Fatalf("stale cas: %v", err)
	}
	if err := c.CompareAndSwap(&memcache.Item{Key: "nope", Value: []byte("x")}); !errors.Is(err, memcache.ErrCacheMiss) && !errors.Is(err, memcache.ErrNotStored) {
		t.Fatalf("cas of a missing key: %v", err)
	}
	// counters
	c.Set(&memcache.Item{Key: "n", Value: []byte("5")})
	if v, err := c.Increment("n", 10); err != nil || v != 15 {
		t.Fatalf("incr: %d %v", v, err)
	}
	if v, err := c.Decrement("n", 100); err != nil || v != 0 {
		t.Fatalf("decr floors at 0: %d %v", v, err)
	}
	if _, err := c.Increment("k", 1); err == nil || !strings.Contains(err.Error(), "non-numeric") {
		t.Fatalf("incr of text: %v", err)
	}
	if _, err := c.Increment("nope", 1); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("incr of a missing key: %v", err)
	}
	// multiget, touch, delete, flush
	keys := make([]string, 50)
	for i := range keys {
		keys[i] = fmt.Sprintf("m%d", i)
		if err := c.Set(&memcache.Item{Key: keys[i], Value: []byte(keys[i]), Expiration: 100}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.GetMulti(append(keys, "absent"))
	if err != nil || len(got) != len(keys) || string(got["m7"].Value) != "m7" {
		t.Fatalf("getmulti: %d items, %v", len(got), err)
	}
	if err := c.Touch("m1", 1000); err != nil {
		t.Fatal(err)
	}
	if err := c.Touch("absent", 10); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("touch of a missing key: %v", err)
	}
	if err := c.Delete("m1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("m1"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("second delete: %v", err)
	}
	if err := c.Set(&memcache.Item{Key: "big", Value: make([]byte, 2<<20)}); err == nil {
		t.Fatal("a 2 MiB item was accepted")
	}
	if err := c.Ping(); err != nil {
		t.Fatalf("ping after an error: %v", err)
	}
	if err := c.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get("m2"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("after flush_all: %v", err)
	}
}

// TestGomemcacheConcurrentCounters: many clients incrementing through the log lose no
// increment.
func TestGomemcacheConcurrentCounters(t *testing.T) {
	node := startNode(t, 0)
	c := newClient(t, node.MemcacheAddr())
	c.MaxIdleConns = 16
	c.Set(&memcache.Item{Key: "ctr", Value: []byte("0")})
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if _, err := c.Increment("ctr", 1); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if it, err := c.Get("ctr"); err != nil || string(it.Value) != "3200" {
		t.Fatalf("counter %v %v", it, err)
	}
}

// TestCrossProtocol: memcached and Redis clients share database 0.
func TestCrossProtocol(t *testing.T) {
	node := startNode(t, 0)
	mc := newClient(t, node.MemcacheAddr())
	rc := redis.NewClient(&redis.Options{Addr: node.RedisAddr(), DisableIdentity: true})
	t.Cleanup(func() { rc.Close() })
	ctx := context.Background()

	if err := mc.Set(&memcache.Item{Key: "from-mc", Value: []byte("hello"), Flags: 7}); err != nil {
		t.Fatal(err)
	}
	if v, err := rc.Get(ctx, "from-mc").Result(); err != nil || v != "hello" {
		t.Fatalf("redis GET of a memcached item: %q %v", v, err)
	}
	if err := rc.Set(ctx, "from-redis", "world", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if it, err := mc.Get("from-redis"); err != nil || string(it.Value) != "world" || it.Flags != 0 {
		t.Fatalf("memcached get of a Redis string: %+v %v", it, err)
	}
	// a Redis SET resets the memcached flags
	rc.Set(ctx, "from-mc", "redis wrote", 0)
	if it, err := mc.Get("from-mc"); err != nil || it.Flags != 0 || string(it.Value) != "redis wrote" {
		t.Fatalf("after Redis SET: %+v %v", it, err)
	}
	// TTLs are shared both ways
	mc.Set(&memcache.Item{Key: "ttl", Value: []byte("x"), Expiration: 100})
	if d, err := rc.TTL(ctx, "ttl").Result(); err != nil || d <= 90*time.Second || d > 100*time.Second {
		t.Fatalf("TTL of a memcached item: %v %v", d, err)
	}
	// counters: INCR on a memcached value, incr on a Redis value
	rc.Set(ctx, "ctr", "10", 0)
	if v, err := mc.Increment("ctr", 5); err != nil || v != 15 {
		t.Fatalf("incr of a Redis value: %d %v", v, err)
	}
	if v, err := rc.Incr(ctx, "ctr").Result(); err != nil || v != 16 {
		t.Fatalf("INCR of a memcached value: %d %v", v, err)
	}
	// other Redis types are invisible to memcached
	rc.RPush(ctx, "list", "a")
	if _, err := mc.Get("list"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("a Redis list seen by memcached get: %v", err)
	}
	// the memcached commands are not Redis commands
	if err := rc.Do(ctx, "mcstore", "set", "k", "v", "0", "0", "", "").Err(); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("RESP reached an internal command: %v", err)
	}
	if n, err := rc.Do(ctx, "COMMAND", "INFO", "mcstore", "mcincr").Slice(); err != nil || n[0] != nil || n[1] != nil {
		t.Fatalf("COMMAND INFO lists internal commands: %v %v", n, err)
	}
	// flush_all empties database 0 only
	rc.Do(ctx, "SELECT", "0")
	if err := mc.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if n, err := rc.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("DBSIZE after flush_all: %d %v", n, err)
	}
}

// loadTool runs a load generator against nanokv and returns its output; the test fails on
// a non-zero exit.
func loadTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// statValue finds "name: <n>" in a tool's report.
func statValue(t *testing.T, out, name string) int64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `:\s*(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %s in:\n%s", name, out)
	}
	v, _ := strconv.ParseInt(m[1], 10, 64)
	return v
}

// TestMemcaslap runs Debian's memaslap (memcaslap) set-only and 9:1 get:set, with data
// verification on, and requires no error of any kind.
func TestMemcaslap(t *testing.T) {
	bin, err := exec.LookPath("memcaslap")
	if err != nil {
		t.Skip("memcaslap not on PATH (apt-get install libmemcached-tools)")
	}
	// a single node's event loop, and a cluster member's asynchronous one
	for _, mode := range []frontendMode{frontendModes[0], frontendModes[2]} {
		node := startNodeMode(t, 0, mode)
		testMemcaslap(t, bin, mode.name, node.MemcacheAddr())
	}
}

func testMemcaslap(t *testing.T, bin, mode, addr string) {
	for _, c := range []struct {
		name     string
		set, get string
	}{{"set-only", "1", "0"}, {"get9-set1", "0.1", "0.9"}} {
		t.Run(mode+"/"+c.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "memaslap.cnf")
			// 16-byte keys, 32-byte values; cmd 0 is set, 1 is get
			conf := "key\n16 16 1\nvalue\n32 32 1\ncmd\n0 " + c.set + "\n1 " + c.get + "\n"
			if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
				t.Fatal(err)
			}
			out := loadTool(t, bin, "-s", addr, "-T", "1", "-c", "16", "-t", "3s", "-F", cfg, "-v", "0.2")
			if regexp.MustCompile(`(?i)error|fail[^e]|refused|timeout`).MatchString(strings.ReplaceAll(out, "verify_failed: 0", "")) {
				t.Fatalf("memcaslap reported a problem:\n%s", out)
			}
			if statValue(t, out, "cmd_set") == 0 {
				t.Fatalf("no sets:\n%s", out)
			}
			if c.get != "0" {
				if statValue(t, out, "cmd_get") == 0 || statValue(t, out, "verify_failed") != 0 {
					t.Fatalf("gets or verification:\n%s", out)
				}
			}
			t.Logf("%s", out[strings.LastIndex(out, "Run time"):])
		})
	}
}

// TestMemtierMemcacheText runs memtier_benchmark --protocol=memcache_text when installed.
func TestMemtierMemcacheText(t *testing.T) {
	bin, err := exec.LookPath("memtier_benchmark")
	if err != nil {
		t.Skip("memtier_benchmark not on PATH")
	}
	node := startNode(t, 0)
	host, port, _ := strings.Cut(node.MemcacheAddr(), ":")
	for _, ratio := range []string{"1:0", "1:9"} {
		out := loadTool(t, bin, "--protocol=memcache_text", "-s", host, "-p", port, "-t", "1", "-c", "16",
			"--test-time=3", "--ratio="+ratio, "--data-size=32", "--key-maximum=10000", "--hide-histogram")
		if strings.Contains(strings.ToLower(out), "error") {
			t.Fatalf("memtier reported errors:\n%s", out)
		}
	}
}

// Under an LFU policy a memcached get or mg is an access, which OBJECT FREQ counts (5
// for a new key, 6 after its first access); mg with u (no LRU bump) and me are not.
func TestMemcachedReadsAreAccesses(t *testing.T) {
	node := startNode(t, 0)
	rc := redis.NewClient(&redis.Options{Addr: node.RedisAddr(), DisableIdentity: true})
	t.Cleanup(func() { rc.Close() })
	ctx := context.Background()
	if err := rc.ConfigSet(ctx, "maxmemory-policy", "allkeys-lfu").Err(); err != nil {
		t.Fatal(err)
	}
	c := dial(t, node.MemcacheAddr())
	freq := func(want int64) {
		t.Helper()
		if got, err := rc.ObjectFreq(ctx, "k").Result(); err != nil || got != want {
			t.Fatalf("OBJECT FREQ k: %d %v, want %d", got, err, want)
		}
	}
	c.send("set k 0 0 1\r\nx\r\n")
	c.expect("STORED\r\n")
	freq(5)
	c.send("mg k u v\r\n")
	c.expect("VA 1\r\nx\r\n")
	c.send("me k\r\n")
	if l := c.line(); !strings.HasPrefix(l, "ME k ") {
		t.Fatalf("me k: %q", l)
	}
	freq(5)
	c.send("mg k v\r\n")
	c.expect("VA 1\r\nx\r\n")
	freq(6)
}
