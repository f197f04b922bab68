// Package server is one nanokv node: it opens the store and the consensus pipeline, wires
// the protocol frontends to them, runs the leader's expiry sweep, and reports INFO and
// CONFIG for the node. It parses no protocol itself.
package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nanokv/nanokv/consensus"
	"github.com/nanokv/nanokv/internal/memlimit"
	"github.com/nanokv/nanokv/kvstore"
	"github.com/nanokv/nanokv/mcproto"
	"github.com/nanokv/nanokv/resp"
	"github.com/nanokv/nanokv/zkproto"
)

// Version is nanokv's version, set at build time with -ldflags "-X ...server.Version=...".
var Version = "0.1.0-dev"

// Config is a node's configuration (flags, --config file).
type Config struct {
	RedisAddr string // "" disables the listener
	// MemcacheAddr is the memcached listener's address; "" disables it. When
	// MemcacheOptional is set (the address is the default, not the user's choice), failing
	// to bind it is logged instead of stopping the node.
	MemcacheAddr     string
	MemcacheOptional bool
	// MemcacheItemSizeMax is memcached's -I (bytes); 0 means 1 MiB.
	MemcacheItemSizeMax int
	// MemcacheNoEventLoop gives every memcached connection its own goroutine, where one
	// event loop serves them all by default: a synchronous loop on a single node, an
	// asynchronous one on a cluster member (netserve.Loop says why each). A synchronous
	// loop on a cluster member was tried first, and left the leader's throughput where
	// goroutines had it: each round waited out a commit round trip with nothing read
	// meanwhile.
	MemcacheNoEventLoop bool
	// RedisNoEventLoop gives every Redis connection of a cluster member its own
	// goroutine, where an asynchronous event loop serves them by default (resp's
	// loopconn.go says which requests it serves). A single node always gives each its
	// own goroutine: an event loop made redis-benchmark no faster there (4aa73d2).
	RedisNoEventLoop bool
	// ZKNoEventLoop gives every ZooKeeper session of a cluster member its own goroutine
	// (and a writer), where an asynchronous event loop serves them by default (zkproto's
	// loopconn.go says which requests it serves). A single node always gives each its
	// own goroutine.
	ZKNoEventLoop bool
	// ZKAddr is the ZooKeeper listener's address; "" disables it. ZKOptional as
	// MemcacheOptional.
	ZKAddr     string
	ZKOptional bool
	// ZKFourLetterWords is ZooKeeper's 4lw.commands.whitelist (nil: the default);
	// ZKExtendedTypes its zookeeper.extendedTypesEnabled (TTL nodes).
	ZKFourLetterWords []string
	ZKExtendedTypes   bool
	// ZKTickTime is ZooKeeper's tickTime (0: 2 s): session timeouts are clamped to
	// [2, 20] ticks. Tests shorten it to see sessions expire quickly.
	ZKTickTime time.Duration

	DataDir    string
	MemoryOnly bool
	// MaxMemory is Redis's maxmemory (bytes, 0: none): past it the frontends refuse
	// writes (memlimit), or the leader evicts keys under MaxMemoryPolicy (evict.go).
	// CONFIG SET changes both.
	MaxMemory       int64
	MaxMemoryPolicy kvstore.EvictPolicy
	Fsync           consensus.FsyncPolicy
	RequirePass     string
	// ConfigFile is the file the configuration was read from, if any (INFO's config_file).
	ConfigFile string
	// ACLFile is Redis's aclfile: the users file read at start (an error in it stops
	// the start) and by ACL LOAD, written by ACL SAVE.
	ACLFile string
	// NotifyKeyspaceEvents is notify-keyspace-events at start (kvstore.ParseNotifyFlags);
	// CONFIG SET changes it.
	NotifyKeyspaceEvents string
	// ExpireEvery is the period of the leader's sweep for keys past their TTL.
	ExpireEvery time.Duration
	Logger      *log.Logger

	// Cluster membership (static bootstrap). With no Peers the node runs the
	// single-member pipeline; with Peers (this node's id included) it is a Raft member.
	NodeID uint64
	Peers  map[uint64]string // member id → member transport address
	// JoinAddr, instead of Peers, joins a running cluster through any member's redis
	// address (RAFT.NODE ADD); NodeID 0 lets the leader pick the id.
	JoinAddr    string
	ClusterAddr string // where this member listens for members; default its Peers entry
	// ClusterListener, when set, is used instead of listening on ClusterAddr (tests hand
	// in listeners on port 0 so that the peer list is known before anything starts).
	ClusterListener net.Listener
	// ReadConsistency is lease (default) or strict (a ReadIndex round trip per read).
	ReadConsistency string
	// RequestTimeout bounds how long a client waits for a write to commit (RedisRaft's
	// request-timeout); the client then gets -TIMEOUT. Default 2 s.
	RequestTimeout time.Duration
	// TickInterval and ElectionTicks tune failure detection (default 10 ms × 8).
	TickInterval  time.Duration
	ElectionTicks int
	// SnapshotLogBytes is how much the Raft log grows before a snapshot (default 64 MiB).
	SnapshotLogBytes int64
	// SnapshotTrailing is how many entries before a snapshot stay in the log for slow
	// followers (default 10000); one further behind is sent the snapshot.
	SnapshotTrailing uint64
	// LogCacheBytes is how much entry data the Raft log keeps in memory once applied
	// and in the WAL (raft.log-max-cache-size; default consensus.DefaultLogCacheBytes).
	LogCacheBytes int64
	// FollowerProxy is RedisRaft's follower-proxy: followers serve Redis clients by
	// forwarding to the leader instead of answering -MOVED.
	FollowerProxy bool
	// Sharding is RedisRaft's sharding: a member answers CLUSTER SLOTS and CLUSTER NODES
	// as one shard group holding every slot, led by the Raft leader (sharding.go).
	Sharding bool
	// AdaptiveProcs lets the process run on one P until it saturates a core
	// (procs.go); a process serves one node or member when it sets this.
	AdaptiveProcs bool
	// Offload runs a cluster member in --mode offload: the common case of replication
	// goes through a nicoffload engine over UDP, on the member's address.
	Offload bool
	// OffloadInFlight is how many batches the offload leader sends before it holds what
	// is proposed next until a commit (group commit): 0 the default (2), negative no
	// limit (every batch goes out at once).
	OffloadInFlight int
}

