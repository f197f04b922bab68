package mcproto

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/nanokv/nanokv/kvstore"
)

// Meta is the parsed flags of a meta command (mg ms md ma). Flags that only ask for
// something to be returned (O k c f s t) are echoed in the order the client sent them.
type Meta struct {
	Tokens      [][]byte // the flag tokens, in order
	Quiet       bool     // q
	Value       bool     // v
	Opaque      []byte   // O
	TTL         int64    // T
	HasTTL      bool
	Vivify      int64 // N: autovivify with this exptime
	HasVivify   bool
	Recache     int64 // R: mg wins the recache token if the TTL left is below this
	HasRecache  bool
	Invalidate  bool   // I: md marks the item stale; ms with an older C stores it stale
	CAS         uint64 // C: compare
	HasCAS      bool
	ClientFlags uint32 // F
	Mode        byte   // M, normalised: ms S E A P R, ma + -
	Initial     uint64 // J
	Delta       uint64 // D
	NoBump      bool   // u: the read is no access (no LRU bump)
	Binary      bool   // b: the key token is base64 (base64key.go)
	History     bool   // h or l: the reply shows the item's access history
	// idle and fetched are the history an mg with T read before its touch went through
	// the log (l and h).
	idle    int64
	fetched bool
	// vivifying: the mg missed on this member's copy and goes through the log to create
	// the item (the stats count it once the log decided)
	vivifying bool
}

// maxOpaque is memcached's MFLAG_MAX_OPAQUE_LENGTH.
const maxOpaque = 32

// ParseMeta parses a meta command's flag tokens as memcached 1.6's _meta_flag_preparse
// does, and returns the key the command names with keyTok (decoded under the b flag).
// errLine is the reply for a refused line, chosen as memcached chooses it: an unknown or
// repeated flag stops at once; a bad number or M token is reported once the whole line
// was read (the last one, except that a bad F leaves the line's default error); then a
// key that does not decode; then an opaque token that is too long. md and ma answer all
// but the last with one line (metaErr).
//
// The flags are memcached 1.6.18's: E (an explicit CAS unique) came in 1.6.27 and is
// refused as invalid, as 1.6.18 refuses it.
func ParseMeta(kind Kind, keyTok []byte, toks [][]byte) (m *Meta, key []byte, errLine string) {
	m = &Meta{Tokens: toks, Delta: 1}
	var seen [128]bool
	failed, longOpaque := false, false
	errLine = errBadLine
	bad := func(line string) { failed, errLine = true, line }
	for _, t := range toks {
		f := t[0]
		if f >= 128 {
			return nil, nil, metaErr(kind, "CLIENT_ERROR invalid flag")
		}
		if seen[f] {
			return nil, nil, metaErr(kind, "CLIENT_ERROR duplicate flag")
		}
		seen[f] = true
		arg := t[1:]
		switch f {
		case 'O':
			longOpaque = len(arg) > maxOpaque
			m.Opaque = arg
		case 'u':
			m.NoBump = true
		case 'b':
			m.Binary = true
		case 'P', 'L', 'k', 's', 't', 'c', 'f':
			// P, L: proxy hints, ignored as memcached does
		case 'h', 'l':
			m.History = true
		case 'v':
			m.Value = true
		case 'q':
			m.Quiet = true
		case 'T', 'N', 'R':
			v, ok := ParseInt32(arg)
			if !ok {
				bad("CLIENT_ERROR bad token in command line format")
			}
			switch f {
			case 'T':
				m.TTL, m.HasTTL = v, true
			case 'N':
				m.Vivify, m.HasVivify = v, true
			default:
				m.Recache, m.HasRecache = v, true
			}
		case 'I':
			m.Invalidate = true
		case 'C':
			v, ok := ParseUint64(arg)
			if !ok {
				bad("CLIENT_ERROR bad token in command line format")
			}
			m.CAS, m.HasCAS = v, true
		case 'F':
			v, ok := ParseUint32(arg)
			if !ok {
				failed = true // memcached sets no message of its own here
			}
			m.ClientFlags = v
		case 'M':
			if len(arg) != 1 {
				bad("CLIENT_ERROR incorrect length for M token")
				break
			}
			m.Mode = arg[0]
		case 'J':
			v, ok := ParseUint64(arg)
			if !ok {
				bad("CLIENT_ERROR invalid numeric initial value")
			}
			m.Initial = v
		case 'D':
			v, ok := ParseUint64(arg)
			if !ok {
				bad("CLIENT_ERROR invalid numeric delta value")
			}
			m.Delta = v
		default:
			return nil, nil, metaErr(kind, "CLIENT_ERROR invalid flag")
		}
	}
	if failed {
		return nil, nil, metaErr(kind, errLine)
	}
	key = keyTok
	if m.Binary {
		var ok bool
		if key, ok = decodeKey(keyTok); !ok {
			return nil, nil, metaErr(kind, errDecodeKey)
		}
	}
	if longOpaque {
		return nil, nil, "CLIENT_ERROR opaque token too long"
	}
	// memcached 1.6.18 takes the modes in capitals only
	switch kind {
	case KindMetaSet:
		switch m.Mode {
		case 0, 'S':
			m.Mode = 'S'
		case 'E':
			m.Mode = 'E'
		case 'A':
			m.Mode = 'A'
		case 'P':
			m.Mode = 'P'
		case 'R':
			m.Mode = 'R'
		default:
			return nil, nil, "CLIENT_ERROR invalid mode for ms M token"
		}
	case KindMetaArith:
		switch m.Mode {
		case 0, 'I', '+':
			m.Mode = '+'
		case 'D', '-':
			m.Mode = '-'
		default:
			return nil, nil, "CLIENT_ERROR invalid mode for ma M token"
		}
	}
	return m, key, ""
}

