package resp

import (
	"sort"
	"strings"
	"sync"

	"github.com/nanokv/nanokv/kvstore"
)

// Pub/sub: SUBSCRIBE PSUBSCRIBE SSUBSCRIBE, their UNSUBSCRIBEs, PUBSUB; PUBLISH and
// SPUBLISH are the store's (kvstore/pubsub.go): they go through the log, and each
// member's applier hands the message to the hub below, which queues it for that member's
// subscribers.
//
// A connection's subscriptions are its own goroutine's; the hub's index of them, which
// the applier reads, has a lock of its own. Once a connection subscribes, everything it
// sends goes through its subscriber's queue, written by a goroutine of its own: replies
// and messages then leave in the order they were queued, and the applier never waits
// for a client. A client that lets its output pile up past client-output-buffer-limit
// is disconnected (outlimit.go).

func init() {
	add := func(name string, arity int, summary string, run func(*conn, [][]byte)) {
		// (un)subscribing inside MULTI is queued, as in Redis: EXEC runs it once the
		// transaction is applied, and its confirmation takes its place in EXEC's reply
		// (subscribeCommand)
		connCommands[name] = &connSpec{Spec: kvstore.Spec{Name: name, Arity: arity, Group: "pubsub", Since: "2.0.0", Summary: summary, Flags: kvstore.FlagConn | kvstore.FlagPubSub}, run: run}
	}
	add("subscribe", -2, "Listen for messages published to the given channels", subscribeCommand(kindChannel))
	add("psubscribe", -2, "Listen for messages published to channels matching the given patterns", subscribeCommand(kindPattern))
	add("ssubscribe", -2, "Listen for messages published to the given shard channels", subscribeCommand(kindShard))
	add("unsubscribe", -1, "Stop listening for messages posted to the given channels", unsubscribeCommand(kindChannel))
	add("punsubscribe", -1, "Stop listening for messages posted to channels matching the given patterns", unsubscribeCommand(kindPattern))
	add("sunsubscribe", -1, "Stop listening for messages posted to the given shard channels", unsubscribeCommand(kindShard))
	add("pubsub", -2, "A container for Pub/Sub commands", pubsubCommand)
	connCommands["ssubscribe"].Since, connCommands["sunsubscribe"].Since = "7.0.0", "7.0.0"
	connCommands["pubsub"].Since = "2.8.0"
}

// kind is a subscription's namespace.
type kind int

const (
	kindChannel kind = iota
	kindPattern
	kindShard
)

// the words of subscribe/unsubscribe replies and of messages, by kind
var (
	subscribeWord   = [...]string{"subscribe", "psubscribe", "ssubscribe"}
	unsubscribeWord = [...]string{"unsubscribe", "punsubscribe", "sunsubscribe"}
)

// hub indexes a member's subscriptions for the applier's PUBLISH (kvstore.Publisher).
type hub struct {
	mu   sync.RWMutex
	subs [3]map[string]map[*conn]struct{} // by kind, then channel or pattern
}

// Publish queues message for every subscriber of channel (SPUBLISH: of the shard
// channel), then for every subscriber of a pattern that matches it, as Redis does; it
// returns how many deliveries it queued: not to a subscriber cut off already (over its
// output limit), which Redis would have closed before it ran the PUBLISH, though its
// connection may not have left the hub yet. It does not look at the subscribers' sockets
// as the counts below do (present): a look costs a system call, and with ten
// subscribers PUBLISH -P 16 went from 47-51k to 30-32k requests a second.
func (h *hub) Publish(shard bool, channel, message []byte) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	count := func(delivered bool) {
		if delivered {
			n++
		}
	}
	if shard {
		for c := range h.subs[kindShard][string(channel)] {
			count(c.sub.deliver("smessage", "", channel, message))
		}
		return n
	}
	for c := range h.subs[kindChannel][string(channel)] {
		count(c.sub.deliver("message", "", channel, message))
	}
	for pat, cs := range h.subs[kindPattern] {
		if !kvstore.Glob([]byte(pat), channel) {
			continue
		}
		for c := range cs {
			count(c.sub.deliver("pmessage", pat, channel, message))
		}
	}
	return n
}

// present reports whether a subscriber's client is still there. A connection leaves
// the hub when its goroutine reads the client's end of file, which may come after a
// request another client sent later: PUBSUB NUMSUB right after a subscriber closed its
// connection counted it about half the time, where Redis, which handles its sockets'
// events in the order they came, never does. So PUBSUB's counts look at the socket
// itself (peerGone) before they count a subscriber.
func present(c *conn) bool { return !c.peerGone() }

