package kvstore

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"github.com/tidwall/btree"
)

// Streams (Redis 7.0 t_stream.c semantics): XADD XLEN XRANGE XREVRANGE XDEL XTRIM XREAD
// XSETID XINFO here, the consumer groups in stream_groups.go.
//
// A stream is a B-tree of entries ordered by ID, plus the counters Redis keeps beside
// them (the last generated ID, entries added, the largest deleted ID, the first ID) and
// its consumer groups. An ID that XADD generates comes from the entry's clock, like
// every other time here, so every replica generates the same one. Unlike the other
// collections, a stream stays when its last entry goes (XDEL, XTRIM): its counters and
// groups are state.

func init() {
	collectionDecoders[TypeStream] = decodeStream
	const (
		w  = FlagWrite | FlagDenyOOM | FlagFast
		wf = FlagWrite | FlagFast
		r  = FlagReadOnly
		rf = FlagReadOnly | FlagFast
	)
	register(
		&Spec{Name: "xadd", Arity: -5, Flags: w, FirstKey: 1, LastKey: 1, Step: 1, Group: "stream", Since: "5.0.0", Summary: "Appends a new entry to a stream", Run: xaddCmd},
		&Spec{Name: "xlen", Arity: 2, Flags: rf, FirstKey: 1, LastKey: 1, Step: 1, Group: "stream", Since: "5.0.0", Summary: "Return the number of entries in a stream", Run: xlenCmd},
		&Spec{Name: "xrange", Arity: -4, Flags: r, FirstKey: 1, LastKey: 1, Step: 1, Group: "stream", Since: "5.0.0", Summary: "Return a range of elements in a stream, with IDs matching the specified IDs interval", Run: xrangeCmd(false)},
		&Spec{Name: "xrevrange", Arity: -4, Flags: r, FirstKey: 1, LastKey: 1, Step: 1, Group: "stream", Since: "5.0.0", Summary: "Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE", Run: xrangeCmd(true)},
		&Spec{Name: "xdel", Arity: -3, Flags: wf, FirstKey: 1, LastKey: 1, Step: 1, Group: "stream", Since: "5.0.0", Summary: "Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist.", Run: xdelCmd},
		&Spec{Name: "xtrim", Arity: -4, Flags: FlagWrite, FirstKey: 1, LastKey: 1, Step: 1, Group: "stream", Since: "5.0.0", Summary: "Trims the stream to (approximately if '~' is passed) a certain size", Run: xtrimCmd},
		&Spec{Name: "xsetid", Arity: -3, Flags: w, FirstKey: 1, LastKey: 1, Step: 1, Group: "stream", Since: "5.0.0", Summary: "An internal command for replicating stream values", Run: xsetidCmd},
		&Spec{Name: "xread", Arity: -4, Flags: r | FlagBlocking, Group: "stream", Since: "5.0.0", Summary: "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block.", Run: xreadCmd, MoreKeys: xreadKeys},
		&Spec{Name: "xinfo", Arity: -2, Flags: r, FirstKey: 2, LastKey: 2, Step: 1, Group: "stream", Since: "5.0.0", Summary: "A container for stream introspection commands", Run: xinfoCmd, Subcommands: xinfoArity},
	)
}

// Error replies of the stream commands, as Redis 7.0 words them.
const (
	errStreamID        = "ERR Invalid stream ID specified as stream command argument"
	errStreamTop       = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
	errStreamZero      = "ERR The ID specified in XADD must be greater than 0-0"
	errStreamExhausted = "ERR The stream has exhausted the last possible ID, unable to add more items"
	errNoSuchKey       = "ERR no such key"
)

// streamID is an entry ID, <ms>-<seq>.
type streamID struct{ ms, seq uint64 }

var maxStreamID = streamID{math.MaxUint64, math.MaxUint64}

func (a streamID) less(b streamID) bool {
	return a.ms < b.ms || a.ms == b.ms && a.seq < b.seq
}

func (a streamID) String() string {
	return strconv.FormatUint(a.ms, 10) + "-" + strconv.FormatUint(a.seq, 10)
}

// incr is the next ID; false past the last possible one (Redis's streamIncrID).
func (a streamID) incr() (streamID, bool) {
	switch {
	case a.seq < math.MaxUint64:
		return streamID{a.ms, a.seq + 1}, true
	case a.ms < math.MaxUint64:
		return streamID{a.ms + 1, 0}, true
	}
	return streamID{}, false
}

