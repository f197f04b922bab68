//go:build !unix

package resp

import "net"

// peerGone: without a way to look at the socket, a blocked client is taken to be there.
func (c *conn) peerGone() bool { return false }

// shutdown closes the connection (CLIENT KILL).
func shutdown(nc net.Conn) { nc.Close() }
