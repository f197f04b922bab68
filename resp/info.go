package resp

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nanokv/nanokv/kvstore"
)

// INFO's sections and fields are Redis 7.0's, in its order, so that what reads them
// (redis_exporter, RedisInsight, redis-cli --stat, a client's own parser) finds them.
// A field has a value nanokv measures, or Redis's for the state nanokv is always in
// where it lacks what the field counts (no fork, no defragmentation, no eviction, no
// Redis replication, no I/O threads: 0). Fields of things nanokv has and does not
// measure are left out rather than filled in; nanokv's own come after Redis's.
func (s *Server) infoSection(b *strings.Builder, section string, c *conn) bool {
	cfg := s.config()
	w := func(k string, v any) { fmt.Fprintf(b, "%s:%v\r\n", k, v) }
	switch section {
	case "server":
		b.WriteString("# Server\r\n")
		now := time.Now()
		up := now.Sub(s.start)
		w("redis_version", cfg.RedisVersion)
		w("redis_git_sha1", "00000000")
		w("redis_git_dirty", 0)
		w("redis_build_id", s.ids.build)
		w("redis_mode", "standalone")
		w("os", osName())
		w("arch_bits", 64)
		w("monotonic_clock", "POSIX clock_gettime")
		w("multiplexing_api", "epoll")
		w("gcc_version", "0.0.0") // not built by GCC, as Redis says of itself then
		w("process_id", os.Getpid())
		w("process_supervised", "no")
		w("run_id", s.ids.run)
		w("tcp_port", cfg.Port)
		w("server_time_usec", now.UnixMicro())
		w("uptime_in_seconds", int64(up.Seconds()))
		w("uptime_in_days", int64(up.Hours()/24))
		w("hz", 10)
		w("configured_hz", 10)
		w("lru_clock", now.Unix()&(1<<24-1)) // Redis's LRU clock: seconds, 24 bits
		w("executable", executable())
		w("config_file", cfg.ConfigFile)
		w("io_threads_active", 0)
		w("nanokv_version", cfg.Version)
		w("go_version", runtime.Version())
	case "clients":
		b.WriteString("# Clients\r\n")
		w("connected_clients", s.NumClients())
		w("cluster_connections", 0)
		w("maxclients", cfg.MaxClients)
		w("blocked_clients", s.stats.blocked.Load())
		clients, _, _, _ := s.track.counts()
		w("tracking_clients", clients)
	case "memory":
		b.WriteString("# Memory\r\n")
		s.infoMemory(w)
	case "stats":
		b.WriteString("# Stats\r\n")
		ops, in, out := s.rates.current()
		w("total_connections_received", s.stats.connections.Load())
		w("total_commands_processed", s.commandsProcessed())
		w("instantaneous_ops_per_sec", int64(ops))
		w("total_net_input_bytes", s.stats.netIn.Load())
		w("total_net_output_bytes", s.stats.netOut.Load())
		w("total_net_repl_input_bytes", 0)
		w("total_net_repl_output_bytes", 0)
		w("instantaneous_input_kbps", fmt.Sprintf("%.2f", in/1024))
		w("instantaneous_output_kbps", fmt.Sprintf("%.2f", out/1024))
		w("instantaneous_input_repl_kbps", "0.00")
		w("instantaneous_output_repl_kbps", "0.00")
		w("rejected_connections", s.stats.rejected.Load())
		w("sync_full", 0)
		w("sync_partial_ok", 0)
		w("sync_partial_err", 0)
		w("expired_keys", s.b.Store().ExpiredCount())
		w("evicted_keys", s.b.Store().EvictedCount())
		w("evicted_clients", 0)
		over, overTotal := s.mem.OverTime()
		w("total_eviction_exceeded_time", overTotal.Milliseconds())
		w("current_eviction_exceeded_time", over.Milliseconds())
		hits, misses := s.b.Store().KeyspaceHits()
		w("keyspace_hits", hits)
		w("keyspace_misses", misses)
		w("pubsub_channels", len(s.ps.names(kindChannel, nil)))
		w("pubsub_patterns", len(s.ps.names(kindPattern, nil)))
		w("pubsubshard_channels", len(s.ps.names(kindShard, nil)))
		w("latest_fork_usec", 0)
		w("total_forks", 0)
		w("migrate_cached_sockets", 0)
		w("slave_expires_tracked_keys", 0)
		for _, k := range []string{"active_defrag_hits", "active_defrag_misses", "active_defrag_key_hits",
			"active_defrag_key_misses", "total_active_defrag_time", "current_active_defrag_time"} {
			w(k, 0)
		}
		_, keys, items, prefixes := s.track.counts()
		w("tracking_total_keys", keys)
		w("tracking_total_items", items)
		w("tracking_total_prefixes", prefixes)
		w("unexpected_error_replies", 0)
		w("total_error_replies", s.errors.total.Load())
		w("total_reads_processed", s.stats.reads.Load())
		w("total_writes_processed", s.stats.writes.Load())
		w("io_threaded_reads_processed", 0)
		w("io_threaded_writes_processed", 0)
	case "replication":
		b.WriteString("# Replication\r\n")
		w("role", "master")
		w("connected_slaves", 0)
		w("master_failover_state", "no-failover")
		w("master_replid", s.ids.repl)
		w("master_replid2", strings.Repeat("0", 40))
		w("master_repl_offset", 0)
		w("second_repl_offset", -1)
		w("repl_backlog_active", 0)
		w("repl_backlog_size", 1<<20)
		w("repl_backlog_first_byte_offset", 0)
		w("repl_backlog_histlen", 0)
	case "cpu":
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		b.WriteString("# CPU\r\n")
		w("used_cpu_sys", fmt.Sprintf("%.6f", tvSeconds(ru.Stime)))
		w("used_cpu_user", fmt.Sprintf("%.6f", tvSeconds(ru.Utime)))
		w("used_cpu_sys_children", "0.000000") // no child processes: no fork
		w("used_cpu_user_children", "0.000000")
	case "modules":
		b.WriteString("# Modules\r\n")
	case "commandstats":
		b.WriteString("# Commandstats\r\n")
		s.appendCommandStats(b)
	case "errorstats":
		b.WriteString("# Errorstats\r\n")
		s.errors.appendInfo(b)
	case "latencystats":
		b.WriteString("# Latencystats\r\n")
		if s.latencyTracking.On() {
			s.appendLatencyStats(b) // as in Redis, nothing while latency-tracking is off
		}
	case "cluster":
		b.WriteString("# Cluster\r\n")
		enabled := 0
		if s.sharding() {
			enabled = 1 // RedisRaft's sharding: redis-py's RedisCluster checks it
		}
		w("cluster_enabled", enabled)
	case "keyspace":
		b.WriteString("# Keyspace\r\n")
		keys, expires := s.b.Store().KeyspaceInfo()
		for db := range keys {
			if keys[db] > 0 {
				fmt.Fprintf(b, "db%d:keys=%d,expires=%d,avg_ttl=0\r\n", db, keys[db], expires[db])
			}
		}
	default:
		return false
	}
	return true
}

