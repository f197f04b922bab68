package resp

import (
	"time"

	"github.com/nanokv/nanokv/internal/netserve"
	"github.com/nanokv/nanokv/kvstore"
)

// A cluster member's asynchronous event loop (netserve.Loop) drives a connection through
// these methods, from the loop's goroutine. It serves the data commands, whose writes it
// proposes without waiting and whose reads pass the barrier without waiting, and the
// connection commands that never wait (PING, SELECT, AUTH...). Anything that may block
// (MULTI and EXEC, WAIT, INFO, CONFIG, CLIENT, the RAFT.* commands) hands the
// connection to a goroutine of its own for good: redis-benchmark's connections never
// leave the loop, an administrator's soon do.

// loopState is what the event loop's side of a connection keeps.
type loopState struct {
	stall      stall
	barrierErr error // the failed barrier's error, for the read that waited for it
	// the batch in flight
	n    int
	sink *replySink // nil: blind
}

// stall is why a connection under the event loop stopped consuming.
type stall uint8

const (
	stallNone    stall = iota
	stallBatch         // a request behind the open batch, or the batch is full
	stallBarrier       // a read before the read barrier
	stallRelease       // a request only a goroutine of its own may serve
)

// mustWait reports whether the connection must stop before args, whose spec is
// kvstore.Lookup(args[0]) (and records why). It passes the barrier itself when the
// backend can tell at once (a leader's lease).
func (c *conn) mustWait(args [][]byte, spec *kvstore.Spec) bool {
	c.loop.stall = stallNone
	plain := spec != nil && spec.Flags&kvstore.FlagConn == 0
	switch {
	case c.inMulti || c.readonly || (c.s.pause.until.Load() != 0 && c.pausedFor(args, spec)):
		// a transaction, replica reads (their barrier is a goroutine's), or a command
		// that waits for CLIENT UNPAUSE: on a goroutine
		c.loop.stall = stallRelease
	case !c.authed && !allowedUnauthed(args[0]):
		if c.batchOps > 0 { // NOAUTH goes behind the open batch's replies
			c.loop.stall = stallBatch
		}
	case c.user.Load() != nil && !c.user.Load().load().free:
		// a restricted user's commands are checked by handle, on a goroutine of its own
		c.loop.stall = stallRelease
	case plain && spec.Flags&kvstore.FlagBlocking != 0 && spec.CheckArity(args) && mayBlock(args):
		// it may wait: on a goroutine of its own, once the open batch is answered
		c.loop.stall = stallRelease
		if c.batchOps > 0 {
			c.loop.stall = stallBatch
		}
	case plain && spec.CheckArity(args) && spec.Writes(args):
		return false // into the open batch
	case plain && spec.CheckArity(args):
		if c.batchOps > 0 {
			c.loop.stall = stallBatch
			break
		}
		if c.barrierOK || c.loop.barrierErr != nil {
			return false
		}
		if c.s.async.TryReadBarrier() {
			c.barrierOK = true
			return false
		}
		c.loop.stall = stallBarrier
	default:
		// A connection command, or a refusal: each goes behind the open batch's replies.
		if cs := lookupConn(args[0]); cs != nil && (cs.Flags&kvstore.FlagFast == 0 || cs.txCtrl) {
			c.loop.stall = stallRelease
		}
		if c.batchOps > 0 {
			c.loop.stall = stallBatch
		}
	}
	return c.loop.stall != stallNone
}

// Space is the read buffer's free space (netserve.LoopConn).
func (c *conn) Space() []byte {
	if c.buf == nil {
		c.buf = make([]byte, readBufSize)
	}
	return c.buf[c.end:]
}

// Consume runs what a read brought (n bytes; 0 when the loop resumes the connection).
func (c *conn) Consume(n int, now int64) bool {
	if n > 0 {
		c.lastCmd = time.UnixMilli(now)
		c.clock.Set(now)
	}
	ok := c.consume(n)
	c.publish()
	if !ok || c.closeNext || !c.withinOutputLimit() {
		return false
	}
	if c.loop.stall == stallNone {
		return c.makeRoom() // the loop reads into it next
	}
	return true
}

// CutBatch closes the open batch for the loop to propose.
func (c *conn) CutBatch() ([]byte, kvstore.Sink, bool) {
	if c.batchOps == 0 {
		return nil, nil, false
	}
	data, next := kvstore.CutBatch(c.batch)
	c.loop.n = c.batchOps
	c.loop.sink = c.prepare(c.batchBlind)
	c.batch, c.batchOps = next, 0
	if c.loop.sink == nil {
		return data, nil, true
	}
	return data, c.loop.sink, true
}

// FinishBatch writes the replies of the batch the loop proposed; now is the clock after
// the proposal.
func (c *conn) FinishBatch(err error, now int64) {
	c.clock.AtLeast(now)
	c.finish(c.loop.n, c.loop.sink, err)
	c.loop.sink = nil
	c.withinOutputLimit()
}

// WantsBarrier: consume stopped before a read that needs the read barrier.
func (c *conn) WantsBarrier() bool { return c.loop.stall == stallBarrier }

// BarrierDone records the barrier's outcome for the read that waited for it.
func (c *conn) BarrierDone(err error) {
	c.loop.stall = stallNone
	c.barrierOK, c.loop.barrierErr = err == nil, err
}

// Output is the replies to write.
func (c *conn) Output() []byte { return c.B }

// Written counts n bytes written and drops the replies.
func (c *conn) Written(n int) {
	c.s.stats.netOut.Add(uint64(n))
	c.s.stats.writes.Add(1)
	if cap(c.B) > 1<<20 {
		c.B = nil
	} else {
		c.B = c.B[:0]
	}
}

// WantsRelease: consume stopped before a request the loop does not serve.
func (c *conn) WantsRelease() bool { return c.loop.stall == stallRelease }

// Released takes the socket from the loop and serves it from a goroutine of its own,
// starting with the requests it has buffered.
func (c *conn) Released(fd int) {
	nc, err := netserve.ReleasedConn(fd, "resp-conn")
	c.s.mu.Lock()
	if err != nil || c.s.closed {
		c.s.mu.Unlock()
		if err == nil {
			nc.Close()
		} else {
			c.s.config().Logf("resp: client %s: %v", c.addr, err)
		}
		c.Closed()
		return
	}
	c.async, c.loop.stall = false, stallNone
	c.nc = nc
	c.setCloser(func() { shutdown(nc) })
	c.s.handler.Add(1)
	c.s.mu.Unlock()
	go func() {
		defer c.s.handler.Done()
		c.serve()
		c.Closed()
	}()
}

// Closed forgets the connection.
func (c *conn) Closed() {
	c.shared.gone.Store(true)
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
}

// mayBlock reports whether a call of a blocking command may wait (XREAD only with
// BLOCK; a malformed call is refused at once).
func mayBlock(args [][]byte) bool {
	_, _, ok := kvstore.BlockingCall(args)
	return ok
}
