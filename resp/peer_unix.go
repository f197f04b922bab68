//go:build unix

package resp

import (
	"net"
	"syscall"
	"unsafe"
)

// peerGone reports whether the client closed its side of the connection (or the
// connection failed): a look at the socket that takes nothing from it (MSG_PEEK), so
// requests it pipelined behind the current one stay there.
func (c *conn) peerGone() bool {
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	var b [1]byte
	_ = rc.Control(func(fd uintptr) {
		n, _, e := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1, syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		switch {
		case e == syscall.EAGAIN || e == syscall.EINTR:
		case e != 0:
			gone = true
		default:
			gone = n == 0 // an orderly close
		}
	})
	return gone
}

// shutdown shuts a connection's socket down without closing it (CLIENT KILL): closing
// would wait for a goroutine that is inside a read callback (a blocked command), and
// shutting down wakes that goroutine's next read with an end of file instead.
func shutdown(nc net.Conn) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		nc.Close()
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		nc.Close()
		return
	}
	_ = rc.Control(func(fd uintptr) { syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
}
