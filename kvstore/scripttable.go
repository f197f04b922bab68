package kvstore

import (
	"math"
	"reflect"
	"sort"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// gopher-lua keeps a table's integer keys from 1 in a Go slice (LTable's array part),
// and treats that slice in two ways Lua 5.1 does not, each of which one short script
// turned into the end of a cluster (every member applies the script, and replays it at
// every restart):
//
//   - An assignment past the end pads the slice with nils up to the key: `t[8e6] = 1`
//     on an empty table allocates 128 MB in one instruction, unseen by the budget, and
//     up to 1 GB with a key under 2^26. Eight such assignments, a script of 80 bytes,
//     took 12 s and a member's RSS from 29 MB to 1.5 GB; a few dozen would exhaust any
//     machine. Lua 5.1 stores such a key in the hash part.
//   - `#t` scans back from the end of the slice over every nil there, and assigning nil
//     never shortens it, so the stack idiom `t[#t] = nil` pops n values in O(n^2):
//     40,000 pops took 14.8 s (Redis: milliseconds) and 1M would stall every applier
//     for hours. Lua 5.1 finds a border by binary search.
//
// So, as for concatenation (scriptconcat.go), the compiler never sees these operations
// as they are written: before a chunk is compiled, an assignment to a table field whose
// key is not a constant that cannot pad (a string, or a number outside 65..2^26) becomes
// a call of tableSetGuard, a keyed field of a table constructor with such a key is set by
// tableCtorGuard once the table is built, and `#x` becomes a call of lenGuard. The first
// two charge padding to the script's budget as memory it makes (chargeBytes, 16 bytes an
// element) before they let gopher-lua pad; lenGuard answers with Lua 5.1's border
// search. rawset (newScriptVM's), table.insert and table.remove, which pad or shift the
// slice too, are charged the same way (boundTables), table.concat and table.maxn for
// their scans, table.sort for its comparisons; table.getn is `#`, and so is the end
// that unpack, table.sort, table.insert and table.remove (Lua 5.1's, now) take.
//
// The guards read the slice's length, which gopher-lua does not export, through
// reflection (arrayLen); TestTableGuardsKnowTheArrayPart fails if an upgrade of
// gopher-lua moves it.

// The guards' globals and locals: not identifiers Lua code can declare (see
// concatGuardName).
const (
	tableSetGuardName  = "table set guard"
	tableCtorGuardName = "table constructor guard"
	lenGuardName       = "length guard"
)

// padFreeKey is the largest constant integer key the compiler may set unguarded: at
// most this many nils of padding (1 KiB) per instruction.
const padFreeKey = 64

// arraySlotBytes is the size of an element of a table's array part (an interface).
const arraySlotBytes = 16

// ltableArray is the index of LTable's array part among its fields.
var ltableArray = func() int {
	f, ok := reflect.TypeOf(lua.LTable{}).FieldByName("array")
	if !ok || f.Type != reflect.TypeOf([]lua.LValue(nil)) {
		return -1
	}
	return f.Index[0]
}()

// arrayLen is the length of t's array part, nils at its end included.
func arrayLen(t *lua.LTable) int {
	return reflect.ValueOf(t).Elem().Field(ltableArray).Len()
}

// border is what `#t` answers: as Lua 5.1's luaH_getn over the array part, the length of
// the array part if its last element is set, else a border found by binary search (an
// index i with t[i] set and t[i+1] nil, or 0). For a sequence it is its length, whatever
// the nils after it; where a table has holes, Lua allows any border.
func border(t *lua.LTable) int {
	hi := arrayLen(t)
	if hi == 0 || t.RawGetInt(hi) != lua.LNil {
		return hi
	}
	lo := 0 // t[lo] is set (or lo is 0); t[hi] is nil
	for hi-lo > 1 {
		m := lo + (hi-lo)/2
		if t.RawGetInt(m) == lua.LNil {
			hi = m
		} else {
			lo = m
		}
	}
	return lo
}

// chargePadding charges the script for the nils gopher-lua would add to t's array part
// to store key there.
func chargePadding(L *lua.LState, t *lua.LTable, key lua.LValue) {
	n, ok := key.(lua.LNumber)
	if !ok || n <= 1 || n >= lua.LNumber(lua.MaxArrayIndex) || n != lua.LNumber(math.Floor(float64(n))) {
		return
	}
	if pad := int(n) - arrayLen(t) - 1; pad > 0 {
		chargeBytes(L, pad*arraySlotBytes)
	}
}

// tableSetGuard is `t[k] = v`: its operands on the stack. It does what gopher-lua's
// OP_SETTABLE does (LState.setField: __newindex functions and tables, its errors), and
// charges the padding of the table that stores the value.
func tableSetGuard(L *lua.LState) int {
	obj, key, val := L.Get(1), L.Get(2), L.Get(3)
	for loop := range lua.MaxTableGetLoop {
		t, isTable := obj.(*lua.LTable)
		if isTable && t.RawGet(key) != lua.LNil {
			L.RawSet(t, key, val)
			return 0
		}
		meta := L.GetMetaField(obj, "__newindex")
		if meta == lua.LNil {
			if !isTable {
				arg := 1 // the table operand, named as the script names it (luaerrors.go)
				if loop > 0 {
					arg = 0 // a __newindex of it
				}
				L.RaiseError("%s", guardTypeError(L, "index", arg, obj))
			}
			chargePadding(L, t, key)
			L.RawSet(t, key, val)
			return 0
		}
		if meta.Type() == lua.LTFunction {
			L.Push(meta)
			L.Push(obj)
			L.Push(key)
			L.Push(val)
			L.Call(3, 0)
			return 0
		}
		obj = meta
	}
	L.RaiseError("too many recursions in settable")
	return 0
}

// tableCtorGuard sets the guarded fields of a table constructor: the table built from
// the others, then key and value pairs. It returns the table.
func tableCtorGuard(L *lua.LState) int {
	t := L.CheckTable(1)
	for i := 2; i < L.GetTop(); i += 2 {
		key := L.Get(i)
		chargePadding(L, t, key)
		L.RawSet(t, key, L.Get(i+1))
	}
	L.SetTop(1)
	return 1
}

// lenGuard is `#x`, as gopher-lua's OP_LEN (a string's length, __len), but a table's is
// border's, and the error is Lua 5.1's, naming x as the script does (gopher-lua said
// "__len undefined").
func lenGuard(L *lua.LState) int {
	v := L.Get(1)
	if s, ok := v.(lua.LString); ok {
		L.Push(lua.LNumber(len(s)))
		return 1
	}
	if op := L.GetMetaField(v, "__len"); op.Type() == lua.LTFunction {
		L.Push(op)
		L.Push(v)
		L.Call(1, 1)
		return 1
	}
	t, ok := v.(*lua.LTable)
	if !ok {
		L.RaiseError("%s", guardTypeError(L, "get length of", 1, v))
	}
	L.Push(lua.LNumber(border(t)))
	return 1
}

// boundTables makes the table library's functions that pad, shift, scan or sort a
// table's array part charge for it, and those that take `#` take border. Called before
// the library tables are made read-only.
func boundTables(L *lua.LState) {
	wrap := func(lib *lua.LTable, name string, charge func(L *lua.LState)) {
		orig := lib.RawGetString(name).(*lua.LFunction).GFunction
		lib.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			charge(L)
			return orig(L)
		}))
	}
	tab := L.GetGlobal(lua.TabLibName).(*lua.LTable)
	// insert and remove are Lua 5.1's (tinsert, tremove) over `#`: gopher-lua's appended
	// after scanning back over the nils at the end of the array part, removed such a nil
	// instead of t[#t], and took any number of arguments. The elements they shift cost
	// as their bytes do: a memmove of 16 of them takes about an instruction's time.
	insert := tab.RawGetString("insert").(*lua.LFunction).GFunction
	tab.RawSetString("insert", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		switch L.GetTop() {
		case 2:
			if v := L.Get(2); v != lua.LNil {
				t.RawSetInt(border(t)+1, v)
			}
			return 0
		case 3:
			pos, n := L.CheckInt(2), arrayLen(t)
			if pos > n {
				chargePadding(L, t, lua.LNumber(pos))
			} else if pos >= 1 {
				chargeBytes(L, n-pos+1)
			}
			return insert(L)
		}
		raiseAsC(L, "wrong number of arguments to 'insert'")
		return 0
	}))
	tab.RawSetString("remove", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		e := border(t)
		pos := L.OptInt(2, e)
		if pos < 1 || pos > e {
			return 0 // nothing to remove
		}
		chargeBytes(L, arrayLen(t)-pos)
		L.Push(t.Remove(pos)) // shifts t[pos+1..] down: t[e] becomes nil
		return 1
	}))
	tab.RawSetString("getn", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LNumber(border(L.CheckTable(1))))
		return 1
	}))
	// table.sort sorts t[1..#t] as Lua 5.1 does (gopher-lua sorted its whole array part,
	// and failed comparing the nils at its end), by the function given or as `<` does
	// (lessThan: the bytes of strings charged, Lua's errors), and charges every
	// comparison as an instruction: sorting 1M numbers makes 20M of them in one call.
	tab.RawSetString("sort", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		s := &luaSorter{L: L}
		if L.GetTop() > 1 && L.Get(2) != lua.LNil {
			s.fn = L.CheckFunction(2)
		}
		n := border(t)
		chargeBytes(L, n*arraySlotBytes)
		s.vals = make([]lua.LValue, n)
		for i := range s.vals {
			s.vals[i] = t.RawGetInt(i + 1)
		}
		sort.Sort(s)
		for i, v := range s.vals {
			t.RawSetInt(i+1, v)
		}
		return 0
	}))
	// gopher-lua's concat and maxn scan back over the nils at the end of the array part
	// (its Len, MaxN): an instruction for each, at most, as they cost about that much.
	for _, name := range []string{"concat", "maxn"} {
		wrap(tab, name, func(L *lua.LState) {
			t := L.CheckTable(1)
			chargeBytes(L, (arrayLen(t)-border(t))*scriptBytesPerInstruction)
		})
	}
}

