package resp

import (
	"bytes"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/nanokv/nanokv/kvstore"
)

// configParam is one CONFIG GET/SET parameter the frontend owns.
type configParam struct {
	get func(cfg *Config) string
	// set stores a value in cfg, or returns the reason for refusing it; nil: read-only.
	// With a spec, the value has passed spec's checks and comes as spec writes it (a
	// number in decimal), and set does not refuse it.
	set  func(cfg *Config, v string) string
	spec *setting
}

// numParam is a number held at field(cfg), checked as Redis checks spec's values.
func numParam(spec setting, field func(cfg *Config) *int64) configParam {
	return configParam{
		get:  func(c *Config) string { return strconv.FormatInt(*field(c), 10) },
		set:  func(c *Config, v string) string { *field(c) = decimal(v); return "" },
		spec: &spec,
	}
}

// decimal reads a number as setting.parse writes one, beyond 2^63-1 as 2^63-1.
func decimal(v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		if u, err := strconv.ParseUint(v, 10, 64); err == nil && u > math.MaxInt64 {
			return math.MaxInt64
		}
	}
	return n
}

var configParams = map[string]configParam{
	"aclfile": {get: func(c *Config) string { return c.ACLFile }}, // immutable, as in Redis
	"requirepass": {
		get: func(c *Config) string { return c.RequirePass },
		set: func(c *Config, v string) string { c.RequirePass = v; return "" },
	},
	"proto-max-bulk-len": numParam(memory(intSetting("proto-max-bulk-len", "", 1<<20, longMax, "")),
		func(c *Config) *int64 { return &c.MaxBulk }),
	"client-query-buffer-limit": numParam(memory(unsigned(intSetting("client-query-buffer-limit", "", 1<<20, longMax, ""))),
		func(c *Config) *int64 { return &c.QueryBufMax }),
	"slowlog-log-slower-than": numParam(intSetting("slowlog-log-slower-than", "", -1, longMax, ""),
		func(c *Config) *int64 { return &c.SlowlogSlowerThan }),
	"slowlog-max-len": numParam(unsigned(intSetting("slowlog-max-len", "", 0, longMax, "")),
		func(c *Config) *int64 { return &c.SlowlogMaxLen }),
	"latency-monitor-threshold": numParam(intSetting("latency-monitor-threshold", "", 0, longMax, ""),
		func(c *Config) *int64 { return &c.LatencyMonitorThreshold }),
	"tracking-table-max-keys": numParam(unsigned(intSetting("tracking-table-max-keys", "", 0, longMax, "")),
		func(c *Config) *int64 { return &c.TrackingTableMaxKeys }),
	"lfu-log-factor": numParam(intSetting("lfu-log-factor", "", 0, intMax, ""),
		func(c *Config) *int64 { return &c.LFULogFactor }),
	"lfu-decay-time": numParam(intSetting("lfu-decay-time", "", 0, intMax, ""),
		func(c *Config) *int64 { return &c.LFUDecayTime }),
	"notify-keyspace-events": {
		get: func(c *Config) string { return kvstore.FormatNotifyFlags(c.NotifyKeyspaceEvents) },
		set: func(c *Config, v string) string {
			flags, ok := kvstore.ParseNotifyFlags(v)
			if !ok {
				return "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
			}
			c.NotifyKeyspaceEvents = flags
			return ""
		},
	},
	"latency-tracking-info-percentiles": {
		get: func(c *Config) string { return formatPercentiles(c.LatencyPercentiles) },
		set: func(c *Config, v string) string {
			ps, why := parsePercentiles(v)
			c.LatencyPercentiles = ps
			return why
		},
	},
	"client-output-buffer-limit": {
		get: func(c *Config) string { return formatOutputLimits(c.OutputLimits) },
		set: func(c *Config, v string) string {
			limits, why := parseOutputLimits(v, c.OutputLimits)
			c.OutputLimits = limits
			return why
		},
	},
	"maxclients": {
		get:  func(c *Config) string { return strconv.Itoa(c.MaxClients) },
		set:  func(c *Config, v string) string { c.MaxClients = int(decimal(v)); return "" },
		spec: &setting{name: "maxclients", kind: settingInt, lo: 1, hi: uintMax, unsigned: true},
	},
	"port":      {get: func(c *Config) string { return strconv.Itoa(c.Port) }},
	"bind":      {get: func(c *Config) string { return c.Bind }},
	"databases": {get: func(*Config) string { return strconv.Itoa(kvstore.NumDBs) }},
	"timeout": numParam(intSetting("timeout", "", 0, intMax, ""),
		func(c *Config) *int64 { return &c.Timeout }),
	"maxmemory": {
		get:  func(c *Config) string { return strconv.FormatInt(c.Memory.Limit(), 10) },
		set:  func(c *Config, v string) string { c.MaxMemory = decimal(v); return "" },
		spec: &setting{name: "maxmemory", kind: settingMemory, lo: 0, hi: ullongMx, unsigned: true},
	},
	"maxmemory-samples": {
		get:  func(c *Config) string { return strconv.Itoa(c.Memory.Samples()) },
		set:  func(c *Config, v string) string { c.MaxMemorySamples = int(decimal(v)); return "" },
		spec: &setting{name: "maxmemory-samples", kind: settingInt, lo: 1, hi: intMax},
	},
	"maxmemory-policy": {
		get: func(c *Config) string { return kvstore.EvictPolicy(c.Memory.Policy()).String() },
		set: func(c *Config, v string) string {
			c.MaxMemoryPolicy, _ = kvstore.ParseEvictPolicy(v)
			return ""
		},
		spec: &setting{name: "maxmemory-policy", kind: settingEnum, enum: maxmemoryPolicies},
	},
	"tcp-keepalive": numParam(intSetting("tcp-keepalive", "", 0, intMax, ""),
		func(c *Config) *int64 { return &c.TCPKeepAlive }),
	"protected-mode":       {get: func(*Config) string { return "no" }},
	"cluster-enabled":      {get: func(*Config) string { return "no" }},
	"lua-time-limit":       {get: func(*Config) string { return "5000" }},
	"busy-reply-threshold": {get: func(*Config) string { return "5000" }},
	// The point where an HLL turns dense decides replicated bytes: fixed, not settable.
	"hll-sparse-max-bytes": {get: func(*Config) string { return "3000" }},
}

