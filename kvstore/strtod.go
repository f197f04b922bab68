package kvstore

import (
	"math"
	"strconv"
)

func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHexDigit(c byte) bool {
	return isDigit(c) || ('a' <= c|0x20 && c|0x20 <= 'f')
}

// hasPrefixFold reports whether b starts with lower, ignoring ASCII case.
func hasPrefixFold(b []byte, lower string) bool {
	return len(b) >= len(lower) && eq(b[:len(lower)], lower)
}

// strtod parses the longest prefix of b that C's strtod (glibc, C locale) accepts:
// leading white space, a sign, then a decimal or hexadecimal number, "inf", "infinity" or
// "nan" (with an optional "(chars)"). It returns the value, the number of bytes consumed
// (0 when nothing converts) and whether strtod would set ERANGE (overflow to ±HUGE_VAL, or
// underflow of a non-zero number to 0).
func strtod(b []byte) (v float64, n int, erange bool) {
	i := 0
	for i < len(b) && isCSpace(b[i]) {
		i++
	}
	start := i
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	sign := func(f float64) float64 {
		if neg {
			return -f
		}
		return f
	}
	rest := b[i:]
	switch {
	case hasPrefixFold(rest, "infinity"):
		return sign(math.Inf(1)), i + 8, false
	case hasPrefixFold(rest, "inf"):
		return sign(math.Inf(1)), i + 3, false
	case hasPrefixFold(rest, "nan"):
		j := i + 3
		if j < len(b) && b[j] == '(' {
			k := j + 1
			for k < len(b) && (isDigit(b[k]) || ('a' <= b[k]|0x20 && b[k]|0x20 <= 'z') || b[k] == '_') {
				k++
			}
			if k < len(b) && b[k] == ')' {
				j = k + 1
			}
		}
		// glibc's NaN (Go's math.NaN has another payload), its sign kept: "-nan" has it set
		return sign(math.Float64frombits(0x7ff8000000000000)), j, false
	}
	nonzero := false
	digits := 0
	j := i
	if len(rest) >= 2 && rest[0] == '0' && rest[1]|0x20 == 'x' {
		j, digits, nonzero = scanMantissa(b, j+2, isHexDigit)
		if digits == 0 {
			// "0x" with no hex digit: strtod converts the "0" alone
			return sign(0), i + 1, false
		}
		hasExp := false
		if j < len(b) && b[j]|0x20 == 'p' {
			k := j + 1
			if k < len(b) && (b[k] == '+' || b[k] == '-') {
				k++
			}
			if k < len(b) && isDigit(b[k]) {
				for k < len(b) && isDigit(b[k]) {
					k++
				}
				j, hasExp = k, true
			}
		}
		text := string(b[start:j])
		if !hasExp {
			text += "p0" // Go requires the binary exponent; C does not
		}
		return finishStrtod(text, j, nonzero)
	}
	j, digits, nonzero = scanMantissa(b, j, isDigit)
	if digits == 0 {
		return 0, 0, false
	}
	if j < len(b) && b[j]|0x20 == 'e' {
		k := j + 1
		if k < len(b) && (b[k] == '+' || b[k] == '-') {
			k++
		}
		if k < len(b) && isDigit(b[k]) {
			for k < len(b) && isDigit(b[k]) {
				k++
			}
			j = k
		}
	}
	return finishStrtod(string(b[start:j]), j, nonzero)
}

func finishStrtod(text string, n int, nonzero bool) (float64, int, bool) {
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			// cannot happen for the syntax scanned above; refuse rather than guess
			return 0, 0, false
		}
		return v, n, true
	}
	return v, n, v == 0 && nonzero
}

// ParseFloat parses a double (a score, weight, increment...) as Redis's getDoubleFromObject: the
// whole argument is a strtod number (hexadecimal too), with no leading space, not NaN,
// and neither overflowing nor underflowing to zero. "inf" and "-inf" are fine.
func ParseFloat(b []byte) (float64, bool) {
	if len(b) == 0 || isCSpace(b[0]) {
		return 0, false
	}
	v, n, erange := strtod(b)
	if n != len(b) || math.IsNaN(v) || (erange && (math.IsInf(v, 0) || v == 0)) {
		return 0, false
	}
	return v, true
}

// scanMantissa reads digits, an optional '.', and more digits from b[j:], counting the
// digits and noting whether any is not zero (to tell an underflow from a true zero).
func scanMantissa(b []byte, j int, isD func(byte) bool) (end, digits int, nonzero bool) {
	point := false
	for j < len(b) {
		switch {
		case isD(b[j]):
			nonzero = nonzero || b[j] != '0'
			digits++
		case b[j] == '.' && !point:
			point = true
		default:
			return j, digits, nonzero
		}
		j++
	}
	return j, digits, nonzero
}
