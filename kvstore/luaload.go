package kvstore

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1's loadstring and load, which Redis's scripts and functions have. gopher-lua's
// own compile a chunk with its parser alone: past the bounds and guards every script
// gets (compileChunk: its size, its depth, the concatenation and table guards), so
// loadstring of a table constructor nested a million deep overflowed the applier's
// stack, a fatal error that ended every member an EVAL reached, and again at every
// replay. These compile through compileChunk, and name the chunk as Lua 5.1 does.

// luaIDSize is LUA_IDSIZE in the Lua Redis builds (a chunk name shows at most 79 bytes).
const luaIDSize = 80

// luaChunkID is luaO_chunkid: how a chunk named source shows in its messages. "=name"
// shows name; "@file" the file's name, its last part if long; anything else (the source
// itself, by default) [string "its first line"], cut short with "...".
func luaChunkID(source string) string {
	if i := strings.IndexByte(source, 0); i >= 0 {
		source = source[:i] // a C string
	}
	switch {
	case strings.HasPrefix(source, "="):
		return source[1:min(len(source), luaIDSize)]
	case strings.HasPrefix(source, "@"):
		name, room := source[1:], luaIDSize-len(" '...' ")-1
		if len(name) > room {
			return "..." + name[len(name)-room:]
		}
		return name
	}
	n, room := len(source), luaIDSize-len(` [string "..."] `)-1
	if i := strings.IndexAny(source, "\n\r"); i >= 0 {
		n = i
	}
	if n > room {
		n = room
	}
	if n < len(source) {
		return `[string "` + source[:n] + `..."]`
	}
	return `[string "` + source + `"]`
}

// installLoaders sets loadstring and load in the globals g. onError is the scripts'
// error handler: Lua 5.1 reads load's chunk under the handler of the protected call the
// script runs in, so an error in the reader reaches load's caller as Redis's handler
// made it, a table whose err is the message (which, returned, is an error reply).
func installLoaders(L *lua.LState, g *lua.LTable, onError *lua.LFunction) {
	g.RawSetString("loadstring", L.NewFunction(func(L *lua.LState) int {
		src := luaCheckString(L, "loadstring", 1)
		name := src
		if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
			name = luaCheckString(L, "loadstring", 2)
		}
		return pushChunk(L, src, name)
	}))
	g.RawSetString("load", L.NewFunction(func(L *lua.LState) int {
		name := "=(load)"
		if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
			name = luaCheckString(L, "load", 2)
		}
		reader, ok := L.Get(1).(*lua.LFunction)
		if !ok {
			detail := "function expected, got no value"
			if L.GetTop() >= 1 {
				detail = "function expected, got " + L.Get(1).Type().String()
			}
			raiseArgError(L, 1, "load", detail)
		}
		src, msg := readChunk(L, reader, onError)
		if msg != nil {
			L.Push(lua.LNil)
			L.Push(msg)
			return 2
		}
		return pushChunk(L, src, name)
	}))
}

// readChunk calls reader until it returns nil or an empty string, as Lua 5.1's
// generic_reader does, and returns the pieces joined, or the message load returns
// instead: the reader's error, or its returning what is neither a string nor a number.
// It stops reading past the longest chunk compileChunk takes (a reader that never ends
// runs the Lua 5.1 of Redis out of memory), which then refuses it.
func readChunk(L *lua.LState, reader, onError *lua.LFunction) (string, lua.LValue) {
	var b strings.Builder
	for b.Len() <= scriptMaxSource {
		L.Push(reader)
		if err := L.PCall(0, 1, onError); err != nil {
			if ae, ok := err.(*lua.ApiError); ok {
				return "", ae.Object
			}
			return "", lua.LString(err.Error())
		}
		piece := L.Get(-1)
		L.Pop(1)
		switch v := piece.(type) {
		case lua.LString:
			if len(v) == 0 {
				return b.String(), nil
			}
			b.WriteString(string(v))
		case lua.LNumber:
			b.WriteString(formatG(float64(v)))
		default:
			if piece == lua.LNil {
				return b.String(), nil
			}
			// luaL_error, at the line that called load, through the handler
			where := L.Where(1) // gopher-lua's has no space after the colon
			if where != "" {
				where += " "
			}
			L.Push(onError)
			L.Push(lua.LString(where + "reader function must return a string"))
			L.Call(1, 1)
			msg := L.Get(-1)
			L.Pop(1)
			return "", msg
		}
	}
	return b.String(), nil
}

// scriptCompileInstructions is what compiling a chunk costs a script, per byte of
// source: compiling is Go work the instruction count does not see, some 200-300 ns a
// byte (4 MB of `x = 1 + 2 * 3` 0.76 s, of `f(a, b, {1, 2})` 1.29 s), where an
// instruction takes 10-40. At 16 a script compiles at most 12 MB in all, a few seconds
// of its applier's time, however it loops over loadstring.
const scriptCompileInstructions = 16

// pushChunk compiles src as the chunk name, charging the script for it, and pushes the
// function, or nil and the message.
func pushChunk(L *lua.LState, src, name string) int {
	chargeInstructions(L, int64(len(src))*scriptCompileInstructions)
	proto, err := compileChunk(src, luaChunkID(name))
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString(err.Error()))
		return 2
	}
	L.Push(L.NewFunctionFromProto(proto))
	return 1
}
