package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// buildNanokv builds the nanokv binary the members run.
func buildNanokv(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "nanokv")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	out, err := exec.Command(goTool, "build", "-o", exe, "github.com/nanokv/nanokv/cmd/nanokv").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./cmd/nanokv: %v\n%s", err, out)
	}
	return exe
}

// TestBenchHarnessEndToEnd runs every scenario of the harness at a tiny scale: the
// systems that are installed start, tools run, failover kills and restarts a member, and
// results.json, results.md and the plots come out. Figures are not checked (this
// machine is shared); that each scenario measured something is.
func TestBenchHarnessEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers and builds nanokv")
	}
	profiles["tiny"] = profile{rbN: 2000, rbPipelines: []int{1}, mcSecs: 1, mcMixes: []float64{1},
		zkServers: []int{1}, zkClients: []int{1, 2}, zkDur: 500 * time.Millisecond,
		olStart: 2000, olMax: 4000, olStep: 300 * time.Millisecond, olConns: 2,
		failTrials: 1, failNodes: []int{3}, memtierSecs: 1, memtierClient: 2,
		clusterNodes: []int{3}, modes: []string{defaultMode}}
	defer delete(profiles, "tiny")
	out := filepath.Join(t.TempDir(), "out")
	var stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Nanokv: buildNanokv(t), Profile: "tiny", Out: out, Command: "test", Stderr: &stderr})
	t.Logf("progress:\n%s", stderr.String())
	if err != nil {
		t.Fatal(err)
	}

	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got Results
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("results.json does not parse: %v", err)
	}
	var names []string
	for _, sc := range got.Scenarios {
		names = append(names, sc.Name)
	}
	if strings.Join(names, ",") != strings.Join(AllScenarios, ",") {
		t.Fatalf("scenarios %v, want %v", names, AllScenarios)
	}
	if got.Machine.Cores == 0 || got.Machine.Versions["nanokv"] == "" {
		t.Errorf("machine not recorded: %+v", got.Machine)
	}
	measured := func(sc Scenario, system string) bool {
		for _, r := range sc.Rows {
			if r.System == system && r.Ops > 0 && r.Failed == "" && r.Skipped == "" {
				return true
			}
		}
		return false
	}
	installed := func(s *system) bool { return s.missing() == "" }
	for _, sc := range got.Scenarios {
		for _, r := range sc.Rows {
			if r.Failed != "" {
				t.Errorf("%s: %s %s failed: %s", sc.Name, r.System, r.Test, r.Failed)
			}
		}
		switch sc.Name {
		case "redis", "openloop":
			if _, err := exec.LookPath("redis-benchmark"); sc.Name == "redis" && err != nil {
				continue
			}
			if !measured(sc, "nanokv-1") {
				t.Errorf("%s: no figure for nanokv-1: %+v", sc.Name, sc.Rows)
			}
			if installed(redisSystem()) && !measured(sc, "redis-server") {
				t.Errorf("%s: redis-server is installed but has no figure", sc.Name)
			}
			if sc.Name == "redis" {
				checkCPU(t, sc, map[string]int{"redis-server": 1, "nanokv-1": 1, "nanokv-3": 3})
			}
		case "memcache":
			if _, err := exec.LookPath("memcaslap"); err == nil && !measured(sc, "nanokv-1") {
				t.Errorf("memcache: no figure for nanokv-1: %+v", sc.Rows)
			}
		case "zk":
			if installed(zookeeperSystem(1)) && !measured(sc, "zookeeper-1") {
				t.Errorf("zk: ZooKeeper is installed but has no figure: %+v", sc.Rows)
			}
			for _, r := range sc.Rows {
				if r.System == "nanokv-1" && r.Skipped == "" && r.Ops == 0 {
					t.Errorf("zk: nanokv-1 neither measured nor skipped: %+v", r)
				}
				// A one-session row names the role of the server it ran against.
				if r.Ops > 0 && r.Test == "setData, 1 client" && r.Session != "standalone" {
					t.Errorf("zk: %s's one-client row ran against a server in mode %q, want standalone", r.System, r.Session)
				}
			}
		case "failover":
			if len(sc.Failover) != 1 || len(sc.Failover[0].TrialsMs) != 1 {
				t.Errorf("failover: want one trial of nanokv-3, got %+v", sc.Failover)
			}
		}
	}
	if res == nil || len(res.Scenarios) != len(got.Scenarios) {
		t.Error("Run's results differ from results.json")
	}
	md, err := os.ReadFile(filepath.Join(out, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"## redis", "## failover", "cores"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("results.md lacks %q", s)
		}
	}
	pngs, _ := filepath.Glob(filepath.Join(out, "*.png"))
	if len(pngs) == 0 {
		t.Fatal("no plot written")
	}
	for _, p := range pngs {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("%s is not a PNG", p)
		}
	}
}

