package kvstore

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// tree is a ReplyWriter that builds the reply as Go values, for assertions:
// status → Status, error → Err, int → int64, bulk → string, null → nil,
// arrays/sets → []any, maps → []any of alternating keys and values, double → float64.
type tree struct {
	resp3 bool
	stack []*frame
	out   []any
}

type frame struct {
	want int
	vals []any
}

type Status string
type Err string

func (t *tree) push(v any) {
	for {
		if len(t.stack) == 0 {
			t.out = append(t.out, v)
			return
		}
		top := t.stack[len(t.stack)-1]
		top.vals = append(top.vals, v)
		if len(top.vals) < top.want {
			return
		}
		t.stack = t.stack[:len(t.stack)-1]
		v = top.vals
	}
}

func (t *tree) open(n int) {
	if n == 0 {
		t.push([]any{})
		return
	}
	t.stack = append(t.stack, &frame{want: n})
}

func (t *tree) Status(s string)     { t.push(Status(s)) }
func (t *tree) Error(s string)      { t.push(Err(s)) }
func (t *tree) Int(n int64)         { t.push(n) }
func (t *tree) Bulk(b []byte)       { t.push(string(b)) }
func (t *tree) BulkString(s string) { t.push(s) }
func (t *tree) Null()               { t.push(nil) }
func (t *tree) NullArray()          { t.push(nil) }
func (t *tree) Array(n int)         { t.open(n) }
func (t *tree) Map(n int)           { t.open(2 * n) }
func (t *tree) Set(n int)           { t.open(n) }
func (t *tree) Double(f float64)    { t.push(f) }

// harness applies commands to a store the way the server does: writes as log entries
// (one command per entry, with a fixed clock the test can move), reads on the read path.
type harness struct {
	t     testing.TB
	s     *Store
	index uint64
	now   int64 // unix ms
	db    int
	resp3 bool // replies as to a RESP3 client
}

func newHarness(t testing.TB) *harness {
	return &harness{t: t, s: New(), now: 1_700_000_000_000}
}

// applied runs any command, even a read, through Apply: random choices are then the
// replicated, deterministic ones (reads choose freely).
func (h *harness) applied(args ...string) any {
	h.t.Helper()
	return h.run(true, args...)
}

// do runs one command, routed by its flags, and returns its reply.
func (h *harness) do(args ...string) any {
	h.t.Helper()
	spec := Lookup([]byte(args[0]))
	bargs := make([][]byte, len(args))
	for i, a := range args {
		bargs[i] = []byte(a)
	}
	return h.run(spec != nil && spec.CheckArity(bargs) && spec.Writes(bargs), args...)
}

func (h *harness) run(apply bool, args ...string) any {
	h.t.Helper()
	w := tree{resp3: h.resp3}
	h.exec(apply, &w, args...)
	if len(w.out) != 1 || len(w.stack) != 0 {
		h.t.Fatalf("%q: want exactly one complete reply, got %#v (open frames %d)", args, w.out, len(w.stack))
	}
	return w.out[0]
}

// exec runs a command through Apply (as a log entry) or Read, replying to w.
func (h *harness) exec(apply bool, w ReplyWriter, args ...string) {
	h.t.Helper()
	bargs := make([][]byte, len(args))
	for i, a := range args {
		bargs[i] = []byte(a)
	}
	if apply {
		h.index++
		data := AppendCommand(nil, h.db, bargs)
		if err := h.s.Apply(Entry{Index: h.index, Term: 1, Time: h.now, Data: data}, w); err != nil {
			h.t.Fatalf("apply %q: %v", args, err)
		}
	} else {
		h.s.Read(h.db, h.now, bargs, w)
	}
}

// raw runs a command like do and returns the reply as RESP bytes, for checks that must
// tell a null bulk from a null array, or RESP2 from RESP3 shapes.
func (h *harness) raw(args ...string) string {
	h.t.Helper()
	spec := Lookup([]byte(args[0]))
	w := &wire{resp3: h.resp3}
	h.exec(spec != nil && spec.Flags&FlagWrite != 0, w, args...)
	return w.b.String()
}

// wire renders replies as RESP2 or RESP3 bytes (the resp package cannot be imported
// here: it imports kvstore).
type wire struct {
	b     bytes.Buffer
	resp3 bool
}

func (w *wire) Status(s string)     { fmt.Fprintf(&w.b, "+%s\r\n", s) }
func (w *wire) Error(s string)      { fmt.Fprintf(&w.b, "-%s\r\n", s) }
func (w *wire) Int(n int64)         { fmt.Fprintf(&w.b, ":%d\r\n", n) }
func (w *wire) Bulk(b []byte)       { fmt.Fprintf(&w.b, "$%d\r\n%s\r\n", len(b), b) }
func (w *wire) BulkString(s string) { fmt.Fprintf(&w.b, "$%d\r\n%s\r\n", len(s), s) }
func (w *wire) Array(n int)         { fmt.Fprintf(&w.b, "*%d\r\n", n) }
func (w *wire) Resp3() bool         { return w.resp3 }

