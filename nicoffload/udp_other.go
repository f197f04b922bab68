//go:build !linux

package nicoffload

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
)

// forceReadBuffer: only Linux can exceed its cap on SO_RCVBUF.
func forceReadBuffer(fd uintptr, n int) {}

// receiveLoop reads with golang.org/x/net/ipv4's ReadBatch (recvmmsg where the platform
// has it, a datagram a call elsewhere) and hands each batch to deliver, until Close.
func (t *UDPTransport) receiveLoop(r *receiver) {
	ms := make([]ipv4.Message, len(r.rx))
	for i := range ms {
		ms[i].Buffers = [][]byte{r.rx[i].buf}
	}
	for {
		n, err := t.read(ms)
		if err != nil {
			if t.closed.Load() {
				return
			}
			continue // a transient error (say, ICMP reported on the socket)
		}
		for i := range n {
			d := &r.rx[i]
			d.n, d.truncated, d.from = ms[i].N, ms[i].Flags&syscall.MSG_TRUNC != 0, netip.AddrPort{}
			if ua, _ := ms[i].Addr.(*net.UDPAddr); ua != nil {
				d.from = ua.AddrPort()
			}
		}
		t.deliver(r, r.rx[:n])
	}
}

// read fills ms: polling without blocking for up to SpinBudget, then blocking.
func (t *UDPTransport) read(ms []ipv4.Message) (int, error) {
	if t.cfg.SpinBudget > 0 {
		deadline := time.Now().Add(t.cfg.SpinBudget)
		for {
			n, err := t.pc.ReadBatch(ms, syscall.MSG_DONTWAIT)
			if n > 0 || (err != nil && !errors.Is(err, syscall.EAGAIN)) {
				return n, err
			}
			if time.Now().After(deadline) {
				break
			}
		}
	}
	return t.pc.ReadBatch(ms, 0)
}