// decr is the previous ID; false before 0-0 (streamDecrID).
func (a streamID) decr() (streamID, bool) {
	switch {
	case a.seq > 0:
		return streamID{a.ms, a.seq - 1}, true
	case a.ms > 0:
		return streamID{a.ms - 1, math.MaxUint64}, true
	}
	return streamID{}, false
}

// streamEntry is one entry: its ID and its field-value pairs, flat.
type streamEntry struct {
	id     streamID
	fields []string
}

type stream struct {
	entries    *btree.BTreeG[streamEntry]
	last       streamID                // last-generated-id
	first      streamID                // recorded-first-entry-id (0-0 when empty)
	maxDeleted streamID                // max-deleted-entry-id: the largest ID XDEL removed
	added      uint64                  // entries-added
	groups     map[string]*streamGroup // consumer groups (stream_groups.go), by name
}

func newStream() *stream {
	return &stream{entries: btree.NewBTreeGOptions(func(a, b streamEntry) bool { return a.id.less(b.id) }, btree.Options{NoLocks: true})}
}

func (s *stream) Len() int { return s.entries.Len() }

func (s *stream) clone() collection {
	n := *s
	n.entries = s.entries.Copy()
	n.groups = cloneGroups(s.groups)
	return &n
}

func (s *stream) memUsage() int {
	n := 160
	for _, g := range s.groups {
		n += 128 + 64*g.pel.Len() + 96*len(g.consumers)
	}
	s.entries.Scan(func(e streamEntry) bool {
		n += 64 + 16*len(e.fields)
		for _, f := range e.fields {
			n += len(f)
		}
		return true
	})
	return n
}

// appendTo writes the counters (last, first, maxDeleted as pairs of uvarints, added),
// the entry count, then per entry in ID order its ID, its field count and its fields
// (len:uvarint bytes), then the consumer groups (appendGroups).
func (s *stream) appendTo(dst []byte) []byte {
	for _, id := range []streamID{s.last, s.first, s.maxDeleted} {
		dst = binary.AppendUvarint(dst, id.ms)
		dst = binary.AppendUvarint(dst, id.seq)
	}
	dst = binary.AppendUvarint(dst, s.added)
	dst = binary.AppendUvarint(dst, uint64(s.Len()))
	s.entries.Scan(func(e streamEntry) bool {
		dst = binary.AppendUvarint(dst, e.id.ms)
		dst = binary.AppendUvarint(dst, e.id.seq)
		dst = binary.AppendUvarint(dst, uint64(len(e.fields)))
		for _, f := range e.fields {
			dst = binary.AppendUvarint(dst, uint64(len(f)))
			dst = append(dst, f...)
		}
		return true
	})
	return appendGroups(dst, s)
}

// decodeStream rebuilds a stream from appendTo's bytes; it refuses what appendTo cannot
// produce: entries out of order or past the last ID, an odd or zero field count,
// truncated or trailing bytes.
func decodeStream(b []byte) (collection, error) {
	d := &decoder{b: b}
	s := newStream()
	for _, id := range []*streamID{&s.last, &s.first, &s.maxDeleted} {
		id.ms, id.seq = d.uvarint(math.MaxUint64), d.uvarint(math.MaxUint64)
	}
	s.added = d.uvarint(math.MaxUint64)
	n := d.uvarint(math.MaxUint64)
	if d.err != nil || n > uint64(len(d.b)) {
		return nil, ErrCorrupt
	}
	var prev streamID
	for i := uint64(0); i < n; i++ {
		e := streamEntry{id: streamID{d.uvarint(math.MaxUint64), d.uvarint(math.MaxUint64)}}
		nf := d.uvarint(math.MaxUint64)
		if d.err != nil || nf == 0 || nf%2 != 0 || nf > uint64(len(d.b)) || (i > 0 && !prev.less(e.id)) || s.last.less(e.id) {
			return nil, ErrCorrupt
		}
		e.fields = make([]string, nf)
		for j := range e.fields {
			e.fields[j] = string(d.bytes())
		}
		if d.err != nil {
			return nil, ErrCorrupt
		}
		s.entries.Load(e)
		prev = e.id
	}
	if !decodeGroups(d, s) || len(d.b) != 0 || uint64(s.Len()) > s.added {
		return nil, ErrCorrupt
	}
	return s, nil
}

