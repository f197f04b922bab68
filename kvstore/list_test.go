package kvstore

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func listExpectRaw(h *harness, want string, args ...string) {
	h.t.Helper()
	if got := h.raw(args...); got != want {
		h.t.Fatalf("%s\n got: %q\nwant: %q", strings.Join(args, " "), got, want)
	}
}

// listOf builds the expected reply of LRANGE: a []any of strings.
func listOf(elems ...string) []any {
	out := make([]any, len(elems))
	for i, e := range elems {
		out[i] = e
	}
	return out
}

func TestListSpecs(t *testing.T) {
	// as Redis 7.0.15's COMMAND INFO reports them
	want := []struct {
		name             string
		arity            int
		flags            Flags
		first, last, stp int
	}{
		{"lpush", -3, FlagWrite | FlagDenyOOM | FlagFast, 1, 1, 1},
		{"rpush", -3, FlagWrite | FlagDenyOOM | FlagFast, 1, 1, 1},
		{"lpushx", -3, FlagWrite | FlagDenyOOM | FlagFast, 1, 1, 1},
		{"rpushx", -3, FlagWrite | FlagDenyOOM | FlagFast, 1, 1, 1},
		{"lpop", -2, FlagWrite | FlagFast, 1, 1, 1},
		{"rpop", -2, FlagWrite | FlagFast, 1, 1, 1},
		{"llen", 2, FlagReadOnly | FlagFast, 1, 1, 1},
		{"lindex", 3, FlagReadOnly, 1, 1, 1},
		{"lset", 4, FlagWrite | FlagDenyOOM, 1, 1, 1},
		{"lrange", 4, FlagReadOnly, 1, 1, 1},
		{"ltrim", 4, FlagWrite, 1, 1, 1},
		{"linsert", 5, FlagWrite | FlagDenyOOM, 1, 1, 1},
		{"lrem", 4, FlagWrite, 1, 1, 1},
		{"lpos", -3, FlagReadOnly, 1, 1, 1},
		{"lmove", 5, FlagWrite | FlagDenyOOM, 1, 2, 1},
		{"rpoplpush", 3, FlagWrite | FlagDenyOOM, 1, 2, 1},
		{"lmpop", -4, FlagWrite, 0, 0, 0}, // its keys: MoreKeys
	}
	for _, w := range want {
		s := Lookup([]byte(strings.ToUpper(w.name)))
		if s == nil {
			t.Fatalf("%s not registered", w.name)
		}
		if s.Arity != w.arity || s.Flags != w.flags || s.FirstKey != w.first || s.LastKey != w.last || s.Step != w.stp {
			t.Errorf("%s: arity %d flags %b keys %d %d %d", w.name, s.Arity, s.Flags, s.FirstKey, s.LastKey, s.Step)
		}
		if s.Group != "list" || s.Since == "" || s.Summary == "" || s.Blind != nil {
			t.Errorf("%s: group %q since %q summary %q", w.name, s.Group, s.Since, s.Summary)
		}
	}
	keys := Lookup([]byte("lmove")).Keys(nil, [][]byte{[]byte("lmove"), []byte("a"), []byte("b"), []byte("left"), []byte("right")})
	if len(keys) != 2 || string(keys[0]) != "a" || string(keys[1]) != "b" {
		t.Fatalf("lmove keys %q", keys)
	}
	if _, ok := collectionDecoders[TypeList]; !ok {
		t.Fatal("no list decoder")
	}
}

func TestListPushPop(t *testing.T) {
	h := newHarness(t)
	h.expect(3, "RPUSH", "l", "a", "b", "c")
	h.expect(5, "LPUSH", "l", "y", "x")
	h.expect(listOf("x", "y", "a", "b", "c"), "LRANGE", "l", "0", "-1")
	h.expect(Status("list"), "TYPE", "l")
	h.expect(0, "LPUSHX", "missing", "a")
	h.expect(0, "RPUSHX", "missing", "a", "b")
	h.expect(0, "EXISTS", "missing")
	h.expect(7, "LPUSHX", "l", "q", "p")
	h.expect(9, "RPUSHX", "l", "z1", "z2")
	h.expect(listOf("p", "q", "x", "y", "a", "b", "c", "z1", "z2"), "LRANGE", "l", "0", "-1")
	h.expectErr("ERR wrong number of arguments for 'lpush' command", "LPUSH", "l")
	h.expectErr("ERR wrong number of arguments for 'rpushx' command", "RPUSHX", "l")

	h.expect("p", "LPOP", "l")
	h.expect("z2", "RPOP", "l")
	h.expect(listOf("q", "x"), "LPOP", "l", "2")
	h.expect(listOf("z1", "c", "b"), "RPOP", "l", "3") // popping order: tail first
	h.expect(listOf(), "LPOP", "l", "0")
	h.expect(2, "LLEN", "l")
	h.expect(listOf("y", "a"), "LPOP", "l", "10")
	h.expect(0, "EXISTS", "l") // the last pop deleted the key
	h.expect(Status("none"), "TYPE", "l")
	h.expect(nil, "LPOP", "l")
	h.expect(nil, "RPOP", "l", "1")

	h.expectErr(ErrNotPositive, "LPOP", "l", "-1")
	h.expectErr(ErrNotPositive, "LPOP", "l", "abc")
	h.expectErr(ErrNotPositive, "RPOP", "l", "01")
	h.expectErr("ERR wrong number of arguments for 'lpop' command", "LPOP", "l", "1", "2")
	h.expectErr("ERR wrong number of arguments for 'rpop' command", "RPOP", "l", "1", "2")
	h.expectErr("ERR wrong number of arguments for 'lpop' command", "LPOP")

	// empty strings and binary data are elements like any other
	h.expect(3, "RPUSH", "bin", "", "\x00\r\n", "")
	h.expect(listOf("", "\x00\r\n", ""), "LRANGE", "bin", "0", "-1")
	h.expect("", "RPOP", "bin")
}

