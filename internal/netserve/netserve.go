// Package netserve is what nanokv's protocol frontends (resp, mcproto, zkproto) share
// about their listeners: the accept loop and its error handling.
package netserve

import (
	"errors"
	"net"
)

// Accept accepts connections on ln and hands each to handle, until the listener is
// closed: it then returns nil, as it does once closed reports true after a failed
// Accept (the owner closed it). A timeout is retried; any other error is returned.
func Accept(ln net.Listener, closed func() bool, handle func(net.Conn)) error {
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
