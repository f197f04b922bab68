package kvstore

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
	"math"
	"slices"
	"strconv"
)

// Idempotent requests (Ongaro's dissertation §6.3, client sessions). A client that must
// retry a write whose outcome it does not know (a timeout, a failover, a lost connection)
// tags it with its own id and a sequence number it increases with each new write. The
// store remembers, per client, the last sequence number applied and the reply it got:
// a retry of that number is answered with the remembered reply and changes nothing, so an
// INCR retried across a leader change counts once. The table is part of the replicated
// state (snapshots, digest), bounded, and evicts deterministically: every replica
// forgets the same client at the same entry.
//
//	idem := client:bytes seq:uvarint command
const opIdem byte = 6

// maxIdemClients bounds the table; past it the client used longest ago is forgotten
// (its next retry is then applied as new, as without a session).
const maxIdemClients = 1 << 16

// ErrIdemStale is the reply to a request older than the client's last one.
const ErrIdemStale = "ERR IDEMPOTENT sequence number is older than this client's last request"

type idemClient struct {
	seq   uint64
	used  uint64 // the index of the entry that last used it, for eviction
	reply []byte // the recorded reply (recorder)
}

// AppendIdempotent appends a command run at most once for (client, seq).
func AppendIdempotent(dst []byte, client []byte, seq uint64, db int, args [][]byte) []byte {
	dst = append(dst, opIdem)
	dst = binary.AppendUvarint(dst, uint64(len(client)))
	dst = append(dst, client...)
	dst = binary.AppendUvarint(dst, seq)
	return appendArgs(dst, db, args)
}

func (s *Store) applyIdem(c *Ctx, d *decoder) {
	client := d.bytes()
	seq := d.uvarint(math.MaxUint64)
	db, args := d.command()
	if d.err != nil {
		return
	}
	if s.idem == nil {
		s.idem = map[string]*idemClient{}
	}
	cl := s.idem[string(client)]
	if cl != nil && seq <= cl.seq {
		cl.used = s.applied
		if seq < cl.seq {
			c.Error(ErrIdemStale)
			return
		}
		replay(cl.reply, c.W)
		return
	}
	rec := recorder{w: c.W}
	c.W, c.DB = &rec, db
	c.run(args, true)
	c.W = rec.w
	if cl == nil {
		if len(s.idem) >= maxIdemClients {
			s.evictIdem()
		}
		cl = &idemClient{}
		s.idem[string(client)] = cl
	}
	cl.seq, cl.used, cl.reply = seq, s.applied, rec.buf
}

// evictIdem forgets the client used longest ago (the smallest name among equals), the
// same one on every replica.
func (s *Store) evictIdem() {
	var victim string
	var oldest uint64 = math.MaxUint64
	for name, cl := range s.idem {
		if cl.used < oldest || cl.used == oldest && name < victim {
			victim, oldest = name, cl.used
		}
	}
	delete(s.idem, victim)
}

// appendIdemSnapshot appends the table in name order.
func (s *Store) appendIdemSnapshot(dst []byte) []byte {
	names := make([]string, 0, len(s.idem))
	for name := range s.idem {
		names = append(names, name)
	}
	slices.Sort(names)
	dst = binary.AppendUvarint(dst, uint64(len(names)))
	for _, name := range names {
		dst = appendIdemClient(dst, name, s.idem[name])
	}
	return dst
}

func appendIdemClient(dst []byte, name string, cl *idemClient) []byte {
	dst = appendBytes(dst, name)
	dst = binary.AppendUvarint(dst, cl.seq)
	dst = binary.AppendUvarint(dst, cl.used)
	return appendBytes(dst, string(cl.reply))
}

func (r *snapReader) idemTable() map[string]*idemClient {
	n := r.uvarint()
	if r.err != nil || n == 0 {
		return nil
	}
	if n > maxIdemClients {
		r.err = ErrBadSnapshot
		return nil
	}
	t := make(map[string]*idemClient, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		name := string(r.bytes())
		cl := &idemClient{seq: r.uvarint(), used: r.uvarint(), reply: r.bytes()}
		if r.err == nil && !validRecording(cl.reply) {
			r.err = ErrBadSnapshot
		}
		t[name] = cl
	}
	return t
}

func (s *Store) idemDigest() uint64 {
	var sum uint64
	var buf []byte
	for name, cl := range s.idem {
		buf = appendIdemClient(append(buf[:0], 'i'), name, cl)
		sum += xxhash.Sum64(buf)
	}
	return sum
}

