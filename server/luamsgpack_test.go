package server

import (
	"fmt"
	"testing"
)

// TestLuaMsgpackAsRedis runs cmsgpack on nanokv and on redis-server and requires the
// same replies: the bytes pack makes for every integer width, floats, strings of every
// length class, arrays, maps and tables nested past 16 (a cycle); what unpack,
// unpack_one and unpack_limit return; their errors, and where Lua's stack stops them.
func TestLuaMsgpackAsRedis(t *testing.T) {
	r, n := redisAndNanokv(t)
	const hex = "local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end "
	scripts := []string{
		hex + "return hex(cmsgpack.pack(0, 1, -1, 127, 128, 255, 256, 65535, 65536, -32, -33, -128, -129, -32768, -32769, 2^31, -2^31, -2^31-1, 2^32, 2^53, -2^53, 2^63, -2^63))",
		hex + "return hex(cmsgpack.pack(0.5, 0.1, -2.5, 1/0, -1/0, 1e300, 1e-300, 0/0, 3.4028234663852886e38))",
		hex + "return hex(cmsgpack.pack('', 'a', string.rep('x', 31), string.rep('x', 32), string.rep('y', 255), string.rep('y', 256), string.rep('z', 65535), string.rep('z', 65536), true, false, nil))",
		hex + "return hex(cmsgpack.pack({}, {1, 2, 3}, {a = 1}, {1, nil, 3}, {[2] = 1}, {[1.5] = 1}, {[-1] = 1}, {[0] = 1}, {{{}}}))",
		hex + "local t = {} for i = 1, 16 do t[i] = i end local u = {} for i = 1, 70000 do u[i] = true end return hex(cmsgpack.pack(t)), #cmsgpack.pack(u)",
		hex + "local t = {} t[1] = t return hex(cmsgpack.pack(t))",
		hex + "return hex(cmsgpack.pack(print, coroutine.create(function() end)))",
		"return {cmsgpack.unpack(cmsgpack.pack(1, 'a', {1, 2, {3}}, true, -7, 0.25))}",
		"local t = cmsgpack.unpack(cmsgpack.pack({x = 'y', [3] = 4})) return {t.x, t[3]}",
		"local t = cmsgpack.unpack(cmsgpack.pack({1, 2, 3})) return #t",
		"return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3))}",
		"return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 1)}",
		"return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 2)}",
		"return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2)}",
		"return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2, 2)}",
		"return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 0)}",
		"return {cmsgpack.unpack(string.char(0xcf, 0x80, 0, 0, 0, 0, 0, 0, 1, 0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0))}",
		"return {cmsgpack.unpack(string.char(0xca, 0x3f, 0xc0, 0, 0, 0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0))}",
		"return cmsgpack.unpack(string.char(0x92, 0xc0, 1))[2]",
		"return cmsgpack.pack()",
		"return cmsgpack.unpack_one('abc', 5)",
		"return cmsgpack.unpack_one('abc', -1)",
		"return cmsgpack.unpack(string.char(0x81, 0xc0, 1))",
		"return cmsgpack.unpack(string.char(0xc4, 1, 65))",
		"return cmsgpack.unpack(string.char(0xa5, 65))",
		"return cmsgpack.unpack(string.char(0xdc, 0xff))",
		"return cmsgpack.unpack('')",
	}
	for _, k := range []int{3997, 3998, 7997, 7998} {
		scripts = append(scripts,
			fmt.Sprintf("return cmsgpack.unpack(string.rep(string.char(0x91), %d) .. string.char(1)) and 'ok'", k),
			fmt.Sprintf("return #{cmsgpack.unpack(string.rep(string.char(1), %d))}", k),
			fmt.Sprintf("return cmsgpack.unpack(string.rep(string.char(0x81, 1), %d) .. string.char(1)) and 'ok'", k))
	}
	for _, script := range scripts {
		if got, want, same := evalBoth(t, r, n, script); !same {
			t.Errorf("%.300s:\n nanokv       %.300s\n redis-server %.300s", script, render(got), render(want))
		}
	}
}