// parseStreamUint is Redis's string2ull: a strict decimal long long that must not be
// negative, or else whatever strtoull makes of the text (leading spaces, a sign, a
// value past 2^63; "-" negates modulo 2^64), as long as it consumes all of it.
func parseStreamUint(b []byte) (uint64, bool) {
	if v, ok := ParseInt(b); ok {
		return uint64(v), v >= 0
	}
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] >= '\t' && b[i] <= '\r') {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	if i == len(b) {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		if b[i] < '0' || b[i] > '9' {
			return 0, false
		}
		d := uint64(b[i] - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false // ERANGE
		}
		v = v*10 + d
	}
	if neg {
		v = -v
	}
	return v, true
}

// parseStreamID parses <ms>[-<seq>] as Redis's streamGenericParseIDOrReply: a missing
// seq is missingSeq; "-" and "+" are the smallest and largest IDs unless strict; with
// seqAuto non-nil, "<ms>-*" is accepted and sets *seqAuto.
func parseStreamID(b []byte, missingSeq uint64, strict bool, seqAuto *bool) (streamID, bool) {
	if len(b) > 127 {
		return streamID{}, false
	}
	if len(b) == 1 && (b[0] == '-' || b[0] == '+') {
		if strict {
			return streamID{}, false
		}
		if b[0] == '-' {
			return streamID{}, true
		}
		return maxStreamID, true
	}
	msPart, seqPart, dash := b, []byte(nil), false
	for i, ch := range b {
		if ch == '-' {
			msPart, seqPart, dash = b[:i], b[i+1:], true
			break
		}
	}
	ms, ok := parseStreamUint(msPart)
	if !ok {
		return streamID{}, false
	}
	seq := missingSeq
	switch {
	case !dash:
	case seqAuto != nil && len(seqPart) == 1 && seqPart[0] == '*':
		seq, *seqAuto = 0, true
	default:
		if seq, ok = parseStreamUint(seqPart); !ok {
			return streamID{}, false
		}
	}
	return streamID{ms, seq}, true
}

// streamAt returns the stream at key; wrong: WRONGTYPE was replied.
func (c *Ctx) streamAt(key []byte) (it item, s *stream, wrong bool) {
	it, ok, wrong := c.lookupType(key, TypeStream)
	if !ok {
		return it, nil, wrong
	}
	return it, it.coll.(*stream), false
}

// existingStream is streamAt for the commands that refuse a missing key (XSETID, XINFO):
// false with WRONGTYPE or "no such key" replied.
func (c *Ctx) existingStream(key []byte) (item, *stream, bool) {
	it, s, wrong := c.streamAt(key)
	if s == nil && !wrong {
		c.Error(errNoSuchKey)
	}
	return it, s, s != nil
}

// trimArgs are XADD's and XTRIM's trimming options.
type trimArgs struct {
	strategy byte // 0, 'm' (MAXLEN), 'i' (MINID)
	maxlen   int64
	minid    streamID
	approx   bool
	limit    int64
}