// luaSorter is table.sort's sort.Interface.
type luaSorter struct {
	L    *lua.LState
	fn   *lua.LFunction // nil: by `<`
	vals []lua.LValue
}

func (s *luaSorter) Len() int      { return len(s.vals) }
func (s *luaSorter) Swap(i, j int) { s.vals[i], s.vals[j] = s.vals[j], s.vals[i] }

func (s *luaSorter) Less(i, j int) bool {
	chargeBytes(s.L, scriptBytesPerInstruction)
	if s.fn == nil {
		return lessThan(s.L, s.vals[i], s.vals[j], true)
	}
	s.L.Push(s.fn)
	s.L.Push(s.vals[i])
	s.L.Push(s.vals[j])
	s.L.Call(2, 1)
	less := lua.LVAsBool(s.L.Get(-1))
	s.L.Pop(1)
	return less
}

// guardedKey reports whether assigning to a field under key needs tableSetGuard: unless
// the key is a constant that cannot pad the array part.
func guardedKey(key ast.Expr) bool {
	switch k := key.(type) {
	case *ast.StringExpr, *ast.NilExpr, *ast.TrueExpr, *ast.FalseExpr:
		return false
	case *ast.NumberExpr:
		// the conversion the compiler makes of the literal
		n := float64(lua.LVAsNumber(lua.LString(k.Value)))
		return n > padFreeKey && n < float64(lua.MaxArrayIndex) && n == math.Floor(n)
	}
	return true
}
