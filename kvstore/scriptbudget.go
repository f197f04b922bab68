package kvstore

import (
	"errors"
	"strconv"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// A script runs on the applier of every member, from the log. One that never ends would
// stop every applier for good, and since its entry stays in the log, a restarted member
// would replay it into the same loop: one `EVAL "while true do end" 0` would end the
// cluster. Redis answers other clients BUSY past lua-time-limit and lets SCRIPT KILL or
// SHUTDOWN NOSAVE end such a script; neither can work here (the script's entry is
// committed, and a kill decided by one member's clock would leave the members apart).
//
// So a script's run is bounded by a count every member reaches at the same instruction:
// past scriptMaxInstructions Lua instructions it fails with scriptBudgetError, as a
// script that raises an error does (what it wrote stays written, as in Redis; a pcall
// cannot catch it for good). gopher-lua runs 25-100M instructions a second here, so
// that is 2-8 s, about Redis's lua-time-limit of 5 s; a script that calls redis.call a
// million times spends some 20M. The count is the same on every member only if they run
// the same gopher-lua: a rolling upgrade to another version of it could split them over
// a script that runs out. (A variable: tests lower it.)
var scriptMaxInstructions int64 = 200_000_000

// scriptBudgetError is the error a script that runs out of instructions raises.
func scriptBudgetError() error {
	return errors.New("Script killed after " + strconv.FormatInt(scriptMaxInstructions, 10) +
		" Lua instructions: a script runs on every member's applier, and nanokv stops one that runs this long")
}

// scriptBudget is the context a script's Lua states run under. gopher-lua's VM asks the
// context's Done before every instruction, and so counts them: Done is nil (never done)
// until the budget is spent, and a closed channel from then on, so that the VM raises
// Err at that instruction, and again at every later one, which a pcall in the script
// cannot swallow for good. Nothing else asks: a coroutine's state is given the same
// budget (watchCoroutines), and a context never done starts no goroutine in
// context.WithCancel, which gopher-lua calls for every coroutine.
type scriptBudget struct {
	left int64
}

var closedDone = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func (b *scriptBudget) Done() <-chan struct{} {
	if b.left--; b.left < 0 {
		return closedDone
	}
	return nil
}

func (b *scriptBudget) Err() error {
	if b.left < 0 {
		return scriptBudgetError()
	}
	return nil
}

func (*scriptBudget) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*scriptBudget) Value(any) any               { return nil }

// scriptMaxString is the longest string a script's string functions and concatenation
// (scriptconcat.go) make: proto-max-bulk-len, the longest string Redis stores. Lua's own string.rep fails
// with "not enough memory" when its allocation does; gopher-lua's asks Go for the
// memory, and a Go process that cannot have it dies. A script's entry is replayed at
// every restart, so one `string.rep('x', 1e13)` would end the cluster for good. (Other
// ways to hold memory are not bounded: a table filled with many strings of up to this
// length can still exhaust a machine, and like every write, a script that does crashes
// every member, and replaying it crashes them again.) A variable: tests lower it.
var scriptMaxString = 512 << 20

// scriptBytesPerInstruction is what making a string costs a script: one instruction
// of its budget per this many bytes. One instruction can make a string of up to
// scriptMaxString (string.rep, `..`, a GET of a large value), which an instruction
// count alone does not see: `for i = 1, 1e6 do local s = string.rep('x', 5e8) end`
// took a fraction of a second per iteration, days in all, on every member's applier;
// `t[i] = string.rep('x', 5e8)` a hundred times asked every member for 50 GB. At 16
// bytes, what a script makes is bounded by its budget, 3.2 GB; copying it takes about
// as long as the instructions would (a second or two); and a script that builds a
// 100 KB string by appending ten bytes at a time (500 MB copied) spends a sixth of it.
const scriptBytesPerInstruction = 16

// chargeBytes counts n bytes a library function is about to make against the running
// script's budget, and fails the script as out of instructions when it is spent.
func chargeBytes(L *lua.LState, n int) {
	if n >= scriptBytesPerInstruction {
		chargeInstructions(L, int64(n/scriptBytesPerInstruction))
	}
}

// chargeInstructions counts n instructions' worth of work a library function does
// against the running script's budget, and fails the script when it is spent.
func chargeInstructions(L *lua.LState, n int64) {
	b, ok := L.Context().(*scriptBudget)
	if !ok {
		return
	}
	if b.left -= n; b.left < 0 {
		L.RaiseError("%s", scriptBudgetError().Error())
	}
}

// boundStringRep makes string.rep refuse, as a failed allocation, a result longer than
// scriptMaxString, and charge what it makes. Called before the library tables are made
// read-only.
func boundStringRep(L *lua.LState) {
	str := L.GetGlobal(lua.StringLibName).(*lua.LTable)
	orig := str.RawGetString("rep").(*lua.LFunction)
	str.RawSetString("rep", L.NewFunction(func(L *lua.LState) int {
		s, n := L.CheckString(1), L.CheckInt(2)
		if n > 0 && len(s) > 0 && n > scriptMaxString/len(s) {
			L.RaiseError("not enough memory")
		}
		if n > 0 {
			chargeBytes(L, n*len(s))
		}
		L.Insert(orig, 1)
		L.Call(L.GetTop()-1, 1)
		return 1
	}))
}

