package testbackend

import (
	"context"
	"sync"
	"time"

	"github.com/nanokv/nanokv/kvstore"
)

// Lagging is a member whose applier lags behind commit until the test lets it catch up:
// a proposal commits at once (a blind write is answered then), and is applied when the
// test calls CatchUp. ReadBarrier returns once every committed entry is applied, as a
// member's does, so a read waits for the test.
type Lagging struct {
	store   *kvstore.Store
	mu      sync.Mutex
	cond    *sync.Cond
	index   uint64
	applied uint64
	pending []apply
	waits   chan struct{} // a send per ReadBarrier that has to wait
}

// NewLagging returns a Lagging with an empty store.
func NewLagging() *Lagging {
	b := &Lagging{store: kvstore.New(), waits: make(chan struct{}, 16)}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *Lagging) Store() *kvstore.Store { return b.store }

// Propose commits batch; it is applied at the next CatchUp.
func (b *Lagging) Propose(batch []byte, sink kvstore.Sink) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.index++
	b.pending = append(b.pending, apply{e: kvstore.Entry{Index: b.index, Time: time.Now().UnixMilli(), Data: batch}, sink: sink})
	return nil
}

// CatchUp applies every committed entry.
func (b *Lagging) CatchUp() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.pending {
		b.pending[i].to(b.store)
		b.applied = b.pending[i].e.Index
	}
	b.pending = nil
	b.cond.Broadcast()
}

// ReadBarrier waits until every entry committed when it was called is applied.
func (b *Lagging) ReadBarrier(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.applied < b.index {
		select {
		case b.waits <- struct{}{}:
		default:
		}
	}
	for want := b.index; b.applied < want; {
		b.cond.Wait()
	}
	return nil
}

// Waits receives once for every ReadBarrier that had to wait for CatchUp.
func (b *Lagging) Waits() <-chan struct{} { return b.waits }
