package zkproto

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
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
	// maxOutBytes closes a connection whose client stopped reading its replies and
	// notifications, rather than buffer without bound.
	maxOutBytes = 64 << 20
)

// conn is one client connection. One goroutine reads and handles requests in order; a
// second writes what is queued in out, so that the applier, which queues watch
// notifications while it holds the tree, never waits for a socket. On a cluster member
// the server's event loop does both instead, for every session (loopconn.go).
//
// Requests are answered in order. The writes that one network read brought become one
// proposal; their replies exist only once this member has applied it, so any other
// request (a read must see the session's own writes) first waits for the open batch.
type conn struct {
	s      *Server
	nc     net.Conn
	remote string

	sess    int64
	timeout int32
	auth    []kvstore.ZKID
	heard   atomic.Bool // a request arrived since the last touch round
	// closing is set when this connection closes its own session: the session's end
	// must not cut the connection before the closeSession reply is out.
	closing atomic.Bool
	killed  atomic.Bool // kill was called
	// watched lists the paths this connection set watches on, to drop them when it
	// goes (only the connection's goroutine touches it).
	watched map[string]struct{}

	outMu   sync.Mutex
	out     []byte
	writeMu sync.Mutex // held while writing (flushOut)
	spare   []byte     // the other half of the double buffer, under writeMu
	outSig  chan struct{}
	outDone chan struct{}
	dead    bool // the writer stopped: queue nothing more

	// the open batch
	batch []byte
	pend  []pendingWrite

	// async: the server's event loop serves the connection (loopconn.go), so another
	// goroutine reaches it through the loop's kick; set once the loop has the socket,
	// cleared when it hands it back (a request that waits). loop.on is the same for
	// the goroutine that handles the requests.
	async atomic.Bool
	loop  loopState

	received, sent atomic.Uint64
	connected      time.Time
}

// pendingWrite is a write waiting in the open batch for its result.
type pendingWrite struct {
	xid   int32
	op    int32
	start time.Time
}

func newConn(s *Server, nc net.Conn) *conn {
	return &conn{s: s, nc: nc, remote: nc.RemoteAddr().String(), outSig: make(chan struct{}, 1),
		outDone: make(chan struct{}), watched: map[string]struct{}{}, connected: time.Now()}
}

// expire is called when the store closed the session (expiry, or a close from another
// connection): the client learns it when it reconnects.
func (c *conn) expire() {
	if !c.closing.Load() {
		c.kill()
	}
}

// kill closes the connection from any goroutine: its socket, or, while the event loop
// serves it, through the loop. A kill that races with the loop handing the socket back
// is seen by the goroutine that takes it (Released).
func (c *conn) kill() {
	c.killed.Store(true)
	if c.async.Load() {
		c.loop.kick(true)
		return
	}
	c.nc.Close()
}

// queue appends one framed packet. Replies are written by the connection's goroutine
// itself once it has handled what one network read brought (flushOut); a notification
// (wake) signals the writer goroutine, since no request may be coming to carry it. The
// signal is sent under outMu, so that stopWriter cannot close the channel in between.
func (c *conn) queue(wake bool, build func(dst []byte) []byte) {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	if c.dead {
		return
	}
	c.out = build(c.out)
	c.sent.Add(1)
	c.s.stats.sent.Add(1)
	if len(c.out) > maxOutBytes {
		c.kill()
	}
	if wake {
		if c.async.Load() {
			c.loop.kick(false) // the loop writes it
			return
		}
		select {
		case c.outSig <- struct{}{}:
		default:
		}
	}
}

// flushOut writes what is queued. The connection's goroutine and the writer both write
// through it: writeMu keeps what they took out of c.out in order on the wire.
func (c *conn) flushOut() bool {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.outMu.Lock()
	buf := c.out
	if len(buf) == 0 {
		c.outMu.Unlock()
		return true
	}
	c.out = c.spare[:0]
	c.outMu.Unlock()
	n, err := c.nc.Write(buf)
	netserve.CountWritten(n)
	c.spare = buf[:0]
	if err != nil {
		c.outMu.Lock()
		c.dead = true
		c.outMu.Unlock()
		c.nc.Close()
		return false
	}
	return true
}

