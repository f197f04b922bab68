package kvstore

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// HyperLogLog: PFADD PFCOUNT PFMERGE PFDEBUG over Redis's own representation of an HLL
// in a string value, so that GET, DUMP-free copies between servers and every reply
// (cardinalities included) are redis-server 7.0.15's, byte for byte.
//
// The string is a 16-byte header ("HYLL", the encoding, three unused bytes, and the
// last cardinality computed, little endian, whose top bit marks it stale) followed by
// 16384 six-bit registers. They are either dense (12288 bytes, register i at bit 6i) or
// sparse, a run-length code of three opcodes:
//
//	00xxxxxx           ZERO:  xxxxxx+1 registers (1-64) at 0
//	01xxxxxx yyyyyyyy  XZERO: xxxxxxyyyyyyyy+1 registers (1-16384) at 0
//	1vvvvvxx           VAL:   xx+1 registers (1-4) at vvvvv+1 (1-32)
//
// A new HLL is sparse; it turns dense when a register would exceed 32, or when the code
// would outgrow hll-sparse-max-bytes (3000, fixed here: the representation is replicated
// state, so every member must switch at the same write). How the sparse code is edited
// (where a run is split, which neighbours are merged) decides the bytes, so it follows
// Redis's hllSparseSet step for step.
//
// As for bitmaps, a string is immutable here, so a PFADD copies the string it changes:
// O(its length), at most 12304 bytes, where Redis edits in place.

func init() {
	register(
		&Spec{Name: "pfadd", Arity: -2, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "hyperloglog", Since: "2.8.9", Summary: "Adds the specified elements to the specified HyperLogLog.", Run: pfaddCmd},
		// PFCOUNT of one key stores the cardinality it computes in the key's header (and
		// Redis signals the key as modified), so that call goes through the log; a count
		// over several keys only reads.
		&Spec{Name: "pfcount", Arity: -2, Flags: FlagWrite | FlagReadLookups, FirstKey: 1, LastKey: -1, Step: 1, Group: "hyperloglog", Since: "2.8.9", Summary: "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).", Run: pfcountCmd,
			ReadOnlyCall: func(args [][]byte) bool { return len(args) > 2 }},
		&Spec{Name: "pfmerge", Arity: -2, Flags: FlagWrite | FlagDenyOOM | FlagReadLookups, FirstKey: 1, LastKey: -1, Step: 1, Group: "hyperloglog", Since: "2.8.9", Summary: "Merge N different HyperLogLogs into a single one.", Run: pfmergeCmd},
		&Spec{Name: "pfdebug", Arity: 3, Flags: FlagWrite | FlagDenyOOM, FirstKey: 2, LastKey: 2, Step: 1, Group: "hyperloglog", Since: "2.8.9", Summary: "Internal commands for debugging HyperLogLog values", Run: pfdebugCmd},
	)
}

const (
	hllP           = 14
	hllQ           = 64 - hllP
	hllRegisters   = 1 << hllP
	hllBits        = 6
	hllRegisterMax = 1<<hllBits - 1
	hllHdrSize     = 16
	hllDenseSize   = hllHdrSize + (hllRegisters*hllBits+7)/8
	hllDense       = 0
	hllSparse      = 1
	// hllSparseMaxBytes is Redis's hll-sparse-max-bytes default.
	hllSparseMaxBytes = 3000
	hllAlphaInf       = 0.721347520444481703680

	hllOpXZero       = 0x40
	hllOpVal         = 0x80
	hllValMaxValue   = 32
	hllValMaxLen     = 4
	hllZeroMaxLen    = 64
	hllXZeroMaxLen   = 16384
	hllCardStaleBit  = 0x80
	hllCardStaleByte = hllHdrSize - 1

	errNotHLL     = "WRONGTYPE Key is not a valid HyperLogLog string value."
	errCorruptHLL = "INVALIDOBJ Corrupted HLL object detected"
)

func hllIsZero(op byte) bool  { return op&0xc0 == 0 }
func hllIsXZero(op byte) bool { return op&0xc0 == hllOpXZero }
func hllIsVal(op byte) bool   { return op&hllOpVal != 0 }
func hllZeroLen(op byte) int  { return int(op&0x3f) + 1 }
func hllXZeroLen(op0, op1 byte) int {
	return (int(op0&0x3f)<<8 | int(op1)) + 1
}
func hllValValue(op byte) int { return int(op>>2&0x1f) + 1 }
func hllValLen(op byte) int   { return int(op&0x3) + 1 }

