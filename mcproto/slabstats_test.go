package mcproto_test

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The same items in nanokv and in memcached 1.6 without its segmented LRU (nanokv keeps no
// LRU): "stats items" and "stats slabs" must agree line for line, but for what nanokv
// does not keep (age, the per-class command counters), and so must memcached-tool's
// display, which reads both. The sizes cover every class and the chunked items past 512
// KiB (a header and chunks in other classes).
func TestSlabStatsMatchMemcached(t *testing.T) {
	mc := startMemcached(t, "-o", "no_lru_maintainer")
	if mc == "" {
		t.Skip("memcached not installed")
	}
	nk := startNode(t, 0).MemcacheAddr()
	fill := func(addr string) {
		c := dial(t, addr)
		var b strings.Builder
		for i := 0; i < 2000; i++ {
			n := i * i % 5000
			b.WriteString("set k" + strconv.Itoa(i) + " " + strconv.Itoa(i%3) + " 0 " + strconv.Itoa(n) + "\r\n" + strings.Repeat("v", n) + "\r\n")
		}
		for i, n := range []int{400000, 524200, 524300, 600000, 700000, 1000000, 1040000} {
			b.WriteString("set big" + strconv.Itoa(i) + " 5 0 " + strconv.Itoa(n) + "\r\n" + strings.Repeat("z", n) + "\r\n")
		}
		b.WriteString("delete k7\r\n")
		c.send(b.String())
		for i := 0; i < 2007; i++ {
			c.expect("STORED\r\n")
		}
		c.expect("DELETED\r\n")
	}
	fill(mc)
	fill(nk)
	skip := regexp.MustCompile(`^STAT (items:\d+:age|\d+:(get_hits|cmd_set|delete_hits|incr_hits|decr_hits|cas_hits|cas_badval|touch_hits)) `)
	stats := func(addr, which string) []string {
		c := dial(t, addr)
		c.send("stats " + which + "\r\n")
		var out []string
		for l := c.line(); l != "END\r\n"; l = c.line() {
			if !skip.MatchString(l) {
				out = append(out, l)
			}
		}
		return out
	}
	for _, which := range []string{"items", "slabs"} {
		want, got := stats(mc, which), stats(nk, which)
		if strings.Join(got, "") != strings.Join(want, "") {
			t.Errorf("stats %s:\n got %q\nwant %q", which, got, want)
		}
		if len(want) < 100 {
			t.Errorf("stats %s: %d lines: the items did not spread over the classes", which, len(want))
		}
	}
	if ages := stats(nk, "items"); !strings.Contains(strings.Join(ages, ""), "STAT items:1:number ") {
		t.Errorf("stats items has no class 1: %q", ages)
	}

	tool, err := exec.LookPath("/usr/share/memcached/scripts/memcached-tool")
	if err != nil {
		t.Log("memcached-tool not installed: its display is not compared")
		return
	}
	display := func(addr string) string {
		out, err := exec.Command(tool, addr, "display").CombinedOutput()
		if err != nil {
			t.Fatalf("memcached-tool %s display: %v\n%s", addr, err, out)
		}
		// Max_age is memcached's LRU tail age, which nanokv does not keep
		return regexp.MustCompile(`(?m)^(\s+\d+\s+\S+)\s+\d+s`).ReplaceAllString(string(out), "$1 AGE")
	}
	if got, want := display(nk), display(mc); got != want {
		t.Errorf("memcached-tool display:\n got %s\nwant %s", got, want)
	}
}

// stats conns lists the listener and every connection with its state, as memcached 1.6.
func TestStatsConns(t *testing.T) {
	for _, mode := range frontendModes {
		t.Run(mode.name, func(t *testing.T) {
			addr := startNodeMode(t, 0, mode).MemcacheAddr()
			used := dial(t, addr)
			used.send("version\r\n")
			used.line()
			dial(t, addr) // one that never sends
			c := dial(t, addr)
			// every connection is known to the server once it answers on it
			c.send("version\r\n")
			c.line()
			var lines []string
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				c.send("stats conns\r\n")
				lines = lines[:0]
				for l := c.line(); l != "END\r\n"; l = c.line() {
					lines = append(lines, strings.TrimSuffix(l, "\r\n"))
				}
				if len(lines) == 4*3+3 || time.Now().After(deadline) {
					break
				}
			}
			re := regexp.MustCompile(`^STAT (\d+):(addr|listen_addr|state|secs_since_last_cmd) (.*)$`)
			states := map[string]string{}
			var order []string
			for _, l := range lines {
				m := re.FindStringSubmatch(l)
				if m == nil {
					t.Fatalf("stats conns line %q", l)
				}
				if m[2] == "state" {
					states[m[1]] = m[3]
					order = append(order, m[3])
				}
				if m[2] == "listen_addr" && m[3] != "tcp:"+addr {
					t.Errorf("listen_addr %q, want tcp:%s", m[3], addr)
				}
				if m[2] == "secs_since_last_cmd" {
					if n, err := strconv.Atoi(m[3]); err != nil || n < 0 || n > 60 {
						t.Errorf("secs_since_last_cmd %q", m[3])
					}
				}
			}
			want := []string{"conn_listening", "conn_read", "conn_new_cmd", "conn_parse_cmd"}
			if strings.Join(order, " ") != strings.Join(want, " ") || len(lines) != 15 {
				t.Fatalf("stats conns states %v (%d lines), want %v:\n%s", order, len(lines), want, strings.Join(lines, "\n"))
			}
			if !strings.HasPrefix(lines[0], "STAT ") || !strings.HasSuffix(lines[0], "addr tcp:"+addr) {
				t.Errorf("the listener's line %q", lines[0])
			}
		})
	}
}
