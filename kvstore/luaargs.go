package kvstore

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// The arguments of the libraries' functions, taken and refused as Lua 5.1's in Redis.
//
// Two things differed in gopher-lua, and scripts meet both:
//
//   - A numeric string where a function wants an integer. Lua's luaL_checkint converts
//     "3" (and " 0x10 ") as arithmetic does, so string.sub(v, 1, ARGV[1]) and
//     string.rep('-', ARGV[1]) work in Redis, where every ARGV is a string; gopher-lua's
//     CheckInt and OptInt took only numbers and failed the script. Each function's
//     integer arguments are converted before it runs (luaIntArgs), to C's int as
//     luaL_checkint makes it (luaInt: string.rep('x', 2^32 + 2) is "xx" in Redis), and
//     a number given where an optional string goes (table.concat's separator) becomes
//     its %.14g.
//   - The wording of an argument error, which a script sees from pcall and a client in
//     the reply: Lua 5.1 quotes the function's name and says "got no value" for a
//     missing argument ("bad argument #1 to 'sub' (string expected, got no value)");
//     gopher-lua wrote "to sub (string expected, got nil)". A function called by another
//     Go function (pcall(string.rep)) is '?' in Lua, without the script's position,
//     where gopher-lua gave "(anonymous)" and the position of the nearest Lua code.
//
// asLuaArguments wraps every function of the base library and of string, table, math,
// coroutine, bit, cjson, cmsgpack and struct for both. An error is reworded only when
// the wrapped function raised it itself, in its own call frame: an error from Lua code
// it called (a table.sort comparator) passes through untouched, whatever its text.
// In a method call ('x':rep()) Lua does not count the receiver: "bad argument #1 to
// 'rep'", and "calling 'rep' on bad self" for the receiver itself (calledAsMethod).

// luaIntArgs are the arguments a library function converts with luaL_checkint or
// luaL_optint, to C's int: a numeric string there is the number it spells, and a
// number is cut to 32 bits (luaInt). (table.insert's second argument is one only when
// a third follows; else it is the value to append.)
var luaIntArgs = map[string][]int{
	"string.gsub": {4}, "string.rep": {2},
	"table.concat": {3, 4}, "table.remove": {2},
	"math.random": {1, 2}, "math.randomseed": {1}, "math.ldexp": {2},
	"unpack": {2, 3}, "tonumber": {2},
}

// luaIntegerArgs are those converted with luaL_checkinteger or luaL_optinteger, to a
// 64-bit ptrdiff_t, which gopher-lua's int holds: a numeric string becomes its number,
// and one past 64 bits C's (the lowest).
var luaIntegerArgs = map[string][]int{
	"string.byte": {2, 3}, "string.find": {3}, "string.match": {3}, "string.sub": {2, 3},
	"cmsgpack.unpack_one": {2}, "cmsgpack.unpack_limit": {2, 3}, // lua-cmsgpack's long
}

// luaStringArgs are the string functions' string arguments: a number there is the
// string Lua writes for it (%.14g, luaToString), not gopher-lua's.
var luaStringArgs = map[string][]int{
	"string.byte": {1}, "string.find": {1, 2}, "string.gmatch": {1, 2}, "string.gsub": {1, 2, 3},
	"string.len": {1}, "string.lower": {1}, "string.match": {1, 2}, "string.rep": {1},
	"string.reverse": {1}, "string.sub": {1}, "string.upper": {1},
}

// luaOwnRaises are the functions that raise what the script hands them, which is not
// to be reworded whatever it says: error's value, and assert's message (assert words
// its own argument error itself, below).
var luaOwnRaises = map[string]bool{"error": true, "assert": true}

// lstateFrame is the offset of LState's current call frame, which gopher-lua does not
// export; -1 if an upgrade moved it (TestArgErrorsKnowTheCallFrame fails then, and
// errors keep gopher-lua's wording).
var lstateFrame = func() uintptr {
	f, ok := reflect.TypeOf(lua.LState{}).FieldByName("currentFrame")
	if !ok || f.Type.Kind() != reflect.Pointer {
		return ^uintptr(0)
	}
	return f.Offset
}()

// callFrame identifies the call running on L.
func callFrame(L *lua.LState) unsafe.Pointer {
	if lstateFrame == ^uintptr(0) {
		return nil
	}
	return *(*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(L), lstateFrame))
}

