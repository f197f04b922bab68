package resp

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nanokv/nanokv/kvstore"
)

// connSpec is a command the frontend answers itself (connection state, server admin).
type connSpec struct {
	kvstore.Spec
	run    func(c *conn, args [][]byte)
	noAuth bool // allowed before AUTH
	txCtrl bool // MULTI/EXEC/DISCARD/WATCH: handled even inside MULTI
	// noMulti: refused inside MULTI. Redis refuses SAVE and SHUTDOWN; nanokv also
	// (un)subscribing, RAFT.* and IDEMPOTENT. EXEC runs the others on the connection.
	noMulti bool
}

var connCommands = map[string]*connSpec{}

// connSubcommands are the subcommands of the connection commands that are containers,
// each counted apart in INFO commandstats ("client|list"), as in Redis.
var connSubcommands = map[string][]string{
	"client":  slices.Collect(maps.Keys(clientArity)),
	"config":  {"get", "set", "resetstat", "rewrite", "help"},
	"command": {"count", "info", "docs", "list", "getkeys", "getkeysandflags", "help"},
	"memory":  {"usage", "purge", "stats", "doctor", "malloc-stats", "help"},
	"slowlog": {"get", "len", "reset", "help"},
	"pubsub":  {"channels", "numsub", "numpat", "shardchannels", "shardnumsub", "help"},
	// Redis 7.0's: each answers that cluster support is disabled, as Redis's do then
	"cluster": {"addslots", "addslotsrange", "bumpepoch", "count-failure-reports", "countkeysinslot", "delslots",
		"delslotsrange", "failover", "flushslots", "forget", "getkeysinslot", "help", "info", "keyslot", "links", "meet",
		"myid", "nodes", "replicas", "replicate", "reset", "saveconfig", "set-config-epoch", "setslot", "shards",
		"slaves", "slots"},
}

// connSubArity is the arity of each subcommand of each container in connSubcommands
// (Redis's convention: the container and the subcommand count), as Redis 7.0 has it,
// or nanokv's own for the subcommands Redis 7.0 has not.
var connSubArity = sync.OnceValue(func() map[string]map[string]int {
	own := map[string]map[string]int{"client": clientArity, "acl": aclArity, "latency": latencyArity, "module": moduleArity}
	all := map[string]map[string]int{}
	for name, subs := range connSubcommands {
		arity := map[string]int{}
		for _, sub := range subs {
			if m, ok := redisMeta[name+"|"+sub]; ok {
				arity[sub] = m.arity
			} else if a, ok := own[name][sub]; ok {
				arity[sub] = a
			} else {
				arity[sub] = -2
			}
		}
		all[name] = arity
	}
	return all
})

// connArgsError is the error Redis gives a connection or server command before it runs,
// or when it is queued inside MULTI: the wrong number of arguments, a container's
// unknown subcommand, or the wrong number for the subcommand; "" when it has none.
func connArgsError(cs *connSpec, args [][]byte) string {
	if !cs.CheckArity(args) {
		return kvstore.WrongArgs(cs.Name)
	}
	if arity, ok := connSubArity()[cs.Name]; ok && len(args) > 1 { // COMMAND alone is valid
		_, msg := kvstore.CheckSubcommand(args, cs.Name, arity)
		return msg
	}
	return ""
}

