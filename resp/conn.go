package resp

import (
	"bytes"
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nanokv/nanokv/internal/netserve"
	"github.com/nanokv/nanokv/kvstore"
)

const (
	readBufSize = 16 << 10
	// maxBatchBytes flushes a pipelined run of writes early, so one huge pipeline does not
	// become one huge entry.
	maxBatchBytes = 1 << 20
)

// conn is one client connection, served by one goroutine: read what the client sent,
// run it in order, write every reply with one write.
type conn struct {
	s  *Server
	nc net.Conn
	Writer

	id     int64
	name   string
	addr   string
	laddr  string
	db     int
	authed bool
	// user is the user the connection acts as (authed: not nil); others read it for
	// CLIENT LIST
	user    atomic.Pointer[aclRef]
	created time.Time
	lastCmd time.Time
	// softSince: when the pending replies were first seen at or past the normal
	// class's soft output limit (unix seconds; 0: they are not)
	softSince int64
	// cmdName is the last command's name as CLIENT LIST shows it ("client|list"), and
	// sharedName the name last published to shared
	cmdName    *string
	sharedName string
	closeNext  bool // QUIT: close once the replies are out
	// clock is the time for the reads of one pipelined read
	clock netserve.ReadClock
	// barrierOK: the read barrier was passed since the last network read and the last
	// proposal, so the reads that arrived with it need not pass it again. They arrived
	// together, before the barrier was asked for: one barrier orders them all after
	// every write committed before they arrived.
	barrierOK bool

	// the read buffer: buf[start:end] is unparsed; the next request needs need bytes
	buf        []byte
	start, end int
	need       int
	args       [][]byte // parse scratch

	// async: served by a cluster member's asynchronous event loop (loopconn.go), until
	// a request it cannot serve there hands the connection to a goroutine of its own.
	async bool
	loop  loopState

	// writes of the current pipelined read, not yet proposed
	batch      []byte
	batchOps   int
	batchBlind bool
	sink       *replySink // for the next batch that is not blind; nil: make one

	// readonly: READONLY was sent under sharding, and a follower serves the connection's
	// reads (sharding.go's readsHere)
	readonly bool

	// MULTI state
	inMulti  bool
	multiErr bool
	multiDB  int // db the next queued command runs in (SELECT inside MULTI)
	// execing: EXEC is running a queued connection command, which must not block; it is
	// how many commands the transaction has (CLIENT LIST's multi=)
	execing int
	// laterSubs: the subscriptions EXEC's commands made, for the hub after its reply
	laterSubs []subscription
	// monitoring: the connection sent MONITOR (monitor.go)
	monitoring bool
	// repl is what REPLCONF said, for SYNC (sync.go)
	repl   replState
	queued []kvstore.TxCommand
	// watches are checked when EXEC applies: a write by anyone, this connection included,
	// changes the key's version
	watches []kvstore.Watch
	// sub is the connection's pub/sub state, from its first subscription on
	sub *subscriber
	// caching: CLIENT CACHING was given for the next command (tracking.go)
	caching bool
	// CLIENT REPLY: replyOff (OFF), skipNext (SKIP: the next command's reply is
	// dropped), skipping (the current command's is)
	replyOff, skipNext, skipping bool
	// blocking: a blocking command's attempts are running (block.go)
	blocking   bool
	keyScratch [][]byte

	// what other connections see of this one (CLIENT LIST, KILL, UNBLOCK)
	shared connShared
}

// connShared is the part of a connection other connections' goroutines read and act on.
type connShared struct {
	blocked atomic.Bool     // waiting in a blocking command
	unblock chan bool       // CLIENT UNBLOCK: true for ERROR, false for TIMEOUT
	subs    [3]atomic.Int32 // subscriptions by kind (pubsub.go)
	monitor atomic.Bool     // a MONITOR connection (monitor.go)
	syncing atomic.Bool     // sending an RDB file after SYNC (sync.go), as Redis's replicas
	replica atomic.Bool     // readonly, for CLIENT LIST's flag r
	gone    atomic.Bool     // the connection has ended

	// what CLIENT LIST shows of the connection to the others, as of its last network
	// read (published by its goroutine, or the loop's, once a read's requests ran)
	name    atomic.Pointer[string]
	db      atomic.Int32
	proto   atomic.Int32
	lastCmd atomic.Int64 // unix ms
	cmd     atomic.Pointer[string]

	// client-side caching (tracking.go): the mode, under the tracking table's lock; the
	// subscriber invalidations are queued to (set once, by startSub)
	track       trackState
	trackBroken atomic.Bool
	pushq       atomic.Pointer[subscriber]

	mu     sync.Mutex
	killed chan struct{} // closed by CLIENT KILL
	close  func()        // shuts the connection down: its socket, or the loop's
}

