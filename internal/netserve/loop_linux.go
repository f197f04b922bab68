package netserve

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/nanokv/nanokv/kvstore"
)

// Loop serves many connections from one goroutine, as the event loops of Redis and of
// memcached's worker threads do. Each round it takes the sockets that have data, reads
// each once, has each connection handle what arrived, proposes the writes those left
// open, and writes every connection's replies.
//
// A goroutine per connection costs a scheduler round trip per request: the poller wakes
// the goroutine, it parks to wait for its commit, and it parks again after its write.
// Here one wake-up of the loop serves every connection that became ready meanwhile.
//
// The loop's epoll instance is itself registered with Go's poller, so the goroutine
// parks like any other while nothing is ready, and the process's P is free for the
// applier and the other frontends meanwhile.
//
// A loop is synchronous (NewLoop) or asynchronous (NewAsyncLoop):
//
//   - A synchronous round proposes its writes together, as one ProposeMany (an entry
//     per connection, each with its own reply sink: one WAL write and one wake-up of the
//     applier for all of them), and waits for it. That is for a backend that commits at
//     once: a single node.
//   - An asynchronous round hands each connection's batch to the backend and goes on;
//     the outcomes come back through an eventfd in the epoll set, and each wakes its
//     connection, which then answers and goes on with what it had buffered. That is for
//     a cluster member, whose commit is a round trip to the other members away: a
//     synchronous round would leave every connection idle for it.
type Loop struct {
	epfd    int
	ef      *os.File // epfd, as Go's poller sees it
	propose ProposeMany
	logf    func(format string, args ...any)
	stop    atomic.Bool

	mu    sync.Mutex
	conns map[int32]*loopConn // by fd

	// the loop goroutine's own, reused every round
	events   []syscall.EpollEvent
	round    []*loopConn
	proposed []LoopConn
	data     [][]byte
	sinks    []kvstore.Sink
	errs     []error

	// an asynchronous loop's
	async   AsyncBackend
	efd     int  // eventfd: outcomes are queued (-1 on a synchronous loop)
	efdGone bool // under cmu: Close closed efd
	roundNo uint64
	again   []*loopConn // read to a full buffer: read again next round, events or not
	cmu     sync.Mutex
	done    []outcome // under cmu
	spare   []outcome // the loop's: done's other buffer
	tick    bool      // under cmu: time to look for requests past their deadline
	timer   *time.Timer
	armed   bool // the loop's: timer will tick
	waiting int  // the loop's: connections with something in flight
}

// loopConn is a connection as the loop keeps it.
type loopConn struct {
	c       LoopConn
	fd      int
	sent    int  // bytes of Output already written
	closing bool // close once Output is written (and nothing is in flight)
	outWait bool // registered for EPOLLOUT: the socket's buffer was full

	// an asynchronous loop's
	ac       AsyncConn
	inflight bool   // a batch or the barrier is with the backend
	barrier  bool   // what is in flight is the barrier
	gen      uint64 // counts what it handed the backend: an outcome names the one it is for
	deadline int64  // when what is in flight times out (unix ms)
	readable bool   // the socket may hold unread data (epoll is edge-triggered)
	roundNo  uint64 // the last round it took part in
}

// maxEvents is how many ready sockets one round takes at most.
const maxEvents = 256

// NewLoop returns a synchronous loop that proposes with propose; Run serves it.
func NewLoop(propose ProposeMany, logf func(format string, args ...any)) (*Loop, error) {
	l, err := newLoop(logf)
	if err != nil {
		return nil, err
	}
	l.propose = propose
	return l, nil
}

// NewAsyncLoop returns an asynchronous loop that proposes through b; Run serves it.
// Its connections must be AsyncConns.
func NewAsyncLoop(b AsyncBackend, logf func(format string, args ...any)) (*Loop, error) {
	l, err := newLoop(logf)
	if err != nil {
		return nil, err
	}
	r, _, e := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if e != 0 {
		l.ef.Close()
		return nil, fmt.Errorf("netserve: eventfd: %w", e)
	}
	l.async, l.efd = b, int(r)
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(l.efd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, l.efd, &ev); err != nil {
		l.ef.Close()
		syscall.Close(l.efd)
		return nil, fmt.Errorf("netserve: eventfd: %w", err)
	}
	return l, nil
}

func newLoop(logf func(format string, args ...any)) (*Loop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("netserve: epoll_create1: %w", err)
	}
	if err := syscall.SetNonblock(epfd, true); err != nil {
		syscall.Close(epfd)
		return nil, fmt.Errorf("netserve: epoll fd: %w", err)
	}
	return &Loop{
		epfd: epfd, logf: logf, efd: -1,
		ef:     os.NewFile(uintptr(epfd), "netserve-epoll"), // non-blocking: pollable
		conns:  map[int32]*loopConn{},
		events: make([]syscall.EpollEvent, maxEvents),
	}, nil
}