func hllVal(value, n int) byte { return byte((value-1)<<2|(n-1)) | hllOpVal }

// hllAppendZeros appends a ZERO or XZERO opcode for n registers, as Redis picks between them.
func hllAppendZeros(b []byte, n int) []byte {
	if n > hllZeroMaxLen {
		return append(b, byte((n-1)>>8)|hllOpXZero, byte(n-1))
	}
	return append(b, byte(n-1))
}

// murmurHash64A is Austin Appleby's MurmurHash64A, reading the input little endian on
// every platform, as Redis's copy does.
func murmurHash64A(key []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ uint64(len(key))*m
	for len(key) >= 8 {
		k := binary.LittleEndian.Uint64(key)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
		key = key[8:]
	}
	if len(key) > 0 {
		for i := len(key) - 1; i >= 0; i-- {
			h ^= uint64(key[i]) << (8 * i)
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// hllPatLen is the register an element goes to and the length of its hash's 0...01
// pattern after the index bits (1 to hllQ+1).
func hllPatLen(ele []byte) (index int, count int) {
	h := murmurHash64A(ele, 0xadc83b19)
	index = int(h & (hllRegisters - 1))
	h >>= hllP
	h |= 1 << hllQ
	return index, bits.TrailingZeros64(h) + 1
}

// hllGet and hllSet read and write register i of dense registers r (the string past its
// header). The last register's bits end in the last byte: Redis reads (and rewrites
// unchanged) the byte after it, its string's terminator, which here is not there.
func hllGet[R ~string | ~[]byte](r R, i int) int {
	byteAt, fb := i*hllBits/8, uint(i*hllBits&7)
	v := int(r[byteAt]) >> fb
	if byteAt+1 < len(r) {
		v |= int(r[byteAt+1]) << (8 - fb)
	}
	return v & hllRegisterMax
}

func hllSet(r []byte, i, v int) {
	byteAt, fb := i*hllBits/8, uint(i*hllBits&7)
	r[byteAt] = r[byteAt]&^byte(hllRegisterMax<<fb) | byte(v<<fb)
	if byteAt+1 < len(r) {
		r[byteAt+1] = r[byteAt+1]&^byte(hllRegisterMax>>(8-fb)) | byte(v>>(8-fb))
	}
}

// hllDenseSet raises register i to v; it reports whether it did.
func hllDenseSet(r []byte, i, v int) bool {
	if v > hllGet(r, i) {
		hllSet(r, i, v)
		return true
	}
	return false
}

// hllDecode unpacks dense registers r, four from every three bytes; with raise, it keeps
// the larger of each register and what regs holds already.
func hllDecode[R ~string | ~[]byte](r R, regs *[hllRegisters]uint8, raise bool) {
	r = r[:hllRegisters/4*3]
	for g := range hllRegisters / 4 {
		b0, b1, b2 := r[3*g], r[3*g+1], r[3*g+2]
		v := [4]uint8{b0 & hllRegisterMax, (b0>>6 | b1<<2) & hllRegisterMax, (b1>>4 | b2<<4) & hllRegisterMax, b2 >> 2}
		out := (*[4]uint8)(regs[4*g : 4*g+4])
		if raise {
			v = [4]uint8{max(v[0], out[0]), max(v[1], out[1]), max(v[2], out[2]), max(v[3], out[3])}
		}
		*out = v
	}
}

// hllEncode packs regs into dense registers r.
func hllEncode(regs *[hllRegisters]uint8, r []byte) {
	for g := range hllRegisters / 4 {
		v0, v1, v2, v3 := regs[4*g], regs[4*g+1], regs[4*g+2], regs[4*g+3]
		r[3*g] = v0 | v1<<6
		r[3*g+1] = v1>>2 | v2<<4
		r[3*g+2] = v2>>4 | v3<<2
	}
}

// hllDenseRaises reports whether adding elems to dense registers r would raise one.
func hllDenseRaises(r string, elems [][]byte) bool {
	for _, e := range elems {
		if i, n := hllPatLen(e); n > hllGet(r, i) {
			return true
		}
	}
	return false
}

// newHLL is an empty HLL: sparse, one XZERO for all the registers, a cached count of 0.
func newHLL() []byte {
	b := make([]byte, hllHdrSize, hllHdrSize+8)
	copy(b, "HYLL")
	b[4] = hllSparse
	for n := hllRegisters; n > 0; n -= min(n, hllXZeroMaxLen) {
		b = hllAppendZeros(b, min(n, hllXZeroMaxLen))
	}
	return b
}

// isHLL reports whether s is a string Redis takes for an HLL.
func isHLL(s string) bool {
	if len(s) < hllHdrSize || s[:4] != "HYLL" || s[4] > hllSparse {
		return false
	}
	return s[4] != hllDense || len(s) == hllDenseSize
}

// hllToDense converts sparse b into the dense form, keeping its header; it fails when the
// code does not cover exactly the 16384 registers.
func hllToDense(b []byte) ([]byte, bool) {
	if b[4] == hllDense {
		return b, true
	}
	d := make([]byte, hllDenseSize)
	copy(d, b[:hllHdrSize])
	d[4] = hllDense
	r := d[hllHdrSize:]
	return d, hllValRegisters(b, func(i, v int) { hllSet(r, i, v) })
}

// Sparse opcode kinds, as PFDEBUG DECODE names them.
const (
	hllRunZero  = 'z'
	hllRunXZero = 'Z'
	hllRunVal   = 'v'
)

// hllRuns walks the sparse code of HLL s, calling fn with each opcode's kind, the first
// register it covers, how many it covers and their value, until fn returns false. It
// returns the number of registers the code covers, which a valid code makes 16384.
func hllRuns[S ~string | ~[]byte](s S, fn func(kind byte, first, n, v int) bool) int {
	idx := 0
	for p := hllHdrSize; p < len(s); {
		kind, n, v := byte(hllRunVal), 0, 0
		switch op := s[p]; {
		case hllIsZero(op):
			kind, n = hllRunZero, hllZeroLen(op)
			p++
		case hllIsXZero(op):
			kind, n = hllRunXZero, hllXZeroLen(op, hllByte(s, p+1))
			p += 2
		default:
			n, v = hllValLen(op), hllValValue(op)
			p++
		}
		if !fn(kind, idx, n, v) {
			return idx
		}
		idx += n
	}
	return idx
}

// hllValRegisters calls fn for every register a VAL opcode of sparse HLL s sets, and
// reports whether the code is valid: it covers exactly the 16384 registers, and no VAL
// run goes past them (Redis stops at one that does).
func hllValRegisters[S ~string | ~[]byte](s S, fn func(i, v int)) bool {
	fits := true
	covered := hllRuns(s, func(kind byte, first, n, v int) bool {
		if kind == hllRunVal {
			if fits = first+n <= hllRegisters; !fits {
				return false
			}
			for i := first; i < first+n; i++ {
				fn(i, v)
			}
		}
		return true
	})
	return fits && covered == hllRegisters
}

// hllByte is b[i], or 0 past the end, where Redis reads its string's terminator (a
// truncated XZERO of a corrupt value).
func hllByte[S ~string | ~[]byte](b S, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return 0
}

// hllSparseSet raises register index of sparse b to count, as Redis's hllSparseSet does:
// it returns the HLL (perhaps now dense) and 1 if it changed, 0 if it did not need to, -1
// if b is corrupt.
func hllSparseSet(b []byte, index, count int) ([]byte, int) {
	if count > hllValMaxValue {
		return hllPromote(b, index, count)
	}
	// Step 1: find the opcode that covers the register.
	end := len(b)
	p, first, span, prev := hllHdrSize, 0, 0, -1
	for p < end {
		oplen := 1
		switch op := b[p]; {
		case hllIsZero(op):
			span = hllZeroLen(op)
		case hllIsVal(op):
			span = hllValLen(op)
		default:
			span = hllXZeroLen(op, hllByte(b, p+1))
			oplen = 2
		}
		if index <= first+span-1 {
			break
		}
		prev = p
		p += oplen
		first += span
	}
	if span == 0 || p >= end {
		return b, -1
	}
	op := b[p]
	isZero, isXZero, isVal := hllIsZero(op), hllIsXZero(op), hllIsVal(op)
	var runlen int
	switch {
	case isZero:
		runlen = hllZeroLen(op)
	case isXZero:
		runlen = hllXZeroLen(op, hllByte(b, p+1))
	default:
		runlen = hllValLen(op)
	}

	// Step 2: the cases that edit one byte in place.
	updated := false
	if isVal {
		if hllValValue(op) >= count {
			return b, 0
		}
		if runlen == 1 {
			b[p] = hllVal(count, 1)
			updated = true
		}
	}
	if !updated && isZero && runlen == 1 {
		b[p] = hllVal(count, 1)
		updated = true
	}
	if !updated {
		// The general case: split the run into up to three opcodes (at most five bytes).
		var seqBuf [5]byte
		seq := seqBuf[:0]
		last := first + span - 1
		if isZero || isXZero {
			if index != first {
				seq = hllAppendZeros(seq, index-first)
			}
			seq = append(seq, hllVal(count, 1))
			if index != last {
				seq = hllAppendZeros(seq, last-index)
			}
		} else {
			cur := hllValValue(op)
			if index != first {
				seq = append(seq, hllVal(cur, index-first))
			}
			seq = append(seq, hllVal(count, 1))
			if index != last {
				seq = append(seq, hllVal(cur, last-index))
			}
		}
		// Step 3: put the sequence in place of the opcode.
		oldlen := 1
		if isXZero {
			oldlen = 2
		}
		delta := len(seq) - oldlen
		if delta > 0 && len(b)+delta > hllSparseMaxBytes {
			return hllPromote(b, index, count)
		}
		nb := make([]byte, 0, len(b)+delta+8)
		nb = append(nb, b[:p]...)
		nb = append(nb, seq...)
		nb = append(nb, b[min(p+oldlen, len(b)):]...)
		b = nb
		end = len(b)
	}

	// Step 4: merge adjacent VAL opcodes of one value, scanning five opcodes from the one
	// before the change.
	p = hllHdrSize
	if prev >= 0 {
		p = prev
	}
	for scan := 5; p < end && scan > 0; {
		scan--
		op := b[p]
		if hllIsXZero(op) {
			p += 2
			continue
		}
		if hllIsZero(op) {
			p++
			continue
		}
		if p+1 < end && hllIsVal(b[p+1]) {
			v := hllValValue(op)
			if n := hllValLen(op) + hllValLen(b[p+1]); v == hllValValue(b[p+1]) && n <= hllValMaxLen {
				b[p+1] = hllVal(v, n)
				copy(b[p:], b[p+1:end])
				end--
				b = b[:end]
				continue
			}
		}
		p++
	}
	b[hllCardStaleByte] |= hllCardStaleBit
	return b, 1
}

// hllPromote is the end of hllSparseSet that turns the HLL dense first.
func hllPromote(b []byte, index, count int) ([]byte, int) {
	d, ok := hllToDense(b)
	if !ok {
		return b, -1
	}
	hllDenseSet(d[hllHdrSize:], index, count) // always a change: it did not fit sparse
	return d, 1
}

// hllAdd adds ele to HLL b: 1 if a register rose, 0 if not, -1 if b is corrupt.
func hllAdd(b []byte, ele []byte) ([]byte, int) {
	index, count := hllPatLen(ele)
	switch b[4] {
	case hllDense:
		if hllDenseSet(b[hllHdrSize:], index, count) {
			return b, 1
		}
		return b, 0
	case hllSparse:
		return hllSparseSet(b, index, count)
	}
	return b, -1
}

// hllMergeInto raises regs[i] to every register i of HLL s; false if s is corrupt.
func hllMergeInto(regs *[hllRegisters]uint8, s string) bool {
	if s[4] == hllDense {
		hllDecode(s[hllHdrSize:], regs, true)
		return true
	}
	return hllValRegisters(s, func(i, v int) { regs[i] = max(regs[i], uint8(v)) })
}

// hllHisto counts the registers of HLL s by value; false if a sparse s does not cover
// exactly the 16384 registers.
func hllHisto(s string, h *[64]int) bool {
	if s[4] == hllDense {
		var regs [hllRegisters]uint8
		hllDecode(s[hllHdrSize:], &regs, false)
		for _, v := range regs {
			h[v]++
		}
		return true
	}
	covered := hllRuns(s, func(_ byte, _, n, v int) bool {
		h[v] += n // a zero run's value is 0
		return true
	})
	return covered == hllRegisters
}

// hllEstimate is Redis's cardinality estimate from a register histogram: Otmar Ertl's
// improved estimator ("New cardinality estimation algorithms for HyperLogLog
// sketches", arXiv:1702.01284), evaluated operation for operation as Redis's C does, each
// product rounded on its own (the float64 conversions keep Go from fusing them).
func hllEstimate(h *[64]int) uint64 {
	const m = float64(hllRegisters)
	z := m * hllTau(float64(m-float64(h[hllQ+1]))/m)
	for j := hllQ; j >= 1; j-- {
		z += float64(h[j])
		z *= 0.5
	}
	z += float64(m * hllSigma(float64(h[0])/m))
	return uint64(math.Round(float64(float64(hllAlphaInf*m)*m) / z))
}

func hllSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x = float64(x * x)
		prev := z
		z += float64(x * y)
		y += y
		if z == prev {
			return z
		}
	}
}

func hllTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		prev := z
		y *= 0.5
		d := 1 - x
		z -= float64(float64(d*d) * y) // gcc turns Redis's pow(1-x, 2) into this product
		if z == prev {
			return z / 3
		}
	}
}

