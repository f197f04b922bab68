package kvstore

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

func TestSetsSpecs(t *testing.T) {
	const (
		w  = FlagWrite | FlagDenyOOM | FlagFast
		wf = FlagWrite | FlagFast
		wd = FlagWrite | FlagDenyOOM
		rf = FlagReadOnly | FlagFast
		r  = FlagReadOnly
	)
	for _, c := range []hsSpecCheck{
		{name: "sadd", arity: -3, flags: w, first: 1, last: 1, step: 1, since: "1.0.0"},
		{name: "srem", arity: -3, flags: wf, first: 1, last: 1, step: 1, since: "1.0.0"},
		{name: "smembers", arity: 2, flags: r, first: 1, last: 1, step: 1, since: "1.0.0"},
		{name: "sismember", arity: 3, flags: rf, first: 1, last: 1, step: 1, since: "1.0.0"},
		{name: "smismember", arity: -3, flags: rf, first: 1, last: 1, step: 1, since: "6.2.0"},
		{name: "scard", arity: 2, flags: rf, first: 1, last: 1, step: 1, since: "1.0.0"},
		{name: "spop", arity: -2, flags: wf, first: 1, last: 1, step: 1, since: "1.0.0"},
		{name: "srandmember", arity: -2, flags: r, first: 1, last: 1, step: 1, since: "1.0.0"},
		{name: "smove", arity: 4, flags: wf, first: 1, last: 2, step: 1, since: "1.0.0"},
		{name: "sinter", arity: -2, flags: r, first: 1, last: -1, step: 1, since: "1.0.0"},
		{name: "sinterstore", arity: -3, flags: wd | FlagReadLookups, first: 1, last: -1, step: 1, since: "1.0.0"},
		{name: "sintercard", arity: -3, flags: r | FlagAllKeys, since: "7.0.0"},
		{name: "sunion", arity: -2, flags: r, first: 1, last: -1, step: 1, since: "1.0.0"},
		{name: "sunionstore", arity: -3, flags: wd | FlagReadLookups, first: 1, last: -1, step: 1, since: "1.0.0"},
		{name: "sdiff", arity: -2, flags: r, first: 1, last: -1, step: 1, since: "1.0.0"},
		{name: "sdiffstore", arity: -3, flags: wd | FlagReadLookups, first: 1, last: -1, step: 1, since: "1.0.0"},
		{name: "sscan", arity: -3, flags: r, first: 1, last: 1, step: 1, since: "2.8.0"},
	} {
		hsCheckSpec(t, c, "set")
	}
}

func TestSetsBasics(t *testing.T) {
	h := newHarness(t)
	h.expect(3, "SADD", "s", "a", "b", "c")
	h.expect(1, "SADD", "s", "a", "d", "d")
	h.expect(0, "SADD", "s", "a")
	h.expect([]any{"a", "b", "c", "d"}, "SMEMBERS", "s")
	h.expect([]any{}, "SMEMBERS", "missing")
	h.expect(4, "SCARD", "s")
	h.expect(0, "SCARD", "missing")
	h.expect(1, "SISMEMBER", "s", "a")
	h.expect(0, "SISMEMBER", "s", "z")
	h.expect(0, "SISMEMBER", "missing", "a")
	h.expect([]any{int64(1), int64(0), int64(1)}, "SMISMEMBER", "s", "a", "z", "a")
	h.expect([]any{int64(0), int64(0)}, "SMISMEMBER", "missing", "a", "b")
	h.expect(2, "SREM", "s", "a", "z", "a", "c")
	h.expect([]any{"d", "b"}, "SMEMBERS", "s") // swap-delete order
	h.expect(0, "SREM", "missing", "a")
	h.expect(2, "SREM", "s", "b", "d", "x")
	h.expect(0, "EXISTS", "s")
	h.expect(1, "SADD", "s", "")
	h.expect(Status("set"), "TYPE", "s")
	h.expect(1, "SADD", "bin", "\x00\r\n\xff")
	h.expect(1, "SISMEMBER", "bin", "\x00\r\n\xff")
}