// frameFields are the offsets of a call frame's caller, function and next instruction
// (gopher-lua's callFrame.Parent, Fn and Pc); ok is false if an upgrade changed them.
var frameFields = func() (f struct {
	parent, fn, pc uintptr
	ok             bool
}) {
	cf, ok := reflect.TypeOf(lua.LState{}).FieldByName("currentFrame")
	if !ok || cf.Type.Kind() != reflect.Pointer || cf.Type.Elem().Kind() != reflect.Struct {
		return f
	}
	t := cf.Type.Elem()
	parent, ok1 := t.FieldByName("Parent")
	fn, ok2 := t.FieldByName("Fn")
	pc, ok3 := t.FieldByName("Pc")
	if !ok1 || !ok2 || !ok3 || parent.Type != cf.Type || fn.Type != reflect.TypeOf((*lua.LFunction)(nil)) || pc.Type.Kind() != reflect.Int {
		return f
	}
	f.parent, f.fn, f.pc, f.ok = parent.Offset, fn.Offset, pc.Offset, true
	return f
}()

// calledAsMethod reports whether the Go function running on L was called as a method
// (`s:rep(3)`), which Lua 5.1 tells from the instruction that loaded the function: a
// SELF into the register the CALL calls. The arguments' code between them writes only
// the registers above it.
func calledAsMethod(L *lua.LState) bool {
	f, ok := callerFrame(L) // luaerrors.go
	if !ok {
		return false
	}
	code := f.fn.Proto.Code
	call := code[f.pc]
	if op := opCode(call); op != lua.OP_CALL && op != lua.OP_TAILCALL {
		return false
	}
	for j := f.pc - 1; j >= 0; j-- {
		if opA(code[j]) == opA(call) {
			return opCode(code[j]) == lua.OP_SELF
		}
	}
	return false
}

// asLuaArguments wraps the functions of the libraries reachable from the globals, g (see
// the comment at the top). Called once the libraries are complete, before they are made
// read-only; the globals' own functions are wrapped by wrapLuaLibrary(L, g, "") once the
// last of them is set.
func asLuaArguments(L *lua.LState, g *lua.LTable) {
	libFunctions(L, g)
	for _, lib := range []string{"string", "table", "math", "coroutine", "bit", "cjson", "cmsgpack", "struct"} {
		wrapLuaLibrary(L, g.RawGetString(lib).(*lua.LTable), lib+".")
	}
}

// wrapLuaLibrary wraps the Go functions of t, whose names are prefix and their key.
func wrapLuaLibrary(L *lua.LState, t *lua.LTable, prefix string) {
	wrapped := map[string]*lua.LFunction{}
	t.ForEach(func(k, v lua.LValue) {
		name, ok := k.(lua.LString)
		fn, isFn := v.(*lua.LFunction)
		if !ok || !isFn || !fn.IsG || luaOwnRaises[prefix+string(name)] || !isLuaName(string(name)) {
			return // the compiler's guards have names no script can write
		}
		wrapped[string(name)] = fn
	})
	for name, fn := range wrapped {
		// the same upvalues (pairs returns its upvalue, next)
		up := make([]lua.LValue, len(fn.Upvalues))
		for i, u := range fn.Upvalues {
			up[i] = u.Value()
		}
		t.RawSetString(name, L.NewClosure(luaArgs(prefix+name, fn.GFunction), up...))
	}
}