func init() {
	add := func(name string, arity int, group, since, summary string, run func(*conn, [][]byte), opts ...func(*connSpec)) {
		cs := &connSpec{Spec: kvstore.Spec{Name: name, Arity: arity, Group: group, Since: since, Summary: summary, Flags: kvstore.FlagConn}, run: run}
		for _, o := range opts {
			o(cs)
		}
		connCommands[name] = cs
	}
	noAuth := func(cs *connSpec) { cs.noAuth = true }
	tx := func(cs *connSpec) { cs.txCtrl = true }
	fast := func(cs *connSpec) { cs.Flags |= kvstore.FlagFast }
	noMulti := func(cs *connSpec) { cs.noMulti = true }
	add("ping", -1, "connection", "1.0.0", "Ping the server", pingCommand, fast)
	add("echo", 2, "connection", "1.0.0", "Echo the given string", func(c *conn, a [][]byte) { c.Bulk(a[1]) }, fast)
	add("select", 2, "connection", "1.0.0", "Change the selected database for the current connection", selectCommand, fast)
	add("quit", -1, "connection", "1.0.0", "Close the connection", quitCommand, noAuth, fast)
	add("reset", 1, "connection", "6.2.0", "Reset the connection", resetCommand, noAuth, fast)
	add("auth", -2, "connection", "1.0.0", "Authenticate to the server", authCommand, noAuth, fast)
	add("hello", -1, "connection", "6.0.0", "Handshake with Redis", helloCommand, noAuth, fast)
	add("client", -2, "connection", "2.4.0", "A container for client connection commands", clientCommand)
	add("multi", 1, "transactions", "1.2.0", "Mark the start of a transaction block", multiCommand, tx, fast)
	add("exec", 1, "transactions", "1.2.0", "Execute all commands issued after MULTI", execCommand, tx)
	add("discard", 1, "transactions", "2.0.0", "Discard all commands issued after MULTI", discardCommand, tx, fast)
	add("watch", -2, "transactions", "2.2.0", "Watch the given keys to determine execution of the MULTI/EXEC block", watchCommand, tx, fast)
	add("unwatch", 1, "transactions", "2.2.0", "Forget about all watched keys", unwatchCommand, fast)
	add("info", -1, "server", "1.0.0", "Get information and statistics about the server", infoCommand)
	add("config", -2, "server", "2.0.0", "A container for server configuration commands", configCommand)
	add("command", -1, "server", "2.8.13", "Get array of Redis command details", commandCommand)
	add("time", 1, "server", "2.6.0", "Return the current server time", timeCommand, fast)
	add("lastsave", 1, "server", "1.0.0", "Get the UNIX time stamp of the last successful save to disk", lastsaveCommand, fast)
	add("save", 1, "server", "1.0.0", "Synchronously save the dataset to disk", saveCommand, noMulti)
	add("bgsave", -1, "server", "1.0.0", "Asynchronously save the dataset to disk", bgsaveCommand)
	add("bgrewriteaof", 1, "server", "1.0.0", "Asynchronously rewrite the append-only file", bgrewriteaofCommand)
	add("replconf", -1, "server", "3.0.0", "An internal command for configuring the replication stream", replconfCommand)
	add("sync", 1, "server", "1.0.0", "Internal command used for replication", syncCommand, noMulti)
	add("psync", -3, "server", "2.8.0", "Internal command used for replication", syncCommand, noMulti)
	add("role", 1, "server", "2.8.12", "Return the role of the instance in the context of replication", roleCommand, fast)
	add("memory", -2, "server", "4.0.0", "A container for memory diagnostics commands", memoryCommand)
	add("wait", 3, "generic", "3.0.0", "Wait for the synchronous replication of all the write commands sent in the context of the current connection", waitCommand)
	add("shutdown", -1, "server", "1.0.0", "Synchronously save the dataset to disk and then shut down the server", shutdownCommand, noMulti)
	add("idempotent", -4, "generic", "nanokv", "Run a write at most once per client id and sequence number, answering a retry with the first reply", idempotentCommand, noMulti)
	connCommands["watch"].FirstKey, connCommands["watch"].LastKey, connCommands["watch"].Step = 1, -1, 1
	// RedisRaft's administration commands; the backend answers them (NOCLUSTER when the
	// node is not a cluster member).
	for _, rc := range []struct {
		name    string
		arity   int
		summary string
	}{
		{"raft.cluster", -2, "Initialize or join a Raft cluster"},
		{"raft.node", -2, "Add or remove a cluster member"},
		{"raft.transfer_leader", -1, "Hand Raft leadership to another member"},
		{"raft.timeout_now", 1, "Make this member start an election now"},
		{"raft.debug", -2, "Raft debugging commands"},
	} {
		add(rc.name, rc.arity, "raft", "nanokv", rc.summary, raftCommand, noMulti)
	}
	// Redis's replication commands, which the backend answers in Raft's terms.
	add("failover", -1, "server", "6.2.0", "Start a coordinated failover between this server and one of its replicas.", raftCommand)
	add("replicaof", 3, "server", "5.0.0", "Make the server a replica of another instance, or promote it as master.", raftCommand)
	add("slaveof", 3, "server", "1.0.0", "Make the server a replica of another instance, or promote it as master.", raftCommand)
}

// RaftAdmin is implemented by a backend that answers RedisRaft's RAFT.* commands. The
// call may block (a membership change waits for its commit).
type RaftAdmin interface {
	RaftCommand(ctx context.Context, args [][]byte, w kvstore.ReplyWriter)
}

// Replicator is implemented by a backend with replicas: WAIT asks it how many members
// besides this one hold every write acknowledged so far.
type Replicator interface {
	Replicas(ctx context.Context) (int64, error)
}

