package kvstore

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// cmsgpack is the MessagePack library Redis loads for scripts (lua-cmsgpack 0.4, as in
// Redis's deps): pack(...) encodes each argument and joins them; unpack(s) returns every
// value s holds; unpack_one(s [, offset]) and unpack_limit(s, limit [, offset]) return
// the offset of what is left (-1 at the end) before the values. Its encoding choices
// are lua-cmsgpack's, so that a packed value has the same bytes as in Redis: a number
// that is an int64 takes the shortest integer form, any other the float form when
// float32 holds it exactly, else a double; a string the shortest str form (fixstr, str8,
// str16, str32); a table whose keys are exactly 1..n an array, any other a map (its
// pairs in the table's order, which gopher-lua's tables keep by insertion, where Lua's
// follow their hash, as for cjson); a table nested 16 deep, a function or a userdata
// nil. Decoding takes the same forms (no bin or ext, as lua-cmsgpack 0.4), numbers as
// Lua numbers.
//
// As everything a script makes, what pack writes is charged to its budget (each table
// it enters is an instruction, and its output is bounded at scriptMaxString: a table
// shared by others is encoded once for each, and 16 levels of four references to the
// one below would be 4^16 tables), and what unpack makes too (chargeBytes, a value's 32
// bytes each); unpack nests as deep as Lua's stack allows, with lua-cmsgpack's error
// past it, instead of overflowing the Go stack.

// msgpackMaxNesting is lua-cmsgpack's LUACMSGPACK_MAX_NESTING: deeper tables encode as
// nil, so a table that holds itself encodes.
const msgpackMaxNesting = 16

func openCMsgpack(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(msgpackPack))
	t.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int { return msgpackUnpack(L, 0, 0) }))
	t.RawSetString("unpack_one", L.NewFunction(func(L *lua.LState) int {
		offset := L.OptInt(2, 0)
		L.SetTop(1)
		return msgpackUnpack(L, 1, offset)
	}))
	t.RawSetString("unpack_limit", L.NewFunction(func(L *lua.LState) int {
		limit := L.CheckInt(2)
		offset := L.OptInt(3, 0)
		L.SetTop(1)
		return msgpackUnpack(L, limit, offset)
	}))
	return t
}

func msgpackPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		raiseAsC(L, "bad argument #0 to 'pack' (MessagePack pack needs input.)")
	}
	var b []byte
	for i := 1; i <= n; i++ {
		b = msgpackEncode(L, b, L.Get(i), 0)
	}
	chargeBytes(L, len(b))
	L.Push(lua.LString(b))
	return 1
}

func msgpackEncode(L *lua.LState, b []byte, v lua.LValue, level int) []byte {
	switch v := v.(type) {
	case lua.LString:
		if len(b)+len(v) > scriptMaxString {
			L.RaiseError("not enough memory")
		}
		n := len(v)
		switch {
		case n < 32:
			b = append(b, 0xa0|byte(n))
		case n <= 0xff:
			b = append(b, 0xd9, byte(n))
		case n <= 0xffff:
			b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
		default:
			b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
		}
		return append(b, v...)
	case lua.LBool:
		if v {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case lua.LNumber:
		f := float64(v)
		// IS_INT64_EQUIVALENT: finite, and (int64_t)f == f (2^63 converts to the
		// smallest int64 on x86, which differs)
		if !math.IsInf(f, 0) && f == math.Trunc(f) && f >= -0x1p63 && f < 0x1p63 {
			return msgpackInt(b, int64(f))
		}
		if f32 := float32(f); float64(f32) == f {
			return binary.BigEndian.AppendUint32(append(b, 0xca), math.Float32bits(f32))
		}
		return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(f))
	case *lua.LTable:
		if level == msgpackMaxNesting {
			return append(b, 0xc0)
		}
		chargeBytes(L, scriptBytesPerInstruction) // see the comment on openCMsgpack
		if len(b) > scriptMaxString {
			L.RaiseError("not enough memory")
		}
		if n, ok := msgpackArrayLen(v); ok {
			b = msgpackHeader(b, n, 0x90, 0xdc, 0xdd)
			for i := 1; i <= n; i++ {
				b = msgpackEncode(L, b, L.GetTable(v, lua.LNumber(i)), level+1)
			}
			return b
		}
		n := 0
		forEachInOrder(v, func(lua.LValue, lua.LValue) { n++ })
		b = msgpackHeader(b, n, 0x80, 0xde, 0xdf)
		forEachInOrder(v, func(k, val lua.LValue) {
			b = msgpackEncode(L, b, k, level+1)
			b = msgpackEncode(L, b, val, level+1)
		})
		return b
	}
	return append(b, 0xc0) // nil, and what MessagePack has no form for
}

