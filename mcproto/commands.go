package mcproto

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"syscall"
	"time"

	"github.com/nanokv/nanokv/kvstore"
)

const (
	errBadLine    = "CLIENT_ERROR bad command line format"
	errBadExptime = "CLIENT_ERROR invalid exptime argument"
	errBadDelta   = "CLIENT_ERROR invalid numeric delta argument"
	errTooLarge   = "SERVER_ERROR object too large for cache"
	errNoMemory   = "SERVER_ERROR out of memory storing object"
)

// handle runs one request; its checks and their order follow memcached 1.6's
// proto_text.c, so that the same bad input gets the same reply.
func (c *conn) handle(req *Request) {
	switch req.Kind {
	case KindError:
		c.refused(req)
	case KindGet, KindGets:
		c.handleGet(req.Tokens[1:], req.Kind == KindGets)
	case KindGat, KindGats:
		c.handleGat(req)
	case KindSet, KindAdd, KindReplace, KindAppend, KindPrepend, KindCas:
		c.handleStore(req)
	case KindIncr, KindDecr:
		c.handleIncr(req)
	case KindDelete:
		c.handleDelete(req)
	case KindTouch:
		c.handleTouch(req)
	case KindFlushAll:
		c.handleFlush(req)
	case KindVerbosity:
		if _, ok := ParseUint32(req.Tokens[1]); !ok {
			c.replyUnlessNoreply(req.Noreply, errBadLine)
			return
		}
		v, _ := ParseUint32(req.Tokens[1])
		c.s.stats.verbosity.Store(v)
		c.replyUnlessNoreply(req.Noreply, "OK")
	case KindCacheMemlimit:
		c.handleCacheMemlimit(req)
	case KindVersion:
		c.reply("VERSION " + c.s.cfg.Version)
	case KindQuit:
		c.quit = true
	case KindStats:
		c.handleStats(req.Tokens[1:])
	case KindLRUCrawler:
		c.handleLRUCrawler(req.Tokens[1:])
	case KindShutdown:
		c.reply("ERROR: shutdown not enabled") // as memcached without -A
	case KindMetaNoop:
		c.reply("MN")
	case KindMetaDebug:
		c.handleMetaDebug(req.Tokens)
	case KindMetaGet:
		c.handleMetaGet(req.Tokens)
	case KindMetaSet:
		c.handleMetaSet(req)
	case KindMetaDelete:
		c.handleMetaDelete(req.Tokens)
	case KindMetaArith:
		c.handleMetaArith(req.Tokens)
	}
}

// handleCacheMemlimit is memcached's cache_memlimit <megabytes> [noreply]: it sets the
// node's maxmemory (the limit Redis's CONFIG SET maxmemory sets too), with memcached
// 1.6's replies to a bad value.
func (c *conn) handleCacheMemlimit(req *Request) {
	mb, ok := ParseUint32(req.Tokens[1])
	switch {
	case !ok:
		c.replyUnlessNoreply(req.Noreply, "ERROR")
	case mb < 8:
		c.replyUnlessNoreply(req.Noreply, "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m")
	case mb > 1_000_000_000:
		c.replyUnlessNoreply(req.Noreply, "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes")
	case c.s.cfg.Memory == nil:
		c.replyUnlessNoreply(req.Noreply, "MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust")
	default:
		c.s.cfg.Memory.SetLimit(int64(mb) << 20)
		c.replyUnlessNoreply(req.Noreply, "OK")
	}
}

func (c *conn) replyUnlessNoreply(noreply bool, line string) {
	if !noreply {
		c.reply(line)
	}
}

// refused answers a request the codec refused. A set refused for its size also removes
// the old item (memcached does not let a failed set leave stale data behind), and so
// does an ms refused for its size, whatever its mode (memcached 1.6.18 does not look).
func (c *conn) refused(req *Request) {
	meta := req.Kind == KindError && req.Meta != nil
	if req.TooLarge {
		c.s.stats.storeTooLarge.Add(1)
		if meta || len(req.Tokens) > 0 && string(req.Tokens[0]) == "set" {
			c.unstore(req, errTooLarge, meta)
			return
		}
	}
	if req.Noreply && !meta {
		return
	}
	c.reply(req.Err)
}

