package raft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// The wire form of a Message, used by the transport between members. All integers are
// varints; no length is trusted before it is checked against the bytes that remain, so a
// hostile or corrupt frame costs at most its own size in allocations.
//
//	type:u8 from to term index logTerm commit hint context flags:u8 (1 reject, 2 waiting)
//	nEntries { index term time:varint type:u8 len data }
//	hasSnap:u8 [ index term time:varint nVoters {id} nLearners {id} nAddrs {id len addr} ]

// ErrBadMessage reports a frame that does not decode.
var ErrBadMessage = errors.New("raft: malformed message")

// AppendMessage appends the wire form of m to dst.
func AppendMessage(dst []byte, m *Message) []byte {
	dst = append(dst, byte(m.Type))
	for _, v := range [...]uint64{m.From, m.To, m.Term, m.Index, m.LogTerm, m.Commit, m.Hint, m.Context} {
		dst = binary.AppendUvarint(dst, v)
	}
	dst = append(dst, boolByte(m.Reject)|boolByte(m.Waiting)<<1)
	dst = binary.AppendUvarint(dst, uint64(len(m.Entries)))
	for i := range m.Entries {
		dst = AppendEntry(dst, &m.Entries[i])
	}
	if m.Snapshot == nil {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	return AppendSnapshotMeta(dst, m.Snapshot)
}

// AppendEntry appends the wire form of one entry (in a MsgApp, and a WAL record):
//
//	index term time:varint type:u8 len data
func AppendEntry(dst []byte, e *Entry) []byte {
	dst = binary.AppendUvarint(dst, e.Index)
	dst = binary.AppendUvarint(dst, e.Term)
	dst = binary.AppendVarint(dst, e.Time)
	dst = append(dst, byte(e.Type))
	dst = binary.AppendUvarint(dst, uint64(len(e.Data)))
	return append(dst, e.Data...)
}

// ParseEntry decodes what AppendEntry wrote, returning the bytes used. Data aliases b.
func ParseEntry(b []byte) (Entry, int, error) {
	r := reader{b: b}
	e := r.entry()
	if r.err != nil {
		return Entry{}, 0, r.err
	}
	return e, len(b) - len(r.b), nil
}

// AppendHardState appends term, vote and commit.
func AppendHardState(dst []byte, hs HardState) []byte {
	dst = binary.AppendUvarint(dst, hs.Term)
	dst = binary.AppendUvarint(dst, hs.Vote)
	return binary.AppendUvarint(dst, hs.Commit)
}

// ParseHardState decodes what AppendHardState wrote, returning the bytes used.
func ParseHardState(b []byte) (HardState, int, error) {
	r := reader{b: b}
	hs := HardState{Term: r.uvarint(), Vote: r.uvarint(), Commit: r.uvarint()}
	if r.err != nil {
		return HardState{}, 0, r.err
	}
	return hs, len(b) - len(r.b), nil
}

// AppendSnapshotMeta appends the wire form of a snapshot's metadata (also used on disk).
func AppendSnapshotMeta(dst []byte, s *SnapshotMeta) []byte {
	dst = binary.AppendUvarint(dst, s.Index)
	dst = binary.AppendUvarint(dst, s.Term)
	dst = binary.AppendVarint(dst, s.Time)
	for _, ids := range [][]uint64{s.Membership.Voters, s.Membership.Learners} {
		dst = binary.AppendUvarint(dst, uint64(len(ids)))
		for _, id := range ids {
			dst = binary.AppendUvarint(dst, id)
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(s.Membership.Addrs)))
	// Addresses go out in member order, so equal metadata encodes to equal bytes.
	for _, id := range sortedKeys(s.Membership.Addrs) {
		dst = binary.AppendUvarint(dst, id)
		dst = binary.AppendUvarint(dst, uint64(len(s.Membership.Addrs[id])))
		dst = append(dst, s.Membership.Addrs[id]...)
	}
	return dst
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = ErrBadMessage
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = ErrBadMessage
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.err = ErrBadMessage
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// bytes returns the next n bytes, aliasing the input.
func (r *reader) bytes(n uint64) []byte {
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = ErrBadMessage
		return nil
	}
	b := r.b[:n:n]
	r.b = r.b[n:]
	return b
}

// count reads a number of items each at least minSize bytes long, refusing counts the
// remaining input cannot hold.
func (r *reader) count(minSize int) int {
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)/minSize) {
		r.err = ErrBadMessage
		return 0
	}
	return int(n)
}

