// Package testbackend has a backend for the protocol frontends' tests: a cluster member
// as a connection sees it, reduced to what a test must control.
package testbackend

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nanokv/nanokv/kvstore"
)

// Late is a member on which the first write proposed with a sink times out, yet its entry
// commits later, when the test calls Release: the applier then writes that write's
// replies to the sink it was proposed with, as a member's applier does for an entry
// whose proposer stopped waiting. Every other proposal commits at once. One applier
// goroutine applies in log order.
type Late struct {
	store *kvstore.Store
	mu    sync.Mutex
	index uint64
	held  *apply // the timed-out entry, until released
	timed bool   // the first write with a sink has timed out
	queue chan apply
}

type apply struct {
	e    kvstore.Entry
	sink kvstore.Sink
	done chan struct{} // closed once applied
}

// to applies the entry to store, and tells its sink, as a member's applier does.
func (r *apply) to(store *kvstore.Store) {
	var w kvstore.ReplyWriter
	if r.sink != nil {
		w = r.sink
	}
	store.Apply(r.e, w)
	if r.sink != nil {
		r.sink.Applied()
	}
}

// ErrTimeout is the error of the write that times out; as a Redis error it is the one
// a cluster member gives.
var ErrTimeout error = timeout{}

type timeout struct{}

func (timeout) Error() string      { return "request timed out" }
func (timeout) RedisError() string { return "TIMEOUT Request timed out" }

// NewLate returns a Late whose applier stops when the test ends.
func NewLate(t testing.TB) *Late {
	b := &Late{store: kvstore.New(), queue: make(chan apply, 16)}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for r := range b.queue {
			r.to(b.store)
			close(r.done)
		}
	}()
	t.Cleanup(func() { close(b.queue); <-stopped })
	return b
}

func (b *Late) Store() *kvstore.Store { return b.store }

// Propose commits batch at once, except the first one with a sink: that one fails with
// ErrTimeout and waits for Release.
func (b *Late) Propose(batch []byte, sink kvstore.Sink) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.index++
	r := apply{e: kvstore.Entry{Index: b.index, Time: time.Now().UnixMilli(), Data: batch}, sink: sink, done: make(chan struct{})}
	if sink != nil && !b.timed {
		b.timed, b.held = true, &r
		return ErrTimeout
	}
	b.queue <- r
	return nil
}

// Release commits the write that timed out, and returns once it is applied.
func (b *Late) Release() {
	b.mu.Lock()
	r := b.held
	b.held = nil
	b.mu.Unlock()
	if r == nil {
		panic("testbackend: nothing timed out to release")
	}
	b.queue <- *r
	<-r.done
}

func (b *Late) ReadBarrier(context.Context) error { return nil }
