package kvstore

import (
	"bytes"
	"testing"
)

// Blocking commands in the log are their non-blocking selves: replies taken from
// redis-server 7.0.15 running them inside MULTI (where they do not block).
func TestBlockingCommandsApplied(t *testing.T) {
	h := newHarness(t)
	h.expect(3, "RPUSH", "l", "1", "2", "3")
	h.expect(3, "ZADD", "z", "1.5", "a", "2", "b", "3", "c")
	h.expect(Status("OK"), "SET", "s", "v")
	h.expect(listOf("l", "1"), "BLPOP", "nx", "l", "0")
	h.expect(listOf("l", "3"), "BRPOP", "l", "0")
	h.expect("2", "BRPOPLPUSH", "l", "d", "0")
	h.expect([]any{"d", listOf("2")}, "BLMPOP", "0", "2", "nx", "d", "RIGHT", "COUNT", "5")
	h.expect([]any{"z", "c", 3.0}, "BZPOPMAX", "z", "0")
	h.expect([]any{"z", []any{[]any{"a", 1.5}, []any{"b", 2.0}}}, "BZMPOP", "0", "1", "z", "MIN", "COUNT", "5")
	h.expectErr("WRONGTYPE", "BLPOP", "nx", "s", "0")
	h.expectErr("WRONGTYPE", "BZPOPMIN", "s", "1")
	h.expectErr("WRONGTYPE", "BLMOVE", "s", "d", "LEFT", "LEFT", "0")
	h.expect(1, "RPUSH", "l2", "x")
	h.expectErr("WRONGTYPE", "BLMOVE", "l2", "s", "LEFT", "LEFT", "0")
	h.expect(listOf("x"), "LRANGE", "l2", "0", "-1") // nothing popped by the refused move
	h.expect("x", "BLMOVE", "l2", "l2", "LEFT", "RIGHT", "0")

	// nothing to pop: the nil Redis replies in MULTI, a nil bulk for the moves
	for _, c := range []struct {
		want string
		args []string
	}{
		{"*-1\r\n", []string{"BLPOP", "none", "0"}},
		{"*-1\r\n", []string{"BRPOP", "none", "other", "1.5"}},
		{"$-1\r\n", []string{"BRPOPLPUSH", "none", "x", "0"}},
		{"$-1\r\n", []string{"BLMOVE", "none", "x", "LEFT", "LEFT", "0"}},
		{"*-1\r\n", []string{"BZPOPMIN", "none", "0"}},
		{"*-1\r\n", []string{"BLMPOP", "0", "1", "none", "LEFT"}},
		{"*-1\r\n", []string{"BZMPOP", "0", "1", "none", "MIN"}},
		{"-ERR timeout is not a float or out of range\r\n", []string{"BLPOP", "a", "x"}},
		{"-ERR timeout is not a float or out of range\r\n", []string{"BLPOP", "a", "nan"}},
		{"-ERR timeout is negative\r\n", []string{"BLPOP", "a", "-1"}},
		{"-ERR timeout is negative\r\n", []string{"BLPOP", "a", "inf"}},
		{"-ERR timeout is negative\r\n", []string{"BLPOP", "a", "1e400"}},
		{"-ERR timeout is negative\r\n", []string{"BLPOP", "a", "9999999999999999999"}},
		{"-ERR syntax error\r\n", []string{"BLMOVE", "a", "b", "UP", "RIGHT", "x"}},
		{"-ERR numkeys should be greater than 0\r\n", []string{"BLMPOP", "0.01", "0", "a", "LEFT"}},
		{"-ERR syntax error\r\n", []string{"BLMPOP", "0.01", "1", "a", "UP"}},
		{"-ERR count should be greater than 0\r\n", []string{"BLMPOP", "0.01", "1", "a", "LEFT", "COUNT", "0"}},
		{"-ERR timeout is not a float or out of range\r\n", []string{"BLMPOP", "x", "1", "a", "LEFT"}},
		{"-ERR syntax error\r\n", []string{"BZMPOP", "0.01", "2", "a", "MIN"}},
		{"-ERR timeout is not a float or out of range\r\n", []string{"BZPOPMIN", "a", "x"}},
	} {
		if got := h.raw(c.args...); got != c.want {
			t.Errorf("%q: got %q, want %q", c.args, got, c.want)
		}
	}
	h.resp3 = true
	h.expect(1, "ZADD", "z3", "1.5", "a")
	if got := h.raw("BZPOPMIN", "z3", "0"); got != "*3\r\n$2\r\nz3\r\n$1\r\na\r\n,1.5\r\n" {
		t.Errorf("RESP3 BZPOPMIN: %q", got)
	}
	if got := h.raw("BRPOPLPUSH", "none", "x", "0"); got != "_\r\n" {
		t.Errorf("RESP3 BRPOPLPUSH of nothing: %q", got)
	}
}

