package mcproto

import (
	"context"
	"errors"
	"net"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/nanokv/nanokv/internal/netserve"
	"github.com/nanokv/nanokv/kvstore"
)

const (
	readBufSize = 16 << 10
	// maxBatchBytes proposes a pipelined run of writes early, so that one huge pipeline
	// does not become one huge entry.
	maxBatchBytes = 1 << 20
	// maxGetLine bounds a multiget's command line (memcached grows its buffer without
	// bound for these).
	maxGetLine = 8 << 20
)

// conn is one client connection, served by one goroutine: parse what one network read
// brought, turn every write into one proposal, and write all replies with one write.
//
// Replies must leave in request order, but the replies of the batched writes exist only
// once the batch is committed (blind writes) or applied (the rest). So while a batch is
// open, every reply, even a fixed one like "MN" or "ERROR", is queued as a pending entry
// and rendered when the batch completes. A read closes the batch first: it must see the
// connection's earlier writes.
type conn struct {
	s   *Server
	nc  net.Conn // served by its own goroutine (serve); nil under the event loop
	out []byte

	// the read buffer: buf[start:end] is unparsed; the next request needs need bytes
	buf        []byte
	start, end int
	need       int
	lim        Limits
	loopBlind  bool // under the event loop: the batch it proposes is blind
	// clock is the time for the reads of one network read
	clock   netserve.ReadClock
	scratch [][]byte
	swallow int // bytes of a refused data block still to discard
	quit    bool

	// what "stats conns" shows: the connection's number, addresses, when it connected
	// and when it last sent a command (unix ms; 0: not yet)
	id           uint64
	raddr, laddr string
	connected    int64
	lastCmd      atomic.Int64

	// barrierOK: the read barrier has been passed since the last network read and the
	// last proposal, so the reads that arrived with it may go straight to the store.
	barrierOK bool

	// async: served by an asynchronous event loop (a cluster member's), so consume never
	// waits: it stops before a read that needs the open batch committed or the read
	// barrier passed (stall), and the loop resumes it once that is done. barrierErr is
	// the failed barrier's error, for the read that waited for it.
	async      bool
	stall      stall
	barrierErr error

	// the open batch
	batch []byte
	pend  []pending
	nops  int
	blind bool
	// sink receives the results of the batch proposed last, if it was not blind; it is
	// kept for the next such batch, unless that proposal failed (resultSink).
	sink *resultSink
}

// stall is why an asynchronous connection stopped consuming.
type stall uint8

const (
	stallNone    stall = iota
	stallBatch         // a read behind the open batch, or the batch reached maxBatchBytes
	stallBarrier       // a read before the read barrier
)

// pending is one queued reply: fixed text, or the rendering of one op's result.
type pending struct {
	kind    pkind
	noreply bool
	cas     bool // gats; a classic cas (for stats)
	lit     string
	key     []byte
	meta    *Meta
}

type pkind uint8

const (
	pLit       pkind = iota // lit, no op
	pLitOp                  // lit once the op (a side effect) is done
	pStore                  // classic storage
	pDelete                 // delete
	pIncr                   // incr
	pDecr                   // decr
	pTouch                  // touch
	pGat                    // one key of gat/gats
	pFlush                  // flush_all
	pMetaGet                // mg that may change the item (T, N, R, a stale item)
	pMetaSet                // ms
	pMetaDel                // md
	pMetaArith              // ma
)

// result is the applier's reply to one op (see kvstore/memcache.go for its shape).
type result struct {
	err    string
	code   string
	hasVal bool
	val    string
	flags  uint32
	cas    uint64
	ttl    int64
	// the item's marks (kvstore.MCItem): binary key, stale, recache token won
	binKey, stale, won bool
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc, id: s.nextID.Add(1), connected: time.Now().UnixMilli()}
	if nc != nil {
		c.raddr, c.laddr = nc.RemoteAddr().String(), nc.LocalAddr().String()
	}
	return c
}

// resultSink receives the results of one proposed batch from the applier (kvstore.Sink).
// The connection waits for Applied before it reads them, and keeps the sink for its next
// batch only once it has: the sink of a proposal that failed, whose entry may still
// commit and be applied (a timeout leaves the outcome unknown), is left to that entry,
// so that late results are never taken for those of a later batch.
type resultSink struct {
	results []result
	rfield  int // field of the current result the applier is writing
	applied chan struct{}
}

func (r *resultSink) Applied() { r.applied <- struct{}{} }

func (r *resultSink) Array(int) {
	r.results = append(r.results, result{ttl: -1})
	r.rfield = 0
}

func (r *resultSink) Error(msg string) {
	r.results = append(r.results, result{err: msg})
	r.rfield = -1
}

