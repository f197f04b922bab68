package kvstore

import (
	"strconv"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/pm"
)

// gopher-lua's string.gsub builds its result one replacement at a time, copying the
// whole string for each: time quadratic in the matches (5.2 s for 64 KiB of
// one-character matches, which the instruction count does not see), so one gsub over a
// large string stalled every member's applier for hours. luaGsub answers as gopher-lua's
// does (its matches, its replacement rules, its errors) and builds the result in one
// pass, checking its length against scriptMaxString as it grows.
func luaGsub(L *lua.LState) int {
	str := L.CheckString(1)
	pat := L.CheckString(2)
	L.CheckTypes(3, lua.LTString, lua.LTTable, lua.LTFunction)
	repl := L.CheckAny(3)
	limit := L.OptInt(4, -1)
	matches, err := pm.Find(pat, []byte(str), 0, limit)
	if err != nil {
		L.RaiseError("%s", err.Error())
	}
	if len(matches) == 0 {
		L.SetTop(1)
		L.Push(lua.LNumber(0))
		return 2
	}
	out := make([]byte, 0, len(str))
	prev := 0
	for _, m := range matches {
		start, end := m.Capture(0), m.Capture(1)
		var value string
		replaced := true
		switch r := repl.(type) {
		case lua.LString:
			value = expandGsubRepl(L, string(r), m, str)
		case *lua.LTable:
			idx := 0
			if m.CaptureLength() > 2 {
				idx = 2 // the first capture
			}
			var v lua.LValue
			if m.IsPosCapture(idx) {
				v = L.GetTable(r, lua.LNumber(m.Capture(idx)))
			} else {
				v = L.GetField(r, str[m.Capture(idx):m.Capture(idx+1)])
			}
			replaced, value = !lua.LVIsFalse(v), lua.LVAsString(v)
		case *lua.LFunction:
			L.Push(r)
			nargs := 0
			for i := 2; i < m.CaptureLength(); i += 2 {
				if m.IsPosCapture(i) {
					L.Push(lua.LNumber(m.Capture(i)))
				} else {
					L.Push(lua.LString(gsubCapture(L, m, str, i)))
				}
				nargs++
			}
			if nargs == 0 {
				L.Push(lua.LString(gsubCapture(L, m, str, 0)))
				nargs = 1
			}
			L.Call(nargs, 1)
			v := L.Get(-1)
			L.Pop(1)
			replaced, value = !lua.LVIsFalse(v), lua.LVAsString(v)
		}
		if !replaced {
			continue // the match stays as it was
		}
		out = append(append(out, str[prev:start]...), value...)
		prev = end
		if len(out) > scriptMaxString {
			L.RaiseError("not enough memory")
		}
	}
	out = append(out, str[prev:]...)
	if len(out) > scriptMaxString {
		L.RaiseError("not enough memory")
	}
	L.Push(lua.LString(out))
	L.Push(lua.LNumber(len(matches)))
	return 2
}

// expandGsubRepl is a string replacement for match m, as gopher-lua expands one: "%%"
// is "%", "%d" the d-th capture ("%0" the match, "%1" the match too when the pattern
// has no captures), "%" and any other character both kept, a "%" at the end kept.
func expandGsubRepl(L *lua.LState, repl string, m *pm.MatchData, str string) string {
	var b []byte
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		switch {
		case c != '%' || i == len(repl)-1:
			b = append(b, c)
		case repl[i+1] == '%':
			b = append(b, '%')
			i++
		default:
			i++
			if d := repl[i]; d >= '0' && d <= '9' {
				b = append(b, gsubCapture(L, m, str, 2*int(d-'0'))...)
			} else {
				b = append(b, '%', d)
			}
		}
	}
	return string(b)
}

// gsubCapture is capture idx/2 of m (idx 0: the whole match; 2 without captures: the
// whole match too), a position capture as its number.
func gsubCapture(L *lua.LState, m *pm.MatchData, str string, idx int) string {
	if idx > 2 && idx >= m.CaptureLength() {
		L.RaiseError("invalid capture index")
	}
	if idx >= m.CaptureLength() && idx == 2 {
		idx = 0
	}
	if m.IsPosCapture(idx) {
		return strconv.Itoa(m.Capture(idx))
	}
	return str[m.Capture(idx):m.Capture(idx+1)]
}
