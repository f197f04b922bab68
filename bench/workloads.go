package bench

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Row is one measurement: a system under one test.
type Row struct {
	System  string  `json:"system"`
	Test    string  `json:"test"`
	Tool    string  `json:"tool,omitempty"`
	Ops     float64 `json:"ops_per_sec"`
	P50     float64 `json:"p50_ms"`  // -1: the tool does not report it
	P99     float64 `json:"p99_ms"`  // -1: not reported
	P999    float64 `json:"p999_ms"` // -1: not reported
	Offered float64 `json:"offered_per_sec,omitempty"`
	Errors  int64   `json:"errors,omitempty"`
	// Snapshots is how many snapshots the members wrote while the tool ran (INFO
	// persistence rdb_saves, summed over them): a write test's figure pays for them.
	Snapshots int64 `json:"snapshots,omitempty"`
	// Session is the role (srvr's Mode) of the server a one-session ZooKeeper load ran
	// against: go-zookeeper picks it at random, and a write through a follower makes
	// another hop, so the figure depends on it.
	Session string `json:"session,omitempty"`
	// CPU is what each process spent per operation, where the workload measures it.
	CPU *CPUPerOp `json:"cpu_us_per_op,omitempty"`
	// CDF is the latency distribution: (latency ms, fraction of requests at or below).
	CDF []CDFPoint `json:"cdf,omitempty"`
	// Rounds is every round's throughput, in the order they ran, when the scenario ran
	// more than one (Config.Rounds; 0 for a round that failed); Ops is the median's.
	Rounds  []float64 `json:"rounds_ops_per_sec,omitempty"`
	Skipped string    `json:"skipped,omitempty"` // why this system has no figure
	Failed  string    `json:"failed,omitempty"`  // the error that ended the run
}

// CDFPoint is one point of a latency CDF.
type CDFPoint struct {
	Ms       float64 `json:"ms"`
	Fraction float64 `json:"fraction"`
}

var (
	rbSection  = regexp.MustCompile(`^====== (.+) ======$`)
	rbPercLine = regexp.MustCompile(`^\s*([0-9.]+)% <= ([0-9.]+) milliseconds`)
	rbRPS      = regexp.MustCompile(`throughput summary: ([0-9.]+) requests per second`)
)

// parseRedisBenchmark reads redis-benchmark's (Redis 7) full output: per test the
// throughput summary, and the two latency blocks ("by percentile distribution", fine in
// the tail, and "cumulative distribution", every 0.1 ms), merged into one CDF from which
// p50/p99/p99.9 are the first listed latency whose fraction reaches each.
func parseRedisBenchmark(out string) ([]Row, error) {
	var rows []Row
	var cur *Row
	inPerc := false
	for _, line := range strings.FieldsFunc(out, func(r rune) bool { return r == '\n' || r == '\r' }) {
		line = strings.TrimRight(line, " ")
		if m := rbSection.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			rows = append(rows, Row{Test: m[1], Tool: "redis-benchmark", P50: -1, P99: -1, P999: -1})
			cur = &rows[len(rows)-1]
			inPerc = false
			continue
		}
		if cur == nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, "Latency by percentile distribution"),
			strings.HasPrefix(line, "Cumulative distribution of latencies"):
			inPerc = true
		case strings.HasPrefix(line, "Summary"):
			inPerc = false
		case inPerc:
			if m := rbPercLine.FindStringSubmatch(line); m != nil {
				pct, _ := strconv.ParseFloat(m[1], 64)
				ms, _ := strconv.ParseFloat(m[2], 64)
				cur.CDF = append(cur.CDF, CDFPoint{Ms: ms, Fraction: pct / 100})
			}
		default:
			if m := rbRPS.FindStringSubmatch(line); m != nil {
				cur.Ops, _ = strconv.ParseFloat(m[1], 64)
			}
		}
	}
	for i := range rows {
		r := &rows[i]
		if r.Ops == 0 || len(r.CDF) == 0 {
			return nil, fmt.Errorf("redis-benchmark: no summary for %s", r.Test)
		}
		sort.SliceStable(r.CDF, func(i, j int) bool {
			a, b := r.CDF[i], r.CDF[j]
			return a.Ms < b.Ms || a.Ms == b.Ms && a.Fraction < b.Fraction
		})
		r.P50, r.P99, r.P999 = cdfQuantile(r.CDF, 0.5), cdfQuantile(r.CDF, 0.99), cdfQuantile(r.CDF, 0.999)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("redis-benchmark: no test in output: %s", lastLines(out, 3))
	}
	return rows, nil
}

