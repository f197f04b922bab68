package resp

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/nanokv/nanokv/kvstore"
)

// configParam is one CONFIG GET/SET parameter the frontend owns.
type configParam struct {
	get func(cfg *Config) string
	set func(cfg *Config, v string) bool // nil: read-only
	// bad is the reason CONFIG SET's error gives for a refused value ("" : that it is
	// not an integer); for an integer parameter, only for an integer out of range
	bad     string
	integer bool
}

// intParam is a parameter held at field(cfg) whose values are Redis's int configs':
// 0 to 2^31-1.
func intParam(field func(cfg *Config) *int64) configParam {
	return configParam{
		get: func(c *Config) string { return strconv.FormatInt(*field(c), 10) },
		set: func(c *Config, v string) bool {
			n, err := strconv.ParseInt(v, 10, 32)
			*field(c) = n
			return err == nil && n >= 0
		},
		bad:     "argument must be between 0 and 2147483647 inclusive",
		integer: true,
	}
}

var configParams = map[string]configParam{
	"aclfile": {get: func(c *Config) string { return c.ACLFile }}, // immutable, as in Redis
	"requirepass": {
		get: func(c *Config) string { return c.RequirePass },
		set: func(c *Config, v string) bool { c.RequirePass = v; return true },
	},
	"proto-max-bulk-len": {
		get: func(c *Config) string { return strconv.FormatInt(c.MaxBulk, 10) },
		set: func(c *Config, v string) bool {
			n, ok := ParseMemory(v)
			if !ok || n < 1024*1024 {
				return false
			}
			c.MaxBulk = n
			return true
		},
	},
	"client-query-buffer-limit": {
		get: func(c *Config) string { return strconv.Itoa(c.QueryBufMax) },
		set: func(c *Config, v string) bool {
			n, ok := ParseMemory(v)
			if !ok || n < 1024*1024 {
				return false
			}
			c.QueryBufMax = int(n)
			return true
		},
	},
	"notify-keyspace-events": {
		get: func(c *Config) string { return kvstore.FormatNotifyFlags(c.NotifyKeyspaceEvents) },
		set: func(c *Config, v string) bool {
			flags, ok := kvstore.ParseNotifyFlags(v)
			c.NotifyKeyspaceEvents = flags
			return ok
		},
		bad: "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.",
	},
	"slowlog-log-slower-than": {
		get: func(c *Config) string { return strconv.FormatInt(c.SlowlogSlowerThan, 10) },
		set: func(c *Config, v string) bool {
			n, err := strconv.ParseInt(v, 10, 64)
			c.SlowlogSlowerThan = n
			return err == nil
		},
	},
	"slowlog-max-len": {
		get: func(c *Config) string { return strconv.FormatInt(c.SlowlogMaxLen, 10) },
		set: func(c *Config, v string) bool {
			n, err := strconv.ParseInt(v, 10, 64)
			c.SlowlogMaxLen = n
			return err == nil && n >= 0
		},
		bad:     "argument must be between 0 and 9223372036854775807 inclusive",
		integer: true,
	},
	"latency-monitor-threshold": {
		get: func(c *Config) string { return strconv.FormatInt(c.LatencyMonitorThreshold, 10) },
		set: func(c *Config, v string) bool {
			n, err := strconv.ParseInt(v, 10, 64)
			c.LatencyMonitorThreshold = n
			return err == nil && n >= 0
		},
		bad:     "argument must be between 0 and 9223372036854775807 inclusive",
		integer: true,
	},
	"latency-tracking-info-percentiles": {
		get: func(c *Config) string { return formatPercentiles(c.LatencyPercentiles) },
		set: func(c *Config, v string) bool {
			ps, ok := parsePercentiles(v)
			c.LatencyPercentiles = ps
			return ok
		},
		bad: "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
	},
	"latency-tracking": {get: func(*Config) string { return "yes" }},
	"tracking-table-max-keys": {
		get: func(c *Config) string { return strconv.FormatInt(c.TrackingTableMaxKeys, 10) },
		set: func(c *Config, v string) bool {
			n, err := strconv.ParseInt(v, 10, 64)
			c.TrackingTableMaxKeys = n
			return err == nil && n >= 0
		},
		bad:     "argument must be between 0 and 9223372036854775807 inclusive",
		integer: true,
	},
	"maxclients": {
		get: func(c *Config) string { return strconv.Itoa(c.MaxClients) },
		set: func(c *Config, v string) bool {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return false
			}
			c.MaxClients = n
			return true
		},
	},
	"port":      {get: func(c *Config) string { return strconv.Itoa(c.Port) }},
	"bind":      {get: func(c *Config) string { return c.Bind }},
	"databases": {get: func(*Config) string { return strconv.Itoa(kvstore.NumDBs) }},
	"save":      {get: func(*Config) string { return "" }}, // no RDB: the WAL persists
	"timeout":   {get: func(*Config) string { return "0" }},
	"maxmemory": {
		get: func(c *Config) string { return strconv.FormatInt(c.Memory.Limit(), 10) },
		set: func(c *Config, v string) bool {
			n, ok := ParseMemory(v)
			c.MaxMemory = n
			return ok && n >= 0
		},
		bad: "argument must be a memory value",
	},
	"lfu-log-factor": intParam(func(c *Config) *int64 { return &c.LFULogFactor }),
	"lfu-decay-time": intParam(func(c *Config) *int64 { return &c.LFUDecayTime }),
	"maxmemory-samples": {
		get: func(c *Config) string { return strconv.Itoa(c.Memory.Samples()) },
		set: func(c *Config, v string) bool {
			n, err := strconv.ParseInt(v, 10, 32)
			c.MaxMemorySamples = int(n)
			return err == nil && n >= 1
		},
		bad:     "argument must be between 1 and 2147483647 inclusive",
		integer: true,
	},
	"maxmemory-policy": {
		get: func(c *Config) string { return kvstore.EvictPolicy(c.Memory.Policy()).String() },
		set: func(c *Config, v string) bool {
			p, ok := kvstore.ParseEvictPolicy(strings.ToLower(v))
			c.MaxMemoryPolicy = p
			return ok
		},
		bad: "argument(s) must be one of the following: " + strings.Join(maxmemoryPolicies, ", "),
	},
	"tcp-keepalive":        {get: func(*Config) string { return "300" }},
	"protected-mode":       {get: func(*Config) string { return "no" }},
	"cluster-enabled":      {get: func(*Config) string { return "no" }},
	"lua-time-limit":       {get: func(*Config) string { return "5000" }},
	"busy-reply-threshold": {get: func(*Config) string { return "5000" }},
	// The point where an HLL turns dense decides replicated bytes: fixed, not settable.
	"hll-sparse-max-bytes": {get: func(*Config) string { return "3000" }},
}