func (r *resultSink) last() *result {
	if len(r.results) == 0 {
		r.results = append(r.results, result{})
	}
	return &r.results[len(r.results)-1]
}

func (r *resultSink) Status(s string) {
	r.last().code = s
	r.rfield++
}

func (r *resultSink) BulkString(s string) {
	res := r.last()
	res.val, res.hasVal = s, true
	r.rfield++
}

func (r *resultSink) Bulk(b []byte) { r.BulkString(string(b)) }
func (r *resultSink) Null()         { r.rfield++ }
func (r *resultSink) Int(n int64) {
	res := r.last()
	switch r.rfield {
	case 2:
		res.flags = uint32(n)
		res.binKey, res.stale, res.won = kvstore.MCMarks(n)
	case 3:
		res.cas = uint64(n)
	case 4:
		res.ttl = n
	}
	r.rfield++
}
func (r *resultSink) NullArray()     {}
func (r *resultSink) Map(int)        {}
func (r *resultSink) Set(int)        {}
func (r *resultSink) Double(float64) {}
func (r *resultSink) Resp3() bool    { return false }

// serve serves the connection from its own goroutine until it closes.
func (c *conn) serve() {
	defer c.nc.Close()
	netserve.ReadLoop(c.nc, c.space, func(n int) bool {
		now := time.Now().UnixMilli()
		c.clock.Set(now)
		c.lastCmd.Store(now)
		open := c.consume(n)
		c.flushBatch()
		// Let the other connections woken by the same poll run first, so that the
		// replies leave together, as memcached's event loop sends them; see resp's
		// conn.serve for what replies written one at a time cost the clients.
		runtime.Gosched()
		return c.flushOut() && open
	})
}

// consume handles every request that the n bytes just read into the buffer complete.
// Replies go to c.out, and writes stay in the open batch for the caller to flush. It
// returns false when the connection is to close once the replies so far are written:
// after quit, or a line memcached closes the connection for.
func (c *conn) consume(n int) bool {
	c.end += n
	c.s.stats.bytesRead.Add(uint64(n))
	if n > 0 {
		c.barrierOK = false // a barrier passed before these bytes arrived does not cover them
	}
	c.stall = stallNone
	for c.start < c.end && c.end-c.start >= c.need && !c.quit {
		if c.swallow > 0 {
			k := min(c.swallow, c.end-c.start)
			c.start += k
			c.swallow -= k
			continue
		}
		req, n, nd, err := Parse(c.buf[c.start:c.end], c.lim, c.scratch)
		if errors.Is(err, ErrIncomplete) {
			c.need = max(nd, c.end-c.start+1)
			break
		}
		if err != nil {
			// memcached closes a connection that sends a huge line that is no get
			return false
		}
		c.need = 0
		c.scratch = req.Tokens[:0]
		if c.async && c.mustWait(&req) {
			break // parsed again once the loop resumes it
		}
		c.start += n
		c.swallow = req.Swallow
		c.handle(&req)
		if c.async && len(c.batch) >= maxBatchBytes {
			c.stall = stallBatch
			break
		}
	}
	return !c.quit
}

// mustWait reports whether an asynchronous connection must stop before req (and records
// why): a read that must see the open batch's writes, or a read before the barrier. It
// passes the barrier itself when the backend can tell at once (a leader's lease).
func (c *conn) mustWait(req *Request) bool {
	c.stall = stallNone
	switch req.Kind {
	case KindGet, KindGets, KindMetaGet, KindMetaDebug, KindStats, KindLRUCrawler:
	default:
		return false
	}
	switch {
	case c.nops > 0:
		c.stall = stallBatch
	case c.barrierOK || c.barrierErr != nil:
	case c.s.async.TryReadBarrier():
		c.barrierOK = true
	default:
		c.stall = stallBarrier
	}
	return c.stall != stallNone
}

// space returns the buffer space for the next read, after making room: the parsed
// bytes are dropped, and the buffer grows for a request larger than it.
func (c *conn) space() []byte {
	if c.buf == nil {
		c.buf = make([]byte, readBufSize)
		c.lim = Limits{ItemSizeMax: c.s.cfg.ItemSizeMax, MaxLine: maxGetLine}
	}
	if c.start == c.end {
		c.start, c.end = 0, 0
		if len(c.buf) > 4*readBufSize {
			c.buf = make([]byte, readBufSize)
		}
	}
	if c.end == len(c.buf) || (c.need > 0 && c.start+c.need > len(c.buf)) {
		if c.start > 0 {
			copy(c.buf, c.buf[c.start:c.end])
			c.end -= c.start
			c.start = 0
		}
		if want := max(c.need, c.end+1); want > len(c.buf) {
			nb := make([]byte, max(2*len(c.buf), want))
			copy(nb, c.buf[:c.end])
			c.buf = nb
		}
	}
	return c.buf[c.end:]
}

