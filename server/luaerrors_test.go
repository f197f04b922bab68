package server

import "testing"

// TestLuaRuntimeErrorsAsRedis: the runtime errors scripts meet most are worded as Lua
// 5.1's in Redis, naming the value as the script does (kvstore/luaerrors.go): indexing,
// calling, arithmetic on and concatenating a nil local, global, field, upvalue or
// method, `#` of a nil, negating a table, a numeric for's bounds; in the reply, through
// pcall and through xpcall's handler. gopher-lua worded every one of them otherwise
// ("attempt to index a non-table object(nil) with key 'x'").
func TestLuaRuntimeErrorsAsRedis(t *testing.T) {
	sameAsRedis(t, []string{
		"local x; return x + 1", "return KEYS[1] + 1", "local t = {}; return t.a.b", "local t; return t.x",
		"local t; t.x = 1", "local f; f()", "local t = {}; t.f()", "local t = {}; t:m()",
		"local s = 'a'; return s + 1", "local a = {}; return a .. 'x'", "local a; return 'x' .. a",
		"return -{}", "return ('x')()", "return redis.nosuch()", "local a = {} return a.b.c.d",
		"return string.nosuch('x')", "return tostring(nil .. 'x')", "for i = 1, 'x' do end",
		"local a, b = 1; return a + b", "local t = {x = {}}; return t.x.y.z", "local t = {}; t.a.b = 1",
		"local t = {}; t[1][2] = 3", "local k = 'q'; local t = {}; return t[k].z",
		"local t = {}; local k = 'a'; t[k].b = 1", "local u; local function f() return u.x end; return f()",
		"local u; local function f() return u + 1 end; return f()",
		"return {pcall(function() local x; return x.y end)}", "return {pcall(function() local x; return #x end)}",
		"return string.upper('a\u00e9z')", "return string.lower('\u00c0B')", "return ('\u00e9x'):upper()",
		"return string.upper(12)", "return string.lower()", "local r = {} table.foreach({a = 1}, function(k, v) r[#r+1] = k .. v end) return r",
		"return table.foreach({1, 2}, function(k, v) if v == 2 then return 'stop' end end)",
		"local r = {} table.foreachi({5, 6}, function(i, v) r[#r+1] = i * v end) return r",
		"return table.foreachi({5, 6}, function(i, v) return v end)", "return table.foreach(1)", "return table.foreachi({})",
		"return table.setn({}, 1)", "return table.setn(1)",
		"return {pcall(nil)}", "return {pcall(redis.nosuch, 1)}", "return {pcall(1)}", "return {pcall('x')}",
		"return {pcall({})}", "return {pcall(true)}", "return {pcall()}", "return select('#', pcall())",
		"return {pcall(setmetatable({}, {__call = function(_, a) return a end}), 7)}",
		"local x; return #x", "local t = {}; return #t.n", "return #KEYS[1]", "local s = 'abc'; return s.x.y",
		"local n = 5; return n()", "local n = 5; return n.x", "local a = {}; local b = 'x'; return b .. a .. 'y'",
		"local a, b = 'x', nil; return a .. b", "local a = 'x'; return a .. {} .. 'y'",
		"local t = {} return 1 + t.x", "local t = {} return t.x * 2", "local t = {} return 2 - t.x",
		"return 'a' + 1", "return ARGV[1] + 1", "local t = {} t.x.y.z = 1",
		"local t = setmetatable({}, {__index = function(t, k) return nil end}) return t.x.y",
		"for i = 1, 10, 'x' do end", "for i = 'a', 10 do end", "return {pcall(function() for i = 1, 'x' do end end)}",
		"local t = {} for k, v in pairs(nil) do end", "local f = 1; for x in f do end", "return tostring(-nil)",
		"local x = {}; return -x", "return (nil)()", "local t = {f = 1}; return t:f()",
		"return {xpcall(function() local x; return x.y end, function(m) return 'h: ' .. m end)}",
		"local function f(a) return a.b end return {pcall(f)}", "local x = 1 local function f() return x.y end return f()",
		"return redis.call('get', KEYS[1]).x", "local v = redis.call('get', 'nokey') return v.x",
		"local ok, e = pcall(function() return nosuch.x end) return e",
		// a chain of __index or __newindex that ends in a non-table names no variable
		"return setmetatable({}, {__index = 5}).x", "local t = setmetatable({}, {__index = 5}) return t.x",
		"local t = setmetatable({}, {__newindex = 5}) t.x = 1", "local t = setmetatable({}, {__newindex = 5}) local k = 'x' t[k] = 1",
		"local t = setmetatable({}, {__index = setmetatable({}, {__index = true})}) return t.x",
		// a key that is a table: no address in the message
		"local t; return t[{}]", "local k = {} return {pcall(function() local u; return u[k] end)}",
		// a closure made in a call that failed keeps what it captured (luaF_close)
		"local f pcall(function() local x = 1 f = function() return x end error('e') end) local a, b, c, d, e = 10, 20, 30, 40, 50 return f()",
		"local f pcall(function() local x = 1 f = function() return x end local y = nil .. 'x' end) local a, b, c, d, e = 10, 20, 30, 40, 50 return f()",
		"local f xpcall(function() local x = 1 f = function() return x end error('e') end, function(m) return m end) local a, b, c, d, e = 10, 20, 30, 40, 50 return f()",
		"local f pcall(function() local x = 7 f = function() x = x + 1 return x end error('e') end) local a, b, c, d, e = 10, 20, 30, 40, 50 f() return f()",
		"local x = 1 local g = function() return x end pcall(error) x = 2 return g()",
		"local x = 1 local g = function() return x end local f pcall(function() local y = 5 f = function() return y + x end error('e') end) x = 2 local a, b, c = 7, 8, 9 return {g(), f()}",
		"local fs = {} for i = 1, 3 do pcall(function() local v = i * 10 fs[i] = function() return v end error('x') end) end local a, b, c, d = 1, 2, 3, 4 return {fs[1](), fs[2](), fs[3]()}",
		"local f pcall(function() local x = 3 pcall(function() local y = 4 f = function() return x + y end error('in') end) error('out') end) local a, b, c, d, e = 1, 2, 3, 4, 5 return f()",
	})
}

