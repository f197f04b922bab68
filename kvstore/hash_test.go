package kvstore

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// hsExpectMatch requires the wire reply to match a regular expression; when it has
// groups, they must all capture the same text (a field and its value share a digit).
func hsExpectMatch(h *harness, pattern string, args ...string) {
	h.t.Helper()
	got := h.raw(args...)
	m := regexp.MustCompile(pattern).FindStringSubmatch(got)
	if m == nil {
		h.t.Fatalf("%s\n got: %q\nwant: /%s/", strings.Join(args, " "), got, pattern)
	}
	for _, g := range m[1:] {
		if g != m[1] {
			h.t.Fatalf("%s: %q: groups %q differ", strings.Join(args, " "), got, m[1:])
		}
	}
}

func hsExpectRaw(h *harness, want string, args ...string) {
	h.t.Helper()
	if got := h.raw(args...); got != want {
		h.t.Fatalf("%s\n got: %q\nwant: %q", strings.Join(args, " "), got, want)
	}
}

// hsTx applies the commands as one MULTI/EXEC entry (read-only commands then run on the
// applier, with its random stream) and returns EXEC's reply.
func hsTx(h *harness, cmds ...[]string) []any {
	h.t.Helper()
	tx := make([]TxCommand, len(cmds))
	for i, c := range cmds {
		args := make([][]byte, len(c))
		for j, a := range c {
			args[j] = []byte(a)
		}
		tx[i] = TxCommand{DB: h.db, Args: args}
	}
	h.index++
	w := tree{resp3: h.resp3}
	if err := h.s.Apply(Entry{Index: h.index, Term: 1, Time: h.now, Data: AppendTx(nil, nil, tx)}, &w); err != nil {
		h.t.Fatal(err)
	}
	if len(w.out) != 1 {
		h.t.Fatalf("tx: %#v", w.out)
	}
	return w.out[0].([]any)
}

// hsSorted returns the strings of an array reply, sorted (for replies without an order).
func hsSorted(t *testing.T, v any) []string {
	t.Helper()
	arr, ok := v.([]any)
	if !ok {
		t.Fatalf("not an array: %#v", v)
	}
	out := make([]string, len(arr))
	for i, x := range arr {
		s, ok := x.(string)
		if !ok {
			t.Fatalf("not a string element: %#v", x)
		}
		out[i] = s
	}
	sort.Strings(out)
	return out
}

// hsPairs returns a flat field,value reply as sorted "field=value" strings.
func hsPairs(t *testing.T, v any) []string {
	t.Helper()
	flat := hsSorted(t, v) // type check only
	arr := v.([]any)
	if len(flat)%2 != 0 {
		t.Fatalf("odd pair reply %#v", v)
	}
	out := make([]string, 0, len(arr)/2)
	for i := 0; i < len(arr); i += 2 {
		out = append(out, arr[i].(string)+"="+arr[i+1].(string))
	}
	sort.Strings(out)
	return out
}

func hsEqual(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s\n got: %q\nwant: %q", what, got, want)
	}
}

// hsSpecCheck compares registered metadata with Redis 7.0's COMMAND INFO.
type hsSpecCheck struct {
	name              string
	arity             int
	flags             Flags
	first, last, step int
	since             string
}

func TestHashSpecs(t *testing.T) {
	const (
		w  = FlagWrite | FlagDenyOOM | FlagFast
		wf = FlagWrite | FlagFast
		rf = FlagReadOnly | FlagFast
		r  = FlagReadOnly
	)
	for _, c := range []hsSpecCheck{
		{name: "hset", arity: -4, flags: w, first: 1, last: 1, step: 1, since: "2.0.0"},
		{name: "hsetnx", arity: 4, flags: w, first: 1, last: 1, step: 1, since: "2.0.0"},
		{name: "hget", arity: 3, flags: rf, first: 1, last: 1, step: 1, since: "2.0.0"},
		{name: "hmset", arity: -4, flags: w, first: 1, last: 1, step: 1, since: "2.0.0"},
		{name: "hmget", arity: -3, flags: rf, first: 1, last: 1, step: 1, since: "2.0.0"},
		{name: "hdel", arity: -3, flags: wf, first: 1, last: 1, step: 1, since: "2.0.0"},
		{name: "hlen", arity: 2, flags: rf, first: 1, last: 1, step: 1, since: "2.0.0"},
		{name: "hstrlen", arity: 3, flags: rf, first: 1, last: 1, step: 1, since: "3.2.0"},
		{name: "hexists", arity: 3, flags: rf, first: 1, last: 1, step: 1, since: "2.0.0"},
		{name: "hkeys", arity: 2, flags: r, first: 1, last: 1, step: 1, since: "2.0.0"},
		{name: "hvals", arity: 2, flags: r, first: 1, last: 1, step: 1, since: "2.0.0"},
		{name: "hgetall", arity: 2, flags: r, first: 1, last: 1, step: 1, since: "2.0.0"},
		{name: "hincrby", arity: 4, flags: w, first: 1, last: 1, step: 1, since: "2.0.0"},
		{name: "hincrbyfloat", arity: 4, flags: w, first: 1, last: 1, step: 1, since: "2.6.0"},
		{name: "hrandfield", arity: -2, flags: r, first: 1, last: 1, step: 1, since: "6.2.0"},
		{name: "hscan", arity: -3, flags: r, first: 1, last: 1, step: 1, since: "2.8.0"},
	} {
		hsCheckSpec(t, c, "hash")
	}
}