// flushOut writes the buffered replies; false if the connection failed.
func (c *conn) flushOut() bool {
	if len(c.out) == 0 {
		return true
	}
	n, err := c.nc.Write(c.out)
	netserve.CountWritten(n)
	c.Written(n)
	return err == nil
}

// reply queues a fixed reply line (without "\r\n") behind the open batch, if any.
func (c *conn) reply(line string) {
	if c.nops > 0 {
		c.pend = append(c.pend, pending{kind: pLit, lit: line})
		return
	}
	c.out = append(c.out, line...)
	c.out = append(c.out, "\r\n"...)
}

// write adds an encoded op to the open batch with the pending entry that renders its
// reply. blind: the reply is known at commit.
func (c *conn) write(batch []byte, p pending, blind bool) {
	if c.nops == 0 {
		c.blind = true
	}
	c.batch = batch
	c.nops++
	c.blind = c.blind && blind
	c.pend = append(c.pend, p)
	if len(c.batch) >= maxBatchBytes && !c.async {
		c.flushBatch() // under an asynchronous loop, consume stops and the loop proposes
	}
}

// flushBatch proposes the open batch and renders every queued reply: at commit for a
// batch of blind writes, after apply otherwise.
func (c *conn) flushBatch() {
	data, blind, ok := c.cutBatch()
	if !ok {
		return
	}
	var err error
	if blind {
		err = c.s.b.Propose(data, nil)
	} else {
		err = c.s.b.Propose(data, c.sink)
	}
	c.clock.Proposed()
	c.finishBatch(blind, err)
}

// cutBatch closes the open batch for proposing: data, whether every op in it is a blind
// write (no sink needed; else c.sink is the one to propose it with), and false if there
// was none.
func (c *conn) cutBatch() (data []byte, blind, ok bool) {
	if c.nops == 0 {
		return nil, false, false
	}
	// the log keeps data until it is applied (a cluster's log until it is compacted)
	data, next := kvstore.CutBatch(c.batch)
	blind = c.blind
	c.batch, c.nops = next, 0
	c.barrierOK = false
	if !blind {
		if c.sink == nil {
			c.sink = &resultSink{applied: make(chan struct{}, 1)}
		}
		c.sink.results = c.sink.results[:0]
	}
	return data, blind, true
}

// finishBatch renders the queued replies of the batch cutBatch closed, once its
// proposal returned err: at once for blind writes, after the apply otherwise.
func (c *conn) finishBatch(blind bool, err error) {
	var results []result
	switch {
	case blind:
	case err != nil:
		c.sink = nil // the entry's, should it be applied after all
	default:
		<-c.sink.applied
		results = c.sink.results
	}
	ri := 0
	for i := range c.pend {
		p := &c.pend[i]
		if p.kind == pLit {
			c.out = append(c.out, p.lit...)
			c.out = append(c.out, "\r\n"...)
			continue
		}
		switch {
		case err != nil:
			if !p.noreply {
				c.out = append(c.out, "SERVER_ERROR "...)
				c.out = append(c.out, err.Error()...)
				c.out = append(c.out, "\r\n"...)
			}
		case blind:
			c.render(p, nil)
		case ri < len(results):
			c.render(p, &results[ri])
			ri++
		default:
			c.out = append(c.out, "SERVER_ERROR missing reply\r\n"...)
		}
	}
	clear(c.pend)
	c.pend = c.pend[:0]
}

// readBarrier passes the backend's read barrier once per network read (and again after
// a proposal); false if it failed, with the error already written.
func (c *conn) readBarrier() bool {
	if c.barrierOK {
		return true
	}
	// An asynchronous connection gets here past a barrier that failed (mustWait); the
	// wait below is for the goroutine-per-connection server.
	err := c.barrierErr
	c.barrierErr = nil
	if err == nil {
		err = c.s.b.ReadBarrier(context.Background())
	}
	if err != nil {
		c.out = append(c.out, "SERVER_ERROR "...)
		c.out = append(c.out, err.Error()...)
		c.out = append(c.out, "\r\n"...)
		return false
	}
	c.barrierOK = true
	return true
}

// get reads one key for a memcached client; an access to it unless not access (mg's
// u flag, me).
func (c *conn) get(key []byte, access bool) (kvstore.MCItem, bool) {
	var it kvstore.MCItem
	var ok bool
	if access {
		it, ok = c.s.b.Store().MCGet(key, c.clock.Now())
	} else {
		it, ok = c.s.b.Store().MCPeek(key, c.clock.Now())
	}
	switch {
	case it.Expired:
		c.s.stats.getExpired.Add(1)
	case it.Flushed:
		c.s.stats.getFlushed.Add(1)
	}
	return it, ok
}