func isLuaName(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// luaArgs wraps the library function f, known as name ("string.sub").
func luaArgs(name string, f lua.LGFunction) lua.LGFunction {
	ints, integers, strs := luaIntArgs[name], luaIntegerArgs[name], luaStringArgs[name]
	short := name[strings.LastIndexByte(name, '.')+1:]
	return func(L *lua.LState) int {
		top := L.GetTop()
		for _, i := range ints {
			if i <= top {
				switch v := L.Get(i).(type) {
				case lua.LString:
					if n, ok := luaStringNumber(string(v)).(lua.LNumber); ok {
						L.Replace(i, lua.LNumber(luaInt(float64(n))))
					}
				case lua.LNumber:
					if n := lua.LNumber(luaInt(float64(v))); n != v {
						L.Replace(i, n)
					}
				}
			}
		}
		for _, i := range integers {
			if i <= top {
				if n, ok := luaToNumber(L.Get(i)); ok {
					if n != n || n >= 1<<63 || n < -(1<<63) {
						// C's (ptrdiff_t) of it is the lowest integer: a position
						// before any string's start; -2^62 means that without
						// overflowing gopher-lua's arithmetic on it
						n = -(1 << 62)
					}
					if lua.LNumber(n) != L.Get(i) {
						L.Replace(i, lua.LNumber(n))
					}
				}
			}
		}
		for _, i := range strs {
			if i <= top {
				if n, ok := L.Get(i).(lua.LNumber); ok {
					L.Replace(i, lua.LString(formatG(float64(n))))
				}
			}
		}
		if name == "table.insert" && top == 3 { // insert(t, pos, v)
			if n, ok := luaToNumber(L.Get(2)); ok {
				L.Replace(2, lua.LNumber(luaInt(n)))
			}
		}
		if name == "table.concat" && top >= 2 {
			if n, ok := L.Get(2).(lua.LNumber); ok {
				L.Replace(2, lua.LString(formatG(float64(n))))
			}
		}
		frame := callFrame(L)
		defer func() {
			if r := recover(); r != nil {
				if e, ok := r.(*lua.ApiError); ok && frame != nil && callFrame(L) == frame {
					if s, ok := e.Object.(lua.LString); ok {
						e.Object = lua.LString(asLuaArgError(L, string(s), name, short, top))
					}
				}
				panic(r)
			}
		}()
		return f(L)
	}
}

// asLuaArgError rewords gopher-lua's "<where> bad argument #n to f (detail)", raised by
// the function name (its last part short) called with top arguments, as Lua 5.1's
// luaL_argerror words it. Any other message is returned as it is.
func asLuaArgError(L *lua.LState, msg, name, short string, top int) string {
	const bad = "bad argument #"
	i := strings.Index(msg, bad)
	if i < 0 || i > 0 && !strings.HasSuffix(msg[:i], ": ") || !strings.HasSuffix(msg, ")") {
		return msg
	}
	prefix, rest := msg[:i], msg[i+len(bad):]
	sp := strings.Index(rest, " to ")
	if sp < 0 {
		return msg
	}
	n, err := strconv.Atoi(rest[:sp])
	rest = rest[sp+len(" to "):]
	op := strings.Index(rest, " (")
	if err != nil || op < 0 || strings.HasPrefix(rest, "'") {
		return msg // not gopher-lua's, or worded already
	}
	fn, detail := rest[:op], rest[op+2:len(rest)-1]
	if strings.HasPrefix(L.Where(1), "[G]") {
		// called by a Go function: Lua knows no name for it, nor a position (luaL_where
		// of a C caller is empty)
		prefix, fn = "", "?"
	} else if fn == "(anonymous)" {
		fn = short // a wrapper called the function gopher-lua raised in
	}
	if base, ok := strings.CutSuffix(detail, ", got nil"); ok && n > top {
		detail = base + ", got no value"
	}
	method := prefix != "" && calledAsMethod(L)
	switch name {
	case "coroutine.resume", "coroutine.status":
		if strings.HasPrefix(detail, "thread expected") {
			detail = "coroutine expected"
		}
	case "coroutine.create", "coroutine.wrap":
		if strings.HasPrefix(detail, "function expected") {
			detail = "Lua function expected"
		}
	case "setmetatable":
		if strings.HasPrefix(detail, "nil or table expected") {
			detail = "nil or table expected"
		}
	}
	if method { // Lua does not count the receiver
		if n--; n == 0 {
			return prefix + "calling '" + fn + "' on bad self (" + detail + ")"
		}
	}
	return prefix + bad + strconv.Itoa(n) + " to '" + fn + "' (" + detail + ")"
}

// raiseArgError raises Lua 5.1's luaL_argerror for argument n of the Go function fn
// running on L: fn is '?', without a position, when a Go function called it, and a
// method call does not count its receiver.
func raiseArgError(L *lua.LState, n int, fn, detail string) {
	switch {
	case strings.HasPrefix(L.Where(1), "[G]"):
		fn = "?"
	case calledAsMethod(L):
		if n--; n == 0 {
			raiseAsC(L, "calling '"+fn+"' on bad self ("+detail+")")
		}
	}
	raiseAsC(L, "bad argument #"+strconv.Itoa(n)+" to '"+fn+"' ("+detail+")")
}

// libFunctions replaces the functions whose checks differ from Lua 5.1's beyond the
// wording: what they accept, or what they check first.
func libFunctions(L *lua.LState, g *lua.LTable) {
	str := g.RawGetString("string").(*lua.LTable)
	// string.char: each code must be a byte (gopher-lua kept its low 8 bits)
	char := str.RawGetString("char").(*lua.LFunction).GFunction
	str.RawSetString("char", L.NewFunction(func(L *lua.LState) int {
		for i := 1; i <= L.GetTop(); i++ {
			v, ok := luaToNumber(L.Get(i))
			if !ok {
				L.TypeError(i, lua.LTNumber)
			}
			c := luaInt(v)
			if c < 0 || c > 255 {
				L.ArgError(i, "invalid value")
			}
			L.Replace(i, lua.LNumber(c))
		}
		return char(L)
	}))
	// select: luaL_checkint of the index, which a numeric string passes, and Lua's
	// bounds (an index past 2^31 wraps as C's int does)
	g.RawSetString("select", L.NewFunction(func(L *lua.LState) int {
		n := L.GetTop()
		if s, ok := L.Get(1).(lua.LString); ok && strings.HasPrefix(string(s), "#") {
			L.Push(lua.LNumber(n - 1))
			return 1
		}
		v, ok := luaToNumber(L.Get(1))
		if !ok {
			L.TypeError(1, lua.LTNumber)
		}
		i := luaInt(v)
		if i < 0 {
			i += n
		} else if i > n {
			i = n
		}
		if i < 1 {
			L.ArgError(1, "index out of range")
		}
		return n - i
	}))
	// math.max and math.min of nothing: the first argument is missing (gopher-lua:
	// "wrong number of arguments")
	mathLib := g.RawGetString("math").(*lua.LTable)
	for _, name := range []string{"max", "min"} {
		f := mathLib.RawGetString(name).(*lua.LFunction).GFunction
		mathLib.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			L.CheckNumber(1)
			return f(L)
		}))
	}
	// assert: a value is required; the message may be a number; the arguments are
	// returned
	g.RawSetString("assert", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() == 0 {
			raiseArgError(L, 1, "assert", "value expected")
		}
		if !lua.LVAsBool(L.Get(1)) {
			msg := "assertion failed!"
			if L.Get(2) != lua.LNil {
				msg = luaCheckString(L, "assert", 2)
			}
			raiseAsC(L, msg) // luaL_error: the position of a Lua caller only
		}
		return L.GetTop()
	}))
	// error() raises nil, as error(nil) does (gopher-lua required a value)
	errorFn := g.RawGetString("error").(*lua.LFunction).GFunction
	g.RawSetString("error", L.NewFunction(func(L *lua.LState) int {
		switch v := L.Get(1).(type) {
		case *lua.LNilType:
			L.SetTop(max(L.GetTop(), 1))
		case lua.LNumber: // a number gets the position a string gets
			L.Replace(1, lua.LString(formatG(float64(v))))
		}
		return errorFn(L)
	}))
	// next: a key the table never held is an error (gopher-lua went on from its first
	// key); one set to nil during the traversal is not
	next := g.RawGetString("next").(*lua.LFunction).GFunction
	g.RawSetString("next", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		if k := L.Get(2); k != lua.LNil && !tableHeldKey(t, k) {
			L.Error(lua.LString("invalid key to 'next'"), 0)
		}
		return next(L)
	}))
	// xpcall checks its handler first
	xpcall := g.RawGetString("xpcall").(*lua.LFunction).GFunction
	g.RawSetString("xpcall", L.NewFunction(func(L *lua.LState) int {
		L.CheckAny(2)
		if h, ok := L.Get(2).(*lua.LFunction); ok {
			// the handler is given the VM's messages in Lua's words, and the failed
			// call's upvalues are closed, as pcall's (luaerrors.go)
			base := frameBase(L)
			L.Replace(2, L.NewFunction(func(L *lua.LState) int {
				closeUpvaluesFrom(L, base)
				v := rewordError(L, L.Get(1))
				L.SetTop(0)
				L.Push(h)
				L.Push(v)
				L.Call(1, 1)
				return 1
			}))
		}
		return xpcall(L)
	}))
	// tonumber with a base other than 10 reads the string (a number as Lua prints it)
	// with C's strtoul, as luaB_tonumber does; the base, 2 to 36, is checked after the
	// string. (gopher-lua converted a number as it was: tonumber(-2.5, 16) was -2.5.)
	tonumber := g.RawGetString("tonumber").(*lua.LFunction).GFunction
	g.RawSetString("tonumber", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
			if base := L.CheckInt(2); base != 10 {
				s := luaCheckString(L, "tonumber", 1)
				if base < 2 || base > 36 {
					L.ArgError(2, "base out of range")
				}
				if n, ok := cStrtoul(s, base); ok {
					L.Push(lua.LNumber(n))
				} else {
					L.Push(lua.LNil)
				}
				return 1
			}
		}
		return tonumber(L)
	}))
	// pow, fmod, atan2 and ldexp check their second argument first: lmathlib.c's
	// pow(luaL_checknumber(L, 1), luaL_checknumber(L, 2)) has its arguments evaluated
	// right to left by GCC on x86-64
	for name, f := range map[string]func(a, b float64) float64{"pow": math.Pow, "fmod": math.Mod, "atan2": math.Atan2} {
		mathLib.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			b := luaCheckNumber(L, name, 2)
			a := luaCheckNumber(L, name, 1)
			L.Push(lua.LNumber(f(a, b)))
			return 1
		}))
	}
	// deg and rad as lmathlib.c computes them, with RADIANS_PER_DEGREE: gopher-lua's
	// x * math.Pi / 180 overflowed for x near the largest double
	const radiansPerDegree = math.Pi / 180
	mathLib.RawSetString("deg", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LNumber(luaCheckNumber(L, "deg", 1) / radiansPerDegree))
		return 1
	}))
	mathLib.RawSetString("rad", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LNumber(luaCheckNumber(L, "rad", 1) * radiansPerDegree))
		return 1
	}))
	// log10 of a power of ten is that power, as glibc's (correctly rounded) is: Go's
	// Log10, log2(x) times a constant, made 1e15's 14.999999999999998, so a script's
	// math.floor(math.log10(n)) miscounted the digits of n. (Elsewhere Go's log, exp and
	// log10 may differ from glibc's in the last bit.)
	mathLib.RawSetString("log10", L.NewFunction(func(L *lua.LState) int {
		x := luaCheckNumber(L, "log10", 1)
		y := math.Log10(x)
		if r := math.Round(y); r != y && math.Abs(r) <= 308 && math.Pow(10, r) == x {
			y = r
		}
		L.Push(lua.LNumber(y))
		return 1
	}))
	// modf of an infinity: its fraction is a zero of its sign, as C's (Go's is NaN)
	mathLib.RawSetString("modf", L.NewFunction(func(L *lua.LState) int {
		x := luaCheckNumber(L, "modf", 1)
		ip, fp := math.Modf(x)
		if math.IsInf(x, 0) {
			fp = math.Copysign(0, x)
		}
		L.Push(lua.LNumber(ip))
		L.Push(lua.LNumber(fp))
		return 2
	}))
	mathLib.RawSetString("ldexp", L.NewFunction(func(L *lua.LState) int {
		e := luaInt(luaCheckNumber(L, "ldexp", 2))
		x := luaCheckNumber(L, "ldexp", 1)
		L.Push(lua.LNumber(math.Ldexp(x, e)))
		return 1
	}))
	// The math library takes a numeric string as Lua reads it, with strtod: gopher-lua's
	// conversion refuses one past the largest double ("1e400"), which strtod reads as
	// inf. (Arithmetic on such a string still fails: that conversion is inside
	// gopher-lua's VM. README.) And a NaN it makes of numbers has the C library's sign.
	fns := map[lua.LValue]lua.LGFunction{}
	mathLib.ForEach(func(k, v lua.LValue) {
		if f, ok := v.(*lua.LFunction); ok && f.GFunction != nil {
			fns[k] = f.GFunction
		}
	})
	// glibc's log, cos, sin, tan, pow and fmod of what has no value make x86's default
	// NaN (-nan in Lua; its log10, acos and asin a positive one, as Go's); a NaN
	// argument comes back as it is, where some of Go's functions return their own.
	negNaN := map[string]bool{"log": true, "cos": true, "sin": true, "tan": true, "pow": true, "fmod": true}
	for k, inner := range fns {
		neg := negNaN[lua.LVAsString(k)]
		mathLib.RawSet(k, L.NewFunction(func(L *lua.LState) int {
			var nanIn lua.LValue
			for i := 1; i <= L.GetTop(); i++ {
				if s, ok := L.Get(i).(lua.LString); ok {
					if n, ok := luaStringNumber(string(s)).(lua.LNumber); ok {
						L.Replace(i, n)
					}
				}
				if v, ok := L.Get(i).(lua.LNumber); ok && v != v && nanIn == nil {
					nanIn = v
				}
			}
			n := inner(L)
			if nanIn == nil && !neg {
				return n
			}
			for i := L.GetTop() - n + 1; i <= L.GetTop(); i++ {
				if v, ok := L.Get(i).(lua.LNumber); ok && v != v {
					if nanIn != nil {
						L.Replace(i, nanIn)
					} else {
						L.Replace(i, lua.LNumber(x86NaN))
					}
				}
			}
			return n
		}))
	}
}