// waitCommand is WAIT numreplicas timeout. This connection's writes were acknowledged at
// commit, so a replica holding everything committed when WAIT arrived holds them all. A
// node without replicas answers as a standalone Redis does: 0, after the timeout when
// replicas were asked for.
func waitCommand(c *conn, args [][]byte) {
	want, ok := kvstore.ParseInt(args[1])
	if !ok {
		c.Error("ERR value is not an integer or out of range")
		return
	}
	ms, ok := kvstore.ParseInt(args[2])
	if !ok {
		c.Error("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		c.Error("ERR timeout is negative")
		return
	}
	var deadline <-chan time.Time
	if ms > 0 {
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		deadline = t.C
	}
	rep, _ := c.s.b.(Replicator)
	for {
		var n int64
		if rep != nil {
			var err error
			if n, err = rep.Replicas(context.Background()); err != nil {
				c.Error(errorReply(err))
				return
			}
		}
		if n >= want || c.execing > 0 { // inside EXEC, Redis does not wait
			c.Int(n)
			return
		}
		select {
		case <-deadline:
			c.Int(n)
			return
		case <-c.s.done:
			c.Int(n)
			return
		case <-time.After(time.Millisecond):
		}
	}
}

// idempotentCommand is IDEMPOTENT client-id seq command [arg ...]: the write runs at
// most once for (client-id, seq), and a retry (after a timeout, a failover, a lost
// connection) gets the first reply back (kvstore/idempotent.go). A client numbers its
// writes upwards; a number below its last one is refused.
func idempotentCommand(c *conn, args [][]byte) {
	seq, err := strconv.ParseUint(string(args[2]), 10, 64)
	if err != nil {
		c.Error("ERR value is not an integer or out of range")
		return
	}
	inner := args[3:]
	spec := kvstore.Lookup(inner[0])
	switch {
	case spec == nil:
		c.Error(kvstore.UnknownCommand(inner))
	case !spec.CheckArity(inner):
		c.Error(kvstore.WrongArgs(spec.Name))
	case spec.Flags&kvstore.FlagWrite == 0:
		c.Error("ERR IDEMPOTENT runs write commands only")
	case c.s.mem.Refusing() && c.deniesOOM(spec, inner):
		c.Error(kvstore.ErrOOM) // as the command alone would be refused
	default:
		var entry []byte
		if runsScript(spec) {
			entry = c.overMemoryMark(entry)
		}
		c.propose(kvstore.AppendIdempotent(entry, args[1], seq, c.db, inner), 1, false)
	}
}

func raftCommand(c *conn, args [][]byte) {
	ra, ok := c.s.b.(RaftAdmin)
	if !ok {
		c.Error("NOCLUSTER No Raft Cluster")
		return
	}
	ra.RaftCommand(context.Background(), args, &c.Writer)
}

func lookupConn(name []byte) *connSpec {
	if len(name) > 24 {
		return nil
	}
	var buf [24]byte
	return connCommands[string(lower(buf[:0], name))]
}

func lower(dst, b []byte) []byte {
	for _, ch := range b {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		dst = append(dst, ch)
	}
	return dst
}

func allowedUnauthed(name []byte) bool {
	cs := lookupConn(name)
	return cs != nil && cs.noAuth
}

// runsInMulti: QUIT and RESET are run, not queued, inside MULTI, as in Redis (RESET
// ends the transaction).
func runsInMulti(name []byte) bool {
	return strings.EqualFold(string(name), "quit") || strings.EqualFold(string(name), "reset")
}

// statusLines replies with an array of status lines (the HELP subcommands' text).
func (c *conn) statusLines(lines []string) {
	c.Array(len(lines))
	for _, l := range lines {
		c.Status(l)
	}
}

func isTxControl(name []byte) bool {
	cs := lookupConn(name)
	return cs != nil && cs.txCtrl
}

func pingCommand(c *conn, args [][]byte) {
	if c.Proto == 2 && c.subscribed() && len(args) <= 2 {
		// in RESP2's subscribed context, a pong is a message
		c.Array(2)
		c.BulkString("pong")
		if len(args) == 2 {
			c.Bulk(args[1])
		} else {
			c.BulkString("")
		}
		return
	}
	switch len(args) {
	case 1:
		c.Status("PONG")
	case 2:
		c.Bulk(args[1])
	default:
		c.Error(kvstore.WrongArgs("ping"))
	}
}

func selectCommand(c *conn, args [][]byte) {
	v, ok := kvstore.ParseInt(args[1])
	if !ok {
		c.Error(kvstore.ErrNotInteger)
		return
	}
	if v < 0 || v >= kvstore.NumDBs {
		c.Error(kvstore.ErrDBIndex)
		return
	}
	c.db = int(v)
	c.Status("OK")
}

func quitCommand(c *conn, _ [][]byte) {
	c.Status("OK")
	c.closeNext = true
}

func resetCommand(c *conn, _ [][]byte) {
	c.leaveAll()
	c.s.track.disable(c)
	c.caching = false
	c.stopMonitoring()
	c.inMulti, c.multiErr, c.queued = false, false, nil
	c.watches = nil
	c.setReadonly(false)
	c.replyOff, c.skipNext, c.skipping = false, false, false
	c.db = 0
	c.Proto = 2
	c.logInDefault()
	c.Status("RESET")
}

const errNoPassword = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
const errWrongPass = "WRONGPASS invalid username-password pair or user is disabled."

// logInDefault makes a new (or RESET) connection act as the default user if that user
// needs no password, as Redis does; otherwise it must authenticate.
func (c *conn) logInDefault() {
	c.user.Store(nil)
	c.authed = false
	if ref := c.s.acl.user("default"); ref != nil {
		if u := ref.load(); u.on && u.nopass {
			c.user.Store(ref)
			c.authed = true
		}
	}
}

// logIn authenticates the connection as user with pass; a failure is logged (ACL LOG)
// under cmd, the command that tried, as the client spelled it (as Redis logs it).
func (c *conn) logIn(user, pass []byte, cmd []byte) bool {
	ref := c.s.acl.authenticate(string(user), string(pass))
	if ref == nil {
		c.s.acl.record("auth", c.aclContext(), string(cmd), string(user), c.describe(strings.ToLower(string(cmd))))
		return false
	}
	c.user.Store(ref)
	c.authed = true
	return true
}

func authCommand(c *conn, args [][]byte) {
	switch len(args) {
	case 2:
		if u := c.s.acl.user("default"); u == nil || u.load().nopass {
			c.Error(errNoPassword)
			return
		}
		if !c.logIn([]byte("default"), args[1], args[0]) {
			c.Error(errWrongPass)
			return
		}
	case 3:
		if !c.logIn(args[1], args[2], args[0]) {
			c.Error(errWrongPass)
			return
		}
	default: // past the arity check (-2): Redis's syntax error for more than three
		c.Error("ERR syntax error")
		return
	}
	c.Status("OK")
}

func helloCommand(c *conn, args [][]byte) {
	proto := c.Proto
	if len(args) >= 2 {
		v, ok := kvstore.ParseInt(args[1])
		if !ok {
			c.Error("ERR Protocol version is not an integer or out of range")
			return
		}
		if v < 2 || v > 3 {
			c.Error("NOPROTO unsupported protocol version")
			return
		}
		proto = int(v)
	}
	var name []byte
	setName := false
	for i := 2; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case eqFold(args[i], "auth") && more >= 2:
			if !c.logIn(args[i+1], args[i+2], args[0]) {
				c.Error(errWrongPass)
				return
			}
			i += 2
		case eqFold(args[i], "setname") && more >= 1:
			name, setName = args[i+1], true
			if !validClientName(name) {
				c.Error("ERR Client names cannot contain spaces, newlines or special characters.")
				return
			}
			i++
		default:
			c.Error("ERR Syntax error in HELLO option '" + string(args[i]) + "'")
			return
		}
	}
	if !c.authed {
		c.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if setName {
		c.name = string(name)
	}
	c.Proto = proto
	c.Map(7)
	c.BulkString("server")
	c.BulkString("redis")
	c.BulkString("version")
	c.BulkString(c.s.config().RedisVersion)
	c.BulkString("proto")
	c.Int(int64(proto))
	c.BulkString("id")
	c.Int(c.id)
	c.BulkString("mode")
	c.BulkString("standalone")
	c.BulkString("role")
	c.BulkString("master")
	c.BulkString("modules")
	c.Array(0)
}

