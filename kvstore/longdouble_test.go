package kvstore

import "testing"

// strtold reads "1p0" only as far as the "1", so Redis refuses it as a float; Go's
// big.ParseFloat took the "p0" for a binary exponent, even in base 10. A SETBIT turns
// "100" into "1p0": the differential test found this once it drew bit commands.
func TestIncrByFloatRefusesABinaryExponentInADecimal(t *testing.T) {
	h := newHarness(t)
	h.do("SET", "k", "1p0")
	h.expectErr(ErrNotFloat, "INCRBYFLOAT", "k", "10")
	h.do("SET", "k", "1")
	h.expectErr(ErrNotFloat, "INCRBYFLOAT", "k", "1p2")
	h.do("HSET", "h", "f", "1P0")
	h.expectErr("ERR hash value is not a float", "HINCRBYFLOAT", "h", "f", "1")
	h.do("SET", "x", "0x1p2")
	h.expect("5", "INCRBYFLOAT", "x", "1") // a hexadecimal float keeps its exponent
}