// hllCount is the cardinality of HLL s; false if s is corrupt.
func hllCount(s string) (uint64, bool) {
	var h [64]int
	if !hllHisto(s, &h) {
		return 0, false
	}
	return hllEstimate(&h), true
}

// lookupHLL returns the HLL at key, replying as Redis does when key holds something
// else: ok is false then. A missing key is (nil, false-exists, ok).
func (c *Ctx) lookupHLL(key []byte) (it item, exists, ok bool) {
	it, exists = c.lookup(key)
	if !exists {
		return it, false, true
	}
	if it.typ != TypeString {
		c.Error(ErrWrongType)
		return it, true, false
	}
	if !isHLL(it.str) {
		c.Error(errNotHLL)
		return it, true, false
	}
	return it, true, true
}

// storeHLL stores b at key with a fresh version, keeping a deadline: Redis changes an
// HLL in place.
func (c *Ctx) storeHLL(key []byte, b []byte) {
	c.setStringEnc(key, newString(b), strRaw, true)
}

// storeHLLQuietly stores b over old at key without a new version: Redis changes the value
// without signalling the key (PFDEBUG's conversions, a PFADD cut short by corruption),
// so a WATCH on it does not fire.
func (c *Ctx) storeHLLQuietly(key []byte, old item, b []byte) {
	old.str, old.enc = newString(b), strRaw
	c.putQuietly(key, old)
}

