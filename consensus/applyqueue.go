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
