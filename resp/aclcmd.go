package resp

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nanokv/nanokv/kvstore"
)

// The ACL command and the connection's side of ACLs: checking each command, and the
// user it acts as.

// userName is the user the connection acts as, for CLIENT LIST and ACL WHOAMI: default
// before it authenticates, as Redis reports it.
func (c *conn) userName() string {
	if ref := c.user.Load(); ref != nil {
		return ref.load().name
	}
	return "default"
}

// aclContext is where a denied command came from, as the ACL log names it.
func (c *conn) aclContext() string {
	if c.inMulti {
		return "multi"
	}
	return "toplevel"
}

// permitted checks a command of u's (spec, or cs for a connection command) against u's
// permissions. A denied one is answered NOPERM, fails the transaction it was sent in,
// and goes to the ACL log. Commands that need no authentication (AUTH, HELLO) are not
// checked, as in Redis.
func (c *conn) permitted(u *aclUser, args [][]byte, spec *kvstore.Spec, cs *connSpec) bool {
	s := spec
	if cs != nil {
		if cs.noAuth {
			return true
		}
		s = &cs.Spec
	}
	if s == nil {
		return true
	}
	d := u.check(s, args)
	if d == nil {
		return true
	}
	if d.own != "" && c.inMulti && !isTxControl(args[0]) {
		return true // queued: the command refuses itself when EXEC runs it (recheckQueued)
	}
	c.flushBatch()
	if cs != nil {
		c.s.cmdStats(cs, args).Reject()
	} else {
		c.s.b.Store().CommandStats(spec, args).Reject()
	}
	if c.inMulti && !isTxControl(args[0]) {
		c.multiErr = true
	}
	if d.own == "" {
		name := strings.ToLower(string(args[0]))
		if n := cmdName(args, spec); n != nil {
			name = *n
		}
		c.s.acl.record(d.reason, c.aclContext(), d.object, u.name, c.describe(name))
	}
	if cs != nil && cs.Name == "exec" {
		c.abortExec(d.err(), args)
		return false
	}
	c.Error(d.err())
	return false
}

var aclArity = map[string]int{"cat": -2, "deluser": -3, "dryrun": -4, "getuser": 3, "genpass": -2, "list": 2,
	"load": 2, "log": -2, "save": 2, "setuser": -3, "users": 2, "whoami": 2, "help": 2}

// aclCategories are Redis 7.0's ACL categories, in its order.
var aclCategories = []string{"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
	"hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous", "connection",
	"transaction", "scripting"}

const errNoACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."