// optional is a flag's number for the log's commands, MCNoValue when the flag is absent.
func optional(has bool, v int64) string {
	if !has {
		return kvstore.MCNoValue
	}
	return strconv.FormatInt(v, 10)
}

// optionalCAS is C's unique for the log's commands, MCNoValue without C.
func optionalCAS(m *Meta) string {
	if !m.HasCAS {
		return kvstore.MCNoValue
	}
	return strconv.FormatUint(m.CAS, 10)
}

// metaErr: md and ma report every flag error, and a key that does not decode, with one
// line.
func metaErr(kind Kind, line string) string {
	if kind == KindMetaArith || kind == KindMetaDelete {
		return "CLIENT_ERROR invalid or duplicate flag"
	}
	return line
}

// metaItem is what the return flags of a meta reply can show.
type metaItem struct {
	key     []byte
	binary  bool // k shows the key in base64, followed by b
	flags   uint32
	cas     uint64
	size    int
	ttl     int64
	idle    int64 // seconds since the last access before this one (l)
	fetched bool  // read since stored, before this read (h)
	hit     bool
	// mg's marks of a hit: stale (X), the recache token won by an earlier mg (Z), or by
	// this one (W)
	stale, wonBefore, win bool
}

// appendReturnFlags appends the flags the client asked back, in its order: on a hit every
// one of O k c f s t that the command returns; otherwise only O and k.
func appendReturnFlags(dst []byte, m *Meta, it *metaItem, returns string) []byte {
	for _, t := range m.Tokens {
		f := t[0]
		if !it.hit && f != 'O' && f != 'k' {
			continue
		}
		if !containsByte(returns, f) {
			continue
		}
		dst = append(dst, ' ', f)
		switch f {
		case 'O':
			dst = append(dst, m.Opaque...)
		case 'k':
			dst = appendKey(dst, it.key, it.binary)
		case 'c':
			dst = strconv.AppendUint(dst, it.cas, 10)
		case 'f':
			dst = strconv.AppendUint(dst, uint64(it.flags), 10)
		case 's':
			dst = strconv.AppendInt(dst, int64(it.size), 10)
		case 't':
			dst = strconv.AppendInt(dst, it.ttl, 10)
		case 'h':
			if it.fetched {
				dst = append(dst, '1')
			} else {
				dst = append(dst, '0')
			}
		case 'l':
			dst = strconv.AppendInt(dst, it.idle, 10)
		}
	}
	return dst
}