// kill shuts the connection down (CLIENT KILL); its goroutine, or the loop, then finds
// the socket closed.
func (c *conn) kill() {
	c.shared.mu.Lock()
	defer c.shared.mu.Unlock()
	select {
	case <-c.shared.killed:
		return
	default:
	}
	close(c.shared.killed)
	if s := c.shared.pushq.Load(); s != nil {
		// as Redis frees a client it kills at once: a PUBLISH from here on neither
		// counts nor queues for it, though its goroutine may not have left the hub yet
		s.mu.Lock()
		s.failed, s.out = true, nil
		s.mu.Unlock()
	}
	if c.shared.close != nil {
		c.shared.close()
	}
}

// setCloser records how to shut the connection down from here on (a socket handed from
// the loop to a goroutine changes it), and applies a kill that came meanwhile.
func (c *conn) setCloser(f func()) {
	c.shared.mu.Lock()
	defer c.shared.mu.Unlock()
	c.shared.close = f
	select {
	case <-c.shared.killed:
		f()
	default:
	}
}

func newConn(s *Server, nc net.Conn) *conn {
	now := time.Now()
	c := &conn{
		s: s, nc: nc, id: s.nextID.Add(1), addr: nc.RemoteAddr().String(), laddr: nc.LocalAddr().String(),
		created: now, lastCmd: now,
	}
	c.Proto = 2
	c.errs = &s.errors
	c.logInDefault()
	c.shared.unblock = make(chan bool, 1)
	c.shared.killed = make(chan struct{})
	return c
}

// serve serves the connection from its own goroutine until it closes, starting with
// what an event loop that handed it over left buffered.
func (c *conn) serve() {
	defer c.nc.Close()
	defer c.endSub()
	defer c.endTracking()
	defer c.stopMonitoring()
	if c.buf == nil {
		c.buf = make([]byte, readBufSize)
	}
	if c.end > c.start && !c.got(0) {
		return
	}
	netserve.ReadLoop(c.nc, func() []byte { return c.buf[c.end:] }, c.got)
}

// got runs what n more bytes in the buffer complete and writes the replies; false: close.
func (c *conn) got(n int) bool {
	if n > 0 {
		c.lastCmd = time.Now()
		c.clock.Set(c.lastCmd.UnixMilli())
	}
	open := c.consume(n)
	c.flushBatch()
	c.publish()
	if !c.withinOutputLimit() {
		return false
	}
	if open {
		// Let the other connections that the same poll woke run their requests before
		// this one writes, as Redis writes every reply of an event-loop round at its
		// end. Replies written one by one, each a request's work apart, each woke a
		// client that had gone to sleep waiting: redis-benchmark -P 16 GET switched
		// context 43k times in 2 s against nanokv (6k with the yield, 5k against Redis)
		// and the wake-ups were a tenth of nanokv's CPU. 935k -> 1.08–1.15M GET/s.
		runtime.Gosched()
	}
	if !c.flushOut() || !open || c.closeNext {
		return false
	}
	return c.makeRoom()
}