func aclCommand(c *conn, args [][]byte) {
	sub, msg := kvstore.CheckSubcommand(args, "acl", aclArity)
	if msg != "" {
		c.Error(msg)
		return
	}
	t := c.s.acl
	switch sub {
	case "whoami":
		c.BulkString(c.userName())
	case "users":
		names := t.names()
		c.Array(len(names))
		for _, n := range names {
			c.BulkString(n)
		}
	case "list":
		names := t.names()
		var lines []string
		for _, n := range names {
			if ref := t.user(n); ref != nil {
				lines = append(lines, ref.load().listLine())
			}
		}
		c.Array(len(lines))
		for _, l := range lines {
			c.BulkString(l)
		}
	case "getuser":
		ref := t.user(string(args[2]))
		if ref == nil {
			c.Null()
			return
		}
		u := ref.load()
		c.Map(6)
		c.BulkString("flags")
		flags := u.flags()
		c.Array(len(flags))
		for _, f := range flags {
			c.BulkString(f)
		}
		c.BulkString("passwords")
		c.Array(len(u.passwords))
		for _, p := range u.passwords {
			c.BulkString(p)
		}
		writeSelector := func(sel *aclSelector) {
			for _, kv := range [][2]string{{"commands", sel.describeCommands()}, {"keys", sel.describeKeys()}, {"channels", sel.describeChannels()}} {
				c.BulkString(kv[0])
				c.BulkString(kv[1])
			}
		}
		writeSelector(&u.aclSelector)
		c.BulkString("selectors")
		c.Array(len(u.selectors))
		for _, sel := range u.selectors {
			c.Map(3)
			writeSelector(sel)
		}
	case "setuser":
		rules := make([]string, 0, len(args)-3)
		for _, a := range args[3:] {
			rules = append(rules, string(a))
		}
		if msg := t.setUser(string(args[2]), rules); msg != "" {
			c.Error(msg)
			return
		}
		if ref := t.user(string(args[2])); ref != nil {
			c.killRevokedSubscribers(ref)
		}
		c.Status("OK")
	case "deluser":
		var names []string
		for _, u := range args[2:] {
			if string(u) == "default" {
				c.Error("ERR The 'default' user cannot be removed")
				return
			}
			names = append(names, string(u))
		}
		deleted := t.deleteUsers(names)
		c.closeConnsOf(deleted) // Redis closes the connections of a deleted user
		c.Int(int64(len(deleted)))
	case "dryrun":
		ref := t.user(string(args[2]))
		if ref == nil {
			c.Error("ERR User '" + string(args[2]) + "' not found")
			return
		}
		spec := findSpec(args[3])
		switch {
		case spec == nil:
			c.Error("ERR Command '" + string(args[3]) + "' not found")
		case !spec.CheckArity(args[3:]):
			c.Error(kvstore.WrongArgs(spec.Name))
		default:
			if d := ref.load().check(spec, args[3:]); d != nil && d.own == "" {
				c.BulkString(d.dryRun())
				return
			}
			c.Status("OK")
		}
	case "cat":
		aclCat(c, args)
	case "genpass":
		aclGenpass(c, args)
	case "log":
		aclLog(c, args)
	case "load", "save":
		path := c.s.aclFile
		if path == "" {
			c.Error(errNoACLFile)
			return
		}
		if sub == "save" {
			if err := t.saveFile(path); err != nil {
				c.s.aclLogf("resp: ACL SAVE %s: %v", path, err)
				c.Error("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
				return
			}
			c.Status("OK")
			return
		}
		gone, err := t.loadFile(path)
		if err != nil {
			c.Error("ERR " + err.Error())
			return
		}
		c.closeConnsOf(gone) // the users replaced: as Redis closes their connections
		c.Status("OK")
	case "help":
		c.statusLines(aclHelp)
	}
}

func aclCat(c *conn, args [][]byte) {
	if len(args) > 3 {
		c.Error(kvstore.WrongArgs("acl|cat"))
		return
	}
	if len(args) == 2 {
		c.Array(len(aclCategories))
		for _, cat := range aclCategories {
			c.BulkString(cat)
		}
		return
	}
	cat := strings.ToLower(string(args[2]))
	if !slices.Contains(aclCategories, cat) {
		c.Error("ERR Unknown category '" + string(args[2]) + "'")
		return
	}
	var names []string
	eachCommandName(func(name string, s *kvstore.Spec) {
		if slices.Contains(commandCategories(name, s), "@"+cat) {
			names = append(names, name)
		}
	})
	c.Array(len(names))
	for _, n := range names {
		c.BulkString(n)
	}
}

func aclGenpass(c *conn, args [][]byte) {
	bits := int64(256)
	if len(args) == 3 {
		n, ok := kvstore.ParseInt(args[2])
		if !ok {
			c.Error(kvstore.ErrNotInteger)
			return
		}
		if n <= 0 || n > 4096 {
			c.Error("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
			return
		}
		bits = n
	} else if len(args) > 3 {
		c.Error(kvstore.WrongArgs("acl|genpass"))
		return
	}
	b := make([]byte, (bits+7)/8)
	rand.Read(b)
	c.BulkString(hex.EncodeToString(b)[:(bits+3)/4])
}

// aclLog is ACL LOG [count | RESET]: the newest denials first, ten by default.
func aclLog(c *conn, args [][]byte) {
	n := int64(10)
	switch {
	case len(args) > 3:
		c.Error(kvstore.WrongArgs("acl|log"))
		return
	case len(args) == 3 && strings.EqualFold(string(args[2]), "reset"):
		c.s.acl.resetLog()
		c.Status("OK")
		return
	case len(args) == 3:
		v, ok := kvstore.ParseInt(args[2])
		if !ok {
			c.Error(kvstore.ErrNotInteger)
			return
		}
		n = max(v, 0)
	}
	entries := c.s.acl.entries(int(min(n, math.MaxInt)))
	now := time.Now()
	c.Array(len(entries))
	for _, e := range entries {
		c.Map(7)
		c.BulkString("count")
		c.Int(int64(e.count))
		for _, kv := range [][2]string{{"reason", e.reason}, {"context", e.context}, {"object", e.object}, {"username", e.username}} {
			c.BulkString(kv[0])
			c.BulkString(kv[1])
		}
		c.BulkString("age-seconds")
		c.Double(float64(now.Sub(e.updated).Milliseconds()) / 1000)
		c.BulkString("client-info")
		c.BulkString(strings.TrimSuffix(e.clientInfo, "\n"))
	}
}

// closeConnsOf closes the connections that act as one of users, c's own once its reply
// is written.
func (c *conn) closeConnsOf(users []*aclRef) {
	for _, o := range c.s.clients() {
		if slices.Contains(users, o.user.Load()) {
			if o == c {
				c.closeNext = true
			} else {
				o.kill()
			}
		}
	}
}

// killRevokedSubscribers closes the connections of user ref subscribed to a channel or
// pattern that its rules, just changed, allow in none of their selectors, as Redis's
// ACLKillPubsubClientsIfNeeded does after ACL SETUSER: a subscription outlives the
// permission it was checked against otherwise.
func (c *conn) killRevokedSubscribers(ref *aclRef) {
	u := ref.load()
	sels := append([]*aclSelector{&u.aclSelector}, u.selectors...)
	if slices.ContainsFunc(sels, func(s *aclSelector) bool { return s.allChannels }) {
		return
	}
	victims := c.s.ps.subscribedAgainst(func(o *conn) bool { return o.user.Load() == ref }, func(name string, pattern bool) bool {
		return slices.ContainsFunc(sels, func(s *aclSelector) bool { return s.mayChannel(name, pattern) })
	})
	for _, o := range victims {
		if o == c {
			c.closeNext = true
		} else {
			o.kill()
		}
	}
}

// recheckQueued checks a transaction's queued commands again at EXEC against the
// connection's user, whose rules may have changed since they were queued (Redis's
// execCommand does the same). It returns the commands that may run, the replies of
// those that may not by their place in the transaction (nil when all may), and the
// denials for the ACL log, which take place only if the transaction runs (Redis
// checks a watched key first).
func (c *conn) recheckQueued(queued []kvstore.TxCommand) ([]kvstore.TxCommand, map[int]string, []aclDenial) {
	ref := c.user.Load()
	if ref == nil || ref.load().free {
		return queued, nil, nil
	}
	u := ref.load()
	var denied map[int]string
	var logged []aclDenial
	var kept []kvstore.TxCommand
	for i, q := range queued {
		s := findSpec(q.Args[0])
		d := (*aclDenial)(nil)
		if s != nil {
			d = u.check(s, q.Args)
		}
		if d == nil {
			if denied != nil {
				kept = append(kept, q)
			}
			continue
		}
		if denied == nil {
			denied = map[int]string{}
			kept = append(kept, queued[:i]...)
		}
		if d.own != "" {
			denied[i] = d.own // what the command would answer itself (SORT's BY and GET)
			continue
		}
		logged = append(logged, *d)
		why := map[string]string{"command": "no permission to execute the command or subcommand",
			"key": "no permission to touch the specified keys", "channel": "no permission to access one of the channels used as arguments"}[d.reason]
		denied[i] = "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. " +
			"This command is no longer allowed for the following reason: " + why
	}
	if denied == nil {
		return queued, nil, nil
	}
	return kept, denied, logged
}

// spliceReplies puts the replies of a transaction's commands that EXEC answered itself
// among those of the commands the store ran: reply is the store's (an array of those
// replies), others the rest, encoded, by their place. A reply that is not an array of
// as many replies as ran (a null array when a watched key changed, an error) is
// returned as it is.
func spliceReplies(reply []byte, others map[int][]byte) []byte {
	n, i, ok := replyCount(reply, 0, '*')
	if !ok {
		return reply
	}
	total := n + len(others)
	out := append([]byte("*"), strconv.Itoa(total)...)
	out = append(out, "\r\n"...)
	for pos := 0; pos < total; pos++ {
		if r, own := others[pos]; own {
			out = append(out, r...)
			continue
		}
		end, ok := replyEnd(reply, i)
		if !ok {
			return reply
		}
		out = append(out, reply[i:end]...)
		i = end
	}
	if i != len(reply) {
		return reply
	}
	return out
}

// replyCount reads the count of an aggregate reply of type typ at b[i:]: the count and
// where its elements begin. A null (-1) is not one.
func replyCount(b []byte, i int, typ byte) (n, next int, ok bool) {
	if i >= len(b) || b[i] != typ {
		return 0, 0, false
	}
	end := bytes.Index(b[i:], []byte("\r\n"))
	if end < 0 {
		return 0, 0, false
	}
	v, err := strconv.Atoi(string(b[i+1 : i+end]))
	if err != nil || v < 0 {
		return 0, 0, false
	}
	return v, i + end + 2, true
}

// replyEnd is where the RESP2 or RESP3 reply at b[i:] ends.
func replyEnd(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	end := bytes.Index(b[i:], []byte("\r\n"))
	if end < 0 {
		return 0, false
	}
	line, next := b[i+1:i+end], i+end+2
	switch b[i] {
	case '+', '-', ':', '_', ',', '#', '(':
		return next, true
	case '$', '=', '!':
		n, err := strconv.Atoi(string(line))
		if err != nil || n < -1 {
			return 0, false
		}
		if n == -1 {
			return next, true
		}
		if next+n+2 > len(b) {
			return 0, false
		}
		return next + n + 2, true
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(string(line))
		if err != nil || n < -1 {
			return 0, false
		}
		if b[i] == '%' || b[i] == '|' {
			n *= 2
		}
		for ; n > 0; n-- {
			var ok bool
			if next, ok = replyEnd(b, next); !ok {
				return 0, false
			}
		}
		if b[i] == '|' {
			return replyEnd(b, next) // an attribute comes before the reply it describes
		}
		return next, true
	}
	return 0, false
}