// msgpackArrayLen is lua-cmsgpack's table_is_an_array: every key a positive integer
// (one that fits a C int), as many keys as the largest. n is the array's length.
func msgpackArrayLen(t *lua.LTable) (n int, ok bool) {
	count, maxKey, ok := 0, 0.0, true
	forEachInOrder(t, func(k, _ lua.LValue) {
		f, isNum := k.(lua.LNumber)
		if !ok || !isNum || f <= 0 || float64(f) != math.Trunc(float64(f)) || f > math.MaxInt32 {
			ok = false
			return
		}
		maxKey = max(maxKey, float64(f))
		count++
	})
	return count, ok && maxKey == float64(count)
}

func msgpackHeader(b []byte, n int, fix, b16, b32 byte) []byte {
	switch {
	case n < 16:
		return append(b, fix|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, b16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, b32), uint32(n))
}

// msgpackInt is lua-cmsgpack's mp_encode_int: the shortest form for n.
func msgpackInt(b []byte, n int64) []byte {
	switch {
	case n >= 0 && n <= 127:
		return append(b, byte(n))
	case n >= 0 && n <= 0xff:
		return append(b, 0xcc, byte(n))
	case n >= 0 && n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
	case n >= 0 && n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
	case n >= 0:
		return binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(n))
	case n >= -32:
		return append(b, byte(n))
	case n >= -128:
		return append(b, 0xd0, byte(n))
	case n >= -32768:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(n))
	case n >= -2147483648:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

// msgpackUnpack is lua-cmsgpack's mp_unpack_full: limit values (0 with offset 0: all,
// and no offset returned) from offset.
func msgpackUnpack(L *lua.LState, limit, offset int) int {
	s := L.CheckString(1)
	if offset < 0 || limit < 0 {
		// (lua-cmsgpack prints the input's length as the limit)
		L.RaiseError("Invalid request to unpack with offset of %d and limit of %d.", int32(offset), int32(len(s)))
	} else if offset > len(s) {
		// lua-cmsgpack compares longs but prints them with %d: their low 32 bits
		L.RaiseError("Start offset %d greater than input length %d.", int32(offset), int32(len(s)))
	}
	all := limit == 0 && offset == 0
	if all {
		limit = math.MaxInt
	}
	d := msgpackDecoder{L: L, b: []byte(s[offset:]), slots: L.GetTop()}
	n := 0
	for ; len(d.b) > 0 && n < limit; n++ {
		v := d.value()
		switch d.err {
		case msgpackEOF:
			L.RaiseError("Missing bytes in input.")
		case msgpackBadFormat:
			L.RaiseError("Bad data format in input.")
		}
		L.Push(v) // (value counted it in slots)
	}
	if all {
		return n
	}
	next := len(s) - len(d.b)
	if len(d.b) == 0 {
		next = -1
	}
	L.Insert(lua.LNumber(next), 2)
	return n + 1
}

type msgpackError int

const (
	msgpackOK msgpackError = iota
	msgpackEOF
	msgpackBadFormat
)

// msgpackDecoder reads values from b. slots counts what lua-cmsgpack would hold on Lua's
// stack (the values decoded so far, each table being filled and the key or index it is
// filled at), which Lua bounds at luaMaxCStack: checkStack fails where lua-cmsgpack's
// luaL_checkstack calls do, with their messages.
type msgpackDecoder struct {
	L     *lua.LState
	b     []byte
	err   msgpackError
	slots int
}

