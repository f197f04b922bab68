package resp

import (
	"strconv"
	"strings"

	"github.com/nanokv/nanokv/kvstore"
)

// SLOWLOG GET [count] | LEN | RESET | HELP over the store's slow log (kvstore/slowlog.go),
// with Redis 7.0's replies and errors.

func init() {
	connCommands["slowlog"] = &connSpec{Spec: kvstore.Spec{Name: "slowlog", Arity: -2, Flags: kvstore.FlagConn, Group: "server", Since: "2.2.12",
		Summary: "A container for slow log commands"}, run: slowlogCommand}
}

// slowSpec is the spec a connection command is timed under for the slow log: nil for
// EXEC, which Redis leaves out (its commands are timed one by one).
func (cs *connSpec) slowSpec() *kvstore.Spec {
	if cs.Name == "exec" {
		return nil
	}
	return &cs.Spec
}

func slowlogCommand(c *conn, args [][]byte) {
	st := c.s.b.Store()
	sub := strings.ToLower(string(args[1]))
	switch {
	case sub == "get" && len(args) <= 3:
		n := 10
		if len(args) == 3 {
			v, err := strconv.ParseInt(string(args[2]), 10, 64)
			if err != nil || v < -1 {
				c.Error("ERR count should be greater than or equal to -1")
				return
			}
			n = int(min(v, 1<<30))
		}
		entries := st.SlowlogGet(n)
		c.Array(len(entries))
		for _, e := range entries {
			c.Array(6)
			c.Int(int64(e.ID))
			c.Int(e.Time)
			c.Int(e.Micros)
			c.Array(len(e.Args))
			for _, a := range e.Args {
				c.BulkString(a)
			}
			c.BulkString(e.Addr)
			c.BulkString(e.Name)
		}
	case sub == "get":
		c.Error("ERR unknown subcommand or wrong number of arguments for '" + string(args[1]) + "'. Try SLOWLOG HELP.")
	case sub == "len" || sub == "reset" || sub == "help":
		if len(args) != 2 {
			c.Error(kvstore.WrongArgs("slowlog|" + sub))
			return
		}
		switch sub {
		case "len":
			c.Int(int64(st.SlowlogLen()))
		case "reset":
			st.SlowlogReset()
			c.Status("OK")
		default:
			lines := []string{
				"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
				"GET [<count>]",
				"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
				"    Entries are made of:",
				"    id, timestamp, time in microseconds, arguments array, client IP and port,",
				"    client name",
				"LEN",
				"    Return the length of the slowlog.",
				"RESET",
				"    Reset the slowlog.",
				"HELP",
				"    Prints this help.",
			}
			c.statusLines(lines)
		}
	default:
		c.Error("ERR unknown subcommand '" + string(args[1]) + "'. Try SLOWLOG HELP.")
	}
}