// Server is a running node.
type Server struct {
	cfg     Config
	started time.Time
	store   *kvstore.Store
	node    *consensus.Node // the single-member pipeline, when not clustered
	// clusterP is the Raft member once the node is one: set at start, or later by
	// RAFT.CLUSTER INIT/JOIN on a node started with --cluster alone (then pending holds
	// what it waits with).
	clusterP atomic.Pointer[cluster]
	// sharding is RedisRaft's sharding switch (sharding.go): set for a cluster member or
	// a node waiting to be one that was started with it, and by CONFIG SET raft.sharding
	sharding atomic.Bool
	pending  *pendingCluster
	// logMax is raft.log-max-file-size: how much the Raft log grows before a snapshot
	logMax atomic.Int64
	// logCache is raft.log-max-cache-size: how much entry data, of entries applied and
	// in the WAL, the Raft log keeps in memory
	logCache atomic.Int64
	// savePoints is Redis's save parameter (savepoints.go); nil or empty: none
	savePoints atomic.Pointer[[]savePoint]
	// mem is used memory against maxmemory, which every frontend consults
	mem   *memlimit.Gauge
	redis *resp.Server
	ln    net.Listener
	mc    *mcproto.Server
	mcln  net.Listener
	zk    *zkproto.Server
	// zkSessions is the number of ZooKeeper sessions connected here (RaftConfig.WantsCommits).
	zkSessions atomic.Int64
	zkln       net.Listener
	logf       func(string, ...any)

	stop     chan struct{}
	wg       sync.WaitGroup
	shutdown chan struct{} // closed by SHUTDOWN
	shutOnce sync.Once

	closeOnce sync.Once
	closeErr  error
}

// fsm adapts the store to consensus: it applies entries and releases the frontends
// waiting for them.
type fsm struct {
	store *kvstore.Store
	logf  func(string, ...any)
}

func (f *fsm) Apply(e consensus.Entry, local any) {
	sink, _ := local.(kvstore.Sink)
	var w kvstore.ReplyWriter
	if sink != nil {
		w = sink
	}
	if err := f.store.Apply(kvstore.Entry{Index: e.Index, Term: e.Term, Time: e.Time, Data: e.Data}, w); err != nil {
		// Every replica decodes the same bytes the same way, so state stays identical;
		// the entry was made by a frontend of ours, so this is a bug worth a loud line.
		f.logf("server: %v", err)
	}
	if sink != nil {
		sink.Applied()
	}
}