func TestSetsErrors(t *testing.T) {
	h := newHarness(t)
	h.expect(Status("OK"), "SET", "str", "x")
	h.expect(2, "SADD", "s", "a", "b")
	for _, args := range [][]string{
		{"SADD", "str", "a"}, {"SREM", "str", "a"}, {"SMEMBERS", "str"}, {"SISMEMBER", "str", "a"},
		{"SMISMEMBER", "str", "a"}, {"SCARD", "str"}, {"SPOP", "str"}, {"SPOP", "str", "0"},
		{"SPOP", "str", "2"}, {"SRANDMEMBER", "str"}, {"SRANDMEMBER", "str", "0"},
		{"SRANDMEMBER", "str", "-2"}, {"SMOVE", "str", "s", "a"}, {"SMOVE", "s", "str", "a"},
		{"SMOVE", "s", "str", "zz"}, {"SINTER", "str"}, {"SINTER", "missing", "str"},
		{"SINTER", "s", "missing", "str"}, {"SINTERSTORE", "d", "missing", "str"},
		{"SINTERCARD", "2", "missing", "str"}, {"SUNION", "missing", "str"}, {"SUNIONSTORE", "d", "s", "str"},
		{"SDIFF", "missing", "str"}, {"SDIFF", "s", "str"}, {"SDIFFSTORE", "d", "missing", "str"},
		{"SSCAN", "str", "0"}, {"SSCAN", "str", "0", "COUNT", "0"},
	} {
		h.expectErr(ErrWrongType, args...)
	}
	h.expect(0, "EXISTS", "d")
	h.expect("x", "GET", "str")
	for _, args := range [][]string{
		{"SADD", "s"}, {"SREM", "s"}, {"SMEMBERS"}, {"SMEMBERS", "s", "x"}, {"SISMEMBER", "s"},
		{"SMISMEMBER", "s"}, {"SCARD"}, {"SPOP"}, {"SRANDMEMBER"}, {"SMOVE", "s", "d"},
		{"SINTER"}, {"SINTERSTORE", "d"}, {"SINTERCARD", "1"}, {"SUNION"}, {"SUNIONSTORE", "d"},
		{"SDIFF"}, {"SDIFFSTORE", "d"}, {"SSCAN", "s"},
	} {
		h.expect(Err(WrongArgs(strings.ToLower(args[0]))), args...)
	}
	h.expect(Err(ErrSyntax), "SPOP", "s", "1", "2")
	h.expect(Err(ErrSyntax), "SPOP", "missing", "x", "2")
	h.expect(Err(ErrSyntax), "SRANDMEMBER", "s", "1", "2")
	for _, bad := range []string{"-1", "x", "+1", "-0", "9223372036854775808", ""} {
		h.expect(Err(ErrNotPositive), "SPOP", "s", bad)
		h.expect(Err(ErrNotPositive), "SPOP", "str", bad) // checked before the type
	}
	for _, bad := range []string{"x", "+1", "-0", "9223372036854775808", "1.5"} {
		h.expect(Err(ErrNotInteger), "SRANDMEMBER", "s", bad)
		h.expect(Err(ErrNotInteger), "SRANDMEMBER", "str", bad)
	}
	rangeErr := Err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
	h.expect(rangeErr, "SRANDMEMBER", "s", "-9223372036854775808")
	h.expect(rangeErr, "SRANDMEMBER", "str", "-9223372036854775808")
	h.expect(Err("ERR value is out of range"), "SRANDMEMBER", "s", "-9223372036854775807")
	h.expect(2, "SCARD", "s")
}

func TestSetsPop(t *testing.T) {
	h := newHarness(t)
	h.expect(nil, "SPOP", "missing")
	h.expect([]any{}, "SPOP", "missing", "3")
	h.expect([]any{}, "SPOP", "missing", "0")
	members := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	h.expect(len(members), append([]string{"SADD", "s"}, members...)...)
	h.expect([]any{}, "SPOP", "s", "0")
	h.expect(8, "SCARD", "s")
	var popped []string
	one := h.do("SPOP", "s").(string)
	popped = append(popped, one)
	h.expect(0, "SISMEMBER", "s", one)
	three := hsSorted(t, h.do("SPOP", "s", "3"))
	if len(three) != 3 || three[0] == three[1] || three[1] == three[2] {
		t.Fatalf("SPOP 3: %q", three)
	}
	popped = append(popped, three...)
	h.expect(4, "SCARD", "s")
	rest := hsSorted(t, h.do("SPOP", "s", "100")) // the whole set: the key goes
	popped = append(popped, rest...)
	h.expect(0, "EXISTS", "s")
	sort.Strings(popped)
	hsEqual(t, "every member popped once", popped, members)

	h.expect(1, "SADD", "s", "x")
	h.expect(1, "PEXPIRE", "s", "5000")
	h.expect(1, "SADD", "s", "y")
	h.do("SPOP", "s")
	h.expect(5000, "PTTL", "s")
	h.do("SPOP", "s")
	h.expect(0, "EXISTS", "s") // the last SPOP deletes the key, with its TTL
	h.expect(-2, "PTTL", "s")

	h.expect(3, "SADD", "s", "a", "b", "c")
	h.expect([]any{"a", "b", "c"}, "SPOP", "s", "3")
	h.expect(0, "EXISTS", "s")

	// shapes: a bulk or null for one member; a set (RESP3 ~) for a count
	h.resp3 = true
	hsExpectRaw(h, "_\r\n", "SPOP", "missing")
	hsExpectRaw(h, "~0\r\n", "SPOP", "missing", "2")
	h.expect(3, "SADD", "s", "a", "b", "c")
	hsExpectRaw(h, "~0\r\n", "SPOP", "s", "0")
	hsExpectMatch(h, `^~2\r\n(\$1\r\n[abc]\r\n){2}$`, "SPOP", "s", "2")
	hsExpectMatch(h, `^~1\r\n\$1\r\n[abc]\r\n$`, "SPOP", "s", "5")
	h.resp3 = false
}

