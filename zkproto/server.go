package zkproto

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nanokv/nanokv/internal/netserve"
	"github.com/nanokv/nanokv/kvstore"
)

// Backend is what the frontend needs of a node.
type Backend interface {
	Store() *kvstore.Store
	// ProposeAnywhere submits a batch from this member, leader or not (a follower
	// forwards it to the leader), and returns once it is committed here. With a sink,
	// this member's applier writes the batch's results to it and then calls
	// sink.Applied. An error means the outcome is unknown.
	ProposeAnywhere(batch []byte, sink kvstore.Sink) error
	// IsLeader reports whether this member leads (a single node always does): only the
	// leader decides that sessions expired and that containers and TTL nodes are due.
	IsLeader() bool
	// Mode is what srvr and mntr report: "standalone", "leader" or "follower".
	Mode() string
}

// Config are the frontend's settings, named after ZooKeeper's zoo.cfg.
type Config struct {
	// TickTime is ZooKeeper's tickTime: session timeouts are clamped to [2, 20] ticks
	// unless MinSessionTimeout/MaxSessionTimeout say otherwise.
	TickTime          time.Duration
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// MaxBuffer is jute.maxbuffer: the largest packet accepted.
	MaxBuffer int
	// MaxClientCnxns bounds the connections (0: 1024).
	MaxClientCnxns int
	// FourLetterWords is 4lw.commands.whitelist: the four-letter words answered ("*":
	// all of them).
	FourLetterWords []string
	// ExtendedTypes is zookeeper.extendedTypesEnabled: TTL nodes.
	ExtendedTypes bool
	// ServerID is this member's id (conf, srvr).
	ServerID uint64
	DataDir  string
	Logf     func(format string, args ...any)
	// SessionsChanged, if set, is told the number of sessions connected here whenever it
	// changes (under the server's lock: it must not call back).
	SessionsChanged func(n int)
	// Async, if set, serves the sessions from one asynchronous event loop that proposes
	// through it (loopconn.go; a cluster member, on Linux) instead of a goroutine each.
	// Its ProposeAsync must work on any member, as ProposeAnywhere does.
	Async netserve.AsyncBackend
}

// Version is the ZooKeeper version nanokv answers as (srvr, envi, mntr).
const Version = "3.8.0-nanokv"

// Server serves ZooKeeper clients on one member.
type Server struct {
	b       Backend
	store   *kvstore.Store
	cfg     Config
	watches *watchManager
	start   time.Time

	loop *netserve.Loop // nil: a goroutine per session

	mu       sync.Mutex
	lns      []net.Listener
	conns    map[*conn]struct{}
	bySess   map[int64]map[*conn]struct{}
	closed   bool
	handlers sync.WaitGroup
	stop     chan struct{}

	stats serverStats
}

type serverStats struct {
	received, sent atomic.Uint64
	latencyTotalUs atomic.Int64
	latencyCount   atomic.Int64
	latencyMaxUs   atomic.Int64
}

// NewServer returns a frontend for b and starts its session upkeep: touches for the
// sessions connected here, and on the leader the expiry of sessions and the reaping of
// containers and TTL nodes.
func NewServer(b Backend, cfg Config) *Server {
	if cfg.TickTime <= 0 {
		cfg.TickTime = 2 * time.Second
	}
	if cfg.MinSessionTimeout <= 0 {
		cfg.MinSessionTimeout = 2 * cfg.TickTime
	}
	if cfg.MaxSessionTimeout <= 0 {
		cfg.MaxSessionTimeout = 20 * cfg.TickTime
	}
	if cfg.MaxBuffer <= 0 {
		cfg.MaxBuffer = DefaultMaxBuffer
	}
	if cfg.MaxClientCnxns <= 0 {
		cfg.MaxClientCnxns = 1024
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	s := &Server{b: b, store: b.Store(), cfg: cfg, watches: newWatchManager(), start: time.Now(),
		conns: map[*conn]struct{}{}, bySess: map[int64]map[*conn]struct{}{}, stop: make(chan struct{})}
	s.store.SetZKWatcher(s.applied)
	s.handlers.Add(1)
	go s.upkeep()
	if cfg.Async != nil {
		if l, err := netserve.NewAsyncLoop(cfg.Async, cfg.Logf); err != nil {
			cfg.Logf("zkproto: a goroutine per session: %v", err)
		} else {
			s.loop = l
			s.handlers.Add(1)
			go func() {
				defer s.handlers.Done()
				l.Run()
			}()
		}
	}
	return s
}

// applied receives the events of every ZooKeeper transaction this member applies, with
// the tree still locked: it only queues.
func (s *Server) applied(evs []kvstore.ZKEvent) {
	for _, ev := range evs {
		if ev.Type == kvstore.ZKEventSessionClosed {
			s.mu.Lock()
			for c := range s.bySess[ev.Session] {
				c.expire()
			}
			s.mu.Unlock()
			continue
		}
		s.watches.trigger(ev)
	}
}

// Serve accepts connections on ln until Close.
func (s *Server) Serve(ln net.Listener) error {
	return netserve.Serve(&s.mu, &s.closed, &s.lns, ln, func(nc net.Conn) {
		s.mu.Lock()
		if s.closed || len(s.conns) >= s.cfg.MaxClientCnxns {
			s.mu.Unlock()
			nc.Close()
			return
		}
		c := newConn(s, nc)
		s.conns[c] = struct{}{}
		s.handlers.Add(1)
		s.mu.Unlock()
		go func() {
			if s.loop == nil {
				defer s.handlers.Done()
				c.serve()
				s.forget(c)
				return
			}
			// The handshake waits for its session's proposal: here, before the loop
			// takes the socket. The loop then holds the session's handlers count.
			buf, start, end, ok := c.open()
			if !ok {
				c.nc.Close()
				s.forget(c)
				s.handlers.Done()
				return
			}
			s.bind(c, c.sess)
			if !c.serveOnLoop(buf, start, end) {
				defer s.handlers.Done()
				c.serveFrom(buf, start, end)
				s.forget(c)
			}
		}()
	})
}

// bind records that c now speaks for session id. c.sess and c.timeout are set before
// and never change after: whoever finds c in bySess under mu may read them.
func (s *Server) bind(c *conn, id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.bySess[id]
	if m == nil {
		m = map[*conn]struct{}{}
		s.bySess[id] = m
		s.sessionsChanged()
	}
	m[c] = struct{}{}
}

// sessionsChanged reports the number of sessions connected here; under mu.
func (s *Server) sessionsChanged() {
	if s.cfg.SessionsChanged != nil {
		s.cfg.SessionsChanged(len(s.bySess))
	}
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	if m := s.bySess[c.sess]; m != nil {
		delete(m, c)
		if len(m) == 0 {
			delete(s.bySess, c.sess)
			s.sessionsChanged()
		}
	}
	s.mu.Unlock()
}

// Close stops the listeners and the upkeep, and closes every connection.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	for _, ln := range s.lns {
		ln.Close()
	}
	for c := range s.conns {
		c.kill()
	}
	s.mu.Unlock()
	if s.loop != nil {
		s.loop.Close() // not under mu: the loop takes it to forget a connection it closes
	}
	s.handlers.Wait()
	s.store.SetZKWatcher(nil)
	return nil
}

