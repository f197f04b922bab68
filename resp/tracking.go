package resp

import (
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nanokv/nanokv/kvstore"
)

// Client-side caching: CLIENT TRACKING, CACHING, GETREDIR, TRACKINGINFO, as Redis 7.0
// serves them. A tracking connection is told when a key it read may have changed: in
// its own connection under RESP3 (a push, "invalidate" and the keys), or through the
// connection it redirects to, under RESP2 as a message on __redis__:invalidate.
//
// Each member keeps the table of its own clients, and its applier tells it of every
// key a write changes (kvstore.KeyTracker): whichever member a write came through,
// every member applies it and invalidates its clients' caches.
//
// Order is what makes a cache correct, both ways. A reply carrying a key's value must
// reach the client before the invalidation of any write applied after that value was
// read: otherwise the client drops nothing, then caches a stale value for good. And the
// invalidation of a write applied before a read must reach it before that read's reply,
// as in Redis, where it leaves when the write runs: a client that saw its write
// acknowledged, then read anything on the tracking connection, holds no older value.
// Redis gets both from its single thread; here the applier runs beside the connection.
// So a connection remembers a key after its read passed the read barrier (every write
// acknowledged before is applied, its invalidations queued) and before it reads; from
// then, or from the proposal of its own writes, until its replies are queued, the
// invalidations for it wait behind them (subscriber.hold), and the next read of a
// pipeline lets out what was held before its own reply. An invalidation of a write that
// raced with a read may come later than in Redis, never before the value it undoes nor
// after the reply to a later read. TestTrackingCacheStaysCoherent checks the first:
// without the hold it fails within ten runs.
//
// What differs from Redis: keys are remembered for a read-only script's declared keys
// (EVAL_RO, FCALL_RO), where Redis remembers the keys of the commands the script runs;
// NOLOOP knows a write as the connection's own only when the connection's member
// applies it with its replies (a write forwarded by a follower invalidates its own
// connection too: a spare invalidation, never a missing one); a connection that is
// redirected to gets the messages only once it has subscribed to a channel, or
// turned tracking on itself (RESP3 pushes need the writer a subscription starts).

// defaultTrackingMaxKeys is tracking-table-max-keys's default, Redis's.
const defaultTrackingMaxKeys = 1000000

// tracking is a member's client-side caching state.
type tracking struct {
	s *Server
	// installed: the store's applier reports to this table (SetKeyTracker), from the
	// first CLIENT TRACKING ON.
	installed sync.Once
	// live: there are tracking connections or remembered keys; the applier's calls
	// return at once while it is false. bcast: there are BCAST prefixes.
	live, bcast atomic.Bool

	mu       sync.Mutex
	conns    map[int64]*conn               // connections with tracking on, by id
	keys     map[string]map[int64]struct{} // key → connections that may cache it
	items    int                           // the sum of the keys' sets (tracking_total_items)
	prefixes map[string]*bcastPrefix       // BCAST mode, by prefix
	maxKeys  int64                         // tracking-table-max-keys (0: no limit)
}

// bcastPrefix is a prefix BCAST connections listen to, and the keys under it that the
// entry being applied changed.
type bcastPrefix struct {
	conns map[int64]*conn
	// changed: key → id of the connection whose write changed it last (0: unknown), so
	// that a NOLOOP connection is not told of its own change
	changed map[string]int64
}

// trackState is a connection's tracking mode; the table's lock guards it.
type trackState struct {
	on, bcast, optin, optout, noloop bool
	redirect                         int64 // 0: none
	target                           *conn // the connection redirected to
	prefixes                         []string
	// broken: the connection redirected to is gone (set by the applier as it finds
	// out; kept apart, so that the connection's goroutine reads the rest unlocked)
	broken *atomic.Bool
}

func (t *tracking) setLive() {
	t.live.Store(len(t.conns) > 0 || len(t.keys) > 0)
	t.bcast.Store(len(t.prefixes) > 0)
}

