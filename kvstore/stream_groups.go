package kvstore

import (
	"encoding/binary"
	"math"
	"slices"
	"strconv"

	"github.com/tidwall/btree"
)

// Stream consumer groups (Redis 7.0 t_stream.c): XGROUP XREADGROUP XACK XPENDING XCLAIM
// XAUTOCLAIM, and the groups' part of XINFO.
//
// A group has its last delivered ID, its entries-read counter (-1: unknown), its pending
// entries list (PEL: for each delivered and unacknowledged ID, its consumer, last
// delivery time and delivery count) and its consumers, each with its own PEL, a subset
// of the group's. Delivery and seen times come from the log entry's clock, so every
// replica records the same; an idle time a read reports is the reader's clock minus
// them. Groups and consumers are listed by name, as Redis's radix trees order them.

func init() {
	const (
		w  = FlagWrite | FlagDenyOOM
		wf = FlagWrite | FlagFast
	)
	register(
		&Spec{Name: "xgroup", Arity: -2, Flags: w, FirstKey: 2, LastKey: 2, Step: 1, Group: "stream", Since: "5.0.0", Summary: "A container for consumer groups commands", Run: xgroupCmd, Subcommands: xgroupArity},
		&Spec{Name: "xreadgroup", Arity: -7, Flags: FlagWrite | FlagBlocking | FlagReadLookups, Group: "stream", Since: "5.0.0", Summary: "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block.", Run: xreadCmd, MoreKeys: xreadKeys},
		&Spec{Name: "xack", Arity: -4, Flags: wf | FlagReadLookups, FirstKey: 1, LastKey: 1, Step: 1, Group: "stream", Since: "5.0.0", Summary: "Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL.", Run: xackCmd},
		&Spec{Name: "xpending", Arity: -3, Flags: FlagReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "stream", Since: "5.0.0", Summary: "Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged.", Run: xpendingCmd},
		&Spec{Name: "xclaim", Arity: -6, Flags: wf | FlagReadLookups, FirstKey: 1, LastKey: 1, Step: 1, Group: "stream", Since: "5.0.0", Summary: "Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer.", Run: xclaimCmd},
		&Spec{Name: "xautoclaim", Arity: -6, Flags: wf, FirstKey: 1, LastKey: 1, Step: 1, Group: "stream", Since: "6.2.0", Summary: "Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer.", Run: xautoclaimCmd},
	)
}

// invalidEntriesRead is Redis's SCG_INVALID_ENTRIES_READ: the group's count is unknown.
const invalidEntriesRead = -1

// nack is a pending entry: delivered to a consumer, not yet acknowledged.
type nack struct {
	consumer *consumer // nil only while XCLAIM FORCE creates it
	time     int64     // last delivery, unix ms
	count    uint64    // deliveries
}

type pelEntry struct {
	id streamID
	n  *nack
}

func pelLess(a, b pelEntry) bool { return a.id.less(b.id) }

func newPEL() *btree.BTreeG[pelEntry] {
	return btree.NewBTreeGOptions(pelLess, btree.Options{NoLocks: true})
}

type consumer struct {
	name string
	seen int64 // last interaction, unix ms
	pel  *btree.BTreeG[pelEntry]
}

type streamGroup struct {
	name        string
	last        streamID // last-delivered-id
	entriesRead int64
	pel         *btree.BTreeG[pelEntry]
	consumers   map[string]*consumer
}

