// Package bench is nanokv's benchmark harness: it starts nanokv (N members, each
// --mode) and the systems it is judged against — redis-server, memcached, a ZooKeeper
// ensemble, RedisRaft — on loopback in temp dirs, drives them with the tools their users
// trust (redis-benchmark, memtier_benchmark, memcaslap) and with built-in generators
// (ZooKeeper setData, an open-loop RESP sweep, kill -9 failover), and writes the
// comparison as markdown tables, JSON and PNG plots. `nanokv bench` is its command line.
//
// Every process it starts runs in a process group of its own and is stopped on the way
// out, on a failed scenario and on SIGINT/SIGTERM. A system or tool that is not installed
// is one "skipping X: install Y" line and a row saying so, never a crash.
package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config is what `nanokv bench` passes in.
type Config struct {
	Nanokv    string   // the nanokv binary the members run (cmd passes os.Executable)
	Profile   string   // "quick" or "full"
	Out       string   // output directory; "" makes bench-results/<timestamp>
	Baselines []string // per scenario the first of these it measured is the ratios' base
	Scenarios []string // run only these (empty: all)
	Systems   []string // run only systems whose name contains one of these (empty: all)
	RedisRaft string   // path of redisraft.so; "" leaves RedisRaft out
	ValueSize int      // bytes per value for redis-benchmark, memcaslap, memtier, open loop
	// Rounds runs the redis, memcache and zk scenarios this many times, the systems
	// taking turns round by round, and reports each system's median round (default 1).
	Rounds  int
	Command string // the command line, recorded in the report
	Stdout  io.Writer
	Stderr  io.Writer
}

// DefaultBaselines: Redis for RESP, memcached for memcache, 3-server ZooKeeper for zk.
var DefaultBaselines = []string{"redis-server", "memcached", "zookeeper-3", "zookeeper-1"}

// AllScenarios in the order they run.
var AllScenarios = []string{"redis", "memcache", "zk", "openloop", "failover"}

// profile is the size of every scenario.
type profile struct {
	rbN           int // redis-benchmark -n
	rbPipelines   []int
	clusterNodes  []int    // nanokv cluster sizes besides the single node
	modes         []string // --mode of the clusters
	mcSecs        int
	mcMixes       []float64 // memcaslap set fractions
	zkServers     []int
	zkClients     []int
	zkDur         time.Duration
	olStart       float64
	olMax         float64
	olStep        time.Duration
	olConns       int
	olClusters    bool // sweep a 3-member cluster too
	failTrials    int
	failNodes     []int
	memtierSecs   int
	memtierClient int
}

var profiles = map[string]profile{
	// quick: the whole harness end to end in well under two minutes on two cores.
	"quick": {rbN: 20000, rbPipelines: []int{1, 16}, clusterNodes: []int{3}, modes: []string{"offload", "raft", "lowi"},
		mcSecs: 2, mcMixes: []float64{1}, zkServers: []int{1}, zkClients: []int{1, 8}, zkDur: 2 * time.Second,
		olStart: 5000, olMax: 20000, olStep: time.Second, olConns: 4,
		failTrials: 3, failNodes: []int{3}, memtierSecs: 2, memtierClient: 25},
	"full": {rbN: 1000000, rbPipelines: []int{1, 16}, clusterNodes: []int{3, 5}, modes: []string{"offload", "raft", "lowi"},
		mcSecs: 10, mcMixes: []float64{1, 0.1}, zkServers: []int{1, 3}, zkClients: []int{1, 32}, zkDur: 10 * time.Second,
		olStart: 10000, olMax: 320000, olStep: 5 * time.Second, olConns: 8, olClusters: true,
		failTrials: 20, failNodes: []int{3, 5}, memtierSecs: 10, memtierClient: 25},
}

// harness is one run.
type harness struct {
	cfg     Config
	prof    profile
	procs   procs
	tmp     string
	out     string
	res     *Results
	prog    *progress
	skipped map[string]bool
}

