package kvstore

import (
	"encoding/binary"
	"math"
	"math/bits"
	"unsafe"
)

// Bitmaps: Redis's bit commands over string values. Bit 0 is the most significant bit of
// the first byte; a string reads as zero bits past its end. Replies, and the order in
// which arguments are checked (which decides the error a client sees when several are
// wrong), follow redis-server 7.0.15, which the differential test compares them with.
//
// A string here is immutable: readers, snapshots and the table share it. So a write
// builds the new string, and a SETBIT costs O(length of the string) where Redis's costs
// O(1): a bitmap of a million bits copies 128 KiB per SETBIT.

func init() {
	register(
		&Spec{Name: "setbit", Arity: 4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "2.2.0", Summary: "Sets or clears the bit at offset in the string value stored at key", Run: setbitCmd},
		&Spec{Name: "getbit", Arity: 3, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "2.2.0", Summary: "Returns the bit value at offset in the string value stored at key", Run: getbitCmd},
		&Spec{Name: "bitcount", Arity: -2, Flags: FlagReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "2.6.0", Summary: "Count set bits in a string", Run: bitcountCmd},
		&Spec{Name: "bitpos", Arity: -3, Flags: FlagReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "2.8.7", Summary: "Find first bit set or clear in a string", Run: bitposCmd},
		&Spec{Name: "bitop", Arity: -4, Flags: FlagWrite | FlagDenyOOM | FlagReadLookups, FirstKey: 2, LastKey: -1, Step: 1, Group: "bitmap", Since: "2.6.0", Summary: "Perform bitwise operations between strings", Run: bitopCmd},
		&Spec{Name: "bitfield", Arity: -2, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "3.2.0", Summary: "Perform arbitrary bitfield integer operations on strings", Run: func(c *Ctx, args [][]byte) { c.bitfield(args, false) }},
		&Spec{Name: "bitfield_ro", Arity: -2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "6.0.0", Summary: "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD", Run: func(c *Ctx, args [][]byte) { c.bitfield(args, true) }},
	)
}

const (
	errBitOffset    = "ERR bit offset is not an integer or out of range"
	errBitValue     = "ERR bit is not an integer or out of range"
	errBitArg       = "ERR The bit argument must be 1 or 0."
	errBitopNot     = "ERR BITOP NOT must be called with a single source key."
	errBitfieldType = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
	errOverflowType = "ERR Invalid OVERFLOW type specified"
	errBitfieldRO   = "ERR BITFIELD_RO only supports the GET subcommand"
)

// bitAt is the bit at off (0 past the end).
func bitAt[S ~string | ~[]byte](s S, off uint64) uint64 {
	i := off >> 3
	if i >= uint64(len(s)) {
		return 0
	}
	return uint64(s[i]>>(7-off&7)) & 1
}

// bitsAt reads width bits from off, the first one the most significant.
func bitsAt[S ~string | ~[]byte](s S, off uint64, width int) uint64 {
	var v uint64
	for i := range uint64(width) {
		v = v<<1 | bitAt(s, off+i)
	}
	return v
}

// setBits writes the low width bits of v at off, which b is long enough to hold.
func setBits(b []byte, off uint64, width int, v uint64) {
	for i := range width {
		p := off + uint64(i)
		shift := 7 - p&7
		bit := byte(v>>(width-1-i)) & 1
		b[p>>3] = b[p>>3]&^(1<<shift) | bit<<shift
	}
}

// newString is b as a string, without a copy: b must not be touched again.
func newString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// bitOffset parses a bit offset as Redis does: a non-negative integer whose byte fits in
// a string of proto-max-bulk-len. With hash (BITFIELD), "#n" stands for n*width.
func (c *Ctx) bitOffset(b []byte, hash bool, width int) (uint64, bool) {
	byWidth := hash && width > 0 && len(b) > 0 && b[0] == '#'
	if byWidth {
		b = b[1:]
	}
	v, ok := ParseInt(b)
	if byWidth {
		v *= int64(width) // wraps as C's does; a wrapped offset fails the range check below
	}
	if !ok || v < 0 || v>>3 >= maxStringSize {
		c.Error(errBitOffset)
		return 0, false
	}
	return uint64(v), true
}