func eqFold(b []byte, lowerName string) bool {
	return len(b) == len(lowerName) && strings.EqualFold(string(b), lowerName)
}

func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

// clientArity is the arity of each CLIENT subcommand, Redis-style (name included).
var clientArity = map[string]int{"id": 2, "getname": 2, "setname": 3, "info": 2, "list": -2, "help": 2, "no-evict": 3, "setinfo": 4, "kill": -3, "unblock": -3, "getredir": 2, "trackinginfo": 2, "tracking": -3, "caching": 3, "pause": -3, "unpause": 2, "reply": 3}

func clientCommand(c *conn, args [][]byte) {
	sub, msg := kvstore.CheckSubcommand(args, "client", clientArity)
	if msg != "" {
		c.Error(msg)
		return
	}
	switch sub {
	case "id":
		c.Int(c.id)
	case "getname":
		if c.name == "" {
			c.Null()
		} else {
			c.BulkString(c.name)
		}
	case "setname":
		if !validClientName(args[2]) {
			c.Error("ERR Client names cannot contain spaces, newlines or special characters.")
			return
		}
		c.name = string(args[2])
		c.Status("OK")
	case "info":
		c.Verbatim(c.describe("client|info"))
	case "list":
		clientList(c, args)
	case "kill":
		clientKill(c, args)
	case "unblock":
		clientUnblock(c, args)
	case "no-evict":
		if !bytes.EqualFold(args[2], []byte("on")) && !bytes.EqualFold(args[2], []byte("off")) {
			c.Error(kvstore.ErrSyntax)
			return
		}
		c.Status("OK") // nanokv evicts no client
	case "pause":
		clientPause(c, args)
	case "unpause":
		clientUnpause(c)
	case "reply":
		switch strings.ToLower(string(args[2])) {
		case "on":
			c.replyOff, c.skipping = false, false
			c.Status("OK")
		case "off":
			c.replyOff = true
		case "skip":
			c.skipNext = !c.replyOff
		default:
			c.Error(kvstore.ErrSyntax)
		}
	case "getredir":
		clientGetRedir(c)
	case "trackinginfo":
		clientTrackingInfo(c)
	case "tracking":
		clientTracking(c, args)
	case "caching":
		clientCaching(c, args)
	case "setinfo":
		c.Status("OK")
	case "help":
		lines := []string{
			"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"CACHING (YES|NO)", "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
			"GETREDIR", "    Return the client ID we are redirecting to when tracking is enabled.",
			"GETNAME", "    Return the name of the current connection.",
			"ID", "    Return the ID of the current connection.",
			"INFO", "    Return information about the current client connection.",
			"KILL <ip:port>", "    Kill connection made from <ip:port>.",
			"KILL <option> <value> [<option> <value> [...]]", "    Kill connections. Options are:",
			"    * ADDR (<ip:port>|<unixsocket>:0)", "      Kill connections made from the specified address",
			"    * LADDR (<ip:port>|<unixsocket>:0)", "      Kill connections made to specified local address",
			"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)", "      Kill connections by type.",
			"    * USER <username>", "      Kill connections authenticated by <username>.",
			"    * SKIPME (YES|NO)", "      Skip killing current connection (default: yes).",
			"LIST [options ...]", "    Return information about client connections. Options:",
			"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)", "      Return clients of specified type.",
			"UNPAUSE", "    Stop the current client pause, resuming traffic.",
			"PAUSE <timeout> [WRITE|ALL]", "    Suspend all, or just write, clients for <timeout> milliseconds.",
			"REPLY (ON|OFF|SKIP)", "    Control the replies sent to the current connection.",
			"SETNAME <name>", "    Assign the name <name> to the current connection.",
			"UNBLOCK <clientid> [TIMEOUT|ERROR]", "    Unblock the specified blocked client.",
			"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
			"         [OPTIN] [OPTOUT] [NOLOOP]", "    Control server assisted client side caching.",
			"TRACKINGINFO", "    Report tracking status for the current connection.",
			"NO-EVICT (ON|OFF)", "    Protect current client connection from eviction.",
			"HELP", "    Prints this help.",
		}
		c.statusLines(lines)
	}
}

