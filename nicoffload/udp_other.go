//go:build !linux

package nicoffload

// forceReadBuffer: only Linux can exceed its cap on SO_RCVBUF.
func forceReadBuffer(fd uintptr, n int) {}

// receiveLoop is the portable loop (readBatches) where Linux has its own.
func (t *UDPTransport) receiveLoop(r *receiver) { t.readBatches(r) }
