package server

import (
	"reflect"
	"testing"
)

// TestLuaGuardsAsRedis runs, on nanokv and on redis-server, scripts that write tables by
// computed keys, in multiple assignments and constructors, through __newindex, with
// table.insert, remove, getn and unpack, measure them with `#` after pops, and compare
// values of every type with every operator, metamethods and errors included: the forms
// nanokv's compiler rewrites into guarded calls (kvstore/scripttable.go,
// scriptcompare.go) must answer as Lua 5.1 does, and replies nested deeper than Lua's
// stack (a cycle) must end as Redis ends them. (Tables with holes are left out: for
// them Lua allows `#` any border, and gopher-lua's array part is not Lua's.)
func TestLuaGuardsAsRedis(t *testing.T) {
	r, n := redisAndNanokv(t)
	exprs := []string{
		`(function() local t = {} for i = 1, 10 do t[i] = i * i end return #t, t[10] end)()`,
		`(function() local t = {} for i = 1, 10 do t[#t + 1] = i end for i = 1, 4 do t[#t] = nil end return #t, table.getn(t), t[6] end)()`,
		`(function() local t = {} for i = 1, 5 do table.insert(t, i) end t[5] = nil t[4] = nil table.insert(t, 'x') return #t, t[4], t[5] end)()`,
		`(function() local t = {'a', 'b', 'c'} table.insert(t, 2, 'z') local r = table.remove(t, 1) return r, #t, table.concat(t, ',') end)()`,
		`(function() local t = {1, 2, 3} t[3] = nil return table.remove(t), #t, table.remove(t), table.remove(t), #t end)()`,
		`(function() local t = {1, 2, 3} return table.remove(t, 0), table.remove(t, 5), #t, table.remove(t, 3), #t end)()`,
		`(function() local t = {1, 2, 3} return select('#', table.remove(t, 4)), select('#', table.remove({})) end)()`,
		`(function() local t = {1, 2, 3} table.insert(t, 1, 2, 3) return 'inserted' end)()`,
		`(function() local t = {1, 2, 3} table.insert(t) return 'inserted' end)()`,
		`(function() local a, i = {}, 3 i, a[i] = i + 1, 20 return i, a[3], a[4] end)()`,
		`(function() local t, k = {}, 'x' local old = t t, t[k] = {}, 1 return old.x, t.x end)()`,
		`(function() local t = {} local old = t t, t.x = {}, 1 return old.x, t.x end)()`,
		`(function() local t = {} local old = t t.y, t = 2, {} return old.y, t.y end)()`,
		`(function() local function f() return 1, 2 end local t, k, x = {}, 1 x, t[k] = f() return x, t[1] end)()`,
		`(function() local function f() return 'p', 'q' end local t, k = {}, 'k' t[k] = f() return t.k end)()`,
		`(function() local k, f = 'n', function() return 1, 2, 3 end local t = {[k] = 0, f()} return #t, t.n, t[3] end)()`,
		`(function() local k = 2 local t = {[k] = 'b', [k + 1] = 'c', [1] = 'a'} return #t, table.concat(t) end)()`,
		`(function() local log = {} local p = setmetatable({}, {__newindex = function(t, k, v) log[#log + 1] = k .. '=' .. v end}) local k = 'a' p[k] = 1 p[2] = 'b' return table.concat(log, ' '), rawget(p, 'a') end)()`,
		`(function() local inner = {} local p = setmetatable({}, {__newindex = inner}) local k = 3 p[k] = 'x' return rawget(p, 3), inner[3] end)()`,
		`(function() local t = {} t[100] = 1 return t[100], rawget(t, 100) end)()`,
		`(function() local t = {} rawset(t, 1, 'a') rawset(t, 2, 'b') return #t end)()`,
		`(function() local t = {1, 2, 3, 4, 5} t[5] = nil t[4] = nil return unpack(t) end)()`,
		`(function() local t = {1, 2, 3} return unpack(t, 2) end)()`,
		`#'hello'`, `#{}`, `#{1, 2, 3}`, `#KEYS`, `#(1 + 1)`, `#(function() return true end)()`,
		`(function() local t = {5, 3, 9, 1, 7} table.sort(t) return table.concat(t, ',') end)()`,
		`(function() local t = {'b', 'ab', 'a', '', 'ba'} table.sort(t) return table.concat(t, ',') end)()`,
		`(function() local t = {5, 3, 9, 1, 7} table.sort(t, function(a, b) return a > b end) return table.concat(t, ',') end)()`,
		`(function() local t = {5, 3, 9, 1, 7} table.sort(t, nil) return table.concat(t, ',') end)()`,
		`(function() local t = {4, 2, 8, 6, 1, 3} t[6] = nil t[5] = nil table.sort(t) return #t, table.concat(t, ',') end)()`,
		`(function() local t = {3, 'a', 1} table.sort(t) return 'sorted' end)()`,
		`(function() local t = {{}, {}} table.sort(t) return 'sorted' end)()`,
	}
	values := []string{"1", "2.5", "'a'", "'ab'", "'b'", "''", "true", "false", "nil", "{}", "mt1", "mt2"}
	for _, op := range []string{"==", "~=", "<", "<=", ">", ">="} {
		for _, a := range values {
			for _, b := range values {
				// operands in variables: a comparison with a literal is not guarded
				exprs = append(exprs, "(function() local mt = {__lt = function(x, y) return x.v < y.v end, __le = function(x, y) return x.v <= y.v end, __eq = function() return true end} "+
					"local mt1, mt2 = setmetatable({v = 1}, mt), setmetatable({v = 2}, mt) local a, b = "+a+", "+b+" return a "+op+" b end)()")
			}
		}
	}
	exprs = append(exprs,
		`(function() local lt = {__lt = function(x, y) return true end} local a, b = setmetatable({}, lt), setmetatable({}, lt) return a <= b, a >= b end)()`,
		`(function() local a, b = setmetatable({}, {__lt = function() return true end}), setmetatable({}, {__lt = function() return true end}) return a < b end)()`,
		`(function() local n, log = 0, {} local function f(x) log[#log + 1] = x return x end local r = f(1) > f(2) return r, table.concat(log, ',') end)()`,
		`(function() local s, t = string.rep('x', 100), string.rep('x', 99) .. 'y' return s == t, s < t, t <= s, s ~= t end)()`,
	)
	// replies nested past Lua's stack, a cycle among them: raw, not through showScript
	for _, script := range []string{
		"local t = {} t[1] = t return t",
		"local t = {} t[1] = {err = 'deep'} for i = 1, 8000 do t = {t} end return t",
		"local t = 'leaf' for i = 1, 7994 do t = {t} end return t",
		"local t = 'leaf' for i = 1, 7995 do t = {t} end return t",
		"local t = {1, 'a'} for i = 1, 7993 do t = {t, i} end return t",
	} {
		if got, want, same := evalBoth(t, r, n, script); !same {
			t.Errorf("%s: nanokv and redis-server reply differently (%d and %d bytes rendered)", script, len(render(got)), len(render(want)))
		}
	}
	for _, expr := range exprs {
		if got, want, same := evalBoth(t, r, n, showScript(expr)); !same {
			t.Errorf("%s:\n nanokv       %s\n redis-server %s", expr, render(got), render(want))
		}
	}
}