// cdfQuantile is the latency of the first point whose fraction reaches q (a small
// epsilon absorbs the three decimals the tools print).
func cdfQuantile(cdf []CDFPoint, q float64) float64 {
	for _, p := range cdf {
		if p.Fraction >= q-1e-9 {
			return p.Ms
		}
	}
	if len(cdf) == 0 {
		return -1
	}
	return cdf[len(cdf)-1].Ms
}

// rbKeyspace is redis-benchmark's -r: SETs and GETs spread over a million keys.
const rbKeyspace = 1000000

// redisBenchmarkArgs is the redis-benchmark command line of a run of one test (set, get).
func redisBenchmarkArgs(addr, test string, clients, pipeline, n, valueSize int) []string {
	host, port, _ := net.SplitHostPort(addr)
	return []string{"redis-benchmark", "-h", host, "-p", port, "-t", test, "-c", strconv.Itoa(clients),
		"-n", strconv.Itoa(n), "-r", strconv.Itoa(rbKeyspace), "-d", strconv.Itoa(valueSize), "-P", strconv.Itoa(pipeline)}
}

// runRedisBenchmark runs SET, then GET, against member leader of in, whose RESP address
// is addr, and names the rows "SET -P n". Each test is a run of its own, so that the
// CPU every process spends (Row.CPU) and the snapshots the members write are the test's.
func runRedisBenchmark(ctx context.Context, in *instance, leader int, addr string, clients, pipeline, n, valueSize int) ([]Row, error) {
	var rows []Row
	for _, test := range []string{"set", "get"} {
		saves := in.snapshots()
		before, beforeErr := in.cpuTimes()
		out, client, err := runToolCPU(ctx, redisBenchmarkArgs(addr, test, clients, pipeline, n, valueSize))
		if err != nil {
			return nil, err
		}
		after, afterErr := in.cpuTimes()
		got, err := parseRedisBenchmark(out)
		if err != nil {
			return nil, err
		}
		if len(got) != 1 {
			return nil, fmt.Errorf("redis-benchmark -t %s: %d tests in its output", test, len(got))
		}
		r := got[0]
		r.Test = fmt.Sprintf("%s -P %d", r.Test, pipeline)
		r.Snapshots = in.snapshots() - saves
		if beforeErr == nil && afterErr == nil {
			r.CPU = perOp(before, after, leader, client, n)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

var (
	mcTPS       = regexp.MustCompile(`Run time: [0-9.]+s Ops: ([0-9]+) TPS: ([0-9]+)`)
	mcTotal     = regexp.MustCompile(`^Total Statistics \(([0-9]+) events\)`)
	mcLog2Row   = regexp.MustCompile(`^\s*([0-9]+):((?:\s+[0-9]+)+)\s*$`)
	ansiControl = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")
)

// parseMemcaslap reads memcaslap's output run with -S: the final TPS line, and the
// "Total Statistics" Log2 Dist block (events per power-of-two microsecond bucket: the row
// "8:" holds buckets 8 to 11, and bucket k counts latencies in (2^(k-1), 2^k] µs, as
// its Min and Max show), from which the percentiles are interpolated geometrically
// inside their bucket — coarse, and said so in the report.
func parseMemcaslap(out string) (Row, error) {
	row := Row{Tool: "memcaslap", P50: -1, P99: -1, P999: -1}
	out = ansiControl.ReplaceAllString(out, "")
	m := mcTPS.FindStringSubmatch(out)
	if m == nil {
		return row, fmt.Errorf("memcaslap: no TPS line: %s", lastLines(out, 3))
	}
	row.Ops, _ = strconv.ParseFloat(m[2], 64)
	var buckets []float64 // buckets[k]: events in (2^(k-1), 2^k] µs
	inTotal, inDist := false, false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case mcTotal.MatchString(line):
			inTotal, inDist, buckets = true, false, nil
		case inTotal && strings.Contains(line, "Log2 Dist:"):
			inDist = true
		case inDist:
			mm := mcLog2Row.FindStringSubmatch(line)
			if mm == nil {
				inTotal, inDist = false, false
				continue
			}
			base, _ := strconv.Atoi(mm[1])
			for j, f := range strings.Fields(mm[2]) {
				c, _ := strconv.ParseFloat(f, 64)
				for len(buckets) <= base+j {
					buckets = append(buckets, 0)
				}
				buckets[base+j] = c
			}
		}
	}
	if len(buckets) > 0 {
		row.CDF = log2CDF(buckets)
		row.P50, row.P99, row.P999 = log2Quantile(buckets, 0.5), log2Quantile(buckets, 0.99), log2Quantile(buckets, 0.999)
	}
	return row, nil
}

// log2CDF is the CDF at each bucket's upper edge, in ms.
func log2CDF(buckets []float64) []CDFPoint {
	total := 0.0
	for _, c := range buckets {
		total += c
	}
	var cdf []CDFPoint
	cum := 0.0
	for k, c := range buckets {
		if c == 0 && cum == 0 {
			continue
		}
		cum += c
		cdf = append(cdf, CDFPoint{Ms: math.Ldexp(1, k) / 1000, Fraction: cum / total})
	}
	return cdf
}

// log2Quantile interpolates quantile q geometrically within its power-of-two bucket; ms.
func log2Quantile(buckets []float64, q float64) float64 {
	total := 0.0
	for _, c := range buckets {
		total += c
	}
	if total == 0 {
		return -1
	}
	target, cum := q*total, 0.0
	for k, c := range buckets {
		if c > 0 && cum+c >= target {
			f := (target - cum) / c
			return math.Ldexp(1, k-1) * math.Pow(2, f) / 1000
		}
		cum += c
	}
	return math.Ldexp(1, len(buckets)-1) / 1000
}

// memcaslapConfig is memcaslap's -F file: 16-byte keys, valueSize-byte values, and the
// set:get proportions.
func memcaslapConfig(valueSize int, setFrac float64) string {
	return fmt.Sprintf("key\n16 16 1\nvalue\n%d %d 1\ncmd\n0 %g\n1 %g\n", valueSize, valueSize, setFrac, 1-setFrac)
}

// runMemcaslap runs memcaslap -T 1 -c conc for secs seconds with stats at the end.
func runMemcaslap(ctx context.Context, dir, addr string, conc, secs, valueSize int, setFrac float64) (Row, error) {
	cfg := filepath.Join(dir, fmt.Sprintf("memcaslap-%g.cnf", setFrac))
	if err := os.WriteFile(cfg, []byte(memcaslapConfig(valueSize, setFrac)), 0o644); err != nil {
		return Row{}, err
	}
	t := fmt.Sprintf("%ds", secs)
	out, err := runTool(ctx, []string{"memcaslap", "-s", addr, "-T", "1", "-c", strconv.Itoa(conc), "-t", t, "-S", t, "-F", cfg})
	if err != nil {
		return Row{}, err
	}
	if strings.Contains(strings.ToLower(out), "error") {
		return Row{}, fmt.Errorf("memcaslap reported errors: %s", lastLines(out, 3))
	}
	return parseMemcaslap(out)
}

// parseMemtier reads the "ALL STATS" table of memtier_benchmark: the header names the
// columns ("Ops/sec", "p50 Latency", "p99 Latency", "p99.9 Latency"), the Totals line
// holds the figures.
func parseMemtier(out string) (Row, error) {
	row := Row{Tool: "memtier_benchmark", P50: -1, P99: -1, P999: -1}
	var header []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "Ops/sec") && strings.HasPrefix(strings.TrimSpace(line), "Type") {
			header = splitColumns(line)
			continue
		}
		if header == nil || !strings.HasPrefix(strings.TrimSpace(line), "Totals") {
			continue
		}
		vals := strings.Fields(line)
		for i, h := range header {
			if i >= len(vals) {
				break
			}
			v, err := strconv.ParseFloat(vals[i], 64)
			if err != nil {
				continue
			}
			switch strings.ToLower(h) {
			case "ops/sec":
				row.Ops = v
			case "p50 latency":
				row.P50 = v
			case "p99 latency":
				row.P99 = v
			case "p99.9 latency":
				row.P999 = v
			}
		}
		if row.Ops > 0 {
			return row, nil
		}
	}
	return row, fmt.Errorf("memtier_benchmark: no Totals line: %s", lastLines(out, 3))
}

// splitColumns splits a header on runs of two or more spaces ("Avg. Latency" is one
// column).
func splitColumns(line string) []string {
	var cols []string
	for _, f := range regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1) {
		if f != "" {
			cols = append(cols, f)
		}
	}
	return cols
}

// runMemtier runs memtier_benchmark writes-only with distinct client seeds.
func runMemtier(ctx context.Context, addr, protocol string, clients, secs, valueSize int) (Row, error) {
	host, port, _ := net.SplitHostPort(addr)
	out, err := runTool(ctx, []string{"memtier_benchmark", "-s", host, "-p", port, "--protocol=" + protocol,
		"-t", "1", "-c", strconv.Itoa(clients), "--ratio=1:0", "--test-time=" + strconv.Itoa(secs),
		"-d", strconv.Itoa(valueSize), "--key-maximum=100000", "--distinct-client-seed", "--hide-histogram"})
	if err != nil {
		return Row{}, err
	}
	return parseMemtier(out)
}

// sortedCopy returns xs sorted ascending.
func sortedCopy(xs []float64) []float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s
}

// quantile of sorted xs by nearest rank.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return -1
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}
