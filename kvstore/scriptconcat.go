package kvstore

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
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
	rhs, rhsArg := L.Get(n), n // rhsArg: the argument rhs is, 0 once it is a result
	for i := n - 1; i >= 1; {
		lhs := L.Get(i)
		if !lua.LVCanConvToString(lhs) || !lua.LVCanConvToString(rhs) {
			op := L.GetMetaField(lhs, "__concat")
			if op == lua.LNil {
				op = L.GetMetaField(rhs, "__concat")
			}
			if op.Type() != lua.LTFunction {
				// luaG_concaterror: the left operand, unless it is a string or number
				if lua.LVCanConvToString(lhs) {
					L.RaiseError("%s", guardTypeError(L, "concatenate", rhsArg, rhs))
				}
				L.RaiseError("%s", guardTypeError(L, "concatenate", i, lhs))
			}
			L.Push(op)
			L.Push(lhs)
			L.Push(rhs)
			L.Call(2, 1)
			rhs, rhsArg = L.Get(-1), 0
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
			s := luaToString(L.Get(k))
			parts = append(parts, s)
			size += len(s)
		}
		last := luaToString(rhs)
		if size += len(last); size > scriptMaxString {
			L.RaiseError("not enough memory")
		}
		chargeBytes(L, size)
		rhs, rhsArg = lua.LString(strings.Join(append(parts, last), "")), 0
		i = first - 1
	}
	L.Push(rhs)
	return 1
}

// scriptMaxSyntaxDepth bounds how deeply a script's syntax nests (statements in
// blocks, expressions in expressions). gopher-lua's compiler recurses once per level:
// `return {{{...}}}` a million deep (a 2 MB script) exhausted the applier's stack,
// a fatal error no recover catches, so one EVAL ended every member, and again at every
// restart, as the entry was replayed. Lua 5.1 stops at 200 C levels ("chunk has too
// many syntax levels"), counting parentheses and right-nested operators but not a
// chain like 1 + 1 + ... + 1, which its parser loops over; this bound is on the tree
// gopher-lua builds, where such a chain nests, so it is high enough for the chains
// Redis takes (10,000 terms compile in ~10 MB of stack).
const scriptMaxSyntaxDepth = 10_000

// scriptMaxSource bounds a script's or a library's source. gopher-lua's parser takes
// from 25 to 525 times a chunk's size in memory before the depth can be checked
// (measured peaks: 12 MB of `local a = 1` 275 MB, 2 MB of `1 ^ 1 ^ ...` 1 GB), and every
// member parses every EVAL, so a body of Redis's 512 MB could exhaust the machine many
// times over, at every replay; 4 MiB keeps the worst under about 2 GB.
var scriptMaxSource = 4 << 20

// compileChunk compiles a script's or a library's source: bounded in length and depth,
// its concatenations, table assignments, lengths and comparisons guarded
// (scripttable.go, scriptcompare.go).
func compileChunk(src, chunkName string) (_ *lua.FunctionProto, err error) {
	// A panic compiling a client's chunk is a bug here or in gopher-lua; on the applier
	// it would end every member, and again at each replay of the entry. The chunk fails
	// to compile instead, on every member alike. (`function t:m() end`, whose name has
	// no Func, once made guardChunk dereference nil.)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: nanokv could not compile this chunk: %v", chunkName, r)
		}
	}()
	return compileBounded(src, chunkName)
}

// compileBounded is compileChunk but for its recover (FuzzCompileChunk calls it, to see
// a panic).
func compileBounded(src, chunkName string) (*lua.FunctionProto, error) {
	if len(src) > scriptMaxSource {
		return nil, fmt.Errorf("%s:1: chunk too long (%d bytes; nanokv compiles %d at most)", chunkName, len(src), scriptMaxSource)
	}
	// Lua 5.1's grammar first: gopher-lua's takes some chunks Lua 5.1 refuses (goto, an
	// escape past \255) and words its errors otherwise (luasyntax.go)
	if msg := luaSyntaxError(chunkName, src); msg != "" {
		return nil, errors.New(msg)
	}
	chunk, err := parse.Parse(strings.NewReader(src), chunkName)
	if err == nil {
		chunk, err = guardChunk(chunk, chunkName)
	}
	if err != nil {
		return nil, err
	}
	return lua.Compile(chunk, chunkName)
}

// guardChunk replaces every chain of concatenations in chunk with a call of the concat
// guard, and the table assignments and lengths of scripttable.go and the comparisons of
// scriptcompare.go with calls of theirs; each guard the chunk calls is held by a local
// it declares first (a register or an upvalue is faster to reach than a global). It
// refuses a chunk nested deeper than scriptMaxSyntaxDepth, with Lua's error; chunkName
// names the chunk in it.
func guardChunk(chunk []ast.Stmt, chunkName string) (_ []ast.Stmt, err error) {
	g := &astGuard{}
	defer func() {
		if r := recover(); r != nil {
			line, ok := r.(tooDeep)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%s:%d: chunk has too many syntax levels", chunkName, int(line))
		}
	}()
	g.stmts(chunk)
	if len(g.used) == 0 {
		return chunk, nil // a chunk that needs no guard does not pay for their locals
	}
	local := &ast.LocalAssignStmt{Names: g.used}
	for _, name := range g.used {
		local.Exprs = append(local.Exprs, &ast.IdentExpr{Value: name})
	}
	return append([]ast.Stmt{local}, chunk...), nil
}