func hsCheckSpec(t *testing.T, c hsSpecCheck, group string) {
	t.Helper()
	s := Lookup([]byte(strings.ToUpper(c.name)))
	if s == nil {
		t.Fatalf("%s not registered", c.name)
	}
	if s.Name != c.name || s.Arity != c.arity || s.Flags != c.flags || s.FirstKey != c.first ||
		s.LastKey != c.last || s.Step != c.step || s.Group != group || s.Since != c.since ||
		s.Summary == "" || s.Run == nil {
		t.Fatalf("%s: spec %+v, want %+v", c.name, *s, c)
	}
}

func TestHashBasics(t *testing.T) {
	h := newHarness(t)
	h.expect(2, "HSET", "h", "f1", "v1", "f2", "v2")
	h.expect(1, "HSET", "h", "f1", "x", "f3", "v3", "f3", "v3b") // repeated field counts once
	h.expect("x", "HGET", "h", "f1")
	h.expect("v3b", "HGET", "h", "f3")
	h.expect(nil, "HGET", "h", "nope")
	h.expect(nil, "HGET", "missing", "f")
	h.expect(Status("OK"), "HMSET", "h", "f4", "v4")
	h.expect(Status("OK"), "HMSET", "h2", "a", "1", "b", "2")
	h.expect([]any{"x", nil, "v4"}, "HMGET", "h", "f1", "nope", "f4")
	h.expect([]any{nil, nil}, "HMGET", "missing", "a", "b")
	h.expect(0, "HSETNX", "h", "f1", "y")
	h.expect("x", "HGET", "h", "f1")
	h.expect(1, "HSETNX", "h", "f5", "")
	h.expect(1, "HSETNX", "new", "f", "v")
	h.expect(5, "HLEN", "h")
	h.expect(0, "HLEN", "missing")
	h.expect(1, "HSTRLEN", "h", "f1")
	h.expect(0, "HSTRLEN", "h", "f5")
	h.expect(0, "HSTRLEN", "h", "nope")
	h.expect(0, "HSTRLEN", "missing", "f")
	h.expect(1, "HEXISTS", "h", "f5")
	h.expect(0, "HEXISTS", "h", "nope")
	h.expect(0, "HEXISTS", "missing", "f")
	// insertion order, as the dense slice keeps it
	h.expect([]any{"f1", "f2", "f3", "f4", "f5"}, "HKEYS", "h")
	h.expect([]any{"x", "v2", "v3b", "v4", ""}, "HVALS", "h")
	h.expect([]any{"f1", "x", "f2", "v2", "f3", "v3b", "f4", "v4", "f5", ""}, "HGETALL", "h")
	h.expect([]any{}, "HKEYS", "missing")
	h.expect([]any{}, "HVALS", "missing")
	h.expect([]any{}, "HGETALL", "missing")
	// HDEL swaps the last entry into the hole
	h.expect(2, "HDEL", "h", "f2", "nope", "f2", "f4")
	h.expect([]any{"f1", "f5", "f3"}, "HKEYS", "h")
	h.expect(0, "HDEL", "missing", "f")
	h.expect(3, "HDEL", "h", "f1", "f3", "f5", "f9")
	h.expect(0, "EXISTS", "h")
	h.expect(Status("none"), "TYPE", "h")
	h.expect(Status("hash"), "TYPE", "h2")
	// binary-safe fields and values
	h.expect(1, "HSET", "b", "\x00\r\n", "\xff\x00")
	h.expect("\xff\x00", "HGET", "b", "\x00\r\n")
}