// epollET is EPOLLET as the event mask's bit (syscall has it as a negative int).
const epollET = 1 << 31

// inEvents is what the loop waits for on a socket it reads: an asynchronous loop is
// edge-triggered, so that a connection whose batch is in flight, with more requests
// waiting in its socket, is not reported again and again until it is read.
func (l *Loop) inEvents() uint32 {
	if l.async != nil {
		return syscall.EPOLLIN | epollET
	}
	return syscall.EPOLLIN
}

// Add hands nc to the loop, which serves its socket as c from then on; the caller
// closes nc once Add returns nil. It must not be called once Close has been.
func (l *Loop) Add(c LoopConn, nc syscall.Conn) error {
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
	lc := &loopConn{c: c, fd: fd}
	if l.async != nil {
		ac, ok := c.(AsyncConn)
		if !ok {
			syscall.Close(fd)
			return errors.New("netserve: an asynchronous loop needs an AsyncConn")
		}
		lc.ac = ac
		if k, ok := c.(Kickable); ok {
			k.SetKick(func(close bool) { l.queue(outcome{lc: lc, kick: true, close: close}) })
		}
	}
	l.mu.Lock()
	l.conns[int32(fd)] = lc
	l.mu.Unlock()
	ev := syscall.EpollEvent{Events: l.inEvents(), Fd: int32(fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		l.mu.Lock()
		delete(l.conns, int32(fd))
		l.mu.Unlock()
		syscall.Close(fd)
		return err
	}
	return nil
}

// Run serves until Close; then it closes every connection it has.
func (l *Loop) Run() {
	defer l.closeAll()
	rc, err := l.ef.SyscallConn()
	if err != nil {
		l.logf("netserve: event loop: %v", err)
		return
	}
	err = rc.Read(func(uintptr) bool {
		for !l.stop.Load() {
			n, err := syscall.EpollWait(l.epfd, l.events, 0)
			switch {
			case err == syscall.EINTR:
				continue
			case err != nil:
				l.logf("netserve: epoll_wait: %v", err)
				return true
			case n == 0 && len(l.again) == 0:
				// Nothing ready: park until Go's poller sees the epoll instance ready.
				// Readiness that arrives after this look is not lost: the poller
				// records it, and the wait returns at once. (An outcome queued
				// meanwhile made the eventfd readable.)
				return false
			}
			if l.async != nil {
				l.serveAsyncRound(l.events[:n])
			} else {
				l.serveRound(l.events[:n])
			}
		}
		return true
	})
	if err != nil && !l.stop.Load() {
		// The poller gave up on the epoll instance: the connections are closed (by
		// closeAll) rather than left unserved.
		l.logf("netserve: event loop stopped: %v", err)
	}
}

// Close stops the loop and returns once Run has let go of its epoll instance; Run then
// closes the connections. It must not be called while holding a lock that a LoopConn's
// Closed takes.
func (l *Loop) Close() {
	l.stop.Store(true)
	l.ef.Close() // wakes a parked loop, and waits for a busy one to see stop
	l.cmu.Lock()
	defer l.cmu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
	}
	if l.efd >= 0 && !l.efdGone {
		// Outcomes that arrive later must not write to a closed (or reused)
		// descriptor: they find efdGone (wake).
		syscall.Close(l.efd)
		l.efdGone = true
	}
}

// Kill shuts the socket of c down (CLIENT KILL, from any goroutine): the loop then finds
// it closed and drops it, as it does a connection whose peer left. Under mu the
// descriptor cannot be closed (drop and release forget it under mu first), so it is
// still c's.
func (l *Loop) Kill(c LoopConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for fd, lc := range l.conns {
		if lc.c == c {
			syscall.Shutdown(int(fd), syscall.SHUT_RDWR)
		}
	}
}

// serveRound serves the connections of one epoll_wait.
func (l *Loop) serveRound(evs []syscall.EpollEvent) {
	now := time.Now().UnixMilli()
	round := l.round[:0]
	l.mu.Lock()
	for _, ev := range evs {
		if lc := l.conns[ev.Fd]; lc != nil {
			round = append(round, lc)
		}
	}
	l.mu.Unlock()
	l.round = round

	for _, lc := range round {
		if lc.outWait {
			continue // it reads again once its replies are out
		}
		n, err := recv(lc.fd, lc.c.Space())
		switch {
		case err == syscall.EAGAIN || err == syscall.EINTR:
			continue // level-triggered: reported again while there is data
		case err != nil || n <= 0: // failed, or the peer closed its side
			lc.closing = true
			continue
		}
		if !lc.c.Consume(n, now) {
			lc.closing = true
		}
	}
	l.proposeRound(round)
	for _, lc := range round {
		l.send(lc)
	}
	clear(round) // hold no closed connection until the next round
}

