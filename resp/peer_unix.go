//go:build unix

package resp

import (
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