// Prefetch has the store read ahead of the entries about to be applied
// (consensus.Prefetcher).
func (f *fsm) Prefetch(datas [][]byte) { f.store.PrefetchEntries(datas) }

var _ consensus.Prefetcher = (*fsm)(nil)

// Snapshot and Restore let a Raft member compact its log (consensus.Snapshotter).
func (f *fsm) Snapshot(w io.Writer) error { return f.store.Snapshot(w) }

// BeginSnapshot captures the store at once for a snapshot written while applying goes
// on (consensus.AsyncSnapshotter).
func (f *fsm) BeginSnapshot() (func(io.Writer) error, error) { return f.store.BeginSnapshot() }

// Restore loads a snapshot written by Snapshot.
func (f *fsm) Restore(r io.Reader) error { return f.store.Restore(r) }

// Start opens the node and starts its listeners.
func Start(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = log.New(os.Stderr, "", log.LstdFlags)
	}
	if cfg.ExpireEvery <= 0 {
		cfg.ExpireEvery = 100 * time.Millisecond
	}
	notify, ok := kvstore.ParseNotifyFlags(cfg.NotifyKeyspaceEvents)
	if !ok {
		return nil, fmt.Errorf("server: notify-keyspace-events %q: invalid event class character; use 'Ag$lshzxeKEtmdn'", cfg.NotifyKeyspaceEvents)
	}
	if cfg.ACLFile != "" {
		if err := resp.CheckACLFile(cfg.ACLFile); err != nil {
			return nil, fmt.Errorf("server: aborting because of ACL errors: %w", err)
		}
	}
	s := &Server{cfg: cfg, started: time.Now(), store: kvstore.New(), mem: &memlimit.Gauge{}, logf: cfg.Logger.Printf, stop: make(chan struct{}), shutdown: make(chan struct{})}
	s.logMax.Store(defaultLogMax)
	if cfg.SnapshotLogBytes > 0 {
		s.logMax.Store(cfg.SnapshotLogBytes)
	}
	s.logCache.Store(cmp.Or(cfg.LogCacheBytes, consensus.DefaultLogCacheBytes))
	s.mem.SetPolicy(int(cfg.MaxMemoryPolicy))
	s.store.SetEvictPolicy(cfg.MaxMemoryPolicy)
	s.mem.SetLimit(cfg.MaxMemory)
	// The redis listener opens first: a cluster member tells the others its address.
	if cfg.RedisAddr != "" {
		ln, err := net.Listen("tcp", cfg.RedisAddr)
		if err != nil {
			return nil, fmt.Errorf("server: redis listener: %w", err)
		}
		s.ln = ln
	}
	if err := s.startConsensus(); err != nil {
		if s.ln != nil {
			s.ln.Close()
		}
		return nil, err
	}
	if s.ln != nil {
		ln := s.ln
		host, port, _ := net.SplitHostPort(ln.Addr().String())
		p, _ := strconv.Atoi(port)
		s.redis = resp.NewServer(s, resp.Config{RequirePass: cfg.RequirePass, ACLFile: cfg.ACLFile, ConfigFile: cfg.ConfigFile, NotifyKeyspaceEvents: notify, Port: p, Bind: host, Version: Version, Logf: s.logf, Shutdown: s.requestShutdown, Memory: s.mem,
			EventLoop: s.node == nil && !cfg.RedisNoEventLoop})
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.redis.Serve(ln); err != nil {
				s.logf("server: redis listener: %v", err)
			}
		}()
	}
	if cfg.MemcacheAddr != "" {
		if err := s.startMemcache(); err != nil {
			if !cfg.MemcacheOptional {
				s.closeListeners()
				s.wg.Wait()
				s.closeConsensus()
				return nil, err
			}
			s.logf("%v (memcached listener disabled)", err)
		}
	}
	if cfg.ZKAddr != "" {
		if err := s.startZK(); err != nil {
			if !cfg.ZKOptional {
				s.closeListeners()
				s.wg.Wait()
				s.closeConsensus()
				return nil, err
			}
			s.logf("%v (zookeeper listener disabled)", err)
		}
	}
	s.wg.Add(4)
	go s.runExpiry()
	go s.runEvictor()
	go s.runSavePoints()
	go func() {
		defer s.wg.Done()
		s.mem.Run(s.stop)
	}()
	if s.node != nil {
		startGCTuner(s.stop, singleHeadroom, 0)
	} else {
		startGCTuner(s.stop, memberHeadroom, memberJitter)
	}
	if cfg.AdaptiveProcs {
		startProcTuner(s.stop)
	}
	return s, nil
}