// consume runs every complete request in the buffer, n bytes of it just read. Writes
// stay in the open batch for the caller to propose. false: close once the replies so
// far are written (a protocol error, whose reply it wrote).
func (c *conn) consume(n int) bool {
	c.end += n
	if n > 0 {
		// A barrier's outcome is for the reads that arrived before it was asked for. A
		// failed one can outlive them when they were refused before they ran (a
		// follower's MOVED under sharding): it must not answer the next read.
		c.barrierOK, c.loop.barrierErr = false, nil
		c.s.stats.netIn.Add(uint64(n))
		c.s.stats.reads.Add(1)
	}
	c.loop.stall = stallNone
	maxBulk := c.s.config().MaxBulk
	for c.end-c.start >= c.need && c.start < c.end {
		lim := ParseLimits{MaxBulk: maxBulk, Unauth: !c.authed} // AUTH may come mid-pipeline
		args, m, nd, err := ParseCommand(c.buf[c.start:c.end], c.args, lim)
		if errors.Is(err, ErrIncomplete) {
			c.need = nd
			break
		}
		c.need = 0
		if err != nil {
			if c.async && c.batchOps > 0 {
				c.loop.stall = stallBatch // its replies go first
				return true
			}
			c.flushBatch()
			c.Error("ERR " + err.Error())
			return false
		}
		c.args = args
		if len(args) == 0 {
			c.start += m
			continue
		}
		spec := kvstore.Lookup(args[0])
		if c.async && c.mustWait(args, spec) {
			break // parsed again once the loop resumes it
		}
		c.start += m
		c.cmdName = cmdName(args, spec)
		c.skipping, c.skipNext = c.skipNext, false
		if c.replyOff || c.skipping || spec == nil || spec.Flags&kvstore.FlagConn != 0 {
			// The replies so far are rendered before this one, which may turn them off
			// (a connection command would flush the batch all the same).
			c.flushBatch()
		}
		mark := len(c.B)
		c.handle(args, spec)
		if c.replyOff || c.skipping {
			// CLIENT REPLY OFF or SKIP: the command's reply, a write's too, is dropped
			c.flushBatch()
			c.B = c.B[:mark]
		}
		if c.caching && !c.inMulti && !bytes.EqualFold(args[0], []byte("client")) {
			c.caching = false // CLIENT CACHING tells of the next command only
		}
		if c.closeNext {
			break
		}
		if c.async && len(c.batch) >= maxBatchBytes {
			c.loop.stall = stallBatch
			break
		}
	}
	return true
}

// makeRoom readies the buffer for the next read: the parsed bytes are dropped, and it
// grows for a request larger than it. false: the request is over
// client-query-buffer-limit, and the connection is to close.
func (c *conn) makeRoom() bool {
	if c.start == c.end {
		c.start, c.end = 0, 0
		if len(c.buf) > 4*readBufSize { // give back what one huge request needed
			c.buf = make([]byte, readBufSize)
		}
	}
	if c.end == len(c.buf) {
		// make room: move the partial request to the front, or grow
		if c.start > 0 {
			copy(c.buf, c.buf[c.start:c.end])
			c.end -= c.start
			c.start = 0
		}
		if c.end == len(c.buf) {
			want := max(2*len(c.buf), c.need)
			if int64(want) > c.s.config().QueryBufMax+readBufSize {
				c.s.config().Logf("resp: closing client %s: query buffer over client-query-buffer-limit", c.addr)
				return false
			}
			nb := make([]byte, want)
			copy(nb, c.buf[:c.end])
			c.buf = nb
		}
	}
	return true
}

// flushOut writes the buffered replies; false if the connection failed.
func (c *conn) flushOut() bool {
	if c.sub != nil {
		// a subscriber's output goes out in order with its messages (pubsub.go)
		ok := c.sub.queue(c.B)
		c.B = c.B[:0]
		return ok
	}
	if len(c.B) == 0 {
		return true
	}
	n, err := c.nc.Write(c.B)
	c.s.stats.netOut.Add(uint64(n))
	c.s.stats.writes.Add(1)
	netserve.CountWritten(n)
	if cap(c.B) > 1<<20 {
		c.B = nil
	} else {
		c.B = c.B[:0]
	}
	return err == nil
}

