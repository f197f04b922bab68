package kvstore

import "testing"

// The expected replies are what redis-server 7.0.15 answers for the same commands, in
// the same order, on an empty server.
func TestBitmapCommands(t *testing.T) {
	h := newHarness(t)
	// SETBIT and GETBIT
	h.expect(0, "SETBIT", "b", "7", "1")
	h.expect(1, "GETBIT", "b", "7")
	h.expect(0, "GETBIT", "b", "0")
	h.expect(0, "GETBIT", "b", "100")
	h.expect("\x01", "GET", "b")
	h.expect(1, "SETBIT", "b", "7", "1")
	h.expect(1, "SETBIT", "b", "7", "0")
	h.expect(0, "SETBIT", "b", "20", "1")
	h.expect(3, "STRLEN", "b")
	h.expect("\x00\x00\x08", "GET", "b")
	h.expectErr("ERR bit offset is not an integer or out of range", "SETBIT", "b", "-1", "1")
	h.expectErr("ERR bit offset is not an integer or out of range", "SETBIT", "b", "abc", "1")
	h.expectErr("ERR bit offset is not an integer or out of range", "SETBIT", "b", "4294967296", "1")
	h.expectErr("ERR bit is not an integer or out of range", "SETBIT", "b", "1", "2")
	h.expectErr("ERR bit is not an integer or out of range", "SETBIT", "b", "1", "-1")
	h.expectErr("ERR bit is not an integer or out of range", "SETBIT", "b", "1", "x")
	h.expectErr("ERR bit offset is not an integer or out of range", "SETBIT", "b", "x", "2")
	h.expectErr("ERR bit offset is not an integer or out of range", "GETBIT", "b", "x")
	h.expectErr("ERR bit offset is not an integer or out of range", "GETBIT", "b", "-1")
	h.expect(0, "GETBIT", "missing", "3")
	h.expect(1, "RPUSH", "list", "a")
	h.expectErr("WRONGTYPE Operation against a key holding the wrong kind of value", "SETBIT", "list", "1", "1")
	h.expectErr("WRONGTYPE Operation against a key holding the wrong kind of value", "GETBIT", "list", "1")
	h.expectErr("ERR bit offset is not an integer or out of range", "GETBIT", "list", "x")
	h.expect(Status("OK"), "SET", "s", "foobar")
	h.expect(1, "GETBIT", "s", "1")
	h.expect(1, "GETBIT", "s", "2")
	// BITCOUNT
	h.expect(26, "BITCOUNT", "s")
	h.expect(4, "BITCOUNT", "s", "0", "0")
	h.expect(6, "BITCOUNT", "s", "1", "1")
	h.expect(6, "BITCOUNT", "s", "1", "1", "BYTE")
	h.expect(17, "BITCOUNT", "s", "5", "30", "BIT")
	h.expect(26, "BITCOUNT", "s", "0", "-1", "bit")
	h.expect(7, "BITCOUNT", "s", "-2", "-1")
	h.expect(0, "BITCOUNT", "s", "-1", "-5", "foo")
	h.expect(0, "BITCOUNT", "s", "3", "1")
	h.expectErr("ERR syntax error", "BITCOUNT", "s", "1")
	h.expectErr("ERR syntax error", "BITCOUNT", "s", "1", "2", "foo")
	h.expectErr("ERR value is not an integer or out of range", "BITCOUNT", "s", "a", "1")
	h.expectErr("ERR value is not an integer or out of range", "BITCOUNT", "s", "1", "a")
	h.expectErr("ERR syntax error", "BITCOUNT", "s", "0", "1", "2", "3")
	h.expect(0, "BITCOUNT", "s", "100", "200")
	h.expect(26, "BITCOUNT", "s", "-100", "100")
	h.expect(0, "BITCOUNT", "missing", "a", "b")
	h.expect(0, "BITCOUNT", "missing", "1")
	h.expectErr("WRONGTYPE Operation against a key holding the wrong kind of value", "BITCOUNT", "list")
	h.expect(Status("OK"), "SET", "e", " ")
	h.expect(1, "BITCOUNT", "e")
	// BITPOS
	h.expect(Status("OK"), "SET", "ff", "\xff\xf0\x00")
	h.expect(12, "BITPOS", "ff", "0")
	h.expect(0, "BITPOS", "ff", "1")
	h.expect(12, "BITPOS", "ff", "0", "1")
	h.expect(-1, "BITPOS", "ff", "1", "2")
	h.expect(-1, "BITPOS", "ff", "1", "2", "-1")
	h.expect(-1, "BITPOS", "ff", "0", "0", "0")
	h.expect(12, "BITPOS", "ff", "0", "0", "-1")
	h.expect(-1, "BITPOS", "ff", "0", "5")
	h.expect(-1, "BITPOS", "ff", "0", "1", "2", "bit")
	h.expect(12, "BITPOS", "ff", "0", "7", "13", "BIT")
	h.expect(9, "BITPOS", "ff", "1", "9", "23", "bit")
	h.expect(-1, "BITPOS", "ff", "1", "12", "23", "bit")
	h.expectErr("ERR value is not an integer or out of range", "BITPOS", "ff", "0", "1", "bit")
	h.expectErr("ERR syntax error", "BITPOS", "ff", "0", "1", "2", "3", "4")
	h.expectErr("ERR syntax error", "BITPOS", "ff", "1", "0", "1", "foo")
	h.expectErr("ERR value is not an integer or out of range", "BITPOS", "ff", "1", "0", "a", "bit")
	h.expectErr("ERR syntax error", "BITPOS", "ff", "1", "0", "a", "foo")
	h.expectErr("ERR value is not an integer or out of range", "BITPOS", "ff", "x", "0")
	h.expectErr("ERR The bit argument must be 1 or 0.", "BITPOS", "ff", "2")
	h.expect(0, "BITPOS", "missing", "0")
	h.expect(-1, "BITPOS", "missing", "1")
	h.expectErr("ERR The bit argument must be 1 or 0.", "BITPOS", "missing", "2")
	h.expect(-1, "BITPOS", "missing", "1", "a")
	h.expectErr("WRONGTYPE Operation against a key holding the wrong kind of value", "BITPOS", "list", "1")
	h.expect(Status("OK"), "SET", "ones", "\xff\xff")
	h.expect(16, "BITPOS", "ones", "0")
	h.expect(16, "BITPOS", "ones", "0", "0")
	h.expect(-1, "BITPOS", "ones", "0", "0", "-1")
	h.expect(8, "BITPOS", "ones", "1", "-1")
	h.expect(Status("OK"), "SET", "zeros", "\x00\x00")
	h.expect(-1, "BITPOS", "zeros", "1")
	h.expect(8, "BITPOS", "zeros", "0", "1")
	// BITOP
	h.expect(Status("OK"), "SET", "a", "\xff\x0f")
	h.expect(Status("OK"), "SET", "c", "\x0f")
	h.expect(2, "BITOP", "AND", "d", "a", "c")
	h.expect("\x0f\x00", "GET", "d")
	h.expect(2, "BITOP", "OR", "d", "a", "c")
	h.expect("\xff\x0f", "GET", "d")
	h.expect(2, "BITOP", "XOR", "d", "a", "c", "missing")
	h.expect("\xf0\x0f", "GET", "d")
	h.expect(2, "BITOP", "NOT", "d", "a")
	h.expect("\x00\xf0", "GET", "d")
	h.expectErr("ERR BITOP NOT must be called with a single source key.", "BITOP", "NOT", "d", "a", "c")
	h.expectErr("ERR syntax error", "BITOP", "FOO", "d", "a")
	h.expectErr("WRONGTYPE Operation against a key holding the wrong kind of value", "BITOP", "AND", "d", "list")
	h.expect(0, "BITOP", "AND", "d", "missing")
	h.expect(0, "EXISTS", "d")
	h.expect(2, "BITOP", "OR", "list", "a")
	h.expect(Status("string"), "TYPE", "list")
	h.expect(Status("OK"), "SET", "t", "x", "EX", "100")
	h.expect(2, "BITOP", "OR", "t", "a")
	h.expect(-1, "TTL", "t")
	// BITFIELD
	h.expect([]any{0, 100, -56, 200}, "BITFIELD", "bf", "SET", "i8", "0", "100", "GET", "i8", "0", "INCRBY", "i8", "0", "100", "GET", "u8", "0")
	h.expect([]any{44, -128, nil}, "BITFIELD", "bf", "OVERFLOW", "SAT", "INCRBY", "i8", "0", "100", "INCRBY", "i8", "0", "-300", "OVERFLOW", "FAIL", "INCRBY", "i8", "0", "-1")
	h.expect([]any{0, 15, 15, 0, 15}, "BITFIELD", "bf", "SET", "u4", "#1", "15", "GET", "u4", "#1", "GET", "u4", "4", "INCRBY", "u4", "#1", "1", "OVERFLOW", "SAT", "INCRBY", "u4", "#1", "100")
	h.expect([]any{143, 0, 0, nil, 4294934272}, "BITFIELD", "bf", "SET", "u8", "0", "-1", "OVERFLOW", "SAT", "SET", "u8", "8", "-1", "SET", "i8", "16", "200", "OVERFLOW", "FAIL", "SET", "i4", "24", "100", "GET", "u32", "0")
	h.expect("\xff\xff\x7f\x00", "GET", "bf")
	h.expect([]any{-141836999983104, 9223230199854792704, -141836999983104, 0}, "BITFIELD", "bf", "GET", "i64", "0", "GET", "u63", "1", "SET", "i64", "0", "-1", "INCRBY", "i64", "0", "1")
	h.expect([]any{9223372036854775807, -9223372036854775808, -1, 0}, "BITFIELD", "bf", "INCRBY", "i64", "0", "9223372036854775807", "INCRBY", "i64", "0", "1", "OVERFLOW", "SAT", "INCRBY", "i64", "0", "9223372036854775807", "INCRBY", "i64", "0", "1")
	h.expect([]any{0, 9223372036854775807, 9223372036854775806}, "BITFIELD", "bf", "OVERFLOW", "WRAP", "SET", "i64", "0", "-9223372036854775808", "INCRBY", "i64", "0", "-1", "OVERFLOW", "SAT", "INCRBY", "i64", "0", "-1")
	h.expectErr("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.", "BITFIELD", "bf", "GET", "u64", "0")
	h.expectErr("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.", "BITFIELD", "bf", "GET", "i65", "0")
	h.expectErr("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.", "BITFIELD", "bf", "GET", "i0", "0")
	h.expectErr("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.", "BITFIELD", "bf", "GET", "I8", "0")
	h.expectErr("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.", "BITFIELD", "bf", "GET", "x", "0")
	h.expectErr("ERR bit offset is not an integer or out of range", "BITFIELD", "bf", "GET", "u8", "-1")
	h.expectErr("ERR bit offset is not an integer or out of range", "BITFIELD", "bf", "GET", "u8", "#-1")
	h.expectErr("ERR bit offset is not an integer or out of range", "BITFIELD", "bf", "GET", "u8", "x")
	h.expectErr("ERR value is not an integer or out of range", "BITFIELD", "bf", "SET", "u8", "0", "x")
	h.expectErr("ERR Invalid OVERFLOW type specified", "BITFIELD", "bf", "OVERFLOW", "foo")
	h.expectErr("ERR syntax error", "BITFIELD", "bf", "FOO")
	h.expectErr("ERR syntax error", "BITFIELD", "bf", "GET", "u8")
	h.expectErr("ERR syntax error", "BITFIELD", "bf", "SET", "u8", "0")
	h.expectErr("ERR syntax error", "BITFIELD", "bf", "OVERFLOW")
	h.expect([]any{}, "BITFIELD", "bf")
	h.expect([]any{0, 0}, "BITFIELD", "missing", "GET", "u8", "0", "GET", "i4", "100")
	h.expect([]any{255}, "BITFIELD", "list", "GET", "u8", "0")
	h.expect([]any{255}, "BITFIELD", "list", "SET", "u8", "0", "1")
	h.expect([]any{nil}, "BITFIELD", "nf", "OVERFLOW", "FAIL", "INCRBY", "u8", "100", "300")
	h.expect("\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", "GET", "nf")
	h.expect([]any{127, -1}, "BITFIELD_RO", "bf", "GET", "u8", "0", "GET", "i8", "8")
	h.expectErr("ERR BITFIELD_RO only supports the GET subcommand", "BITFIELD_RO", "bf", "GET", "u8", "0", "SET", "u8", "0", "1")
	h.expect([]any{1}, "BITFIELD_RO", "list", "GET", "u8", "0")
	h.expectErr("ERR BITFIELD_RO only supports the GET subcommand", "BITFIELD_RO", "list", "SET", "u8", "0", "1")
	h.expect([]any{0}, "BITFIELD_RO", "missing", "GET", "u8", "0")
	h.expect([]any{}, "BITFIELD_RO", "bf")
	h.expect([]any{127, 127, 8}, "BITFIELD", "bf", "get", "u8", "0", "set", "u8", "0", "7", "incrby", "u8", "0", "1", "overflow", "wrap")
	h.expect([]any{0, 1}, "BITFIELD", "t2", "SET", "u1", "0", "1", "GET", "u1", "0")
	h.expect("\x80", "GET", "t2")
	h.expect([]any{1, -1, -2, 0, 0, 29152}, "BITFIELD", "w", "INCRBY", "u2", "0", "5", "INCRBY", "i3", "2", "-9", "OVERFLOW", "WRAP", "INCRBY", "i3", "2", "-9", "SET", "i3", "5", "9", "SET", "u3", "8", "-1", "GET", "u16", "0")
}

