package mcproto

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nanokv/nanokv/kvstore"
)

// lru_crawler, as memcached 1.6 answers it. Its use here is metadump, which tools such as
// memcached-tool's dump use to list every item: nanokv lists the items memcached's get
// would find (database 0's strings), with the sizes and slab classes memcached would give
// them, the unix second of each item's last access (la; to the minute under an LFU
// policy, whose clock keeps the minute beside the counter) and whether it was read since
// stored (fetch).
// The other subcommands are checked as memcached checks them and answered OK: the
// leader deletes expired items actively (a crawl has nothing to reclaim).

// slabClasses are memcached 1.6's default slab class sizes (-n 48, -f 1.25, 1 MiB pages):
// what slabs_init computes, the last one the largest chunk.
var slabClasses = func() []int {
	var out []int
	for size := 96; float64(size) < float64(512<<10)/1.25; size = int(float64(size) * 1.25) {
		if size%8 != 0 {
			size += 8 - size%8
		}
		out = append(out, size)
	}
	return append(out, 512<<10)
}()

// slabClass is the class (1-based) memcached stores an item of size bytes in.
func slabClass(size int) int {
	for i, s := range slabClasses {
		if size <= s {
			return i + 1
		}
	}
	return len(slabClasses) // chunked: its header sits in the largest class
}

// uriEncode escapes a key as memcached's metadump does: what is not alphanumeric or one
// of "-._~" as %XX.
func uriEncode(dst []byte, key string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(key); i++ {
		b := key[i]
		if 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-' || b == '.' || b == '_' || b == '~' {
			dst = append(dst, b)
			continue
		}
		dst = append(dst, '%', hex[b>>4], hex[b&15])
	}
	return dst
}

// parseClasses parses "all", "hash" or a comma-separated list of class ids; nil with
// ok for all classes.
func parseClasses(arg string) (set map[int]bool, ok bool) {
	if arg == "all" || arg == "hash" {
		return nil, true
	}
	set = map[int]bool{}
	for _, f := range strings.Split(arg, ",") {
		id, err := strconv.Atoi(f)
		if err != nil || id < 1 || id > len(slabClasses) {
			return nil, false
		}
		set[id] = true
	}
	return set, true
}

func (c *conn) handleLRUCrawler(args [][]byte) {
	c.flushBatch()
	if len(args) == 0 {
		c.line("ERROR")
		return
	}
	st := &c.s.stats
	switch sub := string(args[0]); {
	case sub == "metadump" && len(args) == 2:
		if !st.crawlerOn.Load() {
			c.line("CLIENT_ERROR lru crawler disabled")
			return
		}
		classes, ok := parseClasses(string(args[1]))
		if !ok {
			c.line("BADCLASS invalid class id")
			return
		}
		if !c.readBarrier() { // the dump includes the connection's own writes
			return
		}
		c.metadump(classes)
	case sub == "crawl" && len(args) == 2:
		if !st.crawlerOn.Load() {
			c.line("CLIENT_ERROR lru crawler disabled")
			return
		}
		if _, ok := parseClasses(string(args[1])); !ok {
			c.line("BADCLASS invalid class id")
			return
		}
		c.line("OK")
	case (sub == "sleep" || sub == "tocrawl") && len(args) == 2:
		n, err := strconv.ParseUint(string(args[1]), 10, 32)
		switch {
		case err != nil:
			c.line("CLIENT_ERROR bad command line format")
		case sub == "sleep" && n > 1000000:
			c.line("CLIENT_ERROR sleep must be one second or less")
		default:
			c.line("OK")
		}
	case sub == "enable" && len(args) == 1:
		if !st.crawlerOn.CompareAndSwap(false, true) {
			c.line("ERROR failed to start lru crawler thread")
			return
		}
		c.line("OK")
	case sub == "disable" && len(args) == 1:
		st.crawlerOn.Store(false)
		c.line("OK")
	default:
		c.line("ERROR")
	}
}