func (s *Server) startConsensus() error {
	redisAddr := ""
	if s.ln != nil {
		redisAddr = s.ln.Addr().String()
	}
	switch {
	case len(s.cfg.Peers) > 0 || s.cfg.JoinAddr != "":
		return s.startCluster(redisAddr)
	case s.cfg.ClusterAddr != "" || s.cfg.ClusterListener != nil:
		return s.startPending(redisAddr)
	}
	node, err := consensus.Open(consensus.Config{
		Dir:        s.cfg.DataDir,
		MemoryOnly: s.cfg.MemoryOnly,
		Fsync:      s.cfg.Fsync,
		SM:         &fsm{store: s.store, logf: s.logf},
		Logf:       s.logf,
	})
	if err != nil {
		return err
	}
	s.node = node
	return nil
}

// cl is the Raft member, or nil when the node is not (yet) one.
func (s *Server) cl() *cluster { return s.clusterP.Load() }

func (s *Server) closeConsensus() error {
	if c := s.cl(); c != nil {
		return c.close()
	}
	if s.pending != nil {
		return s.pending.close()
	}
	return s.node.Close()
}

func (s *Server) startMemcache() error {
	ln, err := net.Listen("tcp", s.cfg.MemcacheAddr)
	if err != nil {
		return fmt.Errorf("server: memcache listener: %w", err)
	}
	s.mcln = ln
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := strconv.Atoi(port)
	s.mc = mcproto.NewServer(s, mcproto.Config{ItemSizeMax: s.cfg.MemcacheItemSizeMax, Port: p, Bind: host, Logf: s.logf, Memory: s.mem,
		EventLoop: !s.cfg.MemcacheNoEventLoop, Async: s.node == nil})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.mc.Serve(ln); err != nil {
			s.logf("server: memcache listener: %v", err)
		}
	}()
	return nil
}

// closeListeners stops the frontends (and waits for their connections).
func (s *Server) closeListeners() {
	if s.redis != nil {
		s.redis.Close()
	}
	if s.mc != nil {
		s.mc.Close()
	}
	if s.zk != nil {
		s.zk.Close()
	}
}

func (s *Server) requestShutdown() {
	s.shutOnce.Do(func() {
		s.logf("server: SHUTDOWN requested by a client")
		close(s.shutdown)
	})
}

// ShutdownRequested is closed when a client sends SHUTDOWN; the owner then calls Close.
func (s *Server) ShutdownRequested() <-chan struct{} { return s.shutdown }

// RedisAddr is the address the RESP listener is bound to ("" if disabled).
func (s *Server) RedisAddr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// MemcacheAddr is the address the memcached listener is bound to ("" if disabled).
func (s *Server) MemcacheAddr() string {
	if s.mcln == nil {
		return ""
	}
	return s.mcln.Addr().String()
}

// Store is the node's state machine (read side).
func (s *Server) Store() *kvstore.Store { return s.store }

// Propose implements resp.Backend.
func (s *Server) Propose(batch []byte, sink kvstore.Sink) error {
	var local any
	if sink != nil {
		local = sink
	}
	if c := s.cl(); c != nil {
		return c.propose(batch, local)
	}
	if s.pending != nil {
		return errNoCluster
	}
	_, err := s.node.Propose(batch, local)
	return err
}

// ProposeMany submits batches as consecutive entries, each with its sink as Propose's,
// and returns once all are answered; errs[i] is Propose's error for batches[i]
// (mcproto's event loop). A single node writes them with one WAL write. A cluster member
// proposes them one after the other: the event loop is a single node's (see
// MemcacheNoEventLoop).
func (s *Server) ProposeMany(batches [][]byte, sinks []kvstore.Sink, errs []error) {
	if s.node == nil {
		for i, b := range batches {
			errs[i] = s.Propose(b, sinks[i])
		}
		return
	}
	lp := localsPool.Get().(*[]any)
	locals := (*lp)[:0]
	for _, sink := range sinks {
		locals = append(locals, sink) // a nil Sink is a nil local
	}
	err := s.node.ProposeMany(batches, locals)
	clear(locals)
	*lp = locals
	localsPool.Put(lp)
	for i := range errs {
		errs[i] = err
	}
}