// stopWriter lets the writer send what is queued, and waits for it to finish.
func (c *conn) stopWriter() {
	c.outMu.Lock()
	c.dead = true
	close(c.outSig)
	c.outMu.Unlock()
	<-c.outDone
}

func (c *conn) reply(xid int32, zxid int64, errCode int32, body Record) {
	c.queue(false, func(dst []byte) []byte {
		return AppendReply(dst, ReplyHeader{Xid: xid, Zxid: zxid, Err: errCode}, body)
	})
}

// notify queues a watch notification (called by the watch manager on the applier).
func (c *conn) notify(typ int32, path string) {
	ev := WatcherEvent{Type: typ, State: stateSyncConnected, Path: path}
	c.queue(true, func(dst []byte) []byte {
		return AppendReply(dst, ReplyHeader{Xid: XidNotification, Zxid: -1}, &ev)
	})
}

// stateSyncConnected is KeeperState.SyncConnected, the state of every notification.
const stateSyncConnected int32 = 3

// writer sends notifications that arrive while the connection's goroutine waits for
// the client, and what is left when the connection ends.
func (c *conn) writer() {
	defer close(c.outDone)
	for range c.outSig {
		if !c.flushOut() {
			return
		}
	}
	c.flushOut()
}

func (c *conn) serve() {
	buf, start, end, ok := c.open()
	if !ok {
		c.nc.Close()
		return
	}
	c.s.bind(c, c.sess)
	c.serveFrom(buf, start, end)
}

// open reads and answers the handshake; buf[start:end] is what the client sent after it.
func (c *conn) open() (buf []byte, start, end int, ok bool) {
	buf = make([]byte, readBufSize)
	ok = c.handshake(&buf, &start, &end)
	return buf, start, end, ok
}

// serveFrom serves an open session from this goroutine, beginning with buf[start:end],
// which was read and not yet handled.
func (c *conn) serveFrom(buf []byte, start, end int) {
	defer c.nc.Close()
	go c.writer()
	defer func() {
		c.stopWriter()
		c.s.watches.removeConn(c, c.pathsWatched())
	}()
	for {
		for start < end {
			payload, n, err := ParseFrame(buf[start:end], c.s.cfg.MaxBuffer)
			if errors.Is(err, ErrIncomplete) {
				break
			}
			if err != nil {
				c.s.cfg.Logf("zkproto: %s: %v", c.remote, err)
				c.flushBatch()
				return
			}
			start += n
			c.received.Add(1)
			c.s.stats.received.Add(1)
			c.heard.Store(true)
			if !c.handle(payload) {
				c.flushBatch()
				return
			}
		}
		if !c.flushBatch() || !c.flushOut() {
			return
		}
		var ok bool
		if buf, start, end, ok = c.fill(buf, start, end); !ok {
			return
		}
	}
}

// fill reads more bytes, keeping the unparsed start..end; it grows the buffer for a
// frame that does not fit.
func (c *conn) fill(buf []byte, start, end int) ([]byte, int, int, bool) {
	buf, start, end = makeRoom(buf, start, end)
	n, err := c.nc.Read(buf[end:])
	if n == 0 && err != nil {
		return buf, start, end, false
	}
	return buf, start, end + n, true
}

// makeRoom makes space after buf[start:end], the bytes read and not yet handled: it
// moves them to the front, grows the buffer for a frame that does not fit, and gives
// back a large buffer once it is empty.
func makeRoom(buf []byte, start, end int) ([]byte, int, int) {
	if start == end {
		start, end = 0, 0
		if len(buf) > 4*readBufSize {
			buf = make([]byte, readBufSize)
		}
	}
	if end == len(buf) {
		copy(buf, buf[start:end])
		end -= start
		start = 0
		if end >= 4 {
			if need := 4 + int(int32(uint32(buf[0])<<24|uint32(buf[1])<<16|uint32(buf[2])<<8|uint32(buf[3]))); need > len(buf) {
				nb := make([]byte, need)
				copy(nb, buf[:end])
				buf = nb
			}
		}
		if end == len(buf) {
			nb := make([]byte, 2*len(buf))
			copy(nb, buf[:end])
			buf = nb
		}
	}
	return buf, start, end
}