// ParseMemory reads a memory setting as Redis's configuration does (memToULL): a number
// with an optional unit, k/kb/m/mb/g/gb; false if it is not one, or is 2^63 or more.
func ParseMemory(v string) (int64, bool) {
	n, ok := memToULL(v)
	return n, ok && n >= 0
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
		if len(args) < 4 {
			c.Error(kvstore.WrongArgs("config|set"))
			return
		}
		if len(args)%2 != 0 {
			c.Error("ERR syntax error")
			return
		}
		configSet(c, args[2:])
	case "resetstat":
		if len(args) != 2 {
			c.Error(kvstore.WrongArgs("config|resetstat"))
			return
		}
		c.s.stats.connections.Store(0)
		c.s.stats.rejected.Store(0)
		c.s.stats.netIn.Store(0)
		c.s.stats.netOut.Store(0)
		c.s.stats.reads.Store(0)
		c.s.stats.writes.Store(0)
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
	s.cfgMu.RLock()
	for _, st := range redisSettings {
		out[st.name] = s.settings[st.name]
		if st.alias != "" {
			out[st.alias] = s.settings[st.name]
		}
	}
	s.cfgMu.RUnlock()
	return out
}

func configGet(c *conn, patterns [][]byte) {
	all := c.s.allConfig()
	// As Redis, a pattern without glob characters looks its parameter up and answers
	// with the name as given; a glob answers with the names as they are.
	got := map[string]string{}
	var names []string
	add := func(name, value string) {
		if _, dup := got[name]; !dup {
			got[name] = value
			names = append(names, name)
		}
	}
	for _, p := range patterns {
		if !bytes.ContainsAny(p, "*?[") {
			if v, ok := all[strings.ToLower(string(p))]; ok {
				add(string(p), v)
			}
			continue
		}
		for name, v := range all {
			if kvstore.Glob(lower(nil, p), []byte(name)) {
				add(name, v)
			}
		}
	}
	sort.Strings(names)
	c.Map(len(names))
	for _, n := range names {
		c.BulkString(n)
		c.BulkString(got[n])
	}
}

func configSet(c *conn, pairs [][]byte) {
	c.s.cfgMu.Lock()
	if why := c.s.configSetLocked(pairs); why != "" {
		c.s.cfgMu.Unlock()
		c.Error(why)
		return
	}
	c.s.cfgMu.Unlock()
	c.Status("OK")
}