// boundStringBuilders bounds the library functions that make a string from others, and
// charges what they make (chargeBytes), so that no loop of them can double a string
// past scriptMaxString either (string.rep's bound is boundStringRep's, concatenation's
// scriptconcat.go's). table.concat knows its result's length before it builds it;
// string.format's is bounded by its format and its arguments' (a number takes fewer
// than formatNumberMax bytes: Lua's format widths and precisions have two digits at
// most); upper, lower and reverse copy their argument; string.gsub is luaGsub, which
// checks as it builds (luastrlib.go). Called before the library tables are made
// read-only.
func boundStringBuilders(L *lua.LState) {
	// size is (at most) the length of the string the call would make.
	wrap := func(lib *lua.LTable, name string, size func(L *lua.LState) int) {
		// The original runs in the wrapper's frame, not called from it, so that its
		// errors name the function as the script called it ("bad argument #1 to concat").
		orig := lib.RawGetString(name).(*lua.LFunction).GFunction
		lib.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			n := size(L)
			if n > scriptMaxString {
				L.RaiseError("not enough memory")
			}
			chargeBytes(L, n)
			return orig(L)
		}))
	}
	str := L.GetGlobal(lua.StringLibName).(*lua.LTable)
	str.RawSetString("format", L.NewFunction(luaStrFormat)) // Lua 5.1's (luaformat.go)
	wrap(str, "format", func(L *lua.LState) int {
		size := len(L.CheckString(1))
		for i := 2; i <= L.GetTop() && size <= scriptMaxString; i++ {
			if s, ok := L.Get(i).(lua.LString); ok {
				size += len(s)
			} else {
				size += formatNumberMax
			}
		}
		return size
	})
	// Lua 5.1's upper and lower map each byte with C's toupper and tolower, which change
	// ASCII letters only in the C locale Redis runs in; gopher-lua's mapped Unicode.
	str.RawSetString("upper", L.NewFunction(func(L *lua.LState) int { return luaASCIICase(L, 'a', 'z', 'A'-'a') }))
	str.RawSetString("lower", L.NewFunction(func(L *lua.LState) int { return luaASCIICase(L, 'A', 'Z', 'a'-'A') }))
	for _, name := range []string{"upper", "lower", "reverse"} {
		wrap(str, name, func(L *lua.LState) int { return len(L.CheckString(1)) })
	}
	tab := L.GetGlobal(lua.TabLibName).(*lua.LTable)
	tab.RawSetString("concat", L.NewFunction(tableConcat))
	addTableCompat(tab, L)
}

// luaASCIICase is string.upper or string.lower: the letters from..to moved by delta.
func luaASCIICase(L *lua.LState, from, to byte, delta int) int {
	b := []byte(L.CheckString(1))
	for i, c := range b {
		if c >= from && c <= to {
			b[i] = byte(int(c) + delta)
		}
	}
	L.Push(lua.LString(b))
	return 1
}

// addTableCompat adds what Lua 5.1's table library keeps from 5.0 and gopher-lua left
// out: foreach and foreachi (a call per pair, stopping at the first non-nil result,
// which they return) and setn (obsolete: it fails).
func addTableCompat(tab *lua.LTable, L *lua.LState) {
	tab.RawSetString("foreach", L.NewFunction(func(L *lua.LState) int {
		t, f := L.CheckTable(1), L.CheckFunction(2)
		for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
			if callStops(L, f, k, v) {
				return 1
			}
		}
		return 0
	}))
	tab.RawSetString("foreachi", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		f := L.CheckFunction(2)
		for i, n := 1, t.Len(); i <= n; i++ {
			if callStops(L, f, lua.LNumber(i), t.RawGetInt(i)) {
				return 1
			}
		}
		return 0
	}))
	tab.RawSetString("setn", L.NewFunction(func(L *lua.LState) int {
		L.CheckTable(1)
		L.RaiseError("'setn' is obsolete")
		return 0
	}))
}

// callStops calls f(a, b) for foreach and foreachi: a result other than nil stops
// them and is left on the stack to return.
func callStops(L *lua.LState, f *lua.LFunction, a, b lua.LValue) bool {
	L.Push(f)
	L.Push(a)
	L.Push(b)
	L.Call(2, 1)
	if L.Get(-1) != lua.LNil {
		return true
	}
	L.Pop(1)
	return false
}