// handshake reads the first packet: a four-letter word, or the ConnectRequest that opens
// or resumes a session. It reports whether the connection goes on.
func (c *conn) handshake(buf *[]byte, start, end *int) bool {
	for {
		if *end-*start >= 4 {
			if word := string((*buf)[*start : *start+4]); isFourLetterWord(word) {
				c.s.fourLetterWord(c.nc, word)
				return false
			}
			payload, n, err := ParseFrame((*buf)[*start:*end], c.s.cfg.MaxBuffer)
			if err == nil {
				*start += n
				return c.connect(payload)
			}
			if !errors.Is(err, ErrIncomplete) {
				return false
			}
		}
		var ok bool
		if *buf, *start, *end, ok = c.fill(*buf, *start, *end); !ok {
			return false
		}
	}
}

// connect answers a ConnectRequest (ZooKeeperServer.processConnectRequest).
func (c *conn) connect(payload []byte) bool {
	req, err := ParseConnectRequest(payload)
	if err != nil {
		return false
	}
	st := c.s.store
	if req.LastZxidSeen > st.ZKLastZxid() {
		// This member may only lag: catch up with the leader before judging.
		if _, err := c.propose(&kvstore.ZKTxn{Kind: kvstore.ZKTxnTouch}); err != nil || req.LastZxidSeen > st.ZKLastZxid() {
			c.s.cfg.Logf("zkproto: refusing session request for client %s as it has seen zxid 0x%x, our last zxid is 0x%x",
				c.remote, req.LastZxidSeen, st.ZKLastZxid())
			return false
		}
	}
	resp := ConnectResponse{HasReadOnly: req.HasReadOnly}
	if req.SessionID == 0 {
		res, err := c.propose(&kvstore.ZKTxn{Kind: kvstore.ZKTxnCreateSession, Timeout: c.s.negotiateTimeout(req.TimeOut)})
		if err != nil || res.Err != kvstore.ZOK {
			return false
		}
		resp.SessionID, resp.TimeOut, resp.Passwd = res.Session.ID, res.Session.Timeout, res.Session.Passwd[:]
	} else {
		// Resuming: the touch keeps the session alive and brings this member's view of
		// it up to date with the leader's.
		if _, err := c.propose(&kvstore.ZKTxn{Kind: kvstore.ZKTxnTouch, Sessions: []int64{req.SessionID}}); err != nil {
			return false
		}
		sess, ok := st.ZKSession(req.SessionID)
		if ok && bytes.Equal(sess.Passwd[:], req.Passwd) {
			resp.SessionID, resp.TimeOut, resp.Passwd = sess.ID, sess.Timeout, sess.Passwd[:]
		} else {
			// Unknown, expired or wrong password: ZooKeeper answers with a session of
			// id 0 and timeout 0, and closes.
			resp.Passwd = make([]byte, 16)
			c.nc.Write(AppendFrame(nil, resp.Append))
			return false
		}
	}
	c.sess, c.timeout = resp.SessionID, resp.TimeOut
	c.auth = []kvstore.ZKID{{Scheme: "ip", ID: hostOf(c.remote)}}
	if _, err := c.nc.Write(AppendFrame(nil, resp.Append)); err != nil {
		return false
	}
	return true
}

func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// resultSink collects the results of one proposed batch (kvstore.ZKResultWriter).
type resultSink struct {
	nopWriter
	results []*kvstore.ZKResult
	done    chan struct{}
}

func (r *resultSink) ZKResult(res *kvstore.ZKResult) { r.results = append(r.results, res) }
func (r *resultSink) Applied()                       { r.done <- struct{}{} }

// propose proposes one transaction on its own and returns its result once applied here.
func (c *conn) propose(t *kvstore.ZKTxn) (*kvstore.ZKResult, error) {
	sink := &resultSink{done: make(chan struct{}, 1)}
	if err := c.s.b.ProposeAnywhere(kvstore.AppendZK(nil, t), sink); err != nil {
		return nil, err
	}
	<-sink.done
	if len(sink.results) != 1 {
		return nil, fmt.Errorf("zkproto: %d results for one transaction", len(sink.results))
	}
	return sink.results[0], nil
}

