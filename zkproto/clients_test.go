package zkproto_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nanokv/nanokv/internal/testtool"
)

// Real clients against a nanokv node: kazoo (Debian's python3-kazoo, which only the
// system python has) and ZooKeeper's zkCli.sh. Each script prints a line per failed check.
// kazoo's recipes also run against ZooKeeper 3.8 and a cluster.

const zkCliPath = "/usr/share/zookeeper/bin/zkCli.sh"

func TestKazoo(t *testing.T) {
	testtool.RequirePython(t, "kazoo", "python3-kazoo")
	s := startNode(t, nil)
	testtool.Run(t, testtool.SystemPython, "testdata/kazoo_check.py", s.ZKAddr())
}

// kazoo's recipes (locks, read/write locks, a counter, an election, a semaphore,
// barriers, queues, parties, data and children watches, a tree cache) pass against a
// real ZooKeeper 3.8, a node, and a three-member cluster whose clients' sessions are on
// different members.
func TestKazooRecipes(t *testing.T) {
	testtool.RequirePython(t, "kazoo", "python3-kazoo")
	const script = "testdata/kazoo_recipes_check.py"
	t.Run("ZooKeeper", func(t *testing.T) {
		t.Parallel()
		testtool.Run(t, testtool.SystemPython, script, startRealZooKeeper(t, false))
	})
	t.Run("node", func(t *testing.T) {
		t.Parallel()
		testtool.Run(t, testtool.SystemPython, script, startNode(t, nil).ZKAddr())
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		members := startZKCluster(t, 3, nil)
		leaderIndex(t, members)
		var hosts []string
		for _, m := range members {
			hosts = append(hosts, m.ZKAddr())
		}
		testtool.Run(t, testtool.SystemPython, script, strings.Join(hosts, ","))
	})
}

// A kazoo session survives the loss of the member it is on, the leader: kazoo
// resumes it on another member, where its lock and ephemeral node are still its own
// and its counter goes on (testdata/kazoo_failover_check.py; the test stops the
// member when the script says READY).
func TestKazooSessionSurvivesItsMember(t *testing.T) {
	testtool.RequirePython(t, "kazoo", "python3-kazoo")
	members := startZKCluster(t, 3, nil)
	lead := leaderIndex(t, members)
	hosts := []string{members[lead].ZKAddr()}
	for i, m := range members {
		if i != lead {
			hosts = append(hosts, m.ZKAddr())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testtool.SystemPython, "testdata/kazoo_failover_check.py", strings.Join(hosts, ","))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var printed strings.Builder
	r := bufio.NewReader(io.TeeReader(stdout, &printed))
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			cmd.Wait()
			t.Fatalf("the script ended before READY: %v\n%s%s", err, printed.String(), stderr.String())
		}
		if line == "READY\n" {
			break
		}
	}
	members[lead].Close()
	io.WriteString(stdin, "go\n")
	io.Copy(io.Discard, r)
	err = cmd.Wait()
	t.Logf("%s%s", printed.String(), stderr.String())
	if err != nil {
		t.Fatalf("kazoo_failover_check.py: %v", err)
	}
}

// cliMt is the ZooKeeper C client's shell (Debian's zookeeper-bin, on libzookeeper-mt).
const cliMt = "/usr/lib/zookeeper/bin/cli_mt"

// The ZooKeeper C client gets the same answers from a node as from ZooKeeper 3.8: each
// command in a session of its own (cli_mt's batch mode, so that its threads' output
// does not interleave), compared without session ids, times and zxids, with children
// sorted (ZooKeeper lists them in its hash set's order, nanokv by name). exists is left
// out: its batch mode never exits after it.
func TestZKCClient(t *testing.T) {
	_, err := os.Stat(cliMt)
	testtool.Require(t, err == nil, cliMt+" (Debian's zookeeper-bin)")
	cmds := []string{
		"create /c", "create /c", "set /c hello", "get /c", "create +e /c/e", "ls /c",
		"create +s /c/s-", "create +s /c/s-", "create +c /c/cont", "create2 /c/two", "ls /c", "ls2 /c",
		"get /c/none", "set /c/none x", "ls /none", "delete /c",
		"delete /c/two", "create /noparent/x", "create +t=1000 /c/ttl", "sync /c", "ls /zookeeper",
		"config", "delete /c/cont", "ls /c",
	}
	run := func(addr string) []string {
		// a ZooKeeper that accepts connections may still close them while it starts
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			b, _ := exec.CommandContext(ctx, cliMt, "-h", addr, "-c", "ls /").CombinedOutput()
			cancel()
			if strings.Contains(string(b), "/: rc = 0") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cli_mt never listed / at %s:\n%s", addr, b)
			}
		}
		var out []string
		for _, cmd := range cmds {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			b, err := exec.CommandContext(ctx, cliMt, "-h", addr, "-c", cmd).CombinedOutput()
			cancel()
			if err != nil {
				t.Fatalf("cli_mt -c %q against %s: %v\n%s", cmd, addr, err, b)
			}
			out = append(out, normalizeCliMt(string(b)))
		}
		return out
	}
	want := run(startRealZooKeeper(t, false))
	if !strings.Contains(want[0], "[/c]: rc = 0") || !strings.Contains(want[1], "rc = -110") || !strings.Contains(want[10], "s-0000000002") {
		t.Fatalf("ZooKeeper's answers are not what the commands should give:\n%s", strings.Join(want, ""))
	}
	got := run(startNode(t, nil).ZKAddr())
	for i := range cmds {
		if got[i] != want[i] {
			t.Errorf("cli_mt -c %q\nnanokv:\n%s\nZooKeeper:\n%s", cmds[i], got[i], want[i])
		}
	}
}

// normalizeCliMt drops what differs between servers and runs from cli_mt's output
// (session ids, times, zxids, the ephemeral owner) and sorts each run of child names.
func normalizeCliMt(out string) string {
	var lines, kids []string
	flush := func() {
		slices.Sort(kids)
		lines, kids = append(lines, kids...), nil
	}
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(l, "session") || strings.Contains(l, "time = ") || strings.Contains(l, "ctime") ||
			strings.Contains(l, "mtime") || strings.Contains(l, "zxid") || strings.Contains(l, "ephemeralOwner") ||
			strings.Contains(l, "Watcher SESSION_EVENT"):
		case strings.HasPrefix(l, "\t") && !strings.Contains(l, "="):
			kids = append(kids, l)
		default:
			flush()
			lines = append(lines, l)
		}
	}
	flush()
	return strings.Join(lines, "\n")
}

func TestZkCli(t *testing.T) {
	_, err := os.Stat(zkCliPath)
	_, javaErr := exec.LookPath("java")
	testtool.Require(t, err == nil && javaErr == nil, "zkCli.sh (Debian's zookeeper) or java")
	s := startNode(t, nil)
	testtool.Run(t, "bash", "testdata/zkcli_check.sh", s.ZKAddr())
}