// clients returns the connections, by id.
func (s *Server) clients() []*conn {
	s.mu.Lock()
	all := make([]*conn, 0, len(s.conns))
	for o := range s.conns {
		all = append(all, o)
	}
	s.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
	return all
}

// clientType is a connection's type for CLIENT LIST and KILL's TYPE: "pubsub" while it
// holds a subscription, else "normal" (nanokv's replicas are not clients).
func (c *conn) clientType() string {
	if c.shared.subs[kindChannel].Load()+c.shared.subs[kindPattern].Load()+c.shared.subs[kindShard].Load() > 0 {
		return "pubsub"
	}
	return "normal"
}

// parseClientType checks a TYPE argument; "" with the error replied.
func parseClientType(c *conn, b []byte) string {
	t := strings.ToLower(string(b))
	switch t {
	case "normal", "pubsub", "master", "replica":
		return t
	case "slave":
		return "replica"
	}
	c.Error("ERR Unknown client type '" + string(b) + "'")
	return ""
}

// clientList is CLIENT LIST [TYPE type] [ID id [id ...]].
func clientList(c *conn, args [][]byte) {
	typ, ids := "", map[int64]bool(nil)
	for i := 2; i < len(args); i++ {
		switch {
		case strings.EqualFold(string(args[i]), "type") && i+1 < len(args):
			if typ = parseClientType(c, args[i+1]); typ == "" {
				return
			}
			i++
		case strings.EqualFold(string(args[i]), "id") && i+1 < len(args):
			ids = map[int64]bool{}
			for i++; i < len(args); i++ {
				id, ok := kvstore.ParseInt(args[i])
				if !ok {
					c.Error("ERR Invalid client ID")
					return
				}
				ids[id] = true
			}
		default:
			c.Error(kvstore.ErrSyntax)
			return
		}
	}
	var b strings.Builder
	for _, o := range c.s.clients() {
		if typ != "" && o.clientType() != typ || ids != nil && !ids[o.id] {
			continue
		}
		if o == c {
			b.WriteString(c.describe("client|list"))
		} else {
			b.WriteString(o.describeOther())
		}
	}
	c.Verbatim(b.String())
}