func TestHashErrors(t *testing.T) {
	h := newHarness(t)
	h.expect(Status("OK"), "SET", "str", "x")
	h.expect(1, "HSET", "h", "f", "v")
	for _, args := range [][]string{
		{"HSET", "str", "f", "v"}, {"HMSET", "str", "f", "v"}, {"HSETNX", "str", "f", "v"},
		{"HGET", "str", "f"}, {"HMGET", "str", "f"}, {"HDEL", "str", "f"}, {"HLEN", "str"},
		{"HSTRLEN", "str", "f"}, {"HEXISTS", "str", "f"}, {"HKEYS", "str"}, {"HVALS", "str"},
		{"HGETALL", "str"}, {"HINCRBY", "str", "f", "1"}, {"HINCRBYFLOAT", "str", "f", "1"},
		{"HRANDFIELD", "str"}, {"HRANDFIELD", "str", "1"}, {"HRANDFIELD", "str", "0"},
		{"HRANDFIELD", "str", "-1", "WITHVALUES"}, {"HSCAN", "str", "0"}, {"HSCAN", "str", "0", "COUNT", "0"},
	} {
		h.expectErr(ErrWrongType, args...)
	}
	h.expect("x", "GET", "str")
	for _, args := range [][]string{
		{"HSET", "h"}, {"HSET", "h", "f"}, {"HSET", "h", "f", "v", "g"}, {"HMSET", "h", "f", "v", "g"},
		{"HSETNX", "h", "f"}, {"HGET", "h"}, {"HMGET", "h"}, {"HDEL", "h"}, {"HLEN"}, {"HLEN", "h", "x"},
		{"HSTRLEN", "h"}, {"HEXISTS", "h"}, {"HKEYS"}, {"HVALS", "h", "x"}, {"HGETALL"},
		{"HINCRBY", "h", "f"}, {"HINCRBYFLOAT", "h", "f", "1", "2"}, {"HRANDFIELD"}, {"HSCAN", "h"},
	} {
		h.expect(Err(WrongArgs(strings.ToLower(args[0]))), args...)
	}
	// the argument is checked before the type of the key, as in Redis
	h.expectErr(ErrNotInteger, "HINCRBY", "str", "f", "x")
	h.expectErr(ErrNotFloat, "HINCRBYFLOAT", "str", "f", "x")
	h.expectErr("ERR value is NaN or Infinity", "HINCRBYFLOAT", "str", "f", "inf")
	h.expectErr(ErrNotInteger, "HRANDFIELD", "str", "x")
	h.expect(Err("ERR value is out of range"), "HRANDFIELD", "str", "4611686018427387904", "WITHVALUES")
}

