//go:build !linux

package netserve

import (
	"errors"
	"syscall"
)

// The event loop is built on epoll; elsewhere every connection has its own goroutine.

// Loop is not available on this platform.
type Loop struct{}

// NewLoop fails: there is no event loop here.
func NewLoop(ProposeMany, func(string, ...any)) (*Loop, error) {
	return nil, errors.New("netserve: the event loop needs Linux")
}

// NewAsyncLoop fails: there is no event loop here.
func NewAsyncLoop(AsyncBackend, func(string, ...any)) (*Loop, error) {
	return nil, errors.New("netserve: the event loop needs Linux")
}

func (*Loop) Add(LoopConn, syscall.Conn) error { return errors.ErrUnsupported }
func (*Loop) Run()                             {}
func (*Loop) Close()                           {}
func (*Loop) Kill(LoopConn)                    {}
