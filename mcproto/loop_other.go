//go:build !linux

package mcproto

import (
	"errors"
	"syscall"
)

// The event loop is built on epoll; elsewhere every connection has its own goroutine.

type eventLoop struct{}

type loopConnState struct{}

func newEventLoop(*Server, BatchBackend) (*eventLoop, error) {
	return nil, errors.New("mcproto: the event loop needs Linux")
}

func (*eventLoop) add(*conn, syscall.Conn) error { return errors.ErrUnsupported }
func (*eventLoop) run()                          {}
func (*eventLoop) close()                        {}
