package kvstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// struct is the binary packing library Redis loads for scripts (Roberto Ierusalimschy's
// lua_struct, as in Redis's deps): struct.pack(fmt, ...), struct.unpack(fmt, s [, pos])
// (the values, then the position after them) and struct.size(fmt), with its format
// language: `<` `>` byte order (native, little, by default), `!n` the largest alignment
// (default 1, `!` alone 8), `b B h H l L T` signed and unsigned integers of 1, 2, 8 and
// 8 bytes, `i I` with a size `in` of up to 32 (4 by default), `f d` floats, `x` a zero
// byte, `cn` n bytes of a string (`c0` its whole length; unpacking, the length the
// previous value gave), `s` a zero-terminated string, spaces ignored. Sizes, alignment,
// byte order, the two's-complement arithmetic of C's 64-bit long, the results and the
// error texts are lua_struct's on x86-64 (TestLuaStructAsRedis compares them with
// redis-server).

const (
	structMaxIntSize = 32 // MAXINTSIZE
	structMaxAlign   = 8  // MAXALIGN on x86-64
)

func openStruct(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(structPack))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	return t
}

// structFormat reads a format: opt, its size and the padding before it.
type structFormat struct {
	L      *lua.LState
	fn     string // the function, for its errors
	args   int    // the arguments it was called with
	fmt    string
	little bool
	align  int
}

func newStructFormat(L *lua.LState, fn string) *structFormat {
	return &structFormat{L: L, fn: fn, args: L.GetTop(), fmt: luaCheckString(L, fn, 1), little: true, align: 1}
}

// number is pack's argument n as luaL_checknumber takes it. pack pushes a nil above its
// arguments (a mark lua_struct leaves there), so the first one missing is a nil.
func (f *structFormat) number(n int) float64 {
	if n == f.args+1 {
		if v := f.L.Get(n); v == lua.LNil {
			f.argError(n, "number expected, got nil")
		}
	}
	return luaCheckNumber(f.L, f.fn, n)
}

func (f *structFormat) argError(n int, msg string) {
	raiseArgError(f.L, n, f.fn, msg)
}

// num reads the number after an option, or returns df (getnum).
func (f *structFormat) num(df int) int {
	if len(f.fmt) == 0 || f.fmt[0] < '0' || f.fmt[0] > '9' {
		return df
	}
	a := 0
	for len(f.fmt) > 0 && f.fmt[0] >= '0' && f.fmt[0] <= '9' {
		d := int(f.fmt[0] - '0')
		if a > math.MaxInt32/10 || a*10 > math.MaxInt32-d {
			raiseAsC(f.L, "integral size overflow")
		}
		a = a*10 + d
		f.fmt = f.fmt[1:]
	}
	return a
}

// next returns the next option and its size (optsize), or false at the format's end.
func (f *structFormat) next() (byte, int, bool) {
	if len(f.fmt) == 0 {
		return 0, 0, false
	}
	opt := f.fmt[0]
	f.fmt = f.fmt[1:]
	switch opt {
	case 'b', 'B', 'x':
		return opt, 1, true
	case 'h', 'H':
		return opt, 2, true
	case 'l', 'L', 'T', 'd':
		return opt, 8, true
	case 'f':
		return opt, 4, true
	case 'c':
		return opt, f.num(1), true
	case 'i', 'I':
		size := f.num(4)
		if size > structMaxIntSize {
			raiseAsC(f.L, fmt.Sprintf("integral size %d is larger than limit of %d", size, structMaxIntSize))
		}
		return opt, size, true
	}
	return opt, 0, true
}

// toAlign is the padding that aligns an option of size at position pos (gettoalign).
func (f *structFormat) toAlign(pos int, opt byte, size int) int {
	if size == 0 || opt == 'c' {
		return 0
	}
	size = min(size, f.align)
	return (size - pos&(size-1)) & (size - 1)
}

// control applies an option that is not a value (controloptions).
func (f *structFormat) control(opt byte) {
	switch opt {
	case ' ':
	case '>':
		f.little = false
	case '<':
		f.little = true
	case '!':
		a := f.num(structMaxAlign)
		if a <= 0 || a&(a-1) != 0 {
			raiseAsC(f.L, fmt.Sprintf("alignment %d is not a power of 2", a))
		}
		f.align = a
	default:
		f.argError(1, fmt.Sprintf("invalid format option '%c'", opt))
	}
}

func structPack(L *lua.LState) int {
	f := newStructFormat(L, "pack")
	var b []byte
	arg := 2
	for {
		opt, size, ok := f.next()
		if !ok {
			break
		}
		pad := f.toAlign(len(b), opt, size)
		b = append(b, make([]byte, pad)...)
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			n := f.number(arg)
			arg++
			// C: (long)n for a negative n, (unsigned long)n otherwise
			var v uint64
			if n < 0 {
				v = uint64(int64(n))
			} else {
				v = uint64(n)
			}
			b = appendStructInt(b, v, size, f.little)
		case 'x':
			b = append(b, 0)
		case 'f':
			b = appendOrdered(b, binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(f.number(arg)))), f.little)
			arg++
		case 'd':
			b = appendOrdered(b, binary.LittleEndian.AppendUint64(nil, math.Float64bits(f.number(arg))), f.little)
			arg++
		case 'c', 's':
			s := luaCheckString(L, "pack", arg)
			arg++
			if size == 0 {
				size = len(s)
			}
			if len(s) < size {
				f.argError(arg, "string too short") // lua_struct names the next argument
			}
			b = append(b, s[:size]...)
			if opt == 's' {
				b = append(b, 0)
			}
		default:
			f.control(opt)
		}
		if len(b) > scriptMaxString {
			L.RaiseError("not enough memory")
		}
	}
	chargeBytes(L, len(b))
	L.Push(lua.LString(b))
	return 1
}