// appendMarks appends mg's marks after the return flags, in memcached's order.
func appendMarks(dst []byte, it *metaItem) []byte {
	if it.wonBefore {
		dst = append(dst, " Z"...)
	}
	if it.stale {
		dst = append(dst, " X"...)
	}
	if it.win {
		dst = append(dst, " W"...)
	}
	return dst
}

func containsByte(s string, b byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return true
		}
	}
	return false
}

// Return flags per command.
const (
	mgReturns = "Okcfsthl"
	msReturns = "Okc"
	mdReturns = "Ok"
	maReturns = "Okct"
)

// metaKey checks a meta command's key and parses its flags; it replies to a refused line.
func (c *conn) metaKey(kind Kind, toks [][]byte) (key []byte, m *Meta, ok bool) {
	c.s.stats.cmdMeta.Add(1)
	if len(toks[1]) > MaxKeyLen {
		c.reply(errBadLine)
		return nil, nil, false
	}
	m, key, errLine := ParseMeta(kind, toks[1], toks[2:])
	if errLine != "" {
		c.reply(errLine)
		return nil, nil, false
	}
	return key, m, true
}

// keep copies what a queued meta reply needs past the current request: the tokens live in
// the connection's scratch space, which the next request reuses.
func (m *Meta) keep() *Meta {
	m.Tokens = append([][]byte(nil), m.Tokens...)
	return m
}

func (c *conn) handleMetaGet(toks [][]byte) {
	key, m, ok := c.metaKey(KindMetaGet, toks)
	if !ok {
		return
	}
	if m.HasTTL {
		// a get that touches is a write: it goes through the log
		c.s.stats.cmdTouch.Add(1)
		// h and l show the item as it is before the touch goes through the log (from
		// this member's clocks: each member keeps its own)
		if m.History {
			if v, found := c.s.b.Store().MCPeek(key, c.clock.Now()); found {
				m.idle, m.fetched = v.Idle, v.Fetched
			}
		}
		c.writeMetaGet(key, m)
		return
	}
	c.flushBatch()
	if !c.readBarrier() {
		return
	}
	c.s.stats.cmdGet.Add(1)
	v, found := c.get(key, !m.NoBump)
	it := metaItem{key: key, binary: m.Binary}
	if found {
		c.s.stats.getHits.Add(1)
		ttl := v.SecondsLeft(c.clock.Now())
		if !v.Won && (v.Stale || (m.HasRecache && ttl >= 0 && ttl < m.Recache)) {
			// this mg may win the recache token: a write, decided by the log
			m.idle, m.fetched = v.Idle, v.Fetched
			c.writeMetaGet(key, m)
			return
		}
		// a hit's key shows as the item was stored, as memcached's does
		it = metaItem{key: key, binary: v.BinaryKey, flags: v.Flags, cas: v.CAS, size: len(v.Value), ttl: ttl,
			idle: v.Idle, fetched: v.Fetched, hit: true, stale: v.Stale, wonBefore: v.Won}
	} else {
		if m.HasVivify {
			m.vivifying = true
			c.writeMetaGet(key, m) // creates the item, unless another mg did meanwhile
			return
		}
		c.s.stats.getMisses.Add(1)
	}
	c.renderMetaGet(m, &it, v.Value)
}

// writeMetaGet sends an mg that may change the item through the log (mcmget).
func (c *conn) writeMetaGet(key []byte, m *Meta) {
	c.write(kvstore.AppendMCMetaGet(c.batch, key, optional(m.HasTTL, m.TTL), optional(m.HasVivify, m.Vivify),
		optional(m.HasRecache, m.Recache), !m.NoBump),
		pending{kind: pMetaGet, key: key, meta: m.keep()}, false)
}