// recorder passes a reply through to w and keeps a copy that replay renders again, for
// either protocol: what is recorded is the ReplyWriter calls, not bytes of RESP.
//
//	call := kind:byte [value]   ints as varints, strings and floats length-prefixed
type recorder struct {
	w   ReplyWriter
	buf []byte
}

const (
	recStatus byte = iota + 1
	recError
	recInt
	recBulk
	recNull
	recNullArray
	recArray
	recMap
	recSet
	recDouble
	recHumanDouble // HumanDoubler's
)

func (r *recorder) str(kind byte, s string) {
	r.buf = append(r.buf, kind)
	r.buf = binary.AppendUvarint(r.buf, uint64(len(s)))
	r.buf = append(r.buf, s...)
}

func (r *recorder) num(kind byte, n int64) {
	r.buf = append(r.buf, kind)
	r.buf = binary.AppendVarint(r.buf, n)
}

func (r *recorder) Status(s string)     { r.str(recStatus, s); r.w.Status(s) }
func (r *recorder) Error(msg string)    { r.str(recError, msg); r.w.Error(msg) }
func (r *recorder) Int(n int64)         { r.num(recInt, n); r.w.Int(n) }
func (r *recorder) Bulk(b []byte)       { r.str(recBulk, string(b)); r.w.Bulk(b) }
func (r *recorder) BulkString(s string) { r.str(recBulk, s); r.w.BulkString(s) }
func (r *recorder) Null()               { r.buf = append(r.buf, recNull); r.w.Null() }
func (r *recorder) NullArray()          { r.buf = append(r.buf, recNullArray); r.w.NullArray() }
func (r *recorder) Array(n int)         { r.num(recArray, int64(n)); r.w.Array(n) }
func (r *recorder) Map(n int)           { r.num(recMap, int64(n)); r.w.Map(n) }
func (r *recorder) Set(n int)           { r.num(recSet, int64(n)); r.w.Set(n) }
func (r *recorder) Resp3() bool         { return r.w.Resp3() }
func (r *recorder) Double(f float64) {
	r.str(recDouble, strconv.FormatFloat(f, 'g', -1, 64))
	r.w.Double(f)
}

func (r *recorder) HumanDouble(f float64) {
	r.str(recHumanDouble, strconv.FormatFloat(f, 'g', -1, 64))
	humanDouble(r.w, f)
}

// replay renders a recorded reply into w; a recording that does not decode (it was
// checked when restored) renders as far as it goes.
func replay(rec []byte, w ReplyWriter) {
	walkRecording(rec, w)
}

func validRecording(rec []byte) bool { return walkRecording(rec, nil) }

// walkRecording decodes rec, calling w (when not nil) for each call; it reports whether
// rec decoded whole.
func walkRecording(rec []byte, w ReplyWriter) bool {
	for len(rec) > 0 {
		kind := rec[0]
		rec = rec[1:]
		switch kind {
		case recStatus, recError, recBulk, recDouble, recHumanDouble:
			n, k := binary.Uvarint(rec)
			if k <= 0 || n > uint64(len(rec)-k) {
				return false
			}
			s := string(rec[k : k+int(n)])
			rec = rec[k+int(n):]
			if w == nil {
				if kind == recDouble || kind == recHumanDouble {
					if _, err := strconv.ParseFloat(s, 64); err != nil {
						return false
					}
				}
				continue
			}
			switch kind {
			case recStatus:
				w.Status(s)
			case recError:
				w.Error(s)
			case recBulk:
				w.BulkString(s)
			case recDouble:
				f, _ := strconv.ParseFloat(s, 64)
				w.Double(f)
			case recHumanDouble:
				f, _ := strconv.ParseFloat(s, 64)
				humanDouble(w, f)
			}
		case recInt, recArray, recMap, recSet:
			v, k := binary.Varint(rec)
			if k <= 0 || (kind != recInt && (v < 0 || v > maxArgs)) {
				return false
			}
			rec = rec[k:]
			if w == nil {
				continue
			}
			switch kind {
			case recInt:
				w.Int(v)
			case recArray:
				w.Array(int(v))
			case recMap:
				w.Map(int(v))
			case recSet:
				w.Set(int(v))
			}
		case recNull, recNullArray:
			if w == nil {
				continue
			}
			if kind == recNull {
				w.Null()
			} else {
				w.NullArray()
			}
		default:
			return false
		}
	}
	return true
}
