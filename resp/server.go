// Package resp is nanokv's Redis frontend: the RESP2/RESP3 codec, connections, the
// connection-level commands (HELLO, AUTH, CLIENT, SELECT, MULTI/EXEC/WATCH, INFO, CONFIG,
// COMMAND) and the routing of every other command to the store: writes become proposals
// (one per pipelined read), reads run after the read barrier.
//
// It does not know how consensus works: it sees a Backend.
package resp

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nanokv/nanokv/internal/memlimit"
	"github.com/nanokv/nanokv/internal/netserve"
	"github.com/nanokv/nanokv/kvstore"
)

// Backend is what the frontend needs of a node.
type Backend interface {
	Store() *kvstore.Store
	// Propose submits a batch (kvstore encoding) and returns once it is committed. With a
	// sink, the applier writes the replies of the batch's ops to it and then calls
	// sink.Applied; without one the replies are dropped.
	Propose(batch []byte, sink kvstore.Sink) error
	// ReadBarrier returns once a read may be served linearizably.
	ReadBarrier(ctx context.Context) error
	// Info appends node-level INFO sections (persistence, raft...) for the section name
	// ("" for the default set); it reports whether it knew the section.
	Info(b *strings.Builder, section string) bool
	// ConfigGet returns the node-level settings CONFIG GET reports. ConfigCheck checks a
	// value for one of them (a name ConfigGet reports) and returns what sets it, so that
	// CONFIG SET changes nothing unless every value it names is good. The setter of one
	// parameter at most asks the cluster (remote) and may still fail; any other cannot.
	ConfigGet() map[string]string
	ConfigCheck(name, value string) (set func() error, remote bool, err error)
}

// AsyncBackend is a Backend an asynchronous event loop can serve (a cluster member): it
// proposes without waiting, and tells at once whether a read may be served.
type AsyncBackend interface {
	Backend
	netserve.AsyncBackend
	// TryReadBarrier reports whether a read may be served now without waiting for the
	// barrier (a leader's valid lease); false sends the read through ReadBarrierAsync.
	TryReadBarrier() bool
}

// Config are the frontend's settings, changeable with CONFIG SET.
type Config struct {
	RequirePass string
	// ConfigFile is the configuration file the node was started with (INFO's config_file).
	ConfigFile string
	// ACLFile is aclfile: the users file read at start and by ACL LOAD, written by ACL
	// SAVE ("" none). It cannot change while the server runs.
	ACLFile     string
	MaxBulk     int64 // proto-max-bulk-len
	QueryBufMax int64 // client-query-buffer-limit
	MaxClients  int
	// OutputLimits is client-output-buffer-limit, by class (outlimit.go); all zero at
	// NewServer: Redis's defaults.
	OutputLimits [3]OutputLimit
	// Timeout is timeout: seconds after which an idle client is closed (0: never).
	Timeout int64
	// TCPKeepAlive is tcp-keepalive: the keepalive interval of clients' sockets, in
	// seconds (0 at NewServer: Redis's default, 300).
	TCPKeepAlive int64
	// NotifyKeyspaceEvents: the keyspace events the store publishes (kvstore's
	// ParseNotifyFlags), notify-keyspace-events.
	NotifyKeyspaceEvents uint32
	// SlowlogSlowerThan (µs, negative: off) and SlowlogMaxLen: slowlog-log-slower-than
	// and slowlog-max-len; 0 and 0 at NewServer mean Redis's defaults, 10000 and 128.
	SlowlogSlowerThan, SlowlogMaxLen int64
	// LatencyMonitorThreshold is latency-monitor-threshold (ms; 0: off).
	LatencyMonitorThreshold int64
	// LatencyPercentiles is latency-tracking-info-percentiles (nil at NewServer: Redis's
	// 50 99 99.9).
	LatencyPercentiles []float64
	// TrackingTableMaxKeys is tracking-table-max-keys (0 at NewServer: Redis's default,
	// a million; CONFIG SET 0: no limit).
	TrackingTableMaxKeys int64
	Port                 int
	Bind                 string
	Version              string // nanokv's version, for INFO
	RedisVersion         string // the Redis version we answer as
	Logf                 func(format string, args ...any)
	// Shutdown is called by SHUTDOWN; nil refuses the command.
	Shutdown func()
	// Memory is the gauge of used memory against maxmemory, shared with the other
	// frontends and sampled by its owner; nil: the server keeps and samples its own.
	Memory *memlimit.Gauge
	// MaxMemory is what CONFIG SET maxmemory sets Memory's limit to, once the whole
	// CONFIG SET is valid; the limit itself is Memory's (memcached's cache_memlimit
	// sets it too).
	MaxMemory int64
	// MaxMemoryPolicy is what CONFIG SET maxmemory-policy sets Memory's policy to, as
	// MaxMemory its limit.
	MaxMemoryPolicy kvstore.EvictPolicy
	// MaxMemorySamples is what CONFIG SET maxmemory-samples sets Memory's to.
	MaxMemorySamples int
	// LFULogFactor and LFUDecayTime are lfu-log-factor and lfu-decay-time, the store's
	// (read from it at NewServer, set in it by CONFIG SET).
	LFULogFactor, LFUDecayTime int64
	// EventLoop serves connections from an asynchronous event loop (netserve.Loop, on
	// Linux) when the backend is an AsyncBackend: a cluster member. Without it, or on a
	// single node, every connection has a goroutine of its own.
	EventLoop bool
}