// checkCPU checks that every measured redis-benchmark row of the systems named in
// members has the CPU per operation of each of its members and of the client.
func checkCPU(t *testing.T, sc Scenario, members map[string]int) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range sc.Rows {
		n, ok := members[r.System]
		if !ok || r.Ops == 0 || r.Tool != "redis-benchmark" {
			continue
		}
		seen[r.System] = true
		switch {
		case r.CPU == nil:
			t.Errorf("%s %s: no CPU per operation", r.System, r.Test)
		case len(r.CPU.Followers) != n-1 || r.CPU.Leader < 0 || r.CPU.Client <= 0:
			t.Errorf("%s %s: CPU per operation %+v, want %d followers and the client's", r.System, r.Test, r.CPU, n-1)
		}
	}
	if !seen["nanokv-3"] {
		t.Errorf("no redis-benchmark figure for nanokv-3: %+v", sc.Rows)
	}
}

// A bad profile or scenario name is an error before anything starts.
func TestBenchRejectsUnknownProfileAndScenario(t *testing.T) {
	if _, err := Run(context.Background(), Config{Nanokv: "x", Profile: "medium"}); err == nil {
		t.Error("profile medium accepted")
	}
	if _, err := Run(context.Background(), Config{Nanokv: "x", Profile: "quick", Scenarios: []string{"etcd"}}); err == nil {
		t.Error("scenario etcd accepted")
	}
}

// A system whose binary is missing is one skip line naming what to install.
func TestMissingPeerIsASkipLine(t *testing.T) {
	s := &system{name: "redisraft-3", binary: "/nonexistent/redisraft.so", hint: "pass --redisraft"}
	if got := s.missing(); !strings.HasPrefix(got, "skipping redisraft-3: ") || !strings.Contains(got, "pass --redisraft") {
		t.Errorf("missing() = %q", got)
	}
	s = &system{name: "x", binary: "no-such-binary-nanokv-bench", hint: "apt-get install x"}
	if got := s.missing(); !strings.Contains(got, "apt-get install x") {
		t.Errorf("missing() = %q", got)
	}
}

