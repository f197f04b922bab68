package kvstore

import (
	"strconv"
	"strings"
	"testing"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// TestTableGuardsKnowTheArrayPart: the guards find gopher-lua's array part and read its
// length, trailing nils included (an upgrade of gopher-lua that moves it fails here, not
// in a script), and border answers as Lua 5.1's `#` over it.
func TestTableGuardsKnowTheArrayPart(t *testing.T) {
	if ltableArray < 0 {
		t.Fatal("gopher-lua's LTable has no array part of []LValue: the table guards cannot work")
	}
	tb := &lua.LTable{}
	for i := 1; i <= 10; i++ {
		tb.RawSetInt(i, lua.LNumber(i))
	}
	if n := arrayLen(tb); n != 10 || border(tb) != 10 {
		t.Fatalf("arrayLen %d border %d, want 10 10", n, border(tb))
	}
	for i := 10; i > 3; i-- {
		tb.RawSetInt(i, lua.LNil) // gopher-lua keeps the slots
	}
	if n := arrayLen(tb); n != 10 || border(tb) != 3 || tb.Len() != 3 {
		t.Fatalf("after pops: arrayLen %d border %d Len %d, want 10 3 3", n, border(tb), tb.Len())
	}
	// every answer is a border (t[n] set or n = 0, and t[n+1] nil), holes or not
	for mask := range 1 << 8 {
		tb := &lua.LTable{}
		for i := range 8 {
			tb.RawSetInt(i+1, lua.LTrue)
		}
		for i := range 8 {
			if mask&(1<<i) == 0 {
				tb.RawSetInt(i+1, lua.LNil)
			}
		}
		n := border(tb)
		if (n > 0 && tb.RawGetInt(n) == lua.LNil) || tb.RawGetInt(n+1) != lua.LNil {
			t.Fatalf("mask %08b: %d is not a border", mask, n)
		}
	}
}

// TestTablePaddingIsCharged: every way a script can make gopher-lua pad a table's array
// part up to a large key (an assignment with a variable or constant key, a multiple
// assignment, a constructor, a __newindex table, rawset, table.insert) charges the
// padding to the budget, so that one that would allocate past it fails as out of
// instructions on every replica, before it allocates; small paddings work as before.
func TestTablePaddingIsCharged(t *testing.T) {
	a, b := replicasWithBudget(t, 1_000_000) // 16 MB of padding
	for _, script := range []string{
		"local t = {} t[4e6] = 1",
		"local t = {} t[4000000] = 1",
		"local t, k = {}, 4e6 t[k] = 1",
		"local t, k, x = {}, 4e6 x, t[k] = 1, 2",
		"local t, k, x = {}, 4e6 t[k], x = 1, 2",
		"local t = {[4e6] = 1}",
		"local k = 4e6 local t = {1, 2, [k] = 3, 4}",
		"local t = {} local p = setmetatable({}, {__newindex = t}) p[4e6] = 1",
		"local t = {} rawset(t, 4e6, 1)",
		"local t = {} table.insert(t, 4e6, 1)",
		"local T = {} for i = 1, 100 do T[i] = {} T[i][100000] = 1 end",
	} {
		failsAfterWrite(t, script, "Script killed after", a, b)
	}
	for _, h := range []*harness{a, b} {
		h.expect("11", "GET", "before") // what ran before stays written
		h.expect(int64(100), "EVAL", "local t = {} t[100] = 1 return #t", "0")
		h.expect(int64(64), "EVAL", "local t = {[64] = 'x'} return #t", "0")
		h.expect(int64(3), "EVAL", "local t = {} rawset(t, 3, 1) table.insert(t, 5, 2) return t[3] + t[5]", "0")
	}
	sameDigests(t, a, b)
}

// TestTableShiftsAreCharged: table.insert and table.remove at the front of a large
// array shift every element after the position, table.sort compares its elements n log
// n times, and table.concat and table.maxn scan the nils at its end, which the budget
// now sees: a loop of them fails instead of running for hours.
func TestTableShiftsAreCharged(t *testing.T) {
	h, _ := replicasWithBudget(t, 2_000_000)
	for _, script := range []string{
		"local t = {} for i = 1, 100000 do t[i] = i end for i = 1, 1000 do table.insert(t, 1, i) end",
		"local t = {} for i = 1, 100000 do t[i] = i end for i = 1, 1000 do table.remove(t, 1) end",
		// sorts' comparisons: 1.7M for 100,000 numbers, each charged
		"local t = {} for i = 1, 100000 do t[i] = (i * 7919) % 100003 end table.sort(t) table.sort(t, function(a, b) return a > b end)",
		// 100,000 nils at the end of a table, scanned at every call
		"local t = {} t[100000] = 1 t[100000] = nil for i = 1, 100 do table.concat(t) end",
		"local t = {} t[100000] = 1 t[100000] = nil for i = 1, 100 do table.maxn(t) end",
	} {
		failsAfterWrite(t, script, "Script killed after", h)
	}
	h.expect(int64(3), "EVAL", "local t = {1, 2} table.insert(t, 1, 0) table.remove(t, 2) table.insert(t, 9) return #t", "0")
	h.expect([]any{"ab", int64(2)}, "EVAL", "local t = {} t[100] = 1 t[100] = nil t[1], t[2] = 'a', 'b' return {table.concat(t), table.maxn(t)}", "0")
}

// TestLengthOfPoppedTables: `#` after the stack idiom `t[#t] = nil` answers the length
// without scanning the nils gopher-lua keeps (it took 14.8 s for 40,000 pops), and
// table.insert and table.getn agree with it; strings and __len are as before, and the
// error is Lua's.
func TestLengthOfPoppedTables(t *testing.T) {
	h := newHarness(t)
	h.expect(int64(0), "EVAL", "local t = {} for i = 1, 200000 do t[#t + 1] = i end while #t > 0 do t[#t] = nil end return #t", "0")
	h.expect([]any{int64(3), int64(3), int64(4), int64(40)}, "EVAL",
		"local t = {1, 2, 3, 4, 5} t[5] = nil t[4] = nil local a, b = #t, table.getn(t) table.insert(t, 40) return {a, b, #t, t[4]}", "0")
	h.expect([]any{int64(3), int64(7), int64(2)}, "EVAL",
		"local mt = {__len = function() return 7 end} return {#'abc', #setmetatable({}, mt), #{'a', 'b', nil}}", "0")
	h.expectErr("ERR user_script:2: attempt to get length of a number value", "EVAL", "local x = 5\nreturn #(x + 1)", "0")
}

// TestGuardedAssignmentsMeanWhatTheyDid: assignments through the guard keep Lua's
// meaning: __newindex functions and tables, the evaluation order of multiple
// assignments, values of calls and varargs, the VM's errors and their lines.
func TestGuardedAssignmentsMeanWhatTheyDid(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		script string
		want   any
	}{
		{"local log = {} local p = setmetatable({}, {__newindex = function(t, k, v) log[#log + 1] = k .. '=' .. v end}) local k = 'a' p[k] = 1 p[2] = 'b' return log", []any{"a=1", "2=b"}},
		{"local inner = {} local p = setmetatable({}, {__newindex = inner}) local k = 3 p[k] = 'x' return {rawget(p, 3) == nil, inner[3]}", []any{int64(1), "x"}},
		{"local a, i = {}, 3 i, a[i] = i + 1, 20 return {i, a[3], a[4] == nil}", []any{int64(4), int64(20), int64(1)}},
		{"local t, k = {}, 'x' local old = t t, t[k] = {}, 1 return {old.x, t.x == nil}", []any{int64(1), int64(1)}},
		{"local function f() return 'p', 'q' end local t, k = {}, 'k' t[k] = f() return {t.k}", []any{"p"}},
		{"local function f(...) local t, k = {}, 1 t[k] = ... return #t .. t[1] end return f('v', 'w')", "1v"},
		{"local function f() return 1, 2 end local t, k, x = {}, 1 x, t[k] = f() return {x, t[1]}", []any{int64(1), int64(2)}},
		{"local k = 5 local t = {'a', 'b', [k] = 'e', 'c'} return {t[3], t[5]}", []any{"c", "e"}},
		{"local k = 'n' local function f() return 1, 2, 3 end local t = {[k] = 0, f()} return #t + t.n", int64(3)},
	} {
		h.expect(c.want, "EVAL", c.script, "0")
	}
	for _, c := range []struct{ script, want string }{
		{"local x\nlocal k = 1\nx[k] = 2", "ERR user_script:3: attempt to index local 'x' (a nil value)"},
		{"local t, k = {}, nil\n\nt[k] = 1", "ERR user_script:3: table index is nil"},
		{"local t, k = {}, 0/0\nt[k] = 1", "ERR user_script:2: table index is NaN"},
		{"local k = nil\nlocal t = {[k] = 1}", "ERR user_script:2: table index is nil"},
	} {
		got, ok := h.do("EVAL", c.script, "0").(Err)
		if !ok || !strings.HasPrefix(string(got), c.want) {
			t.Errorf("%q: %v, want %q", c.script, got, c.want)
		}
	}
}

