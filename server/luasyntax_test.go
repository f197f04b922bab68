package server

import (
	"fmt"
	"strings"
	"testing"
)

// TestLuaSyntaxErrorsAsRedis: a script that does not compile gets Lua 5.1's own message,
// as Redis gives it, where gopher-lua's parser worded its own ("line:1(column:12) near
// 'end': syntax error"); and what Lua 5.1 refuses but gopher-lua took (goto, labels, an
// escape past \255) is refused. Valid scripts around the edges of the grammar compile.
func TestLuaSyntaxErrorsAsRedis(t *testing.T) {
	sameAsRedis(t, []string{
		// parser
		"return 1 +", "x = ", "local a = {1,2", "if true then return 1", "return 1 end", "for i=1 do end",
		"x", "f() = 1", "(a) = 1", "a.b", "a, f() = 1, 2", "break", "local function f() return ... end",
		"for i in x", "for i x", "for 1 = 2", "return a:b", "return a:b.c()", "return {a b}", "return {[1] 2}",
		"return 1 ~ 2", "local", "local 1", "function f(a,) end", "function f(a b) end", "function f(...) return ... end return 1",
		"function (a) end", "function a.b:c.d() end", "return function() end end", "local x <const> = 1",
		"goto done", "::done::", "return 1 // 2", "x = 1 y = 2 return x", "repeat local x = 1 until", "while true do",
		"do return end x = 1", "return return", "return;;", "if x then elseif then end", "return (1",
		"return f\n(1)", "local t = {} t\n.x = 1 return 1", "return nil + ", "return not", "return #", "return - - 1",
		"return {x = }", "return {= 1}", "return {1, 2,}", "return {1; 2; x = 3,}", "return a.", "return a[1",
		"function f()\n  if x then\n    return 1\n  else\nend", "local t = {\n1,\n2\n", "x = (1\n+\n2",
		"return 'a' .. ", "return ...", "return function(...) return ... end", "return function(a, ...) end",
		// lexer
		"return @", "return $", "return `", "return \"abc", "return 'ab\nc'", "return \"a\\300\"", "return \"a\\255\"",
		"return \"a\\q\"", "return \"\\\n\"", "return 3x", "return 0x", "return 0x1g", "return 1e", "return 1.2.3",
		"return .5", "return 0xA", "return 1e+5", "return 1e-", "return 5..", "return 1..2",
		"return [==[ab", "return [=x", "return [[a [[b]]", "return [[\nx]]", "return [==[a]]b]==]",
		"--[[ unfinished", "--[==[ x ]=] y", "-- a comment\nreturn 1 +", "--[[ x\n]] return 1 +",
		"return \x01", "return \x7f", "return 'a\\0b'", "return '\\0001'", "return 'a\\0b", "return 'a\\0b\nx'",
	})
}

// Deep nesting meets Lua 5.1's limit of 200 syntax levels where Redis's Lua does.
func TestLuaSyntaxLevelsAsRedis(t *testing.T) {
	var scripts []string
	for _, n := range []int{190, 197, 198, 199, 200, 250} {
		scripts = append(scripts,
			"return "+strings.Repeat("(", n)+"1"+strings.Repeat(")", n),
			strings.Repeat("do ", n)+strings.Repeat("end ", n)+"return 1",
			"return "+strings.Repeat("-", n)+"1",
			"return "+strings.Repeat("{", n)+strings.Repeat("}", n))
	}
	sameAsRedis(t, scripts)
}