func TestSetsRandMember(t *testing.T) {
	h := newHarness(t)
	h.expect(nil, "SRANDMEMBER", "missing")
	h.expect([]any{}, "SRANDMEMBER", "missing", "3")
	h.expect([]any{}, "SRANDMEMBER", "missing", "-3")
	h.expect([]any{}, "SRANDMEMBER", "missing", "-9223372036854775807")
	members := []string{"a", "b", "c", "d", "e"}
	h.expect(5, append([]string{"SADD", "s"}, members...)...)
	if m := h.do("SRANDMEMBER", "s").(string); m < "a" || m > "e" {
		t.Fatalf("SRANDMEMBER %q", m)
	}
	h.expect([]any{}, "SRANDMEMBER", "s", "0")
	hsEqual(t, "count = size", hsSorted(t, h.do("SRANDMEMBER", "s", "5")), members)
	hsEqual(t, "count > size", hsSorted(t, h.do("SRANDMEMBER", "s", "9223372036854775807")), members)
	for count := 1; count < 5; count++ {
		got := hsSorted(t, h.do("SRANDMEMBER", "s", strconv.Itoa(count)))
		if len(got) != count {
			t.Fatalf("SRANDMEMBER %d: %q", count, got)
		}
		for i := 1; i < len(got); i++ {
			if got[i] == got[i-1] {
				t.Fatalf("SRANDMEMBER %d repeats: %q", count, got)
			}
		}
	}
	rep := hsSorted(t, h.do("SRANDMEMBER", "s", "-50"))
	if len(rep) != 50 {
		t.Fatalf("SRANDMEMBER -50: %d", len(rep))
	}
	h.expect(5, "SCARD", "s")

	// a large set, few members: the sampling path for few of many
	for i := 0; i < 1000; i++ {
		h.do("SADD", "big", strconv.Itoa(i))
	}
	got := hsSorted(t, h.do("SRANDMEMBER", "big", "10"))
	for i := 1; i < len(got); i++ {
		if got[i] == got[i-1] {
			t.Fatalf("SRANDMEMBER 10 repeats: %q", got)
		}
	}
	if len(got) != 10 {
		t.Fatalf("SRANDMEMBER 10: %q", got)
	}

	// RESP3: SRANDMEMBER with a count is an array (not a set), unlike SPOP
	h.resp3 = true
	hsExpectRaw(h, "*0\r\n", "SRANDMEMBER", "missing", "2")
	hsExpectRaw(h, "*0\r\n", "SRANDMEMBER", "s", "0")
	hsExpectRaw(h, "_\r\n", "SRANDMEMBER", "missing")
	hsExpectMatch(h, `^\*3\r\n(\$1\r\n[a-e]\r\n){3}$`, "SRANDMEMBER", "s", "-3")
	hsExpectMatch(h, `^\*5\r\n(\$1\r\n[a-e]\r\n){5}$`, "SRANDMEMBER", "s", "6")
	h.resp3 = false
}

