package resp

import (
	"runtime"
	"strconv"
	"strings"
)

// MEMORY STATS, DOCTOR and MALLOC-STATS, with Redis 7.0's fields and texts over what Go's
// runtime measures: "allocated" is the heap's live objects (INFO's used_memory),
// "active" the heap spans in use, "resident" the process's RSS; the peak is the heap the
// runtime holds (INFO's used_memory_peak). Replication backlog, AOF buffer and cluster
// links are 0: nanokv has none of Redis's; a client's buffers are counted as its read
// buffer.

// startupHeap is the heap in use when the first Server was made (startup.allocated).
var startupHeap = func() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}()

type memStats struct {
	peak, total, startup, clients, overhead uint64
	keys                                    int
	allocated, active, resident             uint64
	dbs                                     []dbOverhead
}

type dbOverhead struct {
	db            int
	keys, expires int
}

func (s *Server) memStats() memStats {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	st := memStats{peak: m.HeapSys, total: m.HeapAlloc, allocated: m.HeapAlloc, active: m.HeapInuse, resident: rss()}
	st.startup, st.clients, st.overhead = s.overhead(m.HeapAlloc)
	keys, expires := s.b.Store().KeyspaceInfo()
	for db := range keys {
		st.keys += keys[db]
		if keys[db] > 0 {
			st.dbs = append(st.dbs, dbOverhead{db, keys[db], expires[db]})
		}
	}
	return st
}

// overhead is what of used memory is not the dataset, as Redis counts it: the heap at
// start, and the clients' buffers (a read buffer each).
func (s *Server) overhead(used uint64) (startup, clients, total uint64) {
	startup = min(startupHeap, used)
	clients = uint64(s.NumClients()) * readBufSize
	return startup, clients, startup + clients
}

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(float32(float64(a) / float64(b))) // Redis computes these as floats
}

func diff(a, b uint64) int64 { return int64(a) - int64(b) }

func memoryStats(c *conn) {
	st := c.s.memStats()
	dataset := st.total - min(st.overhead, st.total)
	perKey := uint64(0)
	if st.keys > 0 {
		perKey = (st.total - st.startup) / uint64(st.keys)
	}
	c.Map(27 + len(st.dbs))
	kv := func(k string, v int64) { c.BulkString(k); c.Int(v) }
	kd := func(k string, v float64) { c.BulkString(k); c.Double(v) }
	kv("peak.allocated", int64(st.peak))
	kv("total.allocated", int64(st.total))
	kv("startup.allocated", int64(st.startup))
	kv("replication.backlog", 0)
	kv("clients.slaves", 0)
	kv("clients.normal", int64(st.clients))
	kv("cluster.links", 0)
	kv("aof.buffer", 0)
	kv("lua.caches", 0)
	kv("functions.caches", 0)
	for _, d := range st.dbs {
		c.BulkString("db." + strconv.Itoa(d.db))
		c.Map(2)
		kv("overhead.hashtable.main", int64(d.keys)*16) // a key-table entry and its hash
		kv("overhead.hashtable.expires", int64(d.expires)*16)
	}
	kv("overhead.total", int64(st.overhead))
	kv("keys.count", int64(st.keys))
	kv("keys.bytes-per-key", int64(perKey))
	kv("dataset.bytes", int64(dataset))
	kd("dataset.percentage", 100*ratio(dataset, st.total-st.startup))
	kd("peak.percentage", 100*ratio(st.total, st.peak))
	kv("allocator.allocated", int64(st.allocated))
	kv("allocator.active", int64(st.active))
	kv("allocator.resident", int64(st.resident))
	kd("allocator-fragmentation.ratio", ratio(st.active, st.allocated))
	kv("allocator-fragmentation.bytes", diff(st.active, st.allocated))
	kd("allocator-rss.ratio", ratio(st.resident, st.active))
	kv("allocator-rss.bytes", diff(st.resident, st.active))
	kd("rss-overhead.ratio", 1)
	kv("rss-overhead.bytes", 0)
	kd("fragmentation", ratio(st.resident, st.total))
	kv("fragmentation.bytes", diff(st.resident, st.total))
}

// memoryDoctor is Redis's report: the empty-instance text under 5 MB, then those of its
// checks whose measures mean here what they mean in Redis (the allocator's fragmentation
// and the RSS it holds beyond its pages in use), else all clear. Redis's peak and
// total-RSS checks are left out: Go's heap keeps room to grow between collections by
// design, and they would always fire.
func memoryDoctor(c *conn) {
	st := c.s.memStats()
	if st.total < 5<<20 {
		c.Verbatim("Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n")
		return
	}
	var issues []string
	if ratio(st.active, st.allocated) > 1.1 && st.active-st.allocated > 10<<20 {
		issues = append(issues, " * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n")
	}
	if ratio(st.resident, st.active) > 1.1 && st.resident-st.active > 10<<20 {
		issues = append(issues, " * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n")
	}
	if len(issues) == 0 {
		c.Verbatim("Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n")
		return
	}
	c.Verbatim("Sam, I detected a few issues in this Redis instance memory implants:\n\n" + strings.Join(issues, "") +
		"I'm here to keep you safe, Sam. I want to help you.\n")
}