func (c *conn) renderMetaGet(m *Meta, it *metaItem, val string) {
	switch {
	case !it.hit && m.Quiet:
	case !it.hit:
		c.out = append(c.out, "EN"...)
		c.out = appendReturnFlags(c.out, m, it, mgReturns)
		c.out = append(c.out, "\r\n"...)
	case m.Value:
		c.out = append(c.out, "VA "...)
		c.out = strconv.AppendInt(c.out, int64(len(val)), 10)
		c.out = appendReturnFlags(c.out, m, it, mgReturns)
		c.out = appendMarks(c.out, it)
		c.out = append(c.out, "\r\n"...)
		c.out = append(c.out, val...)
		c.out = append(c.out, "\r\n"...)
	default:
		c.out = append(c.out, "HD"...)
		c.out = appendReturnFlags(c.out, m, it, mgReturns)
		c.out = appendMarks(c.out, it)
		c.out = append(c.out, "\r\n"...)
	}
}

var metaSetModes = map[byte]kvstore.MCStore{
	'S': kvstore.MCSet, 'E': kvstore.MCAdd, 'A': kvstore.MCAppend, 'P': kvstore.MCPrepend, 'R': kvstore.MCReplace,
}

func (c *conn) handleMetaSet(req *Request) {
	c.s.stats.cmdMeta.Add(1)
	if c.s.cfg.Memory.Refusing() {
		c.outOfMemory(req, true)
		return
	}
	c.s.stats.cmdSet.Add(1)
	m := req.Meta
	cas, vivify := optionalCAS(m), optional(m.HasVivify, m.Vivify)
	wantCAS := false
	for _, t := range m.Tokens {
		wantCAS = wantCAS || t[0] == 'c'
	}
	blind := m.Mode == 'S' && !m.HasCAS && !wantCAS
	c.write(kvstore.AppendMCMetaStore(c.batch, metaSetModes[m.Mode], req.Key, req.Data, m.ClientFlags, m.Binary, m.Invalidate, m.TTL, cas, vivify),
		pending{kind: pMetaSet, key: req.Key, meta: m.keep()}, blind)
}

// metaCode maps a store's reply code to the meta one.
func metaCode(code string) string {
	switch code {
	case kvstore.MCStored, kvstore.MCDeleted, kvstore.MCOK, kvstore.MCTouched:
		return "HD"
	case kvstore.MCNotStored:
		return "NS"
	case kvstore.MCExists:
		return "EX"
	}
	return "NF"
}

func (c *conn) renderMetaSet(p *pending, r *result, code string) {
	if r == nil {
		code = kvstore.MCStored
	}
	// memcached 1.6 returns c on every ms reply: c0 when nothing was stored
	it := metaItem{key: p.key, binary: p.meta.Binary, hit: true}
	if code == kvstore.MCStored {
		c.s.stats.totalItems.Add(1)
		if p.meta.Quiet {
			return
		}
		if r != nil {
			it.cas = r.cas
		}
	}
	c.out = append(c.out, metaCode(code)...)
	c.out = appendReturnFlags(c.out, p.meta, &it, msReturns)
	c.out = append(c.out, "\r\n"...)
}

func (c *conn) handleMetaDelete(toks [][]byte) {
	key, m, ok := c.metaKey(KindMetaDelete, toks)
	if !ok {
		return
	}
	var op []byte
	if m.Invalidate {
		// the item stays, stale; T gives it a new TTL (without I, md ignores T)
		op = kvstore.AppendMCInvalidate(c.batch, key, optionalCAS(m), optional(m.HasTTL, m.TTL))
	} else {
		op = kvstore.AppendMCDelete(c.batch, key, optionalCAS(m))
	}
	c.write(op, pending{kind: pMetaDel, key: key, meta: m.keep()}, false)
}

func (c *conn) renderMetaDelete(p *pending, code string) {
	if code == kvstore.MCDeleted {
		if !p.meta.Invalidate { // memcached counts neither a hit nor a miss for md I
			c.s.stats.deleteHits.Add(1)
		}
		if p.meta.Quiet {
			return
		}
	} else {
		c.s.stats.deleteMisses.Add(1)
	}
	c.out = append(c.out, metaCode(code)...)
	c.out = appendReturnFlags(c.out, p.meta, &metaItem{key: p.key, binary: p.meta.Binary}, mdReturns)
	c.out = append(c.out, "\r\n"...)
}