// astGuard walks a chunk's tree, guarding it and counting its depth.
type astGuard struct {
	depth int
	temps int      // locals made for multiple assignments (guardAssign)
	used  []string // the guards the chunk calls, which it declares as locals first
}

// tooDeep is the line where the walk passed scriptMaxSyntaxDepth.
type tooDeep int

func (g *astGuard) enter(line int) {
	if g.depth++; g.depth > scriptMaxSyntaxDepth {
		panic(tooDeep(line))
	}
}

func (g *astGuard) stmts(stmts []ast.Stmt) {
	for i, s := range stmts {
		stmts[i] = g.stmt(s)
	}
}

// stmt returns s guarded: s changed in place, or what replaces it.
func (g *astGuard) stmt(s ast.Stmt) ast.Stmt {
	g.enter(s.Line())
	defer func() { g.depth-- }()
	switch s := s.(type) {
	case *ast.AssignStmt:
		g.exprs(s.Lhs)
		g.exprs(s.Rhs)
		return g.guardAssign(s)
	case *ast.LocalAssignStmt:
		g.exprs(s.Exprs)
	case *ast.FuncCallStmt:
		s.Expr = g.expr(s.Expr)
	case *ast.DoBlockStmt:
		g.stmts(s.Stmts)
	case *ast.WhileStmt:
		s.Condition = g.expr(s.Condition)
		g.stmts(s.Stmts)
	case *ast.RepeatStmt:
		s.Condition = g.expr(s.Condition)
		g.stmts(s.Stmts)
	case *ast.IfStmt:
		s.Condition = g.expr(s.Condition)
		g.stmts(s.Then)
		g.stmts(s.Else)
	case *ast.NumberForStmt:
		s.Init, s.Limit = g.expr(s.Init), g.expr(s.Limit)
		if s.Step != nil {
			s.Step = g.expr(s.Step)
		}
		g.stmts(s.Stmts)
	case *ast.GenericForStmt:
		g.exprs(s.Exprs)
		g.stmts(s.Stmts)
	case *ast.FuncDefStmt:
		if s.Name != nil {
			if s.Name.Func != nil { // nil for a method (function t:m()), which has a Receiver
				s.Name.Func = g.expr(s.Name.Func)
			}
			if s.Name.Receiver != nil {
				s.Name.Receiver = g.expr(s.Name.Receiver)
			}
		}
		g.stmts(s.Func.Stmts)
	case *ast.ReturnStmt:
		g.exprs(s.Exprs)
	}
	return s
}

// guardAssign returns the assignment s with every target whose key needs it
// (guardedKey) assigned by tableSetGuard. A single `t[k] = v` becomes
// `guard(t, k, v)`. A multiple assignment to a table field becomes a block that
// evaluates every target's table (and a guarded one's key) into locals first, then the
// values, then assigns them one by one, so that, as Lua requires, `i, a[i] = i + 1, 20`
// sets a at the old i, and `t, t.x = {}, 1` sets x in the old t (gopher-lua's own
// code set it in the new one).
func (g *astGuard) guardAssign(s *ast.AssignStmt) ast.Stmt {
	guarded, fields := false, false
	for _, l := range s.Lhs {
		if a, ok := l.(*ast.AttrGetExpr); ok {
			fields = true
			guarded = guarded || guardedKey(a.Key)
		}
	}
	if !guarded && (!fields || len(s.Lhs) == 1) {
		return s
	}
	if len(s.Lhs) == 1 && len(s.Rhs) == 1 {
		a := s.Lhs[0].(*ast.AttrGetExpr) // guarded
		return g.callStmt(s, tableSetGuardName, a.Object, a.Key, oneValue(s.Rhs[0]))
	}
	g.temps++
	temp := func(what string, i int) string {
		return fmt.Sprintf("assignment %d %s %d", g.temps, what, i) // not an identifier
	}
	targets := &ast.LocalAssignStmt{}
	values := &ast.LocalAssignStmt{Exprs: s.Rhs}
	var assigns []ast.Stmt
	for i, l := range s.Lhs {
		values.Names = append(values.Names, temp("value", i))
		value := ident(s, temp("value", i))
		a, ok := l.(*ast.AttrGetExpr)
		if !ok {
			assigns = append(assigns, assignStmt(s, l, value))
			continue
		}
		targets.Names = append(targets.Names, temp("table", i))
		targets.Exprs = append(targets.Exprs, a.Object)
		table := ident(s, temp("table", i))
		if !guardedKey(a.Key) {
			field := &ast.AttrGetExpr{Object: table, Key: a.Key}
			field.SetLine(a.Line())
			field.SetLastLine(a.LastLine())
			assigns = append(assigns, assignStmt(s, field, value))
			continue
		}
		targets.Names = append(targets.Names, temp("key", i))
		targets.Exprs = append(targets.Exprs, a.Key)
		assigns = append(assigns, g.callStmt(s, tableSetGuardName, table, ident(s, temp("key", i)), value))
	}
	block := &ast.DoBlockStmt{}
	if len(targets.Names) > 0 {
		block.Stmts = append(block.Stmts, targets)
	}
	block.Stmts = append(append(block.Stmts, values), assigns...)
	for _, st := range block.Stmts {
		st.SetLine(s.Line())
		st.SetLastLine(s.LastLine())
	}
	block.SetLine(s.Line())
	block.SetLastLine(s.LastLine())
	return block
}

