package nicoffload

import "syscall"

// forceReadBuffer sets SO_RCVBUF past net.core.rmem_max, which only a process with
// CAP_NET_ADMIN may; for anyone else (EPERM) the capped size stays.
func forceReadBuffer(fd uintptr, n int) {
	_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, n)
}
