package server

import "testing"

// TestLuaStructAsRedis runs struct.pack, unpack and size on nanokv and on redis-server
// and requires the same replies: every integer option and size (past 8 bytes too), both
// byte orders, alignment, floats, strings (c, c0, s), positions, and the errors.
func TestLuaStructAsRedis(t *testing.T) {
	r, n := redisAndNanokv(t)
	const hex = "local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end "
	for _, script := range []string{
		"return hex(struct.pack('bBhHlLTiI', -1, 255, -2, 65535, -3, 4, 5, -6, 7))",
		"return hex(struct.pack('>bBhHlLTiI', -1, 255, -2, 65535, -3, 4, 5, -6, 7))",
		"return hex(struct.pack('<i1i2i3i5i8i9i16I3', -1, -2, -3, -4, -5, -6, -7, 8))",
		"return hex(struct.pack('>i3i9I16', -300, -5, 2^40))",
		"return hex(struct.pack('fd>fd', 1.5, -2.25, 0.1, 1e300))",
		"return hex(struct.pack('!bi!4bd!2bhxbc', 1, 2, 3, 4, 5, 6, 7, 'z'))",
		"return hex(struct.pack('!8bd', 1, 2))",
		"return hex(struct.pack('c3c0s', 'abcdef', 'xy', 'nul'))",
		"return hex(struct.pack('B', 256)), hex(struct.pack('b', 200)), hex(struct.pack('H', -1)), hex(struct.pack('L', 2^63)), hex(struct.pack('l', 2^53 + 1))",
		"return hex(struct.pack('i', '12')), hex(struct.pack('c0', 42))",
		"return struct.pack('z', 1)",
		"return struct.pack('i33', 1)",
		"return struct.pack('!3i', 1)",
		"return struct.pack('i')",
		"return struct.pack('i', {})",
		"return struct.pack('c5', 'ab')",
		"return struct.pack()",
		"return struct.pack('i99999999999', 1)",
		"return {struct.unpack('bBhHlLTiI', struct.pack('bBhHlLTiI', -1, 255, -2, 65535, -3, 4, 5, -6, 7))}",
		"return {struct.unpack('>i3I3i1', struct.pack('>i3I3i1', -300, 300, -1))}",
		"return {struct.unpack('<i9', string.rep(string.char(255), 9))}",
		"return {struct.unpack('<I8', string.rep(string.char(255), 8))}",
		"return {struct.unpack('<i8', string.rep(string.char(255), 8))}",
		"return {struct.unpack('fd', struct.pack('fd', 1.5, 0.1))}",
		"return {struct.unpack('>fd', struct.pack('>fd', 1.5, 0.1))}",
		"return {struct.unpack('c3s', 'abcdef\\0gh')}",
		"return {struct.unpack('Bc0', struct.pack('Bc0', 3, 'xyz'))}",
		"return {struct.unpack('c0', 'abc')}",
		"return {struct.unpack('i', 'ab')}",
		"return {struct.unpack('s', 'abc')}",
		"return {struct.unpack('bb', 'abcd', 2)}",
		"return {struct.unpack('b', 'abcd', 0)}",
		"return {struct.unpack('b', 'abcd', 6)}",
		"return {struct.unpack('b', 'abcd', 5)}",
		"return {struct.unpack('!4bi', 'abcdefgh')}",
		"return {struct.unpack('xxb', 'abc')}",
		"return {struct.unpack('b z', 'ab')}",
		"return struct.size('bhilTdfc5x'), struct.size('!bhilTdfc5x'), struct.size('!4bd'), struct.size('')",
		"return struct.size('s')",
		"return struct.size('c0')",
		"return struct.size('q')",
		"return #{struct.unpack(string.rep('b', 9000), string.rep('a', 9000))}",
		"return struct.pack('ii', 1)",
		"return struct.pack('id', 1)",
		"return {struct.unpack('', 'abcd', 10)}",
		"return {struct.unpack('b', 'abcd', 5)}",
		"return {struct.unpack('bbbb', 'abcd', 2)}",
		"return struct.pack('s', 1.5)",
		"return hex(struct.pack('>!4i2i8', 1, 2))",
		"return {struct.unpack('c2', 'a')}",
	} {
		if got, want, same := evalBoth(t, r, n, hex+script); !same {
			t.Errorf("%s:\n nanokv       %.300s\n redis-server %.300s", script, render(got), render(want))
		}
	}
}