// handle runs one request; spec is kvstore.Lookup(args[0]).
func (c *conn) handle(args [][]byte, spec *kvstore.Spec) {
	if !c.authed && !allowedUnauthed(args[0]) {
		c.flushBatch()
		c.Error("NOAUTH Authentication required.")
		return
	}
	if c.s.pause.until.Load() != 0 && !c.waitPause(args, spec) {
		c.closeNext = true
		return
	}
	// Most commands are the store's; the connection table is consulted only for the rest
	// and for the few (PING, ECHO, SELECT) that both know.
	var cs *connSpec
	if spec == nil || spec.Flags&kvstore.FlagConn != 0 {
		cs = lookupConn(args[0])
	}
	if u := c.user.Load(); u != nil && !u.load().free && !c.permitted(u.load(), args, spec, cs) {
		return
	}
	// As in Redis: the cluster's redirection after the ACL check, before the memory's
	if c.s.sharding() && c.shardRoute(args, spec, cs) {
		return
	}
	if c.refusedForMemory(args, spec, cs) {
		return
	}
	if c.Proto == 2 && c.subscribed() && !subscribedOK(args[0]) && (cs != nil || spec != nil) {
		c.flushBatch()
		name := cs
		if spec != nil {
			name = &connSpec{Spec: *spec}
		}
		c.s.cmdStats(name, args).Reject()
		if !name.CheckArity(args) {
			c.Error(kvstore.WrongArgs(name.Name))
			return
		}
		full := name.Name
		if n := cmdName(args, spec); n != nil {
			full = *n // a subcommand as "acl|whoami", as Redis names it
		}
		c.Error("ERR Can't execute '" + full + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
		return
	}
	if c.inMulti && !isTxControl(args[0]) && !runsInMulti(args[0]) {
		connErr := ""
		if cs != nil {
			connErr = connArgsError(cs, args)
		}
		switch {
		case spec != nil && spec.ArgsError(args) != "":
			c.s.b.Store().CommandStats(spec, args).Reject()
			c.multiErr = true
			c.Error(spec.ArgsError(args))
		case spec != nil:
			c.queue(spec, args)
		case cs != nil && cs.noMulti:
			// refusing it aborts the transaction, as Redis does for commands it will
			// not queue
			c.s.cmdStats(cs, args).Reject()
			c.multiErr = true
			c.Error("ERR Command not allowed inside a transaction")
		case connErr != "":
			c.s.cmdStats(cs, args).Reject()
			c.multiErr = true
			c.Error(connErr)
		case cs != nil && protectedRefusal(args) != "":
			c.s.cmdStats(cs, args).Reject()
			c.multiErr = true
			c.Error(protectedRefusal(args))
		case cs != nil:
			c.queue(&cs.Spec, args) // EXEC runs it on the connection (runQueuedConn)
		default:
			c.multiErr = true
			c.Error(kvstore.UnknownCommand(args))
		}
		return
	}
	if cs != nil {
		c.flushBatch()
		if msg := connArgsError(cs, args); msg != "" {
			c.s.cmdStats(cs, args).Reject()
			if cs.Name == "exec" {
				c.abortExec(strings.TrimPrefix(msg, "ERR "), args)
				return
			}
			c.Error(msg)
			return // refused: neither timed nor shown to monitors, as in Redis
		}
		if msg := protectedRefusal(args); msg != "" {
			c.s.cmdStats(cs, args).Reject()
			c.Error(msg)
			return
		}
		c.runConn(cs, args)
		c.feedMonitors(c.db, args) // after it ran: SELECT shows its new database
		return
	}
	if spec == nil {
		c.flushBatch()
		c.Error(kvstore.UnknownCommand(args))
		return
	}
	if !spec.CheckArity(args) {
		c.s.b.Store().CommandStats(spec, args).Reject()
		c.flushBatch()
		c.Error(kvstore.WrongArgs(spec.Name))
		return
	}
	if c.monitoring {
		// Redis's monitor is a replica of sorts: the keyspace is not its to touch
		c.s.b.Store().CommandStats(spec, args).Reject()
		c.flushBatch()
		c.Error("ERR Replica can't interact with the keyspace")
		return
	}
	c.feedMonitors(c.db, args)
	if spec.Flags&kvstore.FlagBlocking != 0 {
		c.flushBatch()
		c.block(spec, args)
		return
	}
	if spec.Writes(args) {
		if spec.Check != nil {
			if msg := spec.Check(args); msg != "" {
				c.s.b.Store().CommandStats(spec, args).Reject()
				c.flushBatch()
				c.Error(msg)
				return
			}
		}
		c.addWrite(spec, args)
		return
	}
	c.flushBatch()
	c.read(spec, args)
}

// addWrite appends a write to the current batch. The batch becomes one proposal when the
// pipelined read is done, or earlier when a read needs to see it.
func (c *conn) addWrite(spec *kvstore.Spec, args [][]byte) {
	if c.batchOps == 0 {
		c.batchBlind = true
	}
	script := runsScript(spec)
	if script {
		c.batch = c.overMemoryMark(c.batch)
	}
	if u := c.user.Load(); script && u != nil && !u.load().free {
		// its calls are checked against its user's rules on every member (scriptacl.go)
		c.batch = kvstore.AppendAsUser(c.batch, u.load().scriptRules, c.db, args)
	} else {
		c.batch = kvstore.AppendCommand(c.batch, c.db, args)
	}
	c.batchOps++
	if spec.Blind == nil || !spec.Blind(args) || c.noloop() || c.logsEveryCommand() {
		c.batchBlind = false
	}
	if len(c.batch) >= maxBatchBytes && !c.async {
		c.flushBatch() // under the event loop, consume stops and the loop proposes
	}
}

// logsEveryCommand reports slowlog-log-slower-than 0 (Redis's "log every command"):
// blind writes then wait for their apply like the others, so that the slow log has
// their client's address and name, which the applier learns from the reply sink.
func (c *conn) logsEveryCommand() bool {
	th, _ := c.s.b.Store().Slowlog()
	return th == 0
}

// flushBatch proposes the pending writes and writes their replies: at commit for a batch
// of blind writes, after apply otherwise.
func (c *conn) flushBatch() {
	if c.batchOps == 0 {
		return
	}
	// the log keeps data until it is applied (a cluster's log until it is compacted)
	data, next := kvstore.CutBatch(c.batch)
	n, blind := c.batchOps, c.batchBlind
	c.batch, c.batchOps = next, 0
	c.propose(data, n, blind)
}

func (c *conn) propose(data []byte, n int, blind bool) {
	if c.shared.track.on {
		// the invalidations of its own writes follow their replies, as in Redis
		// (tracking.go)
		c.sub.hold()
	}
	sink := c.prepare(blind)
	var err error
	if blind {
		err = c.s.b.Propose(data, nil)
	} else {
		err = c.s.b.Propose(data, sink)
	}
	c.finish(n, sink, err)
}

// prepare readies the proposal of a batch: the sink for its replies, nil for a batch of
// blind writes.
func (c *conn) prepare(blind bool) *replySink {
	c.barrierOK = false // a blind write is answered before it is applied
	c.clock.Proposed()  // the entry is stamped after this network read's clock
	if blind {
		return nil
	}
	sink := c.sink
	if sink == nil {
		sink = &replySink{applied: make(chan struct{}, 1), owner: c.id}
		sink.errs = &c.s.errors
	}
	sink.B, sink.Proto = sink.B[:0], c.Proto
	sink.addr, sink.name = c.addr, c.name
	return sink
}

// finish writes the replies of the n writes of a batch proposed with sink (nil: blind),
// once the proposal returned err.
func (c *conn) finish(n int, sink *replySink, err error) {
	if err != nil {
		// The entry may commit all the same (a timeout leaves the outcome unknown), and
		// the applier then writes to this sink: it is the entry's for good.
		if sink != nil {
			c.sink = nil
		}
		c.replyErrN(err, n)
		return
	}
	if sink == nil {
		for i := 0; i < n; i++ {
			c.B = append(c.B, "+OK\r\n"...)
		}
		return
	}
	<-sink.applied
	c.B = append(c.B, sink.B...)
	for _, d := range sink.denials {
		c.s.acl.record(d[0], "lua", d[1], c.userName(), c.describe(d[2]))
	}
	sink.denials = sink.denials[:0]
	if cap(sink.B) > 64<<10 {
		sink.B = nil // a huge reply's buffer is not kept for the next batch
	}
	c.sink = sink
}

// replySink receives the replies of one proposed batch from the applier. The connection
// waits for Applied before it reads them, and keeps the sink for its next batch only
// once it has: the sink of a proposal that failed, whose entry may still commit and be
// applied, is left to that entry, so that late replies reach no client.
type replySink struct {
	Writer
	applied    chan struct{}
	addr, name string // the client's, for the slow log
	owner      int64  // the connection's id (NOLOOP tracking)
	// denials are the calls the batch's scripts were denied (reason, object, command),
	// for the ACL log (scriptacl.go)
	denials [][3]string
}

func (s *replySink) Applied() { s.applied <- struct{}{} }

// SlowClient implements kvstore.SlowClient.
func (s *replySink) SlowClient() (addr, name string) { return s.addr, s.name }

func (c *conn) replyErrN(err error, n int) {
	for i := 0; i < n; i++ {
		c.Error(errorReply(err))
	}
}

// errorReply turns a backend error into a Redis error line; errors that already carry a
// Redis prefix (MOVED, CLUSTERDOWN...) pass through.
func errorReply(err error) string {
	var re interface{ RedisError() string }
	if errors.As(err, &re) {
		return re.RedisError()
	}
	return "ERR " + err.Error()
}

// read runs a read-only command after the read barrier.
func (c *conn) read(spec *kvstore.Spec, args [][]byte) {
	if !c.readBarrier() {
		return
	}
	c.trackRead(spec, args)
	st := c.s.b.Store()
	start := st.SlowStart(spec, args)
	if u := c.user.Load(); runsScript(spec) && u != nil && !u.load().free {
		st.ReadSpecAs(spec, c.db, c.clock.Now(), args, &c.Writer, scriptACL{u.load()}, connACLLog{c})
	} else {
		st.ReadSpec(spec, c.db, c.clock.Now(), args, &c.Writer)
	}
	st.SlowEnd(start, args, c.addr, c.name)
}

// readBarrier passes the backend's read barrier once per network read (and again after
// a proposal); false if it failed, with the error already written.
func (c *conn) readBarrier() bool {
	if c.barrierOK {
		return true
	}
	// Under the event loop a read gets here past a barrier that failed (mustWait); the
	// wait below is a goroutine's.
	err := c.loop.barrierErr
	c.loop.barrierErr = nil
	switch {
	case err != nil:
	case c.readonly && c.s.sharding():
		err = c.s.sharder.ReplicaReadBarrier(context.Background())
	default:
		err = c.s.b.ReadBarrier(context.Background())
	}
	if err != nil {
		c.Error(errorReply(err))
		return false
	}
	c.barrierOK = true
	return true
}

// abortExec refuses EXEC before it runs, as Redis's execCommandAbort does: the
// transaction and its watches are discarded, the reply says why, and monitors see the
// EXEC.
func (c *conn) abortExec(why string, args [][]byte) {
	c.inMulti, c.queued, c.watches, c.multiErr = false, nil, nil, false
	c.Error("EXECABORT Transaction discarded because of: " + why)
	c.feedMonitors(c.db, args)
}

// runConn runs connection or server command cs, timed for INFO commandstats and the
// slow log as Redis's call() times it.
func (c *conn) runConn(cs *connSpec, args [][]byte) {
	stats := c.s.cmdStats(cs, args)
	st := c.s.b.Store()
	start := st.SlowStart(cs.slowSpec(), args)
	errs, began := c.nerr, stats.Begin()
	cs.run(c, args)
	stats.End(began, c.nerr != errs)
	st.SlowEnd(start, args, c.addr, c.name)
}

// queue adds a command to the open transaction.
func (c *conn) queue(spec *kvstore.Spec, args [][]byte) {
	cmd := kvstore.TxCommand{DB: c.multiDB, Args: make([][]byte, len(args))}
	for i, a := range args {
		cmd.Args[i] = bytes.Clone(a)
	}
	c.queued = append(c.queued, cmd)
	if spec.Name == "select" {
		if v, ok := kvstore.ParseInt(args[1]); ok && v >= 0 && v < kvstore.NumDBs {
			c.multiDB = int(v)
		}
	}
	c.Status("QUEUED")
}

// publish tells the other connections' CLIENT LIST what this one is now.
func (c *conn) publish() {
	sh := &c.shared
	if c.name != c.sharedName {
		c.sharedName = c.name
		name := c.name
		sh.name.Store(&name)
	}
	sh.db.Store(int32(c.db))
	sh.proto.Store(int32(c.Proto))
	sh.lastCmd.Store(c.lastCmd.UnixMilli())
	if c.cmdName != nil {
		sh.cmd.Store(c.cmdName)
	}
}

// fullNames are the names CLIENT LIST shows for container subcommands ("client|list"),
// made once: a connection keeps a pointer to its last command's name.
var fullNames = map[string]*string{}

func init() {
	add := func(container string, subs []string) {
		for _, sub := range subs {
			full := container + "|" + sub
			fullNames[full] = &full
		}
	}
	for container, subs := range connSubcommands {
		add(container, subs)
	}
	for _, s := range kvstore.Commands() {
		for sub := range s.Subcommands {
			add(s.Name, []string{sub})
		}
	}
}

// cmdName is the name of a command as CLIENT LIST's cmd shows it: the container's
// subcommand as "container|sub", nil for an unknown command.
func cmdName(args [][]byte, spec *kvstore.Spec) *string {
	name := (*string)(nil)
	container := false
	if spec != nil && spec.Flags&kvstore.FlagConn == 0 {
		name, container = &spec.Name, spec.Subcommands != nil
	} else if cs := lookupConn(args[0]); cs != nil {
		name, container = &cs.Name, len(connSubcommands[cs.Name]) > 0
	} else if spec != nil {
		name = &spec.Name
	}
	if container && len(args) > 1 {
		if full := fullNames[*name+"|"+strings.ToLower(string(args[1]))]; full != nil {
			return full
		}
	}
	return name
}