// subscribe adds c's subscriptions and queues c's output (their confirmations) in one
// step under the hub's lock. A PUBLISH then runs either before both, when the client
// cannot yet know it is subscribed, or after both, and its message follows the
// confirmation. (Registered after the confirmation was queued, a subscriber that had
// read it could miss a message it was then told it would get: a PUBLISH right after
// PSUBSCRIBE's reply once counted no receiver.)
func (h *hub) subscribe(c *conn, subs ...subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range subs {
		h.add(s.k, s.name, c)
	}
	c.flushOut() // a subscriber's output is queued, never written here
}

// add adds one subscription; the caller holds h.mu.
func (h *hub) add(k kind, name string, c *conn) {
	if h.subs[k] == nil {
		h.subs[k] = map[string]map[*conn]struct{}{}
	}
	cs := h.subs[k][name]
	if cs == nil {
		cs = map[*conn]struct{}{}
		h.subs[k][name] = cs
	}
	cs[c] = struct{}{}
}

func (h *hub) remove(k kind, name string, c *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if cs := h.subs[k][name]; cs != nil {
		delete(cs, c)
		if len(cs) == 0 {
			delete(h.subs[k], name)
		}
	}
}

// names lists the channels (or patterns) of kind k with a subscriber still present,
// matching pattern (nil: all).
func (h *hub) names(k kind, pattern []byte) []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []string
	for name, cs := range h.subs[k] {
		if (pattern == nil || kvstore.Glob(pattern, []byte(name))) && anyPresent(cs) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func anyPresent(cs map[*conn]struct{}) bool {
	for c := range cs {
		if present(c) {
			return true
		}
	}
	return false
}

// subscribedAgainst returns, once each, the connections for which who holds that are
// subscribed to a channel or pattern allowed refuses.
func (h *hub) subscribedAgainst(who func(*conn) bool, allowed func(name string, pattern bool) bool) []*conn {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []*conn
	seen := map[*conn]bool{}
	for k := range h.subs {
		for name, cs := range h.subs[k] {
			for c := range cs {
				if !seen[c] && who(c) && !allowed(name, kind(k) == kindPattern) {
					seen[c] = true
					out = append(out, c)
				}
			}
		}
	}
	return out
}

func (h *hub) count(k kind, name string) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for c := range h.subs[k][name] {
		if present(c) {
			n++
		}
	}
	return n
}

// subscriber is a connection's pub/sub state: its subscriptions (its goroutine's) and
// the queue its output goes through once it has subscribed (shared with the applier).
type subscriber struct {
	c     *conn
	names [3][]string // by kind, in the order subscribed

	mu     sync.Mutex
	out    []byte
	resp3  bool // the connection's protocol, for the messages the applier formats
	failed bool // the client was cut off (too slow, or gone)
	// busy: invalidations wait in held until the connection's next output is queued
	// (tracking.go)
	busy bool
	held []byte
	// softSince: when the queue was first seen at or past its class's soft output
	// limit (unix seconds; 0: it is not there)
	softSince int64
	wake      chan struct{}
	quit      chan struct{}
	done      chan struct{}
}

