package server

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// showScript wraps a Lua expression so that what it returns, or the error it raises,
// comes back as strings (a nil in the middle would cut a table reply short, and a
// pcall'd error keeps its exact text).
func showScript(expr string) string {
	return `local function show(...)
  local t = {}
  for i = 1, select('#', ...) do
    local v = select(i, ...)
    t[i] = type(v) .. ':' .. tostring(v)
  end
  return t
end
local function all(it)
  local t = {}
  for a, b, c in it do t[#t + 1] = tostring(a) .. '|' .. tostring(b) .. '|' .. tostring(c) end
  return table.concat(t, ',')
end
return show(pcall(function() return ` + expr + ` end))`
}

// patternCalls are calls of string.find, match, gmatch and gsub that cover Lua 5.1's
// pattern items, anchors, captures, replacement rules, start positions and errors.
var patternCalls = []string{
	// find: plain and pattern, start positions, anchors
	`string.find('hello world', 'o')`, `string.find('hello world', 'o', 6)`,
	`string.find('hello world', 'o', -3)`, `string.find('hello world', 'o', -100)`,
	`string.find('hello', 'l', 10)`, `string.find('hello', '', 10)`, `string.find('hello', '', 3)`,
	`string.find('a.b', '.', 1, true)`, `string.find('a.b', '.')`, `string.find('a+b', '+', 1, true)`,
	`string.find('a+b', 'a+b')`, `string.find('', '')`, `string.find('', 'a')`,
	`string.find('abc', '^b')`, `string.find('abc', '^a')`, `string.find('abc', 'c$')`,
	`string.find('abc', 'b$')`, `string.find('a$c', '$c')`, `string.find('a^c', 'a^')`,
	`string.find('abc', '^')`, `string.find('abc', '$')`, `string.find('abc', '^$')`,
	`string.find('key:123:x', ':(%d+):')`, `string.find('abc', '()b()')`,
	`string.find('a\0b', '\0')`, `string.find('a\0b', 'a\0x')`, `string.find('a\0b', '%z')`,
	`string.find('a\0b', '[%z]')`, `string.find('x*y', '*')`, `string.find('x*y', 'x*')`,
	// classes
	`string.find('  \t\nx', '%S')`, `string.find('abc123', '%d+')`, `string.find('ABCdef', '%l+')`,
	`string.find('ABCdef', '%u+')`, `string.find('a!b?c', '%p')`, `string.find('a1_b', '%W')`,
	`string.find('\1\127a', '%C')`, `string.find('zz0fF', '%x+')`, `string.find('é', '%a')`,
	`string.find('abc', '%q')`, `string.find('a%b', '%%')`, `string.find('a.b', '%.')`,
	// sets
	`string.find('hello', '[aeiou]+')`, `string.find('hello', '[^aeiou]+')`, `string.find('a]b', '[]]')`,
	`string.find('a-b', '[a-]')`, `string.find('a-b', '[-]')`, `string.find('b', '[a-c]')`,
	`string.find('^', '[^^]')`, `string.find('x^', '[x^]+')`, `string.find('a1', '[%d]')`,
	`string.find('a]', '[%]]')`, `string.find('-', '[%a-]')`, `string.find('c', '[a-]')`,
	`string.find('abc', '[c-a]')`, `string.find('abc', '[]')`, `string.find('abc', '[^]')`,
	`string.find('abc', '[')`, `string.find('abc', '[a')`, `string.find('abc', '[a%')`,
	// quantifiers
	`string.find('aaab', 'a*')`, `string.find('aaab', 'a-b')`, `string.find('aaab', 'a+')`,
	`string.find('aaab', 'a?a?b')`, `string.find('b', 'a+')`, `string.find('<a><b>', '<.->')`,
	`string.find('<a><b>', '<.*>')`, `string.find('abc', 'x*')`, `string.find('abc', '.-$')`,
	`string.find('abc', '*a')`, `string.find('abc', '+')`, `string.find('a?', '?')`,
	// captures, back-references, balance, frontier
	`string.match('key=val', '(%w+)=(%w+)')`, `string.match('abc', '((a)(b))')`, `string.match('abc', '()')`,
	`string.match('hello', '(h)(e)(l)(l)(o)')`, `string.match('abab', '(ab)%1')`, `string.match('abba', '(a)(b)%2%1')`,
	`string.match('aa', '(a)%2')`, `string.match('aa', '(a%1)')`, `string.match('aa', '%0')`,
	`string.match('aa', '()%1')`, `string.match('abc', '(')`, `string.match('abc', ')')`,
	`string.match('abc', '(()')`, `string.match('abc', '(a')`, `string.match('abc', 'a)')`,
	`string.match('x(a(b)c)y', '%b()')`, `string.match('x(a(b)c', '%b()')`, `string.match('"q"', '%b""')`,
	`string.match('abc', '%b')`, `string.match('abc', '%ba')`, `string.match('THE (quick) fox', '%f[%a]%a+')`,
	`string.match('THE (quick) fox', '%f[%l]%a+')`, `string.match('hello', '%f[%a]')`, `string.match('hello', 'o%f[%A]')`,
	`string.match('abc', '%f')`, `string.match('abc', '%fa')`, `string.match('abc', '%')`,
	`string.match('abc', 'a%')`, `string.match(' trim me  ', '^%s*(.-)%s*$')`, `string.match('2024-01-02', '(%d+)-(%d+)-(%d+)')`,
	`string.match('abc', '.', 2)`, `string.match('abc', '.', -1)`, `string.match('abc', '^(b)', 2)`,
	`string.match('abc', '(((((((((((((((((((((((((((((((((a)))))))))))))))))))))))))))))))))')`,
	`string.match('abc', '((((((((((((((((((((((((((((((((a))))))))))))))))))))))))))))))))')`,
	// gmatch
	`all(string.gmatch('one two  three', '%a+'))`, `all(string.gmatch('k1=v1, k2=v2', '(%w+)=(%w+)'))`,
	`all(string.gmatch('abc', ''))`, `all(string.gmatch('abc', '()'))`, `all(string.gmatch('a,b,,c', '([^,]*)'))`,
	`all(string.gmatch('^a^a', '^a'))`, `all(string.gmatch('abc', 'x*'))`, `all(string.gmatch('abc', '[a'))`,
	// gsub: replacement strings
	`string.gsub('hello world', 'o', '0')`, `string.gsub('hello world', 'o', '0', 1)`, `string.gsub('hello world', '(o)', '[%1]')`,
	`string.gsub('hello', 'l', '%0%0')`, `string.gsub('hello', '(h)(e)', '%2%1')`, `string.gsub('hello', 'l', '%%')`,
	`string.gsub('hello', 'l', '%x')`, `string.gsub('hello', 'l', 'a%')`, `string.gsub('hello', '', '-')`,
	`string.gsub('hello', 'l', '%1')`, `string.gsub('hello', 'l', '%2')`, `string.gsub('hello', '(l)', '%2')`,
	`string.gsub('hello', '()l', '%1')`, `string.gsub('hello', 'l', 7)`, `string.gsub('hello', 'l', 1.5)`,
	`string.gsub('abc', 'b', 'x', 0)`, `string.gsub('abc', 'b', 'x', -1)`, `string.gsub('aaa', '^a', 'b')`,
	`string.gsub('aaa', 'a$', 'b')`, `string.gsub('abc', '.-', '-')`, `string.gsub('abc', 'x*', '-')`,
	`string.gsub('hello world', '%w+', '<%0>')`, `string.gsub('abc', '(', 'x')`, `string.gsub('abc', '%', 'x')`,
	// gsub: tables and functions
	`string.gsub('abc', '%w', {a = 'A', b = true, c = false})`, `string.gsub('abc', '()b', {[2] = 'TWO'})`,
	`string.gsub('abc', '%w', {a = 1, b = 2.5})`, `string.gsub('abc', '%w', {a = {}})`,
	`string.gsub('$name is $age', '%$(%w+)', {name = 'bob', age = 3})`,
	`string.gsub('abc', '(%w)()', function(c, p) return c .. p end)`,
	`string.gsub('abc', '%w', function(c) if c == 'b' then return nil end return 'X' end)`,
	`string.gsub('abc', '%w', function() return false end)`, `string.gsub('abc', '%w', function() return {} end)`,
	`string.gsub('abc', '%w', function() error('boom') end)`, `string.gsub('abc', '(a)(b)', function(...) return select('#', ...) end)`,
	`string.gsub('abc', '', function(c) return '[' .. c .. ']' end)`,
	`string.gsub('abc', 'b', setmetatable({}, {__index = function(t, k) return k .. k end}))`,
	// arguments converted
	`string.find(12345, 3)`, `string.gsub(123, 2, 9)`, `string.match(1.5, '%.')`,
	// as many results as Lua 5.1's stack holds, and one more (kvstore's boundResults)
	`#{string.byte(string.rep('x', 7997), 1, -1)}`, `#{string.byte(string.rep('x', 7998), 1, -1)}`,
	`#{string.byte(string.rep('x', 100000), 1, -1)}`, `#{string.byte(string.rep('x', 100000), -7000)}`,
	`#{string.byte('abc', -100, 100)}`, `#{string.byte('abc', 3, 1)}`, `select('#', unpack({}, 1, 7999))`,
	`select('#', unpack({}, 1, 8000))`, `select('#', unpack({}, 5, 4))`, `select('#', unpack({}, 1, 2^31 - 1))`,
	`select('#', unpack({1, 2, 3}))`, `select('#', unpack({1, 2, 3}, 2))`,
}