func pfaddCmd(c *Ctx, args [][]byte) {
	it, exists, ok := c.lookupHLL(args[1])
	if !ok {
		return
	}
	if exists && it.str[4] == hllDense && !hllDenseRaises(it.str[hllHdrSize:], args[2:]) {
		// The common case of a large set: nothing to copy, nothing changes.
		c.unshareItem(args[1], it)
		c.W.Int(0)
		return
	}
	var b []byte
	updated := 0
	if exists {
		b = []byte(it.str)
	} else {
		b = newHLL()
		updated++
	}
	for _, ele := range args[2:] {
		var r int
		b, r = hllAdd(b, ele)
		switch r {
		case 1:
			updated++
		case -1:
			c.Error(errCorruptHLL)
			if string(b) != it.str {
				c.storeHLLQuietly(args[1], it, b)
			}
			return
		}
	}
	if updated > 0 {
		b[hllCardStaleByte] |= hllCardStaleBit
		c.storeHLL(args[1], b)
		c.notify(notifyString, "pfadd", args[1])
		c.W.Int(1)
		return
	}
	c.unshareItem(args[1], it)
	c.W.Int(0)
}

func pfcountCmd(c *Ctx, args [][]byte) {
	if len(args) > 2 {
		var max [hllRegisters]uint8
		for _, key := range args[1:] {
			it, exists, ok := c.lookupHLL(key)
			if !ok {
				return
			}
			if exists && !hllMergeInto(&max, it.str) {
				c.Error(errCorruptHLL)
				return
			}
		}
		var h [64]int
		for _, v := range max {
			h[v]++
		}
		c.W.Int(int64(hllEstimate(&h)))
		return
	}
	it, exists, ok := c.lookupHLL(args[1])
	switch {
	case !ok:
		return
	case !exists:
		c.W.Int(0)
		return
	}
	if it.str[hllCardStaleByte]&hllCardStaleBit == 0 {
		var card uint64
		for i := hllHdrSize - 1; i >= 8; i-- {
			card = card<<8 | uint64(it.str[i])
		}
		c.W.Int(int64(card))
		return
	}
	card, valid := hllCount(it.str)
	if !valid {
		c.Error(errCorruptHLL)
		return
	}
	b := []byte(it.str)
	binary.LittleEndian.PutUint64(b[8:hllHdrSize], card)
	c.storeHLL(args[1], b)
	c.W.Int(int64(card))
}