func TestSetsMove(t *testing.T) {
	h := newHarness(t)
	h.expect(Status("OK"), "SET", "str", "x")
	h.expect(3, "SADD", "src", "a", "b", "c")
	h.expect(0, "SMOVE", "missing", "str", "a") // a missing source answers 0 before any type check
	h.expect(0, "SMOVE", "missing", "src", "a")
	h.expect(1, "SMOVE", "src", "src", "a")
	h.expect(0, "SMOVE", "src", "src", "z")
	h.expect(0, "SMOVE", "src", "dst", "z")
	h.expect(0, "EXISTS", "dst")
	h.expect(1, "SMOVE", "src", "dst", "a")
	h.expect([]any{"a"}, "SMEMBERS", "dst")
	h.expect(1, "SADD", "dst", "b")
	h.expect(1, "SMOVE", "src", "dst", "b") // already in dst: still 1, removed from src
	h.expect([]any{"c"}, "SMEMBERS", "src")
	h.expect(1, "PEXPIRE", "dst", "5000")
	h.expect(1, "SMOVE", "src", "dst", "c")
	h.expect(0, "EXISTS", "src") // emptied
	h.expect(5000, "PTTL", "dst")
	h.expect([]any{"a", "b", "c"}, "SMEMBERS", "dst")
	h.expect(1, "SADD", "src", "q")
	h.expectErr(ErrWrongType, "SMOVE", "src", "str", "nope") // both types checked first
	h.expect(1, "SCARD", "src")
}

func TestSetsAlgebra(t *testing.T) {
	h := newHarness(t)
	h.expect(5, "SADD", "s1", "a", "b", "c", "d", "e")
	h.expect(4, "SADD", "s2", "c", "d", "e", "f")
	h.expect(3, "SADD", "s3", "e", "c", "x")
	h.expect(Status("OK"), "SET", "str", "x")

	sorted := func(args ...string) []string { return hsSorted(t, h.do(args...)) }
	hsEqual(t, "SINTER", sorted("SINTER", "s1", "s2"), []string{"c", "d", "e"})
	hsEqual(t, "SINTER 3", sorted("SINTER", "s1", "s2", "s3"), []string{"c", "e"})
	hsEqual(t, "SINTER self", sorted("SINTER", "s1", "s1"), []string{"a", "b", "c", "d", "e"})
	hsEqual(t, "SINTER one", sorted("SINTER", "s3"), []string{"c", "e", "x"})
	h.expect([]any{}, "SINTER", "s1", "missing")
	h.expect([]any{}, "SINTER", "missing")
	hsEqual(t, "SUNION", sorted("SUNION", "s1", "s2", "missing", "s3"), []string{"a", "b", "c", "d", "e", "f", "x"})
	h.expect([]any{}, "SUNION", "missing", "missing2")
	hsEqual(t, "SDIFF", sorted("SDIFF", "s1", "s2"), []string{"a", "b"})
	hsEqual(t, "SDIFF 3", sorted("SDIFF", "s2", "s1", "missing", "s3"), []string{"f"})
	hsEqual(t, "SDIFF missing", sorted("SDIFF", "s1", "missing"), []string{"a", "b", "c", "d", "e"})
	h.expect([]any{}, "SDIFF", "missing", "s1")
	h.expect([]any{}, "SDIFF", "s1", "s1")

	// deterministic order: SINTER walks the smallest set, SUNION first seen first
	h.expect([]any{"e", "c"}, "SINTER", "s1", "s2", "s3")
	h.expect([]any{"e", "c", "x", "a", "b", "d"}, "SUNION", "s3", "s1")
	h.expect([]any{"a", "b"}, "SDIFF", "s1", "s2")

	// the STORE variants replace the destination, whatever its type, and drop its TTL
	h.expect(1, "PEXPIRE", "str", "5000")
	h.expect(3, "SINTERSTORE", "str", "s1", "s2")
	h.expect(Status("set"), "TYPE", "str")
	h.expect(-1, "PTTL", "str")
	hsEqual(t, "stored", sorted("SMEMBERS", "str"), []string{"c", "d", "e"})
	h.expect(0, "SINTERSTORE", "str", "s1", "missing") // an empty result deletes it
	h.expect(0, "EXISTS", "str")
	h.expect(0, "SINTERSTORE", "none", "missing")
	h.expect(0, "EXISTS", "none")
	h.expect(7, "SUNIONSTORE", "u", "s1", "s2", "s3")
	h.expect(0, "SUNIONSTORE", "u", "missing")
	h.expect(0, "EXISTS", "u")
	h.expect(6, "SUNIONSTORE", "s1", "s1", "s2") // the destination may be a source
	hsEqual(t, "SUNIONSTORE into a source", sorted("SMEMBERS", "s1"), []string{"a", "b", "c", "d", "e", "f"})
	h.expect(2, "SDIFFSTORE", "d", "s1", "s2")
	hsEqual(t, "SDIFFSTORE", sorted("SMEMBERS", "d"), []string{"a", "b"})
	h.expect(0, "SDIFFSTORE", "d", "s1", "s1")
	h.expect(0, "EXISTS", "d")
	h.expect(0, "SDIFFSTORE", "d", "missing", "s1")
	h.expect(4, "SDIFFSTORE", "s1", "s1", "s3")
	hsEqual(t, "SDIFFSTORE into a source", sorted("SMEMBERS", "s1"), []string{"a", "b", "d", "f"})
	// a wrong type among the sources leaves the destination alone
	h.expect(1, "SADD", "keep", "k")
	h.expect(Status("OK"), "SET", "str2", "x")
	h.expectErr(ErrWrongType, "SINTERSTORE", "keep", "s1", "str2", "missing")
	h.expectErr(ErrWrongType, "SUNIONSTORE", "keep", "missing", "str2")
	h.expect([]any{"k"}, "SMEMBERS", "keep")

	// the stored sets are independent of their sources
	h.expect(4, "SUNIONSTORE", "copy", "s1")
	h.expect(1, "SADD", "copy", "new")
	h.expect(4, "SCARD", "s1")

	h.resp3 = true
	hsExpectRaw(h, "~2\r\n$1\r\ne\r\n$1\r\nc\r\n", "SINTER", "s2", "s3")
	hsExpectRaw(h, "~0\r\n", "SINTER", "s2", "missing")
	hsExpectRaw(h, "~1\r\n$1\r\nk\r\n", "SUNION", "keep")
	hsExpectRaw(h, "~0\r\n", "SDIFF", "missing")
	hsExpectRaw(h, "~1\r\n$1\r\nk\r\n", "SMEMBERS", "keep")
	hsExpectRaw(h, "~0\r\n", "SMEMBERS", "missing")
	hsExpectRaw(h, "*2\r\n:1\r\n:0\r\n", "SMISMEMBER", "keep", "k", "x")
	hsExpectRaw(h, ":1\r\n", "SINTERSTORE", "x", "keep")
	h.resp3 = false
}