func TestHashIncr(t *testing.T) {
	h := newHarness(t)
	h.expect(5, "HINCRBY", "h", "n", "5")
	h.expect(-3, "HINCRBY", "h", "n", "-8")
	h.expect("-3", "HGET", "h", "n")
	h.expect(Err(ErrOverflow), "HINCRBY", "h", "n", "-9223372036854775806")
	h.expect(-9223372036854775808, "HINCRBY", "h", "n", "-9223372036854775805")
	h.expect(1, "HSET", "h", "big", "9223372036854775807")
	h.expect(Err(ErrOverflow), "HINCRBY", "h", "big", "1")
	h.expect(9223372036854775807, "HINCRBY", "h", "big", "0")
	for _, bad := range []string{"x", "", "1.5", " 1", "012", "+1", "-0", "99999999999999999999"} {
		h.do("HSET", "h", "bad", bad)
		h.expect(Err("ERR hash value is not an integer"), "HINCRBY", "h", "bad", "1")
	}
	for _, bad := range []string{"x", "1.0", "+1", "-0", "01", "9223372036854775808"} {
		h.expect(Err(ErrNotInteger), "HINCRBY", "h", "n", bad)
	}
	h.expect(0, "EXISTS", "h2")
	h.expectErr(ErrNotInteger, "HINCRBY", "h2", "f", "x")
	h.expect(0, "EXISTS", "h2") // a failed increment creates nothing

	// HINCRBYFLOAT: long double arithmetic and Redis's %.17Lf formatting
	for _, c := range []struct{ field, incr, want string }{
		{"f", "1.5", "1.5"},
		{"f", "1.0e3", "1001.5"},
		{"f", "-1001.5", "0"},
		{"g", "0.1", "0.1"},
		{"g", "0.2", "0.3"},
		{"x", "0x10", "16"},
		{"x", "0x1.8p1", "19"},
		{"x", "0X1P-2", "19.25"},
		{"y", ".5", "0.5"},
		{"y", "5.", "5.5"},
		{"y", "+1", "6.5"},
		{"z", "-0", "0"},
		{"t", "1e-400", "0"},
		{"u", "1e-4950", "0"}, // subnormal long double, still accepted
		{"v", "1e400", "10000000000000000000281880683947586514586453433629052038625910693539685534008629862039363994848324160522094053927317616200295822777259255734023828976593340661017797447434546173917862448116674971723778943824391593338047470675026246684401359237513603830343735485505244955964979021825038280091068414947402456898653040951017512658092615827588920183472511643316591362664138176309734806343732497430221946880"},
		{"w", "3", "3"},
		{"w", "1e17", "100000000000000003"},
	} {
		h.expect(c.want, "HINCRBYFLOAT", "fl", c.field, c.incr)
		h.expect(c.want, "HGET", "fl", c.field)
	}
	for _, bad := range []string{"x", "", "1e", "0b1", "0x", "nan", "-nan", "1_0", " 1", "1e5000", "1e-5000", "1e-4960", "1e4933", strings.Repeat("1", 5120)} {
		h.expect(Err(ErrNotFloat), "HINCRBYFLOAT", "fl", "f", bad)
	}
	for _, inf := range []string{"inf", "-inf", "INF", "+Infinity", "-INFINITY"} {
		h.expect(Err("ERR value is NaN or Infinity"), "HINCRBYFLOAT", "fl", "f", inf)
	}
	for _, bad := range []string{"abc", "1e-5000", "nan", strings.Repeat("1", 5120)} {
		h.do("HSET", "fl", "bad", bad)
		h.expect(Err("ERR hash value is not a float"), "HINCRBYFLOAT", "fl", "bad", "1")
	}
	for _, inf := range []string{"inf", "-Infinity", "INF"} {
		h.do("HSET", "fl", "bad", inf)
		h.expect(Err("ERR increment would produce NaN or Infinity"), "HINCRBYFLOAT", "fl", "bad", "1")
	}
	h.expect(0, "HSET", "fl", "bad", "1e4932")
	h.expect(Err("ERR increment would produce NaN or Infinity"), "HINCRBYFLOAT", "fl", "bad", "1e4932")
	h.expect(0, "HSET", "fl", "bad", "0x10")
	h.expect("17", "HINCRBYFLOAT", "fl", "bad", "1")
	h.expect(0, "HSET", "fl", "bad", "1e3")
	h.expect(Err("ERR hash value is not an integer"), "HINCRBY", "fl", "bad", "1")
	h.expect("1001", "HINCRBYFLOAT", "fl", "bad", "1")
	h.expect(1002, "HINCRBY", "fl", "bad", "1")
	// a long but valid value (1e4932 printed in full is 4933 digits)
	long := h.do("HINCRBYFLOAT", "fl", "huge", "1e4932").(string)
	if len(long) != 4933 {
		t.Fatalf("1e4932 printed in %d chars", len(long))
	}
	h.expect(long, "HINCRBYFLOAT", "fl", "huge", "0")
}

