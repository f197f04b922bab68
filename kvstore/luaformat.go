package kvstore

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1's string.format (lstrlib.c's str_format), which formats each item with C's
// sprintf. gopher-lua's handed the format to Go's Sprintf: %u printed
// "%!u(float64=3)", %x of -1 "-1" (C: ffffffffffffffff), %g of 1/3 Go's shortest
// digits (C: 0.333333), %e of NaN "NaN" (C: nan or -nan), %.3s counted runes, a
// width of three digits formatted (Lua: "invalid format"). This follows the C
// library Redis is built with (glibc on x86-64), including how C converts a double
// to the integer a conversion takes.

// luaFormatFlags are the flags scanformat skips (FLAGS).
const luaFormatFlags = "-+ #0"

// luaFormatSpec is one conversion of a format: its flags, width and precision (-1:
// none), as scanformat reads them.
type luaFormatSpec struct {
	minus, plus, space, hash, zero bool
	width, prec                    int
}

// luaStrFormat is string.format.
func luaStrFormat(L *lua.LState) int {
	top := L.GetTop()
	f := luaCheckString(L, "format", 1)
	var b []byte
	arg := 1
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b = append(b, f[i])
			continue
		}
		if i+1 < len(f) && f[i+1] == '%' {
			b = append(b, '%')
			i++
			continue
		}
		// a format item: its argument is checked before the item itself
		if arg++; arg > top {
			raiseArgError(L, arg, "format", "no value")
		}
		var sp luaFormatSpec
		i, sp = scanFormat(L, f, i+1)
		var c byte // what C reads past the end of the format: its NUL
		if i < len(f) {
			c = f[i]
		}
		item := formatItem(L, c, sp, arg)
		if c == 's' && sp.prec < 0 && len(item) >= 100 {
			b = append(b, item...) // kept whole, NULs and all (no sprintf)
			continue
		}
		if k := strings.IndexByte(item, 0); k >= 0 {
			item = item[:k] // added with strlen: a NUL ends the item
		}
		b = append(b, item...)
	}
	L.Push(lua.LString(b))
	return 1
}

// scanFormat reads the flags, width and precision of the item at f[i:] (past its '%')
// as scanformat does, and returns the index of the conversion character.
func scanFormat(L *lua.LState, f string, i int) (int, luaFormatSpec) {
	sp := luaFormatSpec{prec: -1}
	start := i
	for i < len(f) && strings.IndexByte(luaFormatFlags, f[i]) >= 0 {
		switch f[i] {
		case '-':
			sp.minus = true
		case '+':
			sp.plus = true
		case ' ':
			sp.space = true
		case '#':
			sp.hash = true
		case '0':
			sp.zero = true
		}
		i++
	}
	if i-start >= len(luaFormatFlags)+1 {
		raiseAsC(L, "invalid format (repeated flags)")
	}
	digits := func() int {
		n := 0
		for k := 0; k < 2 && i < len(f) && isLuaDigit(int(f[i])); k++ {
			n = n*10 + int(f[i]-'0')
			i++
		}
		return n
	}
	sp.width = digits()
	if i < len(f) && f[i] == '.' {
		i++
		sp.prec = digits()
	}
	if i < len(f) && isLuaDigit(int(f[i])) {
		raiseAsC(L, "invalid format (width or precision too long)")
	}
	return i, sp
}

// formatItem formats argument arg with conversion c as sprintf would.
func formatItem(L *lua.LState, c byte, sp luaFormatSpec, arg int) string {
	switch c {
	case 'c':
		return sp.pad(string([]byte{byte(cInt(luaCheckNumber(L, "format", arg)))}))
	case 'd', 'i':
		v := cLong(luaCheckNumber(L, "format", arg))
		neg := v < 0
		u := uint64(v)
		if neg {
			u = -u
		}
		return sp.integer(strconv.FormatUint(u, 10), neg)
	case 'o', 'u', 'x', 'X':
		u := cUnsignedLong(luaCheckNumber(L, "format", arg))
		switch c {
		case 'o':
			digits := sp.precise(strconv.FormatUint(u, 8))
			if sp.hash && (digits == "" || digits[0] != '0') {
				digits = "0" + digits // # makes the first digit a 0, even of .0 of 0
			}
			return sp.finish("", digits)
		case 'u':
			return sp.unsigned(strconv.FormatUint(u, 10), "")
		}
		digits, prefix := strconv.FormatUint(u, 16), "0x"
		if c == 'X' {
			digits, prefix = strings.ToUpper(digits), "0X"
		}
		if !sp.hash || u == 0 {
			prefix = ""
		}
		return sp.unsigned(digits, prefix)
	case 'e', 'E', 'f', 'g', 'G':
		return sp.float(c, luaCheckNumber(L, "format", arg))
	case 'q':
		s := luaCheckString(L, "format", arg)
		if n := quotedLen(s); n > scriptMaxString {
			L.RaiseError("not enough memory")
		} else {
			chargeBytes(L, n)
		}
		return luaQuoted(s) // flags and width are ignored
	case 's':
		s := luaCheckString(L, "format", arg)
		if sp.prec < 0 && len(s) >= 100 {
			return s
		}
		if k := strings.IndexByte(s, 0); k >= 0 {
			s = s[:k] // sprintf's %s reads a C string
		}
		if sp.prec >= 0 && len(s) > sp.prec {
			s = s[:sp.prec] // bytes, not characters
		}
		return sp.pad(s)
	}
	// luaL_error's %c of the NUL past the format's end prints nothing
	opt := ""
	if c != 0 {
		opt = string([]byte{c})
	}
	raiseAsC(L, "invalid option '%"+opt+"' to 'format'")
	return ""
}