// metadump writes a line for every item of the classes asked for (nil: all), then END.
func (c *conn) metadump(classes map[int]bool) {
	now := time.Now()
	c.s.b.Store().MCEach(now.UnixMilli(), func(key string, it kvstore.MCItem) {
		size := kvstore.MCItemSize(len(key), it.Flags, len(it.Value))
		cls := slabClass(size)
		if classes != nil && !classes[cls] {
			return
		}
		exp := int64(-1)
		if it.Deadline != 0 {
			exp = (it.Deadline + 999) / 1000 // memcached's clock has whole seconds
		}
		c.out = append(c.out, "key="...)
		c.out = uriEncode(c.out, key)
		c.out = fmt.Appendf(c.out, " exp=%d la=%d cas=%d fetch=%s cls=%d size=%d\n", exp, now.Unix()-it.Idle, it.CAS, yesNo(it.Fetched), cls, size)
	})
	c.out = append(c.out, "END\r\n"...)
}

// maxSlabClasses is memcached's MAX_NUMBER_OF_SLAB_CLASSES (ids 0-63; 0 is never used),
// and cachedumpMax its largest cachedump reply (item_cachedump's 2 MB buffer).
const (
	maxSlabClasses = 64
	cachedumpMax   = 2 << 20
)

// cachedump is stats cachedump <class> <limit>, memcdump's way to list keys: a line
// "ITEM <key> [<value bytes> b; <expiry, unix seconds, 0: none> s]" for up to limit
// items of the class (0: no limit), within memcached's 2 MB, then END. memcached lists
// the items in the class's cold LRU, which holds every item that is neither new nor in
// active use; nanokv, which keeps no LRU segments, lists them all. As memcached, it
// leaves out the items stored with binary keys, whose bytes the line cannot carry.
func (c *conn) cachedump(args [][]byte) {
	if len(args) < 2 {
		c.line("CLIENT_ERROR bad command line")
		return
	}
	id, okID := ParseUint32(args[0])
	limit, okLimit := ParseUint32(args[1])
	switch {
	case !okID || !okLimit:
		c.line("CLIENT_ERROR bad command line format")
		return
	case id >= maxSlabClasses:
		c.line("CLIENT_ERROR Illegal slab id")
		return
	}
	start, shown, full := len(c.out), uint32(0), false
	c.s.b.Store().MCEach(time.Now().UnixMilli(), func(key string, it kvstore.MCItem) {
		if full || limit != 0 && shown == limit || it.BinaryKey || slabClass(kvstore.MCItemSize(len(key), it.Flags, len(it.Value))) != int(id) {
			return
		}
		exp := int64(0)
		if it.Deadline != 0 {
			exp = (it.Deadline + 999) / 1000 // memcached's clock has whole seconds
		}
		mark := len(c.out)
		c.out = fmt.Appendf(c.out, "ITEM %s [%d b; %d s]\r\n", key, len(it.Value), exp)
		if len(c.out)-start+6 > cachedumpMax { // 6: END\r\n and C's NUL
			c.out, full = c.out[:mark], true
			return
		}
		shown++
	})
	c.out = append(c.out, "END\r\n"...)
}

// slabPage is memcached's slab page; slabChunkMax its largest chunk (slab_chunk_max,
// half a page), past which memcached splits an item into a header and chunks of data,
// each chunk with a header of chunkHeader bytes (its item_chunk on 64-bit).
const (
	slabPage     = 1 << 20
	slabChunkMax = kvstore.MCChunkMax
	chunkHeader  = 48
)

// classUsage is what the items of one slab class would take in memcached 1.6.
type classUsage struct {
	items     int   // items:N:number
	requested int   // items:N:mem_requested: the items' own sizes
	chunks    int   // slabs N:used_chunks
	age       int64 // items:N:age: the seconds since the access of its longest idle item
}

// slabUsage counts database 0's items by the slab class memcached would store each in
// (index: class − 1), and the chunks they would take in each class.
func (c *conn) slabUsage() []classUsage {
	use := make([]classUsage, len(slabClasses))
	c.s.b.Store().MCEach(time.Now().UnixMilli(), func(key string, it kvstore.MCItem) {
		size := kvstore.MCItemSize(len(key), it.Flags, len(it.Value))
		u := &use[slabClass(size)-1]
		u.items++
		u.requested += size
		u.age = max(u.age, it.Idle)
		if size <= slabChunkMax {
			u.chunks++
			return
		}
		// a header without the value's bytes, then the value and its "\r\n" in chunks:
		// full ones of the largest size, the last one as large as what is left needs
		use[slabClass(size-len(it.Value)-2+chunkHeader)-1].chunks++
		for left := len(it.Value) + 2; left > 0; left -= slabChunkMax - chunkHeader {
			use[slabClass(min(left+chunkHeader, slabChunkMax))-1].chunks++
		}
	})
	return use
}