// flushBatch proposes the open batch, waits until it is applied here and queues its
// replies. It reports false when the connection must close: the outcome of the writes
// is unknown, and a ZooKeeper client treats a lost connection as exactly that.
func (c *conn) flushBatch() bool {
	if len(c.pend) == 0 {
		return true
	}
	if c.loop.on {
		// The loop proposes batches itself, and never hands a request that needs its
		// batch applied to handle before it is (mustWait): this one would block it.
		c.s.cfg.Logf("zkproto: session 0x%x: a request waited for its batch inside the event loop", c.sess)
		return false
	}
	sink := &resultSink{done: make(chan struct{}, 1)}
	err := c.s.b.ProposeAnywhere(c.batch, sink)
	c.batch = c.batch[:0]
	pend := c.pend
	c.pend = c.pend[:0]
	if err != nil {
		c.s.cfg.Logf("zkproto: session 0x%x: %v", c.sess, err)
		return false
	}
	<-sink.done
	if len(sink.results) != len(pend) {
		c.s.cfg.Logf("zkproto: session 0x%x: %d results for %d writes", c.sess, len(sink.results), len(pend))
		return false
	}
	for i, p := range pend {
		c.writeResult(p, sink.results[i])
	}
	return true
}

// writeResult renders a write's result as the reply to its request.
func (c *conn) writeResult(p pendingWrite, res *kvstore.ZKResult) {
	c.s.observeLatency(time.Since(p.start))
	zxid := res.Zxid
	if zxid == 0 {
		zxid = c.s.store.ZKLastZxid()
	}
	if res.Err != kvstore.ZOK {
		c.reply(p.xid, zxid, res.Err, nil)
		return
	}
	if p.op == kvstore.ZKOpMulti {
		m := &MultiResponse{Results: make([]MultiResult, len(res.Ops))}
		for i, r := range res.Ops {
			m.Results[i] = MultiResult{Type: r.Type, Err: r.Err, Path: r.Path, Stat: r.Stat}
		}
		c.reply(p.xid, zxid, 0, m)
		return
	}
	if len(res.Ops) != 1 {
		c.reply(p.xid, zxid, kvstore.ZSystemError, nil)
		return
	}
	r := res.Ops[0]
	var body Record
	switch p.op {
	case kvstore.ZKOpCreate:
		body = &CreateResponse{Path: r.Path}
	case kvstore.ZKOpCreate2, kvstore.ZKOpCreateContainer, kvstore.ZKOpCreateTTL:
		body = &Create2Response{Path: r.Path, Stat: r.Stat}
	case kvstore.ZKOpSetData, kvstore.ZKOpSetACL:
		body = &StatResponse{Stat: r.Stat}
	}
	c.reply(p.xid, zxid, 0, body)
}

// addWrite adds a write to the open batch.
func (c *conn) addWrite(xid, op int32, t *kvstore.ZKTxn) {
	t.Session, t.Auth = c.sess, c.auth
	c.batch = kvstore.AppendZK(c.batch, t)
	c.pend = append(c.pend, pendingWrite{xid: xid, op: op, start: time.Now()})
	if len(c.batch) >= maxBatchBytes && !c.loop.on { // the loop proposes it (Consume)
		c.flushBatch()
	}
}

// handle serves one request. It reports false when the connection must close.
func (c *conn) handle(payload []byte) bool {
	req, err := ParseRequest(payload, c.s.cfg.MaxBuffer)
	return c.handleRequest(req, err)
}