// redisAndNanokv starts a redis-server and a nanokv node (stopped when t ends) and
// returns a connection to each.
func redisAndNanokv(t *testing.T) (r, n *rconn) {
	r = dialNew(t, startRedisServer(t))
	s := startServer(t, Config{MemoryOnly: true})
	t.Cleanup(func() { s.Close() })
	return r, dialNew(t, s.RedisAddr())
}

// evalBoth runs script with EVAL on redis-server (r) and on nanokv (n), and returns both
// replies and whether they are the same.
func evalBoth(t *testing.T, r, n *rconn, script string) (got, want rval, same bool) {
	t.Helper()
	want, err1 := r.do("EVAL", script, "0")
	got, err2 := n.do("EVAL", script, "0")
	if err1 != nil || err2 != nil {
		t.Fatalf("%.200s: %v %v", script, err1, err2)
	}
	return got, want, reflect.DeepEqual(got, want)
}

// sameAsRedis runs each script with EVAL on redis-server and on nanokv and requires the
// same reply, errors included.
func sameAsRedis(t *testing.T, scripts []string) {
	t.Helper()
	r, n := redisAndNanokv(t)
	for _, script := range scripts {
		if got, want, same := evalBoth(t, r, n, script); !same {
			t.Errorf("%s:\n nanokv       %s\n redis-server %s", script, render(got), render(want))
		}
	}
}