// Run runs the profile's scenarios, writes results.json, results.md and the plots into
// the output directory, and stops every process it started whatever happens. A SIGINT or
// SIGTERM ends the run early; what was measured so far is still written.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	prof, ok := profiles[cfg.Profile]
	if !ok {
		return nil, fmt.Errorf("bench: profile %q: want quick or full", cfg.Profile)
	}
	for _, s := range cfg.Scenarios {
		if !contains(AllScenarios, s) {
			return nil, fmt.Errorf("bench: scenario %q: want one of %s", s, strings.Join(AllScenarios, ", "))
		}
	}
	if cfg.ValueSize <= 0 {
		cfg.ValueSize = 32
	}
	cfg.Rounds = max(cfg.Rounds, 1)
	if len(cfg.Baselines) == 0 {
		cfg.Baselines = DefaultBaselines
	}
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	if cfg.Nanokv == "" {
		return nil, errors.New("bench: no nanokv binary")
	}
	started := time.Now()
	out := cfg.Out
	if out == "" {
		out = filepath.Join("bench-results", started.Format("20060102-150405"))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "nanokv-bench-")
	if err != nil {
		return nil, err
	}
	ctx, stopSignals := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stopSignals()
	h := &harness{cfg: cfg, prof: prof, tmp: tmp, out: out, skipped: map[string]bool{},
		res: &Results{Profile: cfg.Profile, Command: cfg.Command, Started: started, Baselines: cfg.Baselines, Skipped: []string{}}}
	h.res.Machine = probeMachine(cfg.Nanokv, cfg.RedisRaft)
	h.prog = newProgress(cfg.Stderr)
	defer func() {
		h.prog.close()
		h.procs.killAll()
		os.RemoveAll(tmp)
	}()
	fmt.Fprintf(cfg.Stderr, "nanokv bench --%s: %s\n", cfg.Profile, h.res.Machine.header())
	var runErr error
	for _, name := range AllScenarios {
		if len(cfg.Scenarios) > 0 && !contains(cfg.Scenarios, name) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		sc, err := h.runScenario(ctx, name)
		if sc != nil {
			h.res.Scenarios = append(h.res.Scenarios, *sc)
		}
		if err != nil {
			runErr = err
			break
		}
	}
	if ctx.Err() != nil && runErr == nil {
		runErr = fmt.Errorf("bench: interrupted: %w", ctx.Err())
	}
	h.res.Seconds = time.Since(started).Seconds()
	h.prog.close()
	if err := h.write(); err != nil && runErr == nil {
		runErr = err
	}
	fmt.Fprintf(cfg.Stdout, "%s\nresults in %s (results.json, results.md, *.png)\n", h.res.Markdown(), out)
	return h.res, runErr
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// wanted applies --systems.
func (h *harness) wanted(s *system) bool {
	if len(h.cfg.Systems) == 0 {
		return true
	}
	for _, f := range h.cfg.Systems {
		if strings.Contains(s.name, f) {
			return true
		}
	}
	return false
}

// skip prints a skip line once per run and records it.
func (h *harness) skip(line string) {
	if h.skipped[line] {
		return
	}
	h.skipped[line] = true
	h.res.Skipped = append(h.res.Skipped, line)
	h.prog.println(line)
}

// toolMissing returns a skip line when a load tool is not installed.
func toolMissing(tool, hint string) string {
	if _, err := exec.LookPath(tool); err != nil {
		return "skipping " + tool + ": install it (" + hint + ")"
	}
	return ""
}

// workload runs a scenario's load against one started system.
type workload func(ctx context.Context, in *instance, dir string) ([]Row, error)

// each starts every system in turn, runs w against it, stops it, and returns the rows
// with skipped and failed systems as rows of their own.
func (h *harness) each(ctx context.Context, scenario string, systems []*system, test string, w workload) []Row {
	var rows []Row
	for _, s := range systems {
		if !h.wanted(s) {
			continue
		}
		if ctx.Err() != nil {
			return rows
		}
		if line := s.missing(); line != "" {
			h.skip(line)
			rows = append(rows, Row{System: s.name, Test: test, Skipped: line})
			continue
		}
		h.prog.set(scenario, s.name, "starting")
		dir, err := os.MkdirTemp(h.tmp, s.name+"-")
		if err != nil {
			rows = append(rows, Row{System: s.name, Test: test, Failed: err.Error()})
			continue
		}
		in, err := startRetrying(ctx, h, s, dir)
		if err != nil {
			var se *skipError
			if errors.As(err, &se) {
				h.skip(se.reason)
				rows = append(rows, Row{System: s.name, Test: test, Skipped: se.reason})
			} else if ctx.Err() == nil {
				h.prog.println(fmt.Sprintf("%s: %s failed to start: %v", scenario, s.name, err))
				rows = append(rows, Row{System: s.name, Test: test, Failed: "start: " + err.Error()})
			}
			continue
		}
		got, err := w(ctx, in, dir)
		in.stop()
		for i := range got {
			got[i].System = s.name
		}
		rows = append(rows, got...)
		if err != nil && ctx.Err() == nil {
			h.prog.println(fmt.Sprintf("%s: %s: %v", scenario, s.name, err))
			rows = append(rows, Row{System: s.name, Test: test, Failed: err.Error()})
		}
	}
	return rows
}

