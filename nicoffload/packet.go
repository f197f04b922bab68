package nicoffload

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// The datagram format. A fixed header at fixed offsets, big-endian (network order), as a
// NIC pipeline parses it: every field is found without decoding the ones before it, and a
// sender patches To and LeaderCommit in place when it sends one sealed batch to several
// followers.
//
//	off len field
//	  0   2 magic "NK"
//	  2   1 version (1)
//	  3   1 type
//	  4   1 flags (bit 0: reject, in a VoteResponse; bit 1: waiting, in an Ack)
//	  5   1 reason (a Nack's HaltReason)
//	  6   2 entry count (Append only)
//	  8   8 cluster id
//	 16   8 from
//	 24   8 to
//	 32   8 term
//	 40   8 prevLogIndex   (VoteRequest: the candidate's lastLogIndex;
//	                        RetransmitRequest: the last index wanted)
//	 48   8 prevLogTerm    (VoteRequest: the candidate's lastLogTerm)
//	 56   8 leaderCommit   (Ack: the follower's commit index)
//	 64   8 index          (Ack: highest index held; RetransmitRequest: first index
//	                        wanted; VoteResponse and Nack: the sender's lastLogIndex)
//	 72     entries, count times:
//	          term:8 time:8 (unix ms, signed) type:1 len:2 data:len
//
// An entry's index is not on the wire: entries follow prevLogIndex, so the k-th entry
// (from 0) is at prevLogIndex+1+k.

// MaxDatagram is the largest datagram the engine builds or accepts: the most a UDP
// datagram over IPv4 can carry (65535 − 8 UDP − 20 IP header bytes).
const MaxDatagram = 65507

// HeaderSize is the size of the fixed header; EntryHeaderSize the per-entry overhead.
const (
	HeaderSize      = 72
	EntryHeaderSize = 19
)

const (
	magic0, magic1 = 'N', 'K'
	version        = 1

	offType    = 3
	offFlags   = 4
	offReason  = 5
	offCount   = 6
	offCluster = 8
	offFrom    = 16
	offTo      = 24
	offTerm    = 32
	offPrev    = 40
	offPrevT   = 48
	offCommit  = 56
	offIndex   = 64

	flagReject  = 1 << 0
	flagWaiting = 1 << 1
)

// PacketType is the kind of a datagram.
type PacketType uint8

const (
	// Append carries a sealed batch from the leader: entries after PrevLogIndex, and the
	// leader's commit index. With no entries it only carries LeaderCommit.
	Append PacketType = iota + 1
	// Ack tells the leader the follower holds every entry up to Index (acked from memory,
	// or once durable with AckAfterPersist); LeaderCommit carries the follower's own
	// commit index, so the leader knows who still needs to hear of a commit.
	Ack
	// RetransmitRequest asks the leader to replay the datagrams holding Index through
	// PrevLogIndex (0: through the last): the follower saw a gap.
	RetransmitRequest
	// VoteRequest opens an accelerated term (Waverunner's RequestVoteFPGA): PrevLogIndex
	// and PrevLogTerm are the leader's lastLogIndex and lastLogTerm.
	VoteRequest
	// VoteResponse grants (or, with Reject, refuses) a VoteRequest; Index is the voter's
	// lastLogIndex.
	VoteResponse
	// Nack tells the sender that the receiver will not take its datagrams: Reason says
	// why, Term is the receiver's term (StaleTerm) or the datagram's, Index the
	// receiver's lastLogIndex.
	Nack
)

var typeNames = [...]string{"?", "Append", "Ack", "RetransmitRequest", "VoteRequest", "VoteResponse", "Nack"}

func (t PacketType) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("PacketType(%d)", uint8(t))
}

// Entry is one log entry as the engine moves it. Type is the host's entry kind (say,
// raft.EntryNormal or raft.EntryForwarded); the engine never looks at it or at Data.
type Entry struct {
	Index uint64
	Term  uint64
	Time  int64 // the leader's clock when proposed, unix ms; never decreasing along the log
	Type  uint8
	Data  []byte
}