// configSetLocked is CONFIG SET under cfgMu: "" once every pair is set, else the error,
// with nothing changed. As in Redis, every name is looked up first, and the first that
// is unknown, immutable or given twice fails the command; then the values are checked
// in order, and the first bad one fails it. Only then is anything set.
func (s *Server) configSetLocked(pairs [][]byte) string {
	type pair struct {
		name, val string
		param     *configParam
		setting   *setting
	}
	ps := make([]pair, 0, len(pairs)/2)
	backendKnown := s.b.ConfigGet()
	for i := 0; i < len(pairs); i += 2 {
		given := string(pairs[i])
		p := pair{name: strings.ToLower(given), val: string(pairs[i+1])}
		immutable := false
		if cp, ok := configParams[p.name]; ok {
			p.param, immutable = &cp, cp.set == nil
		} else if st := settingByName[p.name]; st != nil {
			p.setting, immutable = st, st.immutable
		} else if _, ok := backendKnown[p.name]; !ok {
			return "ERR Unknown option or number of arguments for CONFIG SET - '" + given + "'"
		}
		if immutable {
			return "ERR CONFIG SET failed (possibly related to argument '" + given + "') - can't set immutable config"
		}
		for _, q := range ps {
			if q.name == p.name {
				return "ERR CONFIG SET failed (possibly related to argument '" + given + "') - duplicate parameter"
			}
		}
		ps = append(ps, p)
	}

	next := s.cfg
	settings := maps.Clone(s.settings)
	type backendSet struct {
		name string
		set  func() error
	}
	var sets []backendSet // the backend's parameters, checked
	for _, p := range ps {
		switch {
		case p.param != nil:
			v := p.val
			if p.param.spec != nil {
				var why string
				if v, why = p.param.spec.parse(v); why != "" {
					return "ERR CONFIG SET failed (possibly related to argument '" + p.name + "') - " + why
				}
			}
			if why := p.param.set(&next, v); why != "" {
				return "ERR CONFIG SET failed (possibly related to argument '" + p.name + "') - " + why
			}
		case p.setting != nil:
			v, why := p.setting.parse(p.val)
			if why != "" {
				return "ERR CONFIG SET failed (possibly related to argument '" + p.name + "') - " + why
			}
			settings[p.setting.name] = v
		default:
			set, remote, err := s.b.ConfigCheck(p.name, p.val)
			if err != nil {
				return "ERR CONFIG SET failed (possibly related to argument '" + p.name + "') - " + err.Error()
			}
			bs := backendSet{p.name, set}
			if remote {
				// First, so that its failure leaves everything as it was. Names are
				// never given twice, and one parameter at most asks the cluster.
				sets = append([]backendSet{bs}, sets...)
			} else {
				sets = append(sets, bs)
			}
		}
	}
	for _, bs := range sets {
		if err := bs.set(); err != nil {
			return "ERR CONFIG SET failed (possibly related to argument '" + bs.name + "') - " + err.Error()
		}
	}
	s.cfg, s.settings = next, settings
	limits := next.OutputLimits
	s.outLimits.Store(&limits)
	for _, p := range ps {
		switch p.name {
		case "maxmemory":
			s.mem.SetLimit(next.MaxMemory) // shared with memcached's cache_memlimit
		case "maxmemory-policy":
			s.mem.SetPolicy(int(next.MaxMemoryPolicy))
			s.b.Store().SetEvictPolicy(next.MaxMemoryPolicy)
		case "maxmemory-samples":
			s.mem.SetSamples(next.MaxMemorySamples)
		case "requirepass":
			s.acl.setRequirePass(next.RequirePass) // the default user's password
		}
		if p.setting != nil && p.setting.apply != nil {
			p.setting.apply(s, settings[p.setting.name])
		}
	}
	s.track.setMaxKeys(next.TrackingTableMaxKeys)
	s.b.Store().SetNotifyFlags(next.NotifyKeyspaceEvents)
	s.b.Store().SetSlowlog(next.SlowlogSlowerThan, next.SlowlogMaxLen)
	s.b.Store().SetLFU(next.LFULogFactor, next.LFUDecayTime)
	s.b.Store().SetLatencyThreshold(next.LatencyMonitorThreshold)
	return ""
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
		commandDocsReply(c, args[2:])
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