// rounds is each, cfg.Rounds times: every system runs once per round, in turn, so that a
// machine whose speed drifts (a shared host) slows every system alike. Each system and
// test keeps its median round (the lower middle one of an even count), with every
// round's throughput in Row.Rounds, from which the report's ratios pair the rounds.
func (h *harness) rounds(ctx context.Context, scenario string, systems []*system, test string, w workload) []Row {
	if h.cfg.Rounds <= 1 {
		return h.each(ctx, scenario, systems, test, w)
	}
	type key struct{ system, test string }
	var order []key
	runs := map[key][]Row{}
	for r := 0; r < h.cfg.Rounds && ctx.Err() == nil; r++ {
		for _, row := range h.each(ctx, scenario, systems, test, w) {
			k := key{row.System, row.Test}
			if _, seen := runs[k]; !seen {
				order = append(order, k)
			}
			runs[k] = append(runs[k], row)
		}
	}
	rows := make([]Row, 0, len(order))
	for _, k := range order {
		rows = append(rows, medianRound(runs[k]))
	}
	return rows
}

// medianRound is the round of median throughput among those that measured something,
// with Rounds set to each one's throughput in the order they ran (0 for a round that
// failed); the first row when none did.
func medianRound(runs []Row) Row {
	var ok []Row
	var ops []float64
	for _, r := range runs {
		if r.Skipped == "" && r.Failed == "" {
			ok = append(ok, r)
			ops = append(ops, r.Ops)
		} else {
			ops = append(ops, 0)
		}
	}
	if len(ok) == 0 {
		return runs[0]
	}
	slices.SortStableFunc(ok, func(a, b Row) int { return cmp.Compare(a.Ops, b.Ops) })
	m := ok[(len(ok)-1)/2]
	m.Rounds = ops
	return m
}

// startTries bounds the starts of one system that fail on a port taken meanwhile.
const startTries = 3

// startRetrying starts s, again (on fresh ports) when a process exited because its port
// was taken between freePort's close and its bind: the members of a cluster dial each
// other while later members start, and each dial takes an ephemeral port, which may be
// one picked for a member not yet bound (seen once: a 5-member start in a --full run).
func startRetrying(ctx context.Context, h *harness, s *system, dir string) (*instance, error) {
	for try := 1; ; try++ {
		in, err := s.start(ctx, h, s, dir)
		var ee *exitedError
		if err == nil || try == startTries || !errors.As(err, &ee) || !ee.portTaken() {
			return in, err
		}
		h.prog.println(fmt.Sprintf("%s: a port was taken while starting; starting again (%v)", s.name, err))
		sub, merr := os.MkdirTemp(dir, fmt.Sprintf("try%d-", try+1))
		if merr != nil {
			return nil, err
		}
		dir = sub
	}
}

// leaderAddr is the address clients of proto should use: the leader's.
func leaderAddr(ctx context.Context, in *instance, proto string) (string, error) {
	_, addr, err := leaderOf(ctx, in, proto)
	return addr, err
}

// leaderOf is the index of the member that leads and its address for proto.
func leaderOf(ctx context.Context, in *instance, proto string) (int, string, error) {
	i, err := in.leader(ctx, 20*time.Second)
	if err != nil {
		return 0, "", err
	}
	return i, in.endpoints(proto)[i], nil
}

func (h *harness) redisSystems() []*system {
	systems := []*system{redisSystem(), nanokvSystem(1, defaultMode, protoRedis)}
	for _, n := range h.prof.clusterNodes {
		for _, m := range h.prof.modes {
			systems = append(systems, nanokvSystem(n, m, protoRedis))
		}
	}
	if h.cfg.RedisRaft != "" {
		systems = append(systems, redisRaftSystem(h.cfg.RedisRaft, 3))
	}
	return systems
}