// Packet is a decoded datagram. Fields a type does not use are zero.
type Packet struct {
	ClusterID    uint64
	From, To     uint64
	Type         PacketType
	Reject       bool
	Waiting      bool // Ack: the follower waits for a commit; tell it at once
	Reason       HaltReason
	Term         uint64
	PrevLogIndex uint64
	PrevLogTerm  uint64
	LeaderCommit uint64
	Index        uint64
	Entries      []Entry
}

var (
	// ErrBadPacket reports a datagram that does not decode.
	ErrBadPacket = errors.New("nicoffload: malformed datagram")
	// ErrTooLarge rejects an entry (or a packet) that cannot fit in one datagram.
	ErrTooLarge = errors.New("nicoffload: larger than a datagram")
)

// entrySize is the wire size of one entry.
func entrySize(dataLen int) int { return EntryHeaderSize + dataLen }

// PacketSize is the wire size of p.
func PacketSize(p *Packet) int {
	n := HeaderSize
	for i := range p.Entries {
		n += entrySize(len(p.Entries[i].Data))
	}
	return n
}

// AppendPacket appends the wire form of p to dst. Entry indexes are not encoded (they
// follow PrevLogIndex). The caller keeps p within MaxDatagram (PacketSize) and each
// entry's data under 64 KiB; the engine never builds anything larger.
func AppendPacket(dst []byte, p *Packet) []byte {
	var h [HeaderSize]byte
	h[0], h[1], h[2], h[offType] = magic0, magic1, version, byte(p.Type)
	if p.Reject {
		h[offFlags] |= flagReject
	}
	if p.Waiting {
		h[offFlags] |= flagWaiting
	}
	h[offReason] = byte(p.Reason)
	binary.BigEndian.PutUint16(h[offCount:], uint16(len(p.Entries)))
	be := binary.BigEndian
	be.PutUint64(h[offCluster:], p.ClusterID)
	be.PutUint64(h[offFrom:], p.From)
	be.PutUint64(h[offTo:], p.To)
	be.PutUint64(h[offTerm:], p.Term)
	be.PutUint64(h[offPrev:], p.PrevLogIndex)
	be.PutUint64(h[offPrevT:], p.PrevLogTerm)
	be.PutUint64(h[offCommit:], p.LeaderCommit)
	be.PutUint64(h[offIndex:], p.Index)
	dst = append(dst, h[:]...)
	for i := range p.Entries {
		dst = appendEntry(dst, &p.Entries[i])
	}
	return dst
}

func appendEntry(dst []byte, e *Entry) []byte {
	var h [EntryHeaderSize]byte
	binary.BigEndian.PutUint64(h[0:], e.Term)
	binary.BigEndian.PutUint64(h[8:], uint64(e.Time))
	h[16] = e.Type
	binary.BigEndian.PutUint16(h[17:], uint16(len(e.Data)))
	dst = append(dst, h[:]...)
	return append(dst, e.Data...)
}

// ParsePacket decodes one whole datagram. Entry data alias b: copy what outlives b.
// Every count and length is checked against the bytes that remain before anything is
// allocated, so a hostile datagram costs at most a slice of Entry headers no longer than
// itself.
func ParsePacket(b []byte) (Packet, error) {
	p, _, err := parsePacket(b, nil)
	return p, err
}

