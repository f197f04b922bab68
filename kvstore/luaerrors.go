package kvstore

import (
	"reflect"
	"strings"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1's words for the runtime errors scripts meet most, which a client reads in the
// reply and a script in pcall's message. gopher-lua words them its own way and names no
// variable:
//
//	local t; return t.x      attempt to index local 't' (a nil value)
//	                         (gopher-lua: attempt to index a non-table object(nil) with key 'x')
//	redis.nosuch()           attempt to call field 'nosuch' (a nil value)
//	                         (attempt to call a non-function object)
//	return KEYS[1] + 1       attempt to perform arithmetic on field '?' (a nil value)
//	                         (cannot perform add operation between nil and number)
//	local a; return 'x' .. a attempt to concatenate local 'a' (a nil value)
//	for i = 1, 'x' do end    'for' limit must be a number
//
// As Lua's luaG_typeerror, the message names the value as the function's code reached
// it (getobjname): a local active at the instruction, else what the last instruction
// to write its register loaded: a global, a field (of a constant string key, else '?'),
// an upvalue or a method; a MOVE from a lower register names that register's value.
// The errors the VM raises are reworded by the error handlers (the script's and
// pcall's), which run before the stack unwinds and read the failing frame; the guards
// the compiler calls for `..`, `#` and `t[k] = v` word theirs at once, naming their
// operands from the caller's code. Compile errors, and runtime errors not listed here,
// keep gopher-lua's words.

// vmLayout holds the offsets of the unexported fields of gopher-lua the rewording
// reads: LState.reg, registry.array, and a call frame's LocalBase. ok is false if an
// upgrade moved one (TestArgErrorsKnowTheCallFrame fails, and errors keep gopher-lua's
// words).
var vmLayout = func() (l struct {
	reg, array, localBase uintptr
	ok                    bool
}) {
	st := reflect.TypeOf(lua.LState{})
	reg, ok1 := st.FieldByName("reg")
	cf, ok2 := st.FieldByName("currentFrame")
	if !ok1 || !ok2 || reg.Type.Kind() != reflect.Pointer || cf.Type.Kind() != reflect.Pointer || !frameFields.ok {
		return l
	}
	array, ok1 := reg.Type.Elem().FieldByName("array")
	base, ok2 := cf.Type.Elem().FieldByName("LocalBase")
	if !ok1 || !ok2 || array.Type != reflect.TypeOf([]lua.LValue(nil)) || base.Type.Kind() != reflect.Int {
		return l
	}
	l.reg, l.array, l.localBase, l.ok = reg.Offset, array.Offset, base.Offset, true
	return l
}()

// vmFrame is a Lua function's call frame as an error handler or a guard finds it.
type vmFrame struct {
	fn   *lua.LFunction
	pc   int // the instruction running, fn.Proto.Code[pc]
	base int // the frame's first register in regs
	regs []lua.LValue
}

// readLuaFrame reads the frame p of L, if it runs a Lua function.
func readLuaFrame(L *lua.LState, p unsafe.Pointer) (vmFrame, bool) {
	if p == nil || !vmLayout.ok {
		return vmFrame{}, false
	}
	fn := *(**lua.LFunction)(unsafe.Add(p, frameFields.fn))
	pc := *(*int)(unsafe.Add(p, frameFields.pc)) - 1
	if fn == nil || fn.IsG || fn.Proto == nil || pc < 0 || pc >= len(fn.Proto.Code) {
		return vmFrame{}, false
	}
	reg := *(*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(L), vmLayout.reg))
	if reg == nil {
		return vmFrame{}, false
	}
	return vmFrame{fn: fn, pc: pc, base: *(*int)(unsafe.Add(p, vmLayout.localBase)),
		regs: *(*[]lua.LValue)(unsafe.Add(reg, vmLayout.array))}, true
}

// callerFrame is the frame that called the Go function running on L.
func callerFrame(L *lua.LState) (vmFrame, bool) {
	f := callFrame(L)
	if f == nil || !frameFields.ok {
		return vmFrame{}, false
	}
	return readLuaFrame(L, *(*unsafe.Pointer)(unsafe.Add(f, frameFields.parent)))
}

func (f *vmFrame) reg(r int) lua.LValue {
	if i := f.base + r; i >= 0 && i < len(f.regs) && f.regs[i] != nil {
		return f.regs[i]
	}
	return lua.LNil
}

// rk is an RK operand: a constant, or a register.
func (f *vmFrame) rk(x int) lua.LValue {
	if x&opBitRK != 0 {
		return f.constant(x &^ opBitRK)
	}
	return f.reg(x)
}

func (f *vmFrame) constant(k int) lua.LValue {
	if c := f.fn.Proto.Constants; k >= 0 && k < len(c) {
		return c[k]
	}
	return lua.LNil
}