// Server serves RESP connections.
type Server struct {
	b     Backend
	start time.Time

	cfgMu sync.RWMutex
	cfg   Config
	// settings holds the values of Redis's parameters of settings.go, by name (under
	// cfgMu).
	settings map[string]string
	// latencyTracking is latency-tracking, for the connection commands' histograms (the
	// store's have their own switch, set with it).
	latencyTracking kvstore.LatencyTracking
	// outLimits is cfg.OutputLimits, for the paths that check them without cfgMu.
	outLimits atomic.Pointer[[3]OutputLimit]
	// mem is cfg.Memory, which never changes: read without cfgMu. ownMem: this server
	// samples it.
	mem    *memlimit.Gauge
	ownMem bool
	// aclFile and aclLogf are cfg's ACLFile and Logf, which never change: read without
	// cfgMu
	aclFile string
	aclLogf func(format string, args ...any)

	mu      sync.Mutex
	lns     []net.Listener
	conns   map[*conn]struct{}
	closed  bool
	handler sync.WaitGroup

	// done is closed by Close: commands that block (WAIT) give up.
	done chan struct{}

	// ps indexes the pub/sub subscriptions of this member's clients
	ps hub
	// track is the member's client-side caching table (tracking.go)
	track tracking
	// pause is CLIENT PAUSE's (pause.go)
	pause pauseState
	// mon is the member's MONITOR connections (monitor.go)
	mon monitorSet
	// acl is the member's users and ACL log (acl.go)
	acl *aclTable

	// ids, rates and peak are INFO's run_id and the like, its instantaneous metrics
	// and used_memory_peak (info.go)
	ids   serverIDs
	rates rates
	peak  peakMemory

	// sharder is b, if it answers cluster-aware clients, and shardOn its switch
	// (sharding.go)
	sharder Sharder
	shardOn *atomic.Bool

	loop  *netserve.Loop // nil: a goroutine per connection
	async AsyncBackend   // set with loop

	nextID atomic.Int64
	stats  struct {
		connections atomic.Uint64
		rejected    atomic.Uint64
		netIn       atomic.Uint64
		netOut      atomic.Uint64
		reads       atomic.Uint64 // network reads that brought bytes
		writes      atomic.Uint64 // network writes of replies
		blocked     atomic.Int64  // clients waiting in a blocking command
	}
	errors errorStats // the error replies sent (INFO errorstats)
	// connStats are the INFO commandstats counters of the connection commands the store
	// does not know, by name ("client|list" for a subcommand); made in NewServer.
	connStats map[string]*kvstore.CmdStats
}

