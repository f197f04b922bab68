package resp

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nanokv/nanokv/kvstore"
)

// CLIENT PAUSE and UNPAUSE, as Redis 7.0 serves them: for a while, this member's clients
// wait before every command (ALL), or before every command that may write (WRITE: reads
// go on). Operators pause writes while they move traffic or wait for a member to catch
// up. Waiting clients go on, in order, when the pause ends or CLIENT UNPAUSE ends it;
// under ALL, UNPAUSE waits too, as in Redis.
//
// A pause is this member's, like Redis's is its node's: writes through other members go
// on, and the leader goes on expiring keys (Redis stops expiring while paused).

type pauseState struct {
	// until is the end of the pause (unix ns); 0, or a time passed: none. A connection
	// reads it before every command: one atomic load when no pause was ever asked.
	until atomic.Int64

	mu    sync.Mutex
	all   bool          // ALL, not only writes
	ended chan struct{} // closed by UNPAUSE, and replaced by the next pause
}

// pausedFor reports whether c's command must wait for the pause to end. Inside MULTI a
// WRITE pause holds EXEC, if a queued command writes, and queues the rest.
func (c *conn) pausedFor(args [][]byte, spec *kvstore.Spec) bool {
	u := c.s.pause.until.Load()
	if u == 0 || time.Now().UnixNano() >= u {
		return false
	}
	c.s.pause.mu.Lock()
	all := c.s.pause.all
	c.s.pause.mu.Unlock()
	switch {
	case all:
		return true
	case c.inMulti && strings.EqualFold(string(args[0]), "exec"):
		for _, q := range c.queued {
			if pauseBlocksWrite(q.Args, kvstore.Lookup(q.Args[0])) {
				return true
			}
		}
		return false
	case c.inMulti:
		return false
	}
	return pauseBlocksWrite(args, spec)
}

// pauseBlocksWrite reports whether a WRITE pause holds a command: a write, a script that
// may write, but not PUBLISH, nor PFCOUNT (which only refreshes a cached count), as Redis
// 7.0 lets them through.
func pauseBlocksWrite(args [][]byte, spec *kvstore.Spec) bool {
	if spec == nil || spec.Flags&(kvstore.FlagConn|kvstore.FlagPubSub) != 0 || spec.Name == "pfcount" {
		return false
	}
	return spec.Writes(args) && spec.CheckArity(args)
}

// waitPause holds c while the pause holds its command, once the replies before it are
// out; false if the connection or the server closed meanwhile.
func (c *conn) waitPause(args [][]byte, spec *kvstore.Spec) bool {
	if !c.pausedFor(args, spec) {
		return true
	}
	c.flushBatch()
	if !c.flushOut() {
		return false
	}
	for c.pausedFor(args, spec) {
		c.s.pause.mu.Lock()
		ended := c.s.pause.ended
		c.s.pause.mu.Unlock()
		t := time.NewTimer(time.Duration(c.s.pause.until.Load() - time.Now().UnixNano()))
		select {
		case <-t.C:
		case <-ended:
		case <-c.s.done:
			t.Stop()
			return false
		case <-c.shared.killed:
			t.Stop()
			return false
		}
		t.Stop()
	}
	return true
}

func clientPause(c *conn, args [][]byte) {
	if len(args) > 4 {
		c.Error("ERR unknown subcommand or wrong number of arguments for '" + string(args[1]) + "'. Try CLIENT HELP.")
		return
	}
	ms, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil {
		c.Error("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		c.Error("ERR timeout is negative")
		return
	}
	all := true
	if len(args) == 4 {
		switch strings.ToLower(string(args[3])) {
		case "all":
		case "write":
			all = false
		default:
			c.Error("ERR CLIENT PAUSE mode must be WRITE or ALL")
			return
		}
	}
	p := &c.s.pause
	p.mu.Lock()
	now := time.Now().UnixNano()
	end := now + min(ms, (1<<62)/int64(time.Millisecond))*int64(time.Millisecond)
	if cur := p.until.Load(); cur > now {
		// a pause in force: the stricter mode and the later end win, as in Redis
		all = all || p.all
		end = max(end, cur)
	} else {
		p.ended = make(chan struct{})
	}
	p.all = all
	p.until.Store(end)
	p.mu.Unlock()
	c.Status("OK")
}

func clientUnpause(c *conn) {
	p := &c.s.pause
	p.mu.Lock()
	if p.until.Load() != 0 {
		p.until.Store(0)
		close(p.ended)
	}
	p.mu.Unlock()
	c.Status("OK")
}