// statsItems answers "stats items" as memcached 1.6 does without its segmented LRU
// (-o no_lru_maintainer): nanokv keeps no LRU, so there are no hot, warm or cold
// counts, and nothing is evicted or reclaimed in place (the leader deletes expired
// items; the general "reclaimed" counts them). age is that of the class's longest idle
// item, as the tail of memcached's LRU (to the minute under an LFU policy).
func (c *conn) statsItems(stat func(string, any)) {
	for i, u := range c.slabUsage() {
		if u.items == 0 {
			continue
		}
		p := "items:" + strconv.Itoa(i+1) + ":"
		stat(p+"number", u.items)
		stat(p+"age", u.age)
		stat(p+"mem_requested", u.requested)
		for _, zero := range []string{"evicted", "evicted_nonzero", "evicted_time", "outofmemory",
			"tailrepairs", "reclaimed", "expired_unfetched", "evicted_unfetched", "crawler_reclaimed",
			"crawler_items_checked", "lrutail_reflocked"} {
			stat(p+zero, 0)
		}
	}
}

// statsSlabs answers "stats slabs": each class's chunks and the pages memcached would
// have allocated to hold the items there now. memcached's per-class command counters
// (get_hits, cmd_set, ...) are left out: nanokv counts commands, not classes.
func (c *conn) statsSlabs(stat func(string, any)) {
	active, pages := 0, 0
	for i, u := range c.slabUsage() {
		if u.chunks == 0 {
			continue
		}
		size := slabClasses[i]
		perPage := slabPage / size
		n := (u.chunks + perPage - 1) / perPage
		active++
		pages += n
		p := strconv.Itoa(i+1) + ":"
		stat(p+"chunk_size", size)
		stat(p+"chunks_per_page", perPage)
		stat(p+"total_pages", n)
		stat(p+"total_chunks", n*perPage)
		stat(p+"used_chunks", u.chunks)
		stat(p+"free_chunks", n*perPage-u.chunks)
		stat(p+"free_chunks_end", 0)
	}
	stat("active_slabs", active)
	stat("total_malloced", pages*slabPage)
}

// statsConns answers "stats conns": the listeners, then every connection, numbered as
// nanokv numbers them (memcached numbers them by file descriptor), with the seconds since
// each last sent a command (since it connected, if it has not). The asking connection is
// conn_parse_cmd, one that has sent commands conn_read, one that has not conn_new_cmd,
// as memcached 1.6 reports them between commands.
func (c *conn) statsConns(stat func(string, any)) {
	s := c.s
	now := time.Now().UnixMilli()
	s.mu.Lock()
	lns := slices.Clone(s.listeners)
	conns := make([]*conn, 0, len(s.conns))
	for o := range s.conns {
		conns = append(conns, o)
	}
	s.mu.Unlock()
	slices.SortFunc(conns, func(a, b *conn) int { return cmp.Compare(a.id, b.id) })
	for _, l := range lns {
		p := strconv.FormatUint(l.id, 10) + ":"
		stat(p+"addr", "tcp:"+l.addr)
		stat(p+"state", "conn_listening")
		stat(p+"secs_since_last_cmd", (now-s.start.UnixMilli())/1000)
	}
	for _, o := range conns {
		p := strconv.FormatUint(o.id, 10) + ":"
		last, state := o.lastCmd.Load(), "conn_read"
		switch {
		case o == c:
			state = "conn_parse_cmd"
		case last == 0:
			last, state = o.connected, "conn_new_cmd"
		}
		stat(p+"addr", "tcp:"+o.raddr)
		stat(p+"listen_addr", "tcp:"+o.laddr)
		stat(p+"state", state)
		stat(p+"secs_since_last_cmd", max(now-last, 0)/1000)
	}
}