// parseAddOrTrim parses XADD's (xadd) or XTRIM's options from args[2] on, as Redis's
// streamParseAddOrTrimArgsOrReply; for XADD it also parses the ID and returns its
// position. -1: an error was replied.
func (c *Ctx) parseAddOrTrim(args [][]byte, xadd bool, t *trimArgs, noMk *bool, id *streamID, idGiven, seqAuto *bool) int {
	i := 2
	limitGiven := false
	for ; i < len(args); i++ {
		more := len(args) - 1 - i
		opt := args[i]
		switch {
		case xadd && len(opt) == 1 && opt[0] == '*':
			goto parsed
		case (eq(opt, "maxlen") || eq(opt, "minid")) && more > 0:
			if t.strategy != 0 {
				c.Error("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
				return -1
			}
			t.approx = false
			next := args[i+1]
			if more >= 2 && len(next) == 1 && (next[0] == '~' || next[0] == '=') {
				t.approx = next[0] == '~'
				i++
			}
			if eq(opt, "maxlen") {
				v, ok := c.nonNegative(args[i+1], "ERR The MAXLEN argument must be >= 0.")
				if !ok {
					return -1
				}
				t.strategy, t.maxlen = 'm', v
			} else {
				v, ok := parseStreamID(args[i+1], 0, true, nil)
				if !ok {
					c.Error(errStreamID)
					return -1
				}
				t.strategy, t.minid = 'i', v
			}
			i++
		case eq(opt, "limit") && more > 0:
			v, ok := c.nonNegative(args[i+1], "ERR The LIMIT argument must be >= 0.")
			if !ok {
				return -1
			}
			t.limit, limitGiven = v, true
			i++
		case xadd && eq(opt, "nomkstream"):
			*noMk = true
		case xadd:
			v, ok := parseStreamID(opt, 0, true, seqAuto)
			if !ok {
				c.Error(errStreamID)
				return -1
			}
			*id, *idGiven = v, true
			goto parsed
		default:
			c.Error(ErrSyntax)
			return -1
		}
	}
parsed:
	if t.limit != 0 && t.strategy == 0 {
		c.Error("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
		return -1
	}
	if !xadd && t.strategy == 0 {
		c.Error("ERR syntax error, XTRIM must be called with a trimming strategy")
		return -1
	}
	if limitGiven && !t.approx {
		c.Error("ERR syntax error, LIMIT cannot be used without the special ~ option")
		return -1
	}
	if t.approx && !limitGiven {
		t.limit = 10000 // Redis: 100 * stream-node-max-entries
	}
	if !t.approx {
		t.limit = 0
	}
	return i
}

// nonNegative parses an integer argument that must not be negative; false with the
// error replied (errNeg for a negative one).
func (c *Ctx) nonNegative(b []byte, errNeg string) (int64, bool) {
	v, ok := ParseInt(b)
	switch {
	case !ok:
		c.Error(ErrNotInteger)
	case v < 0:
		c.Error(errNeg)
	}
	return v, ok && v >= 0
}

// trim removes entries from the head as t says and returns how many. Redis's "~" trims
// whole listpack nodes only; here it trims exactly, up to LIMIT entries (see README).
func (s *stream) trim(t *trimArgs) int64 {
	var n int64
	for s.Len() > 0 && (t.limit == 0 || n < t.limit) {
		e, _ := s.entries.Min()
		if t.strategy == 'm' && int64(s.Len()) <= t.maxlen || t.strategy == 'i' && !e.id.less(t.minid) {
			break
		}
		s.entries.PopMin()
		n++
	}
	if n > 0 {
		s.first = s.firstID()
	}
	return n
}

// firstID is the first entry's ID, 0-0 when the stream is empty.
func (s *stream) firstID() streamID {
	if e, ok := s.entries.Min(); ok {
		return e.id
	}
	return streamID{}
}

func xaddCmd(c *Ctx, args [][]byte) {
	var t trimArgs
	var noMk, idGiven, seqAuto bool
	var id streamID
	i := c.parseAddOrTrim(args, true, &t, &noMk, &id, &idGiven, &seqAuto)
	if i < 0 {
		return
	}
	fields := args[i+1:]
	if len(fields) < 2 || len(fields)%2 != 0 {
		c.Error(WrongArgs("xadd"))
		return
	}
	if idGiven && !seqAuto && id == (streamID{}) {
		c.Error(errStreamZero)
		return
	}
	it, s, wrong := c.streamAt(args[1])
	if wrong {
		return
	}
	if s == nil {
		if noMk {
			c.W.Null()
			return
		}
		s = newStream()
		it = item{typ: TypeStream, coll: s}
	}
	if s.last == maxStreamID {
		c.Error(errStreamExhausted)
		return
	}
	switch {
	case !idGiven:
		// Redis's streamNextID, with the entry's clock for mstime()
		if now := uint64(c.Now); now > s.last.ms {
			id = streamID{now, 0}
		} else {
			id, _ = s.last.incr()
		}
	case seqAuto:
		if id.ms == s.last.ms {
			if s.last.seq == math.MaxUint64 {
				c.Error(errStreamTop)
				return
			}
			id = streamID{id.ms, s.last.seq + 1}
		}
	}
	if !s.last.less(id) {
		c.Error(errStreamTop)
		return
	}
	e := streamEntry{id: id, fields: make([]string, len(fields))}
	for j, f := range fields {
		e.fields[j] = string(f)
	}
	s.entries.Set(e)
	s.last = id
	s.added++
	if s.Len() == 1 {
		s.first = id
	}
	c.W.BulkString(id.String())
	trimmed := int64(0)
	if t.strategy != 0 {
		trimmed = s.trim(&t)
	}
	c.store(args[1], it, true)
	c.notify(notifyStream, "xadd", args[1])
	if trimmed > 0 {
		c.notify(notifyStream, "xtrim", args[1])
	}
	if c.s.ready.n.Load() > 0 {
		c.s.keyReady(c.DB, args[1]) // XREAD BLOCK waits on streams that exist too
	}
}

func xlenCmd(c *Ctx, args [][]byte) {
	_, s, wrong := c.streamAt(args[1])
	switch {
	case wrong:
	case s == nil:
		c.W.Int(0)
	default:
		c.W.Int(int64(s.Len()))
	}
}

// parseInterval parses an XRANGE bound: "(" before an ID excludes it.
func parseInterval(b []byte, missingSeq uint64) (id streamID, exclusive, ok bool) {
	if len(b) > 1 && b[0] == '(' {
		id, ok = parseStreamID(b[1:], missingSeq, true, nil)
		return id, true, ok
	}
	id, ok = parseStreamID(b, missingSeq, false, nil)
	return id, false, ok
}

func xrangeCmd(rev bool) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		startArg, endArg := args[2], args[3]
		if rev {
			startArg, endArg = endArg, startArg
		}
		// Redis parses and steps each bound in turn: the start's errors come first
		start, startEx, ok := parseInterval(startArg, 0)
		if !ok {
			c.Error(errStreamID)
			return
		}
		if startEx {
			if start, ok = start.incr(); !ok {
				c.Error("ERR invalid start ID for the interval")
				return
			}
		}
		end, endEx, ok := parseInterval(endArg, math.MaxUint64)
		if !ok {
			c.Error(errStreamID)
			return
		}
		if endEx {
			if end, ok = end.decr(); !ok {
				c.Error("ERR invalid end ID for the interval")
				return
			}
		}
		count := int64(-1)
		for j := 4; j < len(args); j++ {
			if eq(args[j], "count") && j+1 < len(args) {
				v, ok := ParseInt(args[j+1])
				if !ok {
					c.Error(ErrNotInteger)
					return
				}
				count = max(v, 0)
				j++
				continue
			}
			c.Error(ErrSyntax)
			return
		}
		_, s, wrong := c.streamAt(args[1])
		switch {
		case wrong:
		case s == nil:
			c.W.Array(0)
		case count == 0:
			c.W.NullArray()
		default:
			c.streamRange(s, start, end, max(count, 0), rev)
		}
	}
}