// TestLuaFormatAsRedis: string.format answers as Lua 5.1's in Redis where gopher-lua's
// printed Go's complaints, zeros or a table's address: invalid options, missing and
// extra arguments, a %d of a non-number, a %s or %q of a table, %q's quoting.
func TestLuaFormatAsRedis(t *testing.T) {
	sameAsRedis(t, []string{
		"return string.format('%d')", "return string.format('%s %d', 'a')",
		"return string.format('%y', 1)", "return string.format('%5', 1)",
		"return string.format('%d', 'x')", "return string.format('%d', '12')",
		"return string.format('%q', {})", "return string.format('%s', nil)",
		"return string.format('%s', true)", "return string.format('%d %s', 1, {})",
		"return string.format('%c%c', 72, 105)", "return string.format('x', 1, 2, 3)",
		"return string.format('%5.1f|%-5d|%05d', 3.14159, 42, 7)",
		"return string.format('%q', 'a\\nb\\r\\0\"\\\\')", "return string.format('%10q|', 'ab')",
		"return string.format('%10s|%.2s|%5.2s%%|%g', 'ab', 'abc', 'xyz', 1e20)",
		"return string.format('%x %X %o %e', 255, 255, 8, 12345.678)",
		"return string.format('%q|%s', 1/3, 2^60)",
		// every conversion as glibc's sprintf makes it from what C casts the number to
		"return string.format('%u|%o|%x|%X', 3.7, 8, -1, 255)", "return string.format('%u|%x|%o', 2^64, 2^63, 0/0)",
		"return string.format('%d|%i|%d', 2^63, -2^63, 1e300)", "return string.format('%c%c|%5c|%-3c|', 72, 105, 65, 66)",
		"return #string.format('%c', 0)", "return #string.format('%5c', 0)", "return string.format('%c', 2^32 + 65)",
		"return string.format('%#x|%#X|%#o|%#.0o|%#x', 255, 255, 8, 0, 0)", "return string.format('%.0d|%.3d|%05d|%-5d|%+d|% d', 0, 7, -7, 7, 7, 7)",
		"return string.format('%05.1d|%-05d|%+05d', 7, 7, 7)",
		"return string.format('%f|%e|%g|%E|%G', 0/0, tonumber('nan'), 1/0, -1/0, 0/0)",
		"return string.format('%5.1f|%-8g|%08.3f|%+e|% f', 0/0, 1/3, -1/0, 2, 1/0)",
		"return string.format('%g|%g|%g|%g|%.3g|%#g|%#.3x', 1/3, 1e20, 1e-5, 100000, 1234.5, 1, 1)",
		"return string.format('%.3s|%5.1s|%-4s|', '\\195\\169t\\195\\169', 'xyz', 'a')", "return #string.format('%s', 'a\\0b')",
		"return #string.format('%s', string.rep('a\\0', 60))", "return string.format('%.99f', 1)", "return string.format('%99d', 1)",
		"return string.format('%100d', 1)", "return string.format('%.100f', 1)", "return string.format('%-+ #0d', 1)",
		"return string.format('%-+ #0-d', 1)", "return string.format('%y')", "return string.format('%')", "return string.format('%5')",
	})
}

// TestLuaNumbersAsRedis: tonumber with a base reads as C's strtoul does; the math
// library checks the arguments pow, fmod, atan2 and ldexp take in the order GCC
// evaluates them, takes numeric strings as strtod reads them, and makes modf, deg and
// rad as C does, NaNs with their sign.
func TestLuaNumbersAsRedis(t *testing.T) {
	sameAsRedis(t, []string{
		"return {tonumber('ff', 16), tonumber(' 0x1F ', 16), tonumber('-ff', 16), tonumber('z', 36), tonumber('777', 8)}",
		"return {tostring(tonumber('1e', 16)), tostring(tonumber('8', 8)), tostring(tonumber('0x', 16)), tostring(tonumber('', 2))}",
		"return {tostring(tonumber(-2.5, 16)), tostring(tonumber(10, 2)), tostring(tonumber('10\\0z', 2)), tostring(tonumber('+ 1', 10))}",
		"return tostring(tonumber('ffffffffffffffffffff', 16))", "return tostring(tonumber('-1', 10))", "return tostring(tonumber('-1', 16))",
		"return tonumber('1', 1)", "return tonumber('1', 37)", "return tonumber({}, 16)", "return tostring(tonumber('0x10', 16))",
		"return math.pow('a', false)", "return math.fmod({}, 'x')", "return math.atan2(nil, {})", "return math.ldexp('', {})",
		"return {tostring(math.fmod(1, 0)), tostring(math.pow(-8, 1/3)), tostring(math.fmod(0/0, 1)), tostring(math.fmod(1/0, 2))}",
		"return {tostring(math.floor('1e400')), tostring(math.max('1e400', 1)), tostring(math.sqrt(' 0x10 '))}",
		"return {tostring(math.rad(1e308)), tostring(math.deg(1e306)), tostring(math.rad(180)), tostring(math.deg(math.pi))}",
		"local t = {} for _, x in ipairs({1000, 1e15, 0.001, 1e22, 1e23, 1e300, 1e-300, 10, 1}) do t[#t+1] = string.format('%.17g', math.log10(x)) end return t",
		"return {string.byte('abc', 0, 2)}", "return {string.byte('abc', -10, 100)}", "return {string.byte('abc', 3, 1)}",
		"return {bit.tobit(0/0), bit.tobit(-('nan')), bit.band(0/0, -1), bit.tohex(tonumber('nan'))}",
		"return {tostring(math.log(-1)), tostring(math.acos(2)), tostring(math.log(-math.huge)), tostring(math.sqrt(-1)), tostring(math.log10(-1)), tostring(math.asin(-2)), tostring(math.modf(0/0))}",
		"return {tostring(math.cos(math.huge)), tostring(math.sin(math.huge)), tostring(math.tan(-math.huge)), tostring(math.fmod(math.huge, 1)), tostring(math.log10(-math.huge)), tostring(math.exp(0/0)), tostring(math.pow(-1, 0.5)), tostring(math.sqrt(-math.huge)), tostring(math.cosh(0/0)), tostring(math.floor(-(0/0)))}",
		"return {math.floor(math.log10(1e15)), math.floor(math.log10(999999)), math.floor(math.log10(1e6))}",
		"local a, b = math.modf(1/0) local c, d = math.modf(-1/0) local e, f = math.modf(-3.5) return {tostring(a), tostring(b), tostring(c), tostring(d), tostring(e), tostring(f)}",
	})
}