func TestListWrongType(t *testing.T) {
	h := newHarness(t)
	h.expect(Status("OK"), "SET", "s", "v")
	h.expect(1, "RPUSH", "l", "a")
	for _, args := range [][]string{
		{"LPUSH", "s", "a"}, {"RPUSH", "s", "a"}, {"LPUSHX", "s", "a"}, {"RPUSHX", "s", "a"},
		{"LPOP", "s"}, {"RPOP", "s"}, {"LPOP", "s", "0"}, {"RPOP", "s", "2"},
		{"LLEN", "s"}, {"LINDEX", "s", "0"}, {"LINDEX", "s", "x"}, {"LSET", "s", "0", "v"}, {"LSET", "s", "x", "v"},
		{"LRANGE", "s", "0", "-1"}, {"LTRIM", "s", "0", "-1"}, {"LINSERT", "s", "BEFORE", "a", "b"},
		{"LREM", "s", "0", "a"}, {"LPOS", "s", "a"}, {"LPOS", "s", "a", "COUNT", "0"},
		{"LMOVE", "s", "l", "LEFT", "LEFT"}, {"LMOVE", "l", "s", "LEFT", "RIGHT"},
		{"RPOPLPUSH", "s", "l"}, {"RPOPLPUSH", "l", "s"},
		{"LMPOP", "1", "s", "LEFT"}, {"LMPOP", "2", "missing", "s", "RIGHT", "COUNT", "2"},
	} {
		h.expectErr(ErrWrongType, args...)
	}
	// nothing moved out of l, and s is untouched
	h.expect(listOf("a"), "LRANGE", "l", "0", "-1")
	h.expect("v", "GET", "s")
	// a missing source answers before the destination's type is looked at
	h.expect(nil, "LMOVE", "missing", "s", "LEFT", "LEFT")
	h.expect(nil, "RPOPLPUSH", "missing", "s")
	// LMPOP stops at the first non-empty list: a later string key is not examined
	h.expect([]any{"l", listOf("a")}, "LMPOP", "3", "missing", "l", "s", "LEFT")
	// argument errors come before the type check where Redis parses them first
	h.expectErr(ErrNotPositive, "LPOP", "s", "x")
	h.expectErr(ErrNotInteger, "LRANGE", "s", "x", "1")
	h.expectErr(ErrNotInteger, "LTRIM", "s", "0", "x")
	h.expectErr(ErrNotInteger, "LREM", "s", "x", "a")
	h.expectErr(ErrSyntax, "LINSERT", "s", "MIDDLE", "a", "b")
	h.expectErr(errListRankZero, "LPOS", "s", "a", "RANK", "0")
	h.expectErr(ErrSyntax, "LMOVE", "s", "l", "UP", "LEFT")
}

// TestListNullShapes checks the exact wire replies where RESP2 distinguishes a null bulk
// from a null array, and RESP3 answers with its single null.
func TestListNullShapes(t *testing.T) {
	for _, resp3 := range []bool{false, true} {
		h := newHarness(t)
		h.resp3 = resp3
		nullBulk, nullArray := "$-1\r\n", "*-1\r\n"
		if resp3 {
			nullBulk, nullArray = "_\r\n", "_\r\n"
		}
		listExpectRaw(h, nullBulk, "LPOP", "missing")
		listExpectRaw(h, nullBulk, "RPOP", "missing")
		listExpectRaw(h, nullArray, "LPOP", "missing", "0")
		listExpectRaw(h, nullArray, "RPOP", "missing", "1")
		listExpectRaw(h, nullBulk, "LINDEX", "missing", "0")
		listExpectRaw(h, nullBulk, "LINDEX", "missing", "notanumber")
		listExpectRaw(h, nullBulk, "LPOS", "missing", "a")
		listExpectRaw(h, "*0\r\n", "LPOS", "missing", "a", "COUNT", "0")
		listExpectRaw(h, "*0\r\n", "LRANGE", "missing", "0", "-1")
		listExpectRaw(h, nullBulk, "LMOVE", "missing", "d", "LEFT", "RIGHT")
		listExpectRaw(h, nullBulk, "RPOPLPUSH", "missing", "d")
		listExpectRaw(h, nullArray, "LMPOP", "2", "missing", "other", "LEFT")
		listExpectRaw(h, ":3\r\n", "RPUSH", "l", "a", "b", "c")
		listExpectRaw(h, "*0\r\n", "LPOP", "l", "0")
		listExpectRaw(h, nullBulk, "LINDEX", "l", "3")
		listExpectRaw(h, nullBulk, "LPOS", "l", "zz")
		listExpectRaw(h, "*0\r\n", "LPOS", "l", "zz", "COUNT", "1")
		listExpectRaw(h, "*2\r\n$1\r\nl\r\n*2\r\n$1\r\nc\r\n$1\r\nb\r\n", "LMPOP", "1", "l", "RIGHT", "COUNT", "2")
		listExpectRaw(h, "*1\r\n$1\r\na\r\n", "LPOP", "l", "1")
		listExpectRaw(h, ":0\r\n", "EXISTS", "l")
	}
}

