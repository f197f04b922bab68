package zkproto_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

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

func TestZkCli(t *testing.T) {
	_, err := os.Stat(zkCliPath)
	_, javaErr := exec.LookPath("java")
	testtool.Require(t, err == nil && javaErr == nil, "zkCli.sh (Debian's zookeeper) or java")
	s := startNode(t, nil)
	testtool.Run(t, "bash", "testdata/zkcli_check.sh", s.ZKAddr())
}