func pfmergeCmd(c *Ctx, args [][]byte) {
	var max [hllRegisters]uint8
	dense := false
	for _, key := range args[1:] { // the destination is merged too
		it, exists, ok := c.lookupHLL(key)
		if !ok {
			return
		}
		if !exists {
			continue
		}
		dense = dense || it.str[4] == hllDense
		if !hllMergeInto(&max, it.str) {
			c.Error(errCorruptHLL)
			return
		}
	}
	var b []byte
	if it, exists := c.lookupWrite(args[1]); exists {
		b = []byte(it.str)
	} else {
		b = newHLL()
	}
	if dense {
		var ok bool
		if b, ok = hllToDense(b); !ok {
			c.Error(errCorruptHLL)
			return
		}
	}
	if b[4] == hllDense {
		// What Redis's register-by-register raise leaves: the destination was merged
		// into max too, so max is no lower anywhere.
		hllEncode(&max, b[hllHdrSize:])
	} else {
		for i, v := range max {
			switch {
			case v == 0:
			case b[4] == hllDense: // the sparse code outgrew its limit on the way
				hllDenseSet(b[hllHdrSize:], i, int(v))
			default:
				b, _ = hllSparseSet(b, i, int(v)) // Redis ignores a failure here too
			}
		}
	}
	b[hllCardStaleByte] |= hllCardStaleBit
	c.storeHLL(args[1], b)
	c.notify(notifyString, "pfadd", args[1])
	c.W.Status("OK")
}