// streamRange replies the entries with IDs in [start, end], at most count (0: all),
// descending with rev.
func (c *Ctx) streamRange(s *stream, start, end streamID, count int64, rev bool) {
	var out []streamEntry
	in := func(e streamEntry) bool {
		if count > 0 && int64(len(out)) >= count {
			return false
		}
		out = append(out, e)
		return true
	}
	if !end.less(start) {
		if rev {
			s.entries.Descend(streamEntry{id: end}, func(e streamEntry) bool { return !e.id.less(start) && in(e) })
		} else {
			s.entries.Ascend(streamEntry{id: start}, func(e streamEntry) bool { return !end.less(e.id) && in(e) })
		}
	}
	c.W.Array(len(out))
	for _, e := range out {
		c.writeEntry(e)
	}
}

func (c *Ctx) writeEntry(e streamEntry) {
	c.W.Array(2)
	c.W.BulkString(e.id.String())
	c.W.Array(len(e.fields))
	for _, f := range e.fields {
		c.W.BulkString(f)
	}
}

func xdelCmd(c *Ctx, args [][]byte) {
	// the key first (missing: 0, whatever the IDs), then every ID before any deletion
	it, s, wrong := c.streamAt(args[1])
	if wrong {
		return
	}
	ids := make([]streamID, len(args)-2)
	for i, a := range args[2:] {
		id, ok := parseStreamID(a, 0, true, nil)
		if !ok && s != nil {
			c.Error(errStreamID)
			return
		}
		ids[i] = id
	}
	n := 0
	if s != nil {
		for _, id := range ids {
			if _, ok := s.entries.Delete(streamEntry{id: id}); !ok {
				continue
			}
			n++
			if s.maxDeleted.less(id) {
				s.maxDeleted = id
			}
			if id == s.first {
				s.first = s.firstID()
			}
		}
		if n > 0 {
			c.store(args[1], it, true)
			c.notify(notifyStream, "xdel", args[1])
		}
	}
	c.W.Int(int64(n))
}