// ParseMessage decodes a whole frame. Entry data alias b.
func ParseMessage(b []byte) (Message, error) {
	r := reader{b: b}
	var m Message
	m.Type = MsgType(r.byte())
	if r.err == nil && (m.Type < MsgApp || m.Type > MsgForwardResp) {
		return Message{}, fmt.Errorf("%w: type %d", ErrBadMessage, m.Type)
	}
	for _, p := range [...]*uint64{&m.From, &m.To, &m.Term, &m.Index, &m.LogTerm, &m.Commit, &m.Hint, &m.Context} {
		*p = r.uvarint()
	}
	if flags := r.byte(); flags <= 3 {
		m.Reject, m.Waiting = flags&1 != 0, flags&2 != 0
	} else {
		r.err = ErrBadMessage
	}
	if n := r.count(5); n > 0 {
		m.Entries = make([]Entry, n)
		for i := range m.Entries {
			m.Entries[i] = r.entry()
		}
	}
	switch r.byte() {
	case 0:
	case 1:
		s := r.snapshotMeta()
		m.Snapshot = &s
	default:
		r.err = ErrBadMessage
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = ErrBadMessage
	}
	if r.err != nil {
		return Message{}, r.err
	}
	return m, nil
}

// ParseSnapshotMeta decodes what AppendSnapshotMeta wrote, returning the bytes used.
func ParseSnapshotMeta(b []byte) (SnapshotMeta, int, error) {
	r := reader{b: b}
	s := r.snapshotMeta()
	if r.err != nil {
		return SnapshotMeta{}, 0, r.err
	}
	return s, len(b) - len(r.b), nil
}

func (r *reader) entry() Entry {
	var e Entry
	e.Index, e.Term, e.Time = r.uvarint(), r.uvarint(), r.varint()
	e.Type = EntryType(r.byte())
	if e.Type > EntryForwarded {
		r.err = ErrBadMessage
	}
	e.Data = r.bytes(r.uvarint())
	return e
}

func (r *reader) snapshotMeta() SnapshotMeta {
	var s SnapshotMeta
	s.Index, s.Term, s.Time = r.uvarint(), r.uvarint(), r.varint()
	for _, ids := range []*[]uint64{&s.Membership.Voters, &s.Membership.Learners} {
		if n := r.count(1); n > 0 {
			*ids = make([]uint64, n)
			for i := range *ids {
				(*ids)[i] = r.uvarint()
			}
		}
	}
	if n := r.count(2); n > 0 {
		s.Membership.Addrs = make(map[uint64]string, n)
		for range n {
			id := r.uvarint()
			s.Membership.Addrs[id] = string(r.bytes(r.uvarint()))
		}
	}
	return s
}

func sortedKeys(m map[uint64]string) []uint64 {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// AppendForwarded appends the Data of an EntryForwarded: the member that forwarded the
// batch, its sequence number there, then the batch itself.
//
//	origin seq payload
func AppendForwarded(dst []byte, origin, seq uint64, payload []byte) []byte {
	dst = binary.AppendUvarint(dst, origin)
	dst = binary.AppendUvarint(dst, seq)
	return append(dst, payload...)
}

// ParseForwarded splits the Data of an EntryForwarded. payload aliases b.
func ParseForwarded(b []byte) (origin, seq uint64, payload []byte, err error) {
	r := reader{b: b}
	origin, seq = r.uvarint(), r.uvarint()
	if r.err != nil {
		return 0, 0, nil, r.err
	}
	return origin, seq, r.b, nil
}
