package zkproto

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/nanokv/nanokv/kvstore"
)

// DefaultMaxBuffer is jute.maxbuffer's default (BinaryInputArchive.maxBuffer, 0xfffff:
// 1 MiB − 1). ZooKeeper accepts a packet whose length prefix is at most this and closes
// the connection on a larger or negative one (NIOServerCnxn.readLength).
const DefaultMaxBuffer = 0xfffff

var (
	// ErrIncomplete: the buffer ends inside a frame; read more.
	ErrIncomplete = errors.New("zkproto: incomplete")
	// ErrTooLarge: a frame's length prefix is negative or above maxBuffer. ZooKeeper
	// closes the connection ("Len error").
	ErrTooLarge = errors.New("zkproto: frame length out of range")
	// ErrMalformed: a record inside a complete frame ends early, declares a length or count
	// that cannot fit in what remains, or has an invalid shape (ZooKeeper's IOException
	// while deserializing).
	ErrMalformed = errors.New("zkproto: malformed record")
	// ErrUnknownOp: a request header names an opcode ZooKeeper does not serve.
	ErrUnknownOp = errors.New("zkproto: unknown opcode")

	errShort  = fmt.Errorf("%w: record ends early", ErrMalformed)
	errLength = fmt.Errorf("%w: length or count out of range", ErrMalformed)
)

// ParseFrame cuts the first frame (a big-endian int32 length, then that many bytes) out of
// b. The payload points into b. n is the bytes the frame takes; with ErrIncomplete it is
// the whole frame's length once the 4-byte prefix is in (so the caller can size its
// buffer), 0 before. maxBuffer ≤ 0 means DefaultMaxBuffer.
//
// The server must look for a four-letter word ("ruok", "stat", ...) in the first 4 bytes
// of a connection before calling ParseFrame: read as a length, they are far above any
// maxBuffer and would give ErrTooLarge.
func ParseFrame(b []byte, maxBuffer int) (payload []byte, n int, err error) {
	if maxBuffer <= 0 {
		maxBuffer = DefaultMaxBuffer
	}
	if len(b) < 4 {
		return nil, 0, ErrIncomplete
	}
	size := int32(binary.BigEndian.Uint32(b))
	if size < 0 || int64(size) > int64(maxBuffer) {
		return nil, 0, ErrTooLarge
	}
	end := 4 + int(size)
	if len(b) < end {
		return nil, end, ErrIncomplete
	}
	return b[4:end:end], end, nil
}

