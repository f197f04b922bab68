package zkproto_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Real clients against a nanokv node: kazoo (Debian's python3-kazoo, which only the
// system python has) and ZooKeeper's zkCli.sh. Each script prints a line per failed check.

const (
	systemPython = "/usr/bin/python3"
	zkCliPath    = "/usr/share/zookeeper/bin/zkCli.sh"
)

func runScript(t *testing.T, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("%s: %v", args, err)
	}
}

func TestKazoo(t *testing.T) {
	_, err := os.Stat(systemPython)
	requireTool(t, err == nil && exec.Command(systemPython, "-c", "import kazoo").Run() == nil, "python3-kazoo")
	s := startNode(t, nil)
	runScript(t, systemPython, "testdata/kazoo_check.py", s.ZKAddr())
}

func TestZkCli(t *testing.T) {
	_, err := os.Stat(zkCliPath)
	_, javaErr := exec.LookPath("java")
	requireTool(t, err == nil && javaErr == nil, "zkCli.sh (Debian's zookeeper) or java")
	s := startNode(t, nil)
	runScript(t, "bash", "testdata/zkcli_check.sh", s.ZKAddr())
}