// TestLongStringComparisonsAreCharged: comparing two long strings reads their bytes in
// one instruction, so a loop of them ran for days within the budget; every operator now
// charges what it reads, and fails the script as out of instructions on every replica.
// A comparison with a literal, which reads no more than the literal, is not charged.
func TestLongStringComparisonsAreCharged(t *testing.T) {
	a, b := replicasWithBudget(t, 1_000_000)
	// two distinct equal strings of 1 MB (their making costs 2 x 65,536 instructions)
	const mk = "local s = string.rep('x', 2^20) local u = s .. '' local n = 0 "
	for _, op := range []string{"==", "~=", "<", "<=", ">", ">="} {
		failsAfterWrite(t, mk+"for i = 1, 100 do if s "+op+" u then n = n + 1 end end", "Script killed after", a, b)
	}
	for _, h := range []*harness{a, b} {
		h.expect(int64(100), "EVAL", mk+"for i = 1, 100 do if s ~= 'x' then n = n + 1 end end return n", "0")
		h.expect([]any{int64(1), nil, int64(1)}, "EVAL", "local s, u = 'ab', 'ac' return {s < u, s == u, s ~= u}", "0")
	}
	sameDigests(t, a, b)
}

// TestScriptRepliesAreBounded: a reply that nests deeper than Lua's stack (a table that
// holds itself) ends in Redis's "reached lua stack limit" instead of overflowing the Go
// stack, a fatal error on every replica; one that shares tables so that it would write
// a billion values costs its values against the budget and fails as out of
// instructions, as cjson.encode of it does.
func TestScriptRepliesAreBounded(t *testing.T) {
	a, b := replicasWithBudget(t, 2_000_000)
	for _, h := range []*harness{a, b} {
		got := h.do("EVAL", "local t = {} t[1] = t return t", "0")
		depth := 0
		for {
			arr, ok := got.([]any)
			if !ok {
				break
			}
			if len(arr) != 1 {
				t.Fatalf("level %d: %d elements", depth, len(arr))
			}
			got, depth = arr[0], depth+1
		}
		if depth != luaReplyMaxDepth || got != Err("ERR reached lua stack limit") {
			t.Fatalf("a cycle replied %d arrays and then %v", depth, got)
		}
	}
	for _, script := range []string{
		"local t = {} for i = 1, 30 do t = {t, t} end return t",
		"local t = {} for i = 1, 30 do t = {t, t} end return cjson.encode(t)",
	} {
		failsAfterWrite(t, script, "Script killed after", a, b)
	}
	sameDigests(t, a, b)
}

