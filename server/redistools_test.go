package server

import (
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nanokv/nanokv/internal/testtool"
)

// redis-cli's key tools give the same results against a node as against redis-server
// 7.0 fed the same: --pipe (mass insertion, which ends with an ECHO of a random mark),
// --bigkeys (a SCAN, then TYPE and each type's size command per key) and --scan.
func TestRedisCliKeyTools(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	testtool.Require(t, err == nil, "redis-cli (Debian's redis-tools)")
	real := startRedisServer(t)
	single := startServer(t, Config{})
	defer single.Close()
	_, lead := leaderOf(t, startCluster(t, 3), 0)
	nodes := []string{single.RedisAddr(), lead.RedisAddr()} // a node, a cluster's leader
	// run runs redis-cli against addr; it must exit with status exit
	run := func(addr, stdin string, exit int, args ...string) string {
		t.Helper()
		host, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(cli, append([]string{"-h", host, "-p", port}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != exit {
			t.Fatalf("redis-cli %v against %s: %v, want exit status %d\n%s", args, addr, err, exit, out)
		}
		return string(out)
	}

	// Every type's biggest key is the only one of its size, so that --bigkeys names
	// it whatever order SCAN visits the keys in; one command fails (WRONGTYPE).
	var mass strings.Builder
	for i := range 1500 {
		mass.WriteString(respCommand("SET", fmt.Sprintf("str:%d", i), strings.Repeat("v", 1+i%40)))
		list := i % 30 // the even ones, and list:0 ten times as long
		if i%2 == 1 {
			list = 0
		}
		mass.WriteString(respCommand("RPUSH", fmt.Sprintf("list:%d", list), fmt.Sprint(i)))
		mass.WriteString(respCommand("HSET", fmt.Sprintf("hash:%d", i%7), fmt.Sprintf("f%d", i%(100+i%7)), "v"))
		mass.WriteString(respCommand("SADD", fmt.Sprintf("set:%d", i%11), fmt.Sprint(i%(50+i%11))))
		mass.WriteString(respCommand("ZADD", fmt.Sprintf("zset:%d", i%3), fmt.Sprint(i), fmt.Sprintf("m%d", i%(300+i%3))))
	}
	mass.WriteString(respCommand("SET", "str:biggest", strings.Repeat("x", 100)))
	mass.WriteString(respCommand("XADD", "stream", "1-1", "f", "v"))
	mass.WriteString(respCommand("INCR", "list:0"))
	last := regexp.MustCompile(`errors: (\d+), replies: (\d+)`)
	for _, addr := range append([]string{real}, nodes...) {
		out := run(addr, mass.String(), 1, "--pipe") // 1: an error was answered
		if m := last.FindStringSubmatch(out); m == nil || m[1] != "1" || m[2] != "7503" {
			t.Fatalf("redis-cli --pipe against %s, want 1 error in 7503 replies:\n%s", addr, out)
		}
	}

	summary := func(addr string) string {
		out := run(addr, "", 0, "--bigkeys")
		i := strings.Index(out, "-------- summary -------")
		if i < 0 {
			t.Fatalf("redis-cli --bigkeys against %s printed no summary:\n%s", addr, out)
		}
		return out[i:]
	}
	want := summary(real)
	for _, addr := range nodes {
		if got := summary(addr); got != want {
			t.Fatalf("redis-cli --bigkeys summary\nagainst nanokv at %s:\n%s\nagainst redis-server:\n%s", addr, got, want)
		}
	}
	if !strings.Contains(want, "Biggest string found '\"str:biggest\"' has 100 bytes") || !strings.Contains(want, "Biggest   list found '\"list:0\"' has 800 items") || !strings.Contains(want, "Sampled 1538 keys") {
		t.Fatalf("redis-cli --bigkeys summary lacks what the test stored:\n%s", want)
	}

	scan := func(addr string) []string {
		keys := strings.Fields(run(addr, "", 0, "--scan", "--pattern", "str:1*"))
		slices.Sort(keys)
		return keys
	}
	wantKeys := scan(real)
	for _, addr := range nodes {
		if got := scan(addr); len(wantKeys) != 611 || !slices.Equal(got, wantKeys) {
			t.Fatalf("redis-cli --scan --pattern str:1*: nanokv at %s %d keys, redis-server %d (want 611)", addr, len(got), len(wantKeys))
		}
	}
}

// INFO's total_commands_processed counts as Redis 7.0 counts: a command once it ran (so
// INFO does not count itself, and CONFIG RESETSTAT counts after its reset), the
// commands EXEC and a script run (and an EXEC that aborts), a command that ran and
// failed, and never a refused one (unknown, wrong arity) or one queued in MULTI, on a
// node and on a cluster's leader.
func TestCommandsProcessedAsRedis(t *testing.T) {
	real := startRedisServer(t)
	single := startServer(t, Config{})
	defer single.Close()
	_, lead := leaderOf(t, startCluster(t, 3), 0)
	conv := [][]string{
		{"CONFIG", "RESETSTAT"}, {"INFO", "stats"}, {"SET", "a", "1"}, {"INFO", "stats"},
		{"NOSUCHCOMMAND"}, {"GET"}, {"INFO", "stats"},
		{"MULTI"}, {"SET", "b", "2"}, {"GET", "b"}, {"EXEC"}, {"INFO", "stats"},
		{"MULTI"}, {"SET", "b"}, {"EXEC"}, {"INFO", "stats"},
		{"EVAL", "redis.call('set', 'c', '1') return redis.call('get', 'c')", "0"},
		{"MSET", "x", "1", "y", "2"}, {"PING"}, {"INCR", "a"}, {"LPUSH", "a", "x"}, {"INFO", "stats"},
	}
	processed := regexp.MustCompile(`total_commands_processed:(\d+)`)
	counts := func(addr string) []string {
		c := dialNew(t, addr)
		var out []string
		for _, cmd := range conv {
			v, _ := c.do(cmd...)
			if cmd[0] == "INFO" {
				m := processed.FindStringSubmatch(render(v))
				if m == nil {
					t.Fatalf("INFO stats at %s has no total_commands_processed: %s", addr, render(v))
				}
				out = append(out, m[1])
			}
		}
		return out
	}
	want := counts(real)
	if !slices.Equal(want, []string{"1", "3", "4", "9", "12", "20"}) {
		t.Fatalf("redis-server counted %v: the test's expectation is wrong", want)
	}
	for _, addr := range []string{single.RedisAddr(), lead.RedisAddr()} {
		if got := counts(addr); !slices.Equal(got, want) {
			t.Errorf("total_commands_processed at %s: %v, redis-server %v", addr, got, want)
		}
	}
}
