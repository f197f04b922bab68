package mcproto_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nanokv/nanokv/internal/testtool"
)

// cachedumpItems stores what the cachedump tests list: two items in slab class 1 (one
// with a TTL of 100 s), one in class 6, and one in class 1 with a binary key, which a
// dump leaves out. None is read: memcached lists only items of its cold LRU, where an
// item read after it was stored would not go.
const cachedumpItems = "set a 0 0 1\r\nx\r\nset t 7 100 3\r\nabc\r\nset big 0 0 200\r\n" +
	"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy" +
	"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\r\n"

// readDump reads a cachedump's ITEM lines up to its END, sorted, with each expiry
// replaced by how it relates to now+100 s ("0 s" stays: no expiry).
func readDump(t *testing.T, c *testConn, stored time.Time) []string {
	t.Helper()
	var items []string
	for l := c.line(); l != "END\r\n"; l = c.line() {
		f := strings.Fields(strings.TrimSuffix(l, "\r\n"))
		if len(f) != 6 || f[0] != "ITEM" || f[3] != "b;" || f[5] != "s]" {
			t.Fatalf("cachedump line %q", l)
		}
		if exp, err := strconv.ParseInt(f[4], 10, 64); err != nil {
			t.Fatalf("cachedump line %q: %v", l, err)
		} else if exp != 0 {
			// memcached's clock runs in whole seconds from its start, a little behind
			if want := stored.Unix() + 100; exp < want-3 || exp > want+3 {
				t.Fatalf("cachedump line %q: expiry %d, want about %d", l, exp, want)
			}
			f[4] = "now+100"
		}
		items = append(items, strings.Join(f, " "))
	}
	slices.Sort(items)
	return items
}

// stats cachedump, memcdump's way to list keys, answered as memcached 1.6.18 answers
// it: its errors and their order, the classes, the limit, the binary key left out.
func TestStatsCachedump(t *testing.T) {
	refusals := []struct{ req, want string }{
		{"stats cachedump 64 0\r\n", "CLIENT_ERROR Illegal slab id\r\n"},
		{"stats cachedump 4294967296 0\r\n", "END\r\n"},                          // 2^32: memcached keeps the low 32 bits, class 0
		{"stats cachedump 4294967360 0\r\n", "CLIENT_ERROR Illegal slab id\r\n"}, // 2^32+64
		{"stats cachedump 63 0\r\n", "END\r\n"},
		{"stats cachedump 0 0\r\n", "END\r\n"},
		{"stats cachedump 2 0 extra\r\n", "END\r\n"},
		{"stats cachedump x 0\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"stats cachedump 1 -1\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"stats cachedump 99 x\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"stats cachedump 1\r\n", "CLIENT_ERROR bad command line\r\n"},
		{"stats cachedump\r\n", "CLIENT_ERROR bad command line\r\n"},
	}
	class1 := []string{"ITEM a [1 b; 0 s]", "ITEM t [3 b; now+100 s]"}
	class6 := []string{"ITEM big [200 b; 0 s]"}
	check := func(t *testing.T, c *testConn, stored time.Time) {
		c.send("stats cachedump 1 0\r\n")
		if got := readDump(t, c, stored); !slices.Equal(got, class1) {
			t.Errorf("class 1: %q, want %q", got, class1)
		}
		c.send("stats cachedump 6 0\r\n")
		if got := readDump(t, c, stored); !slices.Equal(got, class6) {
			t.Errorf("class 6: %q, want %q", got, class6)
		}
		c.send("stats cachedump 1 1\r\n")
		if got := readDump(t, c, stored); len(got) != 1 || !slices.Contains(class1, got[0]) {
			t.Errorf("class 1 with limit 1: %q, want one of %q", got, class1)
		}
		for _, r := range refusals {
			c.send(r.req)
			c.expect(r.want)
		}
	}
	for _, mode := range frontendModes {
		t.Run(mode.name, func(t *testing.T) {
			c := dial(t, startNodeMode(t, 0, mode).MemcacheAddr())
			stored := time.Now()
			c.send(cachedumpItems + "ms " + b64("bin key") + " 1 b\r\nz\r\n")
			c.expect("STORED\r\nSTORED\r\nSTORED\r\nHD\r\n")
			check(t, c, stored)
		})
	}
	t.Run("memcached", func(t *testing.T) {
		addr := startMemcached(t)
		testtool.Require(t, addr != "", "memcached")
		c := dial(t, addr)
		stored := time.Now()
		c.send(cachedumpItems + "ms " + b64("bin key") + " 1 b\r\nz\r\n")
		c.expect("STORED\r\nSTORED\r\nSTORED\r\nHD\r\n")
		// memcached moves a new item from its hot LRU to its cold one within seconds
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			c.send("stats cachedump 1 0\r\nstats cachedump 6 0\r\n")
			one, six := readDump(t, c, stored), readDump(t, c, stored)
			if len(one) == len(class1) && len(six) == len(class6) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("memcached's cold LRU never held the items: class 1 %q, class 6 %q", one, six)
			}
		}
		check(t, c, stored)
	})
}