// appendStructInt appends the size low bytes of v in the byte order (putinteger: past 8
// bytes, zeros).
func appendStructInt(b []byte, v uint64, size int, little bool) []byte {
	out := make([]byte, size)
	for i := range size {
		k := i
		if !little {
			k = size - 1 - i
		}
		out[k] = byte(v)
		v >>= 8
	}
	return append(b, out...)
}

// appendOrdered appends le, little-endian bytes, in the byte order.
func appendOrdered(b, le []byte, little bool) []byte {
	if !little {
		for i, j := 0, len(le)-1; i < j; i, j = i+1, j-1 {
			le[i], le[j] = le[j], le[i]
		}
	}
	return append(b, le...)
}

func structUnpack(L *lua.LState) int {
	f := newStructFormat(L, "unpack")
	data := luaCheckString(L, "unpack", 2)
	start := 1
	if L.GetTop() >= 3 && L.Get(3) != lua.LNil {
		start = int(luaCheckNumber(L, "unpack", 3))
	}
	if start < 1 {
		f.argError(3, "offset must be 1 or greater")
	}
	pos := start - 1
	n := 0
	base := L.GetTop()
	for {
		opt, size, ok := f.next()
		if !ok {
			break
		}
		pos += f.toAlign(pos, opt, size)
		if size > len(data) || pos > len(data)-size {
			f.argError(2, "data string too short")
		}
		if base+n+2 > luaMaxCStack {
			raiseAsC(L, "stack overflow (too many results)")
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			L.Push(structInt(data[pos:pos+size], f.little, opt >= 'a'))
			n++
		case 'x':
		case 'f':
			le := appendOrdered(nil, []byte(data[pos:pos+4]), f.little)
			L.Push(lua.LNumber(math.Float32frombits(binary.LittleEndian.Uint32(le))))
			n++
		case 'd':
			le := appendOrdered(nil, []byte(data[pos:pos+8]), f.little)
			L.Push(lua.LNumber(math.Float64frombits(binary.LittleEndian.Uint64(le))))
			n++
		case 'c':
			if size == 0 {
				prev, isNum := lua.LNil, false
				if n > 0 {
					prev = L.Get(-1)
					_, isNum = luaToNumber(prev)
				}
				if !isNum {
					raiseAsC(L, "format 'c0' needs a previous size")
				}
				l, _ := luaToNumber(prev)
				size = int(l)
				L.Pop(1)
				n--
				if size > len(data) || pos > len(data)-size {
					f.argError(2, "data string too short")
				}
			}
			chargeBytes(L, size)
			L.Push(lua.LString(data[pos : pos+size]))
			n++
		case 's':
			e := bytes.IndexByte([]byte(data[pos:]), 0)
			if e < 0 {
				raiseAsC(L, "unfinished string in data")
			}
			size = e + 1
			chargeBytes(L, e)
			L.Push(lua.LString(data[pos : pos+e]))
			n++
		default:
			f.control(opt)
		}
		pos += size
	}
	L.Push(lua.LNumber(pos + 1))
	return n + 1
}

// structInt reads an integer (getinteger): as C's 64-bit unsigned long, and signed by
// extending the sign bit of its size.
func structInt(p string, little, signed bool) lua.LValue {
	var l uint64
	for i := range len(p) {
		k := i
		if little {
			k = len(p) - 1 - i
		}
		l = l<<8 | uint64(p[k])
	}
	if !signed {
		return lua.LNumber(l)
	}
	if bits := len(p)*8 - 1; bits < 64 {
		if mask := ^uint64(0) << bits; l&mask != 0 {
			l |= mask
		}
	}
	return lua.LNumber(int64(l))
}

func structSize(L *lua.LState) int {
	f := newStructFormat(L, "size")
	pos := 0
	for {
		opt, size, ok := f.next()
		if !ok {
			break
		}
		pos += f.toAlign(pos, opt, size)
		if opt == 's' {
			f.argError(1, "option 's' has no fixed size")
		} else if opt == 'c' && size == 0 {
			f.argError(1, "option 'c0' has no fixed size")
		}
		if !(opt >= 'a' && opt <= 'z' || opt >= 'A' && opt <= 'Z' || opt >= '0' && opt <= '9') {
			f.control(opt)
		}
		pos += size
	}
	L.Push(lua.LNumber(pos))
	return 1
}

// luaCheckNumber is luaL_checknumber: a number, or a string that converts to one, else
// Lua's argument error.
func luaCheckNumber(L *lua.LState, fn string, n int) float64 {
	if n > L.GetTop() {
		raiseArgError(L, n, fn, "number expected, got no value")
	}
	v := L.Get(n)
	if f, ok := luaToNumber(v); ok {
		return f
	}
	raiseArgError(L, n, fn, "number expected, got "+v.Type().String())
	return 0
}

// luaToNumber is lua_tonumber: a number, or a string that converts to one.
func luaToNumber(v lua.LValue) (float64, bool) {
	switch v := v.(type) {
	case lua.LNumber:
		return float64(v), true
	case lua.LString:
		if n, ok := luaStringNumber(string(v)).(lua.LNumber); ok {
			return float64(n), true
		}
	}
	return 0, false
}

// luaCheckString is luaL_checkstring: a string, or a number as Lua prints it (%.14g),
// else Lua's argument error.
func luaCheckString(L *lua.LState, fn string, n int) string {
	if n > L.GetTop() {
		raiseArgError(L, n, fn, "string expected, got no value")
	}
	switch v := L.Get(n).(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return formatG(float64(v))
	default:
		raiseArgError(L, n, fn, "string expected, got "+v.Type().String())
	}
	return ""
}
