package server

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestRedisBenchmarkDefaultSuite runs redis-benchmark's default suite (PING, SET, GET, INCR,
// LPUSH, RPUSH, LPOP, RPOP, SADD, HSET, SPOP, ZADD, ZPOPMIN, LRANGE_*, MSET) against a node
// and requires every test to complete without one error reply. It checks compatibility,
// not speed: figures come from the bench harness, never from a test.
func TestRedisBenchmarkDefaultSuite(t *testing.T) {
	redisBenchmarkSuite(t, startServer(t, Config{}))
}

// The same against a one-member cluster: its connections are on the asynchronous event
// loop (the inline PINGs and MSET included); redis-benchmark's CONFIG GET at the start
// moves its own connection to a goroutine.
func TestRedisBenchmarkDefaultSuiteOnAClusterMember(t *testing.T) {
	s := startServer(t, memberConfig(t, Config{}))
	awaitLead(t, s)
	redisBenchmarkSuite(t, s)
}

func redisBenchmarkSuite(t *testing.T, s *Server) {
	if testing.Short() {
		t.Skip("runs redis-benchmark")
	}
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		t.Skip("redis-benchmark not installed (apt-get install redis-tools); .ci/run installs it")
	}
	defer s.Close()
	host, port, _ := net.SplitHostPort(s.RedisAddr())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// redis-benchmark 7 exits non-zero on the first error reply ("Error from server: ...")
	out, err := exec.CommandContext(ctx, bin, "-h", host, "-p", port, "-q", "-n", "5000", "-c", "20", "-r", "1000").CombinedOutput()
	text := strings.ReplaceAll(string(out), "\r", "\n")
	if err != nil {
		t.Fatalf("redis-benchmark: %v\n%s", err, text)
	}
	if strings.Contains(text, "Error from server") {
		t.Fatalf("redis-benchmark saw errors:\n%s", text)
	}
	for _, test := range []string{"PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "LPUSH", "RPUSH", "LPOP", "RPOP", "SADD", "HSET", "SPOP", "ZADD", "ZPOPMIN", "LPUSH (needed to benchmark LRANGE)", "LRANGE_100", "LRANGE_300", "LRANGE_500", "LRANGE_600", "MSET (10 keys)"} {
		if !strings.Contains(text, test+": ") && !strings.Contains(text, test+" (first") {
			t.Errorf("no result line for %s", test)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", text)
	}
}