// unstore answers a set or an ms that could not be stored with line, deleting the
// key's old item first, as memcached does so that a failed set leaves no stale value.
func (c *conn) unstore(req *Request, line string, meta bool) {
	noreply := req.Noreply && !meta
	c.write(kvstore.AppendMCDelete(c.batch, req.Key, kvstore.MCNoValue), pending{kind: pLitOp, lit: line, noreply: noreply}, true)
}

// outOfMemory refuses a storage request while used memory is over maxmemory, as
// memcached -M refuses one when it cannot allocate the item: a set or an ms also
// deletes the old item (memcached's process_update_command and process_mset_command),
// the others leave it.
func (c *conn) outOfMemory(req *Request, meta bool) {
	c.s.stats.storeNoMemory.Add(1)
	if meta || req.Kind == KindSet {
		c.unstore(req, errNoMemory, meta)
		return
	}
	c.replyUnlessNoreply(req.Noreply, errNoMemory)
}

func (c *conn) handleGet(keys [][]byte, withCAS bool) {
	c.flushBatch()
	if !c.readBarrier() {
		return
	}
	for _, k := range keys {
		if len(k) > MaxKeyLen {
			c.out = append(c.out, errBadLine+"\r\n"...)
			return
		}
		c.s.stats.cmdGet.Add(1)
		it, ok := c.get(k, true)
		if !ok {
			c.s.stats.getMisses.Add(1)
			continue
		}
		c.s.stats.getHits.Add(1)
		c.appendValue(k, it.Value, it.Flags, it.CAS, withCAS)
	}
	c.out = append(c.out, "END\r\n"...)
}

// appendValue appends "VALUE <key> <flags> <bytes> [<cas>]\r\n<data>\r\n".
func (c *conn) appendValue(key []byte, val string, flags uint32, cas uint64, withCAS bool) {
	c.out = append(c.out, "VALUE "...)
	c.out = append(c.out, key...)
	c.out = append(c.out, ' ')
	c.out = strconv.AppendUint(c.out, uint64(flags), 10)
	c.out = append(c.out, ' ')
	c.out = strconv.AppendInt(c.out, int64(len(val)), 10)
	if withCAS {
		c.out = append(c.out, ' ')
		c.out = strconv.AppendUint(c.out, cas, 10)
	}
	c.out = append(c.out, "\r\n"...)
	c.out = append(c.out, val...)
	c.out = append(c.out, "\r\n"...)
}

func (c *conn) handleGat(req *Request) {
	exptime, ok := ParseInt32(req.Tokens[1])
	if !ok {
		c.reply(errBadExptime)
		return
	}
	keys := req.Tokens[2:]
	for _, k := range keys {
		if len(k) > MaxKeyLen {
			c.reply(errBadLine)
			return
		}
	}
	for _, k := range keys {
		c.s.stats.cmdTouch.Add(1)
		c.write(kvstore.AppendMCTouch(c.batch, k, exptime), pending{kind: pGat, key: k, cas: req.Kind == KindGats}, false)
	}
	c.reply("END")
}

var storeModes = map[Kind]kvstore.MCStore{
	KindSet: kvstore.MCSet, KindAdd: kvstore.MCAdd, KindReplace: kvstore.MCReplace,
	KindAppend: kvstore.MCAppend, KindPrepend: kvstore.MCPrepend, KindCas: kvstore.MCSet,
}

func (c *conn) handleStore(req *Request) {
	if c.s.cfg.Memory.Refusing() {
		c.outOfMemory(req, false)
		return
	}
	c.s.stats.cmdSet.Add(1)
	cas := kvstore.MCNoValue
	if req.Kind == KindCas {
		cas = strconv.FormatUint(req.CAS, 10)
	}
	c.write(kvstore.AppendMCStore(c.batch, storeModes[req.Kind], req.Key, req.Data, req.Flags, req.Exptime, cas, kvstore.MCNoValue),
		pending{kind: pStore, noreply: req.Noreply, cas: req.Kind == KindCas}, req.Kind == KindSet)
}

