// Package netserve is what nanokv's protocol frontends (resp, mcproto, zkproto) share
// about their connections: the accept loop and its error handling, the read loop of a
// goroutine per connection (ReadLoop), and an event loop that serves many connections
// from one goroutine (Loop, which mcproto uses on a single node).
package netserve

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
)

// ReleasedConn turns the descriptor an asynchronous loop released (AsyncConn.Released)
// into a net.Conn in Go's poller, with a descriptor of its own: fd is closed either way.
func ReleasedConn(fd int, name string) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return net.FileConn(f)
}

// Serve registers ln with its server and accepts connections on it, handing each to
// handle, until the server closes. mu guards closed and lns, which the server's Close
// sets and closes; a server already closed refuses ln with net.ErrClosed.
func Serve(mu sync.Locker, closed *bool, lns *[]net.Listener, ln net.Listener, handle func(net.Conn)) error {
	mu.Lock()
	if *closed {
		mu.Unlock()
		return net.ErrClosed
	}
	*lns = append(*lns, ln)
	mu.Unlock()
	isClosed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return *closed
	}
	return accept(ln, isClosed, handle)
}

// accept accepts connections on ln and hands each to handle, until the listener is
// closed: it then returns nil, as it does once closed reports true after a failed
// Accept (the owner closed it). A timeout is retried; any other error is returned.
func accept(ln net.Listener, closed func() bool, handle func(net.Conn)) error {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if closed() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		handle(nc)
	}
}

// written counts the bytes every frontend of the process wrote to its clients.
var written atomic.Uint64

// CountWritten adds n bytes written to a client. A single node's P tuner
// (server/procs.go) reads the total as the rate of work the process delivers.
func CountWritten(n int) { written.Add(uint64(n)) }

// Written returns the bytes written to clients so far, by every frontend.
func Written() uint64 { return written.Load() }