func (c *conn) handleMetaArith(toks [][]byte) {
	key, m, ok := c.metaKey(KindMetaArith, toks)
	if !ok {
		return
	}
	c.write(kvstore.AppendMCIncr(c.batch, key, m.Mode == '-', m.Delta, optionalCAS(m), optional(m.HasVivify, m.Vivify),
		m.Initial, optional(m.HasTTL, m.TTL)),
		pending{kind: pMetaArith, key: key, meta: m.keep()}, false)
}

// counter is the number incr, decr and ma answer with: the item's value without the
// spaces memcached pads a shortened number with (kvstore's mcIncrCmd).
func counter(val string) string { return strings.TrimRight(val, " ") }

// renderMetaArith renders ma's reply: code is MCOK for a delta applied, MCStored for a
// counter created (N), whose reply memcached 1.6 sends even under q.
func (c *conn) renderMetaArith(p *pending, r *result, code string) {
	m := p.meta
	decr := m.Mode == '-'
	created := code == kvstore.MCStored
	if code != kvstore.MCOK && !created {
		if decr {
			c.s.stats.decrMisses.Add(1)
		} else {
			c.s.stats.incrMisses.Add(1)
		}
		c.out = append(c.out, metaCode(code)...)
		c.out = appendReturnFlags(c.out, m, &metaItem{key: p.key, binary: m.Binary}, maReturns)
		c.out = append(c.out, "\r\n"...)
		return
	}
	switch {
	case created: // memcached counts neither a hit nor a miss
	case decr:
		c.s.stats.decrHits.Add(1)
	default:
		c.s.stats.incrHits.Add(1)
	}
	if m.Quiet && !created {
		return
	}
	n := counter(r.val)
	it := metaItem{key: p.key, binary: m.Binary, flags: r.flags, cas: r.cas, size: len(n), ttl: r.ttl, hit: true}
	if m.Value {
		c.out = append(c.out, "VA "...)
		c.out = strconv.AppendInt(c.out, int64(len(n)), 10)
		c.out = appendReturnFlags(c.out, m, &it, maReturns)
		c.out = append(c.out, "\r\n"...)
		c.out = append(c.out, n...)
		c.out = append(c.out, "\r\n"...)
		return
	}
	c.out = append(c.out, "HD"...)
	c.out = appendReturnFlags(c.out, m, &it, maReturns)
	c.out = append(c.out, "\r\n"...)
}

// handleMetaDebug is me: memcached's item debug line, which is no access to the item.
// la is the seconds since its last access (to the minute under an LFU policy), fetch
// whether it was read since stored; cls is the slab class memcached 1.6 would store the
// item in.
func (c *conn) handleMetaDebug(toks [][]byte) {
	key := toks[1]
	if len(key) > MaxKeyLen {
		c.reply(errBadLine)
		return
	}
	// me takes one flag, b, as its second token exactly, and ignores anything else
	binary := len(toks) > 2 && string(toks[2]) == "b"
	if binary {
		var ok bool
		if key, ok = decodeKey(key); !ok {
			c.reply(errBadLine)
			return
		}
	}
	c.flushBatch()
	if !c.readBarrier() {
		return
	}
	it, ok := c.get(key, false)
	if !ok {
		c.line("EN")
		return
	}
	exp := int64(-1)
	if it.Deadline != 0 {
		exp = -it.SecondsLeft(c.clock.Now())
	}
	size := kvstore.MCItemSize(len(key), it.Flags, len(it.Value))
	c.out = append(c.out, "ME "...)
	if it.BinaryKey {
		// by how the item was stored, in base64 without the b flag, as memcached shows it
		c.out = base64.StdEncoding.AppendEncode(c.out, key)
	} else {
		c.out = append(c.out, key...)
	}
	c.out = fmt.Appendf(c.out, " exp=%d la=%d cas=%d fetch=%s cls=%d size=%d\r\n", exp, it.Idle, it.CAS, yesNo(it.Fetched), slabClass(size), size)
}

// yesNo is how me and lru_crawler metadump show a flag.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
