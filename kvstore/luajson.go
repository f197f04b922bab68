package kvstore

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// cjson for scripts: cjson.encode, cjson.decode and cjson.null as the lua-cjson 2.1 that
// Redis bundles behaves with its default settings: numbers printed with %.14g, '/'
// escaped, sparse arrays refused past a ratio, JSON's invalid numbers (hex, inf, nan, a
// leading '+') accepted on decode, and its error texts. Its configuration functions are
// left out: a setting one script made would stay in the Lua state for the next, which is
// another one on each replica.
//
// One difference stays: an object's members come out in the order gopher-lua iterates a
// table (insertion order), where Lua 5.1's order follows its hash table.

const (
	jsonMaxDepth    = 1000
	jsonSparseRatio = 2
	jsonSparseSafe  = 10
)

func openCJSON(L *lua.LState) *lua.LTable {
	null := L.NewUserData()
	t := L.NewTable()
	t.RawSetString("null", null)
	t.RawSetString("encode", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.RaiseError("bad argument #1 to 'encode' (expected 1 argument)")
		}
		var b strings.Builder
		jsonEncode(L, &b, L.Get(1), null, 0)
		chargeBytes(L, b.Len())
		L.Push(lua.LString(b.String()))
		return 1
	}))
	t.RawSetString("decode", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.RaiseError("bad argument #1 to 'decode' (expected 1 argument)")
		}
		d := jsonDecoder{L: L, s: L.CheckString(1), null: null}
		chargeBytes(L, len(d.s))
		if len(d.s) >= 2 && (d.s[0] == 0 || d.s[1] == 0) {
			L.RaiseError("JSON parser does not support UTF-16 or UTF-32")
		}
		v := d.value(d.next(), 0)
		if tok := d.next(); tok.kind != jsonEnd {
			d.fail("the end", tok)
		}
		L.Push(v)
		return 1
	}))
	return t
}

// formatG is C's "%.14g", the way Lua 5.1 and lua-cjson print a number.
func formatG(f float64) string {
	switch {
	case math.IsNaN(f): // glibc's printf writes the sign of a NaN: 0/0 is -nan on x86
		if math.Signbit(f) {
			return "-nan"
		}
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 14, 64)
}

// luaToString is lua_tolstring of a string or a number: a number as Lua 5.1 writes it,
// with %.14g (gopher-lua wrote Go's shortest digits: 0.1 + 0.2 was
// 0.30000000000000004 where Lua writes 0.3, and 1/0 +Inf where Lua writes inf).
func luaToString(v lua.LValue) string {
	if n, ok := v.(lua.LNumber); ok {
		return formatG(float64(n))
	}
	return lua.LVAsString(v)
}

func jsonEncode(L *lua.LState, b *strings.Builder, v lua.LValue, null lua.LValue, depth int) {
	fail := func(v lua.LValue, reason string) {
		L.RaiseError("Cannot serialise %s: %s", v.Type().String(), reason)
	}
	switch v := v.(type) {
	case *lua.LNilType:
		b.WriteString("null")
	case lua.LBool:
		b.WriteString(strconv.FormatBool(bool(v)))
	case lua.LNumber:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			fail(v, "must not be NaN or Inf")
		}
		b.WriteString(formatG(f))
	case lua.LString:
		// bounded as the string functions are: a table holding one long string many
		// times would encode to more than the machine holds
		if b.Len()+len(v) > scriptMaxString {
			L.RaiseError("not enough memory")
		}
		jsonString(b, string(v))
		if b.Len() > scriptMaxString {
			L.RaiseError("not enough memory")
		}
	case *lua.LTable:
		depth++
		if depth > jsonMaxDepth {
			L.RaiseError("Cannot serialise, excessive nesting (%d)", depth)
		}
		// A table that others share is encoded once for each: thirty levels of
		// `t = {t, t}` are 2^30 tables, gigabytes of output from a few instructions
		// (it took a member past 11 GB; redis-server too, but one, and not again at
		// every replay). So each table costs an instruction, and the output is bounded
		// as a string is.
		chargeBytes(L, scriptBytesPerInstruction)
		if b.Len() > scriptMaxString {
			L.RaiseError("not enough memory")
		}
		n := jsonArrayLen(v)
		if n == -2 {
			fail(v, "excessively sparse array")
		}
		if n > 0 {
			b.WriteByte('[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b.WriteByte(',')
				}
				jsonEncode(L, b, v.RawGetInt(i), null, depth)
			}
			b.WriteByte(']')
			return
		}
		b.WriteByte('{')
		first := true
		forEachInOrder(v, func(k, val lua.LValue) {
			if !first {
				b.WriteByte(',')
			}
			first = false
			switch k := k.(type) {
			case lua.LNumber:
				b.WriteByte('"')
				b.WriteString(formatG(float64(k)))
				b.WriteByte('"')
			case lua.LString:
				jsonString(b, string(k))
			default:
				fail(k, "table key must be a number or string")
			}
			b.WriteByte(':')
			jsonEncode(L, b, val, null, depth)
		})
		b.WriteByte('}')
	default:
		if v == null {
			b.WriteString("null")
			return
		}
		fail(v, "type not supported")
	}
}