// TestPackLibrariesAreBounded: cmsgpack.pack of tables shared at every level (4^16 of
// them), cmsgpack.unpack of a map whose key would pad a table to 2^26, and a loop of
// struct.pack making a MB each fail as out of instructions on every replica instead of
// exhausting the machine, and an array nested past Lua's stack fails with
// lua-cmsgpack's error instead of overflowing Go's.
func TestPackLibrariesAreBounded(t *testing.T) {
	a, b := replicasWithBudget(t, 2_000_000)
	for _, script := range []string{
		"local t = {} for i = 1, 16 do t = {t, t, t, t} end return #cmsgpack.pack(t)",
		"return cmsgpack.unpack(string.char(0x81, 0xce, 0x03, 0xff, 0xff, 0xff, 1))",
		"local f = string.rep('x', 2^20) for i = 1, 100 do struct.pack(f) end",
	} {
		failsAfterWrite(t, script, "Script killed after", a, b)
	}
	failsAfterWrite(t, "return cmsgpack.unpack(string.rep(string.char(0x91), 100000) .. string.char(1))",
		"stack overflow (in function mp_decode_to_lua_array)", a, b)
	for _, h := range []*harness{a, b} {
		h.expect([]any{int64(1), "x", int64(3)}, "EVAL", "local t = cmsgpack.unpack(cmsgpack.pack({1, 'x', {3}})) return {t[1], t[2], t[3][1]}", "0")
	}
	sameDigests(t, a, b)
}

// replicasWithBudget returns two replicas whose scripts run out of instructions after
// budget (restored when t ends).
func replicasWithBudget(t *testing.T, budget int64) (*harness, *harness) {
	saved := scriptMaxInstructions
	t.Cleanup(func() { scriptMaxInstructions = saved })
	scriptMaxInstructions = budget
	return newHarness(t), newHarness(t)
}

// sameDigests fails t unless the replicas hold the same state.
func sameDigests(t *testing.T, a, b *harness) {
	t.Helper()
	if a.s.Digest() != b.s.Digest() {
		t.Fatal("replicas diverged")
	}
}