// runScenario runs one scenario. Only an interruption is an error: a system that fails is
// a row saying so.
func (h *harness) runScenario(ctx context.Context, name string) (*Scenario, error) {
	p, vs := h.prof, h.cfg.ValueSize
	sc := &Scenario{Name: name}
	switch name {
	case "redis":
		sc.Title = "redis: redis-benchmark SET/GET"
		sc.Settings = fmt.Sprintf("redis-benchmark -t set, then -t get, -c 50 -n %d -r %d -d %d -P {%s}, against the leader; "+
			"nanokv members keep a WAL (--fsync everysec), redis-server has no persistence (its best case). "+
			"p99.9 is the first percentile redis-benchmark lists at or above 99.9%%. "+
			"CPU µs/op is the user + system time per request of the leader (or the server), each follower "+
			"(/proc/<pid>/stat, in 10 ms ticks) and redis-benchmark (its rusage).", p.rbN, rbKeyspace, vs, joinInts(p.rbPipelines))
		if line := toolMissing("redis-benchmark", "apt-get install redis-tools"); line != "" {
			h.skip(line)
			sc.Rows = []Row{{System: "(all)", Test: "redis-benchmark", Skipped: line}}
			break
		}
		memtier := toolMissing("memtier_benchmark", "no Debian package: build github.com/RedisLabs/memtier_benchmark")
		if memtier != "" {
			h.skip(memtier)
		} else {
			sc.Settings += fmt.Sprintf(" memtier_benchmark --protocol=redis -t 1 -c %d --ratio=1:0 --distinct-client-seed, %d s.", p.memtierClient, p.memtierSecs)
		}
		sc.Rows = h.rounds(ctx, name, h.redisSystems(), "SET/GET", func(ctx context.Context, in *instance, dir string) ([]Row, error) {
			leader, addr, err := leaderOf(ctx, in, protoRedis)
			if err != nil {
				return nil, err
			}
			var rows []Row
			for _, pl := range p.rbPipelines {
				h.prog.set(name, in.sys.name, fmt.Sprintf("redis-benchmark -P %d", pl))
				got, err := runRedisBenchmark(ctx, in, leader, addr, 50, pl, p.rbN, vs)
				if err != nil && strings.Contains(err.Error(), "MOVED") {
					// Leadership moved under load (two shared cores can starve a
					// heartbeat): find the new leader and run this step once more.
					h.prog.println(fmt.Sprintf("%s: %s: leader changed during redis-benchmark -P %d; once more against the new leader", name, in.sys.name, pl))
					if leader, addr, err = leaderOf(ctx, in, protoRedis); err != nil {
						return rows, err
					}
					got, err = runRedisBenchmark(ctx, in, leader, addr, 50, pl, p.rbN, vs)
				}
				if err != nil {
					return rows, err
				}
				rows = append(rows, got...)
			}
			if memtier == "" {
				h.prog.set(name, in.sys.name, "memtier_benchmark")
				r, err := runMemtier(ctx, addr, "redis", p.memtierClient, p.memtierSecs, vs)
				r.Test = "memtier SET"
				if err != nil {
					return rows, err
				}
				rows = append(rows, r)
			}
			return rows, nil
		})
		if memtier != "" {
			sc.Rows = append(sc.Rows, Row{System: "(all)", Test: "memtier SET", Skipped: memtier})
		}
	case "memcache":
		sc.Title = "memcache: memcaslap (and memtier_benchmark memcache_text)"
		sc.Settings = fmt.Sprintf("memcaslap -T 1 -c 50 -t %ds, 16-byte keys, %d-byte values, against the leader; memcached -t 1 -m 1024 (it keeps every key, as nanokv does).", p.mcSecs, vs)
		sc.Note = "memcaslap reports latency only as power-of-two buckets: its p50/p99/p99.9 are interpolated inside the bucket (±40%)."
		systems := []*system{memcachedSystem(), nanokvSystem(1, defaultMode, protoMemcache)}
		for _, n := range p.clusterNodes {
			systems = append(systems, nanokvSystem(n, defaultMode, protoMemcache))
		}
		mcslap := toolMissing("memcaslap", "apt-get install libmemcached-tools")
		memtier := toolMissing("memtier_benchmark", "no Debian package: build github.com/RedisLabs/memtier_benchmark")
		for _, l := range []string{mcslap, memtier} {
			if l != "" {
				h.skip(l)
			}
		}
		if mcslap != "" && memtier != "" {
			sc.Rows = []Row{{System: "(all)", Test: "memcaslap", Skipped: mcslap}}
			break
		}
		sc.Rows = h.rounds(ctx, name, systems, "memcaslap", func(ctx context.Context, in *instance, dir string) ([]Row, error) {
			addr, err := leaderAddr(ctx, in, protoMemcache)
			if err != nil {
				return nil, err
			}
			var rows []Row
			for _, mix := range p.mcMixes {
				if mcslap != "" {
					break
				}
				test := "memcaslap set"
				if mix < 1 {
					test = fmt.Sprintf("memcaslap %g:1 get:set", (1-mix)/mix)
				}
				h.prog.set(name, in.sys.name, test)
				saves := in.snapshots()
				r, err := runMemcaslap(ctx, dir, addr, 50, p.mcSecs, vs, mix)
				r.Test, r.Snapshots = test, in.snapshots()-saves
				if err != nil {
					return rows, err
				}
				rows = append(rows, r)
			}
			if memtier == "" {
				h.prog.set(name, in.sys.name, "memtier_benchmark memcache_text")
				r, err := runMemtier(ctx, addr, "memcache_text", p.memtierClient, p.memtierSecs, vs)
				r.Test = "memtier set"
				if err != nil {
					return rows, err
				}
				rows = append(rows, r)
			}
			return rows, nil
		})
		if memtier != "" {
			sc.Rows = append(sc.Rows, Row{System: "(all)", Test: "memtier set", Skipped: memtier})
		}
	case "zk":
		sc.Title = "zk: setData, built-in ZooKeeper load generator"
		sc.Settings = fmt.Sprintf("go-zookeeper, one session per client spread over the servers, each setData of %d bytes on its own znode "+
			"in a closed loop, %v per step, clients {%s}; ZooKeeper with forceSync=no; latency of every call in an HdrHistogram. "+
			"A one-client row of a cluster says whether its session was on the leader or on a follower (srvr's Mode), which "+
			"go-zookeeper picks at random: a write through a follower makes another hop.",
			zkValueSize, p.zkDur, joinInts(p.zkClients))
		var systems []*system
		for _, n := range p.zkServers {
			systems = append(systems, zookeeperSystem(n))
		}
		systems = append(systems, nanokvSystem(1, defaultMode, protoZK))
		for _, n := range p.zkServers {
			if n > 1 {
				systems = append(systems, nanokvSystem(n, defaultMode, protoZK))
			}
		}
		sc.Rows = h.rounds(ctx, name, systems, "setData", func(ctx context.Context, in *instance, dir string) ([]Row, error) {
			var rows []Row
			for _, c := range p.zkClients {
				h.prog.set(name, in.sys.name, fmt.Sprintf("setData, %d clients", c))
				r, err := zkLoad(ctx, in.endpoints(protoZK), c, p.zkDur)
				if err != nil {
					return rows, err
				}
				rows = append(rows, r)
			}
			return rows, nil
		})
	case "openloop":
		sc.Title = "openloop: SET throughput vs latency, built-in open-loop RESP generator"
		sc.Settings = fmt.Sprintf("%d connections to the leader, SETs of %d bytes offered at a fixed rate (doubling from %.0f/s up to %.0f/s, "+
			"%v per step, stopping once a system falls below 80%% of the offered rate or its p99 passes 200 ms); latency from each "+
			"request's scheduled send time (no coordinated omission), in an HdrHistogram.", p.olConns, vs, p.olStart, p.olMax, p.olStep)
		systems := []*system{redisSystem(), nanokvSystem(1, defaultMode, protoRedis)}
		if p.olClusters {
			systems = append(systems, nanokvSystem(3, defaultMode, protoRedis))
		}
		sc.Rows = h.each(ctx, name, systems, "sweep", func(ctx context.Context, in *instance, dir string) ([]Row, error) {
			addr, err := leaderAddr(ctx, in, protoRedis)
			if err != nil {
				return nil, err
			}
			var rows []Row
			for _, rate := range sweepRates(p.olStart, p.olMax) {
				h.prog.set(name, in.sys.name, fmt.Sprintf("offering %.0f SET/s", rate))
				r, err := openLoopStep(ctx, addr, rate, p.olConns, p.olStep, vs)
				if err != nil {
					return rows, err
				}
				rows = append(rows, r)
				if saturated(r) {
					break
				}
			}
			return rows, nil
		})
	case "failover":
		sc.Title = "failover: kill -9 of the leader under load"
		sc.Settings = fmt.Sprintf("%d closed-loop SET writers follow the leader; each trial kills the leader with SIGKILL and measures the time "+
			"to the first acknowledged write sent after the kill, then restarts the member (same WAL) and waits for it to rejoin; %d trials.",
			failoverWriters, p.failTrials)
		var systems []*system
		for _, n := range p.failNodes {
			systems = append(systems, nanokvSystem(n, defaultMode, protoRedis))
		}
		if h.cfg.RedisRaft != "" {
			systems = append(systems, redisRaftSystem(h.cfg.RedisRaft, 3))
		}
		rows := h.each(ctx, name, systems, "failover", func(ctx context.Context, in *instance, dir string) ([]Row, error) {
			f, err := h.runFailover(ctx, in, p.failTrials, func(s string) { h.prog.set(name, in.sys.name, s) })
			if err != nil && ctx.Err() == nil {
				f.Error = err.Error()
			}
			sc.Failover = append(sc.Failover, f)
			return nil, nil
		})
		for _, r := range rows { // systems that did not start
			f := Failover{System: r.System, Skipped: r.Skipped}
			if r.Failed != "" {
				f.Error = r.Failed
			}
			sc.Failover = append(sc.Failover, f)
		}
	}
	sc.Baseline = chooseBaseline(h.cfg.Baselines, sc.Rows)
	if ctx.Err() != nil {
		return sc, fmt.Errorf("bench: interrupted during %s: %w", name, ctx.Err())
	}
	return sc, nil
}

