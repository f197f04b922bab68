package mcproto

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nanokv/nanokv/internal/netserve"
	"github.com/nanokv/nanokv/kvstore"
)

// eventLoop serves every connection of a Server from one goroutine, as memcached's
// worker thread serves its connections. Each round it takes the sockets that have data,
// reads each once, handles what arrived, proposes the writes of all of them together,
// and writes every connection's replies.
//
// A goroutine per connection costs a single node a scheduler round trip per request: the
// poller wakes the goroutine, and it parks again after its write. Here one wake-up of the
// loop serves every connection that became ready meanwhile, and the round's writes reach
// consensus as one ProposeMany: one entry per connection (each with its own reply sink),
// one WAL write and one wake-up of the applier for all of them.
//
// The loop's epoll instance is itself registered with Go's poller, so the goroutine
// parks like any other while nothing is ready, and the process's P is free for the
// applier and the other frontends meanwhile.
type eventLoop struct {
	s    *Server
	epfd int
	ef   *os.File // epfd, as Go's poller sees it
	many BatchBackend
	stop atomic.Bool

	mu    sync.Mutex
	conns map[int32]*conn // by fd

	// the loop goroutine's own, reused every round
	events   []syscall.EpollEvent
	round    []*conn
	proposed []*conn
	data     [][]byte
	sinks    []kvstore.Sink
	blind    []bool
	errs     []error
}

// loopConnState is what a connection carries under the event loop.
type loopConnState struct {
	fd      int
	sent    int    // bytes of out already written
	closing bool   // close once out is written
	outWait bool   // registered for EPOLLOUT: the socket's buffer was full
	ready   uint32 // this round's epoll events
}

// maxEvents is how many ready sockets one round takes at most.
const maxEvents = 256

func newEventLoop(s *Server, many BatchBackend) (*eventLoop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("mcproto: epoll_create1: %w", err)
	}
	if err := syscall.SetNonblock(epfd, true); err != nil {
		syscall.Close(epfd)
		return nil, fmt.Errorf("mcproto: epoll fd: %w", err)
	}
	l := &eventLoop{
		s: s, epfd: epfd, many: many,
		ef:     os.NewFile(uintptr(epfd), "mcproto-epoll"), // non-blocking: pollable
		conns:  map[int32]*conn{},
		events: make([]syscall.EpollEvent, maxEvents),
	}
	return l, nil
}

// add takes over nc: the loop serves its socket from now on, and nc is closed. Called
// by the accept loop with s.mu held.
func (l *eventLoop) add(c *conn, nc syscall.Conn) error {
	rc, err := nc.SyscallConn()
	if err != nil {
		return err
	}
	// A duplicate, so that closing nc takes the socket out of Go's poller and leaves it
	// open for the loop's epoll alone. Both descriptors share the socket's O_NONBLOCK.
	fd := -1
	var dupErr error
	if err := rc.Control(func(f uintptr) {
		r, _, e := syscall.Syscall(syscall.SYS_FCNTL, f, syscall.F_DUPFD_CLOEXEC, 0)
		if e != 0 {
			dupErr = e
			return
		}
		fd = int(r)
	}); err != nil {
		return err
	}
	if dupErr != nil {
		return dupErr
	}
	c.fd = fd
	l.mu.Lock()
	l.conns[int32(fd)] = c
	l.mu.Unlock()
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		l.mu.Lock()
		delete(l.conns, int32(fd))
		l.mu.Unlock()
		syscall.Close(fd)
		return err
	}
	return nil
}

// run serves until close; then it closes every connection it has.
func (l *eventLoop) run() {
	defer l.closeAll()
	rc, err := l.ef.SyscallConn()
	if err != nil {
		l.s.cfg.Logf("mcproto: event loop: %v", err)
		return
	}
	_ = rc.Read(func(uintptr) bool {
		for !l.stop.Load() {
			n, err := syscall.EpollWait(l.epfd, l.events, 0)
			switch {
			case err == syscall.EINTR:
				continue
			case err != nil:
				l.s.cfg.Logf("mcproto: epoll_wait: %v", err)
				return true
			case n == 0:
				// Nothing ready: park until Go's poller sees the epoll instance ready.
				// Readiness that arrives after this look is not lost: the poller
				// records it, and the wait returns at once.
				return false
			}
			l.serveRound(l.events[:n])
		}
		return true
	})
}

// close stops the loop and returns once it has let go of its epoll instance; run then
// closes the connections. It must not be called with s.mu held.
func (l *eventLoop) close() {
	l.stop.Store(true)
	l.ef.Close() // wakes the parked loop, and waits for a busy one to see stop
}

