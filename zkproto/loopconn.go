package zkproto

import (
	"errors"
	"syscall"

	"github.com/nanokv/nanokv/internal/netserve"
	"github.com/nanokv/nanokv/kvstore"
)

// A cluster member serves its ZooKeeper sessions from one asynchronous event loop
// (netserve.NewAsyncLoop), as it serves Redis and memcached, instead of a goroutine (and
// a writer) per session: the loop reads every ready socket, hands each session's writes
// to consensus as one batch and goes on, and answers once the batch is applied here. A
// session's goroutine parked and woke for every write, and so did its writer.
//
// What stays off the loop: the handshake (its session proposal waits), which runs on
// the accepting goroutine before the loop takes the socket; and the requests that
// propose on their own and wait (sync, closeSession), before which the loop hands the
// socket back to a goroutine of the session's own for good (netserve.AsyncConn's
// release), with what it had buffered. Watch notifications, which the applier queues
// while the loop may be waiting in epoll, kick the loop (netserve.Kickable).

// loopState is a session's state while the loop serves it; only the loop's goroutine
// touches it, but for kick, which is set before the loop starts serving.
type loopState struct {
	on       bool // the loop handles the requests: set before Add, cleared on release
	kick     func(close bool)
	buf      []byte // read and not yet handled: buf[start:end]
	start    int
	end      int
	out      []byte         // what Output handed the loop, until Written
	flight   []pendingWrite // the batch with the backend
	sink     *batchSink
	failed   bool // a batch failed: its outcome is unknown, so the session's connection closes
	release  bool // Consume stopped before a request that needs a goroutine
	released bool
}

// batchSink collects the results of a batch the loop proposed (kvstore.ZKResultWriter);
// the backend tells the loop once it is applied here.
type batchSink struct {
	nopWriter
	results []*kvstore.ZKResult
}

func (r *batchSink) ZKResult(res *kvstore.ZKResult) { r.results = append(r.results, res) }
func (r *batchSink) Applied()                       {}

var _ netserve.Kickable = (*conn)(nil)

// serveOnLoop hands an open session to the loop; false when the loop would not take it
// (the caller serves it from its goroutine).
func (c *conn) serveOnLoop(buf []byte, start, end int) bool {
	nc := c.nc // the loop may hand back the socket, as a new c.nc, once Add returns
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	c.loop.buf, c.loop.start, c.loop.end = buf, start, end
	c.loop.on = true
	if err := c.s.loop.Add(c, sc); err != nil {
		c.loop.on = false
		c.s.cfg.Logf("zkproto: %s: event loop: %v", c.remote, err)
		return false
	}
	// From now on a notification or a kill goes through the loop. One that came before
	// is in c.out, or in killed, which the kicks below see.
	c.async.Store(true)
	nc.Close() // the loop serves the socket through a descriptor of its own
	if c.killed.Load() {
		c.loop.kick(true) // expired before the loop had it
	} else {
		c.loop.kick(false) // write what is queued; handle what came behind the ConnectRequest
	}
	return true
}

// SetKick implements netserve.Kickable.
func (c *conn) SetKick(kick func(close bool)) { c.loop.kick = kick }

// Space implements netserve.LoopConn.
func (c *conn) Space() []byte {
	l := &c.loop
	l.buf, l.start, l.end = makeRoom(l.buf, l.start, l.end)
	return l.buf[l.end:]
}

// Consume implements netserve.LoopConn: it handles the requests that are complete, up to
// one that must wait for the open batch (mustWait) or for a goroutine.
func (c *conn) Consume(n int, now int64) bool {
	l := &c.loop
	l.end += n
	for l.start < l.end && !l.failed {
		payload, size, err := ParseFrame(l.buf[l.start:l.end], c.s.cfg.MaxBuffer)
		if errors.Is(err, ErrIncomplete) {
			break
		}
		if err != nil {
			c.s.cfg.Logf("zkproto: %s: %v", c.remote, err)
			return false // the loop proposes what is open first
		}
		req, rerr := ParseRequest(payload, c.s.cfg.MaxBuffer)
		if c.mustWait(req, rerr) {
			return true
		}
		l.start += size
		c.received.Add(1)
		c.s.stats.received.Add(1)
		c.heard.Store(true)
		if !c.handleRequest(req, rerr) {
			return false
		}
		if len(c.batch) >= maxBatchBytes {
			return true // one huge pipeline does not become one huge entry
		}
	}
	return !l.failed
}

