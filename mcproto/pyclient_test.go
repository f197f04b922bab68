package mcproto_test

import (
	"testing"

	"github.com/nanokv/nanokv/internal/testtool"
)

// pymemcache (Debian's python3-pymemcache) against the real memcached, whose replies the
// script's expectations are taken from, and then against a nanokv node served each way.
// The script prints a line per failed check.
func TestPymemcache(t *testing.T) {
	testtool.RequirePython(t, "pymemcache", "python3-pymemcache")
	// The runs are independent and mostly wait for TTLs to pass: side by side.
	t.Run("memcached", func(t *testing.T) {
		t.Parallel()
		addr := startMemcached(t)
		testtool.Require(t, addr != "", "memcached")
		testtool.Run(t, testtool.SystemPython, "testdata/pymemcache_check.py", addr)
	})
	for _, mode := range frontendModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			testtool.Run(t, testtool.SystemPython, "testdata/pymemcache_check.py", startNodeMode(t, 0, mode).MemcacheAddr())
		})
	}
}