// The fields of an instruction (gopher-lua's layout, Lua 5.1's: opcode, A, C, B).
const opBitRK = 1 << 8

func opCode(i uint32) int { return int(i >> 26) }
func opA(i uint32) int    { return int(i>>18) & 0xff }
func opB(i uint32) int    { return int(i) & 0x1ff }
func opC(i uint32) int    { return int(i>>9) & 0x1ff }
func opBx(i uint32) int   { return int(i) & 0x3ffff }

// objName is getobjname: what the code calls the value of register r at the running
// instruction, as a kind ("local", "global", "field", "upvalue", "method") and a name;
// "" if it has none.
func (f *vmFrame) objName(r int) (kind, name string) {
	code, p := f.fn.Proto.Code, f.fn.Proto
	kname := func(x int) string {
		if s, ok := f.constant(x &^ opBitRK).(lua.LString); ok && x&opBitRK != 0 {
			return string(s)
		}
		return "?"
	}
	// luaF_getlocalname: the locals active at pc, in order, start at register 0
	// (gopher-lua's LocalName counts a local from the instruction after its start)
	n := r
	for _, l := range p.DbgLocals {
		if l.StartPc > f.pc {
			break
		}
		if f.pc < l.EndPc {
			if n == 0 {
				if !isLuaName(l.Name) {
					return "", "" // a temporary of the compiler's guards
				}
				return "local", l.Name
			}
			n--
		}
	}
	for j := f.pc - 1; j >= 0; j-- {
		i := code[j]
		op, a := opCode(i), opA(i)
		switch op {
		case lua.OP_LOADNIL:
			if a <= r && r <= opB(i) {
				return "", ""
			}
			continue
		case lua.OP_CALL, lua.OP_TAILCALL, lua.OP_TFORLOOP:
			if r >= a {
				return "", ""
			}
			continue
		case lua.OP_VARARG:
			if r >= a && (opB(i) == 0 || r <= a+opB(i)-2) {
				return "", ""
			}
			continue
		case lua.OP_SELF:
			if r == a+1 {
				return "", ""
			}
		case lua.OP_JMP, lua.OP_EQ, lua.OP_LT, lua.OP_LE, lua.OP_TEST, lua.OP_SETGLOBAL,
			lua.OP_SETUPVAL, lua.OP_SETTABLE, lua.OP_SETTABLEKS, lua.OP_SETLIST, lua.OP_CLOSE,
			lua.OP_RETURN, lua.OP_NOP:
			continue // they write no register
		}
		if a != r {
			continue
		}
		switch op {
		case lua.OP_GETGLOBAL:
			if s, ok := f.constant(opBx(i)).(lua.LString); ok {
				return "global", string(s)
			}
		case lua.OP_GETTABLE, lua.OP_GETTABLEKS:
			return "field", kname(opC(i))
		case lua.OP_GETUPVAL:
			if b := opB(i); b < len(p.DbgUpvalues) {
				return "upvalue", p.DbgUpvalues[b]
			}
		case lua.OP_SELF:
			return "method", kname(opC(i))
		case lua.OP_MOVE:
			if b := opB(i); b < a {
				return f.objName(b)
			}
		}
		return "", ""
	}
	return "", ""
}

// typeError is luaG_typeerror's message for the value v of register r (r < 0: a
// constant, which has no name).
func (f *vmFrame) typeError(op string, r int, v lua.LValue) string {
	if r >= 0 {
		if kind, name := f.objName(r); kind != "" {
			return "attempt to " + op + " " + kind + " '" + name + "' (a " + v.Type().String() + " value)"
		}
	}
	return "attempt to " + op + " a " + v.Type().String() + " value"
}

