package kvstore

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Expected replies below were checked against redis-server 7.0.15.

var zinf = math.Inf(1)

// zpairs3 is a RESP3 WITHSCORES reply: [[member, score], ...] from member, score, ...
func zpairs3(flat ...any) []any {
	out := []any{}
	for i := 0; i < len(flat); i += 2 {
		out = append(out, []any{flat[i], zscoreOf(flat[i+1])})
	}
	return out
}

// zflat is a RESP2 WITHSCORES reply: member, score, ... with scores as the tree writer
// records doubles (float64).
func zflat(flat ...any) []any {
	out := []any{}
	for i := 0; i < len(flat); i += 2 {
		out = append(out, flat[i], zscoreOf(flat[i+1]))
	}
	return out
}

func zscoreOf(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	panic(fmt.Sprintf("not a score: %#v", v))
}

func TestZAddOptions(t *testing.T) {
	h := newHarness(t)
	h.expect(3, "ZADD", "z", "1", "a", "2", "b", "3", "c")
	h.expect(0, "ZADD", "z", "1", "a")
	h.expect(1, "ZADD", "z", "CH", "5", "a", "2", "b")
	h.expect(5.0, "ZSCORE", "z", "a")
	// NX: only new members
	h.expect(1, "ZADD", "z", "NX", "9", "a", "4", "d")
	h.expect(5.0, "ZSCORE", "z", "a")
	// XX: only existing members
	h.expect(0, "ZADD", "z", "XX", "7", "a", "4", "e")
	h.expect(7.0, "ZSCORE", "z", "a")
	h.expect(nil, "ZSCORE", "z", "e")
	// GT / LT update only in one direction but always add
	h.expect(2, "ZADD", "z", "GT", "CH", "1", "a", "8", "b", "1", "f")
	h.expect([]any{7.0, 8.0, 1.0}, "ZMSCORE", "z", "a", "b", "f")
	h.expect(1, "ZADD", "z", "LT", "CH", "9", "a", "6", "b")
	h.expect(6.0, "ZSCORE", "z", "b")
	h.expect(0, "ZADD", "z", "XX", "GT", "1", "newm")
	h.expect(nil, "ZSCORE", "z", "newm")
	// INCR
	h.expect(8.0, "ZADD", "z", "INCR", "1", "a")
	h.expect(nil, "ZADD", "z", "NX", "INCR", "1", "a")
	h.expect(nil, "ZADD", "z", "LT", "INCR", "1", "a")
	h.expect(9.0, "ZADD", "z", "GT", "INCR", "1", "a")
	h.expect(9.0, "ZADD", "z", "INCR", "0", "a") // processed, unchanged
	h.expect(2.5, "ZADD", "z", "INCR", "2.5", "brandnew")
	h.expect(nil, "ZADD", "missing", "XX", "INCR", "1", "a")
	h.expect(0, "ZADD", "missing", "XX", "1", "a")
	h.expect(0, "EXISTS", "missing")
	// ZINCRBY
	h.expect(10.0, "ZINCRBY", "z", "1", "a")
	h.expect(-1.5, "ZINCRBY", "z", "-1.5", "fresh")
	h.expect(-1.5, "ZSCORE", "z", "fresh")
	// option keywords are case-insensitive, and numbers are strtod's (hex too)
	h.expect(1, "ZADD", "h", "nx", "0x10", "m")
	h.expect(16.0, "ZSCORE", "h", "m")
}

func TestZAddErrors(t *testing.T) {
	h := newHarness(t)
	h.expect(Status("OK"), "SET", "str", "v")
	h.expectErr("ERR XX and NX options at the same time are not compatible", "ZADD", "z", "NX", "XX", "1", "a")
	h.expectErr("ERR XX and NX options at the same time are not compatible", "ZADD", "str", "NX", "XX", "x", "a")
	h.expectErr("ERR GT, LT, and/or NX options at the same time are not compatible", "ZADD", "z", "GT", "LT", "1", "a")
	h.expectErr("ERR GT, LT, and/or NX options at the same time are not compatible", "ZADD", "z", "NX", "GT", "1", "a")
	h.expectErr("ERR GT, LT, and/or NX options at the same time are not compatible", "ZADD", "z", "NX", "LT", "1", "a")
	h.expectErr("ERR INCR option supports a single increment-element pair", "ZADD", "z", "INCR", "1", "a", "2", "b")
	h.expectErr("ERR syntax error", "ZADD", "z", "1", "a", "2")
	h.expectErr("ERR syntax error", "ZADD", "z", "CH", "1")
	h.expectErr("ERR syntax error", "ZADD", "z", "1", "a", "foo")
	h.expectErr("ERR wrong number of arguments for 'zadd' command", "ZADD", "z", "1")
	h.expectErr("ERR wrong number of arguments for 'zadd' command", "ZADD", "z", "NX")
	h.expectErr("ERR value is not a valid float", "ZADD", "z", "foo", "a")
	h.expectErr("ERR value is not a valid float", "ZADD", "z", "1", "a", "nan", "b")
	h.expectErr("ERR value is not a valid float", "ZADD", "z", " 1", "a")
	h.expectErr("ERR value is not a valid float", "ZADD", "z", "1e400", "a")
	h.expectErr("ERR value is not a valid float", "ZADD", "z", "1e-400", "a")
	h.expectErr("ERR value is not a valid float", "ZADD", "z", "", "a")
	// nothing was added by the failed commands
	h.expect(0, "EXISTS", "z")
	h.expectErr(ErrWrongType, "ZADD", "str", "1", "a")
	h.expectErr(ErrWrongType, "ZINCRBY", "str", "1", "a")
	h.expectErr("ERR value is not a valid float", "ZINCRBY", "z", "x", "a")
	h.expectErr("ERR syntax error", "ZINCRBY", "z", "nx", "a")
	// inf + -inf
	h.expect(1, "ZADD", "z", "inf", "a")
	h.expectErr(ErrNaN, "ZINCRBY", "z", "-inf", "a")
	h.expectErr(ErrNaN, "ZADD", "z", "INCR", "-inf", "a")
	h.expect(zinf, "ZSCORE", "z", "a")
}

func TestZAddInfAndNegativeZero(t *testing.T) {
	h := newHarness(t)
	h.expect(4, "ZADD", "z", "+inf", "top", "-inf", "bottom", "-0", "nz", "0", "a")
	h.expect(zflat("bottom", math.Inf(-1), "a", 0, "nz", 0, "top", zinf), "ZRANGE", "z", "0", "-1", "WITHSCORES")
	// the stored -0 is 0 (Redis's listpack), but a computed reply keeps the sign
	if s := h.do("ZSCORE", "z", "nz").(float64); math.Signbit(s) {
		t.Fatalf("stored -0 kept its sign")
	}
	if s := h.do("ZADD", "z", "INCR", "-0", "fresh").(float64); !math.Signbit(s) {
		t.Fatalf("ZADD INCR -0 on a new member should reply -0, got %v", s)
	}
	if s := h.do("ZSCORE", "z", "fresh").(float64); math.Signbit(s) {
		t.Fatalf("stored -0 kept its sign")
	}
	h.expect(1, "ZCOUNT", "z", "inf", "+inf")
	h.expect(5, "ZCOUNT", "z", "-inf", "inf")
}

