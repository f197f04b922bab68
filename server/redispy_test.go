package server

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// systemPython is the interpreter Debian's python3-redis is installed for.
const systemPython = "/usr/bin/python3"

// TestRedisPy runs testdata/redispy_check.py, scripted checks with redis-py (Debian's
// python3-redis), against redis-server, so that every expectation in it is Redis's, and
// then against a single node and a three-member cluster's leader.
func TestRedisPy(t *testing.T) {
	_, err := os.Stat(systemPython)
	if err != nil || exec.Command(systemPython, "-c", "import redis").Run() != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3-redis is missing (CI installs it)")
		}
		t.Skip("python3-redis is missing")
	}
	t.Run("redis-server", func(t *testing.T) {
		runRedisPy(t, startRedisServer(t))
	})
	t.Run("single node", func(t *testing.T) {
		runRedisPy(t, startServer(t, Config{MemoryOnly: true}).RedisAddr())
	})
	t.Run("cluster leader", func(t *testing.T) {
		_, leader := leaderOf(t, startCluster(t, 3), 0)
		runRedisPy(t, leader.RedisAddr())
	})
}

func runRedisPy(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, systemPython, "testdata/redispy_check.py", addr).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("redispy_check.py %s: %v", addr, err)
	}
}