// bitUnit parses the BYTE|BIT option of BITCOUNT and BITPOS.
func (c *Ctx) bitUnit(b []byte) (isBit, ok bool) {
	switch {
	case eq(b, "bit"):
		return true, true
	case eq(b, "byte"):
		return false, true
	}
	c.Error(ErrSyntax)
	return false, false
}

// bitRange turns a start..end range over a string of n bytes, in bytes or in bits,
// negative indexes counting from the end, into the inclusive range of bits it covers,
// clamped to the string. ok is false for an empty range.
func bitRange(start, end, n int64, isBit bool) (lo, hi int64, ok bool) {
	total := n
	if isBit {
		total *= 8
	}
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start, end = max(start, 0), max(end, 0)
	end = min(end, total-1)
	if start > end {
		return 0, 0, false
	}
	if isBit {
		return start, end, true
	}
	return start * 8, end*8 + 7, true
}

// byteMask keeps the bits from..to (0 the most significant) of a byte.
func byteMask(from, to int64) byte { return byte(0xff) >> from & (byte(0xff) << (7 - to)) }

// countBits counts the set bits of s in lo..hi (an inclusive range of bits in s).
func countBits(s string, lo, hi int64) int64 {
	first, last := lo>>3, hi>>3
	if first == last {
		return int64(bits.OnesCount8(s[first] & byteMask(lo&7, hi&7)))
	}
	n := bits.OnesCount8(s[first]&byteMask(lo&7, 7)) + bits.OnesCount8(s[last]&byteMask(0, hi&7))
	mid := s[first+1 : last]
	for len(mid) >= 8 {
		n += bits.OnesCount64(binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(mid), 8)))
		mid = mid[8:]
	}
	for i := 0; i < len(mid); i++ {
		n += bits.OnesCount8(mid[i])
	}
	return int64(n)
}

// findBit returns the first bit of s in lo..hi that equals bit, or -1.
func findBit(s string, lo, hi int64, bit byte) int64 {
	flip := byte(0)
	if bit == 0 {
		flip = 0xff // look for a set bit in the complement
	}
	for i := lo >> 3; i <= hi>>3; i++ {
		from, to := int64(0), int64(7)
		if i == lo>>3 {
			from = lo & 7
		}
		if i == hi>>3 {
			to = hi & 7
		}
		if b := (s[i] ^ flip) & byteMask(from, to); b != 0 {
			return i*8 + int64(bits.LeadingZeros8(b))
		}
	}
	return -1
}

func getbitCmd(c *Ctx, args [][]byte) {
	off, ok := c.bitOffset(args[2], false, 0)
	if !ok {
		return
	}
	if s, _, wrong := c.getString(args[1]); !wrong {
		c.W.Int(int64(bitAt(s, off)))
	}
}

func setbitCmd(c *Ctx, args [][]byte) {
	off, ok := c.bitOffset(args[2], false, 0)
	if !ok {
		return
	}
	on, ok := ParseInt(args[3])
	if !ok || on&^1 != 0 {
		c.Error(errBitValue)
		return
	}
	s, exists, wrong := c.getString(args[1])
	if wrong {
		return
	}
	old := bitAt(s, off)
	c.W.Int(int64(old))
	if exists && off>>3 < uint64(len(s)) && old == uint64(on) {
		c.unshare(args[1]) // Redis leaves an unchanged key alone: a WATCH on it holds
		return
	}
	b := make([]byte, max(uint64(len(s)), off>>3+1))
	copy(b, s)
	setBits(b, off, 1, uint64(on))
	c.setStringEnc(args[1], newString(b), strRaw, exists)
	c.notify(notifyString, "setbit", args[1])
}