func TestListIndexSetRange(t *testing.T) {
	h := newHarness(t)
	h.expect(nil, "LINDEX", "l", "0")
	h.expect(0, "LLEN", "l")
	h.expect(4, "RPUSH", "l", "a", "b", "c", "d")
	h.expect("a", "LINDEX", "l", "0")
	h.expect("d", "LINDEX", "l", "-1")
	h.expect("a", "LINDEX", "l", "-4")
	h.expect(nil, "LINDEX", "l", "-5")
	h.expect(nil, "LINDEX", "l", "4")
	h.expect(nil, "LINDEX", "l", "9223372036854775807")
	h.expect(nil, "LINDEX", "l", "-9223372036854775808")
	h.expectErr(ErrNotInteger, "LINDEX", "l", "1.5")

	h.expect(Status("OK"), "LSET", "l", "1", "B")
	h.expect(Status("OK"), "LSET", "l", "-1", "D")
	h.expectErr(ErrIndexRange, "LSET", "l", "4", "x")
	h.expectErr(ErrIndexRange, "LSET", "l", "-5", "x")
	h.expectErr(ErrIndexRange, "LSET", "l", "-9223372036854775808", "x")
	h.expectErr(ErrNotInteger, "LSET", "l", "x", "x")
	h.expectErr(ErrNoSuchKey, "LSET", "missing", "0", "x")
	h.expectErr(ErrNoSuchKey, "LSET", "missing", "x", "x") // the key is looked up first
	h.expect(0, "EXISTS", "missing")

	h.expect(listOf("a", "B", "c", "D"), "LRANGE", "l", "0", "-1")
	h.expect(listOf("B", "c"), "LRANGE", "l", "1", "2")
	h.expect(listOf("c", "D"), "LRANGE", "l", "-2", "100")
	h.expect(listOf("a", "B", "c", "D"), "LRANGE", "l", "-100", "100")
	h.expect(listOf("a", "B", "c", "D"), "LRANGE", "l", "-9223372036854775808", "9223372036854775807")
	h.expect(listOf(), "LRANGE", "l", "2", "1")
	h.expect(listOf(), "LRANGE", "l", "4", "10")
	h.expect(listOf(), "LRANGE", "l", "-100", "-5")
	h.expect(listOf("a"), "LRANGE", "l", "-100", "-4")
	h.expect(listOf(), "LRANGE", "missing", "0", "-1")
	h.expectErr(ErrNotInteger, "LRANGE", "missing", "a", "1")
	h.expectErr(ErrNotInteger, "LRANGE", "l", "0", "1e3")
}

func TestListTrim(t *testing.T) {
	h := newHarness(t)
	h.expect(Status("OK"), "LTRIM", "missing", "0", "1")
	h.expectErr(ErrNotInteger, "LTRIM", "missing", "a", "1")
	h.expect(6, "RPUSH", "l", "a", "b", "c", "d", "e", "f")
	h.expect(Status("OK"), "LTRIM", "l", "1", "-2")
	h.expect(listOf("b", "c", "d", "e"), "LRANGE", "l", "0", "-1")
	h.expect(Status("OK"), "LTRIM", "l", "-9223372036854775808", "9223372036854775807")
	h.expect(listOf("b", "c", "d", "e"), "LRANGE", "l", "0", "-1")
	h.expect(Status("OK"), "LTRIM", "l", "-2", "-1")
	h.expect(listOf("d", "e"), "LRANGE", "l", "0", "-1")
	h.expect(Status("OK"), "LTRIM", "l", "0", "0")
	h.expect(listOf("d"), "LRANGE", "l", "0", "-1")
	h.expect(Status("OK"), "LTRIM", "l", "5", "10") // out of range: the list empties
	h.expect(0, "EXISTS", "l")
	h.expect(2, "RPUSH", "l", "a", "b")
	h.expect(Status("OK"), "LTRIM", "l", "1", "0")
	h.expect(0, "EXISTS", "l")
}

func TestListInsert(t *testing.T) {
	h := newHarness(t)
	h.expect(0, "LINSERT", "missing", "BEFORE", "a", "b")
	h.expect(0, "EXISTS", "missing")
	h.expectErr(ErrSyntax, "LINSERT", "missing", "MIDDLE", "a", "b")
	h.expect(3, "RPUSH", "l", "a", "b", "a")
	h.expect(4, "LINSERT", "l", "before", "a", "x") // the first pivot from the head
	h.expect(5, "LINSERT", "l", "AFTER", "a", "y")
	h.expect(6, "LINSERT", "l", "After", "a", "z") // after the last element
	h.expect(listOf("x", "a", "z", "y", "b", "a"), "LRANGE", "l", "0", "-1")
	h.expect(7, "LINSERT", "l", "AFTER", "b", "w")
	h.expect(8, "LINSERT", "l", "BEFORE", "b", "v")
	h.expect(listOf("x", "a", "z", "y", "v", "b", "w", "a"), "LRANGE", "l", "0", "-1")
	h.expect(-1, "LINSERT", "l", "BEFORE", "nope", "v")
	h.expectErr(ErrSyntax, "LINSERT", "l", "BEFOREX", "a", "v")
	h.expectErr("ERR wrong number of arguments for 'linsert' command", "LINSERT", "l", "BEFORE", "a")
}