// TestLuaPatternsAsRedis runs string.find, match, gmatch and gsub (and string.byte and
// unpack at the stack's limit) in scripts on nanokv and on redis-server, over hand-picked calls and over calls drawn at random from
// patterns, subjects and replacements made of Lua's pattern items, and requires the
// same answers, errors included: nanokv's matcher (kvstore/luapattern.go) must mean
// what Redis's Lua 5.1 means.
func TestLuaPatternsAsRedis(t *testing.T) {
	r, n := redisAndNanokv(t)
	calls := append([]string(nil), patternCalls...)
	rng := rand.New(rand.NewPCG(7, 7))
	items := []string{"a", "b", ".", "%a", "%d", "%s", "%w", "%p", "%A", "[ab]", "[^a]", "[a-c]", "[%d.]",
		"*", "+", "-", "?", "(", ")", "()", "%1", "%2", "%b()", "%f[%w]", "^", "$", "%", "[", "]", "%%", "%.", " "}
	subjects := []string{"a", "b", "1", " ", "(", ")", ".", "%", "-", "c", "aa", "ab"}
	repls := []string{"x", "%0", "%1", "%2", "%%", "%", "[%1]", "%x", ""}
	draw := func(from []string, max int) string {
		var b strings.Builder
		for k := rng.IntN(max + 1); k > 0; k-- {
			b.WriteString(from[rng.IntN(len(from))])
		}
		return strconv.Quote(b.String())
	}
	for i := 0; i < 1500; i++ {
		subj, pat := draw(subjects, 8), draw(items, 6)
		switch i % 4 {
		case 0:
			calls = append(calls, "string.find("+subj+", "+pat+", "+strconv.Itoa(rng.IntN(7)-2)+")")
		case 1:
			calls = append(calls, "string.match("+subj+", "+pat+")")
		case 2:
			calls = append(calls, "all(string.gmatch("+subj+", "+pat+"))")
		case 3:
			calls = append(calls, "string.gsub("+subj+", "+pat+", "+draw(repls, 2)+")")
		}
	}
	for _, call := range calls {
		if got, want, same := evalBoth(t, r, n, showScript(call)); !same {
			t.Errorf("%s:\n nanokv       %s\n redis-server %s", call, render(got), render(want))
		}
	}
}
