package bench

import (
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// testdata/redis-benchmark-7.0.txt is redis-benchmark 7.0.15's output of -t set,get
// -n 20000 -c 50 against redis-server, progress lines and carriage returns included.
func TestParseRedisBenchmark(t *testing.T) {
	rows, err := parseRedisBenchmark(readTestdata(t, "redis-benchmark-7.0.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Test != "SET" || rows[1].Test != "GET" {
		t.Fatalf("tests = %+v, want SET and GET", rows)
	}
	set := rows[0]
	if set.Ops != 55710.31 {
		t.Errorf("SET ops = %v, want 55710.31", set.Ops)
	}
	// 50.000% <= 0.479 (percentile block), 99.005% <= 4.103 (cumulative block, finer
	// there), 99.902% <= 43.551 (percentile block).
	if set.P50 != 0.479 || set.P99 != 4.103 || set.P999 != 43.551 {
		t.Errorf("SET p50/p99/p99.9 = %v/%v/%v, want 0.479/4.103/43.551", set.P50, set.P99, set.P999)
	}
	for i := 1; i < len(set.CDF); i++ {
		if set.CDF[i].Ms < set.CDF[i-1].Ms || set.CDF[i].Fraction < set.CDF[i-1].Fraction {
			t.Fatalf("CDF not monotone at %d: %v then %v", i, set.CDF[i-1], set.CDF[i])
		}
	}
	if last := set.CDF[len(set.CDF)-1]; last.Fraction != 1 {
		t.Errorf("CDF ends at %v, want fraction 1", last)
	}
	if rows[1].Ops <= 0 || rows[1].P50 <= 0 {
		t.Errorf("GET row %+v has no figures", rows[1])
	}
}

func TestParseRedisBenchmarkRejectsGarbage(t *testing.T) {
	if _, err := parseRedisBenchmark("Could not connect to Redis at 127.0.0.1:1: Connection refused\n"); err == nil {
		t.Fatal("no error for output without a test")
	}
}

// testdata/memcaslap-stats-1.1.txt is memcaslap (libmemcached 1.1) with -S against
// memcached 1.6.18: terminal escapes, per-period tables, the Log2 Dist blocks.
func TestParseMemcaslapWithStats(t *testing.T) {
	r, err := parseMemcaslap(readTestdata(t, "memcaslap-stats-1.1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops != 134537 {
		t.Errorf("ops = %v, want 134537 (the final TPS)", r.Ops)
	}
	// Total: 269055 events; bucket 9, (256,512] µs, holds 181081 of them and the
	// half-way event with 47760 below: 256·2^((134527.5-47760)/181081) µs ≈ 356 µs.
	if math.Abs(r.P50-0.356) > 0.002 {
		t.Errorf("p50 = %v ms, want ≈ 0.356", r.P50)
	}
	if !(r.P50 < r.P99 && r.P99 <= r.P999) || r.P999 > 16.384 {
		t.Errorf("percentiles %v/%v/%v out of order or beyond the last bucket", r.P50, r.P99, r.P999)
	}
	if len(r.CDF) == 0 || r.CDF[len(r.CDF)-1].Fraction != 1 {
		t.Errorf("CDF %v does not end at 1", r.CDF)
	}
}

// Without -S memcaslap prints throughput only: the percentiles are unknown, not zero.
func TestParseMemcaslapWithoutStats(t *testing.T) {
	r, err := parseMemcaslap(readTestdata(t, "memcaslap-1.1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops != 129898 || r.P50 != -1 || r.P99 != -1 {
		t.Errorf("row = %+v, want 129898 ops/s and unknown percentiles", r)
	}
}

func TestLog2Quantile(t *testing.T) {
	b := []float64{0, 0, 0, 0, 10, 10} // 10 events in (8,16] µs, 10 in (16,32]
	if got := log2Quantile(b, 0.5); math.Abs(got-0.016) > 1e-9 {
		t.Errorf("p50 = %v, want 0.016 ms (the bucket boundary)", got)
	}
	if got := log2Quantile(b, 0.25); math.Abs(got-0.008*math.Sqrt2) > 1e-9 {
		t.Errorf("p25 = %v, want 8·√2 µs", got)
	}
	if got := log2Quantile(make([]float64, 3), 0.5); got != -1 {
		t.Errorf("empty = %v, want -1", got)
	}
}

// The layout of memtier_benchmark's ALL STATS table (written from its documented
// format: no memtier_benchmark is installed where these tests were written).
func TestParseMemtier(t *testing.T) {
	out := `ALL STATS
============================================================================================================================
Type         Ops/sec     Hits/sec   Misses/sec    Avg. Latency     p50 Latency     p99 Latency   p99.9 Latency       KB/sec 
----------------------------------------------------------------------------------------------------------------------------
Sets        95000.12          ---          ---         0.52100         0.49500         1.10300         2.39900      7000.00 
Gets            0.00         0.00         0.00             ---             ---             ---             ---         0.00 
Waits           0.00          ---          ---             ---             ---             ---             ---          --- 
Totals      95000.12         0.00         0.00         0.52100         0.49500         1.10300         2.39900      7000.00 
`
	r, err := parseMemtier(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops != 95000.12 || r.P50 != 0.495 || r.P99 != 1.103 || r.P999 != 2.399 {
		t.Errorf("row = %+v", r)
	}
}

func TestRatiosAndBaseline(t *testing.T) {
	rows := []Row{
		{System: "redis-server", Test: "SET -P 1", Ops: 100, P50: -1, P99: -1, P999: -1},
		{System: "nanokv-1", Test: "SET -P 1", Ops: 80, P50: -1, P99: -1, P999: -1, Snapshots: 2},
		{System: "nanokv-1", Test: "GET -P 1", Ops: 90, P50: -1, P99: -1, P999: -1, Errors: 1}, // no baseline in this test
		{System: "nanokv-3", Test: "SET -P 1", Skipped: "skipping nanokv-3"},
	}
	if b := chooseBaseline([]string{"memcached", "redis-server"}, rows); b != "redis-server" {
		t.Fatalf("baseline = %q, want the first listed that was measured", b)
	}
	if b := chooseBaseline([]string{"nanokv-3"}, rows); b != "" {
		t.Fatalf("baseline = %q, want none: a skipped system is no baseline", b)
	}
	got := ratios(rows, "redis-server")
	want := []float64{1, 0.8, -1, -1}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("ratio[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	md := markdownTable(Scenario{Baseline: "redis-server", Rows: rows})
	for _, s := range []string{"| × redis-server |", "| nanokv-1 | SET -P 1 | 80 (2 snapshots) | – | – | – | 0.80 |", "| nanokv-1 | GET -P 1 | 90 (1 error) | – |", "| nanokv-3 | SET -P 1 | skipping nanokv-3 |"} {
		if !strings.Contains(md, s) {
			t.Errorf("table lacks %q:\n%s", s, md)
		}
	}
}

func TestScheduleSpreadsTheRateOverConnections(t *testing.T) {
	const rate, conns = 1000.0, 4
	dur := time.Second
	total := 0
	var all []time.Duration
	for c := 0; c < conns; c++ {
		s := schedule{rate: rate, conns: conns, conn: c}
		n := s.total(dur)
		total += n
		for k := 0; k < n; k++ {
			all = append(all, s.at(k))
			if k > 0 && s.at(k)-s.at(k-1) != 4*time.Millisecond {
				t.Fatalf("conn %d: gap %v at %d, want 4ms", c, s.at(k)-s.at(k-1), k)
			}
		}
	}
	if total != 1000 {
		t.Fatalf("%d requests in 1s at 1000/s, want 1000", total)
	}
	seen := map[time.Duration]bool{}
	for _, at := range all {
		if seen[at] || at < 0 || at >= dur {
			t.Fatalf("send time %v repeated or outside the step", at)
		}
		seen[at] = true
	}
}

func TestScheduleDue(t *testing.T) {
	s := schedule{rate: 1000, conns: 2, conn: 1} // due at 1ms, 3ms, 5ms, ...
	cases := []struct {
		elapsed time.Duration
		want    int
	}{{-time.Millisecond, 0}, {0, 0}, {time.Millisecond - 1, 0}, {time.Millisecond, 1}, {2 * time.Millisecond, 1}, {3 * time.Millisecond, 2}, {100 * time.Millisecond, 50}}
	for _, c := range cases {
		if got := s.due(c.elapsed); got != c.want {
			t.Errorf("due(%v) = %d, want %d", c.elapsed, got, c.want)
		}
	}
}

func TestSweepRatesDouble(t *testing.T) {
	got := sweepRates(10000, 80000)
	want := []float64{10000, 20000, 40000, 80000}
	if len(got) != len(want) {
		t.Fatalf("rates = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("rates = %v, want %v", got, want)
		}
	}
}

func TestSaturated(t *testing.T) {
	if saturated(Row{Offered: 1000, Ops: 990, P99: 1}) {
		t.Error("a system keeping up is not saturated")
	}
	if !saturated(Row{Offered: 1000, Ops: 700, P99: 1}) || !saturated(Row{Offered: 1000, Ops: 1000, P99: 500}) {
		t.Error("falling behind or a 500 ms p99 is saturation")
	}
}

// With several rounds, each system keeps its median round, the ratio is the median of
// the per-round ratios (a slow round slows both systems), and the table lists every
// round.
func TestRoundsKeepTheMedianAndPairTheRatios(t *testing.T) {
	base := medianRound([]Row{
		{System: "memcached", Test: "set", Ops: 100, P50: 1},
		{System: "memcached", Test: "set", Ops: 60, P50: 2}, // the machine was slow
		{System: "memcached", Test: "set", Ops: 110, P50: 3},
	})
	if base.Ops != 100 || base.P50 != 1 || !slices.Equal(base.Rounds, []float64{100, 60, 110}) {
		t.Fatalf("median round %+v, want the 100 one with every round listed", base)
	}
	nk := medianRound([]Row{
		{System: "nanokv-1", Test: "set", Ops: 105},
		{System: "nanokv-1", Test: "set", Failed: "exit status 1"},
		{System: "nanokv-1", Test: "set", Ops: 66},
		{System: "nanokv-1", Test: "set", Ops: 99},
	})
	if nk.Ops != 99 || !slices.Equal(nk.Rounds, []float64{105, 0, 66, 99}) {
		t.Fatalf("median round %+v, want the lower middle of 66, 99, 105, and the failed round as 0", nk)
	}
	if got := medianRound([]Row{{System: "x", Skipped: "skipping x"}, {System: "x", Skipped: "skipping x"}}); got.Skipped == "" {
		t.Fatalf("no round measured: got %+v, want the skip row", got)
	}

	// Paired: 1.05 and 1.15 in the two rounds that both measured, where their medians
	// make 0.99.
	base.Ops, base.Rounds = 100000, []float64{100000, 50000, 0, 110000}
	nk.Ops, nk.Rounds = 99000, []float64{105000, 0, 66000, 126500}
	rows := []Row{base, nk}
	if got := ratios(rows, "memcached"); got[0] != 1 || math.Abs(got[1]-1.10) > 1e-9 {
		t.Fatalf("ratios %v, want 1 and the median of 1.05 and 1.15", got)
	}
	md := markdownTable(Scenario{Baseline: "memcached", Rows: append(rows, Row{System: "nanokv-3", Test: "set", Skipped: "skipping nanokv-3"})})
	for _, s := range []string{"| rounds, ops/s |", "| 1.10 | 105.0k / failed / 66.0k / 126.5k |", "| nanokv-3 | set | skipping nanokv-3 | | | | | |"} {
		if !strings.Contains(md, s) {
			t.Errorf("table lacks %q:\n%s", s, md)
		}
	}
}

// srvr's answer names the server's role, in ZooKeeper 3.8's words and nanokv's; a
// member of an ensemble without quorum names none.
func TestParseZKMode(t *testing.T) {
	for _, tc := range []struct{ srvr, want string }{
		{"Zookeeper version: 3.8.0-debian, built on 2022-03-21\nLatency min/avg/max: 0/0.1/3\n" +
			"Received: 12\nSent: 11\nConnections: 1\nOutstanding: 0\nZxid: 0x100000004\nMode: follower\nNode count: 5\n", "follower"},
		{"Zookeeper version: 3.8.0-nanokv\nZxid: 0x2a\nMode: leader\nNode count: 3\n", "leader"},
		{"Mode: standalone", "standalone"},
		{"This ZooKeeper instance is not currently serving requests\n", ""},
		{"Mode: \n", ""},
	} {
		got, ok := parseZKMode(tc.srvr)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("parseZKMode(%q) = %q, %v; want %q", tc.srvr, got, ok, tc.want)
		}
	}
}