// enable turns tracking on for c (CLIENT TRACKING ON), with options checked.
func (t *tracking) enable(c *conn, st trackState, prefixes []string) {
	t.installed.Do(func() { t.s.b.Store().SetKeyTracker(t) })
	c.startSub() // invalidations go through the subscriber's queue
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conns == nil {
		t.conns = map[int64]*conn{}
		t.keys = map[string]map[int64]struct{}{}
		t.prefixes = map[string]*bcastPrefix{}
	}
	cur := &c.shared.track
	cur.on, cur.redirect, cur.target = true, st.redirect, st.target
	c.shared.trackBroken.Store(false)
	cur.bcast, cur.optin, cur.optout, cur.noloop = st.bcast, st.optin, st.optout, st.noloop
	if st.bcast {
		if len(prefixes) == 0 {
			prefixes = []string{""}
		}
		for _, p := range prefixes {
			bp := t.prefixes[p]
			if bp == nil {
				bp = &bcastPrefix{conns: map[int64]*conn{}, changed: map[string]int64{}}
				t.prefixes[p] = bp
			}
			bp.conns[c.id] = c
			if !containsName(cur.prefixes, p) {
				cur.prefixes = append(cur.prefixes, p)
			}
		}
		sort.Strings(cur.prefixes)
	}
	t.conns[c.id] = c
	t.setLive()
}

// disable turns tracking off for c (CLIENT TRACKING OFF, RESET, the connection's end).
// The keys it read stay remembered, as in Redis: turned on again, it hears of them.
func (t *tracking) disable(c *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := &c.shared.track
	if !cur.on {
		return
	}
	for _, p := range cur.prefixes {
		if bp := t.prefixes[p]; bp != nil {
			delete(bp.conns, c.id)
			if len(bp.conns) == 0 {
				delete(t.prefixes, p)
			}
		}
	}
	*cur = trackState{}
	c.shared.trackBroken.Store(false)
	delete(t.conns, c.id)
	t.setLive()
}

// remember records that c may cache keys (a read of a tracking connection, in neither
// BCAST mode nor opted out). The connection's subscriber holds invalidations back
// before the keys are in the table (see above).
func (t *tracking) remember(c *conn, keys [][]byte) {
	c.sub.hold()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		ids := t.keys[string(k)]
		if ids == nil {
			ids = map[int64]struct{}{}
			t.keys[string(k)] = ids
		}
		if _, ok := ids[c.id]; !ok {
			ids[c.id] = struct{}{}
			t.items++
		}
	}
	t.evictOver(keys)
	t.setLive()
}

// evictOver invalidates keys until the table holds at most tracking-table-max-keys, as
// Redis does, choosing at random among the keys other than just (the ones remembered
// this moment, which Redis's random walk may also pick).
func (t *tracking) evictOver(just [][]byte) {
	if t.maxKeys <= 0 {
		return
	}
	for k := range t.keys {
		if int64(len(t.keys)) <= t.maxKeys {
			return
		}
		if !slices.ContainsFunc(just, func(b []byte) bool { return string(b) == k }) {
			t.invalidateKey(k, 0)
		}
	}
}