func bitcountCmd(c *Ctx, args [][]byte) {
	// Redis 7.0 looks the key up before it reads the range: a missing key counts 0
	// whatever the other arguments are.
	s, exists, wrong := c.getString(args[1])
	if wrong {
		return
	}
	if !exists {
		c.W.Int(0)
		return
	}
	lo, hi := int64(0), int64(len(s))*8-1
	switch len(args) {
	case 2:
	case 4, 5:
		start, end, ok := c.parseIntArgs(args[2], args[3])
		if !ok {
			return
		}
		if start < 0 && end < 0 && start > end {
			c.W.Int(0) // before the unit is even read, as Redis does
			return
		}
		isBit := false
		if len(args) == 5 {
			if isBit, ok = c.bitUnit(args[4]); !ok {
				return
			}
		}
		if lo, hi, ok = bitRange(start, end, int64(len(s)), isBit); !ok {
			c.W.Int(0)
			return
		}
	default:
		c.Error(ErrSyntax)
		return
	}
	if lo > hi {
		c.W.Int(0) // an empty string
		return
	}
	c.W.Int(countBits(s, lo, hi))
}

func bitposCmd(c *Ctx, args [][]byte) {
	bit, ok := c.parseIntArg(args[2])
	if !ok {
		return
	}
	if bit != 0 && bit != 1 {
		c.Error(errBitArg)
		return
	}
	s, exists, wrong := c.getString(args[1])
	if wrong {
		return
	}
	if !exists {
		// a missing key is an endless run of zeros
		c.W.Int(-bit)
		return
	}
	lo, hi := int64(0), int64(len(s))*8-1
	endGiven := false
	switch len(args) {
	case 3:
	case 4, 5, 6:
		start, ok := c.parseIntArg(args[3])
		if !ok {
			return
		}
		isBit := false
		if len(args) == 6 {
			if isBit, ok = c.bitUnit(args[5]); !ok {
				return
			}
		}
		end := int64(len(s)) - 1
		if len(args) >= 5 {
			if end, ok = c.parseIntArg(args[4]); !ok {
				return
			}
			endGiven = true
		}
		if lo, hi, ok = bitRange(start, end, int64(len(s)), isBit); !ok {
			c.W.Int(-1)
			return
		}
	default:
		c.Error(ErrSyntax)
		return
	}
	if lo > hi {
		c.W.Int(-1) // an empty string holds neither a 0 nor a 1
		return
	}
	p := findBit(s, lo, hi, byte(bit))
	if p < 0 && bit == 0 && !endGiven {
		// Without an end the string is taken as padded with zeros: the first clear bit
		// is the first one past it.
		p = hi + 1
	}
	c.W.Int(p)
}

func bitopCmd(c *Ctx, args [][]byte) {
	op := args[1]
	not := eq(op, "not")
	if !not && !eq(op, "and") && !eq(op, "or") && !eq(op, "xor") {
		c.Error(ErrSyntax)
		return
	}
	if not && len(args) != 4 {
		c.Error(errBitopNot)
		return
	}
	srcs := make([]string, len(args)-3)
	n := 0
	for i, k := range args[3:] {
		s, _, wrong := c.getString(k)
		if wrong {
			return
		}
		srcs[i] = s
		n = max(n, len(s))
	}
	if n == 0 {
		c.del(args[2]) // whatever was there, of any type
		c.W.Int(0)
		return
	}
	out := make([]byte, n)
	copy(out, srcs[0])
	switch {
	case not:
		for i := range out {
			out[i] = ^out[i]
		}
	case eq(op, "and"):
		for _, s := range srcs[1:] {
			for i := range out {
				if i < len(s) {
					out[i] &= s[i]
				} else {
					out[i] = 0
				}
			}
		}
	case eq(op, "or"):
		for _, s := range srcs[1:] {
			for i := 0; i < len(s); i++ {
				out[i] |= s[i]
			}
		}
	default: // xor
		for _, s := range srcs[1:] {
			for i := 0; i < len(s); i++ {
				out[i] ^= s[i]
			}
		}
	}
	c.setStringEnc(args[2], newString(out), strRaw, false) // a new value: any TTL goes, as SET's
	c.notify(notifyString, "set", args[2])
	c.W.Int(int64(n))
}