// pad pads s with spaces to the width: on the right with '-', else on the left (an
// integer's zeros come from finish).
func (sp luaFormatSpec) pad(s string) string {
	n := sp.width - len(s)
	switch {
	case n <= 0:
		return s
	case sp.minus:
		return s + strings.Repeat(" ", n)
	}
	return strings.Repeat(" ", n) + s
}

// integer is %d of the digits of a magnitude.
func (sp luaFormatSpec) integer(digits string, neg bool) string {
	sign := ""
	switch {
	case neg:
		sign = "-"
	case sp.plus:
		sign = "+"
	case sp.space:
		sign = " "
	}
	return sp.finish(sign, sp.precise(digits))
}

// unsigned is %u and %x of digits: as integer, without a sign.
func (sp luaFormatSpec) unsigned(digits, prefix string) string {
	return sp.finish(prefix, sp.precise(digits))
}

// precise applies an integer conversion's precision to its digits: a minimum of
// digits, and .0 of a zero prints none.
func (sp luaFormatSpec) precise(digits string) string {
	if sp.prec == 0 && digits == "0" {
		return ""
	}
	if len(digits) < sp.prec {
		return strings.Repeat("0", sp.prec-len(digits)) + digits
	}
	return digits
}

// finish pads an integer conversion's sign (or prefix) and digits to the width: with
// zeros between them for the 0 flag without a precision, else with spaces.
func (sp luaFormatSpec) finish(sign, digits string) string {
	if sp.zero && !sp.minus && sp.prec < 0 {
		if n := sp.width - len(sign) - len(digits); n > 0 {
			digits = strings.Repeat("0", n) + digits
		}
	}
	return sp.pad(sign + digits)
}

// float is %e, %f, %g (and %E, %G) of v: Go's formatting of a finite number, with C's
// default precision of 6; glibc's inf and nan (their sign kept, nan's too) padded with
// spaces whatever the 0 flag.
func (sp luaFormatSpec) float(c byte, v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		s := "inf"
		if math.IsNaN(v) {
			s = "nan"
		}
		if c == 'E' || c == 'G' {
			s = strings.ToUpper(s)
		}
		switch {
		case math.Signbit(v):
			s = "-" + s
		case sp.plus:
			s = "+" + s
		case sp.space:
			s = " " + s
		}
		return sp.pad(s)
	}
	prec := sp.prec
	if prec < 0 {
		prec = 6
	}
	var f strings.Builder
	f.WriteByte('%')
	for _, flag := range []struct {
		on bool
		c  byte
	}{{sp.minus, '-'}, {sp.plus, '+'}, {sp.space, ' '}, {sp.hash, '#'}, {sp.zero, '0'}} {
		if flag.on {
			f.WriteByte(flag.c)
		}
	}
	if sp.width > 0 {
		f.WriteString(strconv.Itoa(sp.width))
	}
	f.WriteByte('.')
	f.WriteString(strconv.Itoa(prec))
	f.WriteByte(c)
	return fmt.Sprintf(f.String(), v)
}

// C's conversions of a double to the integer types str_format hands sprintf, as GCC
// compiles them for x86-64: cvttsd2si, whose answer for NaN and for what is out of
// range is the "integer indefinite", the type's lowest value; an unsigned long from a
// double of 2^63 or more goes through the signed conversion of x - 2^63.

// cInt is (int)x.
func cInt(x float64) int32 {
	if x != x || x >= 1<<31 || x <= -(1<<31)-1 {
		return math.MinInt32
	}
	return int32(x)
}

// cLong is (long)x.
func cLong(x float64) int64 {
	if x != x || x >= 1<<63 || x < -(1<<63) {
		return math.MinInt64
	}
	return int64(x)
}

// cUnsignedLong is (unsigned long)x.
func cUnsignedLong(x float64) uint64 {
	if x >= 1<<63 {
		return uint64(cLong(x-(1<<63))) ^ 1<<63
	}
	return uint64(cLong(x))
}