func TestListRem(t *testing.T) {
	h := newHarness(t)
	h.expect(0, "LREM", "missing", "0", "a")
	h.expectErr(ErrNotInteger, "LREM", "missing", "x", "a")
	h.expect(7, "RPUSH", "l", "a", "b", "a", "c", "a", "b", "a")
	h.expect(2, "LREM", "l", "-2", "a")
	h.expect(listOf("a", "b", "a", "c", "b"), "LRANGE", "l", "0", "-1")
	h.expect(1, "LREM", "l", "1", "b")
	h.expect(listOf("a", "a", "c", "b"), "LRANGE", "l", "0", "-1")
	h.expect(0, "LREM", "l", "0", "zz")
	h.expect(2, "LREM", "l", "-9223372036854775808", "a") // Redis removes them all too
	h.expect(listOf("c", "b"), "LRANGE", "l", "0", "-1")
	h.expect(1, "LREM", "l", "9223372036854775807", "c")
	h.expect(1, "LREM", "l", "0", "b")
	h.expect(0, "EXISTS", "l")
}

func TestListPos(t *testing.T) {
	h := newHarness(t)
	h.expect(7, "RPUSH", "l", "a", "b", "c", "a", "b", "c", "a")
	h.expect(0, "LPOS", "l", "a")
	h.expect(1, "LPOS", "l", "b")
	h.expect(nil, "LPOS", "l", "zz")
	h.expect(3, "LPOS", "l", "a", "RANK", "2")
	h.expect(6, "LPOS", "l", "a", "rank", "-1")
	h.expect(3, "LPOS", "l", "a", "RANK", "-2")
	h.expect(nil, "LPOS", "l", "a", "RANK", "4")
	h.expect(6, "LPOS", "l", "a", "RANK", "2", "RANK", "3") // the last one wins
	h.expect(listOf(), "LPOS", "l", "zz", "COUNT", "1")
	h.expect([]any{0, 3, 6}, "LPOS", "l", "a", "COUNT", "0")
	h.expect([]any{0, 3}, "LPOS", "l", "a", "COUNT", "2")
	h.expect([]any{3, 6}, "LPOS", "l", "a", "RANK", "2", "COUNT", "2")
	h.expect([]any{3, 0}, "LPOS", "l", "a", "RANK", "-2", "COUNT", "0")
	h.expect([]any{0, 3}, "LPOS", "l", "a", "COUNT", "0", "MAXLEN", "4")
	h.expect([]any{6}, "LPOS", "l", "a", "RANK", "-1", "COUNT", "2", "MAXLEN", "2")
	h.expect([]any{6, 3, 0}, "LPOS", "l", "a", "MAXLEN", "0", "COUNT", "0", "RANK", "-1")
	h.expect(0, "LPOS", "l", "a", "MAXLEN", "1")
	h.expect(nil, "LPOS", "l", "b", "MAXLEN", "1")
	h.expect([]any{0, 3, 6}, "LPOS", "l", "a", "COUNT", "9223372036854775807")
	h.expect(nil, "LPOS", "l", "a", "RANK", "9223372036854775807")
	h.expect(listOf(), "LPOS", "l", "a", "RANK", "9223372036854775807", "COUNT", "1")
	// RANK -2^63 negates to itself in Redis's C arithmetic: every match qualifies and COUNT
	// never ends the scan
	h.expect(6, "LPOS", "l", "a", "RANK", "-9223372036854775808")
	h.expect([]any{6, 3, 0}, "LPOS", "l", "a", "RANK", "-9223372036854775808", "COUNT", "1")
	h.expect(listOf(), "LPOS", "l", "a", "RANK", "-9223372036854775807", "COUNT", "1")

	h.expectErr(errListRankZero, "LPOS", "l", "a", "RANK", "0")
	h.expectErr(errListRankZero, "LPOS", "missing", "a", "RANK", "0")
	h.expectErr(ErrNotInteger, "LPOS", "l", "a", "RANK", "x")
	h.expectErr(errListCountNegative, "LPOS", "l", "a", "COUNT", "-1")
	h.expectErr(errListCountNegative, "LPOS", "l", "a", "COUNT", "x")
	h.expectErr(errListMaxlenNeg, "LPOS", "l", "a", "MAXLEN", "-1")
	h.expectErr(errListMaxlenNeg, "LPOS", "l", "a", "MAXLEN", "x")
	h.expectErr(ErrSyntax, "LPOS", "l", "a", "RANK")
	h.expectErr(ErrSyntax, "LPOS", "l", "a", "FOO", "1")
	h.expectErr(ErrSyntax, "LPOS", "l", "a", "COUNT", "1", "MAXLEN")
	h.expect(nil, "LPOS", "missing", "a")
	h.expect(listOf(), "LPOS", "missing", "a", "COUNT", "1", "RANK", "2")
}

