package kvstore

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

const refPrec = 300

// refSinCos computes sin x and cos x by their Taylor series in 300-bit floats.
func refSinCos(x float64) (sin, cos *big.Float) {
	bx := new(big.Float).SetPrec(refPrec).SetFloat64(x)
	sin, cos = new(big.Float).SetPrec(refPrec), new(big.Float).SetPrec(refPrec)
	term := new(big.Float).SetPrec(refPrec).SetInt64(1) // x^n / n!
	for n := 0; n < 120; n++ {
		switch n % 4 {
		case 0:
			cos.Add(cos, term)
		case 1:
			sin.Add(sin, term)
		case 2:
			cos.Sub(cos, term)
		case 3:
			sin.Sub(sin, term)
		}
		term.Mul(term, bx)
		term.Quo(term, new(big.Float).SetPrec(refPrec).SetInt64(int64(n+1)))
	}
	return sin, cos
}

// refAsin refines math.Asin(x) by Newton's method in 300-bit floats.
func refAsin(x float64) *big.Float {
	bx := new(big.Float).SetPrec(refPrec).SetFloat64(x)
	y := new(big.Float).SetPrec(refPrec).SetFloat64(math.Asin(x))
	for range 6 {
		yf, _ := y.Float64()
		// sin and cos of the current 300-bit y: shift by the double part's residue
		s, c := refSinCos(yf)
		d := new(big.Float).SetPrec(refPrec).Sub(y, new(big.Float).SetFloat64(yf))
		// sin(yf+d) ≈ s + c·d, cos(yf+d) ≈ c − s·d (d is below 1e-16: the next terms vanish)
		sy := new(big.Float).SetPrec(refPrec).Add(s, new(big.Float).SetPrec(refPrec).Mul(c, d))
		cy := new(big.Float).SetPrec(refPrec).Sub(c, new(big.Float).SetPrec(refPrec).Mul(s, d))
		step := new(big.Float).SetPrec(refPrec).Sub(sy, bx)
		step.Quo(step, cy)
		y.Sub(y, step)
	}
	return y
}

// The double-double sin, cos and asin round correctly: each equals its 300-bit
// reference rounded to a double, over random arguments of the ranges the geo commands
// use.
func TestCorrectlyRoundedTrig(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		x := (r.Float64()*2 - 1) * 3.2
		if i%3 == 0 {
			x = math.Ldexp(r.Float64(), -r.IntN(30)) // small arguments too
		}
		s, c := refSinCos(x)
		if want, _ := s.Float64(); crSin(x) != want {
			t.Fatalf("crSin(%v) = %v, want %v", x, crSin(x), want)
		}
		if want, _ := c.Float64(); crCos(x) != want {
			t.Fatalf("crCos(%v) = %v, want %v", x, crCos(x), want)
		}
		a := math.Mod(math.Abs(x), 1)
		if i%5 == 0 {
			a = 1 - math.Ldexp(r.Float64(), -r.IntN(40)) // close to 1, where asin is steep
		}
		if want, _ := refAsin(a).Float64(); crAsin(a) != want {
			t.Fatalf("crAsin(%v) = %v, want %v", a, crAsin(a), want)
		}
	}
	if crAsin(1) != math.Pi/2 || crAsin(-1) != -math.Pi/2 || crAsin(0) != 0 || !math.IsNaN(crAsin(1.5)) {
		t.Fatal("crAsin at the ends of its domain")
	}
}
