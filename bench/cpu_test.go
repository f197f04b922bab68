package bench

import (
	"os"
	"strings"
	"testing"
	"time"
)

// The command name may hold spaces and parentheses: utime and stime are counted from
// the last ')'.
func TestParseProcStat(t *testing.T) {
	line := "4242 (redis-server *:6379) (x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 157 43 0 0 20 0 5 0 100 0 0\n"
	got, err := parseProcStat(line)
	if err != nil || got != 200*clockTick {
		t.Fatalf("parseProcStat = %v, %v; want 2s (157 + 43 ticks)", got, err)
	}
	for _, bad := range []string{"", "4242 (x S 1 2", "4242 (x) S 1 2 3", "4242 (x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 1x 43 0"} {
		if _, err := parseProcStat(bad); err == nil {
			t.Errorf("parseProcStat(%q) took it", bad)
		}
	}
}

// procCPU of this process grows while it computes.
func TestProcCPUCountsThisProcess(t *testing.T) {
	before, err := procCPU(os.Getpid())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	var after time.Duration
	x := 1
	for i := 0; after <= before && i < 100000; i++ { // at most a few seconds of CPU
		for j := range 100000 {
			x = x*31 + j
		}
		if after, err = procCPU(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	if after <= before {
		t.Fatalf("CPU time stayed at %v (x %d)", before, x)
	}
}

func TestPerOpSplitsLeaderAndFollowers(t *testing.T) {
	before := []time.Duration{1 * time.Second, 2 * time.Second, 3 * time.Second}
	after := []time.Duration{2 * time.Second, 4 * time.Second, 3500 * time.Millisecond}
	c := perOp(before, after, 1, 1500*time.Millisecond, 1000000)
	if c.Leader != 2 || len(c.Followers) != 2 || c.Followers[0] != 1 || c.Followers[1] != 0.5 || c.Client != 1.5 || c.Servers() != 3.5 {
		t.Fatalf("perOp = %+v", c)
	}
	if s := c.String(); s != "leader 2.00 + followers 1.00, 0.50 · client 1.50" {
		t.Errorf("String() = %q", s)
	}
	one := perOp(before[:1], after[:1], 0, time.Second, 500000)
	if s := one.String(); s != "server 2.00 · client 2.00" {
		t.Errorf("standalone String() = %q", s)
	}
	md := markdownTable(Scenario{Baseline: "redis-server", Rows: []Row{
		{System: "redis-server", Test: "SET -P 1", Ops: 100, CPU: one},
		{System: "nanokv-3", Test: "SET -P 1", Ops: 80, CPU: c},
		{System: "nanokv-5", Test: "SET -P 1", Ops: 70},
	}})
	for _, s := range []string{"| CPU µs/op |", "| 0.80 | leader 2.00 + followers 1.00, 0.50 · client 1.50 |", "| 1.00 | server 2.00 · client 2.00 |", "| 0.70 | |"} {
		if !strings.Contains(md, s) {
			t.Errorf("table lacks %q:\n%s", s, md)
		}
	}
}
