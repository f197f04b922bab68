package mcproto

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nanokv/nanokv/kvstore"
)

// lru_crawler, as memcached 1.6 answers it. Its use here is metadump, which tools such as
// memcached-tool's dump use to list every item: nanokv lists the items memcached's get
// would find (database 0's strings), with the sizes and slab classes memcached would give
// them. What nanokv does not keep it reports as memcached does for an item never fetched:
// la (last access) as 0 and fetch=no. The other subcommands are checked as memcached
// checks them and answered OK: the leader deletes expired items actively (a crawl has
// nothing to reclaim).

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
		size := itemSize(len(key), it.Flags, len(it.Value))
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
		c.out = fmt.Appendf(c.out, " exp=%d la=0 cas=%d fetch=no cls=%d size=%d\n", exp, it.CAS, cls, size)
	})
	c.out = append(c.out, "END\r\n"...)
}
