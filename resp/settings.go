package resp

import (
	"math"
	"strconv"
	"strings"
)

// Redis 7.0 has some 190 configuration parameters. configParams (config.go) holds those
// whose values live in Config; this file describes the others, and how Redis checks a
// value of each kind, so that CONFIG GET and CONFIG SET answer as redis-server 7.0 does:
// same names and aliases, same defaults, same validation and error texts, all or
// nothing. Tools and applications that set them (deployment scripts, RedisInsight, the
// test suites of client libraries) then work against nanokv. They are of three kinds.
//
// Acted on (with apply): the ACL log's length, acl-pubsub-default and latency-tracking.
// (Those acted on through Config, such as timeout, tcp-keepalive and
// client-output-buffer-limit, are configParams'.)
//
// Fixed (immutable here): the limits of Redis's compact encodings. nanokv stores every
// collection one way; OBJECT ENCODING reports the encoding Redis would have chosen at
// Redis's default limits (kvstore/object.go), and that choice is part of the replicated
// state, so these limits cannot change at run time on one node. CONFIG SET refuses them
// as Redis refuses an immutable parameter, rather than accepting a value that OBJECT
// ENCODING would then contradict. The parameters Redis itself fixes at start are here
// too, with the values that describe nanokv.
//
// Accepted: parameters that tune a mechanism nanokv does not have in Redis's form, and
// whose value therefore changes nothing a client can observe: memory defragmentation,
// the AOF and RDB writers (nanokv persists through its WAL), lazy freeing (Go's
// collector frees), the expiry cycle's frequency and effort, process setup (logging,
// the process title), and Redis's master-replica replication and Redis Cluster, both
// off in the Redis nanokv answers as (replicaof and cluster-enabled are fixed: a
// replica's or a cluster node's settings only act once those are on). A value set is
// kept per node, as Redis keeps it, and CONFIG GET reports it.
//
// Parameters with an effect nanokv does not provide are left out, so that CONFIG SET
// answers that it does not know them instead of pretending: TLS (nanokv answers as a
// Redis built without TLS, which has no tls-* parameters), maxmemory-clients,
// min-replicas-to-write, oom-score-adj, shutdown-on-sig*, tcp-backlog and dbfilename.

// settingKind is how a setting's values are written.
type settingKind uint8

const (
	settingBool   settingKind = iota // yes or no
	settingEnum                      // one of enum, in any case
	settingInt                       // an integer, written as Redis's string2ll reads one
	settingMemory                    // an integer, or one with a unit: 1k, 5mb, 2gb
	settingString                    // anything
)

// setting is one Redis parameter of this file.
type setting struct {
	name  string
	alias string // Redis's other name for it ("" none); both are listed and set it
	kind  settingKind
	// lo and hi bound a number, inclusive. unsigned: Redis holds it in an unsigned type
	// and compares the value read as a long long, cast, with the bounds (so -1 is out of
	// any range below 2^64-1), and its error message writes them unsigned.
	lo, hi    int64
	unsigned  bool
	octal     bool // a number written in octal
	enum      []string
	def       string
	immutable bool
	// valid is an extra check of a value its kind accepts: "" or the reason for refusing.
	valid func(v string) string
	// clamp, for a number, is what Redis makes of a value in bounds (nil: itself).
	clamp func(n int64) int64
	// apply acts on a value CONFIG SET set, as parse wrote it (nil: it is only kept).
	apply func(s *Server, v string)
}

const (
	intMax   = 1<<31 - 1
	uintMax  = 1<<32 - 1
	longMax  = 1<<63 - 1
	ullongMx = -1 // 2^64-1 as an unsigned bound
)

func boolSetting(name, alias, def string) setting {
	return setting{name: name, alias: alias, kind: settingBool, def: def}
}

func intSetting(name, alias string, lo, hi int64, def string) setting {
	return setting{name: name, alias: alias, kind: settingInt, lo: lo, hi: hi, def: def}
}

func fixed(s setting) setting { s.immutable = true; return s }

func unsigned(s setting) setting { s.unsigned = true; return s }

func memory(s setting) setting { s.kind = settingMemory; return s }

