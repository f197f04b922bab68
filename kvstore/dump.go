package kvstore

import (
	"encoding/binary"
	"errors"
	"hash/crc64"
	"math"
	"strconv"
)

// DUMP and RESTORE in Redis 7.0's serialization: an RDB object, the RDB version (10)
// and a CRC-64 (Jones) of both. RESTORE takes what Redis 7.0 and earlier DUMP: strings
// (plain, integer-encoded, LZF-compressed), lists (quicklists of listpacks or ziplists,
// plain nodes, ziplists, linked lists), sets (intsets, plain), sorted sets (listpacks,
// ziplists, plain with binary or text scores), hashes (listpacks, ziplists, plain) and
// streams with their consumer groups (dump_stream.go). Module types are refused as "Bad
// data format". DUMP writes the plain encodings, which every Redis loads: a payload from
// nanokv restores into redis-server 7.0 and back. RESTORE is applied from the log, so
// every member parses the same bytes.

const rdbVersion = 10

// RDB object types.
const (
	rdbString          = 0
	rdbList            = 1
	rdbSet             = 2
	rdbZSet            = 3
	rdbHash            = 4
	rdbZSet2           = 5
	rdbListZiplist     = 10
	rdbSetIntset       = 11
	rdbZSetZiplist     = 12
	rdbHashZiplist     = 13
	rdbListQuicklist   = 14
	rdbHashListpack    = 16
	rdbZSetListpack    = 17
	rdbListQuicklist2  = 18
	quicklistNodePlain = 1
	quicklistNodePack  = 2
)

var crcJones = crc64.MakeTable(0x95ac9329ac4bc9b5)

// redisCRC64 is Redis's crc64(0, b): Jones's polynomial, reflected, with neither the
// initial nor the final inversion that hash/crc64 applies.
func redisCRC64(b []byte) uint64 { return ^crc64.Update(^uint64(0), crcJones, b) }

var (
	errDumpChecksum = errors.New("ERR DUMP payload version or checksum are wrong")
	errDumpFormat   = errors.New("ERR Bad data format")
)

func init() {
	register(
		&Spec{Name: "dump", Arity: 2, Flags: FlagReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "2.6.0", Summary: "Return a serialized version of the value stored at the specified key.", Run: dumpCmd},
		&Spec{Name: "restore", Arity: -4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "2.6.0", Summary: "Create a key using the provided serialized value, previously obtained using DUMP.", Run: restoreCmd},
	)
}

func dumpCmd(c *Ctx, args [][]byte) {
	it, ok := c.lookup(args[1])
	if !ok {
		c.W.Null()
		return
	}
	p, ok := dumpPayload(it)
	if !ok {
		c.Error("ERR DUMP of a " + it.typ.String() + " is not supported")
		return
	}
	c.W.Bulk(p)
}

// dumpPayload serializes it in the plain RDB encodings (a stream in its only one); false
// for a type Redis does not know.
func dumpPayload(it item) ([]byte, bool) {
	b, ok := rdbAppendObject(nil, it)
	if !ok {
		return nil, false
	}
	b = binary.LittleEndian.AppendUint16(b, rdbVersion)
	return binary.LittleEndian.AppendUint64(b, redisCRC64(b)), true
}

// rdbAppendObject appends it as an RDB object (its type, then its value), as DUMP
// holds it; false for a type Redis does not know.
func rdbAppendObject(b []byte, it item) ([]byte, bool) {
	t, ok := rdbType(it.typ)
	if !ok {
		return b, false
	}
	return rdbAppendValue(append(b, t), it), true
}

// rdbType is the RDB object type of the plain encoding of typ.
func rdbType(typ Type) (byte, bool) {
	switch typ {
	case TypeString:
		return rdbString, true
	case TypeList:
		return rdbList, true
	case TypeSet:
		return rdbSet, true
	case TypeZSet:
		return rdbZSet2, true
	case TypeHash:
		return rdbHash, true
	case TypeStream:
		return rdbStreamListpacks2, true
	}
	return 0, false
}

// rdbAppendValue appends it's value in the encoding rdbType names.
func rdbAppendValue(b []byte, it item) []byte {
	switch it.typ {
	case TypeString:
		b = rdbAppendString(b, it.str)
	case TypeList:
		l := it.coll.(*listColl)
		b = rdbAppendLen(b, uint64(l.Len()))
		for i := 0; i < l.Len(); i++ {
			b = rdbAppendString(b, l.at(i))
		}
	case TypeSet:
		s := it.coll.(*setColl)
		b = rdbAppendLen(b, uint64(s.Len()))
		for _, m := range s.members {
			b = rdbAppendString(b, m)
		}
	case TypeZSet:
		z := it.coll.(*zset)
		b = rdbAppendLen(b, uint64(z.Len()))
		for _, e := range z.entries() {
			b = rdbAppendString(b, e.member)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.score))
		}
	case TypeHash:
		h := it.coll.(*hashColl)
		b = rdbAppendLen(b, uint64(h.Len()))
		for _, e := range h.entries {
			b = rdbAppendString(rdbAppendString(b, e.field), e.value)
		}
	case TypeStream:
		b = appendStream(b, it.coll.(*stream))
	}
	return b
}

