package server

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Requests made together share one context; each ends within a slot after its timeout.
func TestSharedDeadlinesEndOnTime(t *testing.T) {
	var s sharedDeadlines
	const timeout = 100 * time.Millisecond // its slot is deadlineSlot
	start := time.Now()
	a := s.after(timeout)
	b := s.after(timeout)
	// (A scheduler that held this goroutine up for a slot between the two calls
	// rightly gives them contexts of their own.)
	if a != b && time.Since(start) < deadlineSlot {
		t.Fatal("two requests made together got contexts of their own")
	}
	if a.Err() != nil {
		t.Fatalf("Err before the deadline: %v", a.Err())
	}
	dl, ok := a.Deadline()
	if !ok || dl.Before(start.Add(timeout)) || dl.After(time.Now().Add(timeout+deadlineSlot)) {
		t.Fatalf("deadline %v after start, want within [%v, %v]", dl.Sub(start), timeout, timeout+deadlineSlot)
	}
	// A longer timeout cannot end on the shorter one's deadline.
	if c := s.after(timeout + 2*deadlineSlot); c == a {
		t.Fatal("a request with a longer timeout got the shorter one's context")
	}
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the shared context never ended")
	}
	if elapsed := time.Since(start); elapsed < timeout {
		t.Fatalf("ended after %v, before its timeout %v", elapsed, timeout)
	}
	if !errors.Is(a.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err after the deadline = %v, want DeadlineExceeded", a.Err())
	}
	if a.Value("k") != nil {
		t.Fatal("a deadline context holds values")
	}
	// Requests made after it ended get a new one.
	if d := s.after(timeout); d == a || d.Err() != nil {
		t.Fatal("a request after the deadline got the ended context")
	}
}

// A short timeout is not stretched by the slot: its deadline lies within a tenth of it.
func TestSharedDeadlinesScaleWithAShortTimeout(t *testing.T) {
	var s sharedDeadlines
	const timeout = time.Millisecond
	start := time.Now()
	a := s.after(timeout)
	dl, _ := a.Deadline()
	if late := dl.Sub(start); late < timeout || late > time.Since(start)+timeout+timeout/10 {
		t.Fatalf("deadline %v after the call, want within [%v, %v]", late, timeout, timeout+timeout/10)
	}
	// A 2 s timeout, the default, shares over the whole slot.
	b := s.after(2 * time.Second)
	if dl, _ := b.Deadline(); dl.Sub(start) < 2*time.Second || dl.Sub(start) > time.Since(start)+2*time.Second+deadlineSlot {
		t.Fatalf("2 s timeout: deadline %v after start", dl.Sub(start))
	}
}

// A parent that can end keeps its own context (and still gets the request timeout).
func TestRequestCtxKeepsACancellableParent(t *testing.T) {
	c := &cluster{}
	c.timeoutNs.Store(int64(time.Hour))
	parent, cancelParent := context.WithCancel(context.Background())
	ctx, cancel := c.requestCtx(parent)
	defer cancel()
	cancelParent()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("cancelling the parent did not end the request's context")
	}
	shared, _ := c.requestCtx(context.Background())
	if _, isShared := shared.(*deadlineCtx); !isShared {
		t.Fatalf("a request without a parent's end got %T, want the shared deadline", shared)
	}
}