func stringSetting(name, alias, def string) setting {
	return setting{name: name, alias: alias, kind: settingString, def: def}
}

func enumSetting(name, def string, values ...string) setting {
	return setting{name: name, kind: settingEnum, enum: values, def: def}
}

var redisSettings = []setting{
	// Fixed: the compact encodings' limits, as OBJECT ENCODING applies them.
	fixed(unsigned(intSetting("hash-max-listpack-entries", "hash-max-ziplist-entries", 0, longMax, "512"))),
	fixed(memory(unsigned(intSetting("hash-max-listpack-value", "hash-max-ziplist-value", 0, longMax, "64")))),
	fixed(unsigned(intSetting("set-max-intset-entries", "", 0, longMax, "512"))),
	fixed(unsigned(intSetting("zset-max-listpack-entries", "zset-max-ziplist-entries", 0, longMax, "128"))),
	fixed(memory(unsigned(intSetting("zset-max-listpack-value", "zset-max-ziplist-value", 0, longMax, "64")))),
	fixed(intSetting("list-max-listpack-size", "list-max-ziplist-size", -1<<31, intMax, "-2")),
	fixed(intSetting("list-compress-depth", "", 0, intMax, "0")),
	fixed(memory(unsigned(intSetting("stream-node-max-bytes", "", 0, longMax, "4096")))),
	fixed(intSetting("stream-node-max-entries", "", 0, longMax, "100")),

	// Fixed in Redis too, with the values that describe nanokv.
	fixed(boolSetting("always-show-logo", "", "no")),
	fixed(boolSetting("daemonize", "", "no")),
	fixed(boolSetting("disable-thp", "", "yes")),
	fixed(boolSetting("io-threads-do-reads", "", "no")),
	fixed(boolSetting("rdbchecksum", "", "yes")),
	fixed(boolSetting("set-proc-title", "", "yes")),
	fixed(boolSetting("syslog-enabled", "", "no")),
	fixed(intSetting("io-threads", "", 1, 128, "1")),
	fixed(intSetting("cluster-port", "", 0, 65535, "0")),
	fixed(unsigned(intSetting("socket-mark-id", "", 0, uintMax, "0"))),
	fixed(stringSetting("appenddirname", "", "appendonlydir")),
	fixed(stringSetting("appendfilename", "", "appendonly.aof")),
	fixed(stringSetting("cluster-config-file", "", "nodes.conf")),
	fixed(stringSetting("logfile", "", "")),
	fixed(stringSetting("pidfile", "", "")),
	fixed(stringSetting("syslog-ident", "", "redis")),
	fixed(stringSetting("unixsocket", "", "")),
	fixed(stringSetting("server_cpulist", "", "")),
	fixed(stringSetting("bio_cpulist", "", "")),
	fixed(stringSetting("aof_rewrite_cpulist", "", "")),
	fixed(stringSetting("bgsave_cpulist", "", "")),
	fixed(stringSetting("replicaof", "slaveof", "")),
	fixed(enumSetting("supervised", "no", "upstart", "systemd", "auto", "no")),
	fixed(enumSetting("syslog-facility", "local0", "user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7")),
	fixed(enumSetting("enable-protected-configs", "no", "no", "yes", "local")),
	fixed(enumSetting("enable-debug-command", "no", "no", "yes", "local")),
	fixed(enumSetting("enable-module-command", "no", "no", "yes", "local")),
	{name: "unixsocketperm", kind: settingInt, lo: 0, hi: 0o777, unsigned: true, octal: true, def: "0", immutable: true},

	// Acted on: the ACL log's length and the channels new users start with (acl.go),
	// and the latency histograms.
	{name: "acllog-max-len", kind: settingInt, lo: 0, hi: longMax, unsigned: true, def: "128",
		apply: func(s *Server, v string) { s.acl.setLogMaxLen(int(decimal(v))) }},
	{name: "latency-tracking", kind: settingBool, def: "yes", apply: func(s *Server, v string) {
		s.latencyTracking.Set(v == "yes")
		s.b.Store().LatencyTracking().Set(v == "yes")
	}},
	{name: "acl-pubsub-default", kind: settingEnum, enum: []string{"allchannels", "resetchannels"}, def: "resetchannels",
		apply: func(s *Server, v string) { s.acl.setPubsubDefault(v == "allchannels") }},

	// Accepted: defragmentation, freeing, the expiry cycle.
	{name: "activedefrag", kind: settingBool, def: "no", valid: func(v string) string {
		if strings.EqualFold(v, "yes") {
			return "Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified Jemalloc like the one shipped by default with the Redis source distribution"
		}
		return ""
	}},
	intSetting("active-defrag-cycle-min", "", 1, 99, "1"),
	intSetting("active-defrag-cycle-max", "", 1, 99, "25"),
	intSetting("active-defrag-threshold-lower", "", 0, 1000, "10"),
	intSetting("active-defrag-threshold-upper", "", 0, 1000, "100"),
	memory(unsigned(intSetting("active-defrag-ignore-bytes", "", 1, longMax, "104857600"))),
	intSetting("active-defrag-max-scan-fields", "", 1, longMax, "1000"),
	boolSetting("jemalloc-bg-thread", "", "yes"),
	boolSetting("activerehashing", "", "yes"),
	boolSetting("lazyfree-lazy-eviction", "", "no"),
	boolSetting("lazyfree-lazy-expire", "", "no"),
	boolSetting("lazyfree-lazy-server-del", "", "no"),
	boolSetting("lazyfree-lazy-user-del", "", "no"),
	boolSetting("lazyfree-lazy-user-flush", "", "no"),
	{name: "hz", kind: settingInt, lo: 0, hi: intMax, def: "10", clamp: func(n int64) int64 { return min(max(n, 1), 500) }},
	boolSetting("dynamic-hz", "", "yes"),
	intSetting("active-expire-effort", "", 1, 10, "1"),
	intSetting("maxmemory-eviction-tenacity", "", 0, 100, "10"),

	// Accepted: the AOF and RDB writers.
	boolSetting("aof-disable-auto-gc", "", "no"),
	boolSetting("aof-load-truncated", "", "yes"),
	boolSetting("aof-rewrite-incremental-fsync", "", "yes"),
	boolSetting("aof-timestamp-enabled", "", "no"),
	boolSetting("aof-use-rdb-preamble", "", "yes"),
	boolSetting("no-appendfsync-on-rewrite", "", "no"),
	intSetting("auto-aof-rewrite-percentage", "", 0, intMax, "100"),
	memory(intSetting("auto-aof-rewrite-min-size", "", 0, longMax, "67108864")),
	boolSetting("rdbcompression", "", "yes"),
	boolSetting("rdb-del-sync-files", "", "no"),
	boolSetting("rdb-save-incremental-fsync", "", "yes"),
	boolSetting("stop-writes-on-bgsave-error", "", "yes"),
	// nanokv checks every RESTORE payload in full, which is "yes"'s behaviour; "no"
	// and "clients" only allow Redis to check less.
	enumSetting("sanitize-dump-payload", "no", "no", "yes", "clients"),

	// Accepted: the process.
	enumSetting("loglevel", "notice", "debug", "verbose", "notice", "warning"),
	boolSetting("crash-log-enabled", "", "yes"),
	boolSetting("crash-memcheck-enabled", "", "yes"),
	stringSetting("ignore-warnings", "", ""),
	{name: "proc-title-template", kind: settingString, def: "{title} {listen-addr} {server-mode}", valid: validProcTitle},
	intSetting("shutdown-timeout", "", 0, intMax, "10"),

	// Accepted: master-replica replication, off.
	stringSetting("masterauth", "", ""),
	stringSetting("masteruser", "", ""),
	stringSetting("bind-source-addr", "", ""),
	{name: "repl-backlog-size", kind: settingMemory, lo: 1, hi: longMax, def: "1048576", clamp: func(n int64) int64 { return max(n, 16384) }},
	intSetting("repl-backlog-ttl", "", 0, longMax, "3600"),
	boolSetting("repl-disable-tcp-nodelay", "", "no"),
	enumSetting("repl-diskless-load", "disabled", "disabled", "on-empty-db", "swapdb"),
	boolSetting("repl-diskless-sync", "", "yes"),
	intSetting("repl-diskless-sync-delay", "", 0, intMax, "5"),
	intSetting("repl-diskless-sync-max-replicas", "", 0, intMax, "0"),
	intSetting("repl-ping-replica-period", "repl-ping-slave-period", 1, intMax, "10"),
	intSetting("repl-timeout", "", 1, intMax, "60"),
	stringSetting("replica-announce-ip", "slave-announce-ip", ""),
	intSetting("replica-announce-port", "slave-announce-port", 0, 65535, "0"),
	boolSetting("replica-announced", "", "yes"),
	boolSetting("replica-ignore-disk-write-errors", "", "no"),
	boolSetting("replica-ignore-maxmemory", "slave-ignore-maxmemory", "yes"),
	boolSetting("replica-lazy-flush", "slave-lazy-flush", "no"),
	intSetting("replica-priority", "slave-priority", 0, intMax, "100"),
	boolSetting("replica-read-only", "slave-read-only", "yes"),
	boolSetting("replica-serve-stale-data", "slave-serve-stale-data", "yes"),
	enumSetting("propagation-error-behavior", "ignore", "ignore", "panic", "panic-on-replicas"),

	// Accepted: Redis Cluster, off.
	boolSetting("cluster-allow-pubsubshard-when-down", "", "yes"),
	boolSetting("cluster-allow-reads-when-down", "", "no"),
	boolSetting("cluster-allow-replica-migration", "", "yes"),
	intSetting("cluster-announce-bus-port", "", 0, 65535, "0"),
	{name: "cluster-announce-hostname", kind: settingString, def: "", valid: validHostname},
	stringSetting("cluster-announce-ip", "", ""),
	intSetting("cluster-announce-port", "", 0, 65535, "0"),
	intSetting("cluster-announce-tls-port", "", 0, 65535, "0"),
	memory(unsigned(intSetting("cluster-link-sendbuf-limit", "", 0, ullongMx, "0"))),
	intSetting("cluster-migration-barrier", "", 0, intMax, "1"),
	intSetting("cluster-node-timeout", "", 0, longMax, "15000"),
	enumSetting("cluster-preferred-endpoint-type", "ip", "ip", "hostname", "unknown-endpoint"),
	boolSetting("cluster-replica-no-failover", "cluster-slave-no-failover", "no"),
	intSetting("cluster-replica-validity-factor", "cluster-slave-validity-factor", 0, intMax, "10"),
	boolSetting("cluster-require-full-coverage", "", "yes"),
}

