package mcproto_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// pymemcache (Debian's python3-pymemcache, which only the system python has) against the
// real memcached, whose replies the script's expectations are taken from, and then against
// a nanokv node served each way. The script prints a line per failed check.

const pySystemPython = "/usr/bin/python3"

// requirePyTool skips when a tool the test needs is missing, but fails under CI, which
// installs it: a skip there would hide a gap.
func requirePyTool(t *testing.T, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing (CI installs it)", what)
	}
	t.Skipf("%s is missing", what)
}

func runPyScript(t *testing.T, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("%s: %v", args, err)
	}
}

func TestPymemcache(t *testing.T) {
	_, err := os.Stat(pySystemPython)
	requirePyTool(t, err == nil && exec.Command(pySystemPython, "-c", "import pymemcache").Run() == nil, "python3-pymemcache")
	// The runs are independent and mostly wait for TTLs to pass: side by side.
	t.Run("memcached", func(t *testing.T) {
		t.Parallel()
		addr := startMemcached(t)
		requirePyTool(t, addr != "", "memcached")
		runPyScript(t, pySystemPython, "testdata/pymemcache_check.py", addr)
	})
	for _, mode := range frontendModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			runPyScript(t, pySystemPython, "testdata/pymemcache_check.py", startNodeMode(t, 0, mode).MemcacheAddr())
		})
	}
}
