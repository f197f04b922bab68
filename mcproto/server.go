// Package mcproto is nanokv's memcached frontend: the text protocol of memcached 1.6
// (storage, retrieval, incr/decr, touch, flush_all, stats and the meta commands), over the
// same replicated store as the Redis frontend. Writes become kvstore memcached commands,
// one proposal per pipelined network read; reads pass the backend's read barrier and then
// read the store directly.
//
// It does not know how consensus works or how the node is wired: it sees a Backend.
package mcproto

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nanokv/nanokv/internal/memlimit"
	"github.com/nanokv/nanokv/internal/netserve"
	"github.com/nanokv/nanokv/kvstore"
)

// Backend is what the frontend needs of a node (a subset of what resp needs).
type Backend interface {
	Store() *kvstore.Store
	// Propose submits a batch and returns once it is committed. With a sink, the applier
	// writes the replies of the batch's ops to it and then calls sink.Applied.
	Propose(batch []byte, sink kvstore.Sink) error
	// ReadBarrier returns once a read may be served linearizably.
	ReadBarrier(ctx context.Context) error
}

// BatchBackend is a Backend that can propose several batches at once, each with its own
// sink, and answer each (server.Server: one WAL write on a single node). The event loop
// needs it.
type BatchBackend interface {
	Backend
	// ProposeMany is Propose for every batches[i] with sinks[i]; it returns once all are
	// answered, with errs[i] (as long as batches) what Propose would have returned.
	ProposeMany(batches [][]byte, sinks []kvstore.Sink, errs []error)
}

// AsyncBackend is a Backend that an asynchronous event loop can serve (a cluster
// member): it proposes without waiting, and tells at once whether a read may be served.
type AsyncBackend interface {
	Backend
	netserve.AsyncBackend
	// TryReadBarrier reports whether a read may be served now without waiting for the
	// barrier (a leader's valid lease); false sends the read through ReadBarrierAsync.
	TryReadBarrier() bool
}

// Config are the frontend's settings.
type Config struct {
	ItemSizeMax int // memcached -I: the largest item (with key and header), bytes
	MaxConns    int // memcached -c
	Port        int // for stats settings
	Bind        string
	Version     string // the memcached version we answer as (VERSION, stats)
	// EventLoop serves every connection from one goroutine (netserve.Loop) instead of
	// one goroutine per connection. It needs Linux, and a BatchBackend (a synchronous
	// loop, for a backend that commits at once: a single node) or with Async an
	// AsyncBackend (an asynchronous loop, for a cluster member).
	EventLoop bool
	Async     bool
	Logf      func(format string, args ...any)
	// Memory is used memory against maxmemory: over it, storage commands answer
	// "SERVER_ERROR out of memory storing object", as memcached -M does when full.
	// nil: no limit.
	Memory *memlimit.Gauge
}

// Server serves memcached connections.
type Server struct {
	b     Backend
	cfg   Config
	start time.Time

	mu    sync.Mutex
	lns   []net.Listener
	conns map[*conn]struct{}
	// listeners numbers the listeners for "stats conns", from the connections' counter
	listeners []listenerInfo
	nextID    atomic.Uint64
	closed    bool
	loop      *netserve.Loop // nil: a goroutine per connection
	async     AsyncBackend   // set when loop is asynchronous
	handler   sync.WaitGroup

	stats stats
}

// stats are the counters "stats" reports, named as memcached names them.
type stats struct {
	totalConns, rejectedConns                          atomic.Uint64
	cmdGet, cmdSet, cmdFlush, cmdTouch, cmdMeta        atomic.Uint64
	getHits, getMisses                                 atomic.Uint64
	getExpired, getFlushed                             atomic.Uint64
	deleteHits, deleteMisses                           atomic.Uint64
	incrHits, incrMisses, decrHits, decrMisses         atomic.Uint64
	casHits, casMisses, casBadval                      atomic.Uint64
	touchHits, touchMisses                             atomic.Uint64
	storeTooLarge, bytesRead, bytesWritten, totalItems atomic.Uint64
	storeNoMemory                                      atomic.Uint64
	verbosity                                          atomic.Uint32
	crawlerOn                                          atomic.Bool // lru_crawler enable/disable
	_                                                  [0]func()   // not comparable
}

// NewServer returns a server for b.
func NewServer(b Backend, cfg Config) *Server {
	if cfg.ItemSizeMax <= 0 {
		cfg.ItemSizeMax = DefaultItemSizeMax
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 1024
	}
	if cfg.Version == "" {
		cfg.Version = "1.6.18"
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	s := &Server{b: b, cfg: cfg, start: time.Now(), conns: map[*conn]struct{}{}}
	s.stats.crawlerOn.Store(true) // memcached starts its LRU crawler
	if cfg.EventLoop {
		var l *netserve.Loop
		var err error
		if ab, ok := b.(AsyncBackend); ok && cfg.Async {
			if l, err = netserve.NewAsyncLoop(ab, cfg.Logf); err == nil {
				s.async = ab
			}
		} else if many, ok := b.(BatchBackend); ok && !cfg.Async {
			l, err = netserve.NewLoop(many.ProposeMany, cfg.Logf)
		}
		switch {
		case l == nil && err == nil:
			cfg.Logf("mcproto: a goroutine per connection: the backend has no event loop")
		case err != nil:
			cfg.Logf("mcproto: a goroutine per connection: %v", err)
		default:
			s.loop = l
			s.handler.Add(1)
			go func() {
				defer s.handler.Done()
				l.Run()
			}()
		}
	}
	return s
}

// listenerInfo is a listener as "stats conns" shows it.
type listenerInfo struct {
	id   uint64
	addr string
}

// Serve accepts connections on ln until Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	s.listeners = append(s.listeners, listenerInfo{s.nextID.Add(1), ln.Addr().String()})
	s.mu.Unlock()
	return netserve.Serve(&s.mu, &s.closed, &s.lns, ln, func(nc net.Conn) {
		s.stats.totalConns.Add(1)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return
		}
		if len(s.conns) >= s.cfg.MaxConns {
			s.mu.Unlock()
			s.stats.rejectedConns.Add(1)
			nc.Write([]byte("ERROR Too many open connections\r\n"))
			nc.Close()
			return
		}
		c := newConn(s, nc)
		if sc, ok := nc.(syscall.Conn); ok && s.loop != nil {
			c.nc, c.async = nil, s.async != nil
			err := s.loop.Add(c, sc)
			if err == nil {
				s.conns[c] = struct{}{}
				s.mu.Unlock()
				nc.Close() // the loop serves the socket through its own descriptor
				return
			}
			s.cfg.Logf("mcproto: a goroutine for this connection: %v", err)
			c.nc = nc
		}
		s.conns[c] = struct{}{}
		s.handler.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.handler.Done()
			c.serve()
			s.forget(c)
		}()
	})
}

// forget drops a closed connection from the count.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Close stops the listeners and closes every connection, waiting for their goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
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
		s.loop.Close() // not under mu: it waits for the loop, which takes mu to drop a connection
	}
	s.handler.Wait()
	return nil
}

// NumConns is the number of open connections.
func (s *Server) NumConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