// Scripts broken at random (tokens inserted, bytes deleted) compile, or fail with the
// same message, on both servers. SCRIPT LOAD compiles without running.
func TestLuaSyntaxRandomAsRedis(t *testing.T) {
	r, n := redisAndNanokv(t)
	bases := []string{
		"local t = {1, 2, x = 'a'} return t[1] + #t",
		"local function f(a, ...) if a then return ... elseif not a then return 1 else return 2 end end return f(1, 2)",
		"return redis.call('SET', KEYS[1], ARGV[1]) and \"ok\" .. [[x]]",
		"local s = 0 do s = s + 1 end return {s, (s), -s ^ 2, s % 3 ~= 1}",
		"local a, b = 1, 2 a, b = b, a return a .. b",
		"return function(x) return x:upper() end, ('y'):rep(2)",
	}
	tokens := []string{"end", "(", ")", "=", ",", "{", "}", "then", "do", "'", "\"", "[[", "]]", "..", "...", "1",
		"x", "local", "function", "return", ";", "\n", "--", "[", "]", ".", ":", "if", "else", "not", "#", "0x", "\\", "~"}
	rnd := uint64(0x9e3779b97f4a7c15)
	next := func(k int) int { rnd ^= rnd << 13; rnd ^= rnd >> 7; rnd ^= rnd << 17; return int(rnd % uint64(k)) }
	refused := 0
	for i := 0; i < 600; i++ {
		s := bases[next(len(bases))]
		for m := 0; m <= next(2); m++ {
			at := next(len(s) + 1)
			if next(3) == 0 && at < len(s) {
				s = s[:at] + s[at+1:]
			} else {
				s = s[:at] + " " + tokens[next(len(tokens))] + " " + s[at:]
			}
		}
		want, err1 := r.do("SCRIPT", "LOAD", s)
		got, err2 := n.do("SCRIPT", "LOAD", s)
		if err1 != nil || err2 != nil {
			t.Fatalf("%q: %v %v", s, err1, err2)
		}
		if render(got) != render(want) {
			t.Errorf("%q:\n nanokv       %s\n redis-server %s", s, render(got), render(want))
		}
		if strings.Contains(render(want), "Error compiling") {
			refused++
		}
	}
	// the mutations must break some scripts and leave others whole
	if refused < 200 || refused > 550 {
		t.Fatalf("redis-server refused %d of 600 scripts", refused)
	}
}

// TestLuaLimitsAsRedis: a function with more than 200 locals in scope, or more than 60
// upvalues, is refused as Lua 5.1 refuses it (the function's line, the line where the
// parser was), counting as Lua counts: the hidden variables of a for loop, self, the arg
// of a vararg function, locals whose scope ended, an upvalue used twice, an upvalue
// passed through a function between.
func TestLuaLimitsAsRedis(t *testing.T) {
	locals := func(from, n int, sep string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "local v%d = %d%s", from+i, i, sep)
		}
		return b.String()
	}
	names := func(prefix string, n int) string {
		var b []string
		for i := range n {
			b = append(b, fmt.Sprintf("%s%d", prefix, i))
		}
		return strings.Join(b, ", ")
	}
	sum := func(prefix string, n int) string {
		var b []string
		for i := range n {
			b = append(b, fmt.Sprintf("%s%d", prefix, i))
		}
		return strings.Join(b, " + ")
	}
	var scripts []string
	// not 200: gopher-lua allocates at most 200 registers, locals and temporaries
	// together, where Lua 5.1 has 250 (README)
	for _, n := range []int{199, 201} {
		scripts = append(scripts,
			locals(0, n, " ")+"return 1",
			locals(0, n, "\n")+"return 1",
			"local "+names("a", n)+" return 1",
			"local "+names("a", n-1)+"\nlocal function f() end return 1",
			"return function()\n"+locals(0, n, " ")+"end",
			"local t = {}\nfunction t.f(...)\n"+locals(0, n-1, " ")+"end return 1",
			"local t = {}\nfunction t:f(a)\n"+locals(0, n-2, " ")+"end return 1",
			locals(0, n-4, " ")+"for i = 1, 2 do end return 1",
			locals(0, n-5, " ")+"for k, v in pairs({}) do end return 1",
			locals(0, n-5, " ")+"\nfor k,\nv in pairs({}) do end return 1",
			"do "+locals(0, 150, " ")+"end "+locals(200, n-50, " ")+"return 1",
			"repeat "+locals(0, n-1, " ")+"local z = 1 until z return 1",
		)
	}
	for _, n := range []int{59, 60, 61} {
		scripts = append(scripts,
			"local "+names("u", n)+" = 1\nreturn function() return "+sum("u", n)+" end",
			"local "+names("u", n)+" = 1\nreturn function()\nreturn function() return "+sum("u", n)+" end end",
			"local "+names("u", n)+" = 1\nreturn function() return "+sum("u", n)+" + u0 + u1 end",
			"local "+names("u", n-1)+" = 1 do local w = 1 end\nreturn function() return "+sum("u", n-1)+" + x end",
		)
	}
	sameAsRedis(t, scripts)
}
