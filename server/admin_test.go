package server

import (
	"context"
	"strings"
	"testing"
	"time"
)

// MEMORY STATS has Redis 7.0's fields in its order, a db.N entry for a database with
// keys; DOCTOR and MALLOC-STATS answer as a small Redis without jemalloc does.
func TestMemoryStatsDoctor(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	c := client(t, s)
	ctx := context.Background()
	c.Set(ctx, "k", "v", 0)
	v, err := c.Do(ctx, "MEMORY", "STATS").Slice()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := 0; i < len(v); i += 2 {
		names = append(names, v[i].(string))
	}
	want := "peak.allocated total.allocated startup.allocated replication.backlog clients.slaves clients.normal cluster.links aof.buffer lua.caches functions.caches db.0 overhead.total keys.count keys.bytes-per-key dataset.bytes dataset.percentage peak.percentage allocator.allocated allocator.active allocator.resident allocator-fragmentation.ratio allocator-fragmentation.bytes allocator-rss.ratio allocator-rss.bytes rss-overhead.ratio rss-overhead.bytes fragmentation fragmentation.bytes"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("MEMORY STATS fields:\n got %s\nwant %s", got, want)
	}
	if v[25] != int64(1) { // keys.count
		t.Fatalf("keys.count %v", v[25])
	}
	// which of Redis's reports depends on the test process's heap
	if d, _ := c.Do(ctx, "MEMORY", "DOCTOR").Text(); !strings.HasPrefix(d, "Hi Sam, ") && !strings.HasPrefix(d, "Sam, I detected a few issues") {
		t.Fatalf("MEMORY DOCTOR: %q", d)
	}
	if m, _ := c.Do(ctx, "MEMORY", "MALLOC-STATS").Text(); m != "Stats not supported for the current allocator" {
		t.Fatalf("MEMORY MALLOC-STATS: %q", m)
	}
	if err := c.Do(ctx, "MEMORY", "STATS", "x").Err(); err == nil || err.Error() != "ERR wrong number of arguments for 'memory|stats' command" {
		t.Fatalf("MEMORY STATS x: %v", err)
	}
}