func xtrimCmd(c *Ctx, args [][]byte) {
	var t trimArgs
	i := c.parseAddOrTrim(args, false, &t, nil, nil, nil, nil)
	if i < 0 {
		return
	}
	it, s, wrong := c.streamAt(args[1])
	switch {
	case wrong:
		return
	case s == nil:
		c.W.Int(0)
		return
	}
	n := s.trim(&t)
	if n > 0 {
		c.store(args[1], it, true)
		c.notify(notifyStream, "xtrim", args[1])
	}
	c.W.Int(n)
}

func xsetidCmd(c *Ctx, args [][]byte) {
	id, ok := parseStreamID(args[2], 0, true, nil)
	if !ok {
		c.Error(errStreamID)
		return
	}
	added := int64(-1)
	var maxDel streamID
	for i := 3; i < len(args); i += 2 {
		more := len(args) - 1 - i
		switch {
		case eq(args[i], "entriesadded") && more > 0:
			v, ok := ParseInt(args[i+1])
			if !ok {
				c.Error(ErrNotInteger)
				return
			}
			if v < 0 {
				c.Error("ERR entries_added must be positive")
				return
			}
			added = v
		case eq(args[i], "maxdeletedid") && more > 0:
			v, ok := parseStreamID(args[i+1], 0, true, nil)
			if !ok {
				c.Error(errStreamID)
				return
			}
			if id.less(v) {
				c.Error("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
				return
			}
			maxDel = v
		default:
			c.Error(ErrSyntax)
			return
		}
	}
	it, s, ok := c.existingStream(args[1])
	if !ok {
		return
	}
	if s.Len() > 0 {
		top, _ := s.entries.Max()
		if id.less(top.id) {
			c.Error("ERR The ID specified in XSETID is smaller than the target stream top item")
			return
		}
		if added != -1 && int64(s.Len()) > added {
			c.Error("ERR The entries_added specified in XSETID is smaller than the target stream length")
			return
		}
	}
	s.last = id
	if added != -1 {
		s.added = uint64(added)
	}
	if maxDel != (streamID{}) {
		s.maxDeleted = maxDel
	}
	c.store(args[1], it, true)
	c.notify(notifyStream, "xsetid", args[1])
	c.W.Status("OK")
}

// XReadArgs is what an XREAD call asks: the streams, the IDs after which to read, and
// BLOCK's timeout (-1: none). The frontend's wait uses it.
type XReadArgs struct {
	Count     int64
	BlockMS   int64
	Keys, IDs [][]byte
	// XREADGROUP's
	Group, Consumer []byte
	NoAck           bool
}

// ParseXRead parses XREAD's options as Redis does, stopping at STREAMS; errMsg is the
// reply for a malformed call.
func ParseXRead(args [][]byte) (a XReadArgs, errMsg string) {
	group := eq(args[0], "xreadgroup")
	a.BlockMS = -1
	streams := 0
	for i := 1; i < len(args) && streams == 0; i++ {
		more := len(args) - 1 - i
		switch {
		case eq(args[i], "block") && more > 0:
			i++
			v, ok := ParseInt(args[i])
			if !ok {
				return a, "ERR timeout is not an integer or out of range"
			}
			if v < 0 {
				return a, errTimeoutNegative
			}
			a.BlockMS = v
		case eq(args[i], "count") && more > 0:
			i++
			v, ok := ParseInt(args[i])
			if !ok {
				return a, ErrNotInteger
			}
			a.Count = max(v, 0)
		case eq(args[i], "streams") && more > 0:
			streams = i + 1
		case eq(args[i], "group") && more >= 2:
			if !group {
				return a, "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
			}
			a.Group, a.Consumer = args[i+1], args[i+2]
			i += 2
		case eq(args[i], "noack"):
			if !group {
				return a, "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."
			}
			a.NoAck = true
		default:
			return a, ErrSyntax
		}
	}
	if streams == 0 {
		return a, ErrSyntax
	}
	n := len(args) - streams
	if n%2 != 0 {
		if group {
			return a, "ERR Unbalanced XREADGROUP list of streams: for each stream key an ID or '>' must be specified."
		}
		return a, "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
	}
	if group && a.Group == nil {
		return a, "ERR Missing GROUP option for XREADGROUP"
	}
	a.Keys, a.IDs = args[streams:streams+n/2], args[streams+n/2:]
	return a, ""
}

// xreadKeys is MoreKeys for XREAD and XREADGROUP: the keys after STREAMS (none for a
// call the command refuses before it reads a key).
func xreadKeys(args [][]byte) [][]byte {
	a, _ := ParseXRead(args)
	return a.Keys
}

// newEntries marks an XREADGROUP ">" ID (Redis uses the largest ID for it too).
var newEntries = maxStreamID

func xreadCmd(c *Ctx, args [][]byte) {
	a, msg := ParseXRead(args)
	if msg != "" {
		c.Error(msg)
		return
	}
	grouped := a.Group != nil
	if _, inScript := c.W.(*luaWriter); inScript && a.BlockMS >= 0 {
		c.Error("ERR " + strings.ToLower(string(args[0])) + " command is not allowed with BLOCK option from scripts")
		return
	}
	after := make([]streamID, len(a.Keys))
	groups := make([]*streamGroup, len(a.Keys))
	for i, key := range a.Keys {
		_, s, wrong := c.streamAt(key)
		if wrong {
			return
		}
		if grouped {
			if s != nil {
				groups[i] = s.groups[string(a.Group)]
			}
			if groups[i] == nil {
				c.Error("NOGROUP No such key '" + string(key) + "' or consumer group '" + string(a.Group) + "' in XREADGROUP with GROUP option")
				return
			}
		}
		switch id := a.IDs[i]; {
		case len(id) == 1 && id[0] == '$':
			if grouped {
				c.Error("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
				return
			}
			if s != nil {
				after[i] = s.last
			}
		case len(id) == 1 && id[0] == '>':
			if !grouped {
				c.Error("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
				return
			}
			after[i] = newEntries
		default:
			v, ok := parseStreamID(id, 0, true, nil)
			if !ok {
				c.Error(errStreamID)
				return
			}
			after[i] = v
		}
	}
	type serve struct {
		key     []byte
		s       *stream
		from    streamID
		history bool
	}
	var out []serve
	for i, key := range a.Keys {
		_, s, _ := c.streamAt(key)
		if s == nil {
			continue
		}
		top, nonEmpty := s.entries.Max()
		switch {
		case grouped && after[i] != newEntries:
			out = append(out, serve{key: key, s: s, from: after[i], history: true})
		case grouped:
			if nonEmpty && groups[i].last.less(top.id) {
				out = append(out, serve{key: key, s: s})
			}
		case nonEmpty && after[i].less(top.id):
			from, _ := after[i].incr()
			out = append(out, serve{key: key, s: s, from: from})
		}
	}
	if len(out) == 0 {
		c.W.NullArray()
		return
	}
	if c.W.Resp3() {
		c.W.Map(len(out))
	} else {
		c.W.Array(len(out))
	}
	for _, f := range out {
		if !c.W.Resp3() {
			c.W.Array(2)
		}
		c.W.Bulk(f.key)
		if !grouped {
			c.streamRange(f.s, f.from, maxStreamID, a.Count, false)
			continue
		}
		g := f.s.groups[string(a.Group)]
		cn := c.consumerAt(f.key, g, string(a.Consumer), c.Now)
		if f.history {
			from, _ := f.from.incr()
			c.deliverHistory(f.s, cn, from, a.Count)
		} else {
			c.deliver(f.s, g, cn, a.Count, a.NoAck)
		}
	}
}

// XReadResolve rewrites the "$" IDs of an XREAD call to the streams' last IDs now, for a
// client about to wait: each attempt after the wait must read after the IDs of the
// first, not after what was added meanwhile.
func (s *Store) XReadResolve(db int, now int64, a XReadArgs) {
	c := &Ctx{s: s, DB: db, Now: now, W: discard{}}
	l := lockSet{all: true}
	s.lock(&l)
	defer s.unlock(&l)
	for i, key := range a.Keys {
		if len(a.IDs[i]) != 1 || a.IDs[i][0] != '$' {
			continue
		}
		last := streamID{}
		if _, st, _ := c.streamAt(key); st != nil {
			last = st.last
		}
		a.IDs[i] = []byte(last.String())
	}
}

// xinfoArity is the arity of each XINFO subcommand, Redis-style (XINFO and the
// subcommand included).
var xinfoArity = map[string]int{"stream": -3, "groups": 3, "consumers": 4, "help": 2}

func xinfoCmd(c *Ctx, args [][]byte) {
	sub, msg := CheckSubcommand(args, "xinfo", xinfoArity)
	if msg != "" {
		c.Error(msg)
		return
	}
	if sub == "help" {
		lines := []string{
			"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"CONSUMERS <key> <groupname>",
			"    Show consumers of <groupname>.",
			"GROUPS <key>",
			"    Show the stream consumer groups.",
			"STREAM <key> [FULL [COUNT <count>]",
			"    Show information about the stream.",
			"HELP",
			"    Prints this help.",
		}
		c.statusLines(lines)
		return
	}
	// the key first, for every subcommand but HELP, then STREAM's options
	_, s, ok := c.existingStream(args[2])
	if !ok {
		return
	}
	full, count := false, int64(10)
	if sub == "stream" && len(args) > 3 {
		switch {
		case len(args) == 4 && eq(args[3], "full"):
			full = true
		case len(args) == 6 && eq(args[3], "full") && eq(args[4], "count"):
			v, ok := ParseInt(args[5])
			if !ok {
				c.Error(ErrNotInteger)
				return
			}
			full, count = true, v
			if count < 0 {
				count = 10
			}
		default:
			c.Error("ERR unknown subcommand or wrong number of arguments for 'stream'. Try XINFO HELP.")
			return
		}
	}
	switch {
	case sub == "stream":
		c.xinfoStream(s, full, count)
	case sub == "groups":
		c.xinfoGroups(s)
	case s.groups[string(args[3])] == nil:
		c.Error("NOGROUP No such consumer group '" + string(args[3]) + "' for key name '" + string(args[2]) + "'")
	default:
		c.xinfoConsumers(s.groups[string(args[3])])
	}
}

// xinfoStream replies XINFO STREAM [FULL [COUNT count]]. radix-tree-keys and
// radix-tree-nodes describe Redis's own layout (listpacks of up to 100 entries in a
// radix tree); the figures here are what that layout holds for a stream whose entries
// were added in order and are small.
func (c *Ctx) xinfoStream(s *stream, full bool, count int64) {
	if full {
		c.W.Map(9)
	} else {
		c.W.Map(10)
	}
	c.W.BulkString("length")
	c.W.Int(int64(s.Len()))
	keys := int64((s.Len() + 99) / 100)
	c.W.BulkString("radix-tree-keys")
	c.W.Int(keys)
	c.W.BulkString("radix-tree-nodes")
	c.W.Int(keys + 1)
	c.W.BulkString("last-generated-id")
	c.W.BulkString(s.last.String())
	c.W.BulkString("max-deleted-entry-id")
	c.W.BulkString(s.maxDeleted.String())
	c.W.BulkString("entries-added")
	c.W.Int(int64(s.added))
	c.W.BulkString("recorded-first-entry-id")
	c.W.BulkString(s.first.String())
	if full {
		c.W.BulkString("entries")
		c.streamRange(s, streamID{}, maxStreamID, count, false)
		c.W.BulkString("groups")
		c.xinfoFullGroups(s, count)
		return
	}
	c.W.BulkString("groups")
	c.W.Int(int64(len(s.groups)))
	for _, which := range []string{"first-entry", "last-entry"} {
		c.W.BulkString(which)
		var e streamEntry
		var ok bool
		if which == "first-entry" {
			e, ok = s.entries.Min()
		} else {
			e, ok = s.entries.Max()
		}
		if ok {
			c.writeEntry(e)
		} else {
			c.W.Null()
		}
	}
}
