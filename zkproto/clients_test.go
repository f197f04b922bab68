package zkproto_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/nanokv/nanokv/internal/testtool"
)

// Real clients against a nanokv node: kazoo (Debian's python3-kazoo, which only the
// system python has) and ZooKeeper's zkCli.sh. Each script prints a line per failed check.

const zkCliPath = "/usr/share/zookeeper/bin/zkCli.sh"

func TestKazoo(t *testing.T) {
	testtool.RequirePython(t, "kazoo", "python3-kazoo")
	s := startNode(t, nil)
	testtool.Run(t, testtool.SystemPython, "testdata/kazoo_check.py", s.ZKAddr())
}

func TestZkCli(t *testing.T) {
	_, err := os.Stat(zkCliPath)
	_, javaErr := exec.LookPath("java")
	testtool.Require(t, err == nil && javaErr == nil, "zkCli.sh (Debian's zookeeper) or java")
	s := startNode(t, nil)
	testtool.Run(t, "bash", "testdata/zkcli_check.sh", s.ZKAddr())
}