// FAILOVER hands a leader's leadership to a follower (the one named, or the most caught
// up), as Redis hands its primary role to a replica; the errors are Redis's.
func TestFailoverAndReplicaOf(t *testing.T) {
	ctx := context.Background()
	single := startServer(t, Config{MemoryOnly: true})
	defer single.Close()
	sc := client(t, single)
	for _, x := range []struct {
		args []any
		want string
	}{
		{[]any{"FAILOVER"}, "ERR FAILOVER requires connected replicas."},
		{[]any{"FAILOVER", "ABORT"}, "ERR No failover in progress."},
		{[]any{"FAILOVER", "TIMEOUT", "0"}, "ERR FAILOVER timeout must be greater than 0"},
		{[]any{"FAILOVER", "BOGUS"}, "ERR syntax error"},
		{[]any{"REPLICAOF", "127.0.0.1", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"REPLICAOF", "127.0.0.1", "6379"}, "ERR REPLICAOF is not supported: nanokv members replicate through Raft (RAFT.NODE ADD, --join)"},
	} {
		if err := sc.Do(ctx, x.args...).Err(); err == nil || err.Error() != x.want {
			t.Fatalf("%v: %v, want %q", x.args, err, x.want)
		}
	}
	if got, err := sc.Do(ctx, "REPLICAOF", "NO", "ONE").Text(); err != nil || got != "OK" {
		t.Fatalf("REPLICAOF NO ONE: %q %v", got, err)
	}

	servers := startCluster(t, 3)
	id, lead := leaderOf(t, servers, 0)
	var follower *Server
	var fid uint64
	for i, s := range servers {
		if i != id {
			fid, follower = i, s
		}
	}
	if err := client(t, follower).Do(ctx, "FAILOVER").Err(); err == nil || err.Error() != "ERR FAILOVER is not valid when server is a replica." {
		t.Fatalf("FAILOVER on a follower: %v", err)
	}
	lc := client(t, lead)
	if err := lc.Do(ctx, "FAILOVER", "TO", "127.0.0.1", "1").Err(); err == nil || err.Error() != "ERR FAILOVER target HOST and PORT is not a replica." {
		t.Fatalf("FAILOVER TO a stranger: %v", err)
	}
	if err := lc.Do(ctx, "FAILOVER", "FORCE").Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR FAILOVER with force option requires") {
		t.Fatalf("FAILOVER FORCE: %v", err)
	}
	host, port, _ := strings.Cut(follower.RedisAddr(), ":")
	if got, err := lc.Do(ctx, "FAILOVER", "TO", host, port, "TIMEOUT", "5000").Text(); err != nil || got != "OK" {
		t.Fatalf("FAILOVER TO the follower: %q %v", got, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !follower.cl().isLeader() {
		if time.Now().After(deadline) {
			t.Fatalf("member %d never took over after FAILOVER", fid)
		}
		time.Sleep(time.Millisecond)
	}
}

// LATENCY HISTOGRAM and INFO latencystats report the commands' timed calls, in Redis
// 7.0's shapes; latency-tracking-info-percentiles picks INFO's percentiles.
func TestLatencyHistogramAndStats(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	r := rawConn(t, s)
	r.expect(t, "+OK", "SET", "k", "v")
	r.expect(t, "$1\r\nv", "GET", "k")
	h := r.readReplyAfter(t, "LATENCY", "HISTOGRAM", "get", "nosuch")
	if !strings.HasPrefix(h, "*2\r\n$3\r\nget\r\n*4\r\n$5\r\ncalls\r\n:1\r\n$14\r\nhistogram_usec\r\n*2\r\n:") || !strings.HasSuffix(h, "\r\n:1") {
		t.Fatalf("LATENCY HISTOGRAM get: %q", h)
	}
	if all := r.readReplyAfter(t, "LATENCY", "HISTOGRAM"); !strings.Contains(all, "$3\r\nset\r\n") || !strings.Contains(all, "$3\r\nget\r\n") {
		t.Fatalf("LATENCY HISTOGRAM: %q", all)
	}
	info := r.readReplyAfter(t, "INFO", "latencystats")
	for _, line := range strings.Split(info, "\r\n") {
		if strings.HasPrefix(line, "latency_percentiles_usec_get:") {
			f := strings.Split(strings.TrimPrefix(line, "latency_percentiles_usec_get:"), ",")
			if len(f) != 3 || !strings.HasPrefix(f[0], "p50=") || !strings.HasPrefix(f[1], "p99=") || !strings.HasPrefix(f[2], "p99.9=") {
				t.Fatalf("latencystats line %q", line)
			}
		}
	}
	if !strings.Contains(info, "latency_percentiles_usec_get:p50=") {
		t.Fatalf("INFO latencystats: %q", info)
	}
	r.expect(t, "+OK", "CONFIG", "SET", "latency-tracking-info-percentiles", "90")
	if info := r.readReplyAfter(t, "INFO", "latencystats"); !strings.Contains(info, "latency_percentiles_usec_get:p90=") {
		t.Fatalf("INFO latencystats with p90: %q", info)
	}
	r.expect(t, "-ERR CONFIG SET failed (possibly related to argument 'latency-tracking-info-percentiles') - latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
		"CONFIG", "SET", "latency-tracking-info-percentiles", "101")
	r.expect(t, "+OK", "CONFIG", "RESETSTAT")
	if h := r.readReplyAfter(t, "LATENCY", "HISTOGRAM", "get"); h != "*0" {
		t.Fatalf("LATENCY HISTOGRAM after RESETSTAT: %q", h)
	}
}

// INFO keyspace_hits and keyspace_misses count the read path's lookups, as Redis counts
// its read lookups (the figures are what redis-server 7.0.15 shows for the same
// commands); CONFIG RESETSTAT zeroes them.
func TestKeyspaceHitsAndMisses(t *testing.T) {
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	r := rawConn(t, s)
	r.expect(t, "+OK", "SET", "a", "1")
	r.expect(t, "$1\r\n1", "GET", "a")
	r.expect(t, "$-1", "GET", "b")
	r.expect(t, "*3\r\n$1\r\n1\r\n$-1\r\n$-1", "MGET", "a", "b", "c")
	stats := func() string {
		info := r.readReplyAfter(t, "INFO", "stats")
		var out []string
		for _, l := range strings.Split(info, "\r\n") {
			if strings.HasPrefix(l, "keyspace_") {
				out = append(out, l)
			}
		}
		return strings.Join(out, " ")
	}
	if got := stats(); got != "keyspace_hits:2 keyspace_misses:3" {
		t.Fatalf("INFO stats: %q", got)
	}
	r.expect(t, "+OK", "CONFIG", "RESETSTAT")
	if got := stats(); got != "keyspace_hits:0 keyspace_misses:0" {
		t.Fatalf("INFO stats after RESETSTAT: %q", got)
	}
}
