package nicoffload

import (
	"net/netip"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// forceReadBuffer sets SO_RCVBUF past net.core.rmem_max, which only a process with
// CAP_NET_ADMIN may; for anyone else (EPERM) the capped size stays.
func forceReadBuffer(fd uintptr, n int) {
	_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, n)
}

// mmsghdr is recvmmsg(2)'s struct mmsghdr: a message header and the bytes the kernel
// received into it. Go lays it out as C does on every Linux architecture (the header's
// alignment pads it).
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// receiveLoop reads batches with recvmmsg and hands each to deliver, until Close.
//
// A read that did not fill the batch drained the socket, so the next waits for the
// poller instead of asking the kernel at once: each datagram that arrives afterwards
// makes the socket ready again (Go's poller is edge-triggered, and UDP wakes it per
// datagram). golang.org/x/net's ReadBatch, which this replaces, tries the socket
// first; at one batch a wake-up, as a follower of a -P 1 load sees, every other
// recvmmsg it made found nothing. A read that filled the batch is followed by another
// at once. As internal/netserve's ReadLoop, the loop runs inside one RawConn.Read call:
// each call starts by forgetting the readiness the poller recorded. With a SpinBudget
// the loop polls the socket instead of waiting, for up to that long after it last found
// a datagram.
func (t *UDPTransport) receiveLoop(r *receiver) {
	rc, err := t.conn.SyscallConn()
	if err != nil {
		return
	}
	hs := make([]mmsghdr, len(r.rx))
	iovs := make([]unix.Iovec, len(r.rx))
	names := make([]unix.RawSockaddrInet6, len(r.rx)) // room for either family
	for i := range hs {
		iovs[i].Base = &r.rx[i].buf[0]
		iovs[i].SetLen(len(r.rx[i].buf))
		hs[i].hdr.Name = (*byte)(unsafe.Pointer(&names[i]))
		hs[i].hdr.Iov = &iovs[i]
		hs[i].hdr.SetIovlen(1)
	}
	var spinUntil time.Time
	for !t.closed.Load() {
		waitFirst := false
		_ = rc.Read(func(fd uintptr) bool {
			for !t.closed.Load() {
				if waitFirst {
					waitFirst = false
					return false // RawConn.Read waits for the poller and calls back
				}
				for i := range hs {
					hs[i].hdr.Namelen = uint32(unsafe.Sizeof(names[i]))
					hs[i].hdr.Flags = 0
				}
				n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&hs[0])),
					uintptr(len(hs)), unix.MSG_DONTWAIT, 0, 0)
				switch {
				case errno == unix.EINTR:
					continue
				case errno == unix.EAGAIN:
					t.recvEmpty.Add(1)
					if t.cfg.SpinBudget > 0 {
						now := time.Now()
						if spinUntil.IsZero() {
							spinUntil = now.Add(t.cfg.SpinBudget)
						}
						if now.Before(spinUntil) {
							continue
						}
						spinUntil = time.Time{}
					}
					return false
				case errno != 0:
					continue // a transient error (say, ICMP reported on the socket)
				}
				spinUntil = time.Time{}
				for i := range int(n) {
					d := &r.rx[i]
					d.n, d.truncated, d.from = int(hs[i].n), hs[i].hdr.Flags&unix.MSG_TRUNC != 0, sockaddrPort(&names[i])
				}
				t.deliver(r, r.rx[:n])
				waitFirst = int(n) < len(hs) && t.cfg.SpinBudget == 0
			}
			return true
		})
	}
}

// sockaddrPort is the address and port of a sockaddr the kernel filled in (the zero
// AddrPort for another family, which no member has).
func sockaddrPort(sa *unix.RawSockaddrInet6) netip.AddrPort {
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), netPort(&sa4.Port))
	case unix.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), netPort(&sa.Port))
	}
	return netip.AddrPort{}
}

// netPort reads a port in network byte order.
func netPort(p *uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(p))
	return uint16(b[0])<<8 | uint16(b[1])
}
