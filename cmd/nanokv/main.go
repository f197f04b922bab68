// Command nanokv runs a nanokv node. See DESIGN.md for the command line.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"syscall"

	"github.com/nanokv/nanokv/consensus"
	"github.com/nanokv/nanokv/kvstore"
	"github.com/nanokv/nanokv/resp"
	"github.com/nanokv/nanokv/server"
)

func main() {
	beforeServe = reexecForSysmon
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "nanokv:", err)
		os.Exit(1)
	}
}

// beforeServe runs once the command line is known to start a server, before the server
// opens anything. main sets it to reexecForSysmon; the tests that call run leave it be.
var beforeServe = func() {}

// reexecForSysmon runs this process again, in place (the same pid, arguments and
// descriptors), with the GODEBUG setting that keeps the runtime's sysmon thread from
// costing a cluster member a tenth of its throughput (server/sysmon.go). The runtime
// reads that setting only at start. If GODEBUG sets it already, or the executable
// cannot be run again, the server starts without re-executing.
func reexecForSysmon() {
	env, ok := server.SysmonEnv(os.Environ())
	if !ok {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	_ = syscall.Exec(exe, os.Args, env) // returns only if it failed
}

type options struct {
	id          int
	cluster     string
	redis       string
	zk          string
	zkTTL       bool
	proxy       bool
	sharding    bool
	zk4lw       string
	memcache    string
	mcLoop      bool
	redisLoop   bool
	zkLoop      bool
	mcItemMax   string
	dataDir     string
	peers       string
	join        string
	mode        string
	fsync       string
	memoryOnly  bool
	maxmemory   string
	maxPolicy   string
	logMax      string
	logCache    string
	inFlight    int
	readCons    string
	requirepass string
	aclfile     string
	notify      string
	config      string
	version     bool
	cpuprofile  string
	memprofile  string
	trace       string
}

func newFlagSet(o *options, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("nanokv", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.id, "id", 1, "this node's id in the cluster")
	fs.StringVar(&o.cluster, "cluster", "", "address for traffic between nodes (host:port)")
	fs.StringVar(&o.redis, "redis", "127.0.0.1:6379", "Redis (RESP) listen address; empty disables")
	fs.StringVar(&o.zk, "zk", defaultZK, "ZooKeeper listen address; empty disables")
	fs.BoolVar(&o.proxy, "follower-proxy", false, "followers serve Redis clients through the leader instead of -MOVED (RedisRaft's follower-proxy; CONFIG SET raft.follower-proxy)")
	fs.BoolVar(&o.sharding, "sharding", false, "answer cluster-aware clients as RedisRaft's sharding does: CLUSTER SLOTS and CLUSTER NODES name the leader as master of every slot (CONFIG SET raft.sharding)")
	fs.StringVar(&o.logMax, "log-max-file-size", "64mb", "how much a cluster member's Raft log grows before it snapshots and compacts it (bytes, or with kb/mb/gb; RedisRaft's log-max-file-size; CONFIG SET raft.log-max-file-size)")
	fs.StringVar(&o.logCache, "log-max-cache-size", "8mb", "how much entry data, of entries applied and in the WAL, a cluster member's Raft log keeps in memory; a member that lags is sent older entries read back from the WAL (bytes, or with kb/mb/gb; RedisRaft's log-max-cache-size)")
	fs.BoolVar(&o.zkTTL, "zk-extended-types", false, "allow ZooKeeper TTL nodes (ZooKeeper's zookeeper.extendedTypesEnabled)")
	fs.StringVar(&o.zk4lw, "zk-4lw-whitelist", strings.Join(server.DefaultZKFourLetterWords, ","), "ZooKeeper four-letter words answered (4lw.commands.whitelist; * for all)")
	fs.StringVar(&o.memcache, "memcache", defaultMemcache, "memcached listen address; empty disables")
	fs.StringVar(&o.mcItemMax, "memcache-item-size-max", "1m", "largest memcached item, as memcached's -I (bytes, or with k/m suffix)")
	fs.BoolVar(&o.mcLoop, "memcache-event-loop", true, "serve all memcached connections from one event loop (Linux); false: a goroutine per connection")
	fs.BoolVar(&o.redisLoop, "redis-event-loop", true, "a cluster member serves Redis connections from one event loop (Linux); false: a goroutine per connection")
	fs.BoolVar(&o.zkLoop, "zk-event-loop", true, "a cluster member serves ZooKeeper sessions from one event loop (Linux); false: a goroutine per session")
	fs.StringVar(&o.dataDir, "data-dir", "nanokv-data", "directory for the WAL")
	fs.StringVar(&o.peers, "peers", "", "static cluster members: id=host:port,...")
	fs.StringVar(&o.join, "join", "", "join a running cluster through any member's redis address (needs --cluster)")
	fs.StringVar(&o.mode, "mode", "offload", "consensus mode: offload|raft|lowi (a single node commits locally in every mode)")
	fs.StringVar(&o.fsync, "fsync", "everysec", "WAL fsync policy: always|everysec|no")
	fs.IntVar(&o.inFlight, "offload-inflight", server.DefaultOffloadInFlight, "batches the offload leader has awaiting commit before it holds the next (group commit); 0: no limit")
	fs.BoolVar(&o.memoryOnly, "memory-only", false, "keep no WAL: nothing survives a restart")
	fs.StringVar(&o.maxmemory, "maxmemory", "0", "used memory past which writes are refused or keys evicted, as Redis's maxmemory (bytes, or with kb/mb/gb; 0: no limit; CONFIG SET changes it)")
	fs.StringVar(&o.maxPolicy, "maxmemory-policy", "noeviction", "what happens past maxmemory: noeviction|allkeys-lru|allkeys-lfu|allkeys-random|volatile-lru|volatile-lfu|volatile-random|volatile-ttl (Redis's maxmemory-policy)")
	fs.StringVar(&o.readCons, "read-consistency", "lease", "read consistency: lease|strict|stale")
	fs.StringVar(&o.requirepass, "requirepass", "", "password clients must AUTH with")
	fs.StringVar(&o.aclfile, "aclfile", "", "users file (Redis's aclfile): read at start and by ACL LOAD, written by ACL SAVE")
	fs.StringVar(&o.notify, "notify-keyspace-events", "", "keyspace events to publish, as Redis's setting (e.g. KEA); CONFIG SET changes it")
	fs.StringVar(&o.config, "config", "", "config file: one 'flag value' per line, same names as the flags")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a Go CPU profile to this file until shutdown")
	fs.StringVar(&o.memprofile, "memprofile", "", "write a Go allocation profile (go tool pprof -sample_index=alloc_space) to this file at shutdown")
	fs.StringVar(&o.trace, "trace", "", "write a Go execution trace (go tool trace) to this file until shutdown")
	return fs
}

func run(args []string, stdout, stderr io.Writer) error {
	var o options
	fs := newFlagSet(&o, stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		if fs.Arg(0) == "local" {
			return runLocal(fs.Args()[1:], stdout, stderr)
		}
		if fs.Arg(0) == "bench" {
			return runBench(fs.Args()[1:], stdout, stderr)
		}
		return fmt.Errorf("unknown subcommand %q (there is: local, bench)", fs.Arg(0))
	}
	if o.version {
		fmt.Fprintln(stdout, "nanokv", server.Version)
		return nil
	}
	if o.config != "" {
		if err := applyConfigFile(fs, o.config); err != nil {
			return err
		}
	}
	fsync, err := consensus.ParseFsync(o.fsync)
	if err != nil {
		return err
	}
	switch o.readCons {
	case "lease", "strict", "stale":
	default:
		return fmt.Errorf("--read-consistency %q: want lease, strict or stale", o.readCons)
	}
	switch o.mode {
	case "raft", "offload", "lowi":
	default:
		return fmt.Errorf("--mode %q: want raft, offload or lowi", o.mode)
	}
	idSet := false
	fs.Visit(func(f *flag.Flag) { idSet = idSet || f.Name == "id" })
	if o.id < 0 {
		return fmt.Errorf("--id %d: want a positive member id", o.id)
	}
	if o.join != "" {
		switch {
		case o.peers != "":
			return errors.New("--join and --peers: a node either joins a running cluster or starts one")
		case o.cluster == "":
			return errors.New("--join needs --cluster, the address the other members reach this node on")
		case o.memoryOnly:
			return errors.New("--join needs a WAL (no --memory-only): the node must remember the cluster it joined")
		case o.mode == "lowi":
			return errors.New("--mode lowi: clusters run --mode raft or offload in this build")
		}
	}
	if (o.join != "" || o.cluster != "" && o.peers == "") && !idSet {
		o.id = 0 // a joining or uninitialized node gets its id from the cluster (or INIT)
	}
	peers, err := parsePeers(o.peers)
	if err != nil {
		return err
	}
	if len(peers) > 0 {
		if _, ok := peers[uint64(o.id)]; !ok || o.id <= 0 {
			return fmt.Errorf("--id %d is not among --peers", o.id)
		}
		if o.mode == "lowi" {
			return errors.New("--mode lowi: clusters run --mode raft or offload in this build")
		}
	}
	maxmemory, ok := resp.ParseMemory(o.maxmemory)
	if !ok || maxmemory < 0 {
		return fmt.Errorf("--maxmemory %q: want a memory value, as 100mb or 2gb", o.maxmemory)
	}
	logMax, ok := resp.ParseMemory(o.logMax)
	if !ok || logMax <= 0 {
		return fmt.Errorf("--log-max-file-size %q: want a positive memory value, as 64mb", o.logMax)
	}
	logCache, ok := resp.ParseMemory(o.logCache)
	if !ok || logCache <= 0 {
		return fmt.Errorf("--log-max-cache-size %q: want a positive memory value, as 8mb", o.logCache)
	}
	inFlight := o.inFlight // the server's Config: 0 is its default, negative no limit
	switch {
	case inFlight < 0:
		return fmt.Errorf("--offload-inflight %d: want 0 (no limit) or more", o.inFlight)
	case inFlight == 0:
		inFlight = -1
	}
	policy, ok := kvstore.ParseEvictPolicy(strings.ToLower(o.maxPolicy))
	if !ok {
		return fmt.Errorf("--maxmemory-policy %q: want one of Redis's maxmemory-policy values, as allkeys-lru or noeviction", o.maxPolicy)
	}
	itemMax, err := parseSize(o.mcItemMax)
	if err != nil || itemMax < 1024 || itemMax > 1<<30 {
		return fmt.Errorf("--memcache-item-size-max %q: want a size from 1k to 1024m", o.mcItemMax)
	}
	// The default memcached port is a convenience: if something (a memcached) already
	// holds it, the node starts without it. An address the user chose must bind.
	// The same for ZooKeeper's 2181.
	memcacheSet, zkSet := false, false
	fs.Visit(func(f *flag.Flag) {
		memcacheSet = memcacheSet || f.Name == "memcache"
		zkSet = zkSet || f.Name == "zk"
	})
	var words []string
	for _, w := range strings.Split(o.zk4lw, ",") {
		if w = strings.TrimSpace(w); w != "" {
			words = append(words, w)
		}
	}
	beforeServe()
	logger := log.New(stderr, "", log.LstdFlags|log.Lmicroseconds)
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	if o.memprofile != "" {
		f, err := os.Create(o.memprofile)
		if err != nil {
			return err
		}
		defer func() {
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				logger.Printf("memprofile: %v", err)
			}
			f.Close()
		}()
	}
	if o.trace != "" {
		f, err := os.Create(o.trace)
		if err != nil {
			return err
		}
		if err := trace.Start(f); err != nil {
			return err
		}
		defer func() {
			trace.Stop()
			f.Close()
		}()
	}
	srv, err := server.Start(server.Config{
		RedisAddr:            o.redis,
		MemcacheAddr:         o.memcache,
		MemcacheOptional:     !memcacheSet,
		MemcacheItemSizeMax:  itemMax,
		MemcacheNoEventLoop:  !o.mcLoop,
		RedisNoEventLoop:     !o.redisLoop,
		ZKNoEventLoop:        !o.zkLoop,
		ZKAddr:               o.zk,
		ZKOptional:           !zkSet,
		ZKFourLetterWords:    words,
		ZKExtendedTypes:      o.zkTTL,
		DataDir:              o.dataDir,
		MemoryOnly:           o.memoryOnly,
		MaxMemory:            maxmemory,
		MaxMemoryPolicy:      policy,
		Fsync:                fsync,
		RequirePass:          o.requirepass,
		ACLFile:              o.aclfile,
		ConfigFile:           absPath(o.config),
		NotifyKeyspaceEvents: o.notify,
		Logger:               logger,
		NodeID:               uint64(o.id),
		Peers:                peers,
		ClusterAddr:          o.cluster,
		JoinAddr:             o.join,
		ReadConsistency:      o.readCons,
		FollowerProxy:        o.proxy,
		Sharding:             o.sharding,
		SnapshotLogBytes:     logMax,
		LogCacheBytes:        logCache,
		Offload:              o.mode == "offload",
		OffloadInFlight:      inFlight,
		// GOMAXPROCS in the environment pins the number of Ps
		AdaptiveProcs: os.Getenv("GOMAXPROCS") == "",
	})
	if err != nil {
		return err
	}
	logger.Printf("nanokv %s: node %d ready, redis %s, memcache %s, zookeeper %s, fsync %s, data %s", server.Version, o.id,
		orNone(srv.RedisAddr()), orNone(srv.MemcacheAddr()), orNone(srv.ZKAddr()), fsync, dataDesc(o))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		logger.Printf("nanokv: %v: shutting down", s)
	case <-srv.ShutdownRequested():
		logger.Printf("nanokv: SHUTDOWN: shutting down")
	}
	if err := srv.Close(); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Printf("nanokv: stopped cleanly")
	return nil
}