// LoopSessions is the number of sessions the event loop serves (the others have a
// goroutine each).
func (s *Server) LoopSessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.conns {
		if c.async.Load() {
			n++
		}
	}
	return n
}

// NumConns is the number of open connections.
func (s *Server) NumConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *Server) connList() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

// upkeepEvery paces the session upkeep. A session's timeout is at least two ticks (4 s
// by default); touching its sessions every half tick keeps every session that talks to
// this member alive with a margin, at the cost of one small entry per period.
func (s *Server) upkeepEvery() time.Duration { return s.cfg.TickTime / 2 }

// upkeep touches the sessions whose clients were heard here since the last round (their
// writes touch them already; pings and reads do not reach the log otherwise), and, on
// the leader, proposes the expiry of sessions nobody touched within their timeout and
// the deletion of due containers and TTL nodes. A member that just became leader waits
// one maximum session timeout before expiring anything: the touches of the previous
// term may not have reached the log.
func (s *Server) upkeep() {
	defer s.handlers.Done()
	t := time.NewTicker(s.upkeepEvery())
	defer t.Stop()
	var leaderSince time.Time
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.touchSessions()
		if !s.b.IsLeader() {
			leaderSince = time.Time{}
			continue
		}
		if leaderSince.IsZero() {
			leaderSince = time.Now()
		}
		sessions, paths := s.store.ZKDue(time.Now().UnixMilli())
		if time.Since(leaderSince) < s.cfg.MaxSessionTimeout {
			sessions = nil
		}
		var batch []byte
		if len(sessions) > 0 {
			batch = kvstore.AppendZK(batch, &kvstore.ZKTxn{Kind: kvstore.ZKTxnExpireSessions, Sessions: sessions})
		}
		if len(paths) > 0 {
			batch = kvstore.AppendZK(batch, &kvstore.ZKTxn{Kind: kvstore.ZKTxnReap, Paths: paths})
		}
		if len(batch) > 0 {
			if err := s.b.ProposeAnywhere(batch, nil); err != nil {
				s.cfg.Logf("zkproto: session expiry: %v", err)
			}
		}
	}
}

func (s *Server) touchSessions() {
	var ids []int64
	s.mu.Lock()
	for id, conns := range s.bySess {
		for c := range conns {
			if c.heard.Swap(false) {
				ids = append(ids, id)
				break
			}
		}
	}
	s.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	batch := kvstore.AppendZK(nil, &kvstore.ZKTxn{Kind: kvstore.ZKTxnTouch, Sessions: ids})
	if err := s.b.ProposeAnywhere(batch, nil); err != nil {
		s.cfg.Logf("zkproto: session touch: %v", err)
	}
}

// negotiateTimeout clamps a requested session timeout as ZooKeeper does.
func (s *Server) negotiateTimeout(ms int32) int32 {
	lo, hi := int32(s.cfg.MinSessionTimeout.Milliseconds()), int32(s.cfg.MaxSessionTimeout.Milliseconds())
	return min(max(ms, lo), hi)
}

func (s *Server) observeLatency(d time.Duration) {
	us := d.Microseconds()
	s.stats.latencyTotalUs.Add(us)
	s.stats.latencyCount.Add(1)
	for {
		old := s.stats.latencyMaxUs.Load()
		if us <= old || s.stats.latencyMaxUs.CompareAndSwap(old, us) {
			return
		}
	}
}
