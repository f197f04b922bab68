package kvstore

import (
	"encoding/binary"
	"math"
	"strconv"
)

// Streams in DUMP and RESTORE: Redis 7.0's RDB_TYPE_STREAM_LISTPACKS_2, and the
// RDB_TYPE_STREAM_LISTPACKS of Redis 5 and 6 (without first ID, max deleted ID, entries
// added and entries read, which RESTORE then derives or leaves unknown as Redis does).
//
// The entries travel in listpacks, each headed by a master entry (count, deleted count,
// the master fields, a 0) and keyed by its master ID; an entry is its flags, its ID as a
// difference from the master's, its values (when its fields are the master's) or its
// fields and values, and its element count. DUMP writes one listpack per entry.

const (
	rdbStreamListpacks  = 15
	rdbStreamListpacks2 = 19

	streamItemDeleted    = 1
	streamItemSameFields = 2
)

// appendStream writes s as RDB_TYPE_STREAM_LISTPACKS_2 (the type byte is the caller's).
func appendStream(b []byte, s *stream) []byte {
	b = rdbAppendLen(b, uint64(s.Len()))
	s.entries.Scan(func(e streamEntry) bool {
		b = rdbAppendString(b, string(streamIDKey(e.id)))
		nf := len(e.fields) / 2
		lp := []byte{0, 0, 0, 0, 0, 0} // total bytes and count, set below
		lp = lpAppendInt(lp, 1)        // count
		lp = lpAppendInt(lp, 0)        // deleted
		lp = lpAppendInt(lp, int64(nf))
		for i := 0; i < len(e.fields); i += 2 {
			lp = lpAppendString(lp, e.fields[i])
		}
		lp = lpAppendInt(lp, 0) // the master entry's end
		lp = lpAppendInt(lp, streamItemSameFields)
		lp = lpAppendInt(lp, 0) // ms and seq differences from the master ID
		lp = lpAppendInt(lp, 0)
		for i := 1; i < len(e.fields); i += 2 {
			lp = lpAppendString(lp, e.fields[i])
		}
		lp = lpAppendInt(lp, int64(nf+3))
		lp = append(lp, 0xff)
		binary.LittleEndian.PutUint32(lp, uint32(len(lp)))
		binary.LittleEndian.PutUint16(lp[4:], uint16(min(4+nf+nf+4, math.MaxUint16)))
		b = rdbAppendString(b, string(lp))
		return true
	})
	b = rdbAppendLen(b, uint64(s.Len()))
	for _, id := range []streamID{s.last, s.first, s.maxDeleted} {
		b = rdbAppendLen(rdbAppendLen(b, id.ms), id.seq)
	}
	b = rdbAppendLen(b, s.added)
	names := s.groupNames()
	b = rdbAppendLen(b, uint64(len(names)))
	for _, name := range names {
		g := s.groups[name]
		b = rdbAppendString(b, g.name)
		b = rdbAppendLen(rdbAppendLen(b, g.last.ms), g.last.seq)
		b = rdbAppendLen(b, uint64(g.entriesRead))
		b = rdbAppendLen(b, uint64(g.pel.Len()))
		g.pel.Scan(func(p pelEntry) bool {
			b = append(b, streamIDKey(p.id)...)
			b = binary.LittleEndian.AppendUint64(b, uint64(p.n.time))
			b = rdbAppendLen(b, p.n.count)
			return true
		})
		cnames := g.consumerNames()
		b = rdbAppendLen(b, uint64(len(cnames)))
		for _, cn := range cnames {
			c := g.consumers[cn]
			b = rdbAppendString(b, c.name)
			b = binary.LittleEndian.AppendUint64(b, uint64(c.seen))
			b = rdbAppendLen(b, uint64(c.pel.Len()))
			c.pel.Scan(func(p pelEntry) bool {
				b = append(b, streamIDKey(p.id)...)
				return true
			})
		}
	}
	return b
}

// streamIDKey is an ID as Redis keys its radix trees: ms and seq, big-endian.
func streamIDKey(id streamID) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, id.ms), id.seq)
}

func lpAppendInt(lp []byte, v int64) []byte {
	if v >= 0 && v <= 127 {
		return lpAppendBacklen(append(lp, byte(v)), 1)
	}
	lp = binary.LittleEndian.AppendUint64(append(lp, 0xf4), uint64(v))
	return lpAppendBacklen(lp, 9)
}

func lpAppendString(lp []byte, s string) []byte {
	var hdr int
	switch {
	case len(s) < 64:
		lp, hdr = append(lp, 0x80|byte(len(s))), 1
	case len(s) < 4096:
		lp, hdr = append(lp, 0xe0|byte(len(s)>>8), byte(len(s))), 2
	default:
		lp, hdr = binary.LittleEndian.AppendUint32(append(lp, 0xf0), uint32(len(s))), 5
	}
	return lpAppendBacklen(append(lp, s...), hdr+len(s))
}

// lpAppendBacklen writes an entry's length (encoding and data) for backward walks:
// 7 bits per byte, the high bits first, the high bit set on every byte but the first.
func lpAppendBacklen(lp []byte, l int) []byte {
	n := lpBacklenSize(l)
	for i := n - 1; i >= 0; i-- {
		c := byte(l>>(7*i)) & 127
		if i < n-1 {
			c |= 128
		}
		lp = append(lp, c)
	}
	return lp
}