func rdbAppendLen(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, byte(n>>8)|0x40, byte(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0x80), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0x81), n)
}

func rdbAppendString(b []byte, s string) []byte {
	return append(rdbAppendLen(b, uint64(len(s))), s...)
}

// restoreCmd is RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds]
// [FREQ frequency], with Redis 7.0's checks in Redis's order. IDLETIME sets the key's
// access clock under an LRU policy, FREQ its counter under an LFU one (access.go);
// each is ignored under the other policies, as in Redis.
func restoreCmd(c *Ctx, args [][]byte) {
	var replace, absTTL, idle, freq bool
	var clockArg int64
	for j := 4; j < len(args); j++ {
		more := len(args) - j - 1
		switch {
		case eq(args[j], "replace"):
			replace = true
		case eq(args[j], "absttl"):
			absTTL = true
		case eq(args[j], "idletime") && more >= 1 && !freq:
			v, ok := c.parseIntArg(args[j+1])
			if !ok {
				return
			}
			if v < 0 {
				c.Error("ERR Invalid IDLETIME value, must be >= 0")
				return
			}
			idle, clockArg = true, v
			j++
		case eq(args[j], "freq") && more >= 1 && !idle:
			v, ok := c.parseIntArg(args[j+1])
			if !ok {
				return
			}
			if v < 0 || v > 255 {
				c.Error("ERR Invalid FREQ value, must be >= 0 and <= 255")
				return
			}
			freq, clockArg = true, v
			j++
		default:
			c.Error(ErrSyntax)
			return
		}
	}
	key := args[1]
	_, exists := c.lookup(key)
	if exists && !replace {
		c.Error("BUSYKEY Target key name already exists.")
		return
	}
	ttl, ok := c.parseIntArg(args[2])
	if !ok {
		return
	}
	if ttl < 0 {
		c.Error("ERR Invalid TTL value, must be >= 0")
		return
	}
	it, err := restorePayload(args[3])
	if err != nil {
		c.Error(err.Error())
		return
	}
	if ttl != 0 && !absTTL {
		ttl = min(ttl, math.MaxInt64-c.Now) + c.Now
	}
	if ttl != 0 && ttl <= c.Now {
		// already expired: nothing is created, and what REPLACE would replace goes
		if exists {
			c.del(key)
		}
		c.W.Status("OK")
		return
	}
	if exists {
		c.removeKey(c.db(key), key) // Redis deletes it and adds the key anew
	}
	c.store(key, it, false)
	if ttl != 0 {
		c.setExpire(key, ttl)
	}
	if idle || freq {
		setAccessClock(&c.db(key).keys, key, idle, clockArg)
	}
	c.notify(notifyGeneric, "restore", key)
	c.W.Status("OK")
}

// restorePayload checks a DUMP payload's version and checksum and decodes its object.
func restorePayload(p []byte) (item, error) {
	if len(p) < 10 {
		return item{}, errDumpChecksum
	}
	body, footer := p[:len(p)-10], p[len(p)-10:]
	if binary.LittleEndian.Uint16(footer) > rdbVersion ||
		binary.LittleEndian.Uint64(footer[2:]) != redisCRC64(p[:len(p)-8]) {
		return item{}, errDumpChecksum
	}
	r := rdbReader{b: body}
	it, ok := r.object()
	if !ok || r.bad {
		return item{}, errDumpFormat
	}
	return it, nil
}

// rdbReader decodes RDB objects; bad is sticky, and every read past the end sets it.
type rdbReader struct {
	b   []byte
	bad bool
}

