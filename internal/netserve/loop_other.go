//go:build !linux

package netserve

import (
	"errors"
	"syscall"

	"github.com/nanokv/nanokv/kvstore"
)

// The event loop is built on epoll; elsewhere every connection has its own goroutine.

// Loop is not available on this platform.
type Loop struct{}

// LoopConn is as on Linux.
type LoopConn interface {
	Space() []byte
	Consume(n int, now int64) bool
	CutBatch() (data []byte, sink kvstore.Sink, ok bool)
	FinishBatch(err error, now int64)
	Output() []byte
	Written(n int)
	Closed()
}

// ProposeMany is as on Linux.
type ProposeMany func(batches [][]byte, sinks []kvstore.Sink, errs []error)

// LoopSupported reports whether this platform has the event loop.
const LoopSupported = false

// NewLoop fails: there is no event loop here.
func NewLoop(ProposeMany, func(string, ...any)) (*Loop, error) {
	return nil, errors.New("netserve: the event loop needs Linux")
}

func (*Loop) Add(LoopConn, syscall.Conn) error { return errors.ErrUnsupported }
func (*Loop) Run()                             {}
func (*Loop) Close()                           {}