func TestSetsInterCard(t *testing.T) {
	h := newHarness(t)
	h.expect(5, "SADD", "s1", "a", "b", "c", "d", "e")
	h.expect(4, "SADD", "s2", "c", "d", "e", "f")
	h.expect(Status("OK"), "SET", "str", "x")
	h.expect(3, "SINTERCARD", "2", "s1", "s2")
	h.expect(5, "SINTERCARD", "1", "s1")
	h.expect(0, "SINTERCARD", "2", "s1", "missing")
	h.expect(0, "SINTERCARD", "1", "missing")
	h.expect(2, "SINTERCARD", "2", "s1", "s2", "LIMIT", "2")
	h.expect(3, "SINTERCARD", "2", "s1", "s2", "limit", "0")
	h.expect(3, "SINTERCARD", "2", "s1", "s2", "LIMIT", "100")
	h.expect(1, "SINTERCARD", "1", "s1", "LIMIT", "5", "LIMIT", "1") // the last LIMIT wins
	for _, bad := range []string{"0", "-1", "x", "99999999999999999999", "+1"} {
		h.expect(Err("ERR numkeys should be greater than 0"), "SINTERCARD", bad, "s1")
	}
	h.expect(Err("ERR Number of keys can't be greater than number of args"), "SINTERCARD", "3", "s1", "s2")
	for _, bad := range []string{"-1", "x", "+1", "9223372036854775808"} {
		h.expect(Err("ERR LIMIT can't be negative"), "SINTERCARD", "1", "s1", "LIMIT", bad)
		h.expect(Err("ERR LIMIT can't be negative"), "SINTERCARD", "1", "str", "LIMIT", bad)
	}
	h.expect(Err(ErrSyntax), "SINTERCARD", "1", "s1", "LIMIT")
	h.expect(Err(ErrSyntax), "SINTERCARD", "1", "s1", "LIMT", "1")
	h.expect(Err(ErrSyntax), "SINTERCARD", "1", "s1", "LIMIT", "0", "extra")
	h.expect(Err(ErrSyntax), "SINTERCARD", "2", "s1", "LIMIT", "1")
	h.expectErr(ErrWrongType, "SINTERCARD", "2", "s1", "str")
	h.expectErr(ErrWrongType, "SINTERCARD", "2", "missing", "str")
	if keys := Lookup([]byte("sintercard")).Keys(nil, [][]byte{[]byte("sintercard"), []byte("1"), []byte("k")}); len(keys) != 0 {
		t.Fatalf("SINTERCARD key positions %q", keys)
	}
}

