package zkproto_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
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

func TestZkCli(t *testing.T) {
	_, err := os.Stat(zkCliPath)
	_, javaErr := exec.LookPath("java")
	testtool.Require(t, err == nil && javaErr == nil, "zkCli.sh (Debian's zookeeper) or java")
	s := startNode(t, nil)
	testtool.Run(t, "bash", "testdata/zkcli_check.sh", s.ZKAddr())
}