// WATCH sees what Redis 7.0.15 signals as a modification: a bit command that leaves the
// bytes of its key as they were, a SETBIT of a bit already so or a BITFIELD whose writes
// OVERFLOW FAIL refused, leaves the key's version alone. The sequence and its verdicts
// were taken from redis-server with a WATCH around each command.
func TestBitmapWatchVersions(t *testing.T) {
	h := newHarness(t)
	h.do("SETBIT", "b", "3", "1")
	for _, c := range []struct {
		cmd     []string
		changes bool
	}{
		{[]string{"SETBIT", "b", "3", "1"}, false},
		{[]string{"SETBIT", "b", "4", "0"}, false},
		{[]string{"BITFIELD", "b", "SET", "u8", "0"}, false}, // a syntax error
		{[]string{"BITOP", "AND", "other", "b"}, false},
		{[]string{"GETBIT", "b", "3"}, false},
		{[]string{"BITFIELD_RO", "b", "GET", "u8", "0"}, false},
		{[]string{"SETBIT", "b", "3", "0"}, true},
		{[]string{"SETBIT", "b", "40", "0"}, true}, // grows the string
		{[]string{"BITFIELD", "b", "SET", "u8", "0", "0"}, false},
		{[]string{"BITFIELD", "b", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "9"}, false},
		{[]string{"BITOP", "NOT", "b", "b"}, true},
		{[]string{"BITOP", "OR", "b", "missing"}, true},
		{[]string{"BITFIELD", "b", "SET", "u8", "0", "5"}, true},
		{[]string{"BITFIELD", "b", "SET", "u8", "0", "5"}, false},
		{[]string{"BITFIELD", "b", "SET", "u8", "800", "0"}, true},
		{[]string{"BITFIELD", "b", "INCRBY", "u8", "0", "0"}, false},
		{[]string{"BITFIELD", "b", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "1000"}, false},
		{[]string{"BITFIELD", "b", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "1000", "INCRBY", "u8", "0", "1"}, true},
	} {
		if c.changes {
			h.expectVersionMoves("b", [][]string{c.cmd})
		} else {
			h.expectVersionStays("b", [][]string{c.cmd})
		}
	}
}

// SETBIT and BITFIELD change a string in place and keep its TTL; BITOP stores a new
// value, which drops the destination's.
func TestBitmapTTL(t *testing.T) {
	h := newHarness(t)
	h.do("SET", "k", "a", "EX", "100")
	h.do("SETBIT", "k", "100", "1")
	h.do("BITFIELD", "k", "INCRBY", "u8", "200", "1")
	h.expect(100, "TTL", "k")
	h.do("SET", "d", "x", "EX", "100")
	h.expect(26, "BITOP", "OR", "d", "k")
	h.expect(-1, "TTL", "d")
	h.do("SET", "e", "x", "EX", "100")
	h.expect(0, "BITOP", "OR", "e", "missing")
	h.expect(0, "EXISTS", "e")
}