func joinInts(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, fmt.Sprint(x))
	}
	return strings.Join(s, ",")
}

// write saves the plots, results.json and results.md.
func (h *harness) write() error {
	for i := range h.res.Scenarios {
		sc := &h.res.Scenarios[i]
		sc.Plots = nil
		files, err := plotCDFs(h.out, *sc)
		if err != nil {
			return fmt.Errorf("bench: plot %s: %w", sc.Name, err)
		}
		sc.Plots = append(sc.Plots, files...)
		var f string
		switch sc.Name {
		case "openloop":
			f, err = plotThroughputLatency(h.out, *sc)
		case "failover":
			f, err = plotFailover(h.out, *sc)
		}
		if err != nil {
			return fmt.Errorf("bench: plot %s: %w", sc.Name, err)
		}
		if f != "" {
			sc.Plots = append(sc.Plots, f)
		}
	}
	b, err := json.MarshalIndent(h.res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(h.out, "results.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(h.out, "results.md"), []byte(h.res.Markdown()), 0o644)
}

// progress is the live display on stderr: the current scenario, system and step with
// the time spent, rewritten in place every second on a terminal, a line per step
// otherwise (CI logs).
type progress struct {
	w     io.Writer
	tty   bool
	mu    sync.Mutex
	cur   string
	since time.Time
	start time.Time
	done  chan struct{}
	once  sync.Once
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, start: time.Now(), done: make(chan struct{})}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	if p.tty {
		go func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					p.mu.Lock()
					p.redraw()
					p.mu.Unlock()
				case <-p.done:
					return
				}
			}
		}()
	}
	return p
}

func (p *progress) redraw() {
	if p.cur != "" {
		fmt.Fprintf(p.w, "\r\033[K[%4.0fs] %s (%.0fs)", time.Since(p.start).Seconds(), p.cur, time.Since(p.since).Seconds())
	}
}

func (p *progress) set(scenario, system, step string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cur, p.since = scenario+" · "+system+" · "+step, time.Now()
	if p.tty {
		p.redraw()
	} else {
		fmt.Fprintf(p.w, "[%4.0fs] %s\n", time.Since(p.start).Seconds(), p.cur)
	}
}

// println prints a line that stays (a skip, a failure).
func (p *progress) println(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintln(p.w, s)
	if p.tty {
		p.redraw()
	}
}

func (p *progress) close() {
	p.once.Do(func() {
		close(p.done)
		p.mu.Lock()
		if p.tty && p.cur != "" {
			fmt.Fprint(p.w, "\r\033[K")
		}
		p.cur = ""
		p.mu.Unlock()
	})
}