// rewordRuntimeError is Lua 5.1's message for gopher-lua's msg, raised while frame f ran
// its instruction; msg itself when it is not one reworded here.
func rewordRuntimeError(f *vmFrame, msg string) string {
	prefix, body := "", msg
	if i := strings.Index(msg, ": "); i >= 0 {
		prefix, body = msg[:i+2], msg[i+2:]
	}
	switch body {
	case "for statement init must be a number":
		return prefix + "'for' initial value must be a number"
	case "for statement limit must be a number":
		return prefix + "'for' limit must be a number"
	case "for statement step must be a number":
		return prefix + "'for' step must be a number"
	}
	i := f.fn.Proto.Code[f.pc]
	switch op := opCode(i); {
	case body == "attempt to call a non-function object" && (op == lua.OP_CALL || op == lua.OP_TAILCALL):
		return prefix + f.typeError("call", opA(i), f.reg(opA(i)))
	case body == "attempt to call a non-function object" && op == lua.OP_TFORLOOP:
		return prefix + f.typeError("call", -1, f.reg(opA(i))) // a copy Lua calls, unnamed
	case strings.HasPrefix(body, "attempt to index a non-table object("):
		r := opB(i)
		switch op {
		case lua.OP_GETTABLE, lua.OP_GETTABLEKS, lua.OP_SELF:
		case lua.OP_SETTABLE, lua.OP_SETTABLEKS:
			r = opA(i)
		default:
			return msg
		}
		// the value that could not be indexed: the register's, or one its __index or
		// __newindex chain led to, which Lua does not name
		if typ, _, ok := strings.Cut(strings.TrimPrefix(body, "attempt to index a non-table object("), ")"); ok && typ != f.reg(r).Type().String() {
			return prefix + "attempt to index a " + typ + " value"
		}
		return prefix + f.typeError("index", r, f.reg(r))
	case strings.HasPrefix(body, "cannot perform ") && op >= lua.OP_ADD && op <= lua.OP_POW:
		// luaG_aritherror: the first operand if it is not a number, else the second
		x := opB(i)
		if _, ok := luaToNumber(f.rk(x)); ok {
			x = opC(i)
		}
		r := x
		if x&opBitRK != 0 {
			r = -1
		}
		return prefix + f.typeError("perform arithmetic on", r, f.rk(x))
	case body == "__unm undefined" && op == lua.OP_UNM:
		return prefix + f.typeError("perform arithmetic on", opB(i), f.reg(opB(i)))
	}
	return msg
}

// rewordError rewords the error value v as Lua 5.1 words it, when it is a message the
// VM raised in the Lua function that called the error handler running on L.
func rewordError(L *lua.LState, v lua.LValue) lua.LValue {
	s, ok := v.(lua.LString)
	if !ok {
		return v
	}
	if f, ok := callerFrame(L); ok {
		return lua.LString(rewordRuntimeError(&f, string(s)))
	}
	return v
}

// guardTypeError is luaG_typeerror's message for a guard's argument n (1 is the first;
// 0: a value that is none of them), named as its caller's code reached it.
func guardTypeError(L *lua.LState, op string, n int, v lua.LValue) string {
	if f, ok := callerFrame(L); ok && n > 0 {
		if i := f.fn.Proto.Code[f.pc]; opCode(i) == lua.OP_CALL || opCode(i) == lua.OP_TAILCALL {
			return f.typeError(op, opA(i)+n, v)
		}
	}
	return "attempt to " + op + " a " + v.Type().String() + " value"
}

// upvalueLayout holds the offsets of LState.uvcache (the open upvalues, by register)
// and of an Upvalue's next and index, for closeUpvaluesFrom; ok is false if an upgrade
// moved them.
var upvalueLayout = func() (l struct {
	cache, next, index uintptr
	ok                 bool
}) {
	uvp := reflect.TypeOf((*lua.Upvalue)(nil))
	cache, ok1 := reflect.TypeOf(lua.LState{}).FieldByName("uvcache")
	next, ok2 := uvp.Elem().FieldByName("next")
	index, ok3 := uvp.Elem().FieldByName("index")
	if !ok1 || !ok2 || !ok3 || cache.Type != uvp || next.Type != uvp || index.Type.Kind() != reflect.Int {
		return l
	}
	l.cache, l.next, l.index, l.ok = cache.Offset, next.Offset, index.Offset, true
	return l
}()

// frameBase is the first register of the Go function running on L, -1 if unknown.
func frameBase(L *lua.LState) int {
	f := callFrame(L)
	if f == nil || !vmLayout.ok {
		return -1
	}
	return *(*int)(unsafe.Add(f, vmLayout.localBase))
}

// closeUpvaluesFrom closes L's open upvalues of the registers from base up, as Lua's
// luaD_pcall does (luaF_close) when the function it called fails, so that a closure
// made there keeps the values it captured. gopher-lua closes them when the error is
// raised only if no error handler is set, and a script always runs under one
// (scriptErrorHandler): such a closure went on reading registers the script reused (it
// returned 30 for the x = 1 it captured). Called by pcall's and xpcall's handlers,
// before the stack unwinds; this is gopher-lua's closeUpvalues.
func closeUpvaluesFrom(L *lua.LState, base int) {
	if base < 0 || !upvalueLayout.ok {
		return
	}
	head := (**lua.Upvalue)(unsafe.Add(unsafe.Pointer(L), upvalueLayout.cache))
	next := func(uv *lua.Upvalue) **lua.Upvalue {
		return (**lua.Upvalue)(unsafe.Add(unsafe.Pointer(uv), upvalueLayout.next))
	}
	var prev *lua.Upvalue
	for uv := *head; uv != nil; uv = *next(uv) {
		if *(*int)(unsafe.Add(unsafe.Pointer(uv), upvalueLayout.index)) >= base {
			if prev != nil {
				*next(prev) = nil
			} else {
				*head = nil
			}
			uv.Close()
		}
		prev = uv
	}
}
