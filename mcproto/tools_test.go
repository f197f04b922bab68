package mcproto_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/nanokv/nanokv/internal/testtool"
)

// The memcached tools of libmemcached (Debian's libmemcached-tools, which also brings
// memcaslap) against a node.

func libmemcachedTool(t *testing.T, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	testtool.Require(t, err == nil, name+" (Debian's libmemcached-tools)")
	return bin
}

// memcdump (libmemcached-tools) lists a node's keys through stats cachedump.
func TestMemcdump(t *testing.T) {
	bin := libmemcachedTool(t, "memcdump")
	addr := startNode(t, 0).MemcacheAddr()
	c := dial(t, addr)
	c.send(cachedumpItems)
	c.expect("STORED\r\nSTORED\r\nSTORED\r\n")
	out, err := exec.Command(bin, "--servers="+addr).CombinedOutput()
	keys := strings.Fields(string(out))
	slices.Sort(keys)
	if err != nil || !slices.Equal(keys, []string{"a", "big", "t"}) {
		t.Fatalf("memcdump: %v, printed %q; want the keys a, big, t", err, out)
	}
}

// memccapable, libmemcached's conformance test of a memcached server, passes its text
// protocol tests with every frontend, as it does against memcached 1.6.18.
func TestMemccapable(t *testing.T) {
	bin := libmemcachedTool(t, "memccapable")
	for _, mode := range frontendModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			host, port, _ := strings.Cut(startNodeMode(t, 0, mode).MemcacheAddr(), ":")
			out, err := exec.Command(bin, "-h", host, "-p", port, "-a", "-t", "10").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "All tests passed") || strings.Contains(string(out), "[FAIL]") {
				t.Fatalf("memccapable -a: %v\n%s", err, out)
			}
		})
	}
}