func TestListMove(t *testing.T) {
	h := newHarness(t)
	h.expect(3, "RPUSH", "l", "a", "b", "c")
	h.expectErr(ErrSyntax, "LMOVE", "l", "d", "MIDDLE", "LEFT")
	h.expectErr(ErrSyntax, "LMOVE", "l", "d", "LEFT", "MIDDLE")
	h.expectErr(ErrSyntax, "LMOVE", "missing", "d", "LEFT", "UP")
	h.expect("a", "LMOVE", "l", "d", "LEFT", "RIGHT")
	h.expect("c", "LMOVE", "l", "d", "right", "left")
	h.expect(listOf("c", "a"), "LRANGE", "d", "0", "-1")
	h.expect("b", "LMOVE", "l", "d", "LEFT", "LEFT")
	h.expect(0, "EXISTS", "l") // the source emptied
	h.expect(listOf("b", "c", "a"), "LRANGE", "d", "0", "-1")

	// one key: a rotation
	h.expect("b", "LMOVE", "d", "d", "LEFT", "RIGHT")
	h.expect(listOf("c", "a", "b"), "LRANGE", "d", "0", "-1")
	h.expect("b", "LMOVE", "d", "d", "RIGHT", "LEFT")
	h.expect(listOf("b", "c", "a"), "LRANGE", "d", "0", "-1")
	h.expect("b", "LMOVE", "d", "d", "LEFT", "LEFT")
	h.expect("a", "LMOVE", "d", "d", "RIGHT", "RIGHT")
	h.expect(listOf("b", "c", "a"), "LRANGE", "d", "0", "-1")
	h.expect("a", "RPOPLPUSH", "d", "d")
	h.expect(listOf("a", "b", "c"), "LRANGE", "d", "0", "-1")

	// a one-element list rotating onto itself survives
	h.expect(1, "RPUSH", "one", "x")
	h.expect("x", "LMOVE", "one", "one", "LEFT", "RIGHT")
	h.expect("x", "RPOPLPUSH", "one", "one")
	h.expect(listOf("x"), "LRANGE", "one", "0", "-1")

	h.expect("c", "RPOPLPUSH", "d", "e")
	h.expect("b", "RPOPLPUSH", "d", "e")
	h.expect(listOf("b", "c"), "LRANGE", "e", "0", "-1")
	h.expect(listOf("a"), "LRANGE", "d", "0", "-1")
	h.expect(nil, "RPOPLPUSH", "missing", "e")
	h.expect(nil, "LMOVE", "missing", "missing", "LEFT", "LEFT")
	h.expect(0, "EXISTS", "missing")
}

func TestListMPop(t *testing.T) {
	h := newHarness(t)
	h.expect(4, "RPUSH", "l", "a", "b", "c", "d")
	h.expect(2, "RPUSH", "m", "x", "y")
	h.expectErr(errListNumkeys, "LMPOP", "0", "l", "LEFT")
	h.expectErr(errListNumkeys, "LMPOP", "-1", "l", "LEFT")
	h.expectErr(errListNumkeys, "LMPOP", "abc", "l", "LEFT")
	h.expectErr(ErrSyntax, "LMPOP", "2", "l", "LEFT")
	h.expectErr(ErrSyntax, "LMPOP", "9223372036854775807", "l", "LEFT")
	h.expectErr(ErrSyntax, "LMPOP", "1", "l", "MIDDLE")
	h.expectErr(errListCountPositive, "LMPOP", "1", "l", "LEFT", "COUNT", "0")
	h.expectErr(errListCountPositive, "LMPOP", "1", "l", "LEFT", "COUNT", "-1")
	h.expectErr(errListCountPositive, "LMPOP", "1", "l", "LEFT", "COUNT", "x")
	h.expectErr(ErrSyntax, "LMPOP", "1", "l", "LEFT", "COUNT", "1", "COUNT", "1")
	h.expectErr(ErrSyntax, "LMPOP", "1", "l", "LEFT", "COUNT")
	h.expectErr(ErrSyntax, "LMPOP", "1", "l", "LEFT", "FOO")
	h.expectErr("ERR wrong number of arguments for 'lmpop' command", "LMPOP", "1", "l")
	h.expect(listOf("a", "b", "c", "d"), "LRANGE", "l", "0", "-1") // errors popped nothing

	h.expect([]any{"l", listOf("a")}, "LMPOP", "2", "l", "m", "LEFT")
	h.expect([]any{"m", listOf("y", "x")}, "LMPOP", "2", "missing", "m", "right", "count", "5")
	h.expect(0, "EXISTS", "m")
	h.expect([]any{"l", listOf("d", "c")}, "LMPOP", "3", "missing", "m", "l", "RIGHT", "COUNT", "2")
	h.expect([]any{"l", listOf("b")}, "LMPOP", "1", "l", "LEFT", "COUNT", "9223372036854775807")
	h.expect(0, "EXISTS", "l")
	h.expect(nil, "LMPOP", "2", "l", "m", "LEFT")
}