func (r *rdbReader) next(n uint64) []byte {
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

// length reads an RDB length; special is set for the string encodings (then n is the
// encoding: 0-2 integers of 8, 16, 32 bits, 3 LZF).
func (r *rdbReader) length() (n uint64, special bool) {
	b := r.next(1)
	if b == nil {
		return 0, false
	}
	switch b[0] >> 6 {
	case 0:
		return uint64(b[0] & 0x3f), false
	case 1:
		lo := r.next(1)
		if lo == nil {
			return 0, false
		}
		return uint64(b[0]&0x3f)<<8 | uint64(lo[0]), false
	case 3:
		return uint64(b[0] & 0x3f), true
	}
	switch b[0] {
	case 0x80:
		if v := r.next(4); v != nil {
			return uint64(binary.BigEndian.Uint32(v)), false
		}
	case 0x81:
		if v := r.next(8); v != nil {
			return binary.BigEndian.Uint64(v), false
		}
	default:
		r.bad = true
	}
	return 0, false
}

// count reads a collection's length: a plain length, and never more than the bytes
// left could hold (a corrupt length must not allocate).
func (r *rdbReader) count() int {
	n, special := r.length()
	if special || n > uint64(len(r.b)) {
		r.bad = true
		return 0
	}
	return int(n)
}

func (r *rdbReader) str() string {
	n, special := r.length()
	if r.bad {
		return ""
	}
	if !special {
		return string(r.next(n))
	}
	switch n {
	case 0:
		if v := r.next(1); v != nil {
			return strconv.Itoa(int(int8(v[0])))
		}
	case 1:
		if v := r.next(2); v != nil {
			return strconv.Itoa(int(int16(binary.LittleEndian.Uint16(v))))
		}
	case 2:
		if v := r.next(4); v != nil {
			return strconv.Itoa(int(int32(binary.LittleEndian.Uint32(v))))
		}
	case 3:
		clen, s1 := r.length()
		ulen, s2 := r.length()
		// LZF expands at most 88 times (a 3-byte reference to 264 bytes): a longer
		// claimed length is corrupt, and must not be allocated
		if s1 || s2 || ulen > maxStringSize || ulen > 88*clen {
			r.bad = true
			return ""
		}
		out, ok := lzfDecompress(r.next(clen), int(ulen))
		if !ok {
			r.bad = true
		}
		return string(out)
	default:
		r.bad = true
	}
	return ""
}

// lzfDecompress expands LZF data (liblzf's format, which Redis uses) to exactly n bytes.
func lzfDecompress(in []byte, n int) ([]byte, bool) {
	out := make([]byte, 0, n)
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 { // a literal run of ctrl+1 bytes
			run := ctrl + 1
			if i+run > len(in) || len(out)+run > n {
				return nil, false
			}
			out = append(out, in[i:i+run]...)
			i += run
			continue
		}
		run := ctrl >> 5 // a back reference
		if run == 7 {
			if i >= len(in) {
				return nil, false
			}
			run += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, false
		}
		ref := len(out) - (ctrl&0x1f)<<8 - int(in[i]) - 1
		i++
		run += 2
		if ref < 0 || len(out)+run > n {
			return nil, false
		}
		for k := 0; k < run; k++ { // byte by byte: the reference may overlap the output
			out = append(out, out[ref+k])
		}
	}
	return out, len(out) == n
}

// object decodes one object, whose type byte comes first.
func (r *rdbReader) object() (item, bool) {
	t := r.next(1)
	if t == nil {
		return item{}, false
	}
	switch t[0] {
	case rdbString:
		return item{typ: TypeString, str: r.str()}, true
	case rdbList:
		n := r.count()
		l := &listColl{}
		for i := 0; i < n && !r.bad; i++ {
			l.pushBack(r.str())
		}
		return listItem(l)
	case rdbListZiplist:
		l := &listColl{}
		if !eachZiplist([]byte(r.str()), func(s string) { l.pushBack(s) }) {
			return item{}, false
		}
		return listItem(l)
	case rdbListQuicklist, rdbListQuicklist2:
		n := r.count()
		l := &listColl{}
		for i := 0; i < n && !r.bad; i++ {
			container := uint64(quicklistNodePack)
			if t[0] == rdbListQuicklist2 {
				container, _ = r.length()
			}
			blob := []byte(r.str())
			var ok bool
			switch {
			case r.bad:
			case container == quicklistNodePlain:
				l.pushBack(string(blob))
				ok = true
			case container != quicklistNodePack:
			case t[0] == rdbListQuicklist:
				ok = eachZiplist(blob, func(s string) { l.pushBack(s) })
			default:
				ok = eachListpack(blob, func(s string) { l.pushBack(s) })
			}
			if !ok {
				return item{}, false
			}
		}
		return listItem(l)
	case rdbSet:
		n := r.count()
		s := newSetColl(n)
		for i := 0; i < n && !r.bad; i++ {
			if !s.add(r.str()) {
				return item{}, false // a duplicate member: Redis refuses the payload
			}
		}
		return setItem(s)
	case rdbSetIntset:
		s := newSetColl(0)
		if !eachIntset([]byte(r.str()), func(m string) bool { return s.add(m) }) {
			return item{}, false
		}
		return setItem(s)
	case rdbZSet, rdbZSet2:
		n := r.count()
		z := newZSet(n)
		for i := 0; i < n && !r.bad; i++ {
			m := r.str()
			score, ok := r.score(t[0] == rdbZSet2)
			if !ok || !zsetAddNew(z, m, score) {
				return item{}, false
			}
		}
		return zsetItem(z)
	case rdbZSetZiplist, rdbZSetListpack:
		z := newZSet(0)
		if !eachPair(t[0] == rdbZSetListpack, []byte(r.str()), func(m, s string) bool {
			score, err := strconv.ParseFloat(s, 64)
			return err == nil && zsetAddNew(z, m, score)
		}) {
			return item{}, false
		}
		return zsetItem(z)
	case rdbHash:
		n := r.count()
		h := newHashColl(n)
		for i := 0; i < n && !r.bad; i++ {
			if !h.set(r.str(), r.str()) {
				return item{}, false
			}
		}
		return hashItem(h)
	case rdbHashZiplist, rdbHashListpack:
		h := newHashColl(0)
		if !eachPair(t[0] == rdbHashListpack, []byte(r.str()), func(f, v string) bool { return h.set(f, v) }) {
			return item{}, false
		}
		return hashItem(h)
	case rdbStreamListpacks, rdbStreamListpacks2:
		return r.streamObject(t[0] == rdbStreamListpacks2)
	}
	return item{}, false // modules, the zipmap of Redis 2.4
}

