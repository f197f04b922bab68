package server

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A cluster member bounds every client write and read barrier by the request timeout
// (raft.request-timeout, 2 s by default). context.WithTimeout per request costs a
// timer in the runtime's heap, added and removed under its lock, and four allocations:
// in a profile of the leader of three members under memcaslap set-only it was 3.5% of
// the leader's CPU. A deadline two seconds away does not need a nanosecond's
// precision, so requests share deadlines instead: all those made within a slot of each
// other get the same context, whose one timer ends it between timeout and timeout+slot
// after each of them was made. The slot is deadlineSlot, or a tenth of the timeout when
// that is shorter, so that a short timeout (CONFIG SET raft.request-timeout 1) is not
// stretched by a multiple of itself.
const deadlineSlot = 10 * time.Millisecond

// sharedDeadlines hands out the shared contexts. The zero value is ready to use.
type sharedDeadlines struct {
	cur atomic.Pointer[deadlineCtx]
	mu  sync.Mutex // serialises making a new one
}

// after returns a context that ends (context.DeadlineExceeded) no sooner than timeout
// from now and no later than timeout plus its slot. It needs no cancel: its timer ends
// it.
func (s *sharedDeadlines) after(timeout time.Duration) context.Context {
	now := time.Now()
	earliest := now.Add(timeout)
	slot := min(deadlineSlot, timeout/10)
	if d := s.cur.Load(); d.covers(earliest, slot) {
		return d
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.cur.Load(); d.covers(earliest, slot) {
		return d
	}
	d := &deadlineCtx{deadline: earliest.Add(slot), done: make(chan struct{})}
	time.AfterFunc(d.deadline.Sub(now), func() { close(d.done) })
	s.cur.Store(d)
	return d
}

// deadlineCtx is a context with a deadline and nothing else (no values, no parent).
type deadlineCtx struct {
	deadline time.Time
	done     chan struct{}
}

// covers reports whether d may serve a request whose deadline must not come before
// earliest: it ends at most one slot after it.
func (d *deadlineCtx) covers(earliest time.Time, slot time.Duration) bool {
	if d == nil {
		return false
	}
	late := d.deadline.Sub(earliest)
	return late >= 0 && late <= slot
}

func (d *deadlineCtx) Deadline() (time.Time, bool) { return d.deadline, true }
func (d *deadlineCtx) Done() <-chan struct{}       { return d.done }
func (d *deadlineCtx) Value(any) any               { return nil }

func (d *deadlineCtx) Err() error {
	select {
	case <-d.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