func TestHashRandField(t *testing.T) {
	h := newHarness(t)
	h.expect(3, "HSET", "h", "f1", "v1", "f2", "v2", "f3", "v3")
	fields := []string{"f1", "f2", "f3"}
	pairs := []string{"f1=v1", "f2=v2", "f3=v3"}

	one := h.do("HRANDFIELD", "h").(string)
	if one != "f1" && one != "f2" && one != "f3" {
		t.Fatalf("HRANDFIELD gave %q", one)
	}
	h.expect(nil, "HRANDFIELD", "missing")
	h.expect([]any{}, "HRANDFIELD", "missing", "3")
	h.expect([]any{}, "HRANDFIELD", "missing", "-3", "WITHVALUES")
	h.expect([]any{}, "HRANDFIELD", "h", "0")
	h.expect([]any{}, "HRANDFIELD", "h", "0", "withvalues")
	hsEqual(t, "count >= size", hsSorted(t, h.do("HRANDFIELD", "h", "3")), fields)
	hsEqual(t, "count > size", hsSorted(t, h.do("HRANDFIELD", "h", "100")), fields)
	hsEqual(t, "withvalues", hsPairs(t, h.do("HRANDFIELD", "h", "10", "WITHVALUES")), pairs)
	for count := 1; count <= 2; count++ {
		got := hsSorted(t, h.do("HRANDFIELD", "h", strconv.Itoa(count)))
		if len(got) != count || (count == 2 && got[0] == got[1]) {
			t.Fatalf("HRANDFIELD h %d: %q", count, got)
		}
		got = hsPairs(t, h.do("HRANDFIELD", "h", strconv.Itoa(count), "WITHVALUES"))
		if len(got) != count {
			t.Fatalf("HRANDFIELD h %d WITHVALUES: %q", count, got)
		}
		for _, p := range got {
			f, v, _ := strings.Cut(p, "=")
			if "v"+f[1:] != v {
				t.Fatalf("pair %q", p)
			}
		}
	}
	// negative: exactly |count| fields, possibly repeated
	rep := hsSorted(t, h.do("HRANDFIELD", "h", "-20"))
	if len(rep) != 20 {
		t.Fatalf("HRANDFIELD -20: %d", len(rep))
	}
	if got := hsPairs(t, h.do("HRANDFIELD", "h", "-7", "WITHVALUES")); len(got) != 7 {
		t.Fatalf("HRANDFIELD -7 WITHVALUES: %q", got)
	}

	h.expect(Err(ErrSyntax), "HRANDFIELD", "h", "1", "WITHVALUE")
	h.expect(Err(ErrSyntax), "HRANDFIELD", "h", "1", "WITHVALUES", "x")
	h.expect(Err(ErrSyntax), "HRANDFIELD", "missing", "x", "WITHVALUE")
	h.expect(Err(ErrNotInteger), "HRANDFIELD", "h", "x")
	h.expect(Err(ErrNotInteger), "HRANDFIELD", "h", "9223372036854775808")
	h.expect(Err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"), "HRANDFIELD", "h", "-9223372036854775808")
	h.expect(Err("ERR value is out of range"), "HRANDFIELD", "h", "4611686018427387904", "WITHVALUES")
	h.expect(Err("ERR value is out of range"), "HRANDFIELD", "h", "-4611686018427387904", "WITHVALUES")
	hsEqual(t, "huge count", hsSorted(t, h.do("HRANDFIELD", "h", "4611686018427387904")), fields)
	hsEqual(t, "huge count", hsSorted(t, h.do("HRANDFIELD", "h", "9223372036854775807")), fields)
	// repetition beyond our bound is refused instead of building a reply of 2^62 elements
	h.expect(Err("ERR value is out of range"), "HRANDFIELD", "h", "-9223372036854775807")
	h.expect([]any{}, "HRANDFIELD", "missing", "-9223372036854775807")

	// RESP2 shapes: a flat array; RESP3: [field, value] pairs
	hsExpectMatch(h, `^\*2\r\n\$2\r\nf(\d)\r\n\$2\r\nv(\d)\r\n$`, "HRANDFIELD", "h", "-1", "WITHVALUES")
	h.resp3 = true
	hsExpectMatch(h, `^\*1\r\n\*2\r\n\$2\r\nf(\d)\r\n\$2\r\nv(\d)\r\n$`, "HRANDFIELD", "h", "-1", "WITHVALUES")
	hsExpectRaw(h, "*3\r\n*2\r\n$2\r\nf1\r\n$2\r\nv1\r\n*2\r\n$2\r\nf2\r\n$2\r\nv2\r\n*2\r\n$2\r\nf3\r\n$2\r\nv3\r\n", "HRANDFIELD", "h", "3", "WITHVALUES")
	if got := h.raw("HRANDFIELD", "h", "2", "WITHVALUES"); !strings.HasPrefix(got, "*2\r\n*2\r\n") || strings.Count(got, "*2\r\n") != 3 {
		t.Fatalf("RESP3 HRANDFIELD 2 WITHVALUES: %q", got)
	}
	hsExpectRaw(h, "*0\r\n", "HRANDFIELD", "missing", "2", "WITHVALUES")
	hsExpectRaw(h, "_\r\n", "HRANDFIELD", "missing")
	hsExpectMatch(h, `^\*2\r\n(\$2\r\nf\d\r\n){2}$`, "HRANDFIELD", "h", "-2")
	hsExpectMatch(h, `^\*2\r\n(\*2\r\n\$2\r\nf\d\r\n\$2\r\nv\d\r\n){2}$`, "HRANDFIELD", "h", "-2", "WITHVALUES")
	h.resp3 = false
}

// Random choices depend only on the entries applied: two stores fed the same commands
// pick the same fields and members when applying (reads may choose differently).
func TestHashSetRandomDeterminism(t *testing.T) {
	run := func() []any {
		h := newHarness(t)
		var out []any
		for i := 0; i < 60; i++ {
			h.do("HSET", "h", "f"+strconv.Itoa(i), strconv.Itoa(i))
			h.do("SADD", "s", "m"+strconv.Itoa(i))
			if i%7 == 3 {
				h.do("HDEL", "h", "f"+strconv.Itoa(i/2))
				h.do("SREM", "s", "m"+strconv.Itoa(i/3))
			}
		}
		for i := 0; i < 8; i++ {
			out = append(out, h.do("SPOP", "s"), h.do("SPOP", "s", "3"))
			out = append(out, hsTx(h,
				[]string{"SRANDMEMBER", "s"}, []string{"SRANDMEMBER", "s", "5"}, []string{"SRANDMEMBER", "s", "-5"},
				[]string{"HRANDFIELD", "h"}, []string{"HRANDFIELD", "h", "4", "WITHVALUES"}, []string{"HRANDFIELD", "h", "-4"},
				[]string{"HRANDFIELD", "h", "40"}, []string{"SPOP", "s"},
			))
			out = append(out, h.applied("SRANDMEMBER", "s", "3"), h.applied("HRANDFIELD", "h", "-3", "WITHVALUES"))
		}
		out = append(out, h.do("SMEMBERS", "s"), h.do("HGETALL", "h"))
		return out
	}
	a, b := run(), run()
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("two identical runs differ:\n%v\n%v", a, b)
	}
	// and the choices are not constant: the applier's stream changes with the entry
	seen := map[any]bool{}
	for i := 0; i < 8; i++ {
		seen[a[5*i+2].([]any)[0]] = true
	}
	if len(seen) < 3 {
		t.Fatalf("SRANDMEMBER picks look constant: %v", seen)
	}
}