// TestBenchResultsDirParses checks the output of a real `nanokv bench` run (CI runs
// --quick and points NANOKV_BENCH_RESULTS at its --out): results.json parses and has
// every scenario, results.md has a table per scenario, and a plot is there.
func TestBenchResultsDirParses(t *testing.T) {
	dir := os.Getenv("NANOKV_BENCH_RESULTS")
	if dir == "" {
		t.Skip("NANOKV_BENCH_RESULTS not set")
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	var names []string
	for _, sc := range r.Scenarios {
		names = append(names, sc.Name)
		for _, row := range sc.Rows {
			if row.Failed != "" {
				t.Errorf("%s: %s %s failed: %s", sc.Name, row.System, row.Test, row.Failed)
			}
		}
	}
	if strings.Join(names, ",") != strings.Join(AllScenarios, ",") {
		t.Fatalf("scenarios %v, want %v", names, AllScenarios)
	}
	md, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range AllScenarios {
		if !strings.Contains(string(md), "## "+name+":") {
			t.Errorf("results.md has no section %q", name)
		}
	}
	if pngs, _ := filepath.Glob(filepath.Join(dir, "*.png")); len(pngs) == 0 {
		t.Error("no plot")
	}
}

// A start that failed because a member's port was taken meanwhile is tried again, on a
// directory of its own; any other failure, and the third taken port, are final.
func TestStartRetriesOnlyATakenPort(t *testing.T) {
	h := &harness{prog: newProgress(io.Discard)}
	taken := &exitedError{name: "n/node4", tail: "nanokv: listen tcp 127.0.0.1:39495: bind: address already in use"}
	run := func(errs ...error) (calls int, dirs []string, err error) {
		s := &system{name: "n", start: func(_ context.Context, _ *harness, _ *system, dir string) (*instance, error) {
			calls++
			dirs = append(dirs, dir)
			if calls <= len(errs) && errs[calls-1] != nil {
				return nil, errs[calls-1]
			}
			return &instance{}, nil
		}}
		_, err = startRetrying(context.Background(), h, s, t.TempDir())
		return calls, dirs, err
	}
	if calls, dirs, err := run(taken); err != nil || calls != 2 || dirs[0] == dirs[1] {
		t.Errorf("one taken port: %d starts in %q, err %v; want 2 starts in two dirs, no error", calls, dirs, err)
	}
	if calls, _, err := run(taken, taken, taken); err == nil || calls != startTries {
		t.Errorf("taken every time: %d starts, err %v; want %d and the error", calls, err, startTries)
	}
	other := &exitedError{name: "n/node1", tail: "nanokv: --peers: bad"}
	if calls, _, err := run(other); err == nil || calls != 1 {
		t.Errorf("another failure: %d starts, err %v; want 1 and the error", calls, err)
	}
	if calls, _, err := run(errors.New("not ready")); err == nil || calls != 1 {
		t.Errorf("a plain error: %d starts, err %v; want 1 and the error", calls, err)
	}
}

// Rounds run the systems in turn, round after round, and keep each system's median
// round with every round's throughput.
func TestRoundsAlternateTheSystems(t *testing.T) {
	h := &harness{prog: newProgress(io.Discard), tmp: t.TempDir(), cfg: Config{Rounds: 3}}
	var ran []string
	sys := func(name string) *system {
		return &system{name: name, start: func(_ context.Context, _ *harness, s *system, _ string) (*instance, error) {
			return &instance{sys: s}, nil
		}}
	}
	ops := map[string][]float64{"a": {10, 30, 20}, "b": {5, 4, 6}}
	rows := h.rounds(context.Background(), "test", []*system{sys("a"), sys("b")}, "t",
		func(_ context.Context, in *instance, _ string) ([]Row, error) {
			n := 0
			for _, r := range ran {
				if r == in.sys.name {
					n++
				}
			}
			ran = append(ran, in.sys.name)
			return []Row{{Test: "t", Ops: ops[in.sys.name][n]}}, nil
		})
	if got := strings.Join(ran, ","); got != "a,b,a,b,a,b" {
		t.Fatalf("ran %s, want the systems in turn, three times", got)
	}
	if len(rows) != 2 || rows[0].System != "a" || rows[0].Ops != 20 || rows[1].System != "b" || rows[1].Ops != 5 {
		t.Fatalf("rows %+v, want a's median round (20) and b's (5)", rows)
	}
	if !slices.Equal(rows[0].Rounds, []float64{10, 30, 20}) || !slices.Equal(rows[1].Rounds, []float64{5, 4, 6}) {
		t.Fatalf("rounds %v and %v, want every round in the order run", rows[0].Rounds, rows[1].Rounds)
	}
}

// The snapshots a row reports are the members' own count (INFO persistence rdb_saves):
// a SAVE of a single node's one write is one.
func TestSnapshotsAreCounted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts nanokv")
	}
	h := &harness{cfg: Config{Nanokv: buildNanokv(t)}, prog: newProgress(io.Discard)}
	defer h.procs.killAll()
	in, err := startRetrying(context.Background(), h, nanokvSystem(1, defaultMode, protoRedis), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer in.stop()
	if n := in.snapshots(); n != 0 {
		t.Fatalf("a fresh node wrote %d snapshots", n)
	}
	rc, err := dialRESP(in.members[0].redis, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if r, err := rc.do(10*time.Second, "SET", "k", "v"); err != nil || r != "OK" {
		t.Fatalf("SET: %q %v", r, err)
	}
	if r, err := rc.do(10*time.Second, "SAVE"); err != nil || r != "OK" {
		t.Fatalf("SAVE: %q %v", r, err)
	}
	if n := in.snapshots(); n != 1 {
		t.Fatalf("after a SAVE: %d snapshots, want 1", n)
	}
}