// jsonArrayLen is lua-cjson's lua_array_length: the largest key when every key is a
// positive integer, -1 when the table is an object, -2 when it is an array too sparse.
func jsonArrayLen(t *lua.LTable) int {
	max, items, object := 0, 0, false
	forEachInOrder(t, func(k, _ lua.LValue) {
		n, ok := k.(lua.LNumber)
		if object || !ok || n == 0 || math.Floor(float64(n)) != float64(n) || n < 1 {
			object = true
			return
		}
		max = int(math.Min(float64(n), math.MaxInt32))
		items++
	})
	switch {
	case object:
		return -1
	case max > items*jsonSparseRatio && max > jsonSparseSafe:
		return -2
	}
	return max
}

// jsonString writes s quoted as lua-cjson escapes it: '"', '\\' and '/', control bytes
// (named where JSON has a name) and DEL; other bytes as they are.
func jsonString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\', '/':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < 0x20 || c == 0x7f {
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&15])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

type jsonKind int

// The token kinds, named in errors as lua-cjson names them.
const (
	jsonObjBegin jsonKind = iota
	jsonObjEnd
	jsonArrBegin
	jsonArrEnd
	jsonStr
	jsonNum
	jsonBool
	jsonNull
	jsonColon
	jsonComma
	jsonEnd
	jsonError
)

var jsonKindNames = [...]string{"T_OBJ_BEGIN", "T_OBJ_END", "T_ARR_BEGIN", "T_ARR_END", "T_STRING", "T_NUMBER", "T_BOOLEAN", "T_NULL", "T_COLON", "T_COMMA", "T_END", "T_ERROR"}

type jsonToken struct {
	kind  jsonKind
	at    int // index of its first byte
	value lua.LValue
	err   string // jsonError: what is wrong
}

type jsonDecoder struct {
	L    *lua.LState
	s    string
	i    int
	null lua.LValue
}

func (d *jsonDecoder) fail(expected string, tok jsonToken) {
	found := tok.err
	if tok.kind != jsonError {
		found = jsonKindNames[tok.kind]
	}
	d.L.RaiseError("Expected %s but found %s at character %d", expected, found, tok.at+1)
}

func (d *jsonDecoder) next() jsonToken {
	for d.i < len(d.s) && strings.IndexByte(" \t\n\r", d.s[d.i]) >= 0 {
		d.i++
	}
	tok := jsonToken{at: d.i}
	if d.i >= len(d.s) || d.s[d.i] == 0 {
		tok.kind = jsonEnd
		return tok
	}
	rest := d.s[d.i:]
	if k := strings.IndexByte("{}[]:,", rest[0]); k >= 0 {
		d.i++
		tok.kind = [...]jsonKind{jsonObjBegin, jsonObjEnd, jsonArrBegin, jsonArrEnd, jsonColon, jsonComma}[k]
		return tok
	}
	switch c := rest[0]; {
	case c == '"':
		return d.str(tok)
	case c == '-' || isDigit(c):
		return d.num(tok)
	case strings.HasPrefix(rest, "true"):
		d.i += 4
		tok.kind, tok.value = jsonBool, lua.LTrue
	case strings.HasPrefix(rest, "false"):
		d.i += 5
		tok.kind, tok.value = jsonBool, lua.LFalse
	case strings.HasPrefix(rest, "null"):
		d.i += 4
		tok.kind, tok.value = jsonNull, d.null
	case jsonInvalidNumber(rest):
		return d.num(tok)
	default:
		tok.kind, tok.err = jsonError, "invalid token"
	}
	return tok
}