// tableConcat is Lua 5.1's table.concat (tconcat): the separator is checked before the
// table, a number is written as Lua prints it (%.14g; gopher-lua wrote 0.1+0.2 in full),
// and a nil or other value in the range fails, where gopher-lua's skipped the nils
// between i and j. It knows the result's length before it builds it: past
// scriptMaxString it fails as a failed allocation, and it charges what it makes.
func tableConcat(L *lua.LState) int {
	sep := ""
	if L.Get(2) != lua.LNil {
		sep = luaCheckString(L, "concat", 2)
	}
	t := L.CheckTable(1)
	i := L.OptInt(3, 1)
	j := border(t)
	if L.Get(4) != lua.LNil {
		j = L.CheckInt(4)
	}
	field := func(k int) string {
		var v lua.LValue
		if k >= 1 {
			v = t.RawGetInt(k)
		} else {
			v = t.RawGet(lua.LNumber(k))
		}
		switch v := v.(type) {
		case lua.LString:
			return string(v)
		case lua.LNumber:
			return formatG(float64(v))
		default:
			L.RaiseError("invalid value (%s) at index %d in table for 'concat'", v.Type().String(), k)
			return ""
		}
	}
	size := 0
	for k := i; k <= j && size <= scriptMaxString; k++ {
		if size += len(field(k)); k < j {
			size += len(sep)
		}
	}
	if size > scriptMaxString {
		L.RaiseError("not enough memory")
	}
	chargeBytes(L, size)
	var b strings.Builder
	b.Grow(size)
	for k := i; k <= j; k++ {
		if b.WriteString(field(k)); k < j {
			b.WriteString(sep)
		}
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// formatNumberMax bounds what string.format makes of an argument that is not a string.
const formatNumberMax = 1024

// coroutineBytes is what creating a coroutine costs a script (chargeBytes): a
// coroutine is a Lua state of its own, with a value stack of scriptRegistryMin values
// (64 KiB) and a call stack. Uncharged, `t[i] = coroutine.create(f)` a million times,
// five million instructions, asked every member for tens of GB (10k took 100-350 MB);
// now a script can create 48k at most.
const coroutineBytes = 64 << 10

// watchCoroutines makes the coroutines a script creates count against its budget:
// gopher-lua gives a coroutine a context of its own, derived from its creator's, which
// would count nothing. coroutine.create and coroutine.wrap are replaced by calls of the
// originals that hand the new coroutine its creator's context, after charging its
// memory. Called before the library tables are made read-only.
func watchCoroutines(L *lua.LState) {
	co := L.GetGlobal(lua.CoroutineLibName).(*lua.LTable)
	for _, name := range []string{"create", "wrap"} {
		orig := co.RawGetString(name).(*lua.LFunction).GFunction
		co.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			if fn, ok := L.Get(1).(*lua.LFunction); ok && fn.IsG {
				L.ArgError(1, "Lua function expected")
			}
			chargeBytes(L, coroutineBytes)
			orig(L) // in this call's frame, so that its argument error is this function's
			var th *lua.LState
			switch v := L.Get(-1).(type) {
			case *lua.LState: // create
				th = v
			case *lua.LFunction: // wrap: a closure over the coroutine
				th, _ = v.Upvalues[0].Value().(*lua.LState)
			}
			if ctx := L.Context(); th != nil && ctx != nil {
				th.SetContext(ctx)
			}
			return 1
		}))
	}
}

// luaMaxCStack is Lua 5.1's LUAI_MAXCSTACK: the values a C function may have on its
// stack, its arguments included.
const luaMaxCStack = 8000

// boundResults makes string.byte and unpack refuse to return more values than Lua
// 5.1's stack holds, with its errors ("stack overflow (string slice too long)", "too
// many results to unpack"), as Redis does from 7998 bytes and 8000 elements. gopher-lua
// pushed them onto the state's registry: `{string.byte(s, 1, -1)}` of a string of 64K
// overflowed it, and with the registry full, gopher-lua's PCall failed to push the
// error handler and the process died (see protectedCall). Called before the library
// tables are made read-only.
func boundResults(L *lua.LState) {
	// string.byte is Lua 5.1's str_byte: a start of 0 (or before the string) is 1
	// (gopher-lua's returned nothing for string.byte(s, 0, -1))
	str := L.GetGlobal(lua.StringLibName).(*lua.LTable)
	str.RawSetString("byte", L.NewFunction(func(L *lua.LState) int {
		s := L.CheckString(1)
		i := L.OptInt(2, 1)
		j := L.OptInt(3, i)
		if i < 0 {
			i += len(s) + 1
		}
		if j < 0 {
			j += len(s) + 1
		}
		i, j = max(i, 1), min(j, len(s))
		if i > j {
			return 0
		}
		n := j - i + 1
		if n+L.GetTop() > luaMaxCStack {
			raiseAsC(L, "stack overflow (string slice too long)")
		}
		for k := i; k <= j; k++ {
			L.Push(lua.LNumber(s[k-1]))
		}
		return n
	}))
	// unpack is gopher-lua's, but its default end is `#` (border, scripttable.go):
	// gopher-lua's scanned the nils at the end of the table's array part at every call.
	g := L.Get(lua.GlobalsIndex).(*lua.LTable)
	g.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		i := L.OptInt(2, 1)
		e := L.OptInt(3, border(t))
		if i > e {
			return 0
		}
		n := e - i + 1
		if n <= 0 || n+L.GetTop() > luaMaxCStack { // n <= 0: the count overflowed
			raiseAsC(L, "too many results to unpack")
		}
		for k := i; k <= e; k++ {
			L.Push(t.RawGetInt(k))
		}
		return n
	}))
}
