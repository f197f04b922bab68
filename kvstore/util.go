package kvstore

import (
	"bytes"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// ParseInt parses a 64-bit integer exactly as Redis's string2ll does: an optional '-', no
// '+', no spaces, no leading zeros, no overflow.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	i := 0
	if b[0] == '-' {
		neg = true
		i++
		if len(b) == 1 {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (math.MaxUint64-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// longDoublePrec is the mantissa width of x87 long double, which Redis uses for
// INCRBYFLOAT and HINCRBYFLOAT; big.Float at this precision rounds exactly as it does.
const longDoublePrec = 64

// maxLongDoubleChars is Redis's MAX_LONG_DOUBLE_CHARS: string2ld refuses longer input.
const maxLongDoubleChars = 5 * 1024

// parseDecimalLongDouble parses a decimal (not hex, not inf) long double.
func parseDecimalLongDouble(b []byte) (*big.Float, bool) {
	// big.ParseFloat also takes digit separators and, in base 10 too, a binary exponent
	// ("1p3" is 8); strtold takes neither in a decimal number.
	if len(b) == 0 || b[0] == ' ' || b[0] == '\t' || bytes.ContainsAny(b, "_pP") {
		return nil, false
	}
	s := string(b)
	low := strings.ToLower(strings.TrimLeft(s, "+-"))
	if low == "nan" || strings.HasPrefix(low, "nan(") {
		return nil, false
	}
	f, _, err := big.ParseFloat(s, 10, longDoublePrec, big.ToNearestEven)
	if err != nil {
		return nil, false
	}
	if f.IsInf() {
		// strtold accepts "inf"; Redis then refuses the result as not finite anyway
		return f, true
	}
	// strtold overflows to ±HUGE_VALL with ERANGE beyond the long double range (~1.19e4932)
	if f.MantExp(nil) > 16384 {
		return nil, false
	}
	return f, true
}

// parseLongDouble parses as Redis's string2ld, which is strtold: decimal and hexadecimal
// floats ("0x1.8p3"), "infinity" and any case of
// "inf"; input longer than MAX_LONG_DOUBLE_CHARS and results that underflow to zero
// (ERANGE) are refused.
func parseLongDouble(b []byte) (*big.Float, bool) {
	if len(b) == 0 || len(b) >= maxLongDoubleChars {
		return nil, false
	}
	switch b[0] {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return nil, false
	}
	body := strings.ToLower(string(b))
	neg := false
	if body[0] == '+' || body[0] == '-' {
		neg = body[0] == '-'
		body = body[1:]
	}
	if body == "inf" || body == "infinity" {
		return new(big.Float).SetPrec(longDoublePrec).SetInf(neg), true
	}
	var f *big.Float
	if strings.HasPrefix(body, "0x") {
		if strings.IndexByte(body, '_') >= 0 {
			return nil, false
		}
		v, _, err := big.ParseFloat(string(b), 0, longDoublePrec, big.ToNearestEven)
		if err != nil {
			return nil, false
		}
		f = v
	} else {
		v, ok := parseDecimalLongDouble(b)
		if !ok {
			return nil, false
		}
		f = v
	}
	if f.IsInf() {
		return f, true
	}
	if f.Sign() != 0 {
		// x87 long double: largest finite value just below 2^16384, smallest
		// subnormal 2^-16445; anything below half of that rounds to zero (ERANGE)
		var mant big.Float
		e := f.MantExp(&mant)
		if e > 16384 || e < -16445 || (e == -16445 && mant.Abs(&mant).Cmp(big.NewFloat(0.5)) == 0) {
			return nil, false
		}
	}
	return f, true
}

// addLongDouble adds as Redis's long double arithmetic (INCRBYFLOAT, HINCRBYFLOAT) and
// formats the sum as they reply it; false when the sum leaves the long double range.
func addLongDouble(a, b *big.Float) (string, bool) {
	sum := new(big.Float).SetPrec(longDoublePrec).SetMode(big.ToNearestEven).Add(a, b)
	if sum.MantExp(nil) > 16384 {
		return "", false
	}
	return formatLongDouble(sum), true
}

// formatLongDouble prints as Redis's ld2string in LD_STR_HUMAN mode: "%.17Lf" with the
// trailing zeros (and a trailing '.') removed, and "-0" shown as "0".
func formatLongDouble(f *big.Float) string {
	s := f.Text('f', 17)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// FormatDouble prints a double as Redis 7.0 replies with one (%.17g; "inf", "-inf").
func FormatDouble(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}

// parseIntArg parses an integer argument, replying with Redis's error when it is not one.
func (c *Ctx) parseIntArg(b []byte) (int64, bool) {
	v, ok := ParseInt(b)
	if !ok {
		c.Error(ErrNotInteger)
	}
	return v, ok
}

// parseIntArgs parses two integer arguments (a range's start and end), replying with
// Redis's error at the first that is not one.
func (c *Ctx) parseIntArgs(a, b []byte) (int64, int64, bool) {
	x, ok := c.parseIntArg(a)
	if !ok {
		return 0, 0, false
	}
	y, ok := c.parseIntArg(b)
	return x, y, ok
}

// parseFloatArg parses a float argument, replying with Redis's error when it is not one.
func (c *Ctx) parseFloatArg(b []byte) (float64, bool) {
	v, ok := ParseFloat(b)
	if !ok {
		c.Error(ErrNotFloat)
	}
	return v, ok
}

// eq compares an argument with a lower-case option name, ignoring case.
func eq(arg []byte, lower string) bool {
	if len(arg) != len(lower) {
		return false
	}
	for i := 0; i < len(arg); i++ {
		c := arg[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// rangeIndex converts Redis start/stop indexes (negative from the end) on a sequence of
// length n into a half-open [lo, hi) range; empty when lo >= hi.
func rangeIndex(start, stop int64, n int) (lo, hi int) {
	ln := int64(n)
	if start < 0 {
		start += ln
	}
	if stop < 0 {
		stop += ln
	}
	if start < 0 {
		start = 0
	}
	if start > stop || start >= ln {
		return 0, 0
	}
	if stop >= ln {
		stop = ln - 1
	}
	return int(start), int(stop) + 1
}

// Glob reports whether s matches a Redis glob pattern (KEYS, SCAN MATCH, ...): * ? [...]
// with ranges and ^ negation, and \ escapes, as Redis's stringmatchlen.
func Glob(pattern, s []byte) bool {
	return globMatch(pattern, s, 0)
}

func globMatch(p, s []byte, depth int) bool {
	if depth > 1000 {
		// Redis bounds its recursion likewise; a pattern this deep matches nothing
		return false
	}
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatch(p[1:], s[i:], depth+1) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s = s[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			p = p[1:]
			not := len(p) > 0 && p[0] == '^'
			if not {
				p = p[1:]
			}
			match := false
			for {
				if len(p) == 0 {
					break
				}
				if p[0] == '\\' && len(p) >= 2 {
					p = p[1:]
					if p[0] == s[0] {
						match = true
					}
				} else if p[0] == ']' {
					break
				} else if len(p) >= 3 && p[1] == '-' {
					start, end := p[0], p[2]
					if start > end {
						start, end = end, start
					}
					p = p[2:]
					if s[0] >= start && s[0] <= end {
						match = true
					}
				} else if p[0] == s[0] {
					match = true
				}
				p = p[1:]
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s = s[1:]
			if len(p) == 0 {
				// an unterminated class ends the pattern, as in Redis
				return len(s) == 0
			}
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || p[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
	}
	return len(s) == 0
}