func TestZRemAndReads(t *testing.T) {
	h := newHarness(t)
	h.expect(Status("OK"), "SET", "str", "v")
	h.expect(3, "ZADD", "z", "1", "a", "2", "b", "3", "c")
	h.expect(3, "ZCARD", "z")
	h.expect(0, "ZCARD", "missing")
	h.expect(1, "ZREM", "z", "a", "x", "a")
	h.expect(0, "ZREM", "missing", "a")
	h.expect(2, "ZREM", "z", "b", "c", "d")
	h.expect(0, "EXISTS", "z")
	for _, cmd := range [][]string{
		{"ZREM", "str", "a"}, {"ZCARD", "str"}, {"ZSCORE", "str", "a"}, {"ZMSCORE", "str", "a"},
		{"ZRANK", "str", "a"}, {"ZREVRANK", "str", "a"}, {"ZCOUNT", "str", "0", "1"}, {"ZLEXCOUNT", "str", "-", "+"},
		{"ZRANGE", "str", "0", "-1"}, {"ZRANGEBYSCORE", "str", "0", "1"}, {"ZRANGEBYLEX", "str", "-", "+"},
		{"ZREVRANGE", "str", "0", "-1"}, {"ZRANGESTORE", "d", "str", "0", "-1"}, {"ZREMRANGEBYRANK", "str", "0", "-1"},
		{"ZREMRANGEBYSCORE", "str", "0", "1"}, {"ZREMRANGEBYLEX", "str", "-", "+"}, {"ZPOPMIN", "str"},
		{"ZPOPMAX", "str", "0"}, {"ZRANDMEMBER", "str"}, {"ZRANDMEMBER", "str", "0"}, {"ZSCAN", "str", "0", "foo"},
		{"ZUNION", "2", "missing", "str"}, {"ZINTERSTORE", "d", "1", "str"}, {"ZINTERCARD", "1", "str"},
		{"ZMPOP", "2", "missing", "str", "MIN"},
	} {
		h.expectErr(ErrWrongType, cmd...)
	}
	h.expect(nil, "ZSCORE", "missing", "a")
	h.expect([]any{nil, nil}, "ZMSCORE", "missing", "a", "b")
	h.expect(2, "ZADD", "z", "1.5", "a", "inf", "b")
	h.expect([]any{1.5, nil, zinf}, "ZMSCORE", "z", "a", "x", "b")
	h.resp3 = true
	h.expect([]any{1.5, nil}, "ZMSCORE", "z", "a", "x")
	h.expect(1.5, "ZSCORE", "z", "a")
}