func (g *streamGroup) consumerNames() []string {
	names := make([]string, 0, len(g.consumers))
	for n := range g.consumers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// lookupConsumer finds a consumer; refresh marks it seen at now (Redis's SLC_DEFAULT).
func (g *streamGroup) lookupConsumer(name string, refresh bool, now int64) *consumer {
	cn := g.consumers[name]
	if cn != nil && refresh {
		cn.seen = now
	}
	return cn
}

func (g *streamGroup) createConsumer(name string, now int64) *consumer {
	cn := &consumer{name: name, seen: now, pel: newPEL()}
	g.consumers[name] = cn
	return cn
}

// consumerAt finds or creates a consumer of the group g of the stream at key, marking it
// seen. A consumer created is announced, as Redis's streamCreateConsumer does.
func (c *Ctx) consumerAt(key []byte, g *streamGroup, name string, now int64) *consumer {
	if cn := g.lookupConsumer(name, true, now); cn != nil {
		return cn
	}
	cn := g.createConsumer(name, now)
	c.notify(notifyStream, "xgroup-createconsumer", key)
	return cn
}

// deleteConsumer drops a consumer and its pending entries from the group's PEL.
func (g *streamGroup) deleteConsumer(cn *consumer) {
	cn.pel.Scan(func(e pelEntry) bool {
		g.pel.Delete(e)
		return true
	})
	delete(g.consumers, cn.name)
}

func (s *stream) groupNames() []string {
	names := make([]string, 0, len(s.groups))
	for n := range s.groups {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// cloneGroups deep-copies the groups (COPY): the PEL entries are shared by a group and
// its consumers, so each is copied once.
func cloneGroups(groups map[string]*streamGroup) map[string]*streamGroup {
	if groups == nil {
		return nil
	}
	out := make(map[string]*streamGroup, len(groups))
	for name, g := range groups {
		ng := &streamGroup{name: name, last: g.last, entriesRead: g.entriesRead, pel: newPEL(), consumers: map[string]*consumer{}}
		for cname, cn := range g.consumers {
			ng.consumers[cname] = &consumer{name: cname, seen: cn.seen, pel: newPEL()}
		}
		g.pel.Scan(func(e pelEntry) bool {
			n := &nack{time: e.n.time, count: e.n.count}
			if e.n.consumer != nil {
				n.consumer = ng.consumers[e.n.consumer.name]
				n.consumer.pel.Load(pelEntry{e.id, n})
			}
			ng.pel.Load(pelEntry{e.id, n})
			return true
		})
		out[name] = ng
	}
	return out
}

// appendGroups writes the groups, by name: name, last ID, entries-read (zigzag), the
// consumers by name (name, seen time), then the PEL in ID order (ID, consumer name,
// delivery time, count).
func appendGroups(dst []byte, s *stream) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s.groups)))
	for _, name := range s.groupNames() {
		g := s.groups[name]
		dst = appendString(dst, name)
		dst = binary.AppendUvarint(dst, g.last.ms)
		dst = binary.AppendUvarint(dst, g.last.seq)
		dst = binary.AppendVarint(dst, g.entriesRead)
		cnames := g.consumerNames()
		dst = binary.AppendUvarint(dst, uint64(len(cnames)))
		for _, cname := range cnames {
			dst = appendString(dst, cname)
			dst = binary.AppendVarint(dst, g.consumers[cname].seen)
		}
		dst = binary.AppendUvarint(dst, uint64(g.pel.Len()))
		g.pel.Scan(func(e pelEntry) bool {
			dst = binary.AppendUvarint(dst, e.id.ms)
			dst = binary.AppendUvarint(dst, e.id.seq)
			dst = appendString(dst, e.n.consumer.name)
			dst = binary.AppendVarint(dst, e.n.time)
			dst = binary.AppendUvarint(dst, e.n.count)
			return true
		})
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// decodeGroups reads appendGroups' bytes into s; false on anything it cannot produce.
func decodeGroups(d *decoder, s *stream) bool {
	n := d.uvarint(math.MaxUint64)
	if d.err != nil || n > uint64(len(d.b)) {
		return false
	}
	prevName := ""
	for i := uint64(0); i < n; i++ {
		g := &streamGroup{name: string(d.bytes()), pel: newPEL(), consumers: map[string]*consumer{}}
		g.last = streamID{d.uvarint(math.MaxUint64), d.uvarint(math.MaxUint64)}
		g.entriesRead = d.varint(math.MinInt64, math.MaxInt64)
		if d.err != nil || (i > 0 && g.name <= prevName) || g.entriesRead < invalidEntriesRead {
			return false
		}
		prevName = g.name
		nc := d.uvarint(math.MaxUint64)
		if d.err != nil || nc > uint64(len(d.b)) {
			return false
		}
		prevC := ""
		for j := uint64(0); j < nc; j++ {
			cname := string(d.bytes())
			seen := d.varint(math.MinInt64, math.MaxInt64)
			if d.err != nil || (j > 0 && cname <= prevC) {
				return false
			}
			prevC = cname
			g.createConsumer(cname, seen)
		}
		np := d.uvarint(math.MaxUint64)
		if d.err != nil || np > uint64(len(d.b)) {
			return false
		}
		var prev streamID
		for j := uint64(0); j < np; j++ {
			id := streamID{d.uvarint(math.MaxUint64), d.uvarint(math.MaxUint64)}
			cn := g.consumers[string(d.bytes())]
			e := pelEntry{id, &nack{consumer: cn, time: d.varint(math.MinInt64, math.MaxInt64), count: d.uvarint(math.MaxUint64)}}
			if d.err != nil || cn == nil || (j > 0 && !prev.less(id)) {
				return false
			}
			prev = id
			g.pel.Load(e)
			cn.pel.Set(e)
		}
		if s.groups == nil {
			s.groups = map[string]*streamGroup{}
		}
		s.groups[g.name] = g
	}
	return true
}

// hasTombstones is Redis's streamRangeHasTombstones: whether an entry XDEL removed may
// lie in [start, end].
func (s *stream) hasTombstones(start, end streamID) bool {
	if s.Len() == 0 || s.maxDeleted == (streamID{}) || s.maxDeleted.less(s.first) {
		return false
	}
	return !s.maxDeleted.less(start) && !end.less(s.maxDeleted)
}

// distanceFromFirstEver is Redis's streamEstimateDistanceFromFirstEverEntry: how many
// entries were added up to id, or invalidEntriesRead where deletions make it unknown.
func (s *stream) distanceFromFirstEver(id streamID) int64 {
	if s.added == 0 {
		return 0
	}
	if s.Len() == 0 && !s.last.less(id) {
		return int64(s.added)
	}
	switch {
	case id == s.last:
		return int64(s.added)
	case s.last.less(id):
		return invalidEntriesRead
	}
	if s.maxDeleted == (streamID{}) || s.maxDeleted.less(s.first) {
		switch {
		case id.less(s.first):
			return int64(s.added) - int64(s.Len())
		case id == s.first:
			return int64(s.added) - int64(s.Len()) + 1
		}
	}
	return invalidEntriesRead
}

// lag is XINFO's lag of a group: entries not yet delivered to it; false: unknown (null).
func (s *stream) lag(g *streamGroup) (int64, bool) {
	switch {
	case s.added == 0:
		return 0, true
	case g.entriesRead != invalidEntriesRead && !s.hasTombstones(g.last, maxStreamID):
		return int64(s.added) - g.entriesRead, true
	}
	if read := s.distanceFromFirstEver(g.last); read != invalidEntriesRead {
		return int64(s.added) - read, true
	}
	return 0, false
}

func (c *Ctx) writeLag(s *stream, g *streamGroup) {
	if lag, ok := s.lag(g); ok {
		c.W.Int(lag)
	} else {
		c.W.Null()
	}
}

func (c *Ctx) writeEntriesRead(g *streamGroup) {
	if g.entriesRead == invalidEntriesRead {
		c.W.Null()
	} else {
		c.W.Int(g.entriesRead)
	}
}

// xgroupArity is the arity of each XGROUP subcommand, Redis-style.
var xgroupArity = map[string]int{"create": -5, "setid": -5, "destroy": 4, "createconsumer": 5, "delconsumer": 5, "help": 2}

func xgroupCmd(c *Ctx, args [][]byte) {
	sub, msg := CheckSubcommand(args, "xgroup", xgroupArity)
	if msg != "" {
		c.Error(msg)
		return
	}
	syntax := func() {
		c.Error("ERR unknown subcommand or wrong number of arguments for '" + string(args[1]) + "'. Try XGROUP HELP.")
	}
	if sub == "help" {
		lines := []string{
			"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"CREATE <key> <groupname> <id|$> [option]",
			"    Create a new consumer group. Options are:",
			"    * MKSTREAM",
			"      Create the empty stream if it does not exist.",
			"    * ENTRIESREAD entries_read",
			"      Set the group's entries_read counter (internal use).",
			"CREATECONSUMER <key> <groupname> <consumer>",
			"    Create a new consumer in the specified group.",
			"DELCONSUMER <key> <groupname> <consumer>",
			"    Remove the specified consumer.",
			"DESTROY <key> <groupname>",
			"    Remove the specified group.",
			"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
			"    Set the current group ID and entries_read counter.",
			"HELP",
			"    Prints this help.",
		}
		c.statusLines(lines)
		return
	}
	mkstream, entriesRead := false, int64(invalidEntriesRead)
	parseEntriesRead := func(b []byte) bool {
		v, ok := ParseInt(b)
		if !ok {
			c.Error(ErrNotInteger)
			return false
		}
		if v < 0 && v != invalidEntriesRead {
			c.Error("ERR value for ENTRIESREAD must be positive or -1")
			return false
		}
		entriesRead = v
		return true
	}
	switch sub {
	case "create":
		if len(args) > 8 {
			syntax()
			return
		}
		for i := 5; i < len(args); {
			switch {
			case eq(args[i], "mkstream"):
				mkstream = true
				i++
			case eq(args[i], "entriesread") && i+1 < len(args):
				if !parseEntriesRead(args[i+1]) {
					return
				}
				i += 2
			default:
				syntax()
				return
			}
		}
	case "setid":
		switch {
		case len(args) == 7 && eq(args[5], "entriesread"):
			if !parseEntriesRead(args[6]) {
				return
			}
		case len(args) != 5:
			syntax()
			return
		}
	}
	// Only MKSTREAM's new key counts as a change for WATCH, as in Redis: a group's state
	// changes in place.
	key, gname := args[2], string(args[3])
	_, s, wrong := c.streamAt(key)
	if wrong {
		return
	}
	var g *streamGroup
	if !mkstream {
		if s == nil {
			c.Error("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.")
			return
		}
		g = s.groups[gname]
		if g == nil && (sub == "setid" || sub == "createconsumer" || sub == "delconsumer") {
			c.Error("NOGROUP No such consumer group '" + gname + "' for key name '" + string(key) + "'")
			return
		}
	}
	switch sub {
	case "create":
		var id streamID
		if string(args[4]) == "$" {
			if s != nil {
				id = s.last
			}
		} else {
			v, ok := parseStreamID(args[4], 0, true, nil)
			if !ok {
				c.Error(errStreamID)
				return
			}
			id = v
		}
		if s == nil { // MKSTREAM
			s = newStream()
			c.store(key, item{typ: TypeStream, coll: s}, false)
		}
		if s.groups[gname] != nil {
			c.Error("BUSYGROUP Consumer Group name already exists")
			return
		}
		if s.groups == nil {
			s.groups = map[string]*streamGroup{}
		}
		s.groups[gname] = &streamGroup{name: gname, last: id, entriesRead: entriesRead, pel: newPEL(), consumers: map[string]*consumer{}}
		c.notify(notifyStream, "xgroup-create", key)
		c.W.Status("OK")
	case "setid":
		id := s.last
		if string(args[4]) != "$" {
			v, ok := parseStreamID(args[4], 0, false, nil)
			if !ok {
				c.Error(errStreamID)
				return
			}
			id = v
		}
		g.last, g.entriesRead = id, entriesRead
		c.notify(notifyStream, "xgroup-setid", key)
		c.W.Status("OK")
	case "destroy":
		if g == nil {
			c.W.Int(0)
			return
		}
		delete(s.groups, gname)
		c.notify(notifyStream, "xgroup-destroy", key)
		c.W.Int(1)
	case "createconsumer":
		if g.lookupConsumer(string(args[4]), false, 0) != nil {
			c.W.Int(0)
			return
		}
		g.createConsumer(string(args[4]), c.Now)
		c.notify(notifyStream, "xgroup-createconsumer", key)
		c.W.Int(1)
	case "delconsumer":
		cn := g.lookupConsumer(string(args[4]), false, 0)
		if cn == nil {
			c.W.Int(0)
			return
		}
		pending := cn.pel.Len()
		g.deleteConsumer(cn)
		c.notify(notifyStream, "xgroup-delconsumer", key)
		c.W.Int(int64(pending))
	}
}

// groupAt finds a stream's group for the commands that need both: WRONGTYPE is replied;
// a missing key or group leaves g nil, with nothing replied.
func (c *Ctx) groupAt(key []byte, group string) (s *stream, g *streamGroup, wrong bool) {
	_, s, wrong = c.streamAt(key)
	if s != nil {
		g = s.groups[group]
	}
	return s, g, wrong
}

func noGroup(key []byte, group string) string {
	return "NOGROUP No such key '" + string(key) + "' or consumer group '" + group + "'"
}

// deliver is streamReplyWithRange for a group reading new entries (">"): the entries
// after the group's last ID, each added to the group's and the consumer's PEL (unless
// noack), the group's last ID and entries-read advanced.
func (c *Ctx) deliver(s *stream, g *streamGroup, cn *consumer, count int64, noack bool) {
	from, _ := g.last.incr()
	out := ascendN(s.entries, streamEntry{id: from}, count)
	c.W.Array(len(out))
	for _, e := range out {
		if g.last.less(e.id) {
			if g.entriesRead != invalidEntriesRead && !s.hasTombstones(e.id, maxStreamID) {
				g.entriesRead++
			} else if s.added != 0 {
				g.entriesRead = s.distanceFromFirstEver(e.id)
			}
			g.last = e.id
		}
		c.writeEntry(e)
		if noack {
			continue
		}
		if old, ok := g.pel.Get(pelEntry{id: e.id}); ok {
			// delivered before (the group's ID was set back): now this consumer's
			old.n.consumer.pel.Delete(old)
			old.n.consumer, old.n.time, old.n.count = cn, c.Now, 1
			cn.pel.Set(old)
			continue
		}
		p := pelEntry{e.id, &nack{consumer: cn, time: c.Now, count: 1}}
		g.pel.Set(p)
		cn.pel.Set(p)
	}
}

// deliverHistory is streamReplyWithRangeFromConsumerPEL: the consumer's pending entries
// from start on, each delivered once more; an entry deleted meanwhile comes as its ID
// with a nil.
func (c *Ctx) deliverHistory(s *stream, cn *consumer, start streamID, count int64) {
	out := ascendN(cn.pel, pelEntry{id: start}, count)
	c.W.Array(len(out))
	for _, p := range out {
		if e, ok := s.entries.Get(streamEntry{id: p.id}); ok {
			c.writeEntry(e)
		} else {
			c.W.Array(2)
			c.W.BulkString(p.id.String())
			c.W.NullArray()
		}
		p.n.time = c.Now
		p.n.count++
	}
}

func xackCmd(c *Ctx, args [][]byte) {
	_, g, wrong := c.groupAt(args[1], string(args[2]))
	switch {
	case wrong:
		return
	case g == nil:
		c.W.Int(0)
		return
	}
	ids := make([]streamID, len(args)-3)
	for i, a := range args[3:] {
		id, ok := parseStreamID(a, 0, true, nil)
		if !ok {
			c.Error(errStreamID)
			return
		}
		ids[i] = id
	}
	n := 0
	for _, id := range ids {
		p, ok := g.pel.Delete(pelEntry{id: id})
		if !ok {
			continue
		}
		p.n.consumer.pel.Delete(p)
		n++
	}
	c.W.Int(int64(n))
}

func xpendingCmd(c *Ctx, args [][]byte) {
	if len(args) != 3 && (len(args) < 6 || len(args) > 9) {
		c.Error(ErrSyntax)
		return
	}
	var minIdle, count int64
	var start, end streamID
	var consumerName []byte
	if len(args) >= 6 {
		i := 3
		if eq(args[3], "idle") {
			v, ok := ParseInt(args[4])
			if !ok {
				c.Error(ErrNotInteger)
				return
			}
			minIdle = v
			if len(args) < 8 {
				c.Error(ErrSyntax)
				return
			}
			i += 2
		}
		v, ok := ParseInt(args[i+2])
		if !ok {
			c.Error(ErrNotInteger)
			return
		}
		count = max(v, 0)
		var ex bool
		if start, ex, ok = parseInterval(args[i], 0); !ok {
			c.Error(errStreamID)
			return
		}
		if ex {
			if start, ok = start.incr(); !ok {
				c.Error("ERR invalid start ID for the interval")
				return
			}
		}
		if end, ex, ok = parseInterval(args[i+1], math.MaxUint64); !ok {
			c.Error(errStreamID)
			return
		}
		if ex {
			if end, ok = end.decr(); !ok {
				c.Error("ERR invalid end ID for the interval")
				return
			}
		}
		if i+3 < len(args) {
			consumerName = args[i+3]
		}
	}
	_, g, wrong := c.groupAt(args[1], string(args[2]))
	switch {
	case wrong:
		return
	case g == nil:
		c.Error(noGroup(args[1], string(args[2])))
		return
	}
	if len(args) == 3 {
		c.W.Array(4)
		c.W.Int(int64(g.pel.Len()))
		if g.pel.Len() == 0 {
			c.W.Null()
			c.W.Null()
			c.W.NullArray()
			return
		}
		first, _ := g.pel.Min()
		last, _ := g.pel.Max()
		c.W.BulkString(first.id.String())
		c.W.BulkString(last.id.String())
		var names []string
		for _, n := range g.consumerNames() {
			if g.consumers[n].pel.Len() > 0 {
				names = append(names, n)
			}
		}
		c.W.Array(len(names))
		for _, n := range names {
			c.W.Array(2)
			c.W.BulkString(n)
			c.W.BulkString(strconv.Itoa(g.consumers[n].pel.Len()))
		}
		return
	}
	pel := g.pel
	if consumerName != nil {
		cn := g.lookupConsumer(string(consumerName), false, 0)
		if cn == nil {
			c.W.Array(0)
			return
		}
		pel = cn.pel
	}
	var out []pelEntry
	pel.Ascend(pelEntry{id: start}, func(p pelEntry) bool {
		if count == 0 || end.less(p.id) {
			return false
		}
		if minIdle != 0 && c.Now-p.n.time < minIdle {
			return true
		}
		out = append(out, p)
		count--
		return true
	})
	c.W.Array(len(out))
	for _, p := range out {
		c.W.Array(4)
		c.W.BulkString(p.id.String())
		c.W.BulkString(p.n.consumer.name)
		c.W.Int(max(c.Now-p.n.time, 0))
		c.W.Int(int64(p.n.count))
	}
}

func xclaimCmd(c *Ctx, args [][]byte) {
	s, g, wrong := c.groupAt(args[1], string(args[2]))
	switch {
	case wrong:
		return
	case g == nil:
		c.Error(noGroup(args[1], string(args[2])))
		return
	}
	minIdle, ok := ParseInt(args[4])
	if !ok {
		c.Error("ERR Invalid min-idle-time argument for XCLAIM")
		return
	}
	minIdle = max(minIdle, 0)
	j := 5
	var ids []streamID
	for ; j < len(args); j++ {
		id, ok := parseStreamID(args[j], 0, true, nil)
		if !ok {
			break
		}
		ids = append(ids, id)
	}
	now := c.Now
	retry, delivery := int64(-1), int64(-1)
	force, justid := false, false
	var lastID streamID
	for ; j < len(args); j++ {
		more := len(args) - 1 - j
		opt := args[j]
		optInt := func(what string) (int64, bool) {
			j++
			v, ok := ParseInt(args[j])
			if !ok {
				c.Error("ERR Invalid " + what + " option argument for XCLAIM")
			}
			return v, ok
		}
		switch {
		case eq(opt, "force"):
			force = true
		case eq(opt, "justid"):
			justid = true
		case eq(opt, "idle") && more > 0:
			v, ok := optInt("IDLE")
			if !ok {
				return
			}
			delivery = now - v
		case eq(opt, "time") && more > 0:
			v, ok := optInt("TIME")
			if !ok {
				return
			}
			delivery = v
		case eq(opt, "retrycount") && more > 0:
			v, ok := optInt("RETRYCOUNT")
			if !ok {
				return
			}
			retry = v
		case eq(opt, "lastid") && more > 0:
			j++
			v, ok := parseStreamID(args[j], 0, true, nil)
			if !ok {
				c.Error(errStreamID)
				return
			}
			lastID = v
		default:
			c.Error("ERR Unrecognized XCLAIM option '" + string(opt) + "'")
			return
		}
	}
	if g.last.less(lastID) {
		g.last = lastID
	}
	if delivery < 0 || delivery > now {
		delivery = now
	}
	var cn *consumer
	var replies []streamID
	for _, id := range ids {
		p, pending := g.pel.Get(pelEntry{id: id})
		if _, exists := s.entries.Get(streamEntry{id: id}); !exists {
			if pending { // the entry is gone: so is its pending entry
				g.pel.Delete(p)
				p.n.consumer.pel.Delete(p)
			}
			continue
		}
		if force && !pending {
			p, pending = pelEntry{id, &nack{time: now, count: 1}}, true
			g.pel.Set(p)
		}
		if !pending {
			continue
		}
		if p.n.consumer != nil && minIdle != 0 && now-p.n.time < minIdle {
			continue
		}
		if cn == nil {
			cn = c.consumerAt(args[1], g, string(args[3]), now)
		}
		if p.n.consumer != cn && p.n.consumer != nil {
			p.n.consumer.pel.Delete(p)
		}
		p.n.time = delivery
		if retry >= 0 {
			p.n.count = uint64(retry)
		} else if !justid {
			p.n.count++
		}
		if p.n.consumer != cn {
			cn.pel.Set(p)
			p.n.consumer = cn
		}
		replies = append(replies, id)
	}
	c.writeClaimed(s, replies, justid)
}

// writeClaimed replies the claimed IDs, or their entries.
func (c *Ctx) writeClaimed(s *stream, ids []streamID, justid bool) {
	c.W.Array(len(ids))
	for _, id := range ids {
		if justid {
			c.W.BulkString(id.String())
			continue
		}
		e, _ := s.entries.Get(streamEntry{id: id})
		c.writeEntry(e)
	}
}

func xautoclaimCmd(c *Ctx, args [][]byte) {
	// Redis looks the key up (as a read) before it parses the arguments: a miss publishes
	// keymiss even when they are refused
	c.lookupRead(args[1])
	minIdle, ok := ParseInt(args[4])
	if !ok {
		c.Error("ERR Invalid min-idle-time argument for XAUTOCLAIM")
		return
	}
	minIdle = max(minIdle, 0)
	start, ex, ok := parseInterval(args[5], 0)
	if !ok {
		c.Error(errStreamID)
		return
	}
	if ex {
		if start, ok = start.incr(); !ok {
			c.Error("ERR invalid start ID for the interval")
			return
		}
	}
	count, justid := int64(100), false
	for j := 6; j < len(args); j++ {
		switch {
		case eq(args[j], "count") && j+1 < len(args):
			v, ok := ParseInt(args[j+1])
			if !ok || v < 1 || v > math.MaxInt64/10 {
				c.Error("ERR COUNT must be > 0")
				return
			}
			count = v
			j++
		case eq(args[j], "justid"):
			justid = true
		default:
			c.Error(ErrSyntax)
			return
		}
	}
	s, g, wrong := c.groupAt(args[1], string(args[2]))
	switch {
	case wrong:
		return
	case g == nil:
		c.Error(noGroup(args[1], string(args[2])))
		return
	}
	attempts := count * 10
	now := c.Now
	var claimed, deleted []streamID
	cur, eof := start, false
	for attempts > 0 && count > 0 {
		attempts--
		p, found := pelFrom(g.pel, cur)
		if !found {
			eof = true
			break
		}
		next, more := p.id.incr()
		cur = next
		if _, exists := s.entries.Get(streamEntry{id: p.id}); !exists {
			g.pel.Delete(p)
			p.n.consumer.pel.Delete(p)
			deleted = append(deleted, p.id)
			count--
		} else if minIdle == 0 || now-p.n.time >= minIdle {
			cn := c.consumerAt(args[1], g, string(args[3]), now)
			if p.n.consumer != cn {
				p.n.consumer.pel.Delete(p)
				cn.pel.Set(p)
				p.n.consumer = cn
			}
			p.n.time = now
			if !justid {
				p.n.count++
			}
			claimed = append(claimed, p.id)
			count--
		}
		if !more {
			eof = true
			break
		}
	}
	cursor := streamID{}
	if !eof {
		if p, found := pelFrom(g.pel, cur); found {
			cursor = p.id
		}
	}
	c.W.Array(3)
	c.W.BulkString(cursor.String())
	c.writeClaimed(s, claimed, justid)
	c.W.Array(len(deleted))
	for _, id := range deleted {
		c.W.BulkString(id.String())
	}
}

// ascendN returns up to n items of t from pivot on (n 0: all of them).
func ascendN[T any](t *btree.BTreeG[T], pivot T, n int64) []T {
	var out []T
	t.Ascend(pivot, func(v T) bool {
		if n > 0 && int64(len(out)) >= n {
			return false
		}
		out = append(out, v)
		return true
	})
	return out
}

// pelFrom is the first pending entry at or after id.
func pelFrom(pel *btree.BTreeG[pelEntry], id streamID) (pelEntry, bool) {
	if out := ascendN(pel, pelEntry{id: id}, 1); len(out) > 0 {
		return out[0], true
	}
	return pelEntry{}, false
}

// xinfoGroups is XINFO GROUPS: each group, by name.
func (c *Ctx) xinfoGroups(s *stream) {
	names := s.groupNames()
	c.W.Array(len(names))
	for _, name := range names {
		g := s.groups[name]
		c.W.Map(6)
		c.W.BulkString("name")
		c.W.BulkString(name)
		c.W.BulkString("consumers")
		c.W.Int(int64(len(g.consumers)))
		c.W.BulkString("pending")
		c.W.Int(int64(g.pel.Len()))
		c.W.BulkString("last-delivered-id")
		c.W.BulkString(g.last.String())
		c.W.BulkString("entries-read")
		c.writeEntriesRead(g)
		c.W.BulkString("lag")
		c.writeLag(s, g)
	}
}

// xinfoConsumers is XINFO CONSUMERS: each consumer of g, by name.
func (c *Ctx) xinfoConsumers(g *streamGroup) {
	names := g.consumerNames()
	c.W.Array(len(names))
	for _, name := range names {
		cn := g.consumers[name]
		c.W.Map(3)
		c.W.BulkString("name")
		c.W.BulkString(name)
		c.W.BulkString("pending")
		c.W.Int(int64(cn.pel.Len()))
		c.W.BulkString("idle")
		c.W.Int(max(c.Now-cn.seen, 0))
	}
}

// xinfoFullGroups is the groups part of XINFO STREAM FULL, count PEL entries at most
// per list (0: all).
func (c *Ctx) xinfoFullGroups(s *stream, count int64) {
	names := s.groupNames()
	c.W.Array(len(names))
	for _, name := range names {
		g := s.groups[name]
		c.W.Map(7)
		c.W.BulkString("name")
		c.W.BulkString(name)
		c.W.BulkString("last-delivered-id")
		c.W.BulkString(g.last.String())
		c.W.BulkString("entries-read")
		c.writeEntriesRead(g)
		c.W.BulkString("lag")
		c.writeLag(s, g)
		c.W.BulkString("pel-count")
		c.W.Int(int64(g.pel.Len()))
		c.W.BulkString("pending")
		c.writePEL(g.pel, count, true)
		c.W.BulkString("consumers")
		cnames := g.consumerNames()
		c.W.Array(len(cnames))
		for _, cname := range cnames {
			cn := g.consumers[cname]
			c.W.Map(4)
			c.W.BulkString("name")
			c.W.BulkString(cname)
			c.W.BulkString("seen-time")
			c.W.Int(cn.seen)
			c.W.BulkString("pel-count")
			c.W.Int(int64(cn.pel.Len()))
			c.W.BulkString("pending")
			c.writePEL(cn.pel, count, false)
		}
	}
}

func (c *Ctx) writePEL(pel *btree.BTreeG[pelEntry], count int64, withConsumer bool) {
	out := ascendN(pel, pelEntry{}, count)
	c.W.Array(len(out))
	for _, p := range out {
		if withConsumer {
			c.W.Array(4)
			c.W.BulkString(p.id.String())
			c.W.BulkString(p.n.consumer.name)
		} else {
			c.W.Array(3)
			c.W.BulkString(p.id.String())
		}
		c.W.Int(p.n.time)
		c.W.Int(int64(p.n.count))
	}
}