func (c *conn) handleIncr(req *Request) {
	t := req.Tokens
	if len(t[1]) > MaxKeyLen {
		c.replyUnlessNoreply(req.Noreply, errBadLine)
		return
	}
	delta, ok := ParseUint64(t[2])
	if !ok {
		c.replyUnlessNoreply(req.Noreply, errBadDelta)
		return
	}
	decr := req.Kind == KindDecr
	kind := pIncr
	if decr {
		kind = pDecr
	}
	c.write(kvstore.AppendMCIncr(c.batch, t[1], decr, delta, kvstore.MCNoValue, kvstore.MCNoValue, 0, kvstore.MCNoValue),
		pending{kind: kind, noreply: req.Noreply}, false)
}

func (c *conn) handleDelete(req *Request) {
	t := req.Tokens
	if len(t) > 2 {
		holdIsZero := string(t[2]) == "0"
		valid := (len(t) == 3 && (holdIsZero || req.Noreply)) || (len(t) == 4 && holdIsZero && req.Noreply)
		if !valid {
			c.replyUnlessNoreply(req.Noreply, "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]")
			return
		}
	}
	if len(t[1]) > MaxKeyLen {
		c.replyUnlessNoreply(req.Noreply, errBadLine)
		return
	}
	c.write(kvstore.AppendMCDelete(c.batch, t[1], kvstore.MCNoValue), pending{kind: pDelete, noreply: req.Noreply}, false)
}

func (c *conn) handleTouch(req *Request) {
	t := req.Tokens
	if len(t[1]) > MaxKeyLen {
		c.replyUnlessNoreply(req.Noreply, errBadLine)
		return
	}
	exptime, ok := ParseInt32(t[2])
	if !ok {
		c.replyUnlessNoreply(req.Noreply, errBadExptime)
		return
	}
	c.s.stats.cmdTouch.Add(1)
	c.write(kvstore.AppendMCTouch(c.batch, t[1], exptime), pending{kind: pTouch, noreply: req.Noreply}, false)
}

func (c *conn) handleFlush(req *Request) {
	t := req.Tokens
	var delay int64
	want := 1
	if req.Noreply {
		want = 2
	}
	if len(t) != want {
		v, ok := ParseInt32(t[1])
		if !ok {
			c.replyUnlessNoreply(req.Noreply, errBadExptime)
			return
		}
		delay = v
	}
	c.s.stats.cmdFlush.Add(1)
	c.write(kvstore.AppendMCFlush(c.batch, delay), pending{kind: pFlush, noreply: req.Noreply}, true)
}