// lpBacklenSize is how many bytes lpEncodeBacklen gives a length.
func lpBacklenSize(l int) int {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

// streamObject decodes a stream; v2 is RDB_TYPE_STREAM_LISTPACKS_2.
func (r *rdbReader) streamObject(v2 bool) (item, bool) {
	s := newStream()
	nodes := r.count()
	for i := 0; i < nodes && !r.bad; i++ {
		key := r.str()
		lp := r.str()
		if r.bad || len(key) != 16 || !streamNode([]byte(lp), streamID{binary.BigEndian.Uint64([]byte(key)), binary.BigEndian.Uint64([]byte(key[8:]))}, s) {
			return item{}, false
		}
	}
	length, _ := r.length()
	s.last = r.id()
	if v2 {
		s.first = r.id()
		s.maxDeleted = r.id()
		s.added, _ = r.length()
	} else {
		// Redis 6 kept none of these: the first entry, and as many added as there are
		s.added = uint64(s.Len())
		if e, ok := s.entries.Min(); ok {
			s.first = e.id
		}
	}
	if r.bad || length != uint64(s.Len()) {
		return item{}, false
	}
	groups := r.count()
	for i := 0; i < groups && !r.bad; i++ {
		g := &streamGroup{name: r.str(), last: r.id(), entriesRead: invalidEntriesRead, pel: newPEL(), consumers: map[string]*consumer{}}
		if v2 {
			er, _ := r.length()
			g.entriesRead = int64(er)
		}
		if s.groups == nil {
			s.groups = map[string]*streamGroup{}
		}
		if s.groups[g.name] != nil {
			return item{}, false
		}
		s.groups[g.name] = g
		pel := r.count()
		for j := 0; j < pel && !r.bad; j++ {
			id := r.rawID()
			t := r.next(8)
			count, _ := r.length()
			if t == nil {
				return item{}, false
			}
			if _, dup := g.pel.Set(pelEntry{id, &nack{time: int64(binary.LittleEndian.Uint64(t)), count: count}}); dup {
				return item{}, false
			}
		}
		consumers := r.count()
		for j := 0; j < consumers && !r.bad; j++ {
			name := r.str()
			t := r.next(8)
			if t == nil || g.consumers[name] != nil {
				return item{}, false
			}
			c := g.createConsumer(name, int64(binary.LittleEndian.Uint64(t)))
			n := r.count()
			for k := 0; k < n && !r.bad; k++ {
				p, ok := g.pel.Get(pelEntry{id: r.rawID()})
				if !ok || p.n.consumer != nil {
					return item{}, false // not in the group's PEL, or another's
				}
				p.n.consumer = c
				c.pel.Set(p)
			}
		}
		ok := true
		g.pel.Scan(func(p pelEntry) bool { ok = p.n.consumer != nil; return ok })
		if !ok {
			return item{}, false // a pending entry that no consumer holds
		}
	}
	return item{typ: TypeStream, coll: s}, !r.bad
}

// id reads an ID as two lengths, rawID as 16 big-endian bytes.
func (r *rdbReader) id() streamID {
	ms, _ := r.length()
	seq, _ := r.length()
	return streamID{ms, seq}
}

func (r *rdbReader) rawID() streamID {
	b := r.next(16)
	if b == nil {
		return streamID{}
	}
	return streamID{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])}
}

// streamNode adds the live entries of one listpack, whose master ID is master, to s.
func streamNode(lp []byte, master streamID, s *stream) bool {
	var els []string
	if !eachListpack(lp, func(v string) { els = append(els, v) }) {
		return false
	}
	p := 0
	next := func() (string, bool) {
		if p >= len(els) {
			return "", false
		}
		p++
		return els[p-1], true
	}
	num := func() (uint64, bool) {
		v, ok := next()
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		return uint64(n), err == nil
	}
	count, ok1 := num()
	deleted, ok2 := num()
	nf, ok3 := num()
	if !ok1 || !ok2 || !ok3 || nf > uint64(len(els)) || count+deleted > uint64(len(els)) {
		return false
	}
	masterFields := make([]string, nf)
	for i := range masterFields {
		if masterFields[i], ok1 = next(); !ok1 {
			return false
		}
	}
	if end, ok := num(); !ok || end != 0 {
		return false
	}
	for i := uint64(0); i < count+deleted; i++ {
		flags, ok1 := num()
		ms, ok2 := num()
		seq, ok3 := num()
		if !ok1 || !ok2 || !ok3 {
			return false
		}
		var fields []string
		if flags&streamItemSameFields != 0 {
			fields = make([]string, 0, 2*nf)
			for _, f := range masterFields {
				v, ok := next()
				if !ok {
					return false
				}
				fields = append(fields, f, v)
			}
		} else {
			n, ok := num()
			if !ok || n > uint64(len(els)) {
				return false
			}
			fields = make([]string, 2*n)
			for j := range fields {
				if fields[j], ok = next(); !ok {
					return false
				}
			}
		}
		if _, ok := num(); !ok { // lp-count
			return false
		}
		if flags&streamItemDeleted != 0 {
			continue
		}
		id := streamID{master.ms + ms, master.seq + seq}
		if _, dup := s.entries.Set(streamEntry{id: id, fields: fields}); dup {
			return false
		}
	}
	return p == len(els)
}
