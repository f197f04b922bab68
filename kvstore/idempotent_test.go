package kvstore

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
)

// idem applies one idempotent request as its own entry and returns the reply.
func (h *harness) idem(client string, seq uint64, args ...string) any {
	h.t.Helper()
	bargs := make([][]byte, len(args))
	for i, a := range args {
		bargs[i] = []byte(a)
	}
	h.index++
	w := tree{resp3: h.resp3}
	data := AppendIdempotent(nil, []byte(client), seq, h.db, bargs)
	if err := h.s.Apply(Entry{Index: h.index, Term: 1, Time: h.now, Data: data}, &w); err != nil {
		h.t.Fatalf("apply %q: %v", args, err)
	}
	if len(w.out) != 1 || len(w.stack) != 0 {
		h.t.Fatalf("%q: want exactly one complete reply, got %#v", args, w.out)
	}
	return w.out[0]
}

// A retried request (same client, same sequence number) is not applied again, and is
// answered with the first reply; a new number is applied; an older one is refused.
func TestIdempotentRetryAppliesOnce(t *testing.T) {
	h := newHarness(t)
	if got := h.idem("c1", 1, "incr", "n"); got != int64(1) {
		t.Fatalf("first INCR: %v", got)
	}
	for range 3 {
		if got := h.idem("c1", 1, "incr", "n"); got != int64(1) {
			t.Fatalf("retried INCR answered %v, want the first reply 1", got)
		}
	}
	if got := h.do("get", "n"); got != "1" {
		t.Fatalf("n = %v after retries, want 1", got)
	}
	if got := h.idem("c1", 2, "incr", "n"); got != int64(2) {
		t.Fatalf("next INCR: %v", got)
	}
	if got := h.idem("c1", 1, "incr", "n"); got != Err(ErrIdemStale) {
		t.Fatalf("stale request: %v", got)
	}
	// Another client's numbers are its own.
	if got := h.idem("c2", 1, "incr", "n"); got != int64(3) {
		t.Fatalf("other client's INCR: %v", got)
	}
	// Errors and aggregate replies are replayed as they were.
	h.do("set", "s", "x")
	first := h.idem("c1", 3, "lpush", "s", "a")
	if again := h.idem("c1", 3, "lpush", "s", "a"); !reflect.DeepEqual(first, again) || first != Err(ErrWrongType) {
		t.Fatalf("replayed error %v, first %v", again, first)
	}
	h.do("del", "z")
	first = h.idem("c1", 4, "zadd", "z", "incr", "1", "m")
	if again := h.idem("c1", 4, "zadd", "z", "incr", "1", "m"); !reflect.DeepEqual(first, again) {
		t.Fatalf("replayed double %v, first %v", again, first)
	}
	if got := h.do("zscore", "z", "m"); got != float64(1) {
		t.Fatalf("ZADD INCR applied twice: score %v", got)
	}
}

// The table is replicated state: a snapshot carries it, the digest sees it, and two
// stores that applied the same entries agree.
func TestIdempotentTableInSnapshotAndDigest(t *testing.T) {
	h := newHarness(t)
	h.idem("c", 7, "rpush", "l", "a", "b")
	before := h.s.Digest()
	h.idem("c", 8, "get", "l") // a WRONGTYPE reply: state unchanged but for the table
	if h.s.Digest() == before {
		t.Fatal("the digest does not see the idempotent table")
	}
	var snap bytes.Buffer
	if err := h.s.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	r := newHarness(t)
	r.index = h.index
	if err := r.s.Restore(bytes.NewReader(snap.Bytes())); err != nil {
		t.Fatal(err)
	}
	if r.s.Digest() != h.s.Digest() {
		t.Fatal("restored digest differs")
	}
	if got := r.idem("c", 8, "rpush", "l", "c"); got != Err(ErrWrongType) {
		t.Fatalf("the restored store applied a retry: %v", got)
	}
	if got := r.do("llen", "l"); got != int64(2) {
		t.Fatalf("llen %v", got)
	}
}

// The table is bounded; the client used longest ago goes first, the same on every
// replica.
func TestIdempotentTableEvictsDeterministically(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	for i := range maxIdemClients + 10 {
		for _, h := range []*harness{a, b} {
			h.idem(fmt.Sprintf("c%d", i), 1, "incr", "n")
		}
	}
	if len(a.s.idem) != maxIdemClients {
		t.Fatalf("table holds %d clients, bound %d", len(a.s.idem), maxIdemClients)
	}
	if _, ok := a.s.idem["c0"]; ok {
		t.Fatal("the oldest client is still there")
	}
	if a.s.Digest() != b.s.Digest() {
		t.Fatal("two stores evicted differently")
	}
	// Forgotten: its retry is applied as new.
	if got := a.idem("c0", 1, "incr", "n"); got != int64(maxIdemClients+11) {
		t.Fatalf("retry of a forgotten client: %v", got)
	}
}
