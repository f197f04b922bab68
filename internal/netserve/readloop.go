package netserve

import (
	"net"
	"syscall"
)

// ReadLoop reads from nc until the connection fails or got returns false: each read
// goes into the buffer space returns (never empty: a read of nothing reads as the peer
// closing), and got is told how many bytes arrived. got runs on the calling goroutine;
// it may block, and write to nc.
//
// Read on a net.Conn tries the socket first and asks the poller only when that fails,
// so a server that answers what it read and reads again makes one read per request
// batch that returns EAGAIN: a third of the syscalls of a request-response client.
// memcached and Redis read once per readiness event, and so does ReadLoop on a socket:
// after a read that did not fill its buffer (the socket was drained), it waits for the
// poller before reading again. A read that filled the buffer is followed by another at
// once, as more may be waiting, and the poller reported it before that read.
//
// The loop runs inside one RawConn.Read call, and must: each call begins by forgetting
// the readiness the poller has recorded, so a fresh call that waited first could wait
// for data that had already arrived. When nc is closed, the loop ends at its next wait
// for the poller, or earlier through got's next write failing.
func ReadLoop(nc net.Conn, space func() []byte, got func(n int) bool) {
	sc, ok := nc.(syscall.Conn)
	var rc syscall.RawConn
	var err error
	if ok {
		rc, err = sc.SyscallConn()
	}
	if !ok || err != nil {
		for {
			n, err := nc.Read(space())
			if n > 0 && !got(n) || err != nil {
				return
			}
		}
	}
	waitFirst := false
	_ = rc.Read(func(fd uintptr) bool {
		for {
			if waitFirst {
				waitFirst = false
				return false // RawConn.Read waits for the poller and calls back
			}
			p := space()
			n, err := syscall.Read(int(fd), p)
			switch {
			case err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN:
				return false
			case err != nil || n <= 0: // failed, or the peer closed its side
				return true
			case !got(n):
				return true
			}
			waitFirst = n < len(p)
		}
	})
}