// startSub readies the connection for its first subscription: from here on its output
// goes through the subscriber's queue.
func (c *conn) startSub() {
	if c.sub != nil {
		return
	}
	// It speaks the connection's protocol from the start: CLIENT TRACKING ON pipelined
	// behind HELLO 3, as client libraries connect, may have an invalidation to push
	// before any output is queued (which records the protocol too).
	s := &subscriber{c: c, resp3: c.Proto == 3, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	c.sub = s
	c.shared.pushq.Store(s)
	go s.write()
}

// write is the subscriber's writer goroutine: it writes what is queued until quit, and
// then what is left.
func (s *subscriber) write() {
	defer close(s.done)
	c := s.c
	var spare []byte
	for {
		stop := false
		select {
		case <-s.wake:
		case <-s.quit:
			stop = true
		}
		s.mu.Lock()
		b := s.out
		s.out = spare[:0]
		s.mu.Unlock()
		if len(b) > 0 {
			n, err := c.nc.Write(b)
			c.s.stats.netOut.Add(uint64(n))
			c.s.stats.writes.Add(1)
			if err != nil {
				s.cut()
			}
		}
		if cap(b) <= 1<<20 {
			spare = b
		} else {
			spare = nil
		}
		if stop {
			return
		}
	}
}

// queue adds the connection's output b to what the writer writes, and records the
// protocol the connection speaks from there on (HELLO, RESET), for the messages queued
// after it; false if the client was cut off.
func (s *subscriber) queue(b []byte) bool {
	return s.add(b, s.c.Proto == 3, true)
}

func (s *subscriber) add(b []byte, resp3, setProto bool) bool {
	s.mu.Lock()
	if s.failed {
		s.mu.Unlock()
		return false
	}
	if setProto {
		s.resp3 = resp3
	}
	s.out = append(s.out, b...)
	more := len(b) > 0
	if setProto && s.busy {
		// the connection's output is out of the way: what waited behind it follows
		more = more || len(s.held) > 0
		s.out, s.held, s.busy = append(s.out, s.held...), s.held[:0], false
	}
	over := s.overLimit(0)
	queued := len(s.out)
	s.mu.Unlock()
	if !more {
		return true
	}
	if over {
		s.c.s.config().Logf("resp: closing client %s: output over client-output-buffer-limit (%d bytes queued)", s.c.addr, queued)
		s.cut()
		return false
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

// cut disconnects a subscriber that fell behind or failed: the connection's goroutine
// then finds its socket shut down. (Closing it could wait for that goroutine, and the
// applier calls this.)
func (s *subscriber) cut() {
	s.mu.Lock()
	s.failed, s.out = true, nil
	s.mu.Unlock()
	shutdown(s.c.nc)
}

// deliver queues a message (the applier's, through hub.Publish), in the protocol the
// connection spoke when it last queued output; false if the subscriber was cut off
// before.
func (s *subscriber) deliver(word, pattern string, channel, message []byte) bool {
	s.mu.Lock()
	resp3, failed := s.resp3, s.failed
	s.mu.Unlock()
	if failed {
		return false
	}
	w := Writer{Proto: 2}
	if resp3 {
		w.Proto = 3
	}
	n := 3
	if pattern != "" {
		n = 4
	}
	w.Push(n)
	w.BulkString(word)
	if pattern != "" {
		w.BulkString(pattern)
	}
	w.Bulk(channel)
	w.Bulk(message)
	s.add(w.B, false, false)
	return true
}

// count is how many subscriptions a (P)SUBSCRIBE's reply reports: channels and patterns.
func (s *subscriber) count() int { return len(s.names[kindChannel]) + len(s.names[kindPattern]) }

// subscribed reports whether the connection holds any subscription (RESP2's subscribed
// context).
func (c *conn) subscribed() bool {
	return c.sub != nil && c.sub.count()+len(c.sub.names[kindShard]) > 0
}

// replyCount is the count a (un)subscribe reply of kind k carries.
func (s *subscriber) replyCount(k kind) int {
	if k == kindShard {
		return len(s.names[kindShard])
	}
	return s.count()
}

func subscribeCommand(k kind) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		if k == kindShard && c.execing > 0 {
			// Redis lets a transaction subscribe to channels and patterns, not to
			// shard channels (a client in EXEC must not block)
			c.Error("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")
			return
		}
		c.startSub()
		for _, a := range args[1:] {
			name := string(a)
			fresh := !containsName(c.sub.names[k], name)
			if fresh {
				c.sub.names[k] = append(c.sub.names[k], name)
				c.shared.subs[k].Store(int32(len(c.sub.names[k])))
			}
			c.Push(3)
			c.BulkString(subscribeWord[k])
			c.Bulk(a)
			c.Int(int64(c.sub.replyCount(k)))
			switch {
			case fresh && c.execing > 0:
				// EXEC's reply, which holds the confirmation, is still being put
				// together: the hub hears of the subscription once it is queued
				c.laterSubs = append(c.laterSubs, subscription{k, name})
			case fresh:
				c.s.ps.subscribe(c, subscription{k, name})
			}
		}
	}
}

// subscription is one channel, pattern or shard channel a connection subscribes to.
type subscription struct {
	k    kind
	name string
}

// addLaterSubs queues EXEC's reply, and then tells the hub of the subscriptions the
// transaction made and did not leave again.
func (c *conn) addLaterSubs() {
	if len(c.laterSubs) == 0 {
		return
	}
	var subs []subscription
	for _, l := range c.laterSubs {
		if containsName(c.sub.names[l.k], l.name) {
			subs = append(subs, l)
		}
	}
	c.s.ps.subscribe(c, subs...)
	c.laterSubs = nil
}

func unsubscribeCommand(k kind) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		var names []string
		if len(args) > 1 {
			for _, a := range args[1:] {
				names = append(names, string(a))
			}
		} else if c.sub != nil {
			names = append(names, c.sub.names[k]...)
		}
		if len(names) == 0 {
			// nothing to leave: one reply with a null name, and the count of what the
			// connection still holds (an UNSUBSCRIBE leaves the patterns)
			n := 0
			if c.sub != nil {
				n = c.sub.replyCount(k)
			}
			c.Push(3)
			c.BulkString(unsubscribeWord[k])
			c.Null()
			c.Int(int64(n))
			return
		}
		for _, name := range names {
			n := 0
			if c.sub != nil {
				c.leave(k, name)
				n = c.sub.replyCount(k)
			}
			c.Push(3)
			c.BulkString(unsubscribeWord[k])
			c.BulkString(name)
			c.Int(int64(n))
		}
	}
}

