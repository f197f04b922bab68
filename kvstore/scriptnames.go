package kvstore

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

// A script runs on every member, so whatever it can observe must be the same on every
// member. gopher-lua names a table, a function, a coroutine or a userdata by its Go
// address ("table: 0xc000123450"), which differs from member to member: a script that
// ran `redis.call('set', KEYS[1], tostring({}))` stored another value on each, and
// their states diverged for good. (Redis replicates a script's effects, so there the
// address is harmless.) So tostring names such a value by the order in which the
// script first asked for a name, from 1, in an address's form ("table: 0x00000001"),
// the same on every member and the same for one value throughout a run; and
// string.format's %s takes strings and numbers only, as Lua 5.1's does, where
// gopher-lua printed the address.

// forEachInOrder calls f with each key and value of t, as pairs (LTable.Next) gives
// them: the array part, then the other keys in the order they were first set. gopher-lua's
// ForEach ranges over Go maps, whose order is drawn at random at every range: with it,
// cjson.encode of an object listed its members in another order on every member and at
// every call, and a script that stored one made the members' states diverge.
func forEachInOrder(t *lua.LTable, f func(k, v lua.LValue)) {
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		f(k, v)
	}
}

// objectName is tostring's name for v, a table, function, coroutine or userdata.
func (vm *scriptVM) objectName(v lua.LValue) string {
	if vm.names == nil {
		vm.names = map[lua.LValue]int{}
	}
	id, ok := vm.names[v]
	if !ok {
		id = len(vm.names) + 1
		vm.names[v] = id
	}
	return fmt.Sprintf("%s: 0x%08x", v.Type().String(), id)
}

// nameObjects installs tostring, which names tables and functions as this VM numbers
// them. Called before the library tables are made read-only.
func (vm *scriptVM) nameObjects(L *lua.LState) {
	g := L.Get(lua.GlobalsIndex).(*lua.LTable)
	tostring := g.RawGetString("tostring").(*lua.LFunction).GFunction
	g.RawSetString("tostring", L.NewFunction(func(L *lua.LState) int {
		v := L.CheckAny(1)
		if L.GetMetaField(v, "__tostring") == lua.LNil {
			switch v.(type) {
			case lua.LNumber:
				L.Push(lua.LString(luaToString(v)))
				return 1
			case *lua.LTable, *lua.LFunction, *lua.LState, *lua.LUserData:
				L.Push(lua.LString(vm.objectName(v)))
				return 1
			}
		}
		return tostring(L)
	}))
}

// quotedLen is the length of luaQuoted(s).
func quotedLen(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\\', '\n', '\r':
			n++
		case 0:
			n += 3
		}
	}
	return n
}

// luaQuoted is Lua 5.1's %q of s (addquoted).
func luaQuoted(s string) string {
	b := []byte{'"'}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\', '\n':
			b = append(b, '\\', c)
		case '\r':
			b = append(b, '\\', 'r')
		case 0:
			b = append(b, '\\', '0', '0', '0')
		default:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}
