// Package testtool runs the real clients the tests check nanokv with (Debian's
// python3-kazoo, python3-redis, python3-pymemcache; zkCli.sh), and decides what a
// test does when one is missing.
package testtool

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// SystemPython is the interpreter Debian's python3-* packages are installed for.
const SystemPython = "/usr/bin/python3"

// Require skips the test when a tool it needs is missing (ok false), but fails it
// under CI, which installs every such tool: a skip there would hide a gap.
func Require(t testing.TB, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing (CI installs it)", what)
	}
	t.Skipf("%s is missing", what)
}

// RequirePython requires SystemPython with module importable, from Debian's package.
func RequirePython(t testing.TB, module, pkg string) {
	t.Helper()
	_, err := os.Stat(SystemPython)
	Require(t, err == nil && exec.Command(SystemPython, "-c", "import "+module).Run() == nil, pkg)
}

// Run runs name with args for at most two minutes, logs what it printed, and fails
// the test if it failed (the scripts print a line per failed check).
func Run(t testing.TB, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
}