// clientKill is CLIENT KILL ip:port (+OK, or no such client) and CLIENT KILL with
// filters (how many it killed). A connection that kills itself closes once the reply is
// out.
func clientKill(c *conn, args [][]byte) {
	if len(args) == 3 {
		for _, o := range c.s.clients() {
			if o.addr != string(args[2]) {
				continue
			}
			c.Status("OK")
			if o == c {
				c.closeNext = true
			} else {
				o.kill()
			}
			return
		}
		c.Error("ERR No such client")
		return
	}
	if len(args)%2 != 0 {
		c.Error(kvstore.ErrSyntax)
		return
	}
	var id int64
	var typ, addr, laddr string
	var user *aclRef
	skipMe := true
	for i := 2; i < len(args); i += 2 {
		opt, v := strings.ToLower(string(args[i])), args[i+1]
		switch opt {
		case "id":
			n, ok := kvstore.ParseInt(v)
			if !ok || n <= 0 {
				c.Error("ERR client-id should be greater than 0")
				return
			}
			id = n
		case "type":
			if typ = parseClientType(c, v); typ == "" {
				return
			}
		case "addr":
			addr = string(v)
		case "laddr":
			laddr = string(v)
		case "user":
			if user = c.s.acl.user(string(v)); user == nil {
				c.Error("ERR No such user '" + string(v) + "'")
				return
			}
		case "skipme":
			switch strings.ToLower(string(v)) {
			case "yes":
				skipMe = true
			case "no":
				skipMe = false
			default:
				c.Error(kvstore.ErrSyntax)
				return
			}
		default:
			c.Error(kvstore.ErrSyntax)
			return
		}
	}
	n := 0
	var self bool
	for _, o := range c.s.clients() {
		if id != 0 && o.id != id || typ != "" && o.clientType() != typ ||
			addr != "" && o.addr != addr || laddr != "" && o.laddr != laddr || skipMe && o == c ||
			user != nil && o.user.Load() != user {
			continue
		}
		n++
		if o == c {
			self = true
			continue
		}
		o.kill()
	}
	c.Int(int64(n))
	if self {
		c.closeNext = true
	}
}

// clientUnblock is CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 if the client was blocked.
func clientUnblock(c *conn, args [][]byte) {
	id, ok := kvstore.ParseInt(args[2])
	if !ok {
		c.Error(kvstore.ErrNotInteger)
		return
	}
	asError := false
	switch {
	case len(args) == 4 && strings.EqualFold(string(args[3]), "error"):
		asError = true
	case len(args) == 4 && strings.EqualFold(string(args[3]), "timeout"):
	case len(args) > 3:
		c.Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
		return
	}
	if o := c.s.clientByID(id); o != nil && o.shared.blocked.Load() {
		select {
		case o.shared.unblock <- asError:
			c.Int(1)
		default:
			c.Int(0) // already being unblocked
		}
		return
	}
	c.Int(0)
}

// describe is this connection's CLIENT LIST line (read by its own goroutine); cmd is the
// command being run, which is how Redis reports the current one.
func (c *conn) describe(cmd string) string {
	multi := -1
	switch {
	case c.inMulti:
		multi = len(c.queued)
	case c.execing > 0: // a command EXEC runs, which Redis shows as EXEC
		multi, cmd = c.execing, "exec"
	}
	now := time.Now()
	_, redir := c.trackFlags()
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=0 name=%s age=%d idle=%d flags=%s db=%d sub=%d psub=%d ssub=%d multi=%d qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=%d rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=%s user=%s redir=%d resp=%d\n",
		c.id, c.addr, c.laddr, c.name, int(now.Sub(c.created).Seconds()), int(now.Sub(c.lastCmd).Seconds()), c.flagString(), c.db,
		c.shared.subs[kindChannel].Load(), c.shared.subs[kindPattern].Load(), c.shared.subs[kindShard].Load(), multi, readBufSize, cmd, c.userName(), redir, c.Proto)
}

// describeOther reports another connection: the fields fixed at accept, and the rest
// as it published them after its last network read (publish).
func (c *conn) describeOther() string {
	flags := ""
	if c.shared.monitor.Load() {
		flags += "O"
	}
	if c.clientType() == "pubsub" {
		flags += "P"
	}
	if c.shared.blocked.Load() {
		flags += "b"
	}
	tf, redir := c.trackFlags()
	flags += tf
	if c.shared.replica.Load() {
		flags += "r"
	}
	if flags == "" {
		flags = "N"
	}
	sh := &c.shared
	name, cmd, proto := "", "NULL", sh.proto.Load()
	if p := sh.name.Load(); p != nil {
		name = *p
	}
	if p := sh.cmd.Load(); p != nil {
		cmd = *p
	}
	if proto == 0 {
		proto = 2 // not published yet: nothing read so far
	}
	now := time.Now()
	idle := now.Sub(c.created)
	if last := sh.lastCmd.Load(); last != 0 {
		idle = now.Sub(time.UnixMilli(last))
	}
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=0 name=%s age=%d idle=%d flags=%s db=%d sub=%d psub=%d ssub=%d multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=%d rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=%s user=%s redir=%d resp=%d\n",
		c.id, c.addr, c.laddr, name, int(now.Sub(c.created).Seconds()), int(idle.Seconds()), flags, sh.db.Load(),
		sh.subs[kindChannel].Load(), sh.subs[kindPattern].Load(), sh.subs[kindShard].Load(), readBufSize, cmd, c.userName(), redir, proto)
}