// localsPool recycles ProposeMany's conversion of sinks to proposal locals, which the
// node does not keep: one slice per round was 5% of a single node's allocated bytes
// under memcaslap set-only.
var localsPool = sync.Pool{New: func() any { return new([]any) }}

// ProposeAsync is Propose that does not wait: done gets its outcome, raw (ClientError
// maps it), from the consensus loop's goroutine (mcproto's asynchronous event loop on a
// cluster member). With a sink, done is called once the batch is applied.
func (s *Server) ProposeAsync(batch []byte, sink kvstore.Sink, done func(error)) {
	c := s.cl()
	if c == nil {
		done(s.Propose(batch, sink)) // a single node, or a member before INIT / JOIN
		return
	}
	if sink == nil {
		c.raft.ProposeAsync(batch, nil, c.proxy.Load(), done)
		return
	}
	as := &appliedSink{Sink: sink, done: done}
	c.raft.ProposeAsync(batch, as, c.proxy.Load(), as.committed)
}

// appliedSink tells a proposer that waits without blocking (ProposeAsync) once its batch
// is applied, or that it failed, whichever comes first. An entry whose proposer was told
// of a failure (a timeout) may still be applied later; the sink then takes its replies,
// and the proposer, told once, is not told again.
type appliedSink struct {
	kvstore.Sink
	done func(error)
	told atomic.Bool
}

func (a *appliedSink) Applied() {
	a.Sink.Applied()
	if a.told.CompareAndSwap(false, true) {
		a.done(nil)
	}
}

// committed is the proposal's outcome: a failure is told at once, a commit waits for
// the apply.
func (a *appliedSink) committed(err error) {
	if err != nil && a.told.CompareAndSwap(false, true) {
		a.done(err)
	}
}

// ReadBarrierAsync is ReadBarrier that does not wait: done gets its outcome.
func (s *Server) ReadBarrierAsync(done func(error)) {
	go func() { done(s.ReadBarrier(context.Background())) }()
}

// TryReadBarrier reports whether a read may be served linearizably now, without waiting
// (a cluster leader's valid lease, with its applier caught up). false only sends the
// read through ReadBarrierAsync.
func (s *Server) TryReadBarrier() bool {
	if c := s.cl(); c != nil {
		return c.raft.TryReadBarrier()
	}
	return false
}

// ClientError maps an error of ProposeAsync to the one Propose would have returned.
func (s *Server) ClientError(err error) error {
	if c := s.cl(); c != nil && err != nil {
		return c.clientError(err)
	}
	return err
}

// RequestTimeout is how long a cluster member's client waits for a request's outcome
// (raft.request-timeout), 0 elsewhere.
func (s *Server) RequestTimeout() time.Duration {
	if c := s.cl(); c != nil {
		return c.timeout()
	}
	return 0
}

// ReadBarrier implements resp.Backend.
func (s *Server) ReadBarrier(ctx context.Context) error {
	if c := s.cl(); c != nil {
		return c.readBarrier(ctx, false)
	}
	if s.pending != nil {
		return errNoCluster
	}
	return s.node.ReadBarrier(ctx)
}