// serveRound serves the connections of one epoll_wait.
func (l *eventLoop) serveRound(evs []syscall.EpollEvent) {
	now := time.Now().UnixMilli()
	round := l.round[:0]
	l.mu.Lock()
	for _, ev := range evs {
		if c := l.conns[ev.Fd]; c != nil {
			c.ready = ev.Events
			round = append(round, c)
		}
	}
	l.mu.Unlock()
	l.round = round

	for _, c := range round {
		if c.outWait {
			continue // it reads again once its replies are out
		}
		n, err := syscall.Read(c.fd, c.space())
		switch {
		case err == syscall.EAGAIN || err == syscall.EINTR:
			continue // LT epoll reports it again if there is data
		case err != nil || n <= 0: // failed, or the peer closed its side
			c.closing = true
			continue
		}
		c.now = now
		if !c.consume(n) {
			c.closing = true
		}
	}
	l.propose(round)
	for _, c := range round {
		l.send(c)
	}
	clear(round) // hold no closed connection until the next round
}

// propose proposes the open batches of the round's connections as consecutive entries
// and renders their replies.
func (l *eventLoop) propose(round []*conn) {
	l.proposed, l.data, l.sinks, l.blind = l.proposed[:0], l.data[:0], l.sinks[:0], l.blind[:0]
	for _, c := range round {
		data, blind, ok := c.cutBatch()
		if !ok {
			continue
		}
		var sink kvstore.Sink
		if !blind {
			sink = c
		}
		l.proposed = append(l.proposed, c)
		l.data = append(l.data, data)
		l.sinks = append(l.sinks, sink)
		l.blind = append(l.blind, blind)
	}
	if len(l.proposed) == 0 {
		return
	}
	if cap(l.errs) < len(l.data) {
		l.errs = make([]error, len(l.data))
	}
	l.errs = l.errs[:len(l.data)] // nil: cleared after every round
	l.many.ProposeMany(l.data, l.sinks, l.errs)
	now := time.Now().UnixMilli()
	for i, c := range l.proposed {
		c.finishBatch(l.blind[i], l.errs[i], now)
	}
	clear(l.errs)
	clear(l.data) // the log holds the batches now; the loop must not keep them alive
	clear(l.sinks)
	clear(l.proposed)
}

// send writes what c has to send. A socket whose buffer fills is watched for EPOLLOUT
// instead of EPOLLIN until the rest is out, so a client that does not read its replies
// makes the loop stop reading its requests, as memcached does.
func (l *eventLoop) send(c *conn) {
	for c.sent < len(c.out) {
		n, err := syscall.Write(c.fd, c.out[c.sent:])
		if n > 0 {
			c.sent += n
			c.s.stats.bytesWritten.Add(uint64(n))
			netserve.CountWritten(n)
		}
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			break
		}
		if err != nil {
			l.drop(c)
			return
		}
	}
	if c.sent < len(c.out) {
		switch {
		case c.closing:
			l.drop(c)
		case !c.outWait:
			c.outWait = l.watch(c, syscall.EPOLLOUT)
		}
		return
	}
	c.sent = 0
	if cap(c.out) > 1<<20 {
		c.out = nil
	} else {
		c.out = c.out[:0]
	}
	if c.closing {
		l.drop(c)
		return
	}
	if c.outWait {
		c.outWait = !l.watch(c, syscall.EPOLLIN)
	}
}

// watch sets the events the loop waits for on c; false (and c dropped) if it failed.
func (l *eventLoop) watch(c *conn, events uint32) bool {
	ev := syscall.EpollEvent{Events: events, Fd: int32(c.fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, c.fd, &ev); err != nil {
		l.drop(c)
		return false
	}
	return true
}

// drop closes c and forgets it.
func (l *eventLoop) drop(c *conn) {
	if c.fd < 0 {
		return
	}
	l.mu.Lock()
	delete(l.conns, int32(c.fd))
	l.mu.Unlock()
	// Closing the last descriptor of a socket takes it out of the epoll set.
	syscall.Close(c.fd)
	c.fd = -1
	c.s.forget(c)
}

// closeAll closes every connection once the loop has stopped.
func (l *eventLoop) closeAll() {
	l.mu.Lock()
	cs := make([]*conn, 0, len(l.conns))
	for _, c := range l.conns {
		cs = append(cs, c)
	}
	l.mu.Unlock()
	for _, c := range cs {
		l.drop(c)
	}
}
