package mcproto

import "github.com/nanokv/nanokv/kvstore"

// An event loop (netserve.Loop) drives a connection through these methods, from the
// loop's goroutine: a single node's synchronous loop, or a cluster member's asynchronous
// one (conn.async).

// Space is the read buffer's free space (netserve.LoopConn).
func (c *conn) Space() []byte { return c.space() }

// Consume handles what a read brought.
func (c *conn) Consume(n int, now int64) bool {
	c.clock.Set(now)
	c.lastCmd.Store(now)
	return c.consume(n)
}

// CutBatch closes the open batch for the loop to propose.
func (c *conn) CutBatch() ([]byte, kvstore.Sink, bool) {
	data, blind, ok := c.cutBatch()
	c.loopBlind = blind
	if !ok || blind {
		return data, nil, ok
	}
	return data, c.sink, ok
}

// FinishBatch renders the replies of the batch the loop proposed.
// now is the clock after the proposal: the entry was stamped before it.
func (c *conn) FinishBatch(err error, now int64) {
	c.clock.AtLeast(now)
	c.finishBatch(c.loopBlind, err)
}

// Output is the replies to write.
func (c *conn) Output() []byte { return c.out }

// Written counts n bytes written and drops the replies (the event loop's, and
// flushOut's).
func (c *conn) Written(n int) {
	c.s.stats.bytesWritten.Add(uint64(n))
	if cap(c.out) > 1<<20 {
		c.out = nil
	} else {
		c.out = c.out[:0]
	}
}

// WantsBarrier: consume stopped before a read that needs the read barrier
// (netserve.AsyncConn).
func (c *conn) WantsBarrier() bool { return c.stall == stallBarrier }

// BarrierDone records the barrier's outcome for the read that waited for it.
func (c *conn) BarrierDone(err error) {
	c.stall = stallNone
	c.barrierOK, c.barrierErr = err == nil, err
}

// WantsRelease: a memcached connection never leaves the loop; every request is served
// there without blocking it.
func (c *conn) WantsRelease() bool { return false }
func (c *conn) Released(int)       {}

// Closed forgets the connection the loop closed.
func (c *conn) Closed() { c.s.forget(c) }