func TestListTTLAndVersions(t *testing.T) {
	h := newHarness(t)
	h.expect(2, "RPUSH", "l", "a", "b")
	h.expect(1, "PEXPIRE", "l", "1000")
	h.expect(3, "LPUSH", "l", "c") // changing a list keeps its TTL, as in Redis
	h.expect(1000, "PTTL", "l")
	h.expect("b", "RPOP", "l")
	h.expect(1000, "PTTL", "l")
	h.now += 1000
	h.expect(0, "LLEN", "l")
	h.expect(1, "RPUSH", "l", "x") // the expired list is gone: a new one without TTL
	h.expect(-1, "PTTL", "l")

	// WATCH versions move exactly when Redis signals the key as modified
	h.expectVersionStays("l", [][]string{
		{"LREM", "l", "0", "zz"}, {"LINSERT", "l", "BEFORE", "zz", "y"}, {"LPOP", "l", "0"},
		{"LRANGE", "l", "0", "-1"}, {"LPOS", "l", "x"}, {"LPUSHX", "missing", "a"},
		{"LMOVE", "missing", "l", "LEFT", "LEFT"}, {"LSET", "l", "5", "x"},
	})
	h.expectVersionMoves("l", [][]string{
		{"LTRIM", "l", "0", "-1"}, {"LSET", "l", "0", "y"}, {"LINSERT", "l", "AFTER", "y", "z"},
		{"LREM", "l", "1", "z"}, {"LMOVE", "l", "l", "LEFT", "RIGHT"}, {"RPUSHX", "l", "w"},
	})
}

func TestListInTransaction(t *testing.T) {
	s := New()
	var w tree
	data := AppendTx(nil, nil, []TxCommand{
		{Args: [][]byte{[]byte("RPUSH"), []byte("a"), []byte("1"), []byte("2")}},
		{Args: [][]byte{[]byte("LMPOP"), []byte("2"), []byte("b"), []byte("a"), []byte("LEFT")}},
		{Args: [][]byte{[]byte("LMOVE"), []byte("a"), []byte("b"), []byte("LEFT"), []byte("LEFT")}},
		{Args: [][]byte{[]byte("LRANGE"), []byte("b"), []byte("0"), []byte("-1")}},
	})
	if err := s.Apply(Entry{Index: 1, Term: 1, Time: 1, Data: data}, &w); err != nil {
		t.Fatal(err)
	}
	want := []any{int64(2), []any{"a", []any{"1"}}, "2", []any{"2"}}
	if len(w.out) != 1 || !reflect.DeepEqual(w.out[0], want) {
		t.Fatalf("got %#v", w.out)
	}
}

// listFill RPUSHes n elements "e0".."e(n-1)" in batches and returns the model.
func listFill(h *harness, key string, n int) []string {
	model := make([]string, 0, n)
	for i := 0; i < n; {
		args := []string{"RPUSH", key}
		for j := 0; j < 500 && i < n; j++ {
			e := "e" + strconv.Itoa(i)
			args = append(args, e)
			model = append(model, e)
			i++
		}
		h.expect(len(model), args...)
	}
	return model
}

func TestListBig(t *testing.T) {
	h := newHarness(t)
	const n = 10000
	model := listFill(h, "big", n)
	h.expect(n, "LLEN", "big")
	for _, w := range [][2]int{{0, 9}, {5000, 5100}, {9990, 9999}, {-10, -1}, {-10000, -9990}, {9995, 20000}} {
		lo, hi := rangeIndex(int64(w[0]), int64(w[1]), len(model))
		h.expect(model[lo:hi], "LRANGE", "big", strconv.Itoa(w[0]), strconv.Itoa(w[1]))
	}
	h.expect("e1234", "LINDEX", "big", "1234")
	h.expect("e8766", "LINDEX", "big", "-1234")

	// head pushes wrap the ring buffer around
	h.expect(n+3, "LPUSH", "big", "h1", "h2", "h3")
	model = append([]string{"h3", "h2", "h1"}, model...)
	h.expect(model[:5], "LRANGE", "big", "0", "4")
	h.expect(model[len(model)-2:], "LRANGE", "big", "-2", "-1")

	// inserts near both ends and in the middle
	for _, pivot := range []string{"e10", "e5000", "e9990"} {
		i := indexOf(model, pivot)
		h.expect(len(model)+1, "LINSERT", "big", "BEFORE", pivot, "ins-"+pivot)
		model = append(model[:i], append([]string{"ins-" + pivot}, model[i:]...)...)
	}
	h.expect(model, "LRANGE", "big", "0", "-1")

	// repeated elements, removed from the tail with a negative count
	dups := []string{"RPUSH", "big"}
	for i := 0; i < 50; i++ {
		dups = append(dups, "dup")
		model = append(model, "dup")
	}
	h.expect(len(model), dups...)
	for i := 0; i < 20; i++ {
		h.expect(Status("OK"), "LSET", "big", strconv.Itoa(i*400), "dup")
		model[i*400] = "dup"
	}
	h.expect(30, "LREM", "big", "-30", "dup")
	model = listModelRemove(model, "dup", 30, true)
	h.expect(model, "LRANGE", "big", "0", "-1")
	h.expect(5, "LREM", "big", "5", "dup")
	model = listModelRemove(model, "dup", 5, false)
	h.expect(model, "LRANGE", "big", "0", "-1")
	h.expect(35, "LREM", "big", "0", "dup")
	model = listModelRemove(model, "dup", 0, false)
	h.expect(model, "LRANGE", "big", "0", "-1")

	h.expect(Status("OK"), "LTRIM", "big", "100", "-101")
	model = model[100 : len(model)-100]
	h.expect(model, "LRANGE", "big", "0", "-1")
	h.expect(len(model), "LLEN", "big")
	h.expect([]any{indexOf(model, "e6000")}, "LPOS", "big", "e6000", "COUNT", "0")

	// pop most of it from both ends: the buffer shrinks and stays consistent
	for len(model) > 10 {
		h.expect(model[:7], "LPOP", "big", "7")
		model = model[7:]
		h.expect(model[len(model)-1], "RPOP", "big")
		model = model[:len(model)-1]
	}
	h.expect(model, "LRANGE", "big", "0", "-1")
	it := h.rawItem("big")
	if l := it.coll.(*listColl); len(l.buf) > 4*listMinShrink {
		t.Fatalf("buffer of %d slots for %d elements", len(l.buf), l.n)
	}
}

