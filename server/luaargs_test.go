package server

import "testing"

// TestLuaArgumentsAsRedis: the library functions take and refuse their arguments as Lua
// 5.1's in Redis (kvstore/luaargs.go). A numeric string is an integer where one is
// wanted (scripts pass ARGV, all strings, to string.sub and string.rep); an argument
// error quotes the function's name, says "got no value" for a missing argument, and is
// '?' without a position when a Go function (pcall) called it; an error from Lua code
// a function called keeps its words; a method call does not count its receiver; string.char, select, tonumber, assert, xpcall,
// math.max, table.concat, error, next, coroutine.create/wrap and redis.error_reply,
// status_reply and sha1hex check what Lua's and Redis's check. Before the change about
// 90 of these answered otherwise.
func TestLuaArgumentsAsRedis(t *testing.T) {
	sameAsRedis(t, []string{
		// numeric strings where integers go
		"return string.sub('abcdef', '2', ' 4 ')", "return string.rep('x', '3')", "return string.char('65', 66)",
		"return select('2', 'a', 'b')", "return string.byte('abc', ' 2 ')", "return table.concat({1, 2}, 3)",
		"return table.concat({1, 2, 3}, '-', '1', '2')", "return string.format('%d|%x', '0x10', '255')",
		"return ('abcdef'):sub('2', '3')", "return string.find('abcabc', 'b', '3')",
		"return string.gsub('aaa', 'a', 'b', '2')", "return unpack({1, 2, 3}, '2')",
		"return tonumber('ff', '16')", "return string.sub('abc', 'x')", "return string.rep('x', '3x')",
		// wording: quoted names, no value, Go callers
		"return string.sub()", "return string.sub('abc')", "return string.sub('abc', {})",
		"return math.floor()", "return math.floor('a')", "return string.upper()", "return string.len(nil)",
		"return string.rep()", "return string.find()", "return string.gsub('a', 'a')",
		"return string.format()", "return table.concat()", "return table.insert()", "return table.remove()",
		"return table.sort()", "return table.sort({3, 1}, 1)", "return table.getn()", "return unpack()",
		"return setmetatable()", "return setmetatable({}, 1)", "return getmetatable()", "return rawget()",
		"return rawget({})", "return rawset({}, 1)", "return rawequal(1)", "return type()", "return next()",
		"return ipairs()", "return pairs()", "return tostring()", "return tonumber()", "return math.sqrt()",
		"return math.fmod(1)", "return math.random(2, 1)", "return math.random(0)", "return math.randomseed()",
		"return math.ldexp(1)", "return math.min(1, 'x')", "return bit.band('x')", "return bit.tohex()",
		"return coroutine.resume()", "return coroutine.status()", "return loadstring()", "return xpcall()",
		"local f = string.sub; return f()", "local t = {}; t.f = string.sub; return t.f()",
		"return select(2, pcall(string.rep))", "return select(2, pcall(string.sub, 'x', {}))",
		// errors that pass through a library function keep their words
		"return {pcall(function() table.sort({3, 2, 1}, function(a, b) error('bad argument #1 to q (r)') end) end)}",
		"return {pcall(function() table.sort({3, 2, 1}, function(a, b) return string.rep() end) end)}",
		"return {pcall(assert, false, 'bad argument #1 to x (y)')}",
		"return {pcall(function() assert(false, 'bad argument #1 to x (y)') end)}",
		// what the functions check
		"return string.char(256)", "return string.char(-1)", "return string.char(65.9, 66)", "return string.char()",
		"return {pcall(string.char, 300)}", "return tonumber('10', 99)", "return tonumber('10', 1)",
		"return tonumber({}, 16)", "return tonumber('z', 36)", "return select(2^31, 1, 2)",
		"return select(2^32 + 1, 'a', 'b')", "return select(-1, 1, 2)", "return select(-5, 1, 2)",
		"return select(0, 1)", "return select('#', 1, 2)", "return select('#x', 1, 2)", "return select('x', 1)",
		"return math.max()", "return math.min()", "return math.max(3, '7', 5)",
		"return assert()", "return assert(false)", "return assert(nil, 'm')", "return assert(false, 42)",
		"return assert(false, {})", "return assert(1, 2, 3)", "return {pcall(assert)}",
		"return xpcall(function() return 1 end)", "return error()", "return error(nil)", "return error(1)",
		"return error(true)", "return error('x', 0)", "return {pcall(error)}",
		"return coroutine.create(1)", "return coroutine.wrap()", "return coroutine.wrap(string.rep)",
		"return table.concat({1, 2.5, 0.1 + 0.2, 'x'}, ', ')", "return table.concat({1, 2, 3}, '-', 2)",
		"return table.concat({1, 2, 3}, '-', 3, 2)", "return table.concat({1, nil, 3}, '-', 1, 3)",
		"return table.concat({}, 1, 2, 3, 4)", "return table.concat({{}})", "return table.concat({}, {})",
		"return table.concat({[0] = 'a', 'b'}, '', 0)",
		"return redis.sha1hex()", "return {pcall(redis.sha1hex)}", "return redis.error_reply()",
		"return redis.status_reply({})", "return redis.error_reply(1)", "return redis.status_reply(1)",
		"return type(redis.status_reply(1))", "return redis.error_reply('x')", "return redis.error_reply('x').err",
		"return redis.error_reply('-x')", "return redis.error_reply('-MY err')", "return redis.error_reply('My Error').err",
		"return redis.error_reply('')", "return redis.status_reply('OK')", "return {err = 'x'}",
		// integers as C's int of them (luaL_checkint)
		"return string.sub('abc', 1, 2^31)", "return string.sub('abc', 2^32 + 2)", "return string.rep('x', 2^32 + 2)",
		"return unpack({1, 2, 3}, 1, 2^31)", "return unpack({1, 2, 3}, 2^32 + 2)", "return string.byte('abc', 2^32 + 1)",
		"return table.concat({1, 2, 3}, ',', 2^32 + 1, 2^32 + 2)", "return math.random(2^32 + 1)",
		"return string.find('abc', 'c', 2^32 + 2)", "return string.sub('abc', -2^31 - 1)", "return string.sub('abc', 1e300)",
		"return table.remove({1, 2, 3}, 2^32 + 1)", "return string.char(2^32 + 65)", "return select(-2^32 + 1, 'a', 'b')",
		"return string.sub('abcdef', 2.9, 4.1)", "return string.sub('abcdef', -2.5)",
		"local t = {1, 2, 3} table.insert(t, 2^32 + 2, 'x') return t", "local t = {1, 2} table.insert(t, '1', 'x') return t",
		// numbers as strings: %.14g, inf, nan, in tostring, .. and the string functions
		"return tostring(0.1 + 0.2)", "return tostring(1/3)", "return 'x' .. 1/3", "return tostring(1e15)",
		"return tostring(2^53)", "return tostring(100)", "return tostring(-0.0)", "return tostring(1/0)",
		"return tostring(-1/0)", "return tostring(0/0)", "return tostring(-(0/0))", "return 1/3 .. ''", "return 1 .. 2",
		"return string.len(1/3)", "return string.rep(0.1 + 0.2, 2)", "return string.sub(1/3, 1, 5)",
		"return string.upper(1e100)", "return (string.gsub('a1', '1', 0.5))", "return string.find(1/3, '333')",
		"return string.format('%s', 1/3)", "return table.concat({1/3, 1e300, 2^63}, ' ')", "return cjson.encode({1/3})",
		"return tostring(123456789012345)", "return tostring(1234567890123456)", "return tostring(-1e-5)",
		"return tostring(5e-324)", "return string.byte(12, 1, -1)",
		// methods: Lua does not count the receiver
		"return ('x'):rep()", "return ('x'):sub({})", "local s = 'abc' return s:sub(1, {})",
		"return ('x'):rep(2, 3, {})", "return string.rep(('x'):upper(), {})",
		"local t = {f = string.rep} return t:f()", "local s = 'ab' return s:rep(s:len(), 1):sub({})",
		"return select(2, pcall(function() return ('x'):format({}) end))",
		"return ('%d'):format('x')", "return ('%d %d'):format(1)", "return ('x'):gsub()",
		"return struct.pack('i', {})",
		"return {cmsgpack.unpack_one(cmsgpack.pack(7, 8), 2^32 + 1)}", "return {cmsgpack.unpack_one(cmsgpack.pack(7, 8), '1')}",
		"return {cmsgpack.unpack_limit(cmsgpack.pack(7, 8, 9), 2^32 + 1, 2^32 + 1)}",
		// next from a key the table never held, and from keys cleared while traversing
		"return next({}, 'nokey')", "return next({a = 1, b = 2}, 'zz')", "return next({1, 2}, 3)",
		"return next({1, 2}, 1.5)", "return {next({1, 2}, 1)}", "return {next({10, 20, 30}, 2)}",
		"local t = {a = 1, b = 2, c = 3} local n, k = 0, next(t) while k do t[k] = nil n = n + 1 k = next(t, k) end return n",
		"local t = {1, 2, 3, x = 1} local n, k = 0, next(t) while k do t[k] = nil n = n + 1 k = next(t, k) end return n",
	})
}
