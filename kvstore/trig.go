package kvstore

import (
	"math"
	"math/big"
)

// Correctly rounded sin, cos and asin, for the geo commands. Redis computes distances
// with glibc's libm, whose sin, cos and asin round correctly in all but vanishingly rare
// cases; Go's math package is within an ulp or so, and its Cos and Asin differ from
// glibc's in the last bit for many arguments (0.1, 0.65...). A distance a client stores
// (GEORADIUS ... STOREDIST) shows every bit, so the functions here compute in
// double-double arithmetic (about 106 bits) and round once.

// dd is an unevaluated sum hi + lo with |lo| ≤ ulp(hi)/2.
type dd struct{ hi, lo float64 }

func twoSum(a, b float64) dd {
	s := a + b
	bb := s - a
	return dd{s, (a - (s - bb)) + (b - bb)}
}

func quickTwoSum(a, b float64) dd {
	s := a + b
	return dd{s, b - (s - a)}
}

func (x dd) add(y dd) dd {
	s := twoSum(x.hi, y.hi)
	t := twoSum(x.lo, y.lo)
	s.lo += t.hi
	s = quickTwoSum(s.hi, s.lo)
	s.lo += t.lo
	return quickTwoSum(s.hi, s.lo)
}

func (x dd) neg() dd { return dd{-x.hi, -x.lo} }

func (x dd) sub(y dd) dd { return x.add(y.neg()) }

func (x dd) mul(y dd) dd {
	p := x.hi * y.hi
	e := math.FMA(x.hi, y.hi, -p)
	e += x.hi*y.lo + x.lo*y.hi
	return quickTwoSum(p, e)
}

func (x dd) div(y dd) dd {
	q1 := x.hi / y.hi
	r := x.sub(y.mul(dd{q1, 0}))
	q2 := r.hi / y.hi
	r = r.sub(y.mul(dd{q2, 0}))
	q3 := r.hi / y.hi
	return quickTwoSum(q1, q2).add(dd{q3, 0})
}

func (x dd) round() float64 { return x.hi + x.lo }

// ddOf rounds a big.Float to a double-double.
func ddOf(f *big.Float) dd {
	hi, _ := f.Float64()
	lo, _ := new(big.Float).Sub(f, new(big.Float).SetFloat64(hi)).Float64()
	return dd{hi, lo}
}

var (
	// invFact[n] = 1/n!; halfPi is π/2 in three doubles (about 160 bits), for the
	// argument reduction of an argument close to a multiple of π/2.
	invFact [28]dd
	halfPi  [3]float64
	halfPiD dd
)

func init() {
	f := new(big.Float).SetPrec(256).SetInt64(1)
	for n := range invFact {
		if n > 0 {
			f.Mul(f, new(big.Float).SetPrec(256).SetInt64(int64(n)))
		}
		invFact[n] = ddOf(new(big.Float).SetPrec(256).Quo(big.NewFloat(1).SetPrec(256), f))
	}
	// π/2 to 256 bits (77 decimal digits)
	p, _, _ := big.ParseFloat("1.5707963267948966192313216916397514420985846996875529104874722961539082031431", 10, 256, big.ToNearestEven)
	for i := range halfPi {
		halfPi[i], _ = p.Float64()
		p.Sub(p, new(big.Float).SetFloat64(halfPi[i]))
	}
	halfPiD = dd{halfPi[0], halfPi[1]}
}

// sinCosReduced returns sin r and cos r for |r| ≤ π/4, by their Taylor series.
func sinCosReduced(r dd) (sin, cos dd) {
	r2 := r.mul(r)
	sin, cos = invFact[27], invFact[26]
	for n := 25; n >= 1; n -= 2 { // Horner: 1/n! − r²·(…), the signs alternating
		sin = invFact[n].sub(r2.mul(sin))
		cos = invFact[n-1].sub(r2.mul(cos))
	}
	return sin.mul(r), cos
}

// sinCosDD returns sin x and cos x for |x| up to a few π.
func sinCosDD(x dd) (sin, cos dd) {
	k := math.Round(x.hi / halfPi[0])
	r := x
	for _, p := range halfPi {
		prod := k * p
		r = r.sub(dd{prod, math.FMA(k, p, -prod)})
	}
	s, c := sinCosReduced(r)
	switch int(k) & 3 {
	case 1:
		return c, s.neg()
	case 2:
		return s.neg(), c.neg()
	case 3:
		return c.neg(), s
	}
	return s, c
}

// crSin and crCos are sin and cos rounded correctly, for the arguments the geo commands
// pass (radians of coordinates and their differences).
func crSin(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return math.Sin(x)
	}
	s, _ := sinCosDD(dd{x, 0})
	return s.round()
}

func crCos(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return math.Cos(x)
	}
	_, c := sinCosDD(dd{x, 0})
	return c.round()
}

// asinDD refines math.Asin(x) by Newton's method on sin y = x; |x| ≤ 1/2, where cos y
// stays away from 0.
func asinDD(x dd) dd {
	y := dd{math.Asin(x.round()), 0}
	for range 2 {
		s, c := sinCosDD(y)
		y = y.sub(s.sub(x).div(c))
	}
	return y
}

// crAsin is asin rounded correctly.
func crAsin(x float64) float64 {
	ax := math.Abs(x)
	if ax > 1 || math.IsNaN(x) || x == 0 {
		return math.Asin(x)
	}
	var y dd
	if ax <= 0.5 {
		y = asinDD(dd{ax, 0})
	} else {
		// asin x = π/2 − 2·asin(√((1−x)/2)): 1−x is exact for x in [1/2, 1], and the
		// inner argument is at most 1/2
		h := (1 - ax) / 2
		r := math.Sqrt(h)
		root := dd{r, 0}
		root = root.add(dd{h, 0}.sub(root.mul(root)).div(dd{2 * r, 0})) // one Newton step
		if r == 0 {
			root = dd{}
		}
		in := asinDD(root)
		y = halfPiD.sub(in.add(in))
	}
	if x < 0 {
		return -y.round()
	}
	return y.round()
}