// Info implements resp.Backend: the persistence and raft sections.
func (s *Server) Info(b *strings.Builder, section string) bool {
	w := func(k string, v any) { fmt.Fprintf(b, "%s:%v\r\n", k, v) }
	if s.pending != nil && s.cl() == nil {
		if section != "raft" {
			return false
		}
		b.WriteString("# Raft\r\n")
		w("raft_node_id", s.cfg.NodeID)
		w("raft_state", "uninitialized")
		return true
	}
	if c := s.cl(); c != nil {
		switch section {
		case "persistence":
			b.WriteString("# Persistence\r\n")
			infoLoading(w)
			si := c.raft.SnapshotInfo()
			si.LastUnix = s.LastSave()
			infoSnapshots(w, si)
			// a member whose WAL write fails stops: one that answers wrote it all
			infoAOF(w, !s.cfg.MemoryOnly, false)
			w("snapshot_index", si.Index)
			w("snapshot_bytes", si.Bytes)
			w("wal_fsync", s.cfg.Fsync)
		case "raft":
			b.WriteString("# Raft\r\n")
			c.info(w)
		default:
			return false
		}
		return true
	}
	st := s.node.Status()
	stats := s.node.Stats()
	switch section {
	case "persistence":
		b.WriteString("# Persistence\r\n")
		infoLoading(w)
		si := s.node.SnapshotInfo()
		infoSnapshots(w, si)
		infoAOF(w, !st.MemoryOnly, st.WALFailed)
		w("snapshot_index", si.Index)
		w("snapshot_bytes", si.Bytes)
		w("wal_fsync", st.Fsync)
		w("wal_writes", stats.WALWrites.Load())
		w("wal_syncs", stats.WALSyncs.Load())
		w("wal_bytes", stats.WALBytes.Load())
	case "raft":
		b.WriteString("# Raft\r\n")
		w("raft_node_id", 1)
		w("raft_state", "up")
		w("raft_role", "leader")
		w("raft_leader_id", 1)
		w("raft_current_term", st.Term)
		w("raft_num_nodes", 1)
		w("raft_num_voting_nodes", 1)
		w("raft_is_voting", "yes")
		w("raft_current_index", st.LastIndex)
		w("raft_commit_index", st.CommitIndex)
		w("raft_last_applied_index", st.AppliedIndex)
		w("raft_proposals", stats.Proposals.Load())
	default:
		return false
	}
	return true
}

// ConfigGet implements resp.Backend: persistence settings, and for a cluster member the
// raft.* settings RedisRaft users read.
func (s *Server) ConfigGet() map[string]string {
	aof := "yes"
	if s.cfg.MemoryOnly {
		aof = "no"
	}
	out := map[string]string{
		"appendonly":  aof,
		"appendfsync": s.cfg.Fsync.String(),
		"dir":         s.cfg.DataDir,
		"save":        "",
	}
	if p := s.savePoints.Load(); p != nil {
		out["save"] = formatSavePoints(*p)
	}
	c := s.cl()
	if c == nil && s.pending == nil {
		return out
	}
	yesNo := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	tick, ticks := s.cfg.TickInterval, s.cfg.ElectionTicks
	if tick <= 0 {
		tick = consensus.DefaultTickInterval
	}
	if ticks <= 0 {
		ticks = consensus.DefaultElectionTicks
	}
	out["raft.election-timeout"] = strconv.FormatInt((tick * time.Duration(ticks)).Milliseconds(), 10)
	out["raft.follower-proxy"] = yesNo(c != nil && c.proxy.Load() || c == nil && s.cfg.FollowerProxy)
	out["raft.sharding"] = yesNo(s.sharding.Load())
	out["raft.quorum-reads"] = "yes" // lease and ReadIndex reads are both linearizable
	out["raft.log-fsync"] = yesNo(s.cfg.Fsync == consensus.FsyncAlways)
	out["raft.log-max-file-size"] = strconv.FormatInt(s.logMax.Load(), 10)
	out["raft.log-max-cache-size"] = strconv.FormatInt(s.logCache.Load(), 10)
	out["raft.request-timeout"] = strconv.FormatInt(s.requestTimeout().Milliseconds(), 10)
	if c != nil {
		out["raft.id"] = strconv.FormatUint(c.nodeID, 10)
		out["raft.addr"] = c.addr
	} else {
		out["raft.id"] = strconv.FormatUint(s.cfg.NodeID, 10)
		out["raft.addr"] = s.pending.ln.Addr().String()
	}
	return out
}

func (s *Server) requestTimeout() time.Duration {
	if c := s.cl(); c != nil {
		return c.timeout()
	}
	if s.cfg.RequestTimeout > 0 {
		return s.cfg.RequestTimeout
	}
	return 2 * time.Second
}

// defaultLogMax is raft.log-max-file-size when not set, as RedisRaft's (64 MiB).
const defaultLogMax = 64 << 20

