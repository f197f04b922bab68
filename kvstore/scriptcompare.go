package kvstore

import (
	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// Comparing two strings takes time in their length, in one instruction: `a == b` of two
// equal 100 MB strings, made once (which the budget charges), took 5-7 ms, so a loop of
// them ran for days within its 200M instructions, on every member's applier and again
// at every replay; `<` compares byte by byte in gopher-lua, about 1 ns a byte. So a
// comparison that may take long becomes a call of a guard that charges the bytes it
// compares (16 a budget instruction, as for strings made) and then compares as
// gopher-lua's OP_EQ, OP_LT and OP_LE do (metamethods included), with Lua 5.1's errors.
// A comparison with a string or number literal is left to the VM: it reads no more than
// the literal's bytes.

// The guards' globals and locals (see concatGuardName). `a ~= b` is `not eq(a, b)`;
// `a > b` and `a >= b` have guards of their own, so that the operands are still
// evaluated left to right, and compared as Lua compares them (b < a, b <= a: the error
// of `1 > 'x'` names the string first, as Lua 5.1's does).
const (
	eqGuardName = "compare guard =="
	ltGuardName = "compare guard <"
	leGuardName = "compare guard <="
	gtGuardName = "compare guard >"
	geGuardName = "compare guard >="
)

var compareGuardNames = map[string]string{"==": eqGuardName, "~=": eqGuardName,
	"<": ltGuardName, "<=": leGuardName, ">": gtGuardName, ">=": geGuardName}

// unguarded reports whether a comparison by op with the operand e is left to the VM: e
// is a string or a number literal, or nil, true or false compared for equality, which
// cannot fail. (An order comparison with nil, true or false always fails: guarded, it
// fails with Lua's words, compareError.)
func unguarded(op string, e ast.Expr) bool {
	switch e.(type) {
	case *ast.StringExpr, *ast.NumberExpr:
		return true
	case *ast.NilExpr, *ast.TrueExpr, *ast.FalseExpr:
		return op == "==" || op == "~="
	}
	return false
}

// guardCompare returns the comparison e as a call of its guard, unless an operand is a
// literal that bounds its cost (unguarded).
func (g *astGuard) guardCompare(e *ast.RelationalOpExpr) ast.Expr {
	name, ok := compareGuardNames[e.Operator]
	if !ok || unguarded(e.Operator, e.Lhs) || unguarded(e.Operator, e.Rhs) {
		return e
	}
	call := g.call(e, name, oneValue(e.Lhs), oneValue(e.Rhs))
	if e.Operator != "~=" {
		return call
	}
	not := &ast.UnaryNotOpExpr{Expr: call}
	not.SetLine(e.Line())
	not.SetLastLine(e.LastLine())
	return not
}

// chargeCompare charges the bytes a comparison of a and b reads, when both are strings:
// equality reads them only when their lengths are equal, order up to the shorter one's
// length.
func chargeCompare(L *lua.LState, a, b lua.LValue, order bool) {
	s, ok1 := a.(lua.LString)
	t, ok2 := b.(lua.LString)
	if !ok1 || !ok2 {
		return
	}
	switch {
	case order:
		chargeBytes(L, min(len(s), len(t)))
	case len(s) == len(t):
		chargeBytes(L, len(s))
	}
}

func eqGuard(L *lua.LState) int {
	a, b := L.Get(1), L.Get(2)
	chargeCompare(L, a, b, false)
	L.Push(lua.LBool(L.Equal(a, b)))
	return 1
}

func ltGuard(L *lua.LState) int {
	L.Push(lua.LBool(lessThan(L, L.Get(1), L.Get(2), false)))
	return 1
}

func gtGuard(L *lua.LState) int {
	L.Push(lua.LBool(lessThan(L, L.Get(2), L.Get(1), false)))
	return 1
}

func leGuard(L *lua.LState) int {
	L.Push(lua.LBool(lessEqual(L, L.Get(1), L.Get(2))))
	return 1
}

func geGuard(L *lua.LState) int {
	L.Push(lua.LBool(lessEqual(L, L.Get(2), L.Get(1))))
	return 1
}

// lessThan is a < b, as gopher-lua's OP_LT (numbers and strings by value, else __lt
// when both operands have the same) with Lua 5.1's error (compareError; inC: raised as
// from a C function, table.sort).
func lessThan(L *lua.LState, a, b lua.LValue, inC bool) bool {
	if x, ok := a.(lua.LNumber); ok {
		if y, ok := b.(lua.LNumber); ok {
			return x < y
		}
	} else if x, ok := a.(lua.LString); ok {
		if y, ok := b.(lua.LString); ok {
			chargeCompare(L, a, b, true)
			return x < y // byte order, as gopher-lua's and C's strcmp
		}
	}
	if r, ok := orderMeta(L, a, b, "__lt"); ok {
		return r
	}
	compareError(L, a, b, inC)
	return false
}

// lessEqual is a <= b, as gopher-lua's OP_LE: numbers and strings by value, else __le
// when both operands have the same, else not b < a by __lt.
func lessEqual(L *lua.LState, a, b lua.LValue) bool {
	if x, ok := a.(lua.LNumber); ok {
		if y, ok := b.(lua.LNumber); ok {
			return x <= y
		}
	} else if x, ok := a.(lua.LString); ok {
		if y, ok := b.(lua.LString); ok {
			chargeCompare(L, a, b, true)
			return x <= y
		}
	}
	if r, ok := orderMeta(L, a, b, "__le"); ok {
		return r
	}
	if r, ok := orderMeta(L, b, a, "__lt"); ok {
		return !r
	}
	compareError(L, a, b, false)
	return false
}

// orderMeta calls the order metamethod event of a and b when both have the same
// function there, and reports whether they did.
func orderMeta(L *lua.LState, a, b lua.LValue, event string) (result, ok bool) {
	if a.Type() != b.Type() || a.Type() == lua.LTNumber || a.Type() == lua.LTString {
		return false, false
	}
	m := L.GetMetaField(a, event)
	if m.Type() != lua.LTFunction || m != L.GetMetaField(b, event) {
		return false, false
	}
	L.Push(m)
	L.Push(a)
	L.Push(b)
	L.Call(2, 1)
	result = lua.LVAsBool(L.Get(-1))
	L.Pop(1)
	return result, true
}

// compareError raises Lua 5.1's error for values that do not compare (luaG_ordererror,
// which Redis scripts see; gopher-lua says "attempt to compare string with string"). Lua
// tells "two" values from the third letters of their type names, so a string and a
// thread are "two string values" there too. Raised in a C function (inC), the error
// names no line.
func compareError(L *lua.LState, a, b lua.LValue, inC bool) {
	t1, t2 := a.Type().String(), b.Type().String()
	msg := "attempt to compare " + t1 + " with " + t2
	if t1[2] == t2[2] {
		msg = "attempt to compare two " + t1 + " values"
	}
	if inC {
		L.Error(lua.LString(msg), 0)
	}
	L.RaiseError("%s", msg)
}
