package netserve

import "time"

// ReadClock is a connection's clock for the reads that one network read brought (unix
// ms): they arrived together, and a clock read per command showed in profiles.
//
// A write proposed meanwhile is stamped later than that clock, and a read behind it
// must not see a time before its own write (a TTL longer than the one just set). So a
// proposal only marks the clock stale (Proposed), and the next read (Now) reads the time
// again: a write that ends a network read, with no read behind it, costs no clock read.
type ReadClock struct {
	now   int64
	stale bool
}

// Set starts the clock of a network read at now.
func (c *ReadClock) Set(now int64) { c.now, c.stale = now, false }

// Proposed tells that a write was proposed: the next Now reads the time again.
func (c *ReadClock) Proposed() { c.stale = true }

// AtLeast moves the clock on to now, a time read after a proposal.
func (c *ReadClock) AtLeast(now int64) { c.now = max(c.now, now) }

// Now is the time for a read.
func (c *ReadClock) Now() int64 {
	if c.stale {
		c.now, c.stale = max(c.now, time.Now().UnixMilli()), false
	}
	return c.now
}