// ConfigCheck implements resp.Backend. save, raft.request-timeout, raft.follower-proxy,
// raft.sharding, raft.log-max-file-size and raft.log-max-cache-size change at run time;
// raft.log-max-file-size waits for the Raft loop when the node is a cluster member
// (remote), and may fail. Stale reads are refused (not built); the rest is fixed at
// start.
func (s *Server) ConfigCheck(name, value string) (set func() error, remote bool, err error) {
	c := s.cl()
	notMember := errors.New("not a cluster member yet")
	switch name {
	case "save":
		set, err := s.checkSavePoints(value)
		return set, false, err
	case "raft.request-timeout":
		ms, err := strconv.ParseInt(value, 10, 64)
		if err != nil || ms <= 0 {
			return nil, false, errors.New("argument must be a positive number of milliseconds")
		}
		if c == nil {
			return nil, false, notMember
		}
		return func() error { c.timeoutNs.Store(int64(time.Duration(ms) * time.Millisecond)); return nil }, false, nil
	case "raft.follower-proxy", "raft.sharding":
		on, ok := map[string]bool{"yes": true, "no": false}[strings.ToLower(value)]
		if !ok {
			return nil, false, errors.New("argument must be 'yes' or 'no'")
		}
		if c == nil {
			return nil, false, notMember
		}
		flag := &c.proxy
		if name == "raft.sharding" {
			flag = &s.sharding
		}
		return func() error { flag.Store(on); return nil }, false, nil
	case "raft.log-max-file-size":
		b, ok := resp.ParseMemory(value)
		if !ok || b <= 0 {
			return nil, false, errors.New("argument must be a positive memory value")
		}
		if c == nil {
			return func() error { s.logMax.Store(b); return nil }, false, nil // the member starts with it
		}
		return func() error {
			ctx, cancel := context.WithTimeout(context.Background(), c.timeout())
			defer cancel()
			if err := c.raft.SetSnapshotLogBytes(ctx, b); err != nil {
				return err
			}
			s.logMax.Store(b)
			return nil
		}, true, nil
	case "raft.log-max-cache-size":
		b, ok := resp.ParseMemory(value)
		if !ok || b <= 0 {
			return nil, false, errors.New("argument must be a positive memory value")
		}
		if c == nil {
			return func() error { s.logCache.Store(b); return nil }, false, nil // the member starts with it
		}
		return func() error { c.raft.SetLogCacheBytes(b); s.logCache.Store(b); return nil }, false, nil
	case "raft.quorum-reads":
		if value == "yes" {
			return func() error { return nil }, false, nil
		}
		return nil, false, errors.New("stale reads are not in this build: reads are always linearizable")
	}
	return nil, false, errors.New("can't set immutable config")
}

// runExpiry is the leader's active expiry: it proposes the deletion of keys whose TTL has
// passed, so that every replica deletes them at the same log position (replicas never
// expire keys on their own clock; reads meanwhile treat them as absent).
func (s *Server) runExpiry() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.ExpireEvery)
	defer t.Stop()
	const maxPerRound = 1000
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		expired := s.store.ExpiredKeys(time.Now().UnixMilli(), maxPerRound)
		if len(expired) == 0 {
			continue
		}
		byDB := map[int][]string{}
		for _, k := range expired {
			byDB[k.DB] = append(byDB[k.DB], k.Key)
		}
		var batch []byte
		for db, keys := range byDB {
			batch = kvstore.AppendExpire(batch, db, keys)
		}
		// only the leader decides expiry; followers read such keys as absent
		s.proposeOwn(batch, "expiry")
	}
}

// decides reports whether this node decides what the store does of itself (expiry,
// eviction): a single node, or a cluster's leader.
func (s *Server) decides() bool {
	if c := s.cl(); c != nil {
		return c.isLeader()
	}
	return s.pending == nil // not a member still joining its cluster
}

// proposeOwn proposes an entry the node itself decided on (expiry, eviction): on a
// single node, or on the leader of a cluster; elsewhere it is dropped (false). what
// names it in the log line an error gets.
func (s *Server) proposeOwn(batch []byte, what string) bool {
	if !s.decides() {
		return false
	}
	if c := s.cl(); c != nil {
		if err := c.propose(batch, nil); err != nil {
			s.logf("server: %s: %v", what, err)
			return false
		}
		return true
	}
	if _, err := s.node.Propose(batch, nil); err != nil {
		if !errors.Is(err, consensus.ErrClosed) {
			s.logf("server: %s: %v", what, err)
		}
		return false
	}
	return true
}

// Close stops the listeners, applies what committed, and flushes the WAL. Calling it
// again returns the first call's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.closeListeners()
		s.wg.Wait()
		s.closeErr = s.closeConsensus()
	})
	return s.closeErr
}
