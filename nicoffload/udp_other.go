//go:build !linux

package nicoffload

// forceReadBuffer: only Linux can exceed its cap on SO_RCVBUF.
func forceReadBuffer(fd uintptr, n int) {}