func TestSetsScan(t *testing.T) {
	h := newHarness(t)
	h.expect(4, "SADD", "s", "a1", "a2", "b1", "c")
	h.expect([]any{"0", []any{"a1", "a2", "b1", "c"}}, "SSCAN", "s", "0")
	h.expect([]any{"0", []any{"a1", "a2", "b1", "c"}}, "SSCAN", "s", "77", "COUNT", "1")
	h.expect([]any{"0", []any{"a1", "a2"}}, "SSCAN", "s", "0", "MATCH", "a*")
	h.expect([]any{"0", []any{"a1", "b1"}}, "SSCAN", "s", "0", "MATCH", "?1", "COUNT", "5")
	h.expect([]any{"0", []any{}}, "SSCAN", "s", "0", "MATCH", "z")
	h.expect([]any{"0", []any{}}, "SSCAN", "missing", "0")
	h.expect([]any{"0", []any{}}, "SSCAN", "missing", "0", "COUNT", "0")
	h.expect(Err("ERR invalid cursor"), "SSCAN", "s", "x")
	h.expect([]any{"0", []any{}}, "SSCAN", "missing", "+1") // strtoul takes a sign, as Redis does
	h.expect(Err(ErrSyntax), "SSCAN", "s", "0", "COUNT", "0")
	h.expect(Err(ErrSyntax), "SSCAN", "s", "0", "COUNT", "-1")
	h.expect(Err(ErrSyntax), "SSCAN", "s", "0", "MATCH")
	h.expect(Err(ErrSyntax), "SSCAN", "s", "0", "TYPE", "set")
	h.expect(Err(ErrNotInteger), "SSCAN", "s", "0", "COUNT", "x")
	h.resp3 = true
	hsExpectRaw(h, "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nc\r\n", "SSCAN", "s", "0", "MATCH", "c")
}

func TestSetsVersions(t *testing.T) {
	h := newHarness(t)
	h.expect(2, "SADD", "s", "a", "b")
	h.expect(1, "SADD", "o", "z")
	h.expectVersionStays("s", [][]string{
		{"SADD", "s", "a"}, {"SREM", "s", "x"}, {"SPOP", "s", "0"}, {"SMOVE", "s", "o", "x"},
		{"SMOVE", "s", "s", "a"}, {"SMEMBERS", "s"}, {"SRANDMEMBER", "s", "-3"}, {"SINTER", "s", "o"},
		{"SINTERSTORE", "d", "s", "o"}, {"SSCAN", "s", "0"}, {"SINTERCARD", "1", "s"},
	})
	h.expectVersionMoves("s", [][]string{
		{"SADD", "s", "c"}, {"SREM", "s", "c"}, {"SMOVE", "s", "o", "a"}, {"SMOVE", "o", "s", "a"},
		{"SUNIONSTORE", "s", "s", "o"}, {"SPOP", "s", "1"}, {"SPOP", "s"},
	})
}

// setCheck verifies the invariants: the index maps each member to its slot, and nothing else.
func setCheck(t *testing.T, s *setColl) {
	t.Helper()
	if len(s.index) != len(s.members) {
		t.Fatalf("index has %d members, slice %d", len(s.index), len(s.members))
	}
	for i, m := range s.members {
		if j, ok := s.index[m]; !ok || j != i {
			t.Fatalf("member %q at %d indexed at %d (%v)", m, i, j, ok)
		}
	}
}

func TestSetsModel(t *testing.T) {
	h1, h2 := newHarness(t), newHarness(t)
	model := map[string]bool{}
	r := rng{state: 7}
	for i := 0; i < 3000; i++ {
		m := strconv.Itoa(r.intn(150))
		switch r.intn(5) {
		case 0, 1:
			want := 1
			if model[m] {
				want = 0
			}
			model[m] = true
			h1.expect(want, "SADD", "s", m)
			h2.do("SADD", "s", m)
		case 2:
			want := 0
			if model[m] {
				want = 1
			}
			delete(model, m)
			h1.expect(want, "SREM", "s", m)
			h2.do("SREM", "s", m)
		case 3:
			want := 0
			if model[m] {
				want = 1
			}
			h1.expect(want, "SISMEMBER", "s", m)
		case 4:
			got := h1.do("SPOP", "s")
			h2.expect(got, "SPOP", "s") // the same pick in the other store
			if got != nil {
				if !model[got.(string)] {
					t.Fatalf("SPOP gave %q, not a member", got)
				}
				delete(model, got.(string))
			}
		}
		h1.expect(len(model), "SCARD", "s")
	}
	var want []string
	for m := range model {
		want = append(want, m)
	}
	sort.Strings(want)
	hsEqual(t, "SMEMBERS vs model", hsSorted(t, h1.do("SMEMBERS", "s")), want)
	if len(model) == 0 {
		return
	}
	a := h1.rawItem("s").coll
	b := h2.rawItem("s").coll
	setCheck(t, a.(*setColl))
	if !bytes.Equal(a.appendTo(nil), b.appendTo(nil)) {
		t.Fatal("the same commands gave two different sets")
	}
}