// TestLuaLoadAsRedis: loadstring and load as Lua 5.1 has them in Redis: the chunk named
// as luaO_chunkid names it (the source's first line, cut at Redis's LUA_IDSIZE; "=name";
// "@file"), Lua 5.1's syntax errors, load's reader called until nil or "" (a number is a
// string), and a reader that fails or returns something else reaching the caller as
// Redis's error handler made it, a table.
func TestLuaLoadAsRedis(t *testing.T) {
	sameAsRedis(t, []string{
		"local f, e = loadstring('return 1 +') return e", "return loadstring('return 6 * 7')()",
		"local f, e = loadstring('x=', string.rep('a', 100)) return e",
		"local f, e = loadstring('x=', '@' .. string.rep('b', 100)) return e",
		"local f, e = loadstring('x=', '=' .. string.rep('c', 100)) return e",
		"local f, e = loadstring('x=', 'ab\\ncd') return e", "local f, e = loadstring('x=', 'n\\0m') return e",
		"local f, e = loadstring('return 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + +') return e",
		"local f = loadstring('error(\"boom\")') local ok, m = pcall(f) return m",
		"local f = loadstring('local a = ... return a .. select(2, ...)') return f('x', 'y')",
		"return loadstring()", "return loadstring({})", "return type(loadstring(12))", "return loadstring('return 1', {})",
		"local f, e = loadstring('return \"\\300\"') return e", "local f, e = loadstring('return ' .. string.rep('{', 300) .. string.rep('}', 300)) return e",
		"local f, e = loadstring('return x', 'chunk') return {pcall(f)}",
		"return load()", "return load(1)", "return load(function() end, {})",
		"local p, i = {'return ', '1+', 2}, 0 return load(function() i = i + 1 return p[i] end)()",
		"local n = 0 return load(function() n = n + 1 if n == 1 then return 'return 7' end return '' end)()",
		"local f = load(function() return nil end, 'nm') return {type(f), f()}",
		"local f, e = load(function() error('rd') end) return {type(e), e.err, e.line}",
		"local f, e = load(function() error('rd') end) return e", "local f, e = load(function() error({x = 1}) end) return e.x",
		"local f, e = load(function() return {} end) return e",
		"local f, e = load(\nfunction() return false end) return {e.err, e.line}",
		"local n = 0 local f, e = load(function() n = n + 1 if n == 1 then return 'return +' end end) return e",
		"local f, e = load(function() return nil end, '=x') return {type(f), e}",
	})
}