func TestHashScan(t *testing.T) {
	h := newHarness(t)
	h.expect(4, "HSET", "h", "a1", "1", "a2", "2", "b1", "3", "c", "4")
	h.expect([]any{"0", []any{"a1", "1", "a2", "2", "b1", "3", "c", "4"}}, "HSCAN", "h", "0")
	h.expect([]any{"0", []any{"a1", "1", "a2", "2", "b1", "3", "c", "4"}}, "HSCAN", "h", "12345", "COUNT", "1")
	h.expect([]any{"0", []any{"a1", "1", "a2", "2"}}, "HSCAN", "h", "0", "MATCH", "a*")
	h.expect([]any{"0", []any{"b1", "3"}}, "HSCAN", "h", "0", "match", "?1", "count", "100", "MATCH", "b*")
	h.expect([]any{"0", []any{}}, "HSCAN", "h", "0", "MATCH", "zz*")
	h.expect([]any{"0", []any{}}, "HSCAN", "missing", "0")
	h.expect([]any{"0", []any{}}, "HSCAN", "missing", "0", "COUNT", "0") // options parsed after the lookup, as in Redis
	h.expect(Err("ERR invalid cursor"), "HSCAN", "h", "x")
	h.expect([]any{"0", []any{}}, "HSCAN", "missing", "-1") // strtoul takes a sign, as Redis does
	h.expect(Err(ErrSyntax), "HSCAN", "h", "0", "COUNT", "0")
	h.expect(Err(ErrSyntax), "HSCAN", "h", "0", "MATCH")
	h.expect(Err(ErrSyntax), "HSCAN", "h", "0", "TYPE", "string")
	h.expect(Err(ErrSyntax), "HSCAN", "h", "0", "NOVALUES")
	h.expect(Err(ErrNotInteger), "HSCAN", "h", "0", "COUNT", "x")
}

func TestHashResp3Shapes(t *testing.T) {
	h := newHarness(t)
	h.expect(2, "HSET", "h", "a", "1", "b", "2")
	hsExpectRaw(h, "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n", "HGETALL", "h")
	hsExpectRaw(h, "*0\r\n", "HGETALL", "missing")
	hsExpectRaw(h, "$-1\r\n", "HGET", "h", "x")
	h.resp3 = true
	hsExpectRaw(h, "%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n", "HGETALL", "h")
	hsExpectRaw(h, "%0\r\n", "HGETALL", "missing")
	hsExpectRaw(h, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "HKEYS", "h")
	hsExpectRaw(h, "*0\r\n", "HVALS", "missing")
	hsExpectRaw(h, "*2\r\n$1\r\n1\r\n_\r\n", "HMGET", "h", "a", "x")
	hsExpectRaw(h, "_\r\n", "HGET", "h", "x")
	hsExpectRaw(h, "*2\r\n$1\r\n0\r\n*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n", "HSCAN", "h", "0")
	hsExpectRaw(h, "$3\r\n1.5\r\n", "HINCRBYFLOAT", "h", "c", "1.5")
}

func TestHashTTLAndVersions(t *testing.T) {
	h := newHarness(t)
	h.expect(1, "HSET", "h", "a", "1")
	h.expect(1, "PEXPIRE", "h", "1000")
	h.expect(1, "HSET", "h", "b", "2") // changing a hash keeps its TTL
	h.expect(1000, "PTTL", "h")
	h.expect(3, "HINCRBY", "h", "b", "1")
	h.expect(1000, "PTTL", "h")
	h.now += 1000
	h.expect(0, "HLEN", "h")
	h.expect(1, "HSET", "h", "x", "y") // the expired hash is gone: a new one without TTL
	h.expect(-1, "PTTL", "h")
	h.expect([]any{"x"}, "HKEYS", "h")

	h.expectVersionStays("h", [][]string{
		{"HSETNX", "h", "x", "z"}, {"HDEL", "h", "nope"}, {"HGET", "h", "x"}, {"HGETALL", "h"},
		{"HRANDFIELD", "h", "-5"}, {"HSCAN", "h", "0"}, {"HINCRBY", "h", "x", "1"},
		{"HINCRBYFLOAT", "h", "x", "1"}, {"HINCRBY", "h", "n", "x"},
	})
	h.expectVersionMoves("h", [][]string{
		{"HSET", "h", "x", "y"}, {"HMSET", "h", "n", "1"}, {"HSETNX", "h", "m", "1"},
		{"HINCRBY", "h", "n", "1"}, {"HINCRBYFLOAT", "h", "n", "1.5"}, {"HDEL", "h", "m"},
	})
}