func TestSetsCloneIndependent(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 40; i++ {
		h.do("SADD", "src", strconv.Itoa(i))
	}
	want := hsSorted(t, h.do("SMEMBERS", "src"))
	h.expect(1, "COPY", "src", "dst")
	h.expect(1, "SADD", "dst", "new")
	h.expect(2, "SREM", "dst", "1", "2")
	h.do("SPOP", "dst", "5")
	hsEqual(t, "src after changes to its copy", hsSorted(t, h.do("SMEMBERS", "src")), want)
	h.expect(1, "SREM", "src", "10")
	h.expect(34, "SCARD", "dst")

	a := newSetColl(0)
	a.add("x")
	a.add("y")
	b := a.clone().(*setColl)
	a.remove([]byte("x"))
	a.add("z")
	if !reflect.DeepEqual(b.members, []string{"x", "y"}) {
		t.Fatalf("clone changed with its original: %q", b.members)
	}
	setCheck(t, a)
	setCheck(t, b)
}

func TestSetsEncoding(t *testing.T) {
	h := newHarness(t)
	h.expect(5, "SADD", "s", "a", "", "\x00\xff", strings.Repeat("x", 300), "z")
	h.expect(1, "SREM", "s", "a")
	it := h.rawItem("s")
	enc := it.coll.appendTo([]byte("prefix"))
	if !bytes.HasPrefix(enc, []byte("prefix")) {
		t.Fatal("appendTo overwrote dst")
	}
	enc = enc[len("prefix"):]
	dec, err := collectionDecoders[TypeSet](enc)
	if err != nil {
		t.Fatal(err)
	}
	sd := dec.(*setColl)
	setCheck(t, sd)
	if !reflect.DeepEqual(sd.members, it.coll.(*setColl).members) {
		t.Fatalf("decoded %q, want %q", sd.members, it.coll.(*setColl).members)
	}
	if again := dec.appendTo(nil); !bytes.Equal(again, enc) {
		t.Fatalf("re-encoding differs:\n%q\n%q", again, enc)
	}
	if dec.memUsage() < 300 || it.coll.memUsage() < 300 {
		t.Fatalf("memUsage %d %d", dec.memUsage(), it.coll.memUsage())
	}
	want := binary.AppendUvarint(nil, 2)
	want = append(binary.AppendUvarint(want, 2), "bc"...)
	want = binary.AppendUvarint(want, 0)
	x := newSetColl(0)
	x.add("bc")
	x.add("")
	if got := x.appendTo(nil); !bytes.Equal(got, want) {
		t.Fatalf("appendTo %q, want %q", got, want)
	}
	for _, bad := range [][]byte{
		nil,
		{},
		{0},                 // an empty set never exists
		{1},                 // a member missing
		{1, 2, 'a'},         // a member cut short
		{1, 1, 'a', 'b'},    // trailing bytes
		{2, 1, 'a', 1, 'a'}, // a duplicate member
		{2, 1, 'a'},         // fewer members than announced
		{0x80},              // a truncated count
		{1, 0x80},           // a truncated length
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 'a'},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	} {
		if c, err := decodeSet(bad); err != ErrCorrupt || c != nil {
			t.Errorf("decodeSet(%q) = %v, %v", bad, c, err)
		}
	}
	huge := binary.AppendUvarint(nil, 1<<40)
	huge = append(huge, make([]byte, 100)...)
	if allocs := testing.AllocsPerRun(10, func() { decodeSet(huge) }); allocs > 1 {
		t.Fatalf("%v allocations for a corrupt count", allocs)
	}
}

