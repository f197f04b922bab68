package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nanokv/nanokv/internal/testnet"
	"github.com/redis/go-redis/v9"
)

// The test binary doubles as nanokv: re-executed with this variable set, it runs main.
// That gives the tests a real process to kill without a separate go build.
const childEnv = "NANOKV_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

type proc struct {
	cmd    *exec.Cmd
	addr   string
	stderr *bytes.Buffer
}

// startNode starts nanokv as a child process and waits until it answers PING.
func startNode(t *testing.T, args ...string) *proc {
	t.Helper()
	for attempt := 0; attempt < 5; attempt++ {
		addr := fmt.Sprintf("127.0.0.1:%d", testnet.FreePort(t))
		cmd := exec.Command(os.Args[0], append([]string{"--redis", addr}, args...)...)
		cmd.Env = append(os.Environ(), childEnv+"=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := &proc{cmd: cmd, addr: addr, stderr: &stderr}
		t.Cleanup(func() { p.kill() })
		if p.waitReady(10 * time.Second) {
			return p
		}
		p.kill()
		t.Logf("node on %s did not come up (attempt %d): %s", addr, attempt, stderr.String())
	}
	t.Fatal("could not start nanokv")
	return nil
}

func (p *proc) waitReady(timeout time.Duration) bool {
	c := redis.NewClient(&redis.Options{Addr: p.addr, DisableIdentity: true, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if p.cmd.ProcessState != nil {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func (p *proc) kill() {
	if p.cmd.Process != nil && p.cmd.ProcessState == nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	}
}

// TestKill9KeepsEveryAcknowledgedWrite drives writes from several clients, kills the
// process with SIGKILL in the middle, restarts it on the same WAL, and checks that every
// write that was acknowledged before the kill is there (--fsync always).
func TestKill9KeepsEveryAcknowledgedWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := filepath.Join(t.TempDir(), "data")
	p := startNode(t, "--data-dir", dir, "--fsync", "always")

	const writers = 8
	acked := make([]int, writers) // highest acknowledged counter per writer
	var mu sync.Mutex
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: p.addr, DisableIdentity: true, MaxRetries: -1})
			defer c.Close()
			ctx := context.Background()
			for i := 1; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// a blind write (acknowledged at commit) and a state-dependent one
				if err := c.Set(ctx, fmt.Sprintf("w%d:%d", w, i), i, 0).Err(); err != nil {
					return
				}
				if err := c.RPush(ctx, fmt.Sprintf("log%d", w), i).Err(); err != nil {
					return
				}
				mu.Lock()
				acked[w] = i
				mu.Unlock()
			}
		}(w)
	}
	// let some load through, then kill -9 while writes are in flight
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		total := 0
		for _, a := range acked {
			total += a
		}
		mu.Unlock()
		if total >= 2000 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	close(stop)
	wg.Wait()

	mu.Lock()
	final := append([]int(nil), acked...)
	mu.Unlock()
	p2 := startNode(t, "--data-dir", dir, "--fsync", "always")
	c := redis.NewClient(&redis.Options{Addr: p2.addr, DisableIdentity: true})
	defer c.Close()
	ctx := context.Background()
	total := 0
	for w, n := range final {
		total += n
		for i := 1; i <= n; i++ {
			v, err := c.Get(ctx, fmt.Sprintf("w%d:%d", w, i)).Int()
			if err != nil || v != i {
				t.Fatalf("acknowledged write w%d:%d lost after kill -9: %v %v", w, i, v, err)
			}
		}
		l, err := c.LRange(ctx, fmt.Sprintf("log%d", w), 0, -1).Result()
		if err != nil || len(l) < n {
			t.Fatalf("log%d has %d entries after restart, %d were acknowledged (%v)", w, len(l), n, err)
		}
		for i, v := range l {
			if v != fmt.Sprint(i+1) {
				t.Fatalf("log%d[%d] = %s: entries out of order or duplicated", w, i, v)
			}
		}
	}
	if total == 0 {
		t.Fatal("no write was acknowledged before the kill")
	}
	t.Logf("%d acknowledged writes per kind survived kill -9", total)
}

// TestSIGTERMShutsDownCleanly checks that SIGTERM flushes the WAL and exits 0.
func TestSIGTERMShutsDownCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := filepath.Join(t.TempDir(), "data")
	p := startNode(t, "--data-dir", dir, "--fsync", "no")
	c := redis.NewClient(&redis.Options{Addr: p.addr, DisableIdentity: true})
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		c.Set(ctx, fmt.Sprint(i), i, 0)
	}
	c.Close()
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.stderr.String())
	}
	if !bytes.Contains(p.stderr.Bytes(), []byte("stopped cleanly")) {
		t.Fatalf("no clean-stop line:\n%s", p.stderr.String())
	}
	p2 := startNode(t, "--data-dir", dir)
	c = redis.NewClient(&redis.Options{Addr: p2.addr, DisableIdentity: true})
	defer c.Close()
	if n, _ := c.DBSize(ctx).Result(); n != 100 {
		t.Fatalf("%d keys after restart, want 100", n)
	}
}