// parseMemory parses a Redis memory setting: a number with an optional k/kb/m/mb/g/gb.
func ParseMemory(v string) (int64, bool) {
	v = strings.ToLower(v)
	mult := int64(1)
	for _, u := range []struct {
		s string
		m int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}} {
		if strings.HasSuffix(v, u.s) {
			mult, v = u.m, strings.TrimSuffix(v, u.s)
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n * mult, true
}

func configCommand(c *conn, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	switch sub {
	case "get":
		if len(args) < 3 {
			c.Error(kvstore.WrongArgs("config|get"))
			return
		}
		configGet(c, args[2:])
	case "set":
		if len(args) < 4 || len(args)%2 != 0 {
			c.Error(kvstore.WrongArgs("config|set"))
			return
		}
		configSet(c, args[2:])
	case "resetstat":
		if len(args) != 2 {
			c.Error(kvstore.WrongArgs("config|resetstat"))
			return
		}
		c.s.stats.commands.Store(0)
		c.s.stats.connections.Store(0)
		c.s.stats.rejected.Store(0)
		c.s.stats.netIn.Store(0)
		c.s.stats.netOut.Store(0)
		c.s.errors.reset()
		c.s.resetCommandStats()
		c.s.b.Store().ResetKeyspaceHits()
		c.Status("OK")
	case "rewrite":
		c.Error("ERR The server is running without a config file")
	default:
		c.Error("ERR unknown subcommand '" + string(args[1]) + "'. Try CONFIG HELP.")
	}
}

// allConfig merges the frontend's parameters with the backend's.
func (s *Server) allConfig() map[string]string {
	cfg := s.config()
	out := map[string]string{}
	for name, p := range configParams {
		out[name] = p.get(&cfg)
	}
	for k, v := range s.b.ConfigGet() {
		out[k] = v
	}
	return out
}

func configGet(c *conn, patterns [][]byte) {
	all := c.s.allConfig()
	names := make([]string, 0, len(all))
	for name := range all {
		for _, p := range patterns {
			if kvstore.Glob(lower(nil, p), []byte(name)) {
				names = append(names, name)
				break
			}
		}
	}
	sort.Strings(names)
	c.Map(len(names))
	for _, n := range names {
		c.BulkString(n)
		c.BulkString(all[n])
	}
}

func configSet(c *conn, pairs [][]byte) {
	// Validate every pair first: CONFIG SET is all or nothing.
	c.s.cfgMu.Lock()
	next := c.s.cfg
	var backend [][2]string
	for i := 0; i < len(pairs); i += 2 {
		name := strings.ToLower(string(pairs[i]))
		val := string(pairs[i+1])
		if p, ok := configParams[name]; ok {
			if p.set == nil {
				c.s.cfgMu.Unlock()
				c.Error("ERR CONFIG SET failed (possibly related to argument '" + name + "') - can't set immutable config")
				return
			}
			if !p.set(&next, val) {
				c.s.cfgMu.Unlock()
				why := p.bad
				if _, err := strconv.ParseInt(val, 10, 64); why == "" || p.integer && err != nil {
					why = "argument couldn't be parsed into an integer"
				}
				c.Error("ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + why)
				return
			}
			continue
		}
		if _, known := c.s.b.ConfigGet()[name]; !known {
			c.s.cfgMu.Unlock()
			c.Error("ERR Unknown option or number of arguments for CONFIG SET - '" + name + "'")
			return
		}
		backend = append(backend, [2]string{name, val})
	}
	for _, kv := range backend {
		if _, err := c.s.b.ConfigSet(kv[0], kv[1]); err != nil {
			c.s.cfgMu.Unlock()
			c.Error("ERR CONFIG SET failed (possibly related to argument '" + kv[0] + "') - " + err.Error())
			return
		}
	}
	c.s.cfg = next
	for i := 0; i < len(pairs); i += 2 {
		if strings.EqualFold(string(pairs[i]), "maxmemory") {
			c.s.mem.SetLimit(next.MaxMemory) // shared with memcached's cache_memlimit
		}
		if strings.EqualFold(string(pairs[i]), "maxmemory-policy") {
			c.s.mem.SetPolicy(int(next.MaxMemoryPolicy))
			c.s.b.Store().SetEvictPolicy(next.MaxMemoryPolicy)
		}
		if strings.EqualFold(string(pairs[i]), "maxmemory-samples") {
			c.s.mem.SetSamples(next.MaxMemorySamples)
		}
		if strings.EqualFold(string(pairs[i]), "requirepass") {
			c.s.acl.setRequirePass(next.RequirePass) // the default user's password
		}
	}
	c.s.track.setMaxKeys(next.TrackingTableMaxKeys)
	c.s.b.Store().SetNotifyFlags(next.NotifyKeyspaceEvents)
	c.s.b.Store().SetSlowlog(next.SlowlogSlowerThan, next.SlowlogMaxLen)
	c.s.b.Store().SetLFU(next.LFULogFactor, next.LFUDecayTime)
	c.s.b.Store().SetLatencyThreshold(next.LatencyMonitorThreshold)
	c.s.cfgMu.Unlock()
	c.Status("OK")
}

// --- COMMAND ------------------------------------------------------------------------------

// allSpecs lists every command the server knows: the store's and the frontend's.
func allSpecs() []*kvstore.Spec {
	var out []*kvstore.Spec
	seen := map[string]bool{}
	for _, cs := range connCommands {
		spec := cs.Spec
		out = append(out, &spec)
		seen[cs.Name] = true
	}
	for _, s := range kvstore.Commands() {
		if !seen[s.Name] {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func findSpec(name []byte) *kvstore.Spec {
	if cs := lookupConn(name); cs != nil {
		return &cs.Spec
	}
	return kvstore.Lookup(name)
}

func commandCommand(c *conn, args [][]byte) {
	if len(args) == 1 {
		specs := allSpecs()
		c.Array(len(specs))
		for _, s := range specs {
			writeCommandInfo(c, s)
		}
		return
	}
	switch strings.ToLower(string(args[1])) {
	case "count":
		c.Int(int64(len(allSpecs())))
	case "list":
		commandList(c, args)
	case "info":
		if len(args) == 2 {
			specs := allSpecs()
			c.Array(len(specs))
			for _, s := range specs {
				writeCommandInfo(c, s)
			}
			return
		}
		c.Array(len(args) - 2)
		for _, name := range args[2:] {
			if s := findSpec(name); s != nil {
				writeCommandInfo(c, s)
			} else if full := strings.ToLower(string(name)); strings.Contains(full, "|") && aclCommands().known(full) && redisMeta[full].arity != 0 {
				// a subcommand by its full name, as Redis 7 looks it up
				m := redisMeta[full]
				writeInfoEntry(c, full, m, strings.Fields(m.categories), redisKeySpecs[full], nil)
			} else {
				c.NullArray()
			}
		}
	case "docs":
		var specs []*kvstore.Spec
		if len(args) == 2 {
			specs = allSpecs()
		} else {
			for _, name := range args[2:] {
				if s := findSpec(name); s != nil {
					specs = append(specs, s)
				}
			}
		}
		c.Map(len(specs))
		for _, s := range specs {
			c.BulkString(s.Name)
			c.Map(3)
			c.BulkString("summary")
			c.BulkString(s.Summary)
			c.BulkString("since")
			c.BulkString(s.Since)
			c.BulkString("group")
			c.BulkString(s.Group)
		}
	case "getkeys", "getkeysandflags":
		commandGetKeys(c, args)
	case "help":
		lines := []string{"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"(no subcommand)", "    Return details about all Redis commands.",
			"COUNT", "    Return the total number of commands in this Redis server.",
			"LIST", "    Return a list of all commands in this Redis server.",
			"INFO [<command-name> ...]", "    Return details about multiple Redis commands.",
			"    If no command names are given, documentation details for all",
			"    commands are returned.",
			"DOCS [<command-name> ...]", "    Return documentation details about multiple Redis commands.",
			"    If no command names are given, documentation details for all",
			"    commands are returned.",
			"GETKEYS <full-command>", "    Return the keys from a full Redis command.",
			"GETKEYSANDFLAGS <full-command>", "    Return the keys and the access flags from a full Redis command.",
			"HELP", "    Prints this help."}
		c.Array(len(lines))
		for _, l := range lines {
			c.Status(l)
		}
	default:
		c.Error("ERR unknown subcommand '" + string(args[1]) + "'. Try COMMAND HELP.")
	}
}

// commandGetKeys is COMMAND GETKEYS and GETKEYSANDFLAGS: the keys of a call as Redis
// finds them (callKeys), with the errors of Redis's getKeysSubcommandImpl.
func commandGetKeys(c *conn, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	if len(args) < 4 { // the command and at least one argument
		c.Error(kvstore.WrongArgs("command|" + sub))
		return
	}
	call := args[2:]
	s := findSpec(call[0])
	if s == nil {
		c.Error("ERR Invalid command specified")
		return
	}
	name, arity := s.Name, s.Arity
	if subs := aclCommands().subs[s.Name]; len(subs) > 0 && len(call) > 1 {
		// a container names the subcommand, which must be one
		name += "|" + strings.ToLower(string(call[1]))
		if !slices.Contains(subs, name) {
			c.Error("ERR Invalid command specified")
			return
		}
		if m, ok := redisMeta[name]; ok {
			arity = m.arity
		}
	}
	if !hasKeys(name, s) {
		c.Error("ERR The command has no key arguments")
		return
	}
	if arity > 0 && len(call) != arity || len(call) < -arity {
		c.Error("ERR Invalid number of arguments specified for command")
		return
	}
	refs := callKeys(name, s, call)
	if len(refs) == 0 {
		if m, ok := redisMeta[name]; ok && slices.Contains(strings.Fields(m.flags), "no_mandatory_keys") {
			c.Array(0)
		} else {
			c.Error("ERR Invalid arguments specified for command")
		}
		return
	}
	c.Array(len(refs))
	for _, r := range refs {
		if sub == "getkeys" {
			c.Bulk(r.key)
			continue
		}
		c.Array(2)
		c.Bulk(r.key)
		flags := r.flags.names()
		c.Set(len(flags))
		for _, f := range flags {
			c.Status(f)
		}
	}
}

// commandList is COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN
// pattern]: every command and container subcommand ("client|list"), as Redis lists
// them.
func commandList(c *conn, args [][]byte) {
	keep := func(name string, s *kvstore.Spec) bool { return true }
	if len(args) > 2 {
		if len(args) != 5 || !strings.EqualFold(string(args[2]), "filterby") {
			c.Error(kvstore.ErrSyntax)
			return
		}
		arg := string(args[4])
		switch strings.ToLower(string(args[3])) {
		case "module": // no command comes from a module
			keep = func(string, *kvstore.Spec) bool { return false }
		case "aclcat":
			keep = func(name string, s *kvstore.Spec) bool {
				return slices.Contains(commandCategories(name, s), "@"+strings.ToLower(arg))
			}
		case "pattern":
			pat := []byte(strings.ToLower(arg))
			keep = func(name string, _ *kvstore.Spec) bool { return kvstore.Glob(pat, []byte(name)) }
		default:
			c.Error(kvstore.ErrSyntax)
			return
		}
	}
	var names []string
	eachCommandName(func(name string, s *kvstore.Spec) {
		if keep(name, s) {
			names = append(names, name)
		}
	})
	c.Array(len(names))
	for _, n := range names {
		c.BulkString(n)
	}
}

// groupCategory is the ACL category of a command's documentation group, where there
// is one.
var groupCategory = map[string]string{"generic": "keyspace", "string": "string", "list": "list", "hash": "hash",
	"set": "set", "sorted-set": "sortedset", "bitmap": "bitmap", "hyperloglog": "hyperloglog", "geo": "geo",
	"stream": "stream", "pubsub": "pubsub", "connection": "connection", "transactions": "transaction",
	"scripting": "scripting"}

// commandMeta is what COMMAND INFO reports of a Redis command besides its name and
// arity: its flags, ACL categories and tips, each space-separated in Redis's order, and
// its key positions (a container's are 0: its subcommands name the keys).
type commandMeta struct {
	flags, categories, tips string
	first, last, step       int
	arity                   int
}

// Scripts may not call what Redis flags noscript: the store's list gets Redis's whole
// table, with the server commands the store does not know (REPLCONF, LATENCY's
// subcommands...), which a script then finds refused as in Redis, not unknown.
func init() {
	refused := map[string]int{}
	for name, m := range redisMeta {
		if slices.Contains(strings.Fields(m.flags), "noscript") {
			refused[name] = m.arity
		}
	}
	kvstore.RefuseInScripts(refused)
}

// commandCategories are the ACL categories of command name (a subcommand as
// "container|sub") of spec s, in Redis's order: Redis 7.0's own for its commands
// (redisMeta), and for nanokv's as their flags and group give them.
func commandCategories(name string, s *kvstore.Spec) []string {
	if m, ok := redisMeta[name]; ok {
		return strings.Fields(m.categories)
	}
	has := map[string]bool{groupCategory[s.Group]: true}
	has["write"] = s.Flags&kvstore.FlagWrite != 0 && s.Flags&(kvstore.FlagPubSub|kvstore.FlagScript) == 0
	has["read"] = s.Flags&kvstore.FlagReadOnly != 0
	has["fast"] = s.Flags&kvstore.FlagFast != 0
	has["slow"] = !has["fast"]
	has["blocking"] = s.Flags&kvstore.FlagBlocking != 0
	var cats []string
	for _, cat := range aclCategories {
		if has[cat] {
			cats = append(cats, "@"+cat)
		}
	}
	return cats
}

// eachCommandName calls fn with the name of every command the server knows and, after
// each container, the full names of its subcommands ("client|id"), in order.
func eachCommandName(fn func(name string, s *kvstore.Spec)) {
	for _, s := range allSpecs() {
		fn(s.Name, s)
		subs := slices.Clone(connSubcommands[s.Name])
		for sub := range s.Subcommands {
			subs = append(subs, sub)
		}
		slices.Sort(subs)
		for _, sub := range slices.Compact(subs) {
			fn(s.Name+"|"+sub, s)
		}
	}
}

// writeCommandInfo writes Redis 7.0's ten-element command description: for Redis's
// commands the flags, categories, tips and key positions Redis gives (redisMeta), for
// nanokv's own flags from what they do. Key specifications and subcommands are not
// given.
func writeCommandInfo(c *conn, s *kvstore.Spec) {
	m, ok := redisMeta[s.Name]
	if !ok {
		m = commandMeta{flags: strings.Join(commandFlags(s), " "), first: s.FirstKey, last: s.LastKey, step: s.Step}
	}
	m.arity = s.Arity
	// the subcommands nanokv knows that Redis describes
	var subs []string
	for _, full := range aclCommands().subs[s.Name] {
		if _, ok := redisMeta[full]; ok {
			subs = append(subs, full)
		}
	}
	specs := redisKeySpecs[s.Name]
	if _, redis := redisMeta[s.Name]; !redis && s.FirstKey > 0 {
		// one of nanokv's own commands: its key positions as the one range Redis
		// derives from a module command's
		last := s.LastKey
		if last >= 0 {
			last -= s.FirstKey
		}
		flags := "RO access"
		if s.Flags&kvstore.FlagWrite != 0 {
			flags = "RW access update"
		}
		specs = []keySpec{{flags: flags, bs: "index", pos: s.FirstKey, fk: "range", n: [3]int{last, s.Step, 0}}}
	}
	writeInfoEntry(c, s.Name, m, commandCategories(s.Name, s), specs, subs)
}

// writeInfoEntry writes one command's (or subcommand's) description, with those of its
// subcommands.
func writeInfoEntry(c *conn, name string, m commandMeta, cats []string, specs []keySpec, subs []string) {
	flags, tips := strings.Fields(m.flags), strings.Fields(m.tips)
	c.Array(10)
	c.BulkString(name)
	c.Int(int64(m.arity))
	c.Set(len(flags))
	for _, f := range flags {
		c.Status(f)
	}
	c.Int(int64(m.first))
	c.Int(int64(m.last))
	c.Int(int64(m.step))
	c.Set(len(cats))
	for _, cat := range cats {
		c.Status(cat)
	}
	c.Set(len(tips))
	for _, tip := range tips {
		c.BulkString(tip)
	}
	c.Set(len(specs))
	for _, sp := range specs {
		writeKeySpec(c, sp)
	}
	c.Set(len(subs))
	for _, full := range subs {
		sm := redisMeta[full]
		writeInfoEntry(c, full, sm, strings.Fields(sm.categories), redisKeySpecs[full], nil)
	}
}

// writeKeySpec writes a key specification as Redis's COMMAND INFO does: a map of its
// notes (if any), flags, begin_search and find_keys.
func writeKeySpec(c *conn, sp keySpec) {
	n := 3
	if sp.notes != "" {
		n++
	}
	c.Map(n)
	if sp.notes != "" {
		c.BulkString("notes")
		c.BulkString(sp.notes)
	}
	c.BulkString("flags")
	flags := strings.Fields(sp.flags)
	c.Set(len(flags))
	for _, f := range flags {
		c.Status(f)
	}
	part := func(name, typ string, fields []string, vals []any) {
		c.BulkString(name)
		c.Map(2)
		c.BulkString("type")
		c.BulkString(typ)
		c.BulkString("spec")
		c.Map(len(fields))
		for i, f := range fields {
			c.BulkString(f)
			switch v := vals[i].(type) {
			case int:
				c.Int(int64(v))
			case string:
				c.BulkString(v)
			}
		}
	}
	switch sp.bs {
	case "index":
		part("begin_search", sp.bs, []string{"index"}, []any{sp.pos})
	case "keyword":
		part("begin_search", sp.bs, []string{"keyword", "startfrom"}, []any{sp.keyword, sp.pos})
	default:
		part("begin_search", sp.bs, nil, nil)
	}
	switch sp.fk {
	case "range":
		part("find_keys", sp.fk, []string{"lastkey", "keystep", "limit"}, []any{sp.n[0], sp.n[1], sp.n[2]})
	case "keynum":
		part("find_keys", sp.fk, []string{"keynumidx", "firstkey", "keystep"}, []any{sp.n[0], sp.n[1], sp.n[2]})
	default:
		part("find_keys", sp.fk, nil, nil)
	}
}

// commandFlags are the COMMAND INFO flags of a command of nanokv's own.
func commandFlags(s *kvstore.Spec) []string {
	var flags []string
	switch {
	case s.Flags&kvstore.FlagPubSub != 0:
		flags = append(flags, "pubsub")
	case s.Flags&kvstore.FlagScript != 0:
		// EVAL and FCALL go through the log, but Redis does not flag them write
	case s.Flags&kvstore.FlagWrite != 0:
		flags = append(flags, "write")
	}
	if s.Flags&kvstore.FlagReadOnly != 0 {
		flags = append(flags, "readonly")
	}
	if s.Flags&kvstore.FlagDenyOOM != 0 {
		flags = append(flags, "denyoom")
	}
	if s.Flags&kvstore.FlagFast != 0 {
		flags = append(flags, "fast")
	}
	if s.Flags&kvstore.FlagBlocking != 0 {
		flags = append(flags, "blocking")
	}
	return flags
}