func TestZRank(t *testing.T) {
	h := newHarness(t)
	h.expect(5, "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
	h.expect(0, "ZRANK", "z", "a")
	h.expect(4, "ZRANK", "z", "e")
	h.expect(0, "ZREVRANK", "z", "e")
	h.expect(3, "ZREVRANK", "z", "b")
	h.expect(nil, "ZRANK", "z", "nope")
	h.expect(nil, "ZRANK", "missing", "a")
	h.expect(nil, "ZREVRANK", "missing", "a")
	// equal scores order by member bytes
	h.expect(3, "ZADD", "y", "0", "b", "0", "a", "0", "ab")
	h.expect([]any{"a", "ab", "b"}, "ZRANGE", "y", "0", "-1")
	h.expect(1, "ZRANK", "y", "ab")
}

func TestZCountAndLexCount(t *testing.T) {
	h := newHarness(t)
	h.expect(5, "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
	h.expect(5, "ZCOUNT", "z", "-inf", "+inf")
	h.expect(3, "ZCOUNT", "z", "(1", "4")
	h.expect(2, "ZCOUNT", "z", "(1", "(4")
	h.expect(0, "ZCOUNT", "z", "(1", "(1")
	h.expect(1, "ZCOUNT", "z", "1", "1")
	h.expect(0, "ZCOUNT", "z", "3", "1")
	h.expect(0, "ZCOUNT", "missing", "0", "1")
	// strtod: "" is 0, "(" is exclusive 0, leading blanks, hex, overflow to inf
	h.expect(5, "ZCOUNT", "z", "", "+inf")
	h.expect(5, "ZCOUNT", "z", "(", "+inf")
	h.expect(5, "ZCOUNT", "z", " 1", "+inf")
	h.expect(0, "ZCOUNT", "z", "0x10", "+inf")
	h.expect(0, "ZCOUNT", "z", "1e400", "+inf")
	h.expect(5, "ZCOUNT", "z", "1e-400", "+inf")
	h.expect(5, "ZCOUNT", "z", "-infinity", "INF")
	for _, bad := range []string{"nan", "1 ", "((1", "-", "1_0", "x", "1e"} {
		h.expectErr(ErrMinMaxFloat, "ZCOUNT", "z", bad, "+inf")
		h.expectErr(ErrMinMaxFloat, "ZCOUNT", "z", "0", bad)
	}
	h.expectErr(ErrMinMaxFloat, "ZCOUNT", "missing", "x", "1")

	h.expect(6, "ZADD", "l", "0", "a", "0", "b", "0", "c", "0", "d", "0", "e", "0", "aa")
	h.expect(6, "ZLEXCOUNT", "l", "-", "+")
	h.expect(4, "ZLEXCOUNT", "l", "(a", "[d")
	h.expect(0, "ZLEXCOUNT", "l", "[d", "(a")
	h.expect(0, "ZLEXCOUNT", "l", "+", "-")
	h.expect(0, "ZLEXCOUNT", "l", "+", "+")
	h.expect(0, "ZLEXCOUNT", "l", "-", "-")
	h.expect(6, "ZLEXCOUNT", "l", "[", "+")
	h.expect(6, "ZLEXCOUNT", "l", "(", "+")
	h.expect(2, "ZLEXCOUNT", "l", "[aa", "(c")
	h.expect(0, "ZLEXCOUNT", "missing", "-", "+")
	for _, bad := range []string{"a", "", "+a", "-a", "x"} {
		h.expectErr(ErrMinMaxLex, "ZLEXCOUNT", "l", bad, "+")
		h.expectErr(ErrMinMaxLex, "ZLEXCOUNT", "l", "-", bad)
	}
}

func TestZRangeByRank(t *testing.T) {
	h := newHarness(t)
	h.expect(5, "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
	h.expect([]any{"a", "b", "c", "d", "e"}, "ZRANGE", "z", "0", "-1")
	h.expect([]any{"b", "c"}, "ZRANGE", "z", "1", "2")
	h.expect([]any{"d", "e"}, "ZRANGE", "z", "-2", "100")
	h.expect([]any{}, "ZRANGE", "z", "3", "1")
	h.expect([]any{}, "ZRANGE", "z", "5", "10")
	h.expect([]any{"a"}, "ZRANGE", "z", "-100", "0")
	h.expect([]any{"e", "d"}, "ZRANGE", "z", "0", "1", "REV")
	h.expect([]any{"e", "d"}, "ZREVRANGE", "z", "0", "1")
	h.expect(zflat("e", 5, "d", 4), "ZREVRANGE", "z", "0", "1", "WITHSCORES")
	h.expect(zflat("a", 1, "b", 2), "ZRANGE", "z", "0", "1", "withscores", "WITHSCORES")
	h.expect([]any{}, "ZRANGE", "missing", "0", "-1")
	// LIMIT offset -1 is "no LIMIT" as far as the rank check is concerned
	h.expect([]any{"a", "b", "c", "d", "e"}, "ZRANGE", "z", "0", "-1", "LIMIT", "5", "-1")
	h.resp3 = true
	h.expect(zpairs3("a", 1, "b", 2), "ZRANGE", "z", "0", "1", "WITHSCORES")
	h.expect(zpairs3("e", 5), "ZREVRANGE", "z", "0", "0", "WITHSCORES")
	h.expect([]any{"a"}, "ZRANGE", "z", "0", "0")
}

func TestZRangeErrors(t *testing.T) {
	h := newHarness(t)
	h.expect(2, "ZADD", "z", "1", "a", "2", "b")
	cases := []struct {
		err  string
		args []string
	}{
		{"ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX", []string{"ZRANGE", "z", "0", "-1", "LIMIT", "0", "1"}},
		{"ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX", []string{"ZRANGE", "z", "0", "x", "LIMIT", "0", "1"}},
		{"ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX", []string{"ZREVRANGE", "z", "0", "1", "LIMIT", "0", "1"}},
		{"ERR syntax error, WITHSCORES not supported in combination with BYLEX", []string{"ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES"}},
		{"ERR syntax error, WITHSCORES not supported in combination with BYLEX", []string{"ZRANGEBYLEX", "z", "-", "+", "WITHSCORES"}},
		{"ERR syntax error", []string{"ZRANGE", "z", "0", "-1", "BYSCORE", "BYLEX"}},
		{"ERR syntax error", []string{"ZRANGE", "z", "0", "-1", "REV", "REV"}},
		{"ERR syntax error", []string{"ZRANGE", "z", "0", "-1", "LIMIT", "0"}},
		{"ERR syntax error", []string{"ZRANGE", "z", "0", "-1", "foo"}},
		{"ERR syntax error", []string{"ZRANGEBYSCORE", "z", "1", "5", "REV"}},
		{"ERR syntax error", []string{"ZRANGEBYSCORE", "z", "1", "5", "BYSCORE"}},
		{"ERR syntax error", []string{"ZREVRANGE", "z", "0", "1", "BYSCORE"}},
		{"ERR syntax error", []string{"ZRANGESTORE", "d", "z", "0", "-1", "WITHSCORES"}},
		{ErrNotInteger, []string{"ZRANGE", "z", "0", "-1", "LIMIT", "x", "1"}},
		{ErrNotInteger, []string{"ZRANGE", "z", "1", "x"}},
		{ErrNotInteger, []string{"ZRANGE", "missing", "x", "y"}},
		{ErrMinMaxFloat, []string{"ZRANGE", "z", "1", "x", "BYSCORE"}},
		{ErrMinMaxLex, []string{"ZRANGE", "z", "1", "x", "BYLEX"}},
		{ErrMinMaxLex, []string{"ZRANGE", "z", "0", "-1", "LIMIT", "0", "1", "BYLEX"}},
		{ErrMinMaxLex, []string{"ZRANGEBYLEX", "z", "a", "c"}},
		{"ERR wrong number of arguments for 'zrange' command", []string{"ZRANGE", "z", "0"}},
		{"ERR wrong number of arguments for 'zrangestore' command", []string{"ZRANGESTORE", "d", "z", "0"}},
	}
	for _, tc := range cases {
		h.expectErr(tc.err, tc.args...)
	}
}

func TestZRangeByScore(t *testing.T) {
	h := newHarness(t)
	h.expect(5, "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
	h.expect([]any{"c", "d", "e"}, "ZRANGE", "z", "(1", "5", "BYSCORE", "LIMIT", "1", "-1")
	h.expect([]any{"c", "d", "e"}, "ZRANGE", "z", "(1", "5", "BYSCORE", "LIMIT", "1", "-7")
	h.expect([]any{}, "ZRANGE", "z", "(1", "5", "BYSCORE", "LIMIT", "-1", "2")
	h.expect([]any{}, "ZRANGE", "z", "1", "5", "BYSCORE", "LIMIT", "0", "0")
	h.expect([]any{}, "ZRANGE", "z", "1", "5", "BYSCORE", "LIMIT", "5", "10")
	h.expect([]any{"b"}, "ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "0", "1", "LIMIT", "1", "1")
	h.expect(zflat("d", 4, "c", 3), "ZRANGE", "z", "5", "1", "BYSCORE", "REV", "LIMIT", "1", "2", "WITHSCORES")
	h.expect([]any{"d", "c", "b"}, "ZRANGE", "z", "(5", "(1", "BYSCORE", "REV")
	h.expect(zflat("a", 1, "b", 2, "c", 3, "d", 4, "e", 5), "ZRANGEBYSCORE", "z", "1", "5", "LIMIT", "0", "-1", "WITHSCORES")
	h.expect([]any{}, "ZRANGEBYSCORE", "z", "1", "5", "WITHSCORES", "LIMIT", "10", "1")
	h.expect([]any{"b", "c"}, "ZRANGEBYSCORE", "z", "(1", "(4")
	h.expect([]any{}, "ZRANGEBYSCORE", "z", "4", "2")
	h.expect([]any{}, "ZRANGEBYSCORE", "z", "(2", "2")
	h.expect(zflat("d", 4), "ZREVRANGEBYSCORE", "z", "5", "1", "WITHSCORES", "LIMIT", "1", "1")
	h.expect([]any{"e", "d", "c"}, "ZREVRANGEBYSCORE", "z", "+inf", "(2")
	h.expect([]any{}, "ZREVRANGEBYSCORE", "z", "1", "5")
	h.expect([]any{}, "ZRANGEBYSCORE", "missing", "-inf", "+inf")
	h.expect([]any{"a", "b"}, "ZRANGEBYSCORE", "z", "-inf", "2", "LIMIT", "0", "9223372036854775807")
	h.expect([]any{}, "ZRANGEBYSCORE", "z", "-inf", "2", "LIMIT", "9223372036854775807", "1")
	h.resp3 = true
	h.expect(zpairs3("e", 5, "d", 4), "ZREVRANGEBYSCORE", "z", "+inf", "-inf", "WITHSCORES", "LIMIT", "0", "2")
}

func TestZRangeByLex(t *testing.T) {
	h := newHarness(t)
	h.expect(6, "ZADD", "z", "0", "a", "0", "b", "0", "c", "0", "d", "0", "e", "0", "aa")
	h.expect([]any{"a", "aa", "b", "c", "d", "e"}, "ZRANGEBYLEX", "z", "[", "+")
	h.expect([]any{"a", "aa", "b", "c", "d", "e"}, "ZRANGEBYLEX", "z", "(", "+")
	h.expect([]any{"aa", "b"}, "ZRANGEBYLEX", "z", "(a", "(c")
	h.expect([]any{"aa", "b", "c"}, "ZRANGEBYLEX", "z", "[aa", "[c")
	h.expect([]any{}, "ZRANGEBYLEX", "z", "-", "-")
	h.expect([]any{}, "ZRANGEBYLEX", "z", "+", "+")
	h.expect([]any{}, "ZRANGEBYLEX", "z", "+", "-")
	h.expect([]any{"b", "c"}, "ZRANGEBYLEX", "z", "-", "+", "LIMIT", "2", "2")
	h.expect([]any{"a", "aa", "b"}, "ZRANGE", "z", "[a", "[b", "BYLEX", "LIMIT", "0", "-5")
	h.expect([]any{"e", "d"}, "ZREVRANGEBYLEX", "z", "+", "-", "LIMIT", "0", "2")
	h.expect([]any{"b", "aa", "a"}, "ZREVRANGEBYLEX", "z", "(d", "-", "LIMIT", "1", "10")
	h.expect([]any{"d", "c"}, "ZRANGE", "z", "+", "-", "BYLEX", "REV", "LIMIT", "1", "2")
	h.expect([]any{}, "ZRANGEBYLEX", "missing", "-", "+")
	h.expectErr(ErrMinMaxLex, "ZRANGEBYLEX", "z", "+a", "+")
}

func TestZRangeStore(t *testing.T) {
	h := newHarness(t)
	h.expect(5, "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
	h.expect(2, "ZRANGESTORE", "d", "z", "0", "1")
	h.expect(zflat("a", 1, "b", 2), "ZRANGE", "d", "0", "-1", "WITHSCORES")
	h.expect(2, "ZRANGESTORE", "d", "z", "(3", "+inf", "BYSCORE")
	h.expect(zflat("d", 4, "e", 5), "ZRANGE", "d", "0", "-1", "WITHSCORES")
	h.expect(2, "ZRANGESTORE", "d", "z", "5", "1", "BYSCORE", "REV", "LIMIT", "1", "2")
	h.expect([]any{"c", "d"}, "ZRANGE", "d", "0", "-1")
	h.expect(1, "ZRANGESTORE", "d", "z", "-1", "-1", "REV")
	h.expect([]any{"a"}, "ZRANGE", "d", "0", "-1")
	// an empty result deletes the destination, whatever it held
	h.expect(0, "ZRANGESTORE", "d", "z", "100", "200")
	h.expect(0, "EXISTS", "d")
	h.expect(Status("OK"), "SET", "s", "x")
	h.expect(0, "ZRANGESTORE", "s", "missing", "0", "-1")
	h.expect(0, "EXISTS", "s")
	// the destination is overwritten whatever its type, and loses its TTL
	h.expect(Status("OK"), "SET", "s", "x")
	h.expect(1, "EXPIRE", "s", "100")
	h.expect(5, "ZRANGESTORE", "s", "z", "0", "-1")
	h.expect(Status("zset"), "TYPE", "s")
	h.expect(-1, "TTL", "s")
	// source and destination the same key
	h.expect(2, "ZRANGESTORE", "z", "z", "[a", "[b", "BYLEX")
	h.expect([]any{"a", "b"}, "ZRANGE", "z", "0", "-1")
}

func TestZRemRange(t *testing.T) {
	h := newHarness(t)
	h.expect(5, "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
	h.expect(2, "ZREMRANGEBYRANK", "z", "-2", "-1")
	h.expect(0, "ZREMRANGEBYRANK", "z", "5", "10")
	h.expect(0, "ZREMRANGEBYRANK", "z", "2", "1")
	h.expect([]any{"a", "b", "c"}, "ZRANGE", "z", "0", "-1")
	h.expect(1, "ZREMRANGEBYSCORE", "z", "(1", "2")
	h.expect(0, "ZREMRANGEBYSCORE", "z", "2", "1")
	h.expect([]any{"a", "c"}, "ZRANGE", "z", "0", "-1")
	h.expect(2, "ZREMRANGEBYSCORE", "z", "-inf", "+inf")
	h.expect(0, "EXISTS", "z")
	h.expect(0, "ZREMRANGEBYRANK", "missing", "0", "-1")
	h.expectErr(ErrNotInteger, "ZREMRANGEBYRANK", "z", "x", "1")
	h.expectErr(ErrMinMaxFloat, "ZREMRANGEBYSCORE", "z", "x", "1")
	h.expectErr(ErrMinMaxLex, "ZREMRANGEBYLEX", "z", "x", "-1")

	h.expect(6, "ZADD", "l", "0", "a", "0", "b", "0", "c", "0", "d", "0", "e", "0", "aa")
	h.expect(2, "ZREMRANGEBYLEX", "l", "[b", "[c")
	h.expect([]any{"a", "aa", "d", "e"}, "ZRANGE", "l", "0", "-1")
	h.expect(0, "ZREMRANGEBYLEX", "l", "(e", "+")
	h.expect(4, "ZREMRANGEBYLEX", "l", "-", "+")
	h.expect(0, "EXISTS", "l")
	h.expect(3, "ZADD", "r", "1", "a", "2", "b", "3", "c")
	h.expect(3, "ZREMRANGEBYRANK", "r", "0", "-1")
	h.expect(0, "EXISTS", "r")
}

func TestZPop(t *testing.T) {
	h := newHarness(t)
	h.expect(5, "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
	h.expect(zflat("a", 1), "ZPOPMIN", "z")
	h.expect(zflat("e", 5, "d", 4), "ZPOPMAX", "z", "2")
	h.expect([]any{}, "ZPOPMAX", "z", "0")
	h.expect([]any{}, "ZPOPMIN", "missing")
	h.expect([]any{}, "ZPOPMIN", "missing", "2")
	h.expectErr(ErrNotPositive, "ZPOPMIN", "z", "-1")
	h.expectErr(ErrNotPositive, "ZPOPMIN", "z", "x")
	h.expectErr(ErrNotPositive, "ZPOPMIN", "missing", "x")
	h.expectErr(ErrSyntax, "ZPOPMIN", "z", "1", "2")
	h.expect(Status("OK"), "SET", "str", "v")
	h.expectErr(ErrWrongType, "ZPOPMIN", "str", "0")
	h.expect(zflat("b", 2, "c", 3), "ZPOPMIN", "z", "100")
	h.expect(0, "EXISTS", "z")
	h.resp3 = true
	h.expect(5, "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
	h.expect([]any{"a", 1.0}, "ZPOPMIN", "z")
	h.expect(zpairs3("b", 2), "ZPOPMIN", "z", "1")
	h.expect(zpairs3("e", 5, "d", 4), "ZPOPMAX", "z", "2")
	h.expect([]any{}, "ZPOPMAX", "z", "0")
}

func TestZMPop(t *testing.T) {
	h := newHarness(t)
	h.expect(Status("OK"), "SET", "str", "v")
	h.expect(5, "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
	h.expect([]any{"z", zpairs3("a", 1)}, "ZMPOP", "1", "z", "MIN")
	h.expect([]any{"z", zpairs3("e", 5, "d", 4)}, "ZMPOP", "2", "missing", "z", "max", "COUNT", "2")
	h.expect(nil, "ZMPOP", "1", "missing", "MIN")
	h.expect([]any{"z", zpairs3("b", 2, "c", 3)}, "ZMPOP", "1", "z", "MIN", "COUNT", "10")
	h.expect(0, "EXISTS", "z")
	for _, tc := range []struct {
		err  string
		args []string
	}{
		{"ERR numkeys should be greater than 0", []string{"ZMPOP", "0", "z", "MIN"}},
		{"ERR numkeys should be greater than 0", []string{"ZMPOP", "x", "z", "MIN"}},
		{"ERR numkeys should be greater than 0", []string{"ZMPOP", "-1", "z", "MIN"}},
		{"ERR wrong number of arguments for 'zmpop' command", []string{"ZMPOP", "1", "z"}},
		{ErrSyntax, []string{"ZMPOP", "1", "z", "foo"}},
		{ErrSyntax, []string{"ZMPOP", "2", "z", "MIN"}},
		{ErrSyntax, []string{"ZMPOP", "9223372036854775807", "z", "MIN"}},
		{"ERR count should be greater than 0", []string{"ZMPOP", "1", "z", "MIN", "COUNT", "0"}},
		{"ERR count should be greater than 0", []string{"ZMPOP", "1", "z", "MIN", "COUNT", "-1"}},
		{"ERR count should be greater than 0", []string{"ZMPOP", "1", "z", "MIN", "COUNT", "x"}},
		{ErrSyntax, []string{"ZMPOP", "1", "z", "MIN", "COUNT", "1", "COUNT", "1"}},
		{ErrSyntax, []string{"ZMPOP", "1", "z", "MIN", "COUNT"}},
		{ErrSyntax, []string{"ZMPOP", "1", "z", "MIN", "foo"}},
		{ErrWrongType, []string{"ZMPOP", "2", "str", "z", "MIN"}},
	} {
		h.expectErr(tc.err, tc.args...)
	}
	h.resp3 = true
	h.expect(2, "ZADD", "z", "1", "a", "2", "b")
	h.expect([]any{"z", zpairs3("b", 2)}, "ZMPOP", "1", "z", "MAX")
	h.expect(nil, "ZMPOP", "1", "missing", "MAX")
}

func TestZRandMember(t *testing.T) {
	h := newHarness(t)
	h.expect(Status("OK"), "SET", "str", "v")
	h.expect(5, "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
	members := map[string]float64{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}
	if m, ok := h.do("ZRANDMEMBER", "z").(string); !ok || members[m] == 0 {
		t.Fatalf("ZRANDMEMBER gave %#v", m)
	}
	h.expect(nil, "ZRANDMEMBER", "missing")
	h.expect([]any{}, "ZRANDMEMBER", "missing", "2")
	h.expect([]any{}, "ZRANDMEMBER", "z", "0", "WITHSCORES")
	// the whole set, highest first, when count covers it
	h.expect(zflat("e", 5, "d", 4, "c", 3, "b", 2, "a", 1), "ZRANDMEMBER", "z", "10", "WITHSCORES")
	h.expect(zflat("e", 5, "d", 4, "c", 3, "b", 2, "a", 1), "ZRANDMEMBER", "z", "4611686018427387903", "WITHSCORES")
	for _, count := range []int{1, 2, 3, 4} {
		got := h.do("ZRANDMEMBER", "z", strconv.Itoa(count), "WITHSCORES").([]any)
		if len(got) != 2*count {
			t.Fatalf("count %d: %v", count, got)
		}
		seen := map[string]bool{}
		for i := 0; i < len(got); i += 2 {
			m := got[i].(string)
			if seen[m] || members[m] != got[i+1].(float64) {
				t.Fatalf("count %d: bad or repeated member in %v", count, got)
			}
			seen[m] = true
		}
	}
	got := h.do("ZRANDMEMBER", "z", "-20").([]any)
	if len(got) != 20 {
		t.Fatalf("negative count: %v", got)
	}
	for _, m := range got {
		if members[m.(string)] == 0 {
			t.Fatalf("negative count: %v", got)
		}
	}
	h.expectErr(ErrNotInteger, "ZRANDMEMBER", "z", "x")
	h.expectErr(ErrNotInteger, "ZRANDMEMBER", "missing", "x")
	h.expectErr(ErrSyntax, "ZRANDMEMBER", "z", "1", "foo")
	h.expectErr(ErrSyntax, "ZRANDMEMBER", "missing", "1", "foo")
	h.expectErr(ErrSyntax, "ZRANDMEMBER", "z", "1", "WITHSCORES", "x")
	h.expectErr("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807", "ZRANDMEMBER", "z", "-9223372036854775808")
	h.expectErr("ERR value is out of range", "ZRANDMEMBER", "z", "-4611686018427387904", "WITHSCORES")
	h.expectErr("ERR value is out of range", "ZRANDMEMBER", "z", "4611686018427387904", "WITHSCORES")
	h.expectErr("ERR value is out of range", "ZRANDMEMBER", "z", "-9223372036854775807")
	h.expectErr(ErrWrongType, "ZRANDMEMBER", "str", "1")
	h.resp3 = true
	if got := h.do("ZRANDMEMBER", "z", "-3", "WITHSCORES").([]any); len(got) != 3 || len(got[0].([]any)) != 2 {
		t.Fatalf("RESP3 pairs expected, got %#v", got)
	}
	if got := h.do("ZRANDMEMBER", "z", "1").([]any); len(got) != 1 {
		t.Fatalf("count 1 is an array: %#v", got)
	}
}

// zapplyTx runs commands as one MULTI/EXEC entry (on the applier, with the entry's random
// stream) and returns EXEC's reply.
func (h *harness) zapplyTx(cmds ...[]string) any {
	h.t.Helper()
	var tx []TxCommand
	for _, c := range cmds {
		args := make([][]byte, len(c))
		for i, a := range c {
			args[i] = []byte(a)
		}
		tx = append(tx, TxCommand{DB: h.db, Args: args})
	}
	h.index++
	w := tree{resp3: h.resp3}
	if err := h.s.Apply(Entry{Index: h.index, Term: 1, Time: h.now, Data: AppendTx(nil, nil, tx)}, &w); err != nil {
		h.t.Fatal(err)
	}
	if len(w.out) != 1 {
		h.t.Fatalf("EXEC: %#v", w.out)
	}
	return w.out[0]
}

func TestZRandMemberDeterministic(t *testing.T) {
	var results [2][]any
	for run := range results {
		h := newHarness(t)
		// different insertion orders, same set: choices must not depend on history or maps
		args := []string{"ZADD", "z"}
		for i := 0; i < 300; i++ {
			j := i
			if run == 1 {
				j = 299 - i
			}
			args = append(args, strconv.Itoa(j%17), "m"+strconv.Itoa(j))
		}
		h.do(args...)
		for i := 0; i < 5; i++ {
			results[run] = append(results[run], h.zapplyTx(
				[]string{"ZRANDMEMBER", "z"},
				[]string{"ZRANDMEMBER", "z", "5", "WITHSCORES"},
				[]string{"ZRANDMEMBER", "z", "150"},
				[]string{"ZRANDMEMBER", "z", "-7"},
			))
		}
	}
	if !reflect.DeepEqual(results[0], results[1]) {
		t.Fatalf("ZRANDMEMBER differs between stores:\n%v\n%v", results[0], results[1])
	}
	if reflect.DeepEqual(results[0][0], results[0][1]) {
		t.Fatalf("ZRANDMEMBER gave the same choices in different entries: %v", results[0][0])
	}
	// distinct members for a positive count, in both large-count strategies: reply 1 is
	// flat member, score pairs, reply 2 members only
	for _, r := range results[0] {
		for _, k := range []struct{ reply, step, n int }{{1, 2, 5}, {2, 1, 150}} {
			got := r.([]any)[k.reply].([]any)
			seen := map[any]bool{}
			for i := 0; i < len(got); i += k.step {
				if seen[got[i]] {
					t.Fatalf("repeated member %v", got[i])
				}
				seen[got[i]] = true
			}
			if len(seen) != k.n {
				t.Fatalf("want %d members, got %v", k.n, got)
			}
		}
	}
}

func TestZSetOps(t *testing.T) {
	h := newHarness(t)
	h.expect(3, "ZADD", "z1", "1", "a", "2", "b", "3", "c")
	h.expect(3, "ZADD", "z2", "10", "b", "20", "c", "30", "d")
	h.expect(Status("OK"), "SET", "str", "v")
	h.expect(zflat("a", 1, "b", 12, "c", 23, "d", 30), "ZUNION", "2", "z1", "z2", "WITHSCORES")
	h.expect([]any{"a", "b", "c", "d"}, "ZUNION", "2", "z1", "z2")
	h.expect(zflat("a", 1, "b", 10, "c", 20, "d", 30), "ZUNION", "2", "z1", "z2", "WITHSCORES", "AGGREGATE", "MAX")
	h.expect(zflat("a", 1, "b", 2, "c", 3, "d", 30), "ZUNION", "2", "z1", "z2", "AGGREGATE", "min", "WITHSCORES")
	h.expect(zflat("a", 2, "b", 34, "c", 66, "d", 90), "ZUNION", "2", "z1", "z2", "WEIGHTS", "2", "3", "WITHSCORES")
	h.expect(zflat("b", 12, "c", 23), "ZINTER", "2", "z1", "z2", "WITHSCORES")
	h.expect(zflat("b", 2, "c", 3), "ZINTER", "2", "z1", "z2", "WITHSCORES", "AGGREGATE", "MIN")
	h.expect(zflat("a", 2, "b", 4, "c", 6), "ZINTER", "2", "z1", "z1", "WITHSCORES")
	h.expect(zflat("a", 1), "ZDIFF", "2", "z1", "z2", "WITHSCORES")
	h.expect([]any{"a", "b", "c"}, "ZDIFF", "2", "z1", "missing")
	h.expect([]any{}, "ZDIFF", "2", "z1", "z1")
	h.expect([]any{}, "ZDIFF", "1", "missing")
	h.expect([]any{}, "ZINTER", "2", "z1", "missing")
	// inf * 0 is 0; inf + -inf is 0
	h.expect(zflat("a", zinf, "b", zinf, "c", zinf), "ZUNION", "2", "z1", "z1", "WEIGHTS", "0", "inf", "WITHSCORES")
	h.expect(zflat("a", 0, "b", 0, "c", 0), "ZUNION", "2", "z1", "z1", "WEIGHTS", "inf", "-inf", "WITHSCORES")
	h.expect(zflat("a", zinf, "b", zinf, "c", zinf), "ZINTER", "2", "z1", "z1", "WEIGHTS", "0", "inf", "WITHSCORES")
	h.expect(zflat("a", 0, "b", 0, "c", 0), "ZINTER", "2", "z1", "z1", "WEIGHTS", "inf", "-inf", "WITHSCORES")
	// in ZINTER a later input's NaN (0 * inf) is folded in as is: SUM makes it 0, MIN and
	// MAX ignore it; ZUNION turns it into 0 first
	h.expect(1, "ZADD", "zj", "5", "a")
	h.expect(1, "ZADD", "zk", "0", "a")
	h.expect(zflat("a", 5), "ZINTER", "2", "zj", "zk", "WEIGHTS", "1", "inf", "AGGREGATE", "MAX", "WITHSCORES")
	h.expect(zflat("a", 5), "ZINTER", "2", "zj", "zk", "WEIGHTS", "1", "inf", "AGGREGATE", "MIN", "WITHSCORES")
	h.expect(zflat("a", 0), "ZINTER", "2", "zj", "zk", "WEIGHTS", "1", "inf", "WITHSCORES")
	h.expect(zflat("a", 0), "ZUNION", "2", "zj", "zk", "WEIGHTS", "1", "inf", "AGGREGATE", "MIN", "WITHSCORES")
	h.expect(zflat("a", 5), "ZUNION", "2", "zj", "zk", "WEIGHTS", "1", "inf", "AGGREGATE", "MAX", "WITHSCORES")
	// computed replies keep -0, stored ones do not
	if got := h.do("ZUNION", "1", "z1", "WEIGHTS", "-0", "WITHSCORES").([]any); !math.Signbit(got[1].(float64)) {
		t.Fatalf("ZUNION -0 lost its sign: %v", got)
	}
	h.resp3 = true
	h.expect(zpairs3("b", 12, "c", 23), "ZINTER", "2", "z1", "z2", "WITHSCORES")
	h.resp3 = false

	// stores
	h.expect(4, "ZUNIONSTORE", "d", "2", "z1", "z2")
	h.expect(zflat("a", 1, "b", 12, "c", 23, "d", 30), "ZRANGE", "d", "0", "-1", "WITHSCORES")
	h.expect(2, "ZINTERSTORE", "d", "2", "z1", "z2", "AGGREGATE", "MIN")
	h.expect(zflat("b", 2, "c", 3), "ZRANGE", "d", "0", "-1", "WITHSCORES")
	h.expect(1, "ZDIFFSTORE", "d", "2", "z1", "z2")
	h.expect(zflat("a", 1), "ZRANGE", "d", "0", "-1", "WITHSCORES")
	h.expect(0, "ZINTERSTORE", "d", "2", "z1", "missing")
	h.expect(0, "EXISTS", "d")
	h.expect(3, "ZUNIONSTORE", "d", "1", "z1", "WEIGHTS", "-0", "AGGREGATE", "SUM")
	if s := h.do("ZSCORE", "d", "a").(float64); math.Signbit(s) {
		t.Fatal("stored -0")
	}
	// a source may be the destination
	h.expect(4, "ZUNIONSTORE", "z1", "2", "z1", "z2")
	h.expect(zflat("a", 1, "b", 12, "c", 23, "d", 30), "ZRANGE", "z1", "0", "-1", "WITHSCORES")

	// ZINTERCARD
	h.expect(3, "ZINTERCARD", "2", "z1", "z2")
	h.expect(1, "ZINTERCARD", "2", "z1", "z2", "LIMIT", "1")
	h.expect(3, "ZINTERCARD", "2", "z1", "z2", "LIMIT", "0")
	h.expect(0, "ZINTERCARD", "2", "z1", "missing")

	for _, tc := range []struct {
		err  string
		args []string
	}{
		{"ERR at least 1 input key is needed for 'zunion' command", []string{"ZUNION", "0", "z1"}},
		{"ERR at least 1 input key is needed for 'zunion' command", []string{"ZUNION", "-1", "z1"}},
		{"ERR at least 1 input key is needed for 'zunionstore' command", []string{"ZUNIONSTORE", "d", "0", "z1"}},
		{"ERR at least 1 input key is needed for 'zinterstore' command", []string{"ZINTERSTORE", "d", "0", "z1"}},
		{"ERR at least 1 input key is needed for 'zdiff' command", []string{"ZDIFF", "0", "z1"}},
		{"ERR at least 1 input key is needed for 'zintercard' command", []string{"ZINTERCARD", "0", "z1"}},
		{ErrNotInteger, []string{"ZUNION", "x", "z1"}},
		{ErrNotInteger, []string{"ZUNIONSTORE", "d", "x", "z1"}},
		{ErrNotInteger, []string{"ZINTERCARD", "x", "z1"}},
		{ErrSyntax, []string{"ZUNION", "3", "z1", "z2"}},
		{ErrSyntax, []string{"ZINTERCARD", "3", "z1", "z2"}},
		{ErrSyntax, []string{"ZUNION", "2", "z1", "z2", "WEIGHTS", "1"}},
		{"ERR weight value is not a float", []string{"ZUNION", "2", "z1", "z2", "WEIGHTS", "1", "x"}},
		{"ERR weight value is not a float", []string{"ZUNION", "2", "z1", "z1", "WEIGHTS", "nan", "1"}},
		{"ERR weight value is not a float", []string{"ZUNION", "2", "z1", "z1", "WEIGHTS", "1e400", "1"}},
		{ErrSyntax, []string{"ZUNION", "2", "z1", "z2", "WEIGHTS", "1", "2", "3"}},
		{ErrSyntax, []string{"ZUNION", "2", "z1", "z2", "AGGREGATE", "foo"}},
		{ErrSyntax, []string{"ZUNION", "2", "z1", "z2", "AGGREGATE"}},
		{ErrSyntax, []string{"ZUNIONSTORE", "d", "2", "z1", "z2", "WITHSCORES"}},
		{ErrSyntax, []string{"ZDIFFSTORE", "d", "2", "z1", "z2", "WEIGHTS", "1", "2"}},
		{ErrSyntax, []string{"ZDIFF", "2", "z1", "z2", "WEIGHTS", "1", "2"}},
		{ErrSyntax, []string{"ZDIFF", "2", "z1", "z2", "AGGREGATE", "SUM"}},
		{ErrSyntax, []string{"ZINTERCARD", "2", "z1", "z2", "WITHSCORES"}},
		{ErrSyntax, []string{"ZINTERCARD", "2", "z1", "z2", "WEIGHTS", "1", "2"}},
		{"ERR LIMIT can't be negative", []string{"ZINTERCARD", "2", "z1", "z2", "LIMIT", "-1"}},
		{"ERR LIMIT can't be negative", []string{"ZINTERCARD", "2", "z1", "z2", "LIMIT", "x"}},
		{ErrWrongType, []string{"ZUNION", "2", "z1", "str"}},
		// the key types are checked before the options
		{ErrWrongType, []string{"ZUNION", "2", "z1", "str", "WEIGHTS", "x", "y"}},
		{ErrWrongType, []string{"ZINTERCARD", "2", "z1", "str"}},
		{"ERR wrong number of arguments for 'zunionstore' command", []string{"ZUNIONSTORE", "d", "1"}},
	} {
		h.expectErr(tc.err, tc.args...)
	}
}

func TestZSetOpsWithSets(t *testing.T) {
	h := newHarness(t)
	h.expect(3, "ZADD", "z1", "1", "a", "2", "b", "3", "c")
	h.expect(3, "SADD", "s1", "a", "c", "x")
	h.expect(zflat("x", 1, "a", 2, "b", 2, "c", 4), "ZUNION", "2", "z1", "s1", "WITHSCORES")
	h.expect(zflat("a", 2, "c", 4), "ZINTER", "2", "z1", "s1", "WITHSCORES")
	h.expect(zflat("b", 2), "ZDIFF", "2", "z1", "s1", "WITHSCORES")
	h.expect(zflat("x", 1), "ZDIFF", "2", "s1", "z1", "WITHSCORES")
	h.expect(2, "ZINTERCARD", "2", "s1", "z1")
	h.expect(3, "ZUNIONSTORE", "d", "1", "s1", "WEIGHTS", "2")
	h.expect(zflat("a", 2, "c", 2, "x", 2), "ZRANGE", "d", "0", "-1", "WITHSCORES")
}

func TestZScan(t *testing.T) {
	h := newHarness(t)
	h.expect(9, "ZADD", "q", "1e17", "a", "0.1", "b", "1e20", "c", "inf", "d", "-inf", "e", "1.5", "f",
		"123456789012345678", "g", "-0", "h", "1e-5", "i")
	h.expect([]any{"0", []any{"e", "-inf", "h", "0", "i", "1.0000000000000001e-05", "b", "0.10000000000000001",
		"f", "1.5", "a", "100000000000000000", "g", "123456789012345680", "c", "1e+20", "d", "inf"}}, "ZSCAN", "q", "0")
	h.expect([]any{"0", []any{"a", "100000000000000000"}}, "ZSCAN", "q", "0", "MATCH", "a")
	h.expect([]any{"0", []any{"f", "1.5", "g", "123456789012345680"}}, "ZSCAN", "q", "5", "MATCH", "[fg]", "COUNT", "1")
	h.expect([]any{"0", []any{}}, "ZSCAN", "missing", "0")
	h.expect([]any{"0", []any{}}, "ZSCAN", "missing", "0", "foo") // options are read after the lookup
	h.expectErr(ErrSyntax, "ZSCAN", "q", "0", "COUNT", "0")
	h.expectErr(ErrSyntax, "ZSCAN", "q", "0", "MATCH")
	h.expectErr(ErrSyntax, "ZSCAN", "q", "0", "TYPE", "zset")
	h.expectErr("ERR invalid cursor", "ZSCAN", "q", "x")
	h.expectErr("ERR invalid cursor", "ZSCAN", "missing", "x")
	h.expect(4, "ZADD", "p", "4611686018427387904", "a", "4611686018427388928", "b", "-4611686018427387904", "c", "-4611686018427388928", "d")
	h.expect([]any{"0", []any{"d", "-4.6116860184273889e+18", "c", "-4611686018427387904", "a", "4611686018427387904", "b", "4.6116860184273889e+18"}}, "ZSCAN", "p", "0")
	h.resp3 = true // scores stay bulk strings in RESP3
	h.expect([]any{"0", []any{"a", "4611686018427387904"}}, "ZSCAN", "p", "0", "MATCH", "a")
}

func TestZParseDouble(t *testing.T) {
	good := map[string]float64{
		"1": 1, "-1.5": -1.5, "+5": 5, ".5": .5, "5.": 5, "0x10": 16, "0x1p3": 8, "0x1.8": 1.5, "0X.8P1": 1,
		"inf": zinf, "-inf": -zinf, "+INF": zinf, "infinity": zinf, "1e-310": 1e-310, "4.9e-324": 5e-324, "-0": 0,
	}
	for s, want := range good {
		if v, ok := ParseFloat([]byte(s)); !ok || v != want {
			t.Errorf("ParseFloat(%q) = %v, %v; want %v", s, v, ok, want)
		}
	}
	for _, s := range []string{"", " 1", "1 ", "nan", "NaN(1)", "1e400", "-1e400", "1e-400", "2e-324", "0x1p-2000",
		"1e", "e1", "x", "1_0", "0x", "--1", "infinit", "1\x00"} {
		if v, ok := ParseFloat([]byte(s)); ok {
			t.Errorf("ParseFloat(%q) = %v, accepted", s, v)
		}
	}
	bounds := []struct {
		in    string
		v     float64
		ex, o bool
	}{
		{"", 0, false, true}, {"(", 0, true, true}, {" 1", 1, false, true}, {"(1", 1, true, true},
		{"1e400", zinf, false, true}, {"1e-400", 0, false, true}, {"-inf", -zinf, false, true}, {"1\x00x", 1, false, true},
		{"((1", 0, false, false}, {"nan", 0, false, false}, {"(nan", 0, false, false}, {"1 ", 0, false, false}, {"-", 0, false, false},
	}
	for _, b := range bounds {
		v, ex, ok := zparseScoreBound([]byte(b.in))
		if ok != b.o || (ok && (v != b.v || ex != b.ex)) {
			t.Errorf("zparseScoreBound(%q) = %v %v %v", b.in, v, ex, ok)
		}
	}
}

func TestZSetSpecs(t *testing.T) {
	for _, name := range []string{"zadd", "zincrby", "zrem", "zcard", "zscore", "zmscore", "zrank", "zrevrank",
		"zcount", "zlexcount", "zrange", "zrangebyscore", "zrevrangebyscore", "zrangebylex", "zrevrangebylex",
		"zrevrange", "zrangestore", "zremrangebyrank", "zremrangebyscore", "zremrangebylex", "zpopmin", "zpopmax",
		"zmpop", "zrandmember", "zunion", "zinter", "zdiff", "zunionstore", "zinterstore", "zdiffstore",
		"zintercard", "zscan"} {
		s := Lookup([]byte(name))
		if s == nil {
			t.Fatalf("%s not registered", name)
		}
		if s.Group != "sorted-set" || s.Since == "" || s.Summary == "" {
			t.Errorf("%s: incomplete metadata %+v", name, s)
		}
		if (s.Flags&FlagWrite != 0) == (s.Flags&FlagReadOnly != 0) {
			t.Errorf("%s: must be exactly one of write and readonly", name)
		}
		movable := slices.Contains([]string{"zmpop", "zunion", "zinter", "zdiff", "zunionstore", "zinterstore", "zdiffstore", "zintercard"}, name)
		// the *STORE commands report their destination as Redis's COMMAND INFO does (1 1 1)
		store := strings.HasSuffix(name, "store") && movable
		// a movable command names its keys (MoreKeys) or locks every shard (FlagAllKeys)
		if movable != (s.Flags&FlagAllKeys != 0 || s.MoreKeys != nil) || (movable && !store) != (s.FirstKey == 0) || (store && (s.FirstKey != 1 || s.LastKey != 1)) {
			t.Errorf("%s: key spec %+v", name, s)
		}
	}
	if s := Lookup([]byte("zrangestore")); s.FirstKey != 1 || s.LastKey != 2 || s.Step != 1 {
		t.Errorf("zrangestore keys %d %d %d", s.FirstKey, s.LastKey, s.Step)
	}
	keys := Lookup([]byte("zrangestore")).Keys(nil, [][]byte{[]byte("zrangestore"), []byte("d"), []byte("s"), []byte("0"), []byte("1")})
	if len(keys) != 2 || string(keys[0]) != "d" || string(keys[1]) != "s" {
		t.Errorf("zrangestore keys %q", keys)
	}
}

// --- the data structure ---------------------------------------------------------------

// zmodel is a naive sorted set for cross-checking.
type zmodel map[string]float64

func (m zmodel) sorted() []zentry {
	var es []zentry
	for k, v := range m {
		es = append(es, zentry{v, k})
	}
	slices.SortFunc(es, func(a, b zentry) int {
		if zentryLess(a, b) {
			return -1
		}
		if zentryLess(b, a) {
			return 1
		}
		return 0
	})
	return es
}

func TestZSetAgainstModel(t *testing.T) {
	h := newHarness(t)
	model := zmodel{}
	r := rng{state: 42}
	flatten := func(es []zentry) []any {
		out := []any{}
		for _, e := range es {
			out = append(out, e.member, e.score)
		}
		return out
	}
	for step := 0; step < 4000; step++ {
		m := "m" + strconv.Itoa(r.intn(700))
		score := float64(r.intn(50)) / 2
		switch r.intn(4) {
		case 0, 1:
			_, had := model[m]
			model[m] = score
			want := 1
			if had {
				want = 0
			}
			h.expect(want, "ZADD", "z", FormatDouble(score), m)
		case 2:
			_, had := model[m]
			delete(model, m)
			want := 0
			if had {
				want = 1
			}
			h.expect(want, "ZREM", "z", m)
		case 3:
			model[m] += score
			h.expect(model[m], "ZINCRBY", "z", FormatDouble(score), m)
		}
		if step%97 != 0 {
			continue
		}
		es := model.sorted()
		h.expect(len(es), "ZCARD", "z")
		h.expect(flatten(es), "ZRANGE", "z", "0", "-1", "WITHSCORES")
		for i, e := range es {
			if i%13 == 0 {
				h.expect(i, "ZRANK", "z", e.member)
				h.expect(len(es)-1-i, "ZREVRANK", "z", e.member)
			}
		}
		lo, hi := float64(r.intn(30)), float64(r.intn(30))
		var in []zentry
		for _, e := range es {
			if e.score > lo && e.score <= hi {
				in = append(in, e)
			}
		}
		h.expect(len(in), "ZCOUNT", "z", "("+FormatDouble(lo), FormatDouble(hi))
		off, cnt := r.intn(10), r.intn(20)
		want := []any{}
		for i := off; i < len(in) && i < off+cnt; i++ {
			want = append(want, in[i].member)
		}
		h.expect(want, "ZRANGEBYSCORE", "z", "("+FormatDouble(lo), FormatDouble(hi), "LIMIT", strconv.Itoa(off), strconv.Itoa(cnt))
		want = []any{}
		for i := len(in) - 1 - off; i >= 0 && i > len(in)-1-off-cnt; i-- {
			want = append(want, in[i].member)
		}
		h.expect(want, "ZREVRANGEBYSCORE", "z", FormatDouble(hi), "("+FormatDouble(lo), "LIMIT", strconv.Itoa(off), strconv.Itoa(cnt))
		start := r.intn(len(es) + 5)
		want = []any{}
		for i := start; i < len(es) && i <= start+40; i++ {
			want = append(want, es[i].member)
		}
		h.expect(want, "ZRANGE", "z", strconv.Itoa(start), strconv.Itoa(start+40))
	}
	// lex ranges over equal scores, on a set big enough for a deep tree
	args := []string{"ZADD", "l"}
	var names []string
	for i := 0; i < 1500; i++ {
		n := fmt.Sprintf("%04x", r.intn(1<<16))
		args = append(args, "0", n)
		names = append(names, n)
	}
	h.do(args...)
	slices.Sort(names)
	names = slices.Compact(names)
	for i := 0; i < 50; i++ {
		a, b := fmt.Sprintf("%04x", r.intn(1<<16)), fmt.Sprintf("%04x", r.intn(1<<16))
		n := 0
		for _, x := range names {
			if x >= a && x < b {
				n++
			}
		}
		h.expect(n, "ZLEXCOUNT", "l", "["+a, "("+b)
	}
}

func TestZSetCloneIndependent(t *testing.T) {
	h := newHarness(t)
	h.expect(3, "ZADD", "z", "1", "a", "2", "b", "3", "c")
	h.expect(1, "COPY", "z", "c")
	h.expect(1, "ZADD", "c", "4", "d")
	h.expect(1, "ZREM", "c", "a")
	h.expect(5.0, "ZINCRBY", "c", "3", "b")
	h.expect(zflat("a", 1, "b", 2, "c", 3), "ZRANGE", "z", "0", "-1", "WITHSCORES")
	h.expect(zflat("c", 3, "d", 4, "b", 5), "ZRANGE", "c", "0", "-1", "WITHSCORES")
	// and directly, on a set with a multi-level tree
	z := newZSet(0)
	for i := 0; i < 1000; i++ {
		z.insert(strconv.Itoa(i), float64(i%7))
	}
	c := z.clone().(*zset)
	before := z.appendTo(nil)
	if !bytes.Equal(before, c.appendTo(nil)) {
		t.Fatal("clone differs")
	}
	for i := 0; i < 1000; i += 3 {
		c.remove([]byte(strconv.Itoa(i)))
	}
	c.insert("new", -1)
	if !bytes.Equal(before, z.appendTo(nil)) || z.Len() != 1000 {
		t.Fatal("changing the clone changed the original")
	}
}

func TestZSetEncodingRoundTrip(t *testing.T) {
	z := newZSet(0)
	for i := 0; i < 2000; i++ {
		z.insert(fmt.Sprint("member-", i*7919%2000), float64(i%13)-6.5)
	}
	z.insert("", math.Inf(-1))
	z.insert("\x00\xff", math.Inf(1))
	b := z.appendTo(nil)
	c, err := collectionDecoders[TypeZSet](b)
	if err != nil {
		t.Fatal(err)
	}
	d := c.(*zset)
	if d.Len() != z.Len() || !bytes.Equal(d.appendTo(nil), b) || !reflect.DeepEqual(d.entries(), z.entries()) {
		t.Fatal("round trip differs")
	}
	for m, s := range z.dict {
		if d.dict[m] != s {
			t.Fatalf("member %q: %v != %v", m, d.dict[m], s)
		}
	}
	if d.memUsage() <= 0 {
		t.Fatal("memUsage")
	}
	// malformed inputs
	one := newZSet(0)
	one.insert("a", 1)
	good := one.appendTo(nil)
	bad := [][]byte{
		nil, {0}, good[:len(good)-1], append(slices.Clone(good), 0),
		{1, 200, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0},                                        // member longer than the input
		{2, 1, 'a', 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 1, 'a', 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, // repeated
		{2, 1, 'b', 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 1, 'a', 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, // out of order
		{2, 1, 'a', 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0x40},    // repeated member, higher score
		{1, 1, 'a', 1, 0, 0, 0, 0, 0, 0xf8, 0x7f},                                       // NaN
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},              // bad varint
		{0x80, 0x80, 0x80, 0x80, 0x10, 1, 'a'},                                          // count far beyond the bytes
	}
	for _, b := range bad {
		if _, err := decodeZSet(b); err != ErrCorrupt {
			t.Errorf("decodeZSet(%x) = %v, want ErrCorrupt", b, err)
		}
	}
}

func FuzzDecodeZSet(f *testing.F) {
	z := newZSet(0)
	for i, m := range []string{"a", "b", "ccc", ""} {
		z.insert(m, float64(i)-1.5)
	}
	f.Add(z.appendTo(nil))
	f.Add([]byte{})
	f.Add([]byte{1, 1, 'a', 0, 0, 0, 0, 0, 0, 0xf0, 0x3f})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeZSet(b)
		if err != nil {
			return
		}
		d := c.(*zset)
		// anything accepted is consistent and survives a round trip
		if d.tree.Len() != len(d.dict) || d.Len() == 0 {
			t.Fatalf("inconsistent zset")
		}
		es := d.entries()
		for i, e := range es {
			if d.dict[e.member] != e.score || (i > 0 && !zentryLess(es[i-1], e)) {
				t.Fatalf("inconsistent entry %d", i)
			}
		}
		again, err := decodeZSet(d.appendTo(nil))
		if err != nil || !reflect.DeepEqual(again.(*zset).entries(), es) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func BenchmarkZAdd(b *testing.B) {
	args := make([][]byte, 4)
	args[0], args[1] = []byte("ZADD"), []byte("z")
	c := Ctx{s: New(), W: Discard, writing: true}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		args[2] = strconv.AppendInt(args[2][:0], int64(i*7919%1000003), 10)
		args[3] = strconv.AppendInt(args[3][:0], int64(i), 10)
		zaddCmd(&c, args)
	}
}