// bitfieldOp is one GET, SET or INCRBY of a BITFIELD call.
type bitfieldOp struct {
	op       byte // 'g', 's' or 'i'
	overflow byte // 'w'rap, 's'at or 'f'ail, in force when the op was read
	signed   bool
	width    int
	off      uint64
	arg      int64 // SET's value, INCRBY's increment
}

// bitfieldType parses i<1..64> or u<1..63>.
func (c *Ctx) bitfieldType(b []byte) (signed bool, width int, ok bool) {
	if len(b) > 0 && (b[0] == 'i' || b[0] == 'u') {
		signed = b[0] == 'i'
		n, ok := ParseInt(b[1:])
		if ok && n >= 1 && (signed && n <= 64 || !signed && n <= 63) {
			return signed, int(n), true
		}
	}
	c.Error(errBitfieldType)
	return false, 0, false
}

func (c *Ctx) bitfield(args [][]byte, readOnly bool) {
	var ops []bitfieldOp
	overflow := byte('w')
	writes := false
	var highest uint64 // the last bit a SET or INCRBY reaches
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		var op byte
		switch {
		case eq(args[j], "get") && left >= 2:
			op = 'g'
		case eq(args[j], "set") && left >= 3:
			op = 's'
		case eq(args[j], "incrby") && left >= 3:
			op = 'i'
		case eq(args[j], "overflow") && left >= 1:
			j++
			switch {
			case eq(args[j], "wrap"):
				overflow = 'w'
			case eq(args[j], "sat"):
				overflow = 's'
			case eq(args[j], "fail"):
				overflow = 'f'
			default:
				c.Error(errOverflowType)
				return
			}
			continue
		default:
			c.Error(ErrSyntax)
			return
		}
		signed, width, ok := c.bitfieldType(args[j+1])
		if !ok {
			return
		}
		off, ok := c.bitOffset(args[j+2], true, width)
		if !ok {
			return
		}
		o := bitfieldOp{op: op, overflow: overflow, signed: signed, width: width, off: off}
		if op == 'g' {
			j += 2
		} else {
			writes = true
			highest = max(highest, off+uint64(width)-1)
			if o.arg, ok = c.parseIntArg(args[j+3]); !ok {
				return
			}
			j += 3
		}
		ops = append(ops, o)
	}
	if !writes {
		// only GETs: Redis looks the key up as a read, and a miss publishes keymiss
		outer := c.readCmd
		c.readCmd = true
		s, _, wrong := c.getString(args[1])
		c.readCmd = outer
		if wrong {
			return
		}
		c.W.Array(len(ops))
		for _, o := range ops {
			c.W.Int(bitfieldGet(s, o))
		}
		return
	}
	if readOnly {
		c.Error(errBitfieldRO)
		return
	}
	s, exists, wrong := c.getString(args[1])
	if wrong {
		return
	}
	// Redis makes room for the farthest bit before it runs the ops: a key is created, or
	// grows, even when OVERFLOW FAIL refuses every write. It counts as changed (for
	// WATCH) only when its bytes did.
	b := make([]byte, max(uint64(len(s)), highest>>3+1))
	copy(b, s)
	c.W.Array(len(ops))
	// Redis's "setbit" event follows a write that was not refused and either found the
	// key created or grown for the call, or changed its bits.
	grown := !exists || len(b) > len(s)
	changed := false
	for _, o := range ops {
		if o.op == 'g' {
			c.W.Int(bitfieldGet(b, o))
			continue
		}
		reply, v, ok := bitfieldWrite(b, o)
		if !ok {
			c.W.Null() // OVERFLOW FAIL: nothing written
			continue
		}
		c.W.Int(reply)
		changed = changed || grown || bitsAt(b, o.off, o.width) != v&(^uint64(0)>>(64-o.width))
		setBits(b, o.off, o.width, v)
	}
	if !exists || newString(b) != s {
		c.setStringEnc(args[1], newString(b), strRaw, exists)
	} else {
		c.unshare(args[1])
	}
	if changed {
		c.notify(notifyString, "setbit", args[1])
	}
}