// parsePacket is ParsePacket with the entries appended to ents, which it returns grown:
// a receiver decoding a batch of datagrams reuses one slice of entries for all of them.
// On an error the returned slice is ents as given.
func parsePacket(b []byte, ents []Entry) (Packet, []Entry, error) {
	var p Packet
	if len(b) < HeaderSize {
		return p, ents, fmt.Errorf("%w: %d bytes, header is %d", ErrBadPacket, len(b), HeaderSize)
	}
	if len(b) > MaxDatagram {
		return p, ents, fmt.Errorf("%w: %d bytes", ErrBadPacket, len(b))
	}
	if b[0] != magic0 || b[1] != magic1 {
		return p, ents, fmt.Errorf("%w: bad magic", ErrBadPacket)
	}
	if b[2] != version {
		return p, ents, fmt.Errorf("%w: version %d", ErrBadPacket, b[2])
	}
	p.Type = PacketType(b[offType])
	if p.Type < Append || p.Type > Nack {
		return Packet{}, ents, fmt.Errorf("%w: type %d", ErrBadPacket, b[offType])
	}
	if b[offFlags]&^(flagReject|flagWaiting) != 0 {
		return Packet{}, ents, fmt.Errorf("%w: flags %#x", ErrBadPacket, b[offFlags])
	}
	p.Reject = b[offFlags]&flagReject != 0
	p.Waiting = b[offFlags]&flagWaiting != 0
	p.Reason = HaltReason(b[offReason])
	be := binary.BigEndian
	p.ClusterID = be.Uint64(b[offCluster:])
	p.From = be.Uint64(b[offFrom:])
	p.To = be.Uint64(b[offTo:])
	p.Term = be.Uint64(b[offTerm:])
	p.PrevLogIndex = be.Uint64(b[offPrev:])
	p.PrevLogTerm = be.Uint64(b[offPrevT:])
	p.LeaderCommit = be.Uint64(b[offCommit:])
	p.Index = be.Uint64(b[offIndex:])

	n := int(be.Uint16(b[offCount:]))
	rest := b[HeaderSize:]
	if n > 0 && p.Type != Append {
		return Packet{}, ents, fmt.Errorf("%w: %v with %d entries", ErrBadPacket, p.Type, n)
	}
	if n > len(rest)/EntryHeaderSize {
		return Packet{}, ents, fmt.Errorf("%w: %d entries in %d bytes", ErrBadPacket, n, len(rest))
	}
	all := ents
	if n > 0 {
		if p.PrevLogIndex > ^uint64(0)-uint64(n) {
			return Packet{}, ents, fmt.Errorf("%w: entry indexes overflow", ErrBadPacket)
		}
		first := len(ents)
		all = slices.Grow(ents, n)[:first+n]
		p.Entries = all[first : first+n : first+n]
		for i := range p.Entries {
			if len(rest) < EntryHeaderSize {
				return Packet{}, ents, fmt.Errorf("%w: entry %d truncated", ErrBadPacket, i)
			}
			e := &p.Entries[i]
			e.Index = p.PrevLogIndex + 1 + uint64(i)
			e.Term = be.Uint64(rest[0:])
			e.Time = int64(be.Uint64(rest[8:]))
			e.Type = rest[16]
			l := int(be.Uint16(rest[17:]))
			rest = rest[EntryHeaderSize:]
			if l > len(rest) {
				return Packet{}, ents, fmt.Errorf("%w: entry %d: %d data bytes, %d left", ErrBadPacket, i, l, len(rest))
			}
			e.Data = rest[:l:l]
			rest = rest[l:]
		}
	}
	if len(rest) != 0 {
		return Packet{}, ents, fmt.Errorf("%w: %d trailing bytes", ErrBadPacket, len(rest))
	}
	return p, all, nil
}

// PeekHeader reads the cluster id and sender of a datagram without decoding the rest, so
// a receiver drops foreign traffic before it parses entries.
func PeekHeader(b []byte) (clusterID, from uint64, ok bool) {
	if len(b) < HeaderSize || b[0] != magic0 || b[1] != magic1 || b[2] != version {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(b[offCluster:]), binary.BigEndian.Uint64(b[offFrom:]), true
}

// patchTo rewrites the To and LeaderCommit fields of an encoded datagram in place.
func patchTo(b []byte, to, commit uint64) {
	binary.BigEndian.PutUint64(b[offTo:], to)
	binary.BigEndian.PutUint64(b[offCommit:], commit)
}