// proposeRound proposes the open batches of the round's connections and has each
// connection render its replies.
func (l *Loop) proposeRound(round []*loopConn) {
	l.proposed, l.data, l.sinks = l.proposed[:0], l.data[:0], l.sinks[:0]
	for _, lc := range round {
		if data, sink, ok := lc.c.CutBatch(); ok {
			l.proposed = append(l.proposed, lc.c)
			l.data = append(l.data, data)
			l.sinks = append(l.sinks, sink)
		}
	}
	if len(l.proposed) == 0 {
		return
	}
	if cap(l.errs) < len(l.data) {
		l.errs = make([]error, len(l.data))
	}
	l.errs = l.errs[:len(l.data)] // nil: cleared after every round
	l.propose(l.data, l.sinks, l.errs)
	now := time.Now().UnixMilli()
	for i, c := range l.proposed {
		c.FinishBatch(l.errs[i], now)
	}
	clear(l.errs)
	clear(l.data) // the log holds the batches now; the loop must not keep them alive
	clear(l.sinks)
	clear(l.proposed)
}

// send writes what lc has to send. A socket whose buffer fills is watched for EPOLLOUT
// instead of EPOLLIN until the rest is out, so a client that does not read its replies
// makes the loop stop reading its requests, as Redis and memcached do.
func (l *Loop) send(lc *loopConn) {
	out := lc.c.Output()
	for lc.sent < len(out) {
		n, err := send(lc.fd, out[lc.sent:])
		if n > 0 {
			lc.sent += n
		}
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			break
		}
		if err != nil {
			l.drop(lc)
			return
		}
	}
	if lc.sent < len(out) {
		switch {
		case lc.closing:
			l.drop(lc)
		case !lc.outWait:
			lc.outWait = l.watch(lc, l.outEvents())
		}
		return
	}
	if lc.sent > 0 {
		lc.c.Written(lc.sent)
		CountWritten(lc.sent)
		lc.sent = 0
	}
	if lc.closing && !lc.inflight {
		l.drop(lc)
		return
	}
	if lc.outWait {
		lc.outWait = !l.watch(lc, l.inEvents())
	}
}

// recv and send are read and write for a socket, as recv(2) and send(2): those go to the
// socket at once, where read(2) and write(2) pass through the file layer first (the
// position lock, the access checks, fsnotify). MSG_NOSIGNAL: a peer that hung up is
// EPIPE, not a signal.
//
// Both are raw system calls: the sockets are non-blocking, so a call never waits, and
// the scheduler hand-off a blocking call needs (entersyscall, exitsyscall) is pure cost,
// paid twice per request.
func recv(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), 0, 0, 0)
	if e != 0 {
		return int(n), e
	}
	return int(n), nil
}

func send(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), syscall.MSG_NOSIGNAL, 0, 0)
	if e != 0 {
		return int(n), e
	}
	return int(n), nil
}

// outEvents is what the loop waits for on a socket whose buffer is full.
func (l *Loop) outEvents() uint32 {
	if l.async != nil {
		return syscall.EPOLLOUT | epollET
	}
	return syscall.EPOLLOUT
}

// watch sets the events the loop waits for on lc; false (and lc dropped) if it failed.
func (l *Loop) watch(lc *loopConn, events uint32) bool {
	ev := syscall.EpollEvent{Events: events, Fd: int32(lc.fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, lc.fd, &ev); err != nil {
		l.drop(lc)
		return false
	}
	return true
}

// drop closes lc and forgets it.
func (l *Loop) drop(lc *loopConn) {
	if lc.fd < 0 {
		return
	}
	l.mu.Lock()
	delete(l.conns, int32(lc.fd))
	l.mu.Unlock()
	// Closing the last descriptor of a socket takes it out of the epoll set.
	syscall.Close(lc.fd)
	lc.fd = -1
	if lc.inflight { // its outcome, when it comes, finds it closed
		lc.inflight = false
		l.waiting--
	}
	lc.c.Closed()
}

// closeAll closes every connection once the loop has stopped.
func (l *Loop) closeAll() {
	l.mu.Lock()
	lcs := make([]*loopConn, 0, len(l.conns))
	for _, lc := range l.conns {
		lcs = append(lcs, lc)
	}
	l.mu.Unlock()
	for _, lc := range lcs {
		l.drop(lc)
	}
}