// infoMemory is INFO memory. used_memory is the Go heap's live and not yet collected
// objects; Redis's allocator figures map onto the Go runtime's: allocated (the
// objects), active (the spans in use), resident (the heap memory not returned to the
// system); the ratios between them and RSS are computed as Redis computes them.
func (s *Server) infoMemory(w func(string, any)) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	used, rssBytes := m.HeapAlloc, rss()
	peak := s.peak.note(used)
	active, resident := m.HeapInuse, m.HeapSys-m.HeapReleased
	scripts, functions, libraries := s.b.Store().ScriptCounts()
	total := totalMemory()
	w("used_memory", used)
	w("used_memory_human", humanBytes(used))
	w("used_memory_rss", rssBytes)
	w("used_memory_rss_human", humanBytes(rssBytes))
	w("used_memory_peak", peak)
	w("used_memory_peak_human", humanBytes(peak))
	w("used_memory_peak_perc", fmt.Sprintf("%.2f%%", 100*float64(used)/float64(max(peak, 1))))
	startup, clients, overhead := s.overhead(used)
	dataset := used - min(overhead, used)
	w("used_memory_overhead", overhead)
	w("used_memory_startup", startup)
	w("used_memory_dataset", dataset)
	w("used_memory_dataset_perc", fmt.Sprintf("%.2f%%", 100*float64(dataset)/float64(max(used-startup, 1))))
	w("allocator_allocated", used)
	w("allocator_active", active)
	w("allocator_resident", resident)
	w("total_system_memory", total)
	w("total_system_memory_human", humanBytes(total))
	w("number_of_cached_scripts", scripts)
	w("number_of_functions", functions)
	w("number_of_libraries", libraries)
	limit := s.mem.Limit()
	w("maxmemory", limit)
	w("maxmemory_human", humanBytes(uint64(limit)))
	w("maxmemory_policy", kvstore.EvictPolicy(s.mem.Policy()).String())
	ratio := func(a, b uint64) string { return fmt.Sprintf("%.2f", float64(a)/float64(max(b, 1))) }
	diff := func(a, b uint64) int64 { return int64(a) - int64(b) }
	w("allocator_frag_ratio", ratio(active, used))
	w("allocator_frag_bytes", diff(active, used))
	w("allocator_rss_ratio", ratio(resident, active))
	w("allocator_rss_bytes", diff(resident, active))
	w("rss_overhead_ratio", ratio(rssBytes, resident))
	w("rss_overhead_bytes", diff(rssBytes, resident))
	w("mem_fragmentation_ratio", ratio(rssBytes, used))
	w("mem_fragmentation_bytes", diff(rssBytes, used))
	w("mem_not_counted_for_evict", 0)
	w("mem_replication_backlog", 0) // nanokv has none of these buffers of Redis's
	w("mem_total_replication_buffers", 0)
	w("mem_clients_slaves", 0)
	w("mem_clients_normal", clients)
	w("mem_cluster_links", 0)
	w("mem_aof_buffer", 0)
	w("mem_allocator", "go")
	w("active_defrag_running", 0)
	w("lazyfree_pending_objects", 0)
	w("lazyfreed_objects", 0)
	w("go_gc_cycles", m.NumGC)
}