func TestParseBlockTimeout(t *testing.T) {
	for _, c := range []struct {
		in  string
		ms  int64
		err string
	}{
		{"0", 0, ""},
		{"1", 1000, ""},
		{"0.01", 10, ""},
		{"1e-5", 1, ""},     // rounded up: a timeout never ends early
		{"-0.0001", 0, ""},  // rounds up to 0: waits for ever, as Redis does
		{"0x10", 16000, ""}, // strtold reads hex
		{"99999999999999", 99999999999999000, ""},
		{"9223372036854775", 9223372036854775000, ""},
		{"9223372036854776", 0, errTimeoutNegative}, // 2^63 ms and beyond: LLONG_MIN in Redis
		{"-1", 0, errTimeoutNegative},
		{"inf", 0, errTimeoutNegative},
		{"-inf", 0, errTimeoutNegative},
		{"nan", 0, errTimeoutNotFloat},
		{"", 0, errTimeoutNotFloat},
		{" 1", 0, errTimeoutNotFloat},
		{"1s", 0, errTimeoutNotFloat},
	} {
		ms, err := ParseBlockTimeout([]byte(c.in))
		if ms != c.ms || err != c.err {
			t.Errorf("%q: got %d %q, want %d %q", c.in, ms, err, c.ms, c.err)
		}
	}
}

// A wait registered on keys is woken by an entry that creates one of them as a list or a
// sorted set, in its database, and by nothing else: not a string there, not the same key
// in another database, not a push onto a list that already exists (nobody can be
// waiting on it: they would have popped).
func TestAwaitKeysWokenByCreation(t *testing.T) {
	h := newHarness(t)
	fired := func(w *KeyWait) bool {
		select {
		case <-w.C:
			return true
		default:
			return false
		}
	}
	w := h.s.AwaitKeys(0, [][]byte{[]byte("a"), []byte("b")})
	h.expect(Status("OK"), "SET", "a", "x")
	h.expect(1, "DEL", "a")
	h.db = 1
	h.expect(1, "RPUSH", "b", "x")
	h.db = 0
	h.expect(1, "RPUSH", "c", "x")
	if fired(w) {
		t.Fatal("woken by a string, another database's key or another key")
	}
	h.expect(1, "ZADD", "b", "1", "m")
	if !fired(w) {
		t.Fatal("not woken by ZADD creating a key it waits on")
	}
	w.Cancel()
	w.Cancel() // twice is harmless

	for _, create := range [][]string{
		{"LPUSH", "k", "x"},
		{"RENAME", "c", "k"},
		{"LMOVE", "c", "k", "LEFT", "LEFT"},
		{"ZUNIONSTORE", "k", "1", "b"},
		{"SWAPDB", "0", "1"},
	} {
		h.do("DEL", "k")
		if create[0] == "RENAME" || create[0] == "LMOVE" {
			h.do("DEL", "c")
			h.expect(1, "RPUSH", "c", "x")
		}
		w := h.s.AwaitKeys(0, [][]byte{[]byte("k")})
		h.do(create...)
		if !fired(w) {
			t.Fatalf("%q did not wake a wait on k", create)
		}
		w.Cancel()
		if create[0] == "SWAPDB" {
			h.do("SWAPDB", "0", "1")
		}
	}
	if n := h.s.ready.n.Load(); n != 0 || len(h.s.ready.m) != 0 {
		t.Fatalf("%d waits, %d keys registered after every wait was cancelled", n, len(h.s.ready.m))
	}

	// a snapshot restored replaces the keyspace wholesale: every wait is woken
	var snap bytes.Buffer
	if err := h.s.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	w = h.s.AwaitKeys(3, [][]byte{[]byte("q")})
	defer w.Cancel()
	if err := h.s.Restore(bytes.NewReader(snap.Bytes())); err != nil {
		t.Fatal(err)
	}
	if !fired(w) {
		t.Fatal("a restore did not wake a wait")
	}
}