// Modified implements kvstore.KeyTracker.
func (t *tracking) Modified(key []byte, w kvstore.ReplyWriter) {
	if !t.live.Load() {
		return
	}
	var origin int64
	if rs, ok := w.(*replySink); ok {
		origin = rs.owner
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for p, bp := range t.prefixes {
		if strings.HasPrefix(string(key), p) {
			bp.changed[string(key)] = origin
		}
	}
	if _, ok := t.keys[string(key)]; ok {
		t.invalidateKey(string(key), origin)
	}
}

// invalidateKey tells every connection that may cache key that it changed (by the
// connection origin, 0: unknown or none), and forgets who did.
func (t *tracking) invalidateKey(key string, origin int64) {
	ids := t.keys[key]
	delete(t.keys, key)
	t.items -= len(ids)
	for id := range ids {
		c := t.conns[id]
		if c == nil || c.shared.track.bcast || (c.shared.track.noloop && id == origin) {
			continue
		}
		t.send(c, []string{key}, false)
	}
	t.setLive()
}

// Flushed implements kvstore.KeyTracker: every tracking connection, in any mode, is
// told to drop everything.
func (t *tracking) Flushed() {
	if !t.live.Load() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.conns {
		t.send(c, nil, true)
	}
	clear(t.keys)
	t.items = 0
	t.setLive()
}

// EntryDone implements kvstore.KeyTracker: the BCAST connections hear of the keys the
// entry changed under their prefixes, one message a prefix, the keys in order.
func (t *tracking) EntryDone() {
	if !t.bcast.Load() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var names []string
	for p, bp := range t.prefixes {
		if len(bp.changed) > 0 {
			names = append(names, p)
		}
	}
	sort.Strings(names) // Redis walks its prefix table in order
	for _, p := range names {
		bp := t.prefixes[p]
		keys := make([]string, 0, len(bp.changed))
		for k := range bp.changed {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for id, c := range bp.conns {
			send := keys
			if c.shared.track.noloop {
				send = nil
				for _, k := range keys {
					if bp.changed[k] != id {
						send = append(send, k)
					}
				}
			}
			if len(send) > 0 {
				t.send(c, send, false)
			}
		}
		clear(bp.changed)
	}
}

// send queues an invalidation of keys (all: of everything) for the tracking connection
// c: to the connection it redirects to, if any, else its own.
func (t *tracking) send(c *conn, keys []string, all bool) {
	st := &c.shared.track
	to, redirected := c, false
	if st.redirect != 0 {
		if st.target == nil || st.target.shared.gone.Load() {
			c.shared.trackBroken.Store(true)
			if sub := c.shared.pushq.Load(); sub != nil {
				sub.pushRedirBroken(st.redirect)
			}
			return
		}
		to, redirected = st.target, true
	}
	if sub := to.shared.pushq.Load(); sub != nil {
		sub.pushInvalidate(keys, all, redirected && to.clientType() == "pubsub")
	}
}

// counts are INFO's tracking figures.
func (t *tracking) counts() (clients, keys, items, prefixes int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns), len(t.keys), t.items, len(t.prefixes)
}

func (t *tracking) setMaxKeys(n int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.maxKeys = n
	t.evictOver(nil)
	t.setLive()
}

// state returns a copy of c's tracking mode.
func (t *tracking) state(c *conn) trackState {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := c.shared.track
	st.broken = &c.shared.trackBroken
	return st
}

// --- the connection's side ----------------------------------------------------------------

// trackRead remembers the keys of a read-only command c is about to run, if c tracks
// them: tracking on, not BCAST, and not opted out (OPTIN without CACHING yes, OPTOUT
// with CACHING no).
func (c *conn) trackRead(spec *kvstore.Spec, args [][]byte) {
	st := &c.shared.track // this goroutine's own writes: readable without the lock
	if !st.on {
		return
	}
	if !c.blocking && !c.replyOff && !c.skipping {
		// Invalidations held for earlier requests of the pipeline go out before this
		// read's reply: their writes were applied before it passed the read barrier.
		// (Not where the caller may still cut the output back: a blocking command's
		// attempts, or a reply CLIENT REPLY drops; those wait for the next output.)
		c.B = c.sub.takeHeld(c.B)
	}
	if st.bcast || spec.Flags&kvstore.FlagPubSub != 0 {
		return
	}
	if (st.optin && !c.caching) || (st.optout && c.caching) {
		return
	}
	keys := c.keyScratch[:0]
	for _, r := range callKeys(callName(spec, args), spec, args) {
		keys = append(keys, r.key) // every key a read names (ZUNION's too), as Redis remembers them
	}
	if len(keys) > 0 {
		c.s.track.remember(c, keys)
	}
	clear(keys)
	c.keyScratch = keys[:0]
}

// trackTx remembers the keys of the read-only commands of a transaction before EXEC
// proposes it.
func (c *conn) trackTx(queued []kvstore.TxCommand) {
	if !c.shared.track.on {
		return
	}
	for _, q := range queued {
		if spec := kvstore.Lookup(q.Args[0]); spec != nil && !spec.Writes(q.Args) {
			c.trackRead(spec, q.Args)
		}
	}
}

// endTracking turns tracking off for a connection that is going away.
func (c *conn) endTracking() {
	c.shared.gone.Store(true)
	if c.shared.track.on {
		c.s.track.disable(c)
	}
}

// noloop reports whether c's writes must be known as its own when applied (NOLOOP):
// they are then proposed with a sink, even blind ones.
func (c *conn) noloop() bool { return c.shared.track.on && c.shared.track.noloop }

// --- CLIENT TRACKING and friends -----------------------------------------------------------

func clientTracking(c *conn, args [][]byte) {
	var st trackState
	var prefixes []string
	for j := 3; j < len(args); j++ {
		more := j+1 < len(args)
		switch opt := strings.ToLower(string(args[j])); {
		case opt == "redirect" && more:
			j++
			if st.redirect != 0 {
				c.Error("ERR A client can only redirect to a single other client")
				return
			}
			id, ok := kvstore.ParseInt(args[j])
			if !ok {
				c.Error("ERR value is not an integer or out of range")
				return
			}
			st.redirect = id
			if st.target = c.s.clientByID(id); st.target == nil {
				c.Error("ERR The client ID you want redirect to does not exist")
				return
			}
		case opt == "bcast":
			st.bcast = true
		case opt == "optin":
			st.optin = true
		case opt == "optout":
			st.optout = true
		case opt == "noloop":
			st.noloop = true
		case opt == "prefix" && more:
			j++
			prefixes = append(prefixes, string(args[j]))
		default:
			c.Error(kvstore.ErrSyntax)
			return
		}
	}
	switch strings.ToLower(string(args[2])) {
	case "on":
		cur := c.s.track.state(c)
		switch {
		case !st.bcast && len(prefixes) > 0:
			c.Error("ERR PREFIX option requires BCAST mode to be enabled")
		case cur.on && cur.bcast != st.bcast:
			c.Error("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
		case st.bcast && (st.optin || st.optout):
			c.Error("ERR OPTIN and OPTOUT are not compatible with BCAST")
		case st.optin && st.optout:
			c.Error("ERR You can't specify both OPTIN mode and OPTOUT mode")
		case (st.optin && cur.optout) || (st.optout && cur.optin):
			c.Error("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
		default:
			if st.bcast {
				if msg := prefixCollision(cur.prefixes, prefixes); msg != "" {
					c.Error(msg)
					return
				}
			}
			c.s.track.enable(c, st, prefixes)
			c.Status("OK")
		}
	case "off":
		c.s.track.disable(c)
		c.caching = false
		c.Status("OK")
	default:
		c.Error(kvstore.ErrSyntax)
	}
}

// prefixCollision returns Redis's error when a new BCAST prefix is a prefix of another
// (new or already the connection's), or has one: a key would be told of twice.
func prefixCollision(have, add []string) string {
	overlap := func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
	for i, p := range add {
		for _, h := range have {
			if overlap(p, h) {
				return "ERR Prefix '" + p + "' overlaps with an existing prefix '" + h + "'. Prefixes for a single client must not overlap."
			}
		}
		for _, q := range add[i+1:] {
			if overlap(p, q) {
				return "ERR Prefix '" + p + "' overlaps with another provided prefix '" + q + "'. Prefixes for a single client must not overlap."
			}
		}
	}
	return ""
}

func clientCaching(c *conn, args [][]byte) {
	st := c.s.track.state(c)
	if !st.on {
		c.Error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		return
	}
	switch strings.ToLower(string(args[2])) {
	case "yes":
		if !st.optin {
			c.Error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
			return
		}
	case "no":
		if !st.optout {
			c.Error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
			return
		}
	default:
		c.Error(kvstore.ErrSyntax)
		return
	}
	c.caching = true
	c.Status("OK")
}

func clientGetRedir(c *conn) {
	st := c.s.track.state(c)
	if !st.on {
		c.Int(-1)
		return
	}
	c.Int(st.redirect)
}

func clientTrackingInfo(c *conn) {
	st := c.s.track.state(c)
	flags := []string{"off"}
	if st.on {
		flags[0] = "on"
	}
	if st.bcast {
		flags = append(flags, "bcast")
	}
	if st.optin {
		flags = append(flags, "optin")
		if c.caching {
			flags = append(flags, "caching-yes")
		}
	}
	if st.optout {
		flags = append(flags, "optout")
		if c.caching {
			flags = append(flags, "caching-no")
		}
	}
	if st.noloop {
		flags = append(flags, "noloop")
	}
	if st.broken.Load() {
		flags = append(flags, "broken_redirect")
	}
	c.Map(3)
	c.BulkString("flags")
	c.Set(len(flags))
	for _, f := range flags {
		c.BulkString(f)
	}
	c.BulkString("redirect")
	if st.on {
		c.Int(st.redirect)
	} else {
		c.Int(-1)
	}
	c.BulkString("prefixes")
	c.Array(len(st.prefixes))
	for _, p := range st.prefixes {
		c.BulkString(p)
	}
}

// trackFlags are CLIENT LIST's tracking flags for c ("t", "R", "B") and its redir field.
func (c *conn) trackFlags() (flags string, redir int64) {
	st := c.s.track.state(c)
	if !st.on {
		return "", -1
	}
	flags = "t"
	if st.broken.Load() {
		flags += "R"
	}
	if st.bcast {
		flags += "B"
	}
	return flags, st.redirect
}

// clientByID returns the open connection with id, or nil.
func (s *Server) clientByID(id int64) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.id == id {
			return c
		}
	}
	return nil
}

// --- the messages -----------------------------------------------------------------------

// hold makes the invalidations queued from now on wait behind the connection's next
// output (see the top of this file).
func (s *subscriber) hold() {
	s.mu.Lock()
	s.busy = true
	s.mu.Unlock()
}

// takeHeld appends the held invalidations to the connection's output dst and stops
// holding.
func (s *subscriber) takeHeld(dst []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy {
		dst = append(dst, s.held...)
		s.held, s.busy = s.held[:0], false
	}
	return dst
}

// pushInvalidate queues an invalidation of keys (all: of everything) in the protocol the
// connection speaks: a push under RESP3; under RESP2 a message on __redis__:invalidate
// when asPubSub (a redirected-to subscriber), else nothing, as in Redis.
func (s *subscriber) pushInvalidate(keys []string, all, asPubSub bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := Writer{Proto: 2}
	switch {
	case s.resp3:
		w.Proto = 3
		w.Push(2)
		w.BulkString("invalidate")
	case asPubSub:
		w.Push(3)
		w.BulkString("message")
		w.BulkString("__redis__:invalidate")
	default:
		return
	}
	if all {
		w.Null()
	} else {
		w.Array(len(keys))
		for _, k := range keys {
			w.BulkString(k)
		}
	}
	s.addHeld(w.B)
}

// pushRedirBroken tells a RESP3 tracking connection that the connection it redirects to
// is gone.
func (s *subscriber) pushRedirBroken(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.resp3 {
		return
	}
	w := Writer{Proto: 3}
	w.Push(2)
	w.BulkString("tracking-redir-broken")
	w.Int(id)
	s.addHeld(w.B)
}

// addHeld queues b behind the connection's next output while it holds invalidations
// back, else at once. s.mu is held.
func (s *subscriber) addHeld(b []byte) {
	if s.failed {
		return
	}
	if s.overLimit(len(s.held) + len(b)) {
		s.c.s.config().Logf("resp: closing client %s: invalidations over client-output-buffer-limit", s.c.addr)
		s.failed, s.out, s.held = true, nil, nil
		shutdown(s.c.nc)
		return
	}
	if s.busy {
		s.held = append(s.held, b...)
		return
	}
	s.out = append(s.out, b...)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
