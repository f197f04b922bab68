package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Results is everything a run measured; results.json is this, indented.
type Results struct {
	Profile   string     `json:"profile"`
	Command   string     `json:"command"`
	Started   time.Time  `json:"started"`
	Seconds   float64    `json:"seconds"`
	Machine   Machine    `json:"machine"`
	Baselines []string   `json:"baselines"`
	Skipped   []string   `json:"skipped"` // one line per system or tool that could not run
	Scenarios []Scenario `json:"scenarios"`
}

// Scenario is one table of the report.
type Scenario struct {
	Name     string     `json:"name"`
	Title    string     `json:"title"`
	Settings string     `json:"settings"`
	Note     string     `json:"note,omitempty"`
	Baseline string     `json:"baseline,omitempty"` // the system the ratios are to
	Rows     []Row      `json:"rows,omitempty"`
	Failover []Failover `json:"failover,omitempty"`
	Plots    []string   `json:"plots,omitempty"`
}

// Machine is what the figures were measured on.
type Machine struct {
	Cores    int               `json:"cores"`
	CPU      string            `json:"cpu"`
	MemoryMB int               `json:"memory_mb"`
	Kernel   string            `json:"kernel"`
	LoadAvg  string            `json:"load_avg_at_start"`
	Versions map[string]string `json:"versions"` // every peer and tool, "not installed" if absent
}