// jsonInvalidNumber is lua-cjson's json_is_invalid_number: what strtod takes and JSON
// does not (a leading '+', hex, leading zeros, inf, nan), decoded all the same.
func jsonInvalidNumber(s string) bool {
	if s[0] == '+' {
		return true
	}
	if s[0] == '-' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	if s[0] == '0' {
		return len(s) > 1 && (s[1]|0x20 == 'x' || isDigit(s[1]))
	}
	if s[0] <= '9' {
		return false
	}
	return hasPrefixFold([]byte(s), "inf") || hasPrefixFold([]byte(s), "nan")
}

func (d *jsonDecoder) num(tok jsonToken) jsonToken {
	v, n, _ := strtod([]byte(d.s[d.i:]))
	if n == 0 {
		tok.kind, tok.err = jsonError, "invalid number"
		return tok
	}
	d.i += n
	tok.kind, tok.value = jsonNum, lua.LNumber(v)
	return tok
}

func (d *jsonDecoder) str(tok jsonToken) jsonToken {
	var b strings.Builder
	d.i++ // the opening quote
	// an error is reported where the string went wrong
	bad := func(msg string) jsonToken {
		tok.kind, tok.err, tok.at = jsonError, msg, d.i
		return tok
	}
	for {
		if d.i >= len(d.s) || d.s[d.i] == 0 {
			return bad("unexpected end of string")
		}
		c := d.s[d.i]
		if c == '"' {
			d.i++
			tok.kind, tok.value = jsonStr, lua.LString(b.String())
			return tok
		}
		if c != '\\' {
			b.WriteByte(c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.s) {
			return bad("unexpected end of string")
		}
		esc := d.s[d.i+1]
		if k := strings.IndexByte(`"\/bfnrt`, esc); k >= 0 {
			b.WriteByte("\"\\/\b\f\n\r\t"[k])
			d.i += 2
			continue
		}
		if esc != 'u' {
			return bad("invalid escape code")
		}
		r, n := jsonUnicode(d.s[d.i:])
		if n == 0 {
			return bad("invalid unicode escape code")
		}
		b.WriteRune(r)
		d.i += n
	}
}

// jsonUnicode decodes the \uXXXX escape (a surrogate pair as two) at the start of s: the
// code point and the bytes read, 0 when invalid.
func jsonUnicode(s string) (rune, int) {
	hex4 := func(s string) (rune, bool) {
		if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(s[2:6], 16, 16)
		return rune(v), err == nil
	}
	hi, ok := hex4(s)
	switch {
	case !ok:
		return 0, 0
	case hi >= 0xdc00 && hi <= 0xdfff:
		return 0, 0 // a low surrogate first
	case hi < 0xd800 || hi > 0xdbff:
		return hi, 6
	}
	lo, ok := hex4(s[6:])
	if !ok || lo < 0xdc00 || lo > 0xdfff {
		return 0, 0
	}
	return 0x10000 + (hi-0xd800)<<10 + (lo - 0xdc00), 12
}

// more reads what follows an element: a comma (true: another element comes) or end
// (false); anything else fails as "Expected <expected>".
func (d *jsonDecoder) more(end jsonKind, expected string) bool {
	switch sep := d.next(); sep.kind {
	case jsonComma:
		return true
	case end:
		return false
	default:
		d.fail(expected, sep)
		return false
	}
}

func (d *jsonDecoder) value(tok jsonToken, depth int) lua.LValue {
	switch tok.kind {
	case jsonStr, jsonNum, jsonBool, jsonNull:
		return tok.value
	case jsonObjBegin, jsonArrBegin:
		depth++
		if depth > jsonMaxDepth {
			d.L.RaiseError("Found too many nested data structures (%d) at character %d", depth, tok.at+1)
		}
		t := d.L.NewTable()
		if tok.kind == jsonArrBegin {
			tok = d.next()
			if tok.kind == jsonArrEnd {
				return t
			}
			for i := 1; ; i++ {
				t.RawSetInt(i, d.value(tok, depth))
				if !d.more(jsonArrEnd, "comma or array end") {
					return t
				}
				tok = d.next()
			}
		}
		tok = d.next()
		if tok.kind == jsonObjEnd {
			return t
		}
		for {
			if tok.kind != jsonStr {
				d.fail("object key string", tok)
			}
			if colon := d.next(); colon.kind != jsonColon {
				d.fail("colon", colon)
			}
			t.RawSet(tok.value, d.value(d.next(), depth))
			if !d.more(jsonObjEnd, "comma or object end") {
				return t
			}
			tok = d.next()
		}
	}
	d.fail("value", tok)
	return lua.LNil
}