// AppendFrame appends one frame to dst: it reserves the 4-byte length, lets build append
// the payload, then patches the length in. build must only append to the slice it is given.
func AppendFrame(dst []byte, build func([]byte) []byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = build(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// AppendInt32 appends a jute int.
func AppendInt32(dst []byte, v int32) []byte { return binary.BigEndian.AppendUint32(dst, uint32(v)) }

// AppendInt64 appends a jute long.
func AppendInt64(dst []byte, v int64) []byte { return binary.BigEndian.AppendUint64(dst, uint64(v)) }

// AppendBool appends a jute boolean: one byte, 0 or 1.
func AppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// AppendBuffer appends a jute buffer: an int32 length then the bytes; nil is length −1.
func AppendBuffer(dst []byte, b []byte) []byte {
	if b == nil {
		return AppendInt32(dst, -1)
	}
	dst = AppendInt32(dst, int32(len(b)))
	return append(dst, b...)
}

// AppendString appends a jute ustring: an int32 length then the UTF-8 bytes. Go has no nil
// string, so "" goes out as length 0 (Java's null, length −1, decodes to "").
func AppendString(dst []byte, s string) []byte {
	dst = AppendInt32(dst, int32(len(s)))
	return append(dst, s...)
}

// AppendStrings appends a jute vector<ustring>: an int32 count then the strings; nil is
// count −1 (an empty non-nil slice is count 0).
func AppendStrings(dst []byte, v []string) []byte {
	if v == nil {
		return AppendInt32(dst, -1)
	}
	dst = AppendInt32(dst, int32(len(v)))
	for _, s := range v {
		dst = AppendString(dst, s)
	}
	return dst
}

// AppendACL appends one ACL record: perms, then the Id (scheme, id).
func AppendACL(dst []byte, a kvstore.ZKACL) []byte {
	dst = AppendInt32(dst, a.Perms)
	dst = AppendString(dst, a.Scheme)
	return AppendString(dst, a.ID)
}

// AppendACLs appends a vector<ACL>; nil is count −1.
func AppendACLs(dst []byte, v []kvstore.ZKACL) []byte {
	if v == nil {
		return AppendInt32(dst, -1)
	}
	dst = AppendInt32(dst, int32(len(v)))
	for _, a := range v {
		dst = AppendACL(dst, a)
	}
	return dst
}

// AppendID appends an Id record (scheme, id).
func AppendID(dst []byte, id kvstore.ZKID) []byte {
	dst = AppendString(dst, id.Scheme)
	return AppendString(dst, id.ID)
}

// StatSize is the encoded size of a Stat: 6 longs and 5 ints.
const StatSize = 6*8 + 5*4

// AppendStat appends a Stat record, field by field in zookeeper.jute's order.
func AppendStat(dst []byte, s *kvstore.ZKStat) []byte {
	dst = AppendInt64(dst, s.Czxid)
	dst = AppendInt64(dst, s.Mzxid)
	dst = AppendInt64(dst, s.Ctime)
	dst = AppendInt64(dst, s.Mtime)
	dst = AppendInt32(dst, s.Version)
	dst = AppendInt32(dst, s.Cversion)
	dst = AppendInt32(dst, s.Aversion)
	dst = AppendInt64(dst, s.EphemeralOwner)
	dst = AppendInt32(dst, s.DataLength)
	dst = AppendInt32(dst, s.NumChildren)
	return AppendInt64(dst, s.Pzxid)
}

// A Decoder reads jute primitives from one payload. Its error is sticky: after the first
// failure every read returns a zero value and Err reports the failure, so a record's
// decoder reads all its fields and checks once. Nothing it returns points into the payload.
type Decoder struct {
	b   []byte
	off int
	err error
}

// NewDecoder returns a decoder over b.
func NewDecoder(b []byte) *Decoder { return &Decoder{b: b} }

// Err is the first failure, nil if none.
func (d *Decoder) Err() error { return d.err }

// Remaining is the number of bytes not read yet.
func (d *Decoder) Remaining() int { return len(d.b) - d.off }

func (d *Decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// take returns the next n bytes, or nil and a sticky error if fewer remain.
func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.b)-d.off {
		d.fail(errShort)
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

// Int32 reads a jute int.
func (d *Decoder) Int32() int32 {
	p := d.take(4)
	if p == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(p))
}

// Int64 reads a jute long.
func (d *Decoder) Int64() int64 {
	p := d.take(8)
	if p == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(p))
}

// Bool reads a jute boolean; like Java's DataInput.readBoolean, any non-zero byte is true.
func (d *Decoder) Bool() bool {
	p := d.take(1)
	return p != nil && p[0] != 0
}

// length reads a buffer or string length: −1 is null (ok false, no error); any other
// negative length, or one longer than what remains, is malformed (BinaryInputArchive's
// checkLength, made exact because the whole payload is in hand).
func (d *Decoder) length() (n int, ok bool) {
	v := d.Int32()
	if d.err != nil || v == -1 {
		return 0, false
	}
	if v < 0 || int(v) > len(d.b)-d.off {
		d.fail(errLength)
		return 0, false
	}
	return int(v), true
}

// Buffer reads a jute buffer, copied; length −1 gives nil, length 0 an empty non-nil slice.
func (d *Decoder) Buffer() []byte {
	n, ok := d.length()
	if !ok {
		return nil
	}
	out := make([]byte, n)
	copy(out, d.take(n))
	return out
}

// UString reads a jute ustring, copied; length −1 (Java's null) gives "".
// (It is not called String so that a Decoder is not a fmt.Stringer.)
func (d *Decoder) UString() string {
	n, ok := d.length()
	if !ok {
		return ""
	}
	return string(d.take(n))
}

// VectorLen reads a vector's count. −1 (null) gives isNil; any other negative count, or a
// count whose elements (each at least minElem bytes) cannot fit in what remains, is
// malformed. So a vector never allocates more than the payload can back.
func (d *Decoder) VectorLen(minElem int) (n int, isNil bool) {
	v := d.Int32()
	if d.err != nil {
		return 0, false
	}
	if v == -1 {
		return 0, true
	}
	if v < 0 || int64(v)*int64(minElem) > int64(len(d.b)-d.off) {
		d.fail(errLength)
		return 0, false
	}
	return int(v), false
}

// Strings reads a vector<ustring>: nil for count −1, non-nil (possibly empty) otherwise.
func (d *Decoder) Strings() []string {
	n, isNil := d.VectorLen(4)
	if isNil || d.err != nil {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.UString()
	}
	if d.err != nil {
		return nil
	}
	return out
}

// ACL reads one ACL record.
func (d *Decoder) ACL() kvstore.ZKACL {
	return kvstore.ZKACL{Perms: d.Int32(), Scheme: d.UString(), ID: d.UString()}
}

// ACLs reads a vector<ACL>: nil for count −1.
func (d *Decoder) ACLs() []kvstore.ZKACL {
	n, isNil := d.VectorLen(12)
	if isNil || d.err != nil {
		return nil
	}
	out := make([]kvstore.ZKACL, n)
	for i := range out {
		out[i] = d.ACL()
	}
	if d.err != nil {
		return nil
	}
	return out
}

// ID reads an Id record.
func (d *Decoder) ID() kvstore.ZKID {
	return kvstore.ZKID{Scheme: d.UString(), ID: d.UString()}
}

// Stat reads a Stat record.
func (d *Decoder) Stat() kvstore.ZKStat {
	if d.Remaining() < StatSize {
		d.fail(errShort)
		return kvstore.ZKStat{}
	}
	return kvstore.ZKStat{
		Czxid:          d.Int64(),
		Mzxid:          d.Int64(),
		Ctime:          d.Int64(),
		Mtime:          d.Int64(),
		Version:        d.Int32(),
		Cversion:       d.Int32(),
		Aversion:       d.Int32(),
		EphemeralOwner: d.Int64(),
		DataLength:     d.Int32(),
		NumChildren:    d.Int32(),
		Pzxid:          d.Int64(),
	}
}