// score reads a sorted set's score: 8 bytes of a little-endian double (ZSET_2), or a
// length byte and the text (ZSET: 253 NaN, 254 +inf, 255 -inf).
func (r *rdbReader) score(binaryScore bool) (float64, bool) {
	if binaryScore {
		v := r.next(8)
		if v == nil {
			return 0, false
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(v))
		return f, !math.IsNaN(f)
	}
	n := r.next(1)
	if n == nil {
		return 0, false
	}
	switch n[0] {
	case 253:
		return 0, false
	case 254:
		return math.Inf(1), true
	case 255:
		return math.Inf(-1), true
	}
	f, err := strconv.ParseFloat(string(r.next(uint64(n[0]))), 64)
	return f, err == nil && !math.IsNaN(f)
}

// zsetAddNew adds a member that must not be there yet, with a score that is a number.
func zsetAddNew(z *zset, m string, score float64) bool {
	if _, dup := z.dict[m]; dup || math.IsNaN(score) {
		return false
	}
	z.insert(m, score)
	return true
}

// An empty collection is refused, as Redis refuses it.
func listItem(l *listColl) (item, bool) { return item{typ: TypeList, coll: l}, l.Len() > 0 }
func setItem(s *setColl) (item, bool)   { return item{typ: TypeSet, coll: s}, s.Len() > 0 }
func zsetItem(z *zset) (item, bool)     { return item{typ: TypeZSet, coll: z}, z.Len() > 0 }
func hashItem(h *hashColl) (item, bool) { return item{typ: TypeHash, coll: h}, h.Len() > 0 }

// eachPair calls fn with the elements of a listpack (or a ziplist) two at a time; false
// if the blob is malformed, holds an odd number of elements, or fn refuses a pair.
func eachPair(listpack bool, blob []byte, fn func(a, b string) bool) bool {
	var first string
	odd, ok := false, true
	each := func(s string) {
		if odd && ok {
			ok = fn(first, s)
		}
		first, odd = s, !odd
	}
	var valid bool
	if listpack {
		valid = eachListpack(blob, each)
	} else {
		valid = eachZiplist(blob, each)
	}
	return valid && ok && !odd
}