// x86NaN is x86's default NaN, whose sign bit is set: what an invalid operation of
// numbers makes (0/0), which Lua prints as -nan.
var x86NaN = math.Float64frombits(0xfff8000000000000)

// cStrtoul reads s as C's strtoul(s, &end, base) does and reports whether it was a
// number to its end but for white space (luaB_tonumber's test): white space, a sign
// (a minus negates the unsigned result), "0x" before hexadecimal digits in base 16,
// digits of the base (too many: ULONG_MAX). A NUL ends s.
func cStrtoul(s string, base int) (float64, bool) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	digit := func(c byte) int {
		switch {
		case c >= '0' && c <= '9':
			return int(c - '0')
		case c|0x20 >= 'a' && c|0x20 <= 'z':
			return int(c|0x20-'a') + 10
		}
		return 99
	}
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if base == 16 && i+2 < len(s) && s[i] == '0' && s[i+1]|0x20 == 'x' && digit(s[i+2]) < 16 {
		i += 2
	}
	start := i
	var n uint64
	overflow := false
	for ; i < len(s) && digit(s[i]) < base; i++ {
		d := uint64(digit(s[i]))
		if n > (math.MaxUint64-d)/uint64(base) {
			overflow = true
		}
		n = n*uint64(base) + d
	}
	if i == start {
		return 0, false
	}
	switch {
	case overflow:
		n = math.MaxUint64
	case neg:
		n = -n
	}
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	return float64(n), i == len(s)
}