// ident is a name, on at's lines.
func ident(at ast.PositionHolder, name string) *ast.IdentExpr {
	e := &ast.IdentExpr{Value: name}
	e.SetLine(at.Line())
	e.SetLastLine(at.LastLine())
	return e
}

// call is a call of the guard held by the local name, on at's lines, with one result.
func (g *astGuard) call(at ast.PositionHolder, name string, args ...ast.Expr) *ast.FuncCallExpr {
	if !slices.Contains(g.used, name) {
		g.used = append(g.used, name)
	}
	call := &ast.FuncCallExpr{Func: ident(at, name), Args: args, AdjustRet: true}
	call.SetLine(at.Line())
	call.SetLastLine(at.LastLine())
	return call
}

func (g *astGuard) callStmt(at ast.Stmt, name string, args ...ast.Expr) *ast.FuncCallStmt {
	st := &ast.FuncCallStmt{Expr: g.call(at, name, args...)}
	st.SetLine(at.Line())
	st.SetLastLine(at.LastLine())
	return st
}

func assignStmt(at ast.Stmt, lhs, rhs ast.Expr) *ast.AssignStmt {
	st := &ast.AssignStmt{Lhs: []ast.Expr{lhs}, Rhs: []ast.Expr{rhs}}
	st.SetLine(at.Line())
	st.SetLastLine(at.LastLine())
	return st
}

// oneValue makes e, as an argument, pass one value: a call's or a vararg's extra values
// are dropped, as where e stood.
func oneValue(e ast.Expr) ast.Expr {
	switch e := e.(type) {
	case *ast.FuncCallExpr:
		e.AdjustRet = true
	case *ast.Comma3Expr:
		e.AdjustRet = true
	}
	return e
}

func (g *astGuard) exprs(es []ast.Expr) {
	for i, e := range es {
		es[i] = g.expr(e)
	}
}

// expr returns e with its concatenations guarded.
func (g *astGuard) expr(e ast.Expr) ast.Expr {
	g.enter(e.Line())
	defer func() { g.depth-- }()
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
			// an operand is one value, as in the chain
			operands[i] = oneValue(g.expr(op))
		}
		return g.call(e, concatGuardName, operands...)
	case *ast.AttrGetExpr:
		e.Object, e.Key = g.expr(e.Object), g.expr(e.Key)
	case *ast.TableExpr:
		// Fields whose keys need a guard are set once the others have built the table
		// (Lua leaves the order of a constructor's assignments undefined).
		var kept []*ast.Field
		var guarded []ast.Expr
		for _, f := range e.Fields {
			if f.Key != nil {
				f.Key = g.expr(f.Key)
			}
			f.Value = g.expr(f.Value)
			if f.Key != nil && guardedKey(f.Key) {
				guarded = append(guarded, f.Key, oneValue(f.Value))
			} else {
				kept = append(kept, f)
			}
		}
		if len(guarded) > 0 {
			e.Fields = kept
			return g.call(e, tableCtorGuardName, append([]ast.Expr{e}, guarded...)...)
		}
	case *ast.FuncCallExpr:
		if e.Func != nil {
			e.Func = g.expr(e.Func)
		}
		if e.Receiver != nil {
			e.Receiver = g.expr(e.Receiver)
		}
		g.exprs(e.Args)
	case *ast.LogicalOpExpr:
		e.Lhs, e.Rhs = g.expr(e.Lhs), g.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		e.Lhs, e.Rhs = g.expr(e.Lhs), g.expr(e.Rhs)
		return g.guardCompare(e) // scriptcompare.go
	case *ast.ArithmeticOpExpr:
		e.Lhs, e.Rhs = g.expr(e.Lhs), g.expr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		e.Expr = g.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		e.Expr = g.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		return g.call(e, lenGuardName, oneValue(g.expr(e.Expr)))
	case *ast.FunctionExpr:
		g.stmts(e.Stmts)
	}
	return e
}