func (w *wire) pick(resp2, resp3 string) {
	if w.resp3 {
		w.b.WriteString(resp3)
	} else {
		w.b.WriteString(resp2)
	}
}

func (w *wire) Map(n int)  { w.pick(fmt.Sprintf("*%d\r\n", 2*n), fmt.Sprintf("%%%d\r\n", n)) }
func (w *wire) Set(n int)  { w.pick(fmt.Sprintf("*%d\r\n", n), fmt.Sprintf("~%d\r\n", n)) }
func (w *wire) Null()      { w.pick("$-1\r\n", "_\r\n") }
func (w *wire) NullArray() { w.pick("*-1\r\n", "_\r\n") }
func (w *wire) Double(f float64) {
	s := FormatDouble(f)
	w.pick(fmt.Sprintf("$%d\r\n%s\r\n", len(s), s), ","+s+"\r\n")
}

// expect runs a command and compares its reply with want (see tree for the shapes).
func (h *harness) expect(want any, args ...string) {
	h.t.Helper()
	got := h.do(args...)
	if !reflect.DeepEqual(normalize(got), normalize(want)) {
		h.t.Fatalf("%s\n got: %#v\nwant: %#v", strings.Join(args, " "), got, want)
	}
}

// expectErr runs a command and requires an error reply starting with prefix.
func (h *harness) expectErr(prefix string, args ...string) {
	h.t.Helper()
	got := h.do(args...)
	e, ok := got.(Err)
	if !ok || !strings.HasPrefix(string(e), prefix) {
		h.t.Fatalf("%s\n got: %#v\nwant error starting %q", strings.Join(args, " "), got, prefix)
	}
}

// normalize lets tests write plain ints for int64 replies.
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = normalize(x[i])
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i := range x {
			out[i] = x[i]
		}
		return out
	}
	return v
}

func TestHarnessShapes(t *testing.T) {
	h := newHarness(t)
	h.expect(Status("OK"), "SET", "k", "v")
	h.expect("v", "GET", "k")
	h.expect(nil, "GET", "missing")
	h.expect([]any{"v", nil}, "MGET", "k", "missing")
	h.expectErr("ERR wrong number of arguments for 'get' command", "GET")
	if got := fmt.Sprint(h.do("unknowncmd", "a")); !strings.HasPrefix(got, "ERR unknown command 'unknowncmd'") {
		t.Fatalf("unknown command reply %q", got)
	}
}
func (t *tree) Resp3() bool { return t.resp3 }

// rawItem returns the stored item at key in db 0, TTL or not, for white-box checks.
func (h *harness) rawItem(key string) item {
	it, _ := h.s.shards[shardOf([]byte(key))].dbs[0].get([]byte(key))
	return it
}

// expectVersionMoves runs each command and requires it to change key's WATCH version.
func (h *harness) expectVersionMoves(key string, cmds [][]string) {
	h.t.Helper()
	v := h.s.KeyVersion(h.db, []byte(key), h.now)
	for _, args := range cmds {
		h.do(args...)
		nv := h.s.KeyVersion(h.db, []byte(key), h.now)
		if nv == v {
			h.t.Fatalf("%q left the version of %s unchanged", args, key)
		}
		v = nv
	}
}

// expectVersionStays runs each command and requires key's WATCH version not to change.
func (h *harness) expectVersionStays(key string, cmds [][]string) {
	h.t.Helper()
	v := h.s.KeyVersion(h.db, []byte(key), h.now)
	for _, args := range cmds {
		h.do(args...)
		if h.s.KeyVersion(h.db, []byte(key), h.now) != v {
			h.t.Fatalf("%q changed the version of %s", args, key)
		}
	}
}

// restored returns a harness whose store is restored from a snapshot of h's, with h's
// index, clock and database; the test fails unless the two digests agree.
func (h *harness) restored() *harness {
	h.t.Helper()
	var snap bytes.Buffer
	if err := h.s.Snapshot(&snap); err != nil {
		h.t.Fatal(err)
	}
	b := &harness{t: h.t, s: New(), index: h.index, now: h.now, db: h.db, resp3: h.resp3}
	if err := b.s.Restore(bytes.NewReader(snap.Bytes())); err != nil {
		h.t.Fatal(err)
	}
	if h.s.Digest() != b.s.Digest() {
		h.t.Fatal("digest differs after restore")
	}
	return b
}

// runReaders runs read(r, i) for i = 0, 1, ... in n goroutines r = 0..n-1, until the
// returned stop is called; stop returns once they have all ended.
func runReaders(n int, read func(r, i int)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				read(r, i)
			}
		}()
	}
	return func() {
		close(done)
		wg.Wait()
	}
}
