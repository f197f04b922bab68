package consensus

import (
	"fmt"
	"slices"
	"testing"
)

// windows is a state machine that records the windows it is shown to read ahead.
type windows struct {
	seen [][]string
}

func (w *windows) Apply(Entry, any) {}

func (w *windows) Prefetch(datas [][]byte) {
	var win []string
	for _, d := range datas {
		win = append(win, string(d))
	}
	w.seen = append(w.seen, win)
}

// TestReadAheadWindows checks which entries of an applier's batch a Prefetcher is shown:
// each window of readAheadWindow from the batch's start, in order, the last one cut
// short, and none of a single entry (the state machine reads ahead within an entry).
func TestReadAheadWindows(t *testing.T) {
	batch := func(n int) []pending {
		b := make([]pending, n)
		for i := range b {
			b[i].e = Entry{Index: uint64(i + 1), Data: []byte(fmt.Sprint(i))}
		}
		return b
	}
	names := func(from, to int) []string {
		var s []string
		for i := from; i < to; i++ {
			s = append(s, fmt.Sprint(i))
		}
		return s
	}
	for _, tc := range []struct {
		n    int
		want [][]string
	}{
		{1, nil},
		{2, [][]string{names(0, 2)}},
		{readAheadWindow, [][]string{names(0, readAheadWindow)}},
		{readAheadWindow + 1, [][]string{names(0, readAheadWindow)}},
		{2*readAheadWindow + 5, [][]string{names(0, readAheadWindow), names(readAheadWindow, 2*readAheadWindow), names(2*readAheadWindow, 2*readAheadWindow+5)}},
	} {
		sm := &windows{}
		r := newReadAhead(sm)
		b := batch(tc.n)
		for i := range b {
			r.before(b, i)
		}
		if !slices.EqualFunc(sm.seen, tc.want, slices.Equal[[]string]) {
			t.Errorf("a batch of %d: windows %q, want %q", tc.n, sm.seen, tc.want)
		}
		for _, d := range r.datas {
			if d != nil {
				t.Fatalf("a batch of %d: the window still refers to an entry", tc.n)
			}
		}
	}
	// a state machine that does not read ahead is never asked to (before would call a
	// nil Prefetcher and panic)
	r := newReadAhead(struct{ StateMachine }{})
	if r.p != nil {
		t.Fatal("a state machine without Prefetch taken for a Prefetcher")
	}
	r.before(batch(3), 0)
}
