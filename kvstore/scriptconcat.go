package kvstore

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// A script's entry is replayed from the log at every restart, on every member. A script
// that exhausts the memory therefore does not crash one server, as in Redis, but every
// member, and again whenever they restart: `local s = 'x' for i = 1, 40 do s = s .. s
// end` (2^40 bytes) ended a cluster for good. The string functions that can grow a
// string are bounded (scriptbudget.go, luastrlib.go); this bounds concatenation at the
// same scriptMaxString: a concatenation whose result would be longer fails with "not
// enough memory", Lua's error for a failed allocation, before it allocates, at the same
// instruction on every member.
//
// gopher-lua's VM concatenates in its OP_CONCAT instruction, which has no hook. So
// before a script or library is compiled, every chain of `..` in its syntax tree (a ..
// b .. c, one OP_CONCAT) becomes a call of concatGuard with the chain's operands, which
// concatenates them as OP_CONCAT does (strings and numbers joined at once, __concat
// metamethods pairwise from the right, the same error for anything else) once it has
// checked the result's length. The guard is a global under a name no Lua identifier can
// be, held by a local of that name the chunk declares first: a script's own locals
// cannot shadow it, and it is reached in a register or as an upvalue. Each call carries
// its chain's line, so an error names the script's line as before.

// concatGuardName is the name of the guard's global and local: not an identifier Lua
// code can declare.
const concatGuardName = "concat guard"

// concatGuard is the `..` of a guarded chain: its operands on the stack, the result
// returned.
func concatGuard(L *lua.LState) int {
	n := L.GetTop()
	rhs := L.Get(n)
	for i := n - 1; i >= 1; {
		lhs := L.Get(i)
		if !lua.LVCanConvToString(lhs) || !lua.LVCanConvToString(rhs) {
			op := L.GetMetaField(lhs, "__concat")
			if op == lua.LNil {
				op = L.GetMetaField(rhs, "__concat")
			}
			if op.Type() != lua.LTFunction {
				L.RaiseError("cannot perform concat operation between %v and %v", lhs.Type().String(), rhs.Type().String())
			}
			L.Push(op)
			L.Push(lhs)
			L.Push(rhs)
			L.Call(2, 1)
			rhs = L.Get(-1)
			L.Pop(1)
			i--
			continue
		}
		// join rhs and the run of strings and numbers that ends at i, at once
		first := i
		for first > 1 && lua.LVCanConvToString(L.Get(first-1)) {
			first--
		}
		parts := make([]string, 0, i-first+2)
		size := 0
		for k := first; k <= i; k++ {
			s := lua.LVAsString(L.Get(k))
			parts = append(parts, s)
			size += len(s)
		}
		last := lua.LVAsString(rhs)
		if size += len(last); size > scriptMaxString {
			L.RaiseError("not enough memory")
		}
		rhs = lua.LString(strings.Join(append(parts, last), ""))
		i = first - 1
	}
	L.Push(rhs)
	return 1
}

// guardConcat replaces every chain of concatenations in chunk with a call of the guard,
// which a local the chunk declares first holds (a register or an upvalue is faster to
// reach than a global).
func guardConcat(chunk []ast.Stmt) []ast.Stmt {
	guardStmts(chunk)
	global := &ast.IdentExpr{Value: concatGuardName}
	local := &ast.LocalAssignStmt{Names: []string{concatGuardName}, Exprs: []ast.Expr{global}}
	return append([]ast.Stmt{local}, chunk...)
}

func guardStmts(stmts []ast.Stmt) {
	for _, s := range stmts {
		guardStmt(s)
	}
}

func guardStmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.AssignStmt:
		guardExprs(s.Lhs)
		guardExprs(s.Rhs)
	case *ast.LocalAssignStmt:
		guardExprs(s.Exprs)
	case *ast.FuncCallStmt:
		s.Expr = guardExpr(s.Expr)
	case *ast.DoBlockStmt:
		guardStmts(s.Stmts)
	case *ast.WhileStmt:
		s.Condition = guardExpr(s.Condition)
		guardStmts(s.Stmts)
	case *ast.RepeatStmt:
		s.Condition = guardExpr(s.Condition)
		guardStmts(s.Stmts)
	case *ast.IfStmt:
		s.Condition = guardExpr(s.Condition)
		guardStmts(s.Then)
		guardStmts(s.Else)
	case *ast.NumberForStmt:
		s.Init, s.Limit = guardExpr(s.Init), guardExpr(s.Limit)
		if s.Step != nil {
			s.Step = guardExpr(s.Step)
		}
		guardStmts(s.Stmts)
	case *ast.GenericForStmt:
		guardExprs(s.Exprs)
		guardStmts(s.Stmts)
	case *ast.FuncDefStmt:
		if s.Name != nil {
			s.Name.Func = guardExpr(s.Name.Func)
			if s.Name.Receiver != nil {
				s.Name.Receiver = guardExpr(s.Name.Receiver)
			}
		}
		guardStmts(s.Func.Stmts)
	case *ast.ReturnStmt:
		guardExprs(s.Exprs)
	}
}

func guardExprs(es []ast.Expr) {
	for i, e := range es {
		es[i] = guardExpr(e)
	}
}

// guardExpr returns e with its concatenations guarded.
func guardExpr(e ast.Expr) ast.Expr {
	switch e := e.(type) {
	case *ast.StringConcatOpExpr:
		// a .. b .. c parses as a .. (b .. c): the chain's operands, left to right
		var operands []ast.Expr
		var cur ast.Expr = e
		for {
			c, ok := cur.(*ast.StringConcatOpExpr)
			if !ok {
				operands = append(operands, cur)
				break
			}
			operands = append(operands, c.Lhs)
			cur = c.Rhs
		}
		for i, op := range operands {
			op = guardExpr(op)
			// an operand is one value, as in the chain: a call's or a vararg's extra
			// values are dropped
			switch op := op.(type) {
			case *ast.FuncCallExpr:
				op.AdjustRet = true
			case *ast.Comma3Expr:
				op.AdjustRet = true
			}
			operands[i] = op
		}
		guard := &ast.IdentExpr{Value: concatGuardName}
		guard.SetLine(e.Line())
		guard.SetLastLine(e.LastLine())
		call := &ast.FuncCallExpr{Func: guard, Args: operands, AdjustRet: true}
		call.SetLine(e.Line())
		call.SetLastLine(e.LastLine())
		return call
	case *ast.AttrGetExpr:
		e.Object, e.Key = guardExpr(e.Object), guardExpr(e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			if f.Key != nil {
				f.Key = guardExpr(f.Key)
			}
			f.Value = guardExpr(f.Value)
		}
	case *ast.FuncCallExpr:
		if e.Func != nil {
			e.Func = guardExpr(e.Func)
		}
		if e.Receiver != nil {
			e.Receiver = guardExpr(e.Receiver)
		}
		guardExprs(e.Args)
	case *ast.LogicalOpExpr:
		e.Lhs, e.Rhs = guardExpr(e.Lhs), guardExpr(e.Rhs)
	case *ast.RelationalOpExpr:
		e.Lhs, e.Rhs = guardExpr(e.Lhs), guardExpr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		e.Lhs, e.Rhs = guardExpr(e.Lhs), guardExpr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		e.Expr = guardExpr(e.Expr)
	case *ast.UnaryNotOpExpr:
		e.Expr = guardExpr(e.Expr)
	case *ast.UnaryLenOpExpr:
		e.Expr = guardExpr(e.Expr)
	case *ast.FunctionExpr:
		guardStmts(e.Stmts)
	}
	return e
}