// handleRequest serves a request ParseRequest returned.
func (c *conn) handleRequest(req Request, err error) bool {
	if err != nil {
		var re *RequestError
		if !errors.As(err, &re) {
			return false // no readable header: ZooKeeper drops the connection
		}
		if !c.flushBatch() {
			return false
		}
		if re.Code != 0 {
			c.reply(re.Header.Xid, c.s.store.ZKLastZxid(), re.Code, nil)
		}
		return !re.Close
	}
	xid, op := req.Header.Xid, req.Header.Type
	switch b := req.Body.(type) {
	case *CreateRequest:
		if !c.s.cfg.ExtendedTypes && isTTLMode(b.Flags) {
			return c.answer(xid, kvstore.ZUnimplemented, nil)
		}
		zop := kvstore.ZKOp{Type: op, Path: b.Path, Data: b.Data, ACL: b.ACL, Mode: b.Flags}
		if op == kvstore.ZKOpCreateContainer {
			zop.Mode = kvstore.ZKContainer
		}
		c.addWrite(xid, op, &kvstore.ZKTxn{Kind: kvstore.ZKTxnOp, Ops: []kvstore.ZKOp{zop}})
		return true
	case *CreateTTLRequest:
		if !c.s.cfg.ExtendedTypes {
			return c.answer(xid, kvstore.ZUnimplemented, nil)
		}
		zop := kvstore.ZKOp{Type: op, Path: b.Path, Data: b.Data, ACL: b.ACL, Mode: b.Flags, TTL: b.TTL}
		c.addWrite(xid, op, &kvstore.ZKTxn{Kind: kvstore.ZKTxnOp, Ops: []kvstore.ZKOp{zop}})
		return true
	case *DeleteRequest:
		c.addWrite(xid, op, &kvstore.ZKTxn{Kind: kvstore.ZKTxnOp, Ops: []kvstore.ZKOp{{Type: op, Path: b.Path, Version: b.Version}}})
		return true
	case *SetDataRequest:
		c.addWrite(xid, op, &kvstore.ZKTxn{Kind: kvstore.ZKTxnOp, Ops: []kvstore.ZKOp{{Type: op, Path: b.Path, Data: b.Data, Version: b.Version}}})
		return true
	case *SetACLRequest:
		c.addWrite(xid, op, &kvstore.ZKTxn{Kind: kvstore.ZKTxnOp, Ops: []kvstore.ZKOp{{Type: op, Path: b.Path, ACL: b.ACL, Version: b.Version}}})
		return true
	case *MultiRequest:
		if op == kvstore.ZKOpMulti {
			t, code := c.multiTxn(b)
			if code != kvstore.ZOK {
				return c.answer(xid, code, nil)
			}
			c.addWrite(xid, op, t)
			return true
		}
	}
	// Everything else is answered in order, after the writes before it.
	if !c.flushBatch() {
		return false
	}
	start := time.Now()
	defer func() { c.s.observeLatency(time.Since(start)) }()
	zxid := c.s.store.ZKLastZxid()
	switch b := req.Body.(type) {
	case nil:
		switch op {
		case kvstore.ZKOpPing:
			c.reply(XidPing, zxid, 0, nil)
		case kvstore.ZKOpCloseSession:
			c.closing.Store(true)
			res, err := c.propose(&kvstore.ZKTxn{Kind: kvstore.ZKTxnCloseSession, Session: c.sess, Auth: c.auth})
			if err != nil {
				return false
			}
			c.reply(xid, res.Zxid, 0, nil)
			return false
		case kvstore.ZKOpWhoAmI:
			r := &WhoAmIResponse{}
			for _, id := range c.auth {
				user := id.ID
				if id.Scheme == "digest" {
					// DigestAuthenticationProvider.getUserName: the user, not the hash.
					user, _, _ = strings.Cut(user, ":")
				}
				r.ClientInfo = append(r.ClientInfo, ClientInfo{AuthScheme: id.Scheme, User: user})
			}
			c.reply(xid, zxid, 0, r)
		}
	case *ExistsRequest:
		c.s.store.ZKView(func(v *kvstore.ZKView) {
			n, ok := v.Get(b.Path)
			if b.Watch {
				c.watch(b.Path, watchData)
			}
			if !ok {
				c.reply(xid, zxid, kvstore.ZNoNode, nil)
				return
			}
			c.reply(xid, zxid, 0, &StatResponse{Stat: n.Stat})
		})
	case *GetDataRequest:
		c.s.store.ZKView(func(v *kvstore.ZKView) {
			n, code := c.readable(v, b.Path, kvstore.ZKPermRead)
			if code != kvstore.ZOK {
				c.reply(xid, zxid, code, nil)
				return
			}
			if b.Watch {
				c.watch(b.Path, watchData)
			}
			c.reply(xid, zxid, 0, &GetDataResponse{Data: n.Data, Stat: n.Stat})
		})
	case *GetChildrenRequest:
		c.children(xid, zxid, b.Path, b.Watch, false)
	case *GetChildren2Request:
		c.children(xid, zxid, b.Path, b.Watch, true)
	case *GetACLRequest:
		c.s.store.ZKView(func(v *kvstore.ZKView) {
			n, code := c.readable(v, b.Path, kvstore.ZKPermRead|kvstore.ZKPermAdmin)
			if code != kvstore.ZOK {
				c.reply(xid, zxid, code, nil)
				return
			}
			acl := n.ACL
			if !kvstore.ZKCheckPerm(acl, kvstore.ZKPermAdmin, c.auth) {
				acl = maskDigests(acl)
			}
			c.reply(xid, zxid, 0, &GetACLResponse{ACL: acl, Stat: n.Stat})
		})
	case *GetAllChildrenNumberRequest:
		c.s.store.ZKView(func(v *kvstore.ZKView) {
			if _, code := c.readable(v, b.Path, kvstore.ZKPermRead); code != kvstore.ZOK {
				c.reply(xid, zxid, code, nil)
				return
			}
			n, _ := v.AllChildrenNumber(b.Path)
			c.reply(xid, zxid, 0, &GetAllChildrenNumberResponse{TotalNumber: n})
		})
	case *GetEphemeralsRequest:
		c.reply(xid, zxid, 0, &GetEphemeralsResponse{Ephemerals: nonNil(c.s.store.ZKEphemerals(c.sess, b.PrefixPath))})
	case *MultiRequest: // multiRead
		c.multiRead(xid, zxid, b)
	case *SyncRequest:
		// A round through the leader: once it is applied here, this member has
		// everything that was committed when the sync was sent.
		if _, err := c.propose(&kvstore.ZKTxn{Kind: kvstore.ZKTxnTouch, Sessions: []int64{c.sess}}); err != nil {
			return false
		}
		c.reply(xid, c.s.store.ZKLastZxid(), 0, &SyncResponse{Path: b.Path})
	case *AuthPacket:
		// The reply echoes the request's xid: Java and C send −4 (XidAuth), go-zookeeper
		// a numbered xid it waits on.
		id, ok := authID(b)
		if !ok {
			c.reply(xid, 0, kvstore.ZAuthFailed, nil)
			return false
		}
		c.auth = appendID(c.auth, id)
		c.reply(xid, 0, 0, nil)
	case *SetWatches:
		c.setWatches(xid, b.RelativeZxid, b.DataWatches, b.ExistWatches, b.ChildWatches, nil, nil)
	case *SetWatches2:
		c.setWatches(xid, b.RelativeZxid, b.DataWatches, b.ExistWatches, b.ChildWatches, b.PersistentWatches, b.PersistentRecursiveWatches)
	case *AddWatchRequest:
		switch b.Mode {
		case addWatchPersistent:
			c.watch(b.Path, watchPersistent)
		case addWatchPersistentRecursive:
			c.watch(b.Path, watchRecursive)
		default:
			c.reply(xid, zxid, kvstore.ZBadArguments, nil)
			return true
		}
		c.reply(xid, zxid, 0, &ErrorResponse{Err: 0})
	case *CheckWatchesRequest:
		if !c.s.watches.has(b.Path, c, watchKinds(b.Type)) {
			c.reply(xid, zxid, kvstore.ZNoWatcher, nil)
			return true
		}
		c.reply(xid, zxid, 0, nil)
	case *RemoveWatchesRequest:
		if !c.s.watches.remove(b.Path, c, watchKinds(b.Type)) {
			c.reply(xid, zxid, kvstore.ZNoWatcher, nil)
			return true
		}
		c.reply(xid, zxid, 0, nil)
	case *ReconfigRequest:
		c.reply(xid, zxid, kvstore.ZReconfigDisabled, nil)
	default:
		c.reply(xid, zxid, kvstore.ZUnimplemented, nil)
	}
	return true
}