// TestScriptsSeeNoAddresses: tostring of a table, function or coroutine was its Go
// address, different on every replica, so a script that stored one made the replicas
// diverge. Names now follow the order a script first asks for them; string.format's %s
// and %q refuse what is not a string or a number and extra arguments are ignored, as in
// Lua 5.1 (gopher-lua printed addresses for all three), and %q quotes as Lua's, bounded.
func TestScriptsSeeNoAddresses(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	for _, h := range []*harness{a, b} {
		h.expect(Status("OK"), "EVAL", "local t = {} return redis.call('set', KEYS[1], tostring(t) .. ' ' .. tostring(function() end) .. ' ' .. tostring(coroutine.create(function() end)) .. ' ' .. tostring(t))", "1", "k")
		h.expect("table: 0x00000001 function: 0x00000002 thread: 0x00000003 table: 0x00000001", "GET", "k")
		h.expect("table: 0x00000001", "EVAL", "return tostring({})", "0") // anew for every run
		h.expect("named", "EVAL", "return tostring(setmetatable({}, {__tostring = function() return 'named' end}))", "0")
		h.expect("1 x 2.5 %s", "EVAL", "return string.format('%d %s %s %%s', 1, 'x', 2.5, {})", "0")
		h.expectErr("ERR user_script:1: bad argument #3 to 'format' (string expected, got table)", "EVAL", "return string.format('%5.2f%-3s', 1, {})", "0")
		h.expect(`"a\"\\\0002"`, "EVAL", "return string.format('%q', 'a\"\\\\\\0' .. 2)", "0")
	}
	// %q of a long string of NULs quotes to four times its length: bounded
	defer func(n int) { scriptMaxString = n }(scriptMaxString)
	scriptMaxString = 1 << 14
	failsAfterWrite(t, "return string.format('%q', string.rep('\\0', 2^13))", "not enough memory", a, b)
	sameDigests(t, a, b)
}

// TestTableOrderIsTheSameEverywhere: cjson.encode and cmsgpack.pack list an object's
// members in the order pairs gives (the order keys were first set), where gopher-lua's
// ForEach ranged over Go maps in a random order, different at every call: stored, the
// encodings made the replicas diverge.
func TestTableOrderIsTheSameEverywhere(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	const build = "local t = {} for i = 1, 40 do t['k' .. i] = i t[i * 1000] = i end "
	for _, h := range []*harness{a, b} {
		for i := range 20 {
			k := strconv.Itoa(i)
			h.expect(Status("OK"), "EVAL", build+"return redis.call('set', KEYS[1], cjson.encode(t) .. cmsgpack.pack(t))", "1", "enc"+k)
		}
		h.expect("k1 k2 k3", "EVAL", "local t = {k1 = 1} t.k2 = 2 t.k3 = 3 local s = {} for k in pairs(t) do s[#s + 1] = k end return table.concat(s, ' ')", "0")
	}
	first := a.do("GET", "enc0")
	for i := range 20 {
		if got := a.do("GET", "enc"+strconv.Itoa(i)); got != first {
			t.Fatalf("run %d encoded %q, run 0 %q", i, got, first)
		}
	}
	sameDigests(t, a, b)
}

// TestArgErrorsKnowTheCallFrame: the argument errors are reworded only in the frame of
// the function that raised them, and a method call is told by its caller's code
// (luaargs.go), through fields of LState and its frames that gopher-lua does not
// export; next reads a table's key index. If an upgrade moves them, this fails (and
// the errors keep gopher-lua's words).
func TestArgErrorsKnowTheCallFrame(t *testing.T) {
	if lstateFrame == ^uintptr(0) || !frameFields.ok {
		t.Fatal("LState has no currentFrame pointer, or its frames no Parent, Fn and Pc")
	}
	if !vmLayout.ok {
		t.Fatal("LState has no registers or its frames no LocalBase: runtime errors cannot name values")
	}
	if !upvalueLayout.ok {
		t.Fatal("LState has no uvcache, or Upvalue no next and index: pcall cannot close upvalues")
	}
	if ltableKeys < 0 {
		t.Fatal("LTable has no k2i map: next cannot tell a key it never held")
	}
	L := lua.NewState()
	defer L.Close()
	var inner, outer unsafe.Pointer
	L.SetGlobal("f", L.NewFunction(func(L *lua.LState) int { inner = callFrame(L); return 0 }))
	L.SetGlobal("g", L.NewFunction(func(L *lua.LState) int {
		outer = callFrame(L)
		L.Push(L.GetGlobal("f"))
		L.Call(0, 0)
		if callFrame(L) != outer {
			t.Error("the frame changed after a call returned")
		}
		return 0
	}))
	if err := L.DoString("g()"); err != nil {
		t.Fatal(err)
	}
	if inner == nil || outer == nil || inner == outer {
		t.Fatalf("frames: inner %p, outer %p", inner, outer)
	}
}