func indexOf(s []string, v string) int {
	for i, e := range s {
		if e == v {
			return i
		}
	}
	return -1
}

// listModelRemove is LREM on a plain slice.
func listModelRemove(m []string, v string, limit int, fromTail bool) []string {
	keep := make([]bool, len(m))
	removed := 0
	for k := 0; k < len(m); k++ {
		i := k
		if fromTail {
			i = len(m) - 1 - k
		}
		keep[i] = true
		if m[i] == v && (limit == 0 || removed < limit) {
			keep[i] = false
			removed++
		}
	}
	var out []string
	for i, e := range m {
		if keep[i] {
			out = append(out, e)
		}
	}
	return out
}

// listCheck verifies l against the model and the deque's invariants.
func listCheck(t *testing.T, l *listColl, model []string) {
	t.Helper()
	if l.n != len(model) {
		t.Fatalf("len %d, model %d", l.n, len(model))
	}
	bytes := 0
	for i, e := range model {
		if got := l.at(i); got != e {
			t.Fatalf("element %d: %q, model %q", i, got, e)
		}
		bytes += len(e)
	}
	if l.bytes != bytes {
		t.Fatalf("bytes %d, actual %d", l.bytes, bytes)
	}
	if l.n > len(l.buf) || (len(l.buf) > 0 && (l.head < 0 || l.head >= len(l.buf))) {
		t.Fatalf("n %d head %d cap %d", l.n, l.head, len(l.buf))
	}
	if len(l.buf) > listMinShrink && l.n < len(l.buf)/4 {
		t.Fatalf("buffer of %d slots for %d elements", len(l.buf), l.n)
	}
	for i := l.n; i < len(l.buf); i++ { // unused slots hold nothing alive
		if l.buf[(l.head+i)%len(l.buf)] != "" {
			t.Fatalf("unused slot %d holds %q", i, l.buf[(l.head+i)%len(l.buf)])
		}
	}
}

