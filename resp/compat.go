package resp

import (
	"maps"
	"slices"
	"strings"

	"github.com/nanokv/nanokv/kvstore"
)

// Commands clients and tools send on connecting, answered as a Redis 7.0 server with its
// defaults answers them: RedisInsight asks MODULE LIST, cluster-aware clients CLUSTER
// INFO or READONLY, health checks ACL WHOAMI. nanokv has no cluster slots (but with
// RedisRaft's sharding, Sharder), no modules and no DEBUG; ACL is acl.go's.

func init() {
	add := func(name string, arity int, group, since, summary string, run func(*conn, [][]byte)) {
		connCommands[name] = &connSpec{Spec: kvstore.Spec{Name: name, Arity: arity, Group: group, Since: since, Summary: summary, Flags: kvstore.FlagConn}, run: run}
	}
	noCluster := func(c *conn, _ [][]byte) { c.Error(errNoCluster) }
	add("cluster", -2, "cluster", "3.0.0", "A container for Redis Cluster commands", func(c *conn, args [][]byte) {
		if c.s.sharding() {
			c.s.sharder.ClusterCommand(args, &c.Writer)
			return
		}
		noCluster(c, args)
	})
	add("readonly", 1, "cluster", "3.0.0", "Enables read queries for a connection to a Redis Cluster replica node", readonlyCommand(true))
	add("readwrite", 1, "cluster", "3.0.0", "Disables read queries for a connection to a Redis Cluster replica node", readonlyCommand(false))
	add("asking", 1, "cluster", "3.0.0", "Sent by cluster clients after an -ASK redirect", askingCommand)
	add("module", -2, "server", "4.0.0", "A container for module commands", moduleCommand)
	add("debug", -2, "server", "1.0.0", "A container for debugging commands", func(c *conn, _ [][]byte) {
		c.Error(notAllowed("DEBUG", "enable-debug-command"))
	})
	add("acl", -2, "server", "6.0.0", "A container for Access List Control commands", aclCommand)
	add("latency", -2, "server", "2.8.13", "A container for latency diagnostics commands", latencyCommand)
	connSubcommands["latency"] = slices.Collect(maps.Keys(latencyArity))
	connSubcommands["module"] = slices.Collect(maps.Keys(moduleArity))
	connSubcommands["acl"] = slices.Collect(maps.Keys(aclArity))
}

// errNoCluster is a Redis without cluster support's refusal of the cluster commands.
const errNoCluster = "ERR This instance has cluster support disabled"

// protectedRefusal is Redis 7.0's refusal of a protected command (DEBUG; MODULE LOAD,
// LOADEX and UNLOAD) under the default settings, or "". Redis refuses it before the
// command runs or is queued in a transaction, after the arity check.
func protectedRefusal(args [][]byte) string {
	switch strings.ToLower(string(args[0])) {
	case "debug":
		return notAllowed("DEBUG", "enable-debug-command")
	case "module":
		if len(args) > 1 {
			switch strings.ToLower(string(args[1])) {
			case "load", "loadex", "unload":
				return notAllowed("MODULE", "enable-module-command")
			}
		}
	}
	return ""
}

// notAllowed is Redis 7.0's refusal of DEBUG and MODULE LOAD under their default
// settings ("no").
func notAllowed(cmd, option string) string {
	return "ERR " + cmd + " command not allowed. If the " + option + " option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."
}

var moduleArity = map[string]int{"list": 2, "load": -3, "loadex": -3, "unload": 3, "help": 2}

func moduleCommand(c *conn, args [][]byte) {
	sub, msg := kvstore.CheckSubcommand(args, "module", moduleArity)
	switch {
	case msg != "":
		c.Error(msg)
	case sub == "list":
		c.Array(0)
	case sub == "help":
		c.statusLines([]string{"MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"LIST", "    Return a list of loaded modules.",
			"LOAD <path> [<arg> ...]", "    Load a module library from <path>, passing to it any optional arguments.",
			"LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
			"    Load a module library from <path>, while passing it module configurations and optional arguments.",
			"UNLOAD <name>", "    Unload a module.",
			"HELP", "    Prints this help."})
	default:
		c.Error(notAllowed("MODULE", "enable-module-command"))
	}
}

var aclHelp = []string{
	"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CAT [<category>]",
	"    List all commands that belong to <category>, or all command categories",
	"    when no category is specified.",
	"DELUSER <username> [<username> ...]",
	"    Delete a list of users.",
	"DRYRUN <username> <command> [<arg> ...]",
	"    Returns whether the user can execute the given command without executing the command.",
	"GETUSER <username>",
	"    Get the user's details.",
	"GENPASS [<bits>]",
	"    Generate a secure 256-bit user password. The optional `bits` argument can",
	"    be used to specify a different size.",
	"LIST",
	"    Show users details in config file format.",
	"LOAD",
	"    Reload users from the ACL file.",
	"LOG [<count> | RESET]",
	"    Show the ACL log entries.",
	"SAVE",
	"    Save the current config to the ACL file.",
	"SETUSER <username> <attribute> [<attribute> ...]",
	"    Create or modify a user with the specified attributes.",
	"USERS",
	"    List all the registered usernames.",
	"WHOAMI",
	"    Return the current connection username.",
	"HELP",
	"    Prints this help.",
}

var latencyArity = map[string]int{"doctor": 2, "graph": 3, "history": 3, "latest": 2, "reset": -2, "histogram": -2, "help": 2}

// latencyCommand is LATENCY, over the store's latency monitor (kvstore/latency.go) and
// the commands' latency histograms (latencystats.go). GRAPH draws nothing (it answers
// Redis's error for an event without samples, and refuses to draw one with samples).
func latencyCommand(c *conn, args [][]byte) {
	sub, msg := kvstore.CheckSubcommand(args, "latency", latencyArity)
	if msg != "" {
		c.Error(msg)
		return
	}
	st := c.s.b.Store()
	switch sub {
	case "latest":
		events := st.LatencyLatest()
		c.Array(len(events))
		for _, e := range events {
			c.Array(4)
			c.BulkString(e.Name)
			c.Int(e.Time)
			c.Int(e.Latest)
			c.Int(e.Max)
		}
	case "history":
		h := st.LatencyHistory(string(args[2]))
		c.Array(len(h))
		for _, s := range h {
			c.Array(2)
			c.Int(s[0])
			c.Int(s[1])
		}
	case "reset":
		var events []string
		for _, a := range args[2:] {
			events = append(events, string(a))
		}
		c.Int(int64(st.LatencyReset(events...)))
	case "doctor":
		c.Verbatim(st.LatencyDoctor())
	case "graph":
		if len(st.LatencyHistory(string(args[2]))) == 0 {
			c.Error("ERR No samples available for event '" + string(args[2]) + "'")
			return
		}
		c.Error("ERR LATENCY GRAPH is not supported by nanokv: use LATENCY HISTORY")
	case "histogram":
		latencyHistogram(c, args)
	case "help":
		c.statusLines([]string{"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"DOCTOR", "    Return a human readable latency analysis report.",
			"GRAPH <event>", "    Return an ASCII latency graph for the <event> class.",
			"HISTORY <event>", "    Return time-latency samples for the <event> class.",
			"LATEST", "    Return the latest latency samples for all events.",
			"RESET [<event> ...]", "    Reset latency data of one or more <event> classes.",
			"    (default: reset all data for all event classes)",
			"HISTOGRAM [COMMAND ...]",
			"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
			"    If no commands are specified then all histograms are replied.",
			"HELP", "    Prints this help."})
	}
}