// serverIDs are INFO's identities of this process: run_id and master_replid, 40 random
// hex digits drawn at start as Redis draws them, and redis_build_id, which names the
// build (here: a hash of the version).
type serverIDs struct {
	run, repl, build string
}

func newServerIDs(version string) serverIDs {
	hexID := func() string {
		var b [20]byte
		rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}
	h := fnv.New64a()
	h.Write([]byte(version))
	return serverIDs{run: hexID(), repl: hexID(), build: strconv.FormatUint(h.Sum64(), 16)}
}

// peakMemory is used_memory_peak: the most INFO and the sampler (every 100 ms) have seen
// used_memory at (Redis's allocator knows its true peak; Go's runtime does not keep one).
type peakMemory struct {
	mu   sync.Mutex
	peak uint64
}

func (p *peakMemory) note(used uint64) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.peak = max(p.peak, used)
	return p.peak
}

// rates are Redis's instantaneous metrics: every 100 ms a sample of how fast the
// commands, the bytes read and the bytes written grew, and the mean of the last 16
// samples (Redis's trackInstantaneousMetric, STATS_METRIC_SAMPLES).
type rates struct {
	mu      sync.Mutex
	last    [3]uint64 // the counters at the last sample
	lastAt  time.Time
	samples [3][16]float64 // per second
	next    int
}

const rateSamplePeriod = 100 * time.Millisecond

// sampleRates samples s's counters until s closes, and notes the memory gauge's last
// sample of the heap for used_memory_peak (sampling the gauge itself when s owns it).
// Once a second it closes the clients idle past timeout.
func (s *Server) sampleRates() {
	defer s.handler.Done()
	t := time.NewTicker(rateSamplePeriod)
	defer t.Stop()
	for tick := 0; ; tick++ {
		select {
		case <-s.done:
			return
		case now := <-t.C:
			if tick%int(time.Second/rateSamplePeriod) == 0 {
				s.closeIdle(now, s.config().Timeout)
			}
			s.rates.sample(now, [3]uint64{s.commandsProcessed(), s.stats.netIn.Load(), s.stats.netOut.Load()})
			if s.ownMem {
				s.mem.Sample()
			}
			s.peak.note(s.mem.Used())
		}
	}
}

func (r *rates) sample(now time.Time, counts [3]uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.lastAt.IsZero() {
		if secs := now.Sub(r.lastAt).Seconds(); secs > 0 {
			for i := range counts {
				r.samples[i][r.next] = float64(counts[i]-r.last[i]) / secs
			}
			r.next = (r.next + 1) % len(r.samples[0])
		}
	}
	r.last, r.lastAt = counts, now
}

// current is the mean rate of commands, and of bytes read and written, per second.
func (r *rates) current() (ops, in, out float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var sums [3]float64
	for i := range sums {
		for _, v := range r.samples[i] {
			sums[i] += v
		}
		sums[i] /= float64(len(r.samples[i]))
	}
	return sums[0], sums[1], sums[2]
}

// osName is the os field as Redis writes it: the kernel's name, release and machine.
func osName() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return runtime.GOOS + " " + runtime.GOARCH
	}
	return cString(u.Sysname[:]) + " " + cString(u.Release[:]) + " " + cString(u.Machine[:])
}

// cString is a NUL-terminated C string of a utsname field (int8 or uint8 by machine).
func cString[T int8 | uint8](f []T) string {
	b := make([]byte, 0, len(f))
	for _, c := range f {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

func tvSeconds(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }

func executable() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}

// humanBytes is Redis's bytesToHuman.
func humanBytes(n uint64) string {
	switch {
	case n >= 1<<40:
		return fmt.Sprintf("%.2fT", float64(n)/(1<<40))
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// rss reads the resident set size from /proc (0 where there is no /proc).
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

func totalMemory() uint64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return si.Totalram * uint64(si.Unit)
}