func TestHashCloneIndependent(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 50; i++ {
		h.do("HSET", "src", "f"+strconv.Itoa(i), "v"+strconv.Itoa(i))
	}
	want := hsPairs(t, h.do("HGETALL", "src"))
	h.expect(1, "COPY", "src", "dst")
	h.expect(1, "HSET", "dst", "new", "x")
	h.expect(0, "HSET", "dst", "f1", "changed")
	h.expect(2, "HDEL", "dst", "f2", "f3")
	hsEqual(t, "src after changes to its copy", hsPairs(t, h.do("HGETALL", "src")), want)
	h.expect(1, "HDEL", "src", "f10")
	h.expect(49, "HLEN", "dst")
	h.expect("changed", "HGET", "dst", "f1")

	a := newHashColl(0)
	a.set("x", "1")
	a.set("y", "2")
	b := a.clone().(*hashColl)
	a.set("x", "9")
	a.del([]byte("y"))
	a.set("z", "3")
	if v, _ := b.get([]byte("x")); v != "1" || b.Len() != 2 {
		t.Fatalf("clone changed with its original: %+v", b.entries)
	}
	hashCheck(t, a)
	hashCheck(t, b)
}

// hashCheck verifies the invariants: the index maps each field to its slot, and nothing else.
func hashCheck(t *testing.T, h *hashColl) {
	t.Helper()
	if len(h.index) != len(h.entries) {
		t.Fatalf("index has %d fields, slice %d", len(h.index), len(h.entries))
	}
	for i, e := range h.entries {
		if j, ok := h.index[e.field]; !ok || j != i {
			t.Fatalf("field %q at %d indexed at %d (%v)", e.field, i, j, ok)
		}
	}
}

func TestHashEncoding(t *testing.T) {
	h := newHarness(t)
	h.expect(4, "HSET", "h", "a", "1", "", "empty field", "\x00\xff", "", "long", strings.Repeat("x", 300))
	h.expect(1, "HDEL", "h", "a")
	it := h.rawItem("h")
	enc := it.coll.appendTo([]byte("prefix"))
	if !bytes.HasPrefix(enc, []byte("prefix")) {
		t.Fatal("appendTo overwrote dst")
	}
	enc = enc[len("prefix"):]
	dec, err := collectionDecoders[TypeHash](enc)
	if err != nil {
		t.Fatal(err)
	}
	hd := dec.(*hashColl)
	hashCheck(t, hd)
	if !reflect.DeepEqual(hd.entries, it.coll.(*hashColl).entries) {
		t.Fatalf("decoded %q, want %q", hd.entries, it.coll.(*hashColl).entries)
	}
	if again := dec.appendTo(nil); !bytes.Equal(again, enc) {
		t.Fatalf("re-encoding differs:\n%q\n%q", again, enc)
	}
	if dec.memUsage() < 300 || it.coll.memUsage() < 300 {
		t.Fatalf("memUsage %d %d", dec.memUsage(), it.coll.memUsage())
	}
	// the exact format: count, then length-prefixed field and value
	want := binary.AppendUvarint(nil, 2)
	want = append(binary.AppendUvarint(want, 1), 'a')
	want = append(binary.AppendUvarint(want, 2), "bc"...)
	want = binary.AppendUvarint(want, 0)
	want = append(binary.AppendUvarint(want, 1), 'z')
	x := newHashColl(0)
	x.set("a", "bc")
	x.set("", "z")
	if got := x.appendTo(nil); !bytes.Equal(got, want) {
		t.Fatalf("appendTo %q, want %q", got, want)
	}

	for _, bad := range [][]byte{
		nil,
		{},
		{0},                                 // an empty hash never exists
		{1},                                 // an entry missing
		{1, 1, 'a'},                         // a value missing
		{1, 1, 'a', 2, 'b'},                 // a value cut short
		{1, 1, 'a', 1, 'b', 'c'},            // trailing bytes
		{2, 1, 'a', 1, 'b', 1, 'a', 1, 'c'}, // a duplicate field
		{2, 1, 'a', 0},                      // fewer entries than announced
		{0x80},                              // a truncated count
		{1, 0x80, 0},                        // a truncated length
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, // a count of 2^64-1
		{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 'a'},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, // varint overflow
	} {
		if c, err := decodeHash(bad); err != ErrCorrupt || c != nil {
			t.Errorf("decodeHash(%q) = %v, %v", bad, c, err)
		}
	}
	huge := binary.AppendUvarint(nil, 1<<40)
	huge = append(huge, make([]byte, 100)...)
	if allocs := testing.AllocsPerRun(10, func() { decodeHash(huge) }); allocs > 1 {
		t.Fatalf("%v allocations for a corrupt count", allocs)
	}
}