// settingByName finds a setting by its name or alias, lowercase.
var settingByName = func() map[string]*setting {
	m := map[string]*setting{}
	for i := range redisSettings {
		s := &redisSettings[i]
		m[s.name] = s
		if s.alias != "" {
			m[s.alias] = s
		}
	}
	return m
}()

// defaultSettings is every setting at Redis's default, by name (not alias).
func defaultSettings() map[string]string {
	m := make(map[string]string, len(redisSettings))
	for _, s := range redisSettings {
		m[s.name] = s.def
	}
	return m
}

// parse checks v as a value of s and returns it as CONFIG GET shows it, or the reason
// CONFIG SET gives for refusing it.
func (s *setting) parse(v string) (string, string) {
	var out string
	switch s.kind {
	case settingBool:
		switch {
		case strings.EqualFold(v, "yes"):
			out = "yes"
		case strings.EqualFold(v, "no"):
			out = "no"
		default:
			return "", "argument must be 'yes' or 'no'"
		}
	case settingEnum:
		for _, e := range s.enum {
			if strings.EqualFold(v, e) {
				out = e
			}
		}
		if out == "" {
			return "", "argument(s) must be one of the following: " + strings.Join(s.enum, ", ")
		}
	case settingInt, settingMemory:
		n, ok := int64(0), false
		if s.kind == settingMemory {
			n, ok = memToULL(v)
		} else if s.octal {
			u, err := strconv.ParseInt(v, 8, 64)
			n, ok = u, err == nil
		} else {
			n, ok = string2ll(v)
		}
		if !ok {
			switch {
			case s.kind == settingMemory:
				return "", "argument must be a memory value"
			case s.octal:
				return "", "argument couldn't be parsed as an octal number"
			}
			return "", "argument couldn't be parsed into an integer"
		}
		if s.unsigned {
			if u := uint64(n); u < uint64(s.lo) || u > uint64(s.hi) {
				if s.octal {
					return "", "argument must be between " + strconv.FormatUint(uint64(s.lo), 8) + " and " + strconv.FormatUint(uint64(s.hi), 8) + " inclusive"
				}
				return "", "argument must be between " + strconv.FormatUint(uint64(s.lo), 10) + " and " + strconv.FormatUint(uint64(s.hi), 10) + " inclusive"
			}
		} else if n < s.lo || n > s.hi {
			return "", "argument must be between " + strconv.FormatInt(s.lo, 10) + " and " + strconv.FormatInt(s.hi, 10) + " inclusive"
		}
		if s.clamp != nil {
			n = s.clamp(n)
		}
		switch {
		case s.octal:
			out = strconv.FormatInt(n, 8)
		case s.kind == settingMemory:
			out = strconv.FormatUint(uint64(n), 10)
		default:
			out = strconv.FormatInt(n, 10)
		}
	default:
		out = v
	}
	if s.valid != nil {
		if why := s.valid(v); why != "" {
			return "", why
		}
	}
	return out, ""
}

