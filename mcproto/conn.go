package mcproto

import (
	"context"
	"errors"
	"net"
	"runtime"
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
	nc  net.Conn
	out []byte
	// now is the clock for the reads of one network read (unix ms).
	now     int64
	scratch [][]byte
	swallow int // bytes of a refused data block still to discard
	quit    bool
	// barrierOK: the read barrier has been passed since the last network read and the
	// last proposal, so the reads that arrived with it may go straight to the store.
	barrierOK bool

	// the open batch
	batch   []byte
	pend    []pending
	nops    int
	blind   bool
	results []result
	rfield  int // field of the current result the applier is writing
	applied chan struct{}
}

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
	pMetaGet                // mg with T
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
}

func newConn(s *Server, nc net.Conn) *conn {
	return &conn{s: s, nc: nc, applied: make(chan struct{}, 1)}
}

// The applier writes the batch's replies through these (kvstore.Sink). The connection
// goroutine is blocked in flushBatch meanwhile, so the applier owns c.results.

func (c *conn) Applied() { c.applied <- struct{}{} }

func (c *conn) Array(int) {
	c.results = append(c.results, result{ttl: -1})
	c.rfield = 0
}

func (c *conn) Error(msg string) {
	c.results = append(c.results, result{err: msg})
	c.rfield = -1
}

func (c *conn) last() *result {
	if len(c.results) == 0 {
		c.results = append(c.results, result{})
	}
	return &c.results[len(c.results)-1]
}

func (c *conn) Status(s string) {
	c.last().code = s
	c.rfield++
}

func (c *conn) BulkString(s string) {
	r := c.last()
	r.val, r.hasVal = s, true
	c.rfield++
}

func (c *conn) Bulk(b []byte) { c.BulkString(string(b)) }
func (c *conn) Null()         { c.rfield++ }
func (c *conn) Int(n int64) {
	r := c.last()
	switch c.rfield {
	case 2:
		r.flags = uint32(n)
	case 3:
		r.cas = uint64(n)
	case 4:
		r.ttl = n
	}
	c.rfield++
}
func (c *conn) NullArray()     {}
func (c *conn) Map(int)        {}
func (c *conn) Set(int)        {}
func (c *conn) Double(float64) {}
func (c *conn) Resp3() bool    { return false }

func (c *conn) serve() {
	defer c.nc.Close()
	buf := make([]byte, readBufSize)
	start, end, need := 0, 0, 0
	lim := Limits{ItemSizeMax: c.s.cfg.ItemSizeMax, MaxLine: maxGetLine}
	netserve.ReadLoop(c.nc, func() []byte { return buf[end:] }, func(n int) bool {
		end += n
		c.s.stats.bytesRead.Add(uint64(n))
		c.now = time.Now().UnixMilli()
		c.barrierOK = false
		for start < end && end-start >= need && !c.quit {
			if c.swallow > 0 {
				k := min(c.swallow, end-start)
				start += k
				c.swallow -= k
				continue
			}
			req, n, nd, err := Parse(buf[start:end], lim, c.scratch)
			if errors.Is(err, ErrIncomplete) {
				need = max(nd, end-start+1)
				break
			}
			if err != nil {
				// memcached closes a connection that sends a huge line that is no get
				c.flushBatch()
				c.flushOut()
				return false
			}
			need = 0
			c.scratch = req.Tokens[:0]
			start += n
			c.swallow = req.Swallow
			c.handle(&req)
		}
		c.flushBatch()
		// Let the other connections woken by the same poll run first, so that the
		// replies leave together, as memcached's event loop sends them; see resp's
		// conn.serve for what replies written one at a time cost the clients.
		runtime.Gosched()
		if !c.flushOut() || c.quit {
			return false
		}
		if start == end {
			start, end = 0, 0
			if len(buf) > 4*readBufSize {
				buf = make([]byte, readBufSize)
			}
		}
		if end == len(buf) || (need > 0 && start+need > len(buf)) {
			if start > 0 {
				copy(buf, buf[start:end])
				end -= start
				start = 0
			}
			if want := max(need, end+1); want > len(buf) {
				nb := make([]byte, max(2*len(buf), want))
				copy(nb, buf[:end])
				buf = nb
			}
		}
		return true
	})
}

// flushOut writes the buffered replies; false if the connection failed.
func (c *conn) flushOut() bool {
	if len(c.out) == 0 {
		return true
	}
	n, err := c.nc.Write(c.out)
	c.s.stats.bytesWritten.Add(uint64(n))
	netserve.CountWritten(n)
	if cap(c.out) > 1<<20 {
		c.out = nil
	} else {
		c.out = c.out[:0]
	}
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
	if len(c.batch) >= maxBatchBytes {
		c.flushBatch()
	}
}

// flushBatch proposes the open batch and renders every queued reply: at commit for a
// batch of blind writes, after apply otherwise.
func (c *conn) flushBatch() {
	if c.nops == 0 {
		return
	}
	// the log keeps data until it is applied (a cluster's log until it is compacted)
	data, next := kvstore.CutBatch(c.batch)
	blind := c.blind
	c.batch, c.nops = next, 0
	c.barrierOK = false
	c.results = c.results[:0]
	var err error
	if blind {
		err = c.s.b.Propose(data, nil)
	} else if err = c.s.b.Propose(data, c); err == nil {
		<-c.applied
	}
	// The entry was stamped after this network read's clock: reads behind it must not see
	// a time before their own write (a TTL longer than the one just set).
	c.now = max(c.now, time.Now().UnixMilli())
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
		case ri < len(c.results):
			c.render(p, &c.results[ri])
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
	if err := c.s.b.ReadBarrier(context.Background()); err != nil {
		c.out = append(c.out, "SERVER_ERROR "...)
		c.out = append(c.out, err.Error()...)
		c.out = append(c.out, "\r\n"...)
		return false
	}
	c.barrierOK = true
	return true
}

// get reads one key for a memcached client.
func (c *conn) get(key []byte) (kvstore.MCItem, bool) {
	return c.s.b.Store().MCGet(key, c.now)
}