// NewServer returns a server for b.
func NewServer(b Backend, cfg Config) *Server {
	if cfg.MaxBulk <= 0 {
		cfg.MaxBulk = DefaultMaxBulk
	}
	if cfg.QueryBufMax <= 0 {
		cfg.QueryBufMax = 1 << 30
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = 10000
	}
	if cfg.TCPKeepAlive == 0 {
		cfg.TCPKeepAlive = 300
	}
	if cfg.OutputLimits == ([3]OutputLimit{}) {
		cfg.OutputLimits = DefaultOutputLimits
	}
	if cfg.RedisVersion == "" {
		cfg.RedisVersion = "7.0.15"
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	ownMem := cfg.Memory == nil
	if ownMem {
		cfg.Memory = &memlimit.Gauge{}
	}

	if cfg.SlowlogSlowerThan == 0 && cfg.SlowlogMaxLen == 0 {
		cfg.SlowlogSlowerThan, cfg.SlowlogMaxLen = b.Store().Slowlog() // the store's defaults
	}
	cfg.LFULogFactor, cfg.LFUDecayTime = b.Store().LFU()
	if cfg.LatencyPercentiles == nil {
		cfg.LatencyPercentiles = defaultLatencyPercentiles
	}
	if cfg.TrackingTableMaxKeys == 0 {
		cfg.TrackingTableMaxKeys = defaultTrackingMaxKeys
	}
	s := &Server{b: b, cfg: cfg, mem: cfg.Memory, ownMem: ownMem, start: time.Now(), conns: map[*conn]struct{}{}, done: make(chan struct{}), acl: newACLTable(cfg.RequirePass), settings: defaultSettings()}
	s.aclFile, s.aclLogf = cfg.ACLFile, cfg.Logf
	if s.sharder, _ = b.(Sharder); s.sharder != nil {
		s.shardOn = s.sharder.ShardingSwitch()
	}
	s.ids = newServerIDs(cfg.Version)
	limits := cfg.OutputLimits
	s.outLimits.Store(&limits)
	s.connStats = newConnStats(&s.latencyTracking) // before the sampler, which sums them
	s.handler.Add(1)
	go s.sampleRates()
	if cfg.ACLFile != "" {
		// checked by the caller before it starts anything (CheckACLFile), as Redis
		// aborts its start on an ACL error
		if _, err := s.acl.loadFile(cfg.ACLFile); err != nil {
			cfg.Logf("resp: aclfile: %v", err)
		}
	}
	s.track.s, s.track.maxKeys = s, cfg.TrackingTableMaxKeys
	b.Store().SetPublisher(&s.ps)
	b.Store().SetScriptMonitor(s.feedScript)
	b.Store().SetNotifyFlags(cfg.NotifyKeyspaceEvents)
	b.Store().SetSlowlog(cfg.SlowlogSlowerThan, cfg.SlowlogMaxLen)
	b.Store().SetLatencyThreshold(cfg.LatencyMonitorThreshold)
	if ab, ok := b.(AsyncBackend); ok && cfg.EventLoop {
		l, err := netserve.NewAsyncLoop(ab, cfg.Logf)
		if err != nil {
			cfg.Logf("resp: a goroutine per connection: %v", err)
		} else {
			s.loop, s.async = l, ab
			s.handler.Add(1)
			go func() {
				defer s.handler.Done()
				l.Run()
			}()
		}
	}
	return s
}

func (s *Server) config() Config {
	s.cfgMu.RLock()
	defer s.cfgMu.RUnlock()
	return s.cfg
}

// Serve accepts connections on ln until Close.
func (s *Server) Serve(ln net.Listener) error {
	return netserve.Serve(&s.mu, &s.closed, &s.lns, ln, func(nc net.Conn) {
		s.stats.connections.Add(1)
		if tc, ok := nc.(*net.TCPConn); ok {
			setKeepAlive(tc, s.config().TCPKeepAlive)
		}
		c := newConn(s, nc)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return
		}
		if len(s.conns) >= s.config().MaxClients {
			s.mu.Unlock()
			s.stats.rejected.Add(1)
			nc.Write([]byte("-ERR max number of clients reached\r\n"))
			nc.Close()
			return
		}
		s.conns[c] = struct{}{}
		if sc, ok := nc.(syscall.Conn); ok && s.loop != nil {
			c.nc, c.async = nil, true
			c.setCloser(func() { s.loop.Kill(c) })
			err := s.loop.Add(c, sc)
			if err == nil {
				s.mu.Unlock()
				nc.Close() // the loop serves the socket through its own descriptor
				return
			}
			s.config().Logf("resp: a goroutine for client %s: %v", c.addr, err)
			c.nc, c.async = nc, false
		}
		if !c.async {
			c.setCloser(func() { shutdown(nc) })
		}
		s.handler.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.handler.Done()
			c.serve()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	})
}

// Close stops the listeners and closes every connection, waiting for their goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if !s.closed {
		close(s.done)
	}
	s.closed = true
	for _, ln := range s.lns {
		ln.Close()
	}
	for c := range s.conns {
		if c.nc != nil {
			c.nc.Close()
		}
	}
	s.mu.Unlock()
	if s.loop != nil {
		s.loop.Close() // not under mu: the loop takes it to forget a connection
	}
	s.handler.Wait()
	return nil
}

// NumClients is the number of open connections.
func (s *Server) NumClients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// LoopClients is the number of connections the event loop serves now (the rest have a
// goroutine each).
func (s *Server) LoopClients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.conns {
		if c.async {
			n++
		}
	}
	return n
}