// Read-only commands leave the hash byte for byte as it was.
func TestHashReadsDoNotModify(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 30; i++ {
		h.do("HSET", "h", "f"+strconv.Itoa(i), strconv.Itoa(i))
	}
	h.do("HDEL", "h", "f3", "f17")
	coll := h.rawItem("h").coll
	before := coll.appendTo(nil)
	ver := h.s.KeyVersion(0, []byte("h"), h.now)
	for _, args := range [][]string{
		{"HGET", "h", "f1"}, {"HMGET", "h", "f1", "x"}, {"HLEN", "h"}, {"HSTRLEN", "h", "f1"},
		{"HEXISTS", "h", "f1"}, {"HKEYS", "h"}, {"HVALS", "h"}, {"HGETALL", "h"},
		{"HRANDFIELD", "h"}, {"HRANDFIELD", "h", "5"}, {"HRANDFIELD", "h", "-50", "WITHVALUES"},
		{"HRANDFIELD", "h", "25"}, {"HSCAN", "h", "0", "MATCH", "f1*"},
	} {
		h.do(args...)
		hsTx(h, args)
	}
	if !bytes.Equal(coll.appendTo(nil), before) || h.s.KeyVersion(0, []byte("h"), h.now) != ver {
		t.Fatal("a read changed the hash")
	}
}

// Hashes written in the same order are identical, byte for byte, in two stores.
func TestHashModelAndOrder(t *testing.T) {
	h1, h2 := newHarness(t), newHarness(t)
	model := map[string]string{}
	r := rng{state: 42}
	for i := 0; i < 3000; i++ {
		f := "f" + strconv.Itoa(r.intn(200))
		switch r.intn(4) {
		case 0, 1:
			v := strconv.Itoa(i)
			model[f] = v
			h1.do("HSET", "h", f, v)
			h2.do("HSET", "h", f, v)
		case 2:
			delete(model, f)
			h1.do("HDEL", "h", f)
			h2.do("HDEL", "h", f)
		case 3:
			want := any(nil)
			if v, ok := model[f]; ok {
				want = v
			}
			h1.expect(want, "HGET", "h", f)
		}
	}
	var pairs []string
	for f, v := range model {
		pairs = append(pairs, f+"="+v)
	}
	sort.Strings(pairs)
	hsEqual(t, "HGETALL vs model", hsPairs(t, h1.do("HGETALL", "h")), pairs)
	a := h1.rawItem("h").coll
	b := h2.rawItem("h").coll
	hashCheck(t, a.(*hashColl))
	if !bytes.Equal(a.appendTo(nil), b.appendTo(nil)) {
		t.Fatal("the same writes gave two different hashes")
	}
}

func FuzzDecodeHash(f *testing.F) {
	x := newHashColl(0)
	for i, e := range []string{"a", "", "hello", strings.Repeat("z", 200)} {
		x.set(e, strconv.Itoa(i))
	}
	f.Add(x.appendTo(nil))
	f.Add([]byte{1, 0, 0})
	f.Add([]byte{0})
	f.Add([]byte{2, 1, 'a', 0, 1, 'a', 0})
	f.Add([]byte{0x80, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeHash(b)
		if err != nil {
			if err != ErrCorrupt || c != nil {
				t.Fatalf("decodeHash: %v, %v", c, err)
			}
			return
		}
		h := c.(*hashColl)
		if h.Len() == 0 || 2*h.Len() > len(b) {
			t.Fatalf("decoded %d entries from %d bytes", h.Len(), len(b))
		}
		hashCheck(t, h)
		again, err := decodeHash(c.appendTo(nil))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again.(*hashColl).entries, h.entries) {
			t.Fatal("decode(encode(x)) != x")
		}
		if cl := c.clone(); !bytes.Equal(cl.appendTo(nil), c.appendTo(nil)) || c.memUsage() <= 0 {
			t.Fatal("clone or memUsage")
		}
	})
}