// render writes the reply of one op; r is nil for a blind batch answered at commit.
func (c *conn) render(p *pending, r *result) {
	if r != nil && r.err != "" {
		// errors from the applier (non-numeric incr, too large append)
		if !p.noreply {
			c.line(r.err)
		}
		return
	}
	code := ""
	if r != nil {
		code = r.code
	}
	st := &c.s.stats
	switch p.kind {
	case pLitOp:
		if !p.noreply {
			c.line(p.lit)
		}
	case pStore:
		if r == nil {
			code = kvstore.MCStored
		}
		if p.cas {
			switch code {
			case kvstore.MCStored:
				st.casHits.Add(1)
			case kvstore.MCExists:
				st.casBadval.Add(1)
			case kvstore.MCNotFound:
				st.casMisses.Add(1)
			}
		}
		if code == kvstore.MCStored {
			st.totalItems.Add(1)
		}
		if !p.noreply {
			c.line(code)
		}
	case pDelete:
		if code == kvstore.MCDeleted {
			st.deleteHits.Add(1)
		} else {
			st.deleteMisses.Add(1)
		}
		if !p.noreply {
			c.line(code)
		}
	case pIncr, pDecr:
		hit := code == kvstore.MCOK
		switch {
		case p.kind == pIncr && hit:
			st.incrHits.Add(1)
		case p.kind == pIncr:
			st.incrMisses.Add(1)
		case hit:
			st.decrHits.Add(1)
		default:
			st.decrMisses.Add(1)
		}
		if p.noreply {
			return
		}
		if hit {
			c.line(counter(r.val))
		} else {
			c.line(code)
		}
	case pTouch:
		if code == kvstore.MCTouched {
			st.touchHits.Add(1)
		} else {
			st.touchMisses.Add(1)
		}
		if !p.noreply {
			c.line(code)
		}
	case pGat:
		if code == kvstore.MCTouched && r.hasVal {
			st.touchHits.Add(1)
			st.getHits.Add(1)
			c.appendValue(p.key, r.val, r.flags, r.cas, p.cas)
		} else {
			st.touchMisses.Add(1)
			st.getMisses.Add(1)
		}
	case pFlush:
		if !p.noreply {
			c.line("OK")
		}
	case pMetaGet:
		it := metaItem{key: p.key, binary: p.meta.Binary}
		if win := code == kvstore.MCWon; (win || code == kvstore.MCTouched) && r.hasVal {
			it = metaItem{key: p.key, binary: r.binKey, flags: r.flags, cas: r.cas, size: len(r.val), ttl: r.ttl,
				idle: p.meta.idle, fetched: p.meta.fetched, hit: true, stale: r.stale, wonBefore: r.won && !win, win: win}
		}
		if p.meta.vivifying {
			// memcached counts an item mg N created as a hit, and as an item stored
			if it.hit {
				st.getHits.Add(1)
				if it.win {
					st.totalItems.Add(1)
				}
			} else {
				st.getMisses.Add(1)
			}
		}
		c.renderMetaGet(p.meta, &it, r.val)
	case pMetaSet:
		c.renderMetaSet(p, r, code)
	case pMetaDel:
		c.renderMetaDelete(p, code)
	case pMetaArith:
		c.renderMetaArith(p, r, code)
	}
}

func (c *conn) line(s string) {
	c.out = append(c.out, s...)
	c.out = append(c.out, "\r\n"...)
}

// --- stats ----------------------------------------------------------------------------

// heapObjectBytes is the memory the process's objects take, what nanokv reports as
// memcached's "bytes" (the memory its items take): nanokv keeps every key and value in
// its heap, Redis's too, as INFO's used_memory tells.
func heapObjectBytes() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