// TestListDequeModel drives the deque directly with random operations against a slice.
func TestListDequeModel(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	vals := []string{"a", "b", "c", "", "long-value-long-value"}
	for round := 0; round < 20; round++ {
		l := &listColl{}
		var m []string
		for op := 0; op < 3000; op++ {
			v := vals[r.Intn(len(vals))]
			bias := round % 3 // some rounds grow, some shrink
			switch k := r.Intn(12); {
			case k < 3+bias:
				l.pushFront(v)
				m = append([]string{v}, m...)
			case k < 6+bias:
				l.pushBack(v)
				m = append(m, v)
			case k < 7 && len(m) > 0:
				if got := l.popFront(); got != m[0] {
					t.Fatalf("popFront %q, model %q", got, m[0])
				}
				m = m[1:]
			case k < 8 && len(m) > 0:
				if got := l.popBack(); got != m[len(m)-1] {
					t.Fatalf("popBack %q, model %q", got, m[len(m)-1])
				}
				m = m[:len(m)-1]
			case k < 9:
				i := r.Intn(len(m) + 1)
				l.insert(i, v)
				m = append(m[:i], append([]string{v}, m[i:]...)...)
			case k < 10:
				limit := r.Intn(4)
				fromTail := r.Intn(2) == 0
				want := listModelRemove(m, v, limit, fromTail)
				if got := l.remove(v, uint64(limit), fromTail); got != len(m)-len(want) {
					t.Fatalf("remove %q %d %v: %d, model %d", v, limit, fromTail, got, len(m)-len(want))
				}
				m = want
			case k < 11 && len(m) > 0:
				lo, hi := rangeIndex(int64(r.Intn(len(m)+2)-1), int64(len(m)-r.Intn(len(m)+2)), len(m))
				l.trim(lo, hi)
				m = append([]string(nil), m[lo:hi]...)
			default:
				if len(m) > 0 {
					i := r.Intn(len(m))
					l.bytes += len(v) - len(l.at(i))
					l.set(i, v)
					m[i] = v
				}
			}
			listCheck(t, l, m)
		}
		c := l.clone().(*listColl)
		listCheck(t, c, m)
		dec, err := decodeList(l.appendTo(nil))
		if len(m) == 0 {
			if err != ErrCorrupt {
				t.Fatalf("decoding an empty list: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		listCheck(t, dec.(*listColl), m)
	}
}

func TestListCloneIndependent(t *testing.T) {
	h := newHarness(t)
	model := listFill(h, "src", 100)
	h.expect(1, "COPY", "src", "dst")
	h.expect(101, "LPUSH", "dst", "new")
	h.expect(Status("OK"), "LSET", "dst", "50", "changed")
	h.expect(listOf("new", "e0"), "LPOP", "dst", "2")
	h.expect(1, "LREM", "dst", "0", "changed")
	h.expect(model, "LRANGE", "src", "0", "-1")
	h.expect(Status("OK"), "LTRIM", "src", "0", "9")
	h.expect(98, "LLEN", "dst")

	// the collection itself: a clone shares nothing mutable with its original
	l := &listColl{}
	for i := 0; i < 40; i++ {
		l.pushFront(strconv.Itoa(i)) // wraps around the buffer
	}
	c := l.clone().(*listColl)
	want := make([]string, 40)
	for i := range want {
		want[i] = strconv.Itoa(39 - i)
	}
	l.set(0, "x")
	l.popBack()
	l.insert(3, "y")
	listCheck(t, c, want)
	c.pushBack("z")
	if l.n != 40 || l.at(l.n-1) != "1" {
		t.Fatalf("original changed by its clone: n %d tail %q", l.n, l.at(l.n-1))
	}
}

func TestListEncoding(t *testing.T) {
	h := newHarness(t)
	h.expect(4, "RPUSH", "l", "a", "", "\x00\xff binary", strings.Repeat("x", 300))
	h.expect(5, "LPUSH", "l", "head")
	it := h.rawItem("l")
	enc := it.coll.appendTo([]byte("prefix"))
	if !bytes.HasPrefix(enc, []byte("prefix")) {
		t.Fatal("appendTo overwrote dst")
	}
	enc = enc[len("prefix"):]
	dec, err := collectionDecoders[TypeList](enc)
	if err != nil {
		t.Fatal(err)
	}
	listCheck(t, dec.(*listColl), []string{"head", "a", "", "\x00\xff binary", strings.Repeat("x", 300)})
	if again := dec.appendTo(nil); !bytes.Equal(again, enc) {
		t.Fatalf("re-encoding differs:\n%q\n%q", again, enc)
	}
	if dec.memUsage() < 300 || it.coll.memUsage() < 300 {
		t.Fatalf("memUsage %d %d", dec.memUsage(), it.coll.memUsage())
	}
	// the exact format: count, then length-prefixed elements
	want := binary.AppendUvarint(nil, 2)
	want = append(binary.AppendUvarint(want, 1), 'a')
	want = append(binary.AppendUvarint(want, 2), "bc"...)
	l := &listColl{}
	l.pushBack("bc")
	l.pushFront("a")
	if got := l.appendTo(nil); !bytes.Equal(got, want) {
		t.Fatalf("appendTo %q, want %q", got, want)
	}

	for _, bad := range [][]byte{
		nil,
		{},
		{0},              // an empty list never exists
		{1},              // an element missing
		{1, 2, 'a'},      // an element cut short
		{1, 1, 'a', 'b'}, // trailing bytes
		{2, 1, 'a'},      // fewer elements than announced
		{0x80},           // a truncated count
		{1, 0x80},        // a truncated length
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, // a count of 2^64-1
		{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 'a'},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, // varint overflow
	} {
		if c, err := decodeList(bad); err != ErrCorrupt || c != nil {
			t.Errorf("decodeList(%q) = %v, %v", bad, c, err)
		}
	}
	// a count must be backed by input: a huge one in a small input allocates nothing big
	huge := binary.AppendUvarint(nil, 1<<40)
	huge = append(huge, make([]byte, 100)...)
	allocs := testing.AllocsPerRun(10, func() { decodeList(huge) })
	if allocs > 1 {
		t.Fatalf("%v allocations for a corrupt count", allocs)
	}
}

func FuzzDecodeList(f *testing.F) {
	l := &listColl{}
	for _, e := range []string{"a", "", "hello", strings.Repeat("z", 200)} {
		l.pushBack(e)
	}
	f.Add(l.appendTo(nil))
	f.Add([]byte{1, 0})
	f.Add([]byte{0})
	f.Add([]byte{3, 1, 'a', 1, 'b'})
	f.Add([]byte{0x80, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeList(b)
		if err != nil {
			if err != ErrCorrupt || c != nil {
				t.Fatalf("decodeList: %v, %v", c, err)
			}
			return
		}
		l := c.(*listColl)
		if l.n == 0 || l.n > len(b) {
			t.Fatalf("decoded %d elements from %d bytes", l.n, len(b))
		}
		model := make([]string, l.n)
		for i := range model {
			model[i] = l.at(i)
		}
		listCheck(t, l, model)
		// decode(encode(x)) == x; the encoding may differ from b only in varint padding
		again, err := decodeList(c.appendTo(nil))
		if err != nil {
			t.Fatal(err)
		}
		listCheck(t, again.(*listColl), model)
		if c.memUsage() <= 0 {
			t.Fatal("memUsage")
		}
	})
}

func BenchmarkLPushRPop(b *testing.B) {
	b.Run("deque", func(b *testing.B) {
		l := &listColl{}
		for i := 0; i < 1000; i++ {
			l.pushFront("seed")
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			l.pushFront("element")
			l.popBack()
		}
	})
	b.Run("apply", func(b *testing.B) {
		s := New()
		push := AppendCommand(nil, 0, [][]byte{[]byte("LPUSH"), []byte("queue"), []byte("element")})
		pop := AppendCommand(nil, 0, [][]byte{[]byte("RPOP"), []byte("queue")})
		idx := uint64(0)
		apply := func(data []byte) {
			idx++
			if err := s.Apply(Entry{Index: idx, Term: 1, Time: 1, Data: data}, Discard); err != nil {
				b.Fatal(err)
			}
		}
		for i := 0; i < 1000; i++ {
			apply(push)
		}
		b.ReportAllocs()
		for b.Loop() {
			apply(push)
			apply(pop)
		}
	})
}