// Read-only commands leave the set byte for byte as it was.
func TestSetsReadsDoNotModify(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 30; i++ {
		h.do("SADD", "s", strconv.Itoa(i))
	}
	h.do("SADD", "o", "1", "2", "x")
	h.do("SREM", "s", "3", "17")
	coll := h.rawItem("s").coll
	before := coll.appendTo(nil)
	ver := h.s.KeyVersion(0, []byte("s"), h.now)
	for _, args := range [][]string{
		{"SMEMBERS", "s"}, {"SISMEMBER", "s", "1"}, {"SMISMEMBER", "s", "1", "x"}, {"SCARD", "s"},
		{"SRANDMEMBER", "s"}, {"SRANDMEMBER", "s", "5"}, {"SRANDMEMBER", "s", "-50"}, {"SRANDMEMBER", "s", "20"},
		{"SINTER", "s", "o"}, {"SUNION", "s", "o"}, {"SDIFF", "s", "o"}, {"SINTERCARD", "2", "s", "o"},
		{"SSCAN", "s", "0", "MATCH", "1*"},
	} {
		h.do(args...)
		hsTx(h, args)
	}
	if !bytes.Equal(coll.appendTo(nil), before) || h.s.KeyVersion(0, []byte("s"), h.now) != ver {
		t.Fatal("a read changed the set")
	}
}

func TestSetsInTransaction(t *testing.T) {
	h := newHarness(t)
	got := hsTx(h,
		[]string{"SADD", "a", "1", "2", "3"},
		[]string{"SADD", "b", "2", "3", "4"},
		[]string{"SINTERSTORE", "c", "a", "b"},
		[]string{"SMOVE", "c", "d", "2"},
		[]string{"SINTERCARD", "2", "a", "b"},
		[]string{"SMEMBERS", "d"},
		[]string{"HSET", "h", "f", "v"},
		[]string{"HGETALL", "h"},
	)
	want := []any{int64(3), int64(3), int64(2), int64(1), int64(2), []any{"2"}, int64(1), []any{"f", "v"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v", got)
	}
}

func FuzzDecodeSet(f *testing.F) {
	x := newSetColl(0)
	for _, e := range []string{"a", "", "hello", strings.Repeat("z", 200)} {
		x.add(e)
	}
	f.Add(x.appendTo(nil))
	f.Add([]byte{1, 0})
	f.Add([]byte{0})
	f.Add([]byte{2, 1, 'a', 1, 'a'})
	f.Add([]byte{0x80, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeSet(b)
		if err != nil {
			if err != ErrCorrupt || c != nil {
				t.Fatalf("decodeSet: %v, %v", c, err)
			}
			return
		}
		s := c.(*setColl)
		if s.Len() == 0 || s.Len() > len(b) {
			t.Fatalf("decoded %d members from %d bytes", s.Len(), len(b))
		}
		setCheck(t, s)
		again, err := decodeSet(c.appendTo(nil))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again.(*setColl).members, s.members) {
			t.Fatal("decode(encode(x)) != x")
		}
		if cl := c.clone(); !bytes.Equal(cl.appendTo(nil), c.appendTo(nil)) || c.memUsage() <= 0 {
			t.Fatal("clone or memUsage")
		}
	})
}

// Hashes and sets survive Snapshot/Restore with their order, so replies and random picks
// after a restore are those of the original store.
func TestHashSetSnapshotOrder(t *testing.T) {
	a := newHarness(t)
	for i := 0; i < 200; i++ {
		a.do("HSET", "h", "f"+strconv.Itoa(i%70), strconv.Itoa(i))
		a.do("SADD", "s", "m"+strconv.Itoa(i%90))
		if i%5 == 0 {
			a.do("HDEL", "h", "f"+strconv.Itoa(i%13))
			a.do("SREM", "s", "m"+strconv.Itoa(i%17))
		}
	}
	b := a.restored()
	for _, args := range [][]string{
		{"HGETALL", "h"}, {"SMEMBERS", "s"}, {"SPOP", "s", "7"}, {"SPOP", "s"}, {"HRANDFIELD", "h", "5"},
		{"SRANDMEMBER", "s", "-9"}, {"HDEL", "h", "f1", "f2"}, {"HKEYS", "h"}, {"SMEMBERS", "s"},
	} {
		ra, rb := a.applied(args...), b.applied(args...)
		if !reflect.DeepEqual(ra, rb) {
			t.Fatalf("%v: %v vs %v", args, ra, rb)
		}
	}
	if a.s.Digest() != b.s.Digest() {
		t.Fatal("stores diverged after restore")
	}
}