func bitfieldGet[S ~string | ~[]byte](s S, o bitfieldOp) int64 {
	v := bitsAt(s, o.off, o.width)
	if o.signed {
		return signExtend(v, o.width)
	}
	return int64(v)
}

// signExtend reads the low width bits of v as a two's complement number.
func signExtend(v uint64, width int) int64 {
	if width < 64 {
		v &= 1<<width - 1
		if v&(1<<(width-1)) != 0 {
			v |= math.MaxUint64 << width
		}
	}
	return int64(v)
}

// bitfieldWrite works out a SET or INCRBY: the reply (SET's old value, INCRBY's new
// one) and the bits to write, or ok false when OVERFLOW FAIL refuses the write.
func bitfieldWrite(b []byte, o bitfieldOp) (reply int64, v uint64, ok bool) {
	old := bitsAt(b, o.off, o.width)
	if o.signed {
		oldv := signExtend(old, o.width)
		val, incr := o.arg, int64(0) // SET: the value alone must fit
		if o.op == 'i' {
			val, incr = oldv, o.arg
		}
		limit, over := signedOverflow(val, incr, o.width, o.overflow)
		if over && o.overflow == 'f' {
			return 0, 0, false
		}
		nv := val + incr
		if over {
			nv = limit
		}
		if o.op == 'i' {
			return nv, uint64(nv), true
		}
		return oldv, uint64(nv), true
	}
	val, incr := uint64(o.arg), int64(0)
	if o.op == 'i' {
		val, incr = old, o.arg
	}
	limit, over := unsignedOverflow(val, incr, o.width, o.overflow)
	if over && o.overflow == 'f' {
		return 0, 0, false
	}
	nv := val + uint64(incr)
	if over {
		nv = limit
	}
	if o.op == 'i' {
		return int64(nv), nv, true
	}
	return int64(old), nv, true
}

// unsignedOverflow reports whether value+incr leaves a u<width> field, and then the
// value the overflow policy makes of it (wrapped, or saturated at 0 or the maximum).
// width is at most 63. The arithmetic is Redis's checkUnsignedBitfieldOverflow's.
func unsignedOverflow(value uint64, incr int64, width int, policy byte) (limit uint64, over bool) {
	maxv := uint64(1)<<width - 1
	maxIncr := int64(maxv - value)
	minIncr := -int64(value)
	switch {
	case value > maxv || incr > 0 && incr > maxIncr:
		limit = maxv
	case incr < 0 && incr < minIncr:
		limit = 0
	default:
		return 0, false
	}
	if policy == 'w' {
		limit = (value + uint64(incr)) & maxv
	}
	return limit, true
}

// signedOverflow is unsignedOverflow for an i<width> field, width up to 64, with the
// arithmetic of Redis's checkSignedBitfieldOverflow: wrapping keeps the low width bits,
// sign-extended.
func signedOverflow(value, incr int64, width int, policy byte) (limit int64, over bool) {
	maxv := int64(math.MaxInt64)
	if width < 64 {
		maxv = 1<<(width-1) - 1
	}
	minv := -maxv - 1
	maxIncr := int64(uint64(maxv) - uint64(value))
	minIncr := minv - value
	switch {
	case value > maxv || width != 64 && incr > maxIncr || value >= 0 && incr > 0 && incr > maxIncr:
		limit = maxv
	case value < minv || width != 64 && incr < minIncr || value < 0 && incr < 0 && incr < minIncr:
		limit = minv
	default:
		return 0, false
	}
	if policy == 'w' {
		limit = signExtend(uint64(value)+uint64(incr), width)
	}
	return limit, true
}
