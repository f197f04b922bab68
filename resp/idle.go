package resp

import (
	"net"
	"time"
)

// timeout and tcp-keepalive, as Redis applies them.

// closeIdle closes the clients idle for more than timeout seconds, as Redis's
// clientsCronHandleTimeout does once a second: not a subscriber, a monitor, a client
// waiting for or receiving an RDB file after SYNC (a replica to Redis) or one blocked
// in a command (whose own timeout applies). Idle is the time since the client's last
// network read.
func (s *Server) closeIdle(now time.Time, timeout int64) {
	if timeout <= 0 {
		return
	}
	var idle []*conn
	s.mu.Lock()
	for c := range s.conns {
		sh := &c.shared
		if c.clientType() == "pubsub" || sh.monitor.Load() || sh.syncing.Load() || sh.blocked.Load() {
			continue
		}
		if int64(now.Sub(c.lastRead()).Seconds()) > timeout {
			idle = append(idle, c)
		}
	}
	s.mu.Unlock()
	for _, c := range idle {
		s.config().Logf("resp: closing client %s: idle for more than %d s (timeout)", c.addr, timeout)
		c.kill()
	}
}

// lastRead is when the connection last read from the network, as it published it: its
// creation until its first read.
func (c *conn) lastRead() time.Time {
	if last := c.shared.lastCmd.Load(); last != 0 {
		return time.UnixMilli(last)
	}
	return c.created
}

// setKeepAlive sets a client socket's TCP keepalive as Redis's anetKeepAlive does for
// tcp-keepalive seconds: probes after that long idle, then every third of it (at least
// a second), three of them unanswered closing the connection; 0 turns them off.
func setKeepAlive(tc *net.TCPConn, seconds int64) error {
	if seconds <= 0 {
		return tc.SetKeepAlive(false)
	}
	return tc.SetKeepAliveConfig(net.KeepAliveConfig{
		Enable:   true,
		Idle:     time.Duration(seconds) * time.Second,
		Interval: time.Duration(max(seconds/3, 1)) * time.Second,
		Count:    3,
	})
}