// answer queues a reply that needs nothing from the store, in order behind the writes.
func (c *conn) answer(xid, code int32, body Record) bool {
	if !c.flushBatch() {
		return false
	}
	c.reply(xid, c.s.store.ZKLastZxid(), code, body)
	return true
}

// maskDigests is what ZooKeeper shows of an ACL to a session without ADMIN on the
// node: every digest id keeps its user name, and ":x" replaces its hash.
func maskDigests(acl []kvstore.ZKACL) []kvstore.ZKACL {
	out := make([]kvstore.ZKACL, len(acl))
	for i, a := range acl {
		if a.Scheme == "digest" {
			if user, _, ok := strings.Cut(a.ID, ":"); ok {
				a.ID = user + ":x"
			}
		}
		out[i] = a
	}
	return out
}

// readable finds path and checks that the session may read it with one of perm's bits.
func (c *conn) readable(v *kvstore.ZKView, path string, perm int32) (kvstore.ZKNode, int32) {
	n, ok := v.Get(path)
	if !ok {
		return n, kvstore.ZNoNode
	}
	for bit := int32(1); bit <= kvstore.ZKPermAdmin; bit <<= 1 {
		if perm&bit != 0 && kvstore.ZKCheckPerm(n.ACL, bit, c.auth) {
			return n, kvstore.ZOK
		}
	}
	return n, kvstore.ZNoAuth
}