func (c *conn) flagString() string {
	flags := ""
	if c.monitoring {
		flags += "O"
	}
	if c.clientType() == "pubsub" {
		flags += "P"
	}
	if c.inMulti || c.execing > 0 {
		flags += "x"
	}
	tf, _ := c.trackFlags()
	flags += tf
	if c.readonly {
		flags += "r"
	}
	if flags == "" {
		flags = "N"
	}
	return flags
}

func multiCommand(c *conn, _ [][]byte) {
	if c.inMulti {
		c.Error("ERR MULTI calls can not be nested")
		return
	}
	c.inMulti, c.multiErr, c.queued, c.multiDB = true, false, nil, c.db
	c.Status("OK")
}

func discardCommand(c *conn, _ [][]byte) {
	if !c.inMulti {
		c.Error("ERR DISCARD without MULTI")
		return
	}
	c.inMulti, c.queued = false, nil
	c.watches = nil
	c.Status("OK")
}

func execCommand(c *conn, _ [][]byte) {
	if !c.inMulti {
		c.Error("ERR EXEC without MULTI")
		return
	}
	queued, watches, dirty := c.queued, c.watches, c.multiErr
	c.inMulti, c.queued, c.watches, c.multiErr = false, nil, nil, false
	n := len(queued)
	if dirty {
		c.Error("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	// Rules changed since the commands were queued are applied now, as Redis's EXEC
	// does: a denied command does not run and its place in the reply is an error.
	queued, denied, logged := c.recheckQueued(queued)
	// The store's commands are one entry of the log; the connection's and the server's
	// run here once it is applied, and their replies take their places in EXEC's.
	others := make(map[int][]byte, len(denied))
	for pos, msg := range denied {
		others[pos] = fmt.Appendf(nil, "-%s\r\n", msg)
	}
	var tx []kvstore.TxCommand
	var local []queuedConn
	pos := 0
	for _, q := range queued {
		for others[pos] != nil {
			pos++
		}
		if kvstore.Lookup(q.Args[0]) == nil {
			local = append(local, queuedConn{pos, q})
		} else {
			tx = append(tx, q)
		}
		pos++
	}
	c.trackTx(tx)
	start := len(c.B)
	scripts := slices.ContainsFunc(tx, func(q kvstore.TxCommand) bool {
		s := kvstore.Lookup(q.Args[0])
		return s != nil && runsScript(s)
	})
	var entry []byte
	if scripts {
		entry = c.overMemoryMark(entry)
	}
	if u := c.user.Load(); u != nil && !u.load().free && scripts {
		// its scripts' calls are checked against its user's rules on every member
		c.propose(kvstore.AppendTxAsUser(entry, u.load().scriptRules, watches, tx), 1, false)
	} else {
		c.propose(kvstore.AppendTx(entry, watches, tx), 1, false)
	}
	// A SELECT inside the transaction sticks after EXEC, unless the transaction did not
	// run: a watched key changed (null reply) or it never reached the log (error).
	reply := string(c.B[start:])
	if reply == "*-1\r\n" || reply == "_\r\n" || strings.HasPrefix(reply, "-") {
		return
	}
	for _, q := range local {
		others[q.pos] = c.runQueuedConn(q.cmd, n)
	}
	if len(others) > 0 {
		c.B = append(c.B[:start], spliceReplies(c.B[start:], others)...)
	}
	c.addLaterSubs()
	for _, d := range logged {
		c.s.acl.record(d.reason, "multi", d.object, c.userName(), c.describe("exec"))
	}
	c.db = c.multiDB
	for _, q := range queued { // they ran: monitors see them now, before EXEC
		c.feedMonitors(q.DB, q.Args)
	}
}

// queuedConn is a connection or server command of a transaction, and its place in it.
type queuedConn struct {
	pos int
	cmd kvstore.TxCommand
}

// runQueuedConn runs a connection or server command EXEC found queued, in the database
// it was queued for, and returns its reply; n is how many commands were queued. Like Redis inside EXEC (a client that must
// not block), it does not wait: WAIT answers at once, MONITOR refuses.
func (c *conn) runQueuedConn(q kvstore.TxCommand, n int) []byte {
	mark := len(c.B)
	c.db, c.execing = q.DB, n
	c.runConn(lookupConn(q.Args[0]), q.Args)
	c.execing = 0
	reply := bytes.Clone(c.B[mark:])
	c.B = c.B[:mark]
	return reply
}

func watchCommand(c *conn, args [][]byte) {
	if c.inMulti {
		c.Error("ERR WATCH inside MULTI is not allowed")
		return
	}
	if !c.readBarrier() {
		return
	}
	now := time.Now().UnixMilli()
	for _, k := range args[1:] {
		key := append([]byte(nil), k...)
		c.watches = append(c.watches, kvstore.Watch{DB: c.db, Key: key, Ver: c.s.b.Store().KeyVersion(c.db, key, now)})
	}
	c.Status("OK")
}

func unwatchCommand(c *conn, _ [][]byte) {
	c.watches = nil
	c.Status("OK")
}

func timeCommand(c *conn, _ [][]byte) {
	now := time.Now()
	c.Array(2)
	c.BulkString(strconv.FormatInt(now.Unix(), 10))
	c.BulkString(strconv.FormatInt(int64(now.Nanosecond()/1000), 10))
}

func roleCommand(c *conn, _ [][]byte) {
	c.Array(3)
	c.BulkString("master")
	c.Int(0)
	c.Array(0)
}

// --- INFO ---------------------------------------------------------------------------------

// defaultSections are INFO's without an argument, and allSections INFO ALL's, in Redis
// 7.0's order (and nanokv's raft section).
var (
	defaultSections = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules", "errorstats", "cluster", "keyspace"}
	allSections     = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules", "commandstats", "errorstats", "latencystats", "cluster", "keyspace", "raft"}
)

func infoCommand(c *conn, args [][]byte) {
	sections := defaultSections
	if len(args) > 1 {
		sections = nil
		for _, a := range args[1:] {
			s := strings.ToLower(string(a))
			switch s {
			case "default":
				sections = append(sections, defaultSections...)
			case "all", "everything":
				sections = append(sections, allSections...)
			default:
				sections = append(sections, s)
			}
		}
	}
	var b strings.Builder
	seen := map[string]bool{}
	for _, s := range sections {
		if seen[s] {
			continue
		}
		seen[s] = true
		before := b.Len()
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		if !c.s.infoSection(&b, s, c) && !c.s.b.Info(&b, s) {
			// unknown sections print nothing, as in Redis
			full := b.String()[:before]
			b.Reset()
			b.WriteString(full)
		}
	}
	c.Verbatim(b.String())
}

// shutdownCommand stops the node: the WAL is flushed and synced by the node's Close, so
// SAVE and NOSAVE mean the same here. As in Redis, success closes the connection without
// a reply.
func shutdownCommand(c *conn, args [][]byte) {
	save, force := false, false
	for _, a := range args[1:] {
		switch strings.ToLower(string(a)) {
		case "save":
			save = true
		case "force":
			force = true
		case "nosave", "now":
		case "abort":
			c.Error("ERR No shutdown in progress.")
			return
		default:
			c.Error(kvstore.ErrSyntax)
			return
		}
	}
	fn := c.s.config().Shutdown
	if fn == nil {
		c.Error("ERR Errors trying to SHUTDOWN. Check logs.")
		return
	}
	// SAVE snapshots first (the WAL keeps every acknowledged write either way; the
	// snapshot shortens the restart), and a failed one stops the shutdown, as in Redis,
	// unless FORCE.
	if sv, ok := c.s.b.(Saver); ok && save {
		if err := sv.Save(false); err != nil && !force {
			c.s.config().Logf("resp: SHUTDOWN SAVE: %v", err)
			c.Error("ERR Errors trying to SHUTDOWN. Check logs.")
			return
		}
	}
	c.closeNext = true
	go fn()
}

// memoryCommand answers MEMORY PURGE (collect garbage and return free memory to the OS,
// what jemalloc's purge does for Redis) and MEMORY USAGE's absence honestly.
func memoryCommand(c *conn, args [][]byte) {
	switch strings.ToLower(string(args[1])) {
	case "purge":
		if len(args) != 2 {
			c.Error(kvstore.WrongArgs("memory|purge"))
			return
		}
		debug.FreeOSMemory()
		c.Status("OK")
	case "usage":
		if len(args) < 3 {
			c.Error(kvstore.WrongArgs("memory|usage"))
			return
		}
		c.read(kvstore.MemoryUsageSpec, args)
	case "stats", "doctor", "malloc-stats":
		if len(args) != 2 {
			c.Error(kvstore.WrongArgs("memory|" + strings.ToLower(string(args[1]))))
			return
		}
		switch strings.ToLower(string(args[1])) {
		case "stats":
			memoryStats(c)
		case "doctor":
			memoryDoctor(c)
		default:
			c.BulkString("Stats not supported for the current allocator") // as Redis built without jemalloc
		}
	case "help":
		lines := []string{"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"DOCTOR", "    Return memory problems reports.",
			"MALLOC-STATS", "    Return internal statistics report from the memory allocator.",
			"PURGE", "    Attempt to purge dirty pages for reclamation by the allocator.",
			"STATS", "    Return information about the memory usage of the server.",
			"USAGE <key> [SAMPLES <count>]", "    Return memory in bytes used by <key> and its value. Nested values are",
			"    sampled up to <count> times (default: 5, 0 means sample all).",
			"HELP", "    Prints this help."}
		c.statusLines(lines)
	default:
		c.Error("ERR unknown subcommand '" + string(args[1]) + "'. Try MEMORY HELP.")
	}
}