// ltableKeys is the index of LTable's k2i among its fields: the position of every key
// its hash part ever held, which gopher-lua's Next walks (-1 if an upgrade moved it).
var ltableKeys = func() int {
	f, ok := reflect.TypeOf(lua.LTable{}).FieldByName("k2i")
	if !ok || f.Type != reflect.TypeOf(map[lua.LValue]int(nil)) {
		return -1
	}
	return f.Index[0]
}()

// tableHeldKey reports whether next(t, k) may go on from k: k is set, or is in the
// array part, or the hash part held it (a key set to nil during a traversal).
func tableHeldKey(t *lua.LTable, k lua.LValue) bool {
	if t.RawGet(k) != lua.LNil {
		return true
	}
	if n, ok := k.(lua.LNumber); ok && float64(n) == float64(int(n)) && n >= 1 && int(n) <= arrayLen(t) {
		return true
	}
	if ltableKeys < 0 {
		return true // not known: as gopher-lua did
	}
	m := reflect.ValueOf(t).Elem().Field(ltableKeys)
	return !m.IsNil() && m.MapIndex(reflect.ValueOf(&k).Elem()).IsValid()
}

// luaInt is C's (int) of a lua_Number, as luaL_checkint takes it on x86-64: truncated
// toward zero to 64 bits (a value past them is the "integer indefinite", the lowest),
// then its low 32 bits.
func luaInt(f float64) int {
	if f != f || f >= 1<<63 || f < -(1<<63) {
		return 0 // int32 of math.MinInt64
	}
	return int(int32(int64(f)))
}