// string2ll reads an integer as Redis's string2ll does: an optional minus sign, then
// digits without leading zeros, nothing else, within a long long.
func string2ll(v string) (int64, bool) {
	digits := strings.TrimPrefix(v, "-")
	if digits == "" || digits[0] == '0' && len(v) > 1 {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// memToULL reads a memory value as Redis's memtoull does: digits and an optional unit
// (b, k, kb, m, mb, g, gb, in any case), the product taken modulo 2^64 as Redis's
// unsigned arithmetic takes it. Its quirks are Redis's: "" and "mb" are 0, and digits
// past 2^64-1 are 2^64-1.
func memToULL(v string) (int64, bool) {
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	var mul uint64
	switch strings.ToLower(v[i:]) {
	case "", "b":
		mul = 1
	case "k":
		mul = 1000
	case "kb":
		mul = 1024
	case "m":
		mul = 1000 * 1000
	case "mb":
		mul = 1024 * 1024
	case "g":
		mul = 1000 * 1000 * 1000
	case "gb":
		mul = 1024 * 1024 * 1024
	default:
		return 0, false
	}
	// strtoull: no digits read as 0, too many as 2^64-1
	n, err := strconv.ParseUint(v[:i], 10, 64)
	if i == 0 {
		n = 0
	} else if err != nil {
		n = math.MaxUint64
	}
	return int64(n * mul), true
}

// validProcTitle is Redis's check of proc-title-template: it knows every {variable},
// and what it makes of a process whose title is empty is not all blanks. Of the
// variables, the listen address and the ports are never empty; the mode (empty but in
// a sentinel or a cluster), the socket and the configuration file are here.
func validProcTitle(v string) string {
	const invalid = "template format is invalid or contains unknown variables"
	var out strings.Builder
	for rest := v; rest != ""; {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			out.WriteString(rest)
			break
		}
		out.WriteString(rest[:open])
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return invalid
		}
		switch rest[open : open+end+1] {
		case "{title}", "{server-mode}", "{unixsocket}", "{config-file}":
		case "{listen-addr}", "{port}", "{tls-port}":
			out.WriteString("x")
		default:
			return invalid
		}
		rest = rest[open+end+1:]
	}
	if strings.Trim(out.String(), " ") == "" {
		return invalid
	}
	return ""
}

// validHostname is Redis's check of cluster-announce-hostname: under 256 bytes of
// letters, digits, '-' and '.'.
func validHostname(v string) string {
	if len(v) >= 256 {
		return "Hostnames must be less than 256 characters"
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return "Hostnames may only contain alphanumeric characters, hyphens or dots"
		}
	}
	return ""
}