func pfdebugCmd(c *Ctx, args [][]byte) {
	// The key is checked before the subcommand is read.
	it, exists, ok := c.lookupHLL(args[2])
	switch {
	case !ok:
		return
	case !exists:
		c.Error("ERR The specified key does not exist")
		return
	}
	c.unshareItem(args[2], it) // as Redis, whatever the subcommand: "raw" from here
	it.enc = strRaw
	sub := string(args[1])
	switch strings.ToLower(sub) {
	case "getreg":
		b := []byte(it.str)
		if b[4] == hllSparse {
			if b, ok = hllToDense(b); !ok {
				c.Error(errCorruptHLL)
				return
			}
			c.storeHLLQuietly(args[2], it, b)
		}
		var regs [hllRegisters]uint8
		hllDecode(b[hllHdrSize:], &regs, false)
		c.W.Array(hllRegisters)
		for _, v := range regs {
			c.W.Int(int64(v))
		}
	case "decode":
		if it.str[4] != hllSparse {
			c.Error("ERR HLL encoding is not sparse")
			return
		}
		var out []byte
		hllRuns(it.str, func(kind byte, _, n, v int) bool {
			out = append(out, kind, ':')
			if kind == hllRunVal {
				out = append(strconv.AppendInt(out, int64(v), 10), ',')
			}
			out = append(strconv.AppendInt(out, int64(n), 10), ' ')
			return true
		})
		c.W.Bulk([]byte(strings.Trim(string(out), " ")))
	case "encoding":
		if it.str[4] == hllDense {
			c.W.Status("dense")
		} else {
			c.W.Status("sparse")
		}
	case "todense":
		if it.str[4] != hllSparse {
			c.W.Int(0)
			return
		}
		b, ok := hllToDense([]byte(it.str))
		if !ok {
			c.Error(errCorruptHLL)
			return
		}
		c.storeHLLQuietly(args[2], it, b)
		c.W.Int(1)
	default:
		c.Error("ERR Unknown PFDEBUG subcommand '" + sub + "'")
	}
}