// probeMachine records the machine and the version of every peer.
func probeMachine(nanokv, redisRaft string) Machine {
	m := Machine{Cores: runtime.NumCPU(), Versions: map[string]string{}}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if mm := regexp.MustCompile(`(?m)^model name\s*:\s*(.+)$`).FindSubmatch(b); mm != nil {
			m.CPU = strings.TrimSpace(string(mm[1]))
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if mm := regexp.MustCompile(`MemTotal:\s+([0-9]+) kB`).FindSubmatch(b); mm != nil {
			kb, _ := strconv.Atoi(string(mm[1]))
			m.MemoryMB = kb / 1024
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	m.Versions["go"] = runtime.Version()
	m.Versions["nanokv"] = firstMatch(nanokv, []string{"--version"}, `nanokv (\S+)`)
	m.Versions["redis-server"] = firstMatch("redis-server", []string{"--version"}, `v=(\S+)`)
	m.Versions["redis-benchmark"] = firstMatch("redis-benchmark", []string{"--version"}, `redis-benchmark (\S+)`)
	m.Versions["memcached"] = firstMatch("memcached", []string{"-V"}, `memcached (\S+)`)
	m.Versions["memcaslap"] = firstMatch("memcaslap", []string{"--version"}, `(\d+\.\d+\S*)`)
	m.Versions["memtier_benchmark"] = firstMatch("memtier_benchmark", []string{"--version"}, `memtier_benchmark (\S+)`)
	m.Versions["etcd"] = firstMatch("etcd", []string{"--version"}, `etcd Version: (\S+)`)
	m.Versions["java"] = firstMatch("java", []string{"-version"}, `version "([^"]+)"`)
	m.Versions["zookeeper"] = "not installed"
	if _, err := os.Stat(zkJar); err == nil {
		m.Versions["zookeeper"] = "installed"
		jars, _ := filepath.Glob(filepath.Join(filepath.Dir(zkJar), "zookeeper-[0-9]*.jar"))
		for _, j := range jars {
			if mm := regexp.MustCompile(`zookeeper-([0-9.]+)\.jar$`).FindStringSubmatch(j); mm != nil {
				m.Versions["zookeeper"] = mm[1]
			}
		}
	}
	if redisRaft != "" {
		m.Versions["redisraft"] = redisRaft
	}
	return m
}

// firstMatch runs a version command and returns the first submatch of re in its output.
func firstMatch(bin string, args []string, re string) string {
	if bin == "" {
		return "not installed"
	}
	if _, err := exec.LookPath(bin); err != nil {
		return "not installed"
	}
	out, _ := exec.Command(bin, args...).CombinedOutput()
	if mm := regexp.MustCompile(re).FindStringSubmatch(string(out)); mm != nil {
		return mm[1]
	}
	return strings.TrimSpace(lastLines(string(out), 1))
}

// header is the machine line that heads the markdown.
func (m Machine) header() string {
	var vs []string
	for _, k := range []string{"nanokv", "go", "redis-server", "redis-benchmark", "memcached", "memcaslap", "memtier_benchmark", "zookeeper", "java", "etcd", "redisraft"} {
		if v, ok := m.Versions[k]; ok {
			vs = append(vs, k+" "+v)
		}
	}
	return fmt.Sprintf("%d cores (%s), %.1f GiB, %s, load average at start %s; %s",
		m.Cores, m.CPU, float64(m.MemoryMB)/1024, m.Kernel, m.LoadAvg, strings.Join(vs, ", "))
}

// chooseBaseline is the first of the user's baselines that the scenario measured.
func chooseBaseline(baselines []string, rows []Row) string {
	for _, b := range baselines {
		for _, r := range rows {
			if r.System == b && r.Ops > 0 {
				return b
			}
		}
	}
	return ""
}

// ratios gives each row its throughput over the baseline's in the same test (-1 when
// there is none); rows of several rounds (Row.Rounds) pair them (pairedRatio).
func ratios(rows []Row, baseline string) []float64 {
	base := map[string]Row{}
	for _, r := range rows {
		if r.System == baseline && r.Ops > 0 {
			base[r.Test] = r
		}
	}
	out := make([]float64, len(rows))
	for i, r := range rows {
		b, ok := base[r.Test]
		switch {
		case !ok || r.Ops == 0:
			out[i] = -1
		case len(r.Rounds) > 1 && len(r.Rounds) == len(b.Rounds):
			out[i] = pairedRatio(r.Rounds, b.Rounds)
		default:
			out[i] = r.Ops / b.Ops
		}
	}
	return out
}

// pairedRatio is the median over rounds of a system's throughput over the baseline's in
// the same round (rounds where either failed left out): a round run while the machine
// was slow counts against both.
func pairedRatio(ops, base []float64) float64 {
	var rs []float64
	for i := range ops {
		if ops[i] > 0 && base[i] > 0 {
			rs = append(rs, ops[i]/base[i])
		}
	}
	if len(rs) == 0 {
		return -1
	}
	slices.Sort(rs)
	if len(rs)%2 == 1 {
		return rs[len(rs)/2]
	}
	return (rs[len(rs)/2-1] + rs[len(rs)/2]) / 2
}

// fmtRounds lists every round's throughput, in thousands: "133.9k / 145.1k / 146.6k".
func fmtRounds(ops []float64) string {
	parts := make([]string, len(ops))
	for i, v := range ops {
		if v <= 0 {
			parts[i] = "failed"
		} else {
			parts[i] = strconv.FormatFloat(v/1000, 'f', 1, 64) + "k"
		}
	}
	return strings.Join(parts, " / ")
}

func fmtMs(v float64) string {
	switch {
	case v < 0:
		return "–"
	case v < 1:
		return strconv.FormatFloat(v, 'f', 3, 64)
	case v < 100:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// markdownTable renders a scenario's rows: one line per system and test, skipped and
// failed systems included with their reason.
func markdownTable(sc Scenario) string {
	var b strings.Builder
	rs := ratios(sc.Rows, sc.Baseline)
	ratioCol := "ratio"
	if sc.Baseline != "" {
		ratioCol = "× " + sc.Baseline
	}
	offered, rounds, cpu := false, false, false
	for _, r := range sc.Rows {
		offered = offered || r.Offered > 0
		rounds = rounds || len(r.Rounds) > 1
		cpu = cpu || r.CPU != nil
	}
	// A run of several rounds shows each system's median round, the median of the
	// per-round ratios, and every round's throughput. The CPU per operation, where it
	// was measured, is the median round's.
	roundsHdr, roundsSep, roundsEmpty := "", "", ""
	if cpu {
		roundsHdr, roundsSep, roundsEmpty = " CPU µs/op |", "---|", " |"
	}
	if rounds {
		roundsHdr, roundsSep, roundsEmpty = roundsHdr+" rounds, ops/s |", roundsSep+"---|", roundsEmpty+" |"
	}
	switch {
	case len(sc.Rows) == 0:
	case offered:
		fmt.Fprintf(&b, "| system | test | offered/s | ops/s | p50 ms | p99 ms | p99.9 ms | %s |%s\n|---|---|---|---|---|---|---|---|%s\n", ratioCol, roundsHdr, roundsSep)
	default:
		fmt.Fprintf(&b, "| system | test | ops/s | p50 ms | p99 ms | p99.9 ms | %s |%s\n|---|---|---|---|---|---|---|%s\n", ratioCol, roundsHdr, roundsSep)
	}
	for i, r := range sc.Rows {
		if r.Skipped != "" || r.Failed != "" {
			why := r.Skipped
			if r.Failed != "" {
				why = "failed: " + r.Failed
			}
			why = strings.ReplaceAll(why, "|", "/")
			if offered {
				fmt.Fprintf(&b, "| %s | %s | | %s | | | | |%s\n", r.System, r.Test, why, roundsEmpty)
			} else {
				fmt.Fprintf(&b, "| %s | %s | %s | | | | |%s\n", r.System, r.Test, why, roundsEmpty)
			}
			continue
		}
		ratio := "–"
		if rs[i] >= 0 {
			ratio = strconv.FormatFloat(rs[i], 'f', 2, 64)
		}
		ops := strconv.FormatFloat(r.Ops, 'f', 0, 64)
		if r.Errors > 0 {
			ops += " (" + counted(r.Errors, "error") + ")"
		}
		if r.Snapshots > 0 {
			ops += " (" + counted(r.Snapshots, "snapshot") + ")"
		}
		if r.Session == "leader" || r.Session == "follower" {
			ops += " (on the " + r.Session + ")"
		}
		extra := ""
		if cpu {
			extra = " |"
			if r.CPU != nil {
				extra = " " + r.CPU.String() + " |"
			}
		}
		if rounds {
			extra += " " + fmtRounds(r.Rounds) + " |"
		}
		if offered {
			fmt.Fprintf(&b, "| %s | %s | %.0f | %s | %s | %s | %s | %s |%s\n", r.System, r.Test, r.Offered, ops, fmtMs(r.P50), fmtMs(r.P99), fmtMs(r.P999), ratio, extra)
		} else {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |%s\n", r.System, r.Test, ops, fmtMs(r.P50), fmtMs(r.P99), fmtMs(r.P999), ratio, extra)
		}
	}
	if len(sc.Failover) > 0 {
		b.WriteString("| system | trials | failed | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|---|\n")
		for _, f := range sc.Failover {
			switch {
			case f.Skipped != "":
				fmt.Fprintf(&b, "| %s | %s | | | | |\n", f.System, f.Skipped)
			case f.Error != "":
				fmt.Fprintf(&b, "| %s | failed: %s | | | | |\n", f.System, strings.ReplaceAll(f.Error, "|", "/"))
			default:
				fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s |\n", f.System, len(f.TrialsMs)+f.Failed, f.Failed, fmtMs(f.P50), fmtMs(f.P99), fmtMs(f.Max))
			}
		}
	}
	return b.String()
}

// Markdown is the whole report.
func (r *Results) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# nanokv bench — %s profile, %s\n\n", r.Profile, r.Started.UTC().Format("2006-01-02 15:04Z"))
	fmt.Fprintf(&b, "Machine: %s.\n\n", r.Machine.header())
	fmt.Fprintf(&b, "Command: `%s` (%.0f s). Every process ran on this one machine, load generators included.\n\n", r.Command, r.Seconds)
	if len(r.Skipped) > 0 {
		b.WriteString("Skipped:\n\n")
		for _, s := range r.Skipped {
			fmt.Fprintf(&b, "- %s\n", s)
		}
		b.WriteString("\n")
	}
	for _, sc := range r.Scenarios {
		fmt.Fprintf(&b, "## %s\n\n%s\n\n", sc.Title, sc.Settings)
		if sc.Note != "" {
			fmt.Fprintf(&b, "%s\n\n", sc.Note)
		}
		b.WriteString(markdownTable(sc))
		b.WriteString("\n")
		for _, p := range sc.Plots {
			fmt.Fprintf(&b, "![%s](%s)\n", p, p)
		}
		if len(sc.Plots) > 0 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// counted is n of noun: "1 snapshot", "2 snapshots".
func counted(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}
