package kvstore

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// string.find, match, gmatch and gsub as Lua 5.1's lstrlib.c has them, over the
// budgeted matcher of luapattern.go.
//
// gopher-lua's own also differed in cost: its gmatch found every match before the
// first iteration, and its gsub copied the whole string for each replacement (5.2 s for
// 64 KiB of one-character matches). gsub here builds its result in one pass, checking
// its length against scriptMaxString as it grows.

// patSpecials are the characters that make string.find match a pattern rather than
// search for the string.
const patSpecials = "^$*+?.([%-"

// boundPatterns installs the budgeted matching functions in the string library. Called
// before the library tables are made read-only.
func boundPatterns(L *lua.LState) {
	str := L.GetGlobal(lua.StringLibName).(*lua.LTable)
	str.RawSetString("find", L.NewFunction(func(L *lua.LState) int { return luaStrFind(L, true) }))
	str.RawSetString("match", L.NewFunction(func(L *lua.LState) int { return luaStrFind(L, false) }))
	str.RawSetString("gmatch", L.NewFunction(luaGmatch))
	str.RawSetString("gsub", L.NewFunction(luaGsub))
}

// startIndex is Lua's posrelat, then clamped to the string as 5.1's find clamps it: the
// 0-based index a search starts from.
func startIndex(init, n int) int {
	if init < 0 {
		init += n + 1
	}
	switch {
	case init < 1:
		return 0
	case init > n:
		return n
	}
	return init - 1
}

// beforeNUL is s up to its first NUL, as C's string functions read it.
func beforeNUL(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// luaStrFind is str_find_aux: string.find when find is set, else string.match.
func luaStrFind(L *lua.LState, find bool) int {
	src := L.CheckString(1)
	pat := L.CheckString(2)
	init := startIndex(L.OptInt(3, 1), len(src))
	if find && (lua.LVAsBool(L.Get(4)) || !strings.ContainsAny(beforeNUL(pat), patSpecials)) {
		if i := strings.Index(src[init:], pat); i >= 0 {
			L.Push(lua.LNumber(init + i + 1))
			L.Push(lua.LNumber(init + i + len(pat)))
			return 2
		}
		L.Push(lua.LNil)
		return 1
	}
	ms := newPatState(L, src, pat)
	defer ms.guard(L)
	p, anchor := 0, len(pat) > 0 && pat[0] == '^'
	if anchor {
		p = 1
	}
	for s := init; ; s++ {
		ms.reset()
		if e := ms.match(s, p); e >= 0 {
			if !find {
				return ms.pushCaptures(L, s, e, true)
			}
			L.Push(lua.LNumber(s + 1))
			L.Push(lua.LNumber(e))
			return ms.pushCaptures(L, s, e, false) + 2
		}
		if anchor || s >= len(src) {
			break
		}
	}
	L.Push(lua.LNil)
	return 1
}

// luaGmatch returns the iterator over the pattern's matches. In Lua 5.1 a '^' does not
// anchor it (it is the character '^').
func luaGmatch(L *lua.LState) int {
	src := L.CheckString(1)
	pat := L.CheckString(2)
	pos := 0
	L.Push(L.NewFunction(func(L *lua.LState) int {
		ms := newPatState(L, src, pat)
		defer ms.guard(L)
		for s := pos; s <= len(src); s++ {
			ms.reset()
			if e := ms.match(s, 0); e >= 0 {
				pos = e
				if e == s {
					pos++ // an empty match: the next starts one further
				}
				return ms.pushCaptures(L, s, e, true)
			}
		}
		return 0
	}))
	return 1
}

// luaGsub is str_gsub.
func luaGsub(L *lua.LState) int {
	src := L.CheckString(1)
	pat := L.CheckString(2)
	repl := L.Get(3)
	switch repl.Type() {
	case lua.LTNumber, lua.LTString, lua.LTTable, lua.LTFunction:
	default:
		L.ArgError(3, "string/function/table expected")
	}
	maxN := L.OptInt(4, len(src)+1)
	ms := newPatState(L, src, pat)
	defer ms.guard(L)
	p, anchor := 0, len(pat) > 0 && pat[0] == '^'
	if anchor {
		p = 1
	}
	out := make([]byte, 0, len(src))
	s, n := 0, 0
loop:
	for n < maxN {
		ms.reset()
		e := ms.match(s, p)
		if e >= 0 {
			n++
			out = ms.appendReplacement(L, out, repl, s, e)
		}
		switch {
		case e > s:
			s = e
		case s < len(src):
			out = append(out, src[s])
			s++
		default:
			break loop
		}
		if len(out) > scriptMaxString {
			panic(patError("not enough memory"))
		}
		if anchor {
			break
		}
	}
	if out = append(out, src[s:]...); len(out) > scriptMaxString {
		panic(patError("not enough memory"))
	}
	ms.charge(len(out) / scriptBytesPerInstruction) // what it made (chargeBytes)
	L.Push(lua.LString(out))
	L.Push(lua.LNumber(n))
	return 2
}

// appendReplacement appends what replaces the match from s to e (add_value).
func (ms *patState) appendReplacement(L *lua.LState, out []byte, repl lua.LValue, s, e int) []byte {
	var v lua.LValue
	switch r := repl.(type) {
	case lua.LString:
		return ms.appendExpanded(out, string(r), s, e)
	case lua.LNumber:
		return ms.appendExpanded(out, lua.LVAsString(r), s, e)
	case *lua.LTable:
		key := ms.captureValue(0, s, e)
		ms.settle() // an __index metamethod runs Lua code
		v = L.GetTable(r, key)
		ms.resume()
	case *lua.LFunction:
		L.Push(r)
		n := ms.pushCaptures(L, s, e, true)
		ms.settle()
		L.Call(n, 1)
		ms.resume()
		v = L.Get(-1)
		L.Pop(1)
	}
	switch v.Type() {
	case lua.LTNil:
		return append(out, ms.src[s:e]...) // false or nil: the match stays
	case lua.LTBool:
		if v == lua.LFalse {
			return append(out, ms.src[s:e]...)
		}
	case lua.LTString, lua.LTNumber:
		return append(out, lua.LVAsString(v)...)
	}
	panic(patError("invalid replacement value (a " + v.Type().String() + ")"))
}

// appendExpanded appends a replacement string (add_s): "%d" is capture d ("%0" the
// match), '%' before anything else is that character, and a '%' at the end is a NUL
// (lstrlib reads the string's terminator).
func (ms *patState) appendExpanded(out []byte, repl string, s, e int) []byte {
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		if c != '%' {
			out = append(out, c)
			continue
		}
		i++
		var d byte
		if i < len(repl) {
			d = repl[i]
		}
		switch {
		case !isDigit(d):
			out = append(out, d)
		case d == '0':
			out = append(out, ms.src[s:e]...)
		default:
			out = append(out, lua.LVAsString(ms.captureValue(int(d-'1'), s, e))...)
		}
	}
	return out
}