func (c *conn) handleStats(args [][]byte) {
	c.flushBatch()
	// the item counts include the connection's own writes, answered at commit
	if !c.readBarrier() {
		return
	}
	var b []byte
	stat := func(name string, v any) { b = fmt.Appendf(b, "STAT %s %v\r\n", name, v) }
	s := c.s
	sub := ""
	if len(args) > 0 {
		sub = string(args[0])
	}
	switch sub {
	case "":
		now := time.Now()
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		st := &s.stats
		stat("pid", os.Getpid())
		stat("uptime", int64(now.Sub(s.start).Seconds()))
		stat("time", now.Unix())
		stat("version", s.cfg.Version)
		stat("pointer_size", strconv.IntSize)
		stat("rusage_user", fmt.Sprintf("%d.%06d", ru.Utime.Sec, ru.Utime.Usec))
		stat("rusage_system", fmt.Sprintf("%d.%06d", ru.Stime.Sec, ru.Stime.Usec))
		stat("max_connections", s.cfg.MaxConns)
		stat("curr_connections", s.NumConns())
		stat("total_connections", st.totalConns.Load())
		stat("rejected_connections", st.rejectedConns.Load())
		stat("cmd_get", st.cmdGet.Load())
		stat("cmd_set", st.cmdSet.Load())
		stat("cmd_flush", st.cmdFlush.Load())
		stat("cmd_touch", st.cmdTouch.Load())
		stat("cmd_meta", st.cmdMeta.Load())
		stat("get_hits", st.getHits.Load())
		stat("get_misses", st.getMisses.Load())
		stat("get_expired", st.getExpired.Load())
		stat("get_flushed", st.getFlushed.Load())
		stat("delete_misses", st.deleteMisses.Load())
		stat("delete_hits", st.deleteHits.Load())
		stat("incr_misses", st.incrMisses.Load())
		stat("incr_hits", st.incrHits.Load())
		stat("decr_misses", st.decrMisses.Load())
		stat("decr_hits", st.decrHits.Load())
		stat("cas_misses", st.casMisses.Load())
		stat("cas_hits", st.casHits.Load())
		stat("cas_badval", st.casBadval.Load())
		stat("touch_hits", st.touchHits.Load())
		stat("touch_misses", st.touchMisses.Load())
		stat("store_too_large", st.storeTooLarge.Load())
		stat("store_no_memory", st.storeNoMemory.Load())
		stat("auth_cmds", 0)
		stat("auth_errors", 0)
		stat("bytes_read", st.bytesRead.Load())
		stat("bytes_written", st.bytesWritten.Load())
		stat("limit_maxbytes", s.cfg.Memory.Limit()) // memcached's -m: maxmemory
		stat("accepting_conns", 1)
		stat("threads", runtime.GOMAXPROCS(0))
		stat("bytes", heapObjectBytes())
		stat("curr_items", s.b.Store().MCItemCount())
		stat("total_items", st.totalItems.Load())
		expiredUnfetched, evictedUnfetched := s.b.Store().UnfetchedCounts()
		stat("expired_unfetched", expiredUnfetched)
		stat("evicted_unfetched", evictedUnfetched)
		stat("evictions", s.b.Store().EvictedCount())
		stat("reclaimed", s.b.Store().ExpiredCount())
	case "settings":
		stat("maxbytes", s.cfg.Memory.Limit())
		stat("maxconns", s.cfg.MaxConns)
		stat("tcpport", s.cfg.Port)
		stat("udpport", 0)
		stat("inter", s.cfg.Bind)
		stat("verbosity", s.stats.verbosity.Load())
		evictions := "off" // memcached -M; on: a policy that evicts
		if s.cfg.Memory.Policy() != 0 {
			evictions = "on"
		}
		stat("evictions", evictions)
		stat("cas_enabled", "yes")
		stat("binding_protocol", "ascii")
		stat("item_size_max", s.cfg.ItemSizeMax)
		stat("num_threads", runtime.GOMAXPROCS(0))
		stat("flush_enabled", "yes")
	case "items":
		c.statsItems(stat)
	case "slabs":
		c.statsSlabs(stat)
	case "conns":
		c.statsConns(stat)
	case "reset":
		s.stats.resetCounters()
		c.line("RESET")
		return
	case "sizes":
		stat("sizes_status", "disabled") // memcached's default: no size histogram
	case "cachedump":
		c.cachedump(args[1:])
		return
	case "detail":
		// per-prefix statistics: nanokv keeps none, so a dump is empty
		switch {
		case len(args) >= 2 && (string(args[1]) == "on" || string(args[1]) == "off"):
			c.line("OK")
			return
		case len(args) >= 2 && string(args[1]) == "dump":
		default:
			c.line("CLIENT_ERROR usage: stats detail on|off|dump")
			return
		}
	default:
		c.line("ERROR")
		return
	}
	c.out = append(c.out, b...)
	c.out = append(c.out, "END\r\n"...)
}

func (st *stats) resetCounters() {
	for _, v := range []interface{ Store(uint64) }{
		&st.totalConns, &st.rejectedConns, &st.cmdGet, &st.cmdSet, &st.cmdFlush, &st.cmdTouch, &st.cmdMeta,
		&st.getHits, &st.getMisses, &st.getExpired, &st.getFlushed, &st.deleteHits, &st.deleteMisses, &st.incrHits, &st.incrMisses,
		&st.decrHits, &st.decrMisses, &st.casHits, &st.casMisses, &st.casBadval, &st.touchHits,
		&st.touchMisses, &st.storeTooLarge, &st.storeNoMemory, &st.bytesRead, &st.bytesWritten, &st.totalItems,
	} {
		v.Store(0)
	}
}