// leave drops one subscription.
func (c *conn) leave(k kind, name string) {
	names := c.sub.names[k]
	for i, n := range names {
		if n == name {
			c.sub.names[k] = append(names[:i], names[i+1:]...)
			c.shared.subs[k].Store(int32(len(c.sub.names[k])))
			c.s.ps.remove(k, name, c)
			return
		}
	}
}

// leaveAll drops every subscription (RESET, and the connection's end).
func (c *conn) leaveAll() {
	if c.sub == nil {
		return
	}
	for k := range c.sub.names {
		for _, name := range c.sub.names[k] {
			c.s.ps.remove(kind(k), name, c)
		}
		c.sub.names[k] = nil
		c.shared.subs[k].Store(0)
	}
}

// endSub, at the connection's end, leaves every subscription and lets the writer write
// what is queued (QUIT's +OK, say) before the socket closes.
func (c *conn) endSub() {
	if c.sub == nil {
		return
	}
	c.leaveAll()
	close(c.sub.quit)
	<-c.sub.done
}

func containsName(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// subscribedOK reports whether a RESP2 connection in the subscribed context may run
// name; RESP3 connections may run anything there.
func subscribedOK(name []byte) bool {
	switch strings.ToLower(string(name)) {
	case "subscribe", "ssubscribe", "psubscribe", "unsubscribe", "sunsubscribe", "punsubscribe", "ping", "quit", "reset":
		return true
	}
	return false
}

func pubsubCommand(c *conn, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	switch {
	case (sub == "channels" || sub == "shardchannels") && len(args) <= 3:
		k := kindChannel
		if sub == "shardchannels" {
			k = kindShard
		}
		var pattern []byte
		if len(args) == 3 {
			pattern = args[2]
		}
		names := c.s.ps.names(k, pattern)
		c.Array(len(names))
		for _, n := range names {
			c.BulkString(n)
		}
	case sub == "numsub" || sub == "shardnumsub":
		k := kindChannel
		if sub == "shardnumsub" {
			k = kindShard
		}
		c.Array(2 * (len(args) - 2))
		for _, a := range args[2:] {
			c.Bulk(a)
			c.Int(int64(c.s.ps.count(k, string(a))))
		}
	case sub == "numpat" && len(args) == 2:
		c.Int(int64(len(c.s.ps.names(kindPattern, nil))))
	case sub == "help" && len(args) == 2:
		lines := []string{
			"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"CHANNELS [<pattern>]",
			"    Return the currently active channels matching a <pattern> (default: '*').",
			"NUMPAT",
			"    Return number of subscriptions to patterns.",
			"NUMSUB [<channel> ...]",
			"    Return the number of subscribers for the specified channels, excluding",
			"    pattern subscriptions(default: no channels).",
			"SHARDCHANNELS [<pattern>]",
			"    Return the currently active shard level channels matching a <pattern> (default: '*').",
			"SHARDNUMSUB [<shardchannel> ...]",
			"    Return the number of subscribers for the specified shard level channel(s)",
			"HELP",
			"    Prints this help.",
		}
		c.statusLines(lines)
	case sub == "channels" || sub == "shardchannels":
		// past the arity check (-2): Redis's syntax error for a subcommand
		c.Error("ERR unknown subcommand or wrong number of arguments for '" + string(args[1]) + "'. Try PUBSUB HELP.")
	case sub == "numpat" || sub == "help":
		c.Error(kvstore.WrongArgs("pubsub|" + sub))
	default:
		c.Error("ERR unknown subcommand '" + string(args[1]) + "'. Try PUBSUB HELP.")
	}
}