func (c *conn) children(xid int32, zxid int64, path string, watch, withStat bool) {
	c.s.store.ZKView(func(v *kvstore.ZKView) {
		if _, code := c.readable(v, path, kvstore.ZKPermRead); code != kvstore.ZOK {
			c.reply(xid, zxid, code, nil)
			return
		}
		names, n, _ := v.Children(path)
		if watch {
			c.watch(path, watchChild)
		}
		if withStat {
			c.reply(xid, zxid, 0, &GetChildren2Response{Children: nonNil(names), Stat: n.Stat})
		} else {
			c.reply(xid, zxid, 0, &GetChildrenResponse{Children: nonNil(names)})
		}
	})
}

func (c *conn) multiRead(xid int32, zxid int64, m *MultiRequest) {
	resp := &MultiResponse{Results: make([]MultiResult, len(m.Ops))}
	c.s.store.ZKView(func(v *kvstore.ZKView) {
		for i, op := range m.Ops {
			r := &resp.Results[i]
			switch b := op.Body.(type) {
			case *GetDataRequest:
				n, code := c.readable(v, b.Path, kvstore.ZKPermRead)
				if code != kvstore.ZOK {
					*r = MultiResult{Type: kvstore.ZKOpError, Err: code}
					continue
				}
				*r = MultiResult{Type: kvstore.ZKOpGetData, Data: n.Data, Stat: n.Stat}
			case *GetChildrenRequest:
				if _, code := c.readable(v, b.Path, kvstore.ZKPermRead); code != kvstore.ZOK {
					*r = MultiResult{Type: kvstore.ZKOpError, Err: code}
					continue
				}
				names, _, _ := v.Children(b.Path)
				*r = MultiResult{Type: kvstore.ZKOpGetChildren, Children: nonNil(names)}
			}
		}
	})
	c.reply(xid, zxid, 0, resp)
}

// multiTxn turns a multi's ops into one transaction, or returns the error that answers
// the whole request.
func (c *conn) multiTxn(m *MultiRequest) (*kvstore.ZKTxn, int32) {
	t := &kvstore.ZKTxn{Kind: kvstore.ZKTxnMulti, Ops: make([]kvstore.ZKOp, 0, len(m.Ops))}
	for _, op := range m.Ops {
		var z kvstore.ZKOp
		switch b := op.Body.(type) {
		case *CreateRequest:
			if !c.s.cfg.ExtendedTypes && isTTLMode(b.Flags) {
				return nil, kvstore.ZMarshallingError // the whole request, as ZooKeeper
			}
			z = kvstore.ZKOp{Type: op.Type, Path: b.Path, Data: b.Data, ACL: b.ACL, Mode: b.Flags}
			if op.Type == kvstore.ZKOpCreateContainer {
				z.Mode = kvstore.ZKContainer
			}
		case *CreateTTLRequest:
			z = kvstore.ZKOp{Type: op.Type, Path: b.Path, Data: b.Data, ACL: b.ACL, Mode: b.Flags, TTL: b.TTL}
			if !c.s.cfg.ExtendedTypes {
				// ZooKeeper fails the multi at this op: the store answers an op it does
				// not know with ZUnimplemented
				z = kvstore.ZKOp{Type: kvstore.ZKOpError, Path: b.Path}
			}
		case *DeleteRequest:
			z = kvstore.ZKOp{Type: op.Type, Path: b.Path, Version: b.Version}
		case *SetDataRequest:
			z = kvstore.ZKOp{Type: op.Type, Path: b.Path, Data: b.Data, Version: b.Version}
		case *CheckVersionRequest:
			z = kvstore.ZKOp{Type: op.Type, Path: b.Path, Version: b.Version}
		default:
			return nil, kvstore.ZUnimplemented
		}
		t.Ops = append(t.Ops, z)
	}
	return t, kvstore.ZOK
}