// defaultMemcache and defaultZK are memcached's and ZooKeeper's own default ports, on
// loopback as the Redis default is.
const (
	defaultMemcache = "127.0.0.1:11211"
	defaultZK       = "127.0.0.1:2181"
)

func orNone(addr string) string {
	if addr == "" {
		return "off"
	}
	return addr
}

// parsePeers parses --peers: id=host:port,... ("" is no cluster).
func parsePeers(s string) (map[uint64]string, error) {
	if s == "" {
		return nil, nil
	}
	peers := map[uint64]string{}
	for _, p := range strings.Split(s, ",") {
		idStr, addr, ok := strings.Cut(strings.TrimSpace(p), "=")
		id, err := strconv.ParseUint(idStr, 10, 64)
		if !ok || err != nil || id == 0 || addr == "" {
			return nil, fmt.Errorf("--peers: %q is not id=host:port", p)
		}
		if _, dup := peers[id]; dup {
			return nil, fmt.Errorf("--peers: id %d given twice", id)
		}
		peers[id] = addr
	}
	return peers, nil
}

// parseSize parses a byte count with an optional k or m suffix (memcached's -I syntax).
func parseSize(s string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "m"), strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > 1<<30/mult {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}

func dataDesc(o options) string {
	if o.memoryOnly {
		return "memory only"
	}
	return o.dataDir
}

// absPath is path made absolute, as Redis reports its config_file ("" stays "").
func absPath(path string) string {
	if path == "" {
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// applyConfigFile sets every flag named in the file that the command line did not set:
// the command line wins, as with redis-server's arguments over its config file.
func applyConfigFile(fs *flag.FlagSet, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	explicit := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { explicit[fl.Name] = true })
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		name, value, _ := strings.Cut(text, " ")
		name = strings.TrimPrefix(name, "--")
		value = strings.Trim(strings.TrimSpace(value), `"`)
		if fs.Lookup(name) == nil {
			return fmt.Errorf("%s:%d: unknown setting %q", path, line, name)
		}
		if explicit[name] || name == "config" {
			continue
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("%s:%d: %s: %w", path, line, name, err)
		}
	}
	return sc.Err()
}