// eachListpack calls fn with every element of a listpack, integers as their decimal
// text; false if the listpack is malformed.
func eachListpack(lp []byte, fn func(string)) bool {
	if len(lp) < 7 || binary.LittleEndian.Uint32(lp) != uint32(len(lp)) || lp[len(lp)-1] != 0xff {
		return false
	}
	p := lp[6 : len(lp)-1]
	for len(p) > 0 {
		b := p[0]
		var size int // encoding and data, without the back length
		var v string
		switch {
		case b&0x80 == 0: // 7-bit unsigned
			size, v = 1, strconv.Itoa(int(b))
		case b&0xc0 == 0x80: // string, 6-bit length
			size = 1 + int(b&0x3f)
			if size > len(p) {
				return false
			}
			v = string(p[1:size])
		case b&0xe0 == 0xc0: // 13-bit signed
			if len(p) < 2 {
				return false
			}
			u := int(b&0x1f)<<8 | int(p[1])
			if u >= 1<<12 {
				u -= 1 << 13
			}
			size, v = 2, strconv.Itoa(u)
		case b&0xf0 == 0xe0: // string, 12-bit length
			if len(p) < 2 {
				return false
			}
			size = 2 + (int(b&0x0f)<<8 | int(p[1]))
			if size > len(p) {
				return false
			}
			v = string(p[2:size])
		case b == 0xf0: // string, 32-bit length
			if len(p) < 5 {
				return false
			}
			n := uint64(binary.LittleEndian.Uint32(p[1:]))
			if n > uint64(len(p)-5) {
				return false
			}
			size = 5 + int(n)
			v = string(p[5:size])
		case b >= 0xf1 && b <= 0xf4: // 16, 24, 32, 64-bit signed
			width := [...]int{2, 3, 4, 8}[b-0xf1]
			if len(p) < 1+width {
				return false
			}
			size, v = 1+width, leSigned(p[1:], width)
		default:
			return false
		}
		back := 5 // the back length's bytes, as lpEncodeBacklen counts them
		switch {
		case size <= 127:
			back = 1
		case size < 16383:
			back = 2
		case size < 2097151:
			back = 3
		case size < 268435455:
			back = 4
		}
		if size+back > len(p) {
			return false
		}
		fn(v)
		p = p[size+back:]
	}
	return true
}

// eachZiplist calls fn with every element of a ziplist (Redis before 7.0); false if it
// is malformed.
func eachZiplist(zl []byte, fn func(string)) bool {
	if len(zl) < 11 || binary.LittleEndian.Uint32(zl) != uint32(len(zl)) || zl[len(zl)-1] != 0xff {
		return false
	}
	p := zl[10 : len(zl)-1]
	for len(p) > 0 {
		if p[0] == 0xfe { // the previous entry's length: one byte, or 0xfe and four
			if len(p) < 5 {
				return false
			}
			p = p[5:]
		} else {
			p = p[1:]
		}
		if len(p) == 0 {
			return false
		}
		b := p[0]
		var n, hdr int
		var v string
		switch {
		case b>>6 == 0:
			hdr, n = 1, int(b&0x3f)
		case b>>6 == 1:
			if len(p) < 2 {
				return false
			}
			hdr, n = 2, int(b&0x3f)<<8|int(p[1])
		case b == 0x80:
			if len(p) < 5 {
				return false
			}
			hdr, n = 5, int(binary.BigEndian.Uint32(p[1:]))
		}
		if hdr > 0 {
			if n > len(p)-hdr {
				return false
			}
			fn(string(p[hdr : hdr+n]))
			p = p[hdr+n:]
			continue
		}
		width := 0
		switch b {
		case 0xc0:
			width = 2
		case 0xd0:
			width = 4
		case 0xe0:
			width = 8
		case 0xf0:
			width = 3
		case 0xfe:
			width = 1
		default:
			if b < 0xf1 || b > 0xfd {
				return false
			}
			v = strconv.Itoa(int(b&0x0f) - 1) // 0 to 12, in the encoding byte
		}
		if width > 0 {
			if len(p) < 1+width {
				return false
			}
			v = leSigned(p[1:], width)
		}
		fn(v)
		p = p[1+width:]
	}
	return true
}

// leSigned is the little-endian two's complement integer of width bytes at p, in decimal
// (listpacks and ziplists store integers of 1 to 8 bytes so).
func leSigned(p []byte, width int) string {
	var u uint64
	for k := width - 1; k >= 0; k-- {
		u = u<<8 | uint64(p[k])
	}
	shift := 64 - 8*width
	return strconv.FormatInt(int64(u<<shift)>>shift, 10)
}

// eachIntset calls fn with every member of an intset, as decimal text; false if it is
// malformed or fn refuses a member.
func eachIntset(is []byte, fn func(string) bool) bool {
	if len(is) < 8 {
		return false
	}
	width := int(binary.LittleEndian.Uint32(is))
	n := uint64(binary.LittleEndian.Uint32(is[4:]))
	if (width != 2 && width != 4 && width != 8) || uint64(len(is)-8) != n*uint64(width) {
		return false
	}
	for p := is[8:]; len(p) > 0; p = p[width:] {
		var v int64
		switch width {
		case 2:
			v = int64(int16(binary.LittleEndian.Uint16(p)))
		case 4:
			v = int64(int32(binary.LittleEndian.Uint32(p)))
		default:
			v = int64(binary.LittleEndian.Uint64(p))
		}
		if !fn(strconv.FormatInt(v, 10)) {
			return false
		}
	}
	return n > 0
}