// mustWait reports whether a request must wait before it is handled: for the open batch
// to be applied (everything but a write that joins it: a read must see the session's
// writes, and every reply leaves in order), or for the connection to move to a goroutine
// (a request that proposes on its own and waits).
func (c *conn) mustWait(req Request, err error) bool {
	open := len(c.pend) > 0
	if err != nil {
		return open // answered (or the connection closed) behind the batch
	}
	switch b := req.Body.(type) {
	case *SetDataRequest, *DeleteRequest, *SetACLRequest:
		return false
	case *CreateRequest:
		// A TTL node without extended types is refused at once, behind the batch.
		return open && !c.s.cfg.ExtendedTypes && isTTLMode(b.Flags)
	case *CreateTTLRequest:
		return open && !c.s.cfg.ExtendedTypes
	case *SyncRequest:
		return c.wantGoroutine(open)
	case nil:
		if req.Header.Type == kvstore.ZKOpCloseSession {
			return c.wantGoroutine(open)
		}
	}
	// A multi whose ops do not check out is refused at once: a multi waits for the
	// open batch, as every read and every other request does.
	return open
}

// wantGoroutine asks the loop to hand the socket back, once the open batch is applied.
func (c *conn) wantGoroutine(open bool) bool {
	if !open {
		c.loop.release = true
	}
	return true
}

// CutBatch implements netserve.LoopConn.
func (c *conn) CutBatch() ([]byte, kvstore.Sink, bool) {
	if len(c.pend) == 0 {
		return nil, nil, false
	}
	l := &c.loop
	data := c.batch
	c.batch = nil // the proposal holds it now
	l.flight, c.pend = c.pend, l.flight[:0]
	l.sink = &batchSink{}
	return data, l.sink, true
}

// FinishBatch implements netserve.LoopConn: the batch is applied here (err nil), or its
// outcome is unknown, and a ZooKeeper client treats a lost connection as just that.
func (c *conn) FinishBatch(err error, _ int64) {
	l := &c.loop
	pend, sink := l.flight, l.sink
	l.flight, l.sink = pend[:0], nil
	defer clear(pend)
	switch {
	case err != nil:
		c.s.cfg.Logf("zkproto: session 0x%x: %v", c.sess, err)
		l.failed = true
	case len(sink.results) != len(pend):
		c.s.cfg.Logf("zkproto: session 0x%x: %d results for %d writes", c.sess, len(sink.results), len(pend))
		l.failed = true
	default:
		for i, p := range pend {
			c.writeResult(p, sink.results[i])
		}
	}
}

// Output implements netserve.LoopConn: the replies and the notifications queued so far.
func (c *conn) Output() []byte {
	l := &c.loop
	if len(l.out) == 0 {
		c.outMu.Lock()
		l.out, c.out = c.out, l.out[:0]
		c.outMu.Unlock()
	}
	return l.out
}

// Written implements netserve.LoopConn.
func (c *conn) Written(int) { c.loop.out = c.loop.out[:0] }

// WantsBarrier implements netserve.AsyncConn: ZooKeeper reads are served from this
// member's store as it is (sequential consistency), with no barrier.
func (c *conn) WantsBarrier() bool  { return false }
func (c *conn) BarrierDone(_ error) {}

// WantsRelease implements netserve.AsyncConn.
func (c *conn) WantsRelease() bool { return c.loop.release && !c.loop.released }

// Released implements netserve.AsyncConn: the session goes on from a goroutine of its
// own, with what the loop had buffered.
func (c *conn) Released(fd int) {
	l := &c.loop
	l.released, l.on = true, false
	nc, err := netserve.ReleasedConn(fd, "zookeeper")
	if err != nil {
		c.s.cfg.Logf("zkproto: %s: leaving the event loop: %v", c.remote, err)
		c.Closed()
		return
	}
	c.nc = nc
	c.async.Store(false) // after nc: a kill from now on closes it
	go func() {
		defer c.s.handlers.Done()
		defer c.s.forget(c)
		if c.killed.Load() { // killed while the loop was letting it go
			nc.Close()
		}
		c.serveFrom(l.buf, l.start, l.end)
	}()
}

// Closed implements netserve.LoopConn: the loop closed the session's connection.
func (c *conn) Closed() {
	c.outMu.Lock()
	c.dead = true
	c.outMu.Unlock()
	c.s.watches.removeConn(c, c.pathsWatched())
	c.s.forget(c)
	c.s.handlers.Done()
}