// A server process re-executes itself with the GODEBUG setting of server.SysmonEnv, in
// place, unless the user set schedtrace.
func TestServerProcessRunsWithSysmonAwake(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	godebugOf := func(p *proc) string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.cmd.Process.Pid))
		if err != nil {
			t.Skipf("no /proc here: %v", err)
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
				return v
			}
		}
		return ""
	}
	t.Setenv("GODEBUG", "gctrace=0")
	p := startNode(t, "--memory-only", "--zk", "", "--memcache", "")
	if got := godebugOf(p); got != "gctrace=0,schedtrace=2147483647" {
		t.Fatalf("GODEBUG of the server process is %q", got)
	}
	t.Setenv("GODEBUG", "schedtrace=0")
	p = startNode(t, "--memory-only", "--zk", "", "--memcache", "")
	if got := godebugOf(p); got != "schedtrace=0" {
		t.Fatalf("GODEBUG of the server process is %q; the user's schedtrace=0 should stand", got)
	}
}

func TestVersionFlag(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"--version"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(out.Bytes(), []byte("nanokv ")) {
		t.Fatalf("--version printed %q", out.String())
	}
}

func TestConfigFileAndBadFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nanokv.conf")
	os.WriteFile(path, []byte("# comment\nfsync sometimes\n"), 0o644)
	var out bytes.Buffer
	if err := run([]string{"--config", path, "--memory-only"}, &out, &out); err == nil {
		t.Fatal("a bad fsync value in the config file was accepted")
	}
	os.WriteFile(path, []byte("no-such-setting 1\n"), 0o644)
	if err := run([]string{"--config", path}, &out, &out); err == nil {
		t.Fatal("an unknown setting in the config file was accepted")
	}
	if err := run([]string{"--mode", "paxos"}, &out, &out); err == nil {
		t.Fatal("an unknown mode was accepted")
	}
	for _, bad := range [][]string{
		{"--peers", "1=127.0.0.1:1,two=127.0.0.1:2"},
		{"--peers", "1=127.0.0.1:1,1=127.0.0.1:2"},
		{"--peers", "1=127.0.0.1:1,2=127.0.0.1:2", "--id", "3"},
		{"--peers", "1=127.0.0.1:1,2=127.0.0.1:2", "--mode", "lowi"},
		{"--join", "127.0.0.1:6379"},
		{"--join", "127.0.0.1:6379", "--cluster", "127.0.0.1:7999", "--peers", "1=127.0.0.1:7999"},
		{"--join", "127.0.0.1:6379", "--cluster", "127.0.0.1:7999", "--memory-only"},
		{"--log-max-file-size", "0"},
		{"--log-max-file-size", "lots"},
		{"--log-max-cache-size", "0"},
		{"--offload-inflight", "-1"},
		{"local", "--nodes", "0"},
		{"frobnicate"},
	} {
		// Each is refused while the flags are checked, before anything starts.
		if err := run(bad, &out, &out); err == nil {
			t.Fatalf("%q was accepted", bad)
		}
	}
}

// startLocal runs nanokv local with n members on free ports (no WAL, no ZooKeeper
// listener), args appended; it returns the process, what it writes, and the Redis base
// port.
func startLocal(t *testing.T, n int, args ...string) (*proc, *bytes.Buffer, int) {
	t.Helper()
	ports := testnet.FreeRanges(t, n, 2)
	cmd := exec.Command(os.Args[0], append([]string{"local", "--nodes", fmt.Sprint(n), "--memory-only", "--zk-base", "0",
		"--redis-base", fmt.Sprint(ports[0]), "--cluster-base", fmt.Sprint(ports[1])}, args...)...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out := new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd}
	t.Cleanup(func() { p.kill() })
	return p, out, ports[0]
}

func TestLocalCluster(t *testing.T) {
	p, out, redisBase := startLocal(t, 3)
	ctx := context.Background()
	clients := make([]*redis.Client, 3)
	for i := range clients {
		clients[i] = redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", redisBase+i), DisableIdentity: true, MaxRetries: -1})
		defer clients[i].Close()
	}
	leader := -1
	deadline := time.Now().Add(20 * time.Second)
	for leader < 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no leader; output:\n%s", out.String())
		}
		for i, c := range clients {
			if info, err := c.Info(ctx, "raft").Result(); err == nil && strings.Contains(info, "raft_role:leader") {
				leader = i
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := clients[leader].Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	follower := (leader + 1) % 3
	// The SET needed one follower's ack: this one may not have heard from the leader
	// yet, and answers CLUSTERDOWN until it has (member i+1 serves redisBase+i).
	knows := fmt.Sprintf("raft_leader_id:%d\r\n", leader+1)
	for info := ""; !strings.Contains(info, knows); info, _ = clients[follower].Info(ctx, "raft").Result() {
		if time.Now().After(deadline) {
			t.Fatalf("member %d never heard from the leader: %q", follower+1, info)
		}
		time.Sleep(5 * time.Millisecond)
	}
	want := fmt.Sprintf("MOVED 0 127.0.0.1:%d", redisBase+leader)
	if err := clients[follower].Get(ctx, "k").Err(); err == nil || err.Error() != want {
		t.Fatalf("follower answered %v, want %s", err, want)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("nanokv local exited with %v; output:\n%s", err, out.String())
	}
	for i := range 3 {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", redisBase+i)); err == nil {
			c.Close()
			t.Fatalf("member %d still listens after nanokv local stopped", i+1)
		}
	}
}

// What follows -- on nanokv local's command line goes to every member: a flag no member
// knows makes each exit, saying so, and local with them.
func TestLocalPassesMemberFlags(t *testing.T) {
	p, out, _ := startLocal(t, 2, "--", "--no-such-flag")
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("local exited cleanly; output:\n%s", out.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("local still runs; output:\n%s", out.String())
	}
	for _, want := range []string{"[node 1] flag provided but not defined: -no-such-flag", "[node 2] flag provided but not defined: -no-such-flag"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("no %q in:\n%s", want, out.String())
		}
	}
}