// watch registers a watch of kind k on path for this connection.
func (c *conn) watch(path string, k watchKind) {
	c.s.watches.add(path, c, k)
	c.watched[path] = struct{}{}
}

func (c *conn) pathsWatched() []string {
	out := make([]string, 0, len(c.watched))
	for p := range c.watched {
		out = append(out, p)
	}
	return out
}

// setWatches re-establishes a reconnecting client's watches (DataTree.setWatches): a
// watch whose node changed after relZxid, the last zxid the client saw, fires at once
// instead of being set.
func (c *conn) setWatches(xid int32, relZxid int64, data, exist, child, persistent, recursive []string) {
	c.s.store.ZKView(func(v *kvstore.ZKView) {
		for _, p := range data {
			n, ok := v.Get(p)
			switch {
			case !ok:
				c.notify(kvstore.ZKEventNodeDeleted, p)
			case n.Stat.Mzxid > relZxid:
				c.notify(kvstore.ZKEventNodeDataChanged, p)
			default:
				c.watch(p, watchData)
			}
		}
		for _, p := range exist {
			if _, ok := v.Get(p); ok {
				c.notify(kvstore.ZKEventNodeCreated, p)
			} else {
				c.watch(p, watchData)
			}
		}
		for _, p := range child {
			n, ok := v.Get(p)
			switch {
			case !ok:
				c.notify(kvstore.ZKEventNodeDeleted, p)
			case n.Stat.Pzxid > relZxid:
				c.notify(kvstore.ZKEventNodeChildrenChanged, p)
			default:
				c.watch(p, watchChild)
			}
		}
		for _, p := range persistent {
			c.watch(p, watchPersistent)
		}
		for _, p := range recursive {
			c.watch(p, watchRecursive)
		}
	})
	c.reply(xid, c.s.store.ZKLastZxid(), 0, nil)
}

// watchKinds maps a WatcherType to the watches it names.
func watchKinds(t int32) watchKind {
	switch t {
	case watcherChildren:
		return watchChild
	case watcherData:
		return watchData
	case watcherAny:
		return watchData | watchChild | watchPersistent | watchRecursive
	}
	return 0
}

// authID turns an auth packet into an identity. Only the digest scheme is supported
// (DigestAuthenticationProvider): "user:password" becomes user:base64(sha1(user:password)).
func authID(p *AuthPacket) (kvstore.ZKID, bool) {
	if p.Scheme != "digest" {
		return kvstore.ZKID{}, false
	}
	i := bytes.IndexByte(p.Auth, ':')
	if i < 0 {
		return kvstore.ZKID{}, false
	}
	sum := sha1.Sum(p.Auth)
	return kvstore.ZKID{Scheme: "digest", ID: string(p.Auth[:i]) + ":" + base64.StdEncoding.EncodeToString(sum[:])}, true
}

func appendID(ids []kvstore.ZKID, id kvstore.ZKID) []kvstore.ZKID {
	for _, x := range ids {
		if x == id {
			return ids
		}
	}
	// A new slice: batches already proposed hold the old one.
	out := make([]kvstore.ZKID, len(ids), len(ids)+1)
	copy(out, ids)
	return append(out, id)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// nopWriter ignores the Redis-shaped replies: ZooKeeper results come through ZKResult.
type nopWriter struct{}

func (nopWriter) Status(string)     {}
func (nopWriter) Error(string)      {}
func (nopWriter) Int(int64)         {}
func (nopWriter) Bulk([]byte)       {}
func (nopWriter) BulkString(string) {}
func (nopWriter) Null()             {}
func (nopWriter) NullArray()        {}
func (nopWriter) Array(int)         {}
func (nopWriter) Map(int)           {}
func (nopWriter) Set(int)           {}
func (nopWriter) Double(float64)    {}
func (nopWriter) Resp3() bool       { return false }

// isTTLMode reports a TTL create mode, which ZooKeeper refuses as unimplemented unless
// extended types are enabled, whichever create op carries it.
func isTTLMode(mode int32) bool {
	return mode == kvstore.ZKPersistentWithTTL || mode == kvstore.ZKPersistentSequentialWithTTL
}
