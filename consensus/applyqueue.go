package consensus

import "sync"

// pending is a committed entry on its way to the state machine, with what the proposer
// attached to it on this node (nil for entries proposed elsewhere).
type pending struct {
	e     Entry
	local any
}

// applyQueue hands committed entries from the goroutine that commits them to the
// applier goroutine, in order, without the committer ever waiting for an apply.
type applyQueue struct {
	mu     sync.Mutex
	items  []pending
	signal chan struct{} // one wake-up stands for any number of pushes
	buf    []pending     // the applier's batch, reused
}

func newApplyQueue() *applyQueue { return &applyQueue{signal: make(chan struct{}, 1)} }

// push queues committed entries and wakes the applier.
func (q *applyQueue) push(items ...pending) {
	q.mu.Lock()
	q.items = append(q.items, items...)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// drain hands apply every queued entry, a batch at a time, until the queue is empty;
// then it drops the batch's references so the GC can have the data. Applier only.
func (q *applyQueue) drain(apply func(batch []pending)) {
	for {
		q.mu.Lock()
		q.buf, q.items = q.items, q.buf[:0]
		q.mu.Unlock()
		if len(q.buf) == 0 {
			return
		}
		apply(q.buf)
		clear(q.buf)
	}
}

// Prefetcher is a StateMachine that can read ahead of Apply: Prefetch gets the data of
// entries about to be applied, in order, from the goroutine that applies them, between
// two Applys. It may only read.
type Prefetcher interface {
	Prefetch(datas [][]byte)
}

// readAheadWindow is how many entries the applier shows a Prefetcher at once.
const readAheadWindow = 16

// readAhead shows a Prefetcher the entries of an applier's batch a window at a time.
type readAhead struct {
	p     Prefetcher // nil: the state machine does not read ahead
	datas [readAheadWindow][]byte
}

func newReadAhead(sm StateMachine) *readAhead {
	p, _ := sm.(Prefetcher)
	return &readAhead{p: p}
}

// before is called before batch[i] is applied: at the start of each window of two
// entries or more, the state machine reads the window ahead.
func (r *readAhead) before(batch []pending, i int) {
	if r.p == nil || i%readAheadWindow != 0 || len(batch)-i < 2 {
		return
	}
	n := 0
	for ; n < readAheadWindow && i+n < len(batch); n++ {
		r.datas[n] = batch[i+n].e.Data
	}
	r.p.Prefetch(r.datas[:n])
	clear(r.datas[:n])
}
