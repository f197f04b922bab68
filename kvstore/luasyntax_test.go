package kvstore

import (
	"strings"
	"testing"
)

// The checker takes what Lua 5.1 takes: every script of this package's tests that
// compiles, and the corners of the grammar below.
func TestLuaSyntaxAcceptsLua51(t *testing.T) {
	for _, src := range []string{
		"", "return", "return;", "return 1;", "local a, b = 1, 2 return a + b",
		"local t = {1, 2; x = 3, [4] = 5, f = function(...) return ... end,} return #t",
		"function a.b.c:d(x, ...) return self, x end", "local function f() end f() f'x' f{1} f[[s]]",
		"for i = 1, 10, 2 do break end for k, v in pairs({}) do end",
		"while false do end repeat local x = 1 until x == 1 do end",
		"if a then elseif b then else end", "return a and b or not c", "return -x ^ 2 .. 'a' .. 1",
		"return 1 == 2, 1 ~= 2, 1 <= 2, 1 >= 2, 1 < 2, 1 > 2, 5 % 3, 1 / 2, 2 * 3",
		"return 0xff, 1e10, 1.5e-3, .5, 3., 0x10", "return [==[a]]b]==], [[\nx]], 'a\\'b', \"\\065\\n\\\\\"",
		"--[[ long\ncomment ]] -- short\nreturn 1", "--[==[ x ]==] return 1", "a = {} a.b = {} a.b[1], a.c = 1, 2",
		"return (f)(1)", "return ('x'):rep(3)", "local x = redis.call('GET', KEYS[1]) return x",
		"return {f(x)} ", "return function() return function() end end",
	} {
		if msg := luaSyntaxError("user_script", src); msg != "" {
			t.Errorf("%q: %s", src, msg)
		}
	}
}

// Whatever the input, the checker answers with a message of Lua's shape or nothing.
func FuzzLuaSyntax(f *testing.F) {
	for _, s := range []string{"return 1 +", "x = ", "local a = {1,2", "return \"abc", "for i=1 do end",
		"return [==[ab", "--[[ x", "return 0x1g", "function f(a b) end", "return " + strings.Repeat("(", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if msg := luaSyntaxError("user_script", src); msg != "" && !strings.HasPrefix(msg, "user_script:") {
			t.Fatalf("%q: %q", src, msg)
		}
	})
}

// FuzzCompileChunk compiles what Lua 5.1 takes as gopher-lua parses it, guarded
// (guardChunk), without compileChunk's recover: a panic there is a bug that, on the
// applier, compileChunk can only turn into a compile error. `function t:m() end` was
// one (a nil dereference in guardChunk).
func FuzzCompileChunk(f *testing.F) {
	for _, s := range []string{
		"local t = {} function t:m(a, ...) return self, a, ... end return t:m(1)",
		"local t = {u = {}} function t.u.v(x) return #x .. 'a' .. x end",
		"local a, b = 1, 2 a, b = b, a return a .. b .. (a == b and 'x' or 'y')",
		"local t = {[1] = 1, x = 2, [{}] = 3, 'v'; f = function() end} t[#t + 1] = t.x return t",
		"repeat local x = 1 until x > 0 for i = 1, 3, 1 do end for k, v in pairs({}) do break end",
		"while false do local f = function(...) local a = {...} return select('#', ...) end end",
		"if a then elseif b < c then else return -x ^ 2 % 3 ~= not y end",
		"local function f(n) if n <= 1 then return 1 end return n * f(n - 1) end return f(5)",
		"return (function(...) return ... end)(1, 2), {...}, #KEYS, ARGV[1] <= '0'",
		"do local s = '' for i = 1, 10 do s = s .. i end return s end",
		"local mt = setmetatable({}, {__index = function(t, k) return k end}) return mt.a, mt['b'], mt:c()",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 1<<16 || luaSyntaxError("user_script", src) != "" {
			return
		}
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("%q: compiling panicked: %v", src, r)
			}
		}()
		compileBounded(src, "user_script")
	})
}