// take returns the next n bytes, or nil (and the error) when there are fewer.
func (d *msgpackDecoder) take(n int) []byte {
	if len(d.b) < n {
		d.err = msgpackEOF
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *msgpackDecoder) checkStack(where string) {
	if d.slots+1 > luaMaxCStack {
		raiseAsC(d.L, "stack overflow ("+where+")")
	}
}

// value decodes the next value, which it counts on the stack (slots), as lua-cmsgpack
// leaves it pushed.
func (d *msgpackDecoder) value() lua.LValue {
	p := d.take(1)
	if p == nil {
		return lua.LNil
	}
	d.checkStack("too many return values at once; use unpack_one or unpack_limit instead.")
	d.slots++ // the value (a table is there while its elements are decoded)
	chargeBytes(d.L, luaValueBytes)
	c := p[0]
	be := binary.BigEndian
	switch {
	case c <= 0x7f:
		return lua.LNumber(c)
	case c >= 0xe0:
		return lua.LNumber(int8(c))
	case c&0xe0 == 0xa0:
		return d.str(int(c & 0x1f))
	case c&0xf0 == 0x90:
		return d.array(int(c & 0x0f))
	case c&0xf0 == 0x80:
		return d.hash(int(c & 0x0f))
	}
	switch c {
	case 0xc0:
		return lua.LNil
	case 0xc2:
		return lua.LFalse
	case 0xc3:
		return lua.LTrue
	case 0xcc:
		if p := d.take(1); p != nil {
			return lua.LNumber(p[0])
		}
	case 0xd0:
		if p := d.take(1); p != nil {
			return lua.LNumber(int8(p[0]))
		}
	case 0xcd:
		if p := d.take(2); p != nil {
			return lua.LNumber(be.Uint16(p))
		}
	case 0xd1:
		if p := d.take(2); p != nil {
			return lua.LNumber(int16(be.Uint16(p)))
		}
	case 0xce:
		if p := d.take(4); p != nil {
			return lua.LNumber(be.Uint32(p))
		}
	case 0xd2:
		if p := d.take(4); p != nil {
			return lua.LNumber(int32(be.Uint32(p)))
		}
	case 0xcf:
		if p := d.take(8); p != nil {
			return lua.LNumber(be.Uint64(p))
		}
	case 0xd3:
		if p := d.take(8); p != nil {
			return lua.LNumber(int64(be.Uint64(p)))
		}
	case 0xca:
		if p := d.take(4); p != nil {
			return lua.LNumber(math.Float32frombits(be.Uint32(p)))
		}
	case 0xcb:
		if p := d.take(8); p != nil {
			return lua.LNumber(math.Float64frombits(be.Uint64(p)))
		}
	case 0xd9:
		if p := d.take(1); p != nil {
			return d.str(int(p[0]))
		}
	case 0xda:
		if p := d.take(2); p != nil {
			return d.str(int(be.Uint16(p)))
		}
	case 0xdb:
		if p := d.take(4); p != nil {
			return d.str(int(be.Uint32(p)))
		}
	case 0xdc:
		if p := d.take(2); p != nil {
			return d.array(int(be.Uint16(p)))
		}
	case 0xdd:
		if p := d.take(4); p != nil {
			return d.array(int(be.Uint32(p)))
		}
	case 0xde:
		if p := d.take(2); p != nil {
			return d.hash(int(be.Uint16(p)))
		}
	case 0xdf:
		if p := d.take(4); p != nil {
			return d.hash(int(be.Uint32(p)))
		}
	default:
		d.err = msgpackBadFormat
	}
	return lua.LNil
}

func (d *msgpackDecoder) str(n int) lua.LValue {
	p := d.take(n)
	if p == nil {
		return lua.LNil
	}
	chargeBytes(d.L, n)
	return lua.LString(p) // a copy: b is the decoder's own
}

// array fills a table with n values at 1..n, as lua-cmsgpack sets them (a nil value
// leaves its key out).
func (d *msgpackDecoder) array(n int) lua.LValue {
	t := d.L.NewTable()
	d.checkStack("in function mp_decode_to_lua_array")
	for i := 1; i <= n && d.err == msgpackOK; i++ {
		d.slots++ // the index
		if v := d.value(); d.err == msgpackOK && v != lua.LNil {
			t.RawSetInt(i, v)
		}
		d.slots -= 2 // lua_settable pops the index and the value
	}
	return t
}

// hash fills a table with n key and value pairs; a nil or NaN key fails as lua_settable
// does.
func (d *msgpackDecoder) hash(n int) lua.LValue {
	t := d.L.NewTable()
	for i := 0; i < n && d.err == msgpackOK; i++ {
		k := d.value()
		if d.err != msgpackOK {
			break
		}
		v := d.value()
		if d.err != msgpackOK {
			break
		}
		d.slots -= 2 // lua_settable pops the key and the value
		// lua_settable's errors, raised inside the C function: no line
		if k == lua.LNil {
			d.L.Error(lua.LString("table index is nil"), 0)
		} else if f, ok := k.(lua.LNumber); ok && f != f {
			d.L.Error(lua.LString("table index is NaN"), 0)
		}
		chargePadding(d.L, t, k) // a key of 2^26 - 1 would pad a GB (scripttable.go)
		t.RawSet(k, v)
	}
	return t
}
