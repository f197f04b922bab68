package resp

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nanokv/nanokv/kvstore"
)

// Users and their permissions (ACL), as Redis 7.0 keeps them: each member its own, not
// replicated (Redis replicates no ACL either), starting with the one user "default",
// whose password is requirepass. A connection acts as the user it authenticated as, and
// every command it sends is checked against that user's commands, keys and channels
// before it runs or is queued, and again at EXEC; a denied one is answered NOPERM and
// written to the ACL log. A script's calls are checked on the applier (scriptacl.go).
// Not done: a restricted user's scripts wrapped in IDEMPOTENT.

// aclUser is one user's rules, never changed once published: ACL SETUSER builds a new
// one and swaps it into the user's aclRef, so a connection sees the change at its next
// command.
type aclUser struct {
	name      string
	on        bool
	nopass    bool
	sanitize  string   // "sanitize-payload", "skip-sanitize-payload" or ""
	passwords []string // SHA-256 in hex, in the order they were added

	// the root selector: the rules given outside parentheses
	aclSelector
	// selectors are the others, Redis 7.0's "(...)" rules, in the order given: a call
	// is allowed when one selector, the root or another, allows all of it
	selectors []*aclSelector

	// free: every command, key and channel; the connection then checks nothing
	free bool
	// scriptRules are the rules its scripts' log entries carry (scriptacl.go)
	scriptRules []byte
}

// aclSelector is a set of permissions: commands, key patterns and channels.
type aclSelector struct {
	// allCmds: +@all was the last of +@all and -@all, which also allows the commands a
	// later version adds (Redis's "future commands" bit; -get leaves it set)
	allCmds bool
	cmds    map[string]bool // allowed commands by full name ("get", "client|id", "select|0")

	allKeys bool
	keys    []aclKeyPattern

	allChannels bool
	channels    []string
}

// aclKeyPattern is a key pattern with the access it grants: ~p both, %R~p reads, %W~p
// writes.
type aclKeyPattern struct {
	pattern     string
	read, write bool
}

// aclRef is a user as connections hold it: the rules in force, and whether the user was
// deleted (its connections are closed then).
type aclRef struct {
	u       atomic.Pointer[aclUser]
	deleted atomic.Bool
}

func (r *aclRef) load() *aclUser { return r.u.Load() }

// aclTable is a member's users and ACL log.
type aclTable struct {
	mu    sync.Mutex
	users map[string]*aclRef
	log   []aclLogEntry // the newest last
	// logMax is acllog-max-len: record drops the oldest entries past it.
	logMax int
	// allChannels is acl-pubsub-default: whether the users and selectors rules create
	// start with every channel.
	allChannels bool
}

// newACLTable starts with the default user, allowed everything, with password pass
// ("" for none).
func newACLTable(pass string) *aclTable {
	t := &aclTable{users: map[string]*aclRef{}, logMax: aclLogMaxLen}
	u := defaultUser()
	setDefaultPassword(u, pass)
	ref := &aclRef{}
	ref.u.Store(u)
	t.users["default"] = ref
	return t
}

func setDefaultPassword(u *aclUser, pass string) {
	u.nopass, u.passwords = pass == "", nil
	if pass != "" {
		u.passwords = []string{hashPassword(pass)}
	}
}

// setRequirePass is CONFIG SET requirepass: the default user's only password, or none.
func (t *aclTable) setRequirePass(pass string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ref := t.users["default"]
	u := ref.load().clone()
	setDefaultPassword(u, pass)
	ref.u.Store(u)
}

func (t *aclTable) user(name string) *aclRef {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.users[name]
}

func hashPassword(pass string) string {
	sum := sha256.Sum256([]byte(pass))
	return hex.EncodeToString(sum[:])
}

// authenticate returns the user name authenticates as with pass, or nil: a user that
// does not exist, is off, or has no such password.
func (t *aclTable) authenticate(name, pass string) *aclRef {
	ref := t.user(name)
	if ref == nil {
		return nil
	}
	u := ref.load()
	if !u.on {
		return nil
	}
	if u.nopass {
		return ref
	}
	h := hashPassword(pass)
	for _, p := range u.passwords {
		if subtle.ConstantTimeCompare([]byte(p), []byte(h)) == 1 {
			return ref
		}
	}
	return nil
}

func (u *aclUser) clone() *aclUser {
	n := *u
	n.passwords = slices.Clone(u.passwords)
	n.aclSelector = *u.aclSelector.clone()
	n.selectors = make([]*aclSelector, len(u.selectors))
	for i, sel := range u.selectors {
		n.selectors[i] = sel.clone()
	}
	return &n
}

func (sel *aclSelector) clone() *aclSelector {
	n := *sel
	n.cmds = maps.Clone(sel.cmds)
	n.keys = slices.Clone(sel.keys)
	n.channels = slices.Clone(sel.channels)
	return &n
}

// --- the commands rules apply to -----------------------------------------------------

// aclCommandSet is every command name rules can name: the commands, and after each
// container the full names of its subcommands.
type aclCommandSet struct {
	names []string            // in order
	subs  map[string][]string // container -> its subcommands' full names
	cats  map[string][]string // name -> its categories ("@read")
	top   []string            // the commands (no subcommands), in order
}

var aclCommands = sync.OnceValue(func() *aclCommandSet {
	set := &aclCommandSet{subs: map[string][]string{}, cats: map[string][]string{}}
	eachCommandName(func(name string, s *kvstore.Spec) {
		set.names = append(set.names, name)
		set.cats[name] = commandCategories(name, s)
		if container, _, ok := strings.Cut(name, "|"); ok {
			set.subs[container] = append(set.subs[container], name)
		} else {
			set.top = append(set.top, name)
		}
	})
	return set
})

func (set *aclCommandSet) known(name string) bool {
	_, ok := set.cats[name]
	return ok
}

func (set *aclCommandSet) inCategory(name, cat string) bool {
	return slices.Contains(set.cats[name], "@"+cat)
}

// --- ACL SETUSER ---------------------------------------------------------------------

const (
	errACLSyntax      = "Syntax error"
	errACLUnknownName = "Unknown command or category name in ACL"
	errACLNoSuchPass  = "The password you are trying to remove from the user does not exist"
	errACLHash        = "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
	errACLAllKeys     = "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
	errACLAllChannels = "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
)

// newACLUser is a user ACL SETUSER creates: off, no password, no commands or keys, and
// every channel if allChannels (acl-pubsub-default allchannels) else none (Redis 7.0's
// default, resetchannels).
func newACLUser(name string, allChannels bool) *aclUser {
	return &aclUser{name: name, aclSelector: *newACLSelector(allChannels)}
}

// newACLSelector is a selector as "(" starts one: no commands or keys, and every
// channel if allChannels (acl-pubsub-default) else none.
func newACLSelector(allChannels bool) *aclSelector {
	return &aclSelector{cmds: map[string]bool{}, allChannels: allChannels}
}

// mergeSelectors joins the arguments of a selector that spaces split ("(+get", "~a*)")
// into one rule, as Redis's ACLMergeSelectorArguments does; an error names the
// argument of a selector that does not close.
func mergeSelectors(ops []string) ([]string, string) {
	var out []string
	open := -1
	var sel string
	for i, op := range ops {
		if open < 0 && strings.HasPrefix(op, "(") && !strings.HasSuffix(op, ")") {
			open, sel = i, op
			continue
		}
		if open >= 0 {
			sel += " " + op
			if strings.HasSuffix(op, ")") {
				out, open = append(out, sel), -1
			}
			continue
		}
		out = append(out, op)
	}
	if open >= 0 {
		return nil, "ERR Unmatched parenthesis in acl selector starting at '" + ops[open] + "'."
	}
	return out, ""
}

// apply applies one rule to u, or returns why it cannot (Redis's reason). A rule that
// is not the user's own applies to its root selector. allChannels is
// acl-pubsub-default's (newACLSelector), for the selectors reset and "(" start.
func (u *aclUser) apply(op string, allChannels bool) string {
	lower := strings.ToLower(op)
	switch {
	case lower == "on":
		u.on = true
	case lower == "off":
		u.on = false
	case lower == "nopass":
		u.nopass, u.passwords = true, nil
	case lower == "resetpass":
		u.nopass, u.passwords = false, nil
	case lower == "sanitize-payload" || lower == "skip-sanitize-payload":
		u.sanitize = lower
	case lower == "reset":
		*u = *newACLUser(u.name, allChannels)
		u.sanitize = "sanitize-payload"
	case lower == "clearselectors":
		u.selectors = nil
	case len(op) >= 2 && op[0] == '(' && op[len(op)-1] == ')':
		sel := newACLSelector(allChannels)
		for _, r := range strings.Fields(op[1 : len(op)-1]) {
			if why := sel.apply(r); why != "" {
				return why
			}
		}
		u.selectors = append(u.selectors, sel)
	case op[0] == '>':
		u.addPassword(hashPassword(op[1:]))
	case op[0] == '#':
		if !validHash(op[1:]) {
			return errACLHash
		}
		u.addPassword(op[1:])
	case op[0] == '<' || op[0] == '!':
		h := op[1:]
		if op[0] == '<' {
			h = hashPassword(h)
		} else if !validHash(h) {
			return errACLHash
		}
		i := slices.Index(u.passwords, h)
		if i < 0 {
			return errACLNoSuchPass
		}
		u.passwords = slices.Delete(u.passwords, i, i+1)
	default:
		return u.aclSelector.apply(op)
	}
	return ""
}

// apply applies one of the rules a selector takes (commands, keys, channels) to sel, or
// returns why it cannot.
func (sel *aclSelector) apply(op string) string {
	set := aclCommands()
	lower := strings.ToLower(op)
	switch {
	case lower == "allkeys" || op == "~*":
		sel.allKeys, sel.keys = true, nil
	case lower == "resetkeys":
		sel.allKeys, sel.keys = false, nil
	case lower == "allchannels" || op == "&*":
		sel.allChannels, sel.channels = true, nil
	case lower == "resetchannels":
		sel.allChannels, sel.channels = false, nil
	case lower == "allcommands":
		return sel.apply("+@all")
	case lower == "nocommands":
		return sel.apply("-@all")
	case op[0] == '~' || op[0] == '%':
		return sel.addKeyPattern(op)
	case op[0] == '&':
		if sel.allChannels {
			return errACLAllChannels
		}
		if !slices.Contains(sel.channels, op[1:]) {
			sel.channels = append(sel.channels, op[1:])
		}
	case (op[0] == '+' || op[0] == '-') && len(op) > 1 && op[1] == '@':
		allow := op[0] == '+'
		cat := lower[2:]
		if cat == "all" {
			sel.allCmds = allow
			clear(sel.cmds)
			if allow {
				for _, name := range set.names {
					sel.cmds[name] = true
				}
			}
			return ""
		}
		if !slices.Contains(aclCategories, cat) {
			return errACLUnknownName
		}
		for _, name := range set.names {
			if set.inCategory(name, cat) {
				sel.setCommand(name, allow)
			}
		}
	case op[0] == '+' || op[0] == '-':
		allow := op[0] == '+'
		name := lower[1:]
		container, sub, isSub := strings.Cut(name, "|")
		switch {
		case !isSub && set.known(name):
			sel.setCommand(name, allow)
			for _, s := range set.subs[name] {
				sel.setCommand(s, allow)
			}
		case isSub && set.known(name):
			sel.setCommand(name, allow)
		case isSub && allow && sub != "" && set.known(container) && len(set.subs[container]) == 0:
			sel.cmds[name] = true // a first argument (+select|0): Redis allows these too
		default:
			return errACLUnknownName
		}
	default:
		return errACLSyntax
	}
	return ""
}

func (sel *aclSelector) setCommand(name string, allow bool) {
	if allow {
		sel.cmds[name] = true
		return
	}
	delete(sel.cmds, name)
	// first-argument allowances go with the command they qualify
	for k := range sel.cmds {
		if strings.HasPrefix(k, name+"|") {
			delete(sel.cmds, k)
		}
	}
}

func (u *aclUser) addPassword(h string) {
	u.nopass = false
	if !slices.Contains(u.passwords, h) {
		u.passwords = append(u.passwords, h)
	}
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// addKeyPattern adds ~pattern, %R~pattern, %W~pattern or %RW~pattern.
func (sel *aclSelector) addKeyPattern(op string) string {
	read, write := true, true
	pat := op[1:]
	if op[0] == '%' {
		perm, rest, ok := strings.Cut(op[1:], "~")
		if !ok || perm == "" {
			return errACLSyntax
		}
		read, write = false, false
		for _, p := range strings.ToUpper(perm) {
			switch p {
			case 'R':
				read = true
			case 'W':
				write = true
			default:
				return errACLSyntax
			}
		}
		pat = rest
	}
	if sel.allKeys {
		return errACLAllKeys
	}
	if pat == "*" && read && write {
		sel.allKeys, sel.keys = true, nil
		return ""
	}
	for i := range sel.keys {
		if sel.keys[i].pattern == pat {
			sel.keys[i].read = sel.keys[i].read || read
			sel.keys[i].write = sel.keys[i].write || write
			return ""
		}
	}
	sel.keys = append(sel.keys, aclKeyPattern{pattern: pat, read: read, write: write})
	return ""
}

// setUser applies rules to the user name (created if it does not exist) all at once:
// on an error nothing changes, and the error names the rule.
func (t *aclTable) setUser(name string, rules []string) string {
	if strings.ContainsAny(name, " \x00") {
		return "ERR Usernames can't contain spaces or null characters"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ref := t.users[name]
	var u *aclUser
	if ref != nil {
		u = ref.load().clone()
	} else {
		u = newACLUser(name, t.allChannels)
	}
	rules, msg := mergeSelectors(rules)
	if msg != "" {
		return msg
	}
	for _, op := range rules {
		if op == "" {
			continue // an empty rule changes nothing, as in Redis
		}
		if why := u.apply(op, t.allChannels); why != "" {
			return "ERR Error in ACL SETUSER modifier '" + op + "': " + why
		}
	}
	u.finish()
	if ref == nil {
		ref = &aclRef{}
		t.users[name] = ref
	}
	ref.u.Store(u)
	return ""
}

// deleteUsers removes the users names and returns how many there were; their
// connections are closed by the caller.
func (t *aclTable) deleteUsers(names []string) (deleted []*aclRef) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, n := range names {
		if ref := t.users[n]; ref != nil {
			delete(t.users, n)
			ref.deleted.Store(true)
			deleted = append(deleted, ref)
		}
	}
	return deleted
}

func (t *aclTable) names() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for n := range t.users {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// --- describing a user ----------------------------------------------------------------

// describeCommands is a selector's command rules as Redis 7.0 writes them: +@all or -@all,
// then the categories that best fit what the user may run, then the commands that
// still differ. Redis lists those last ones in its hash table's order; nanokv in
// order of name.
func (sel *aclSelector) describeCommands() string {
	set := aclCommands()
	additive := !sel.allCmds
	var rules []string
	fake := map[string]bool{} // what the rules so far allow
	if additive {
		rules = append(rules, "-@all")
	} else {
		rules = append(rules, "+@all")
		for _, n := range set.names {
			fake[n] = true
		}
	}
	// temp: the user's commands, with each category applied taken back out of it
	temp := map[string]bool{}
	for _, n := range set.names {
		temp[n] = sel.cmds[n]
	}
	applied := map[string]bool{}
	for {
		best, mindiff, maxsame := "", int(^uint(0)>>1), 0
		for _, cat := range aclCategories {
			if applied[cat] {
				continue
			}
			on, off := 0, 0
			for _, n := range set.top {
				if set.inCategory(n, cat) {
					if temp[n] {
						on++
					} else {
						off++
					}
				}
			}
			diff, same := off, on
			if !additive {
				diff, same = on, off
			}
			if same > diff && (diff < mindiff || diff == mindiff && same > maxsame) {
				best, mindiff, maxsame = cat, diff, same
			}
		}
		if best == "" {
			break
		}
		applied[best] = true
		sign := "+@"
		if !additive {
			sign = "-@"
		}
		rules = append(rules, sign+best)
		for _, n := range set.names {
			if set.inCategory(n, best) {
				fake[n] = additive
				temp[n] = !additive
			}
		}
	}
	for _, n := range set.top {
		if sel.cmds[n] != fake[n] {
			rules = append(rules, ruleSign(sel.cmds[n])+n)
			fake[n] = sel.cmds[n]
			for _, s := range set.subs[n] {
				fake[s] = sel.cmds[n]
			}
		}
		for _, s := range set.subs[n] {
			if sel.cmds[s] != fake[s] {
				rules = append(rules, ruleSign(sel.cmds[s])+s)
			}
		}
	}
	// first-argument allowances (+select|0) are not commands of their own
	var firstArgs []string
	for k, v := range sel.cmds {
		if v && !set.known(k) {
			firstArgs = append(firstArgs, "+"+k)
		}
	}
	sort.Strings(firstArgs)
	return strings.Join(append(rules, firstArgs...), " ")
}

// ruleSign is the sign of a rule that allows (+) or denies (-).
func ruleSign(allow bool) string {
	if allow {
		return "+"
	}
	return "-"
}

func (u *aclUser) flags() []string {
	f := []string{"off"}
	if u.on {
		f[0] = "on"
	}
	if u.nopass {
		f = append(f, "nopass")
	}
	if u.sanitize != "" {
		f = append(f, u.sanitize)
	}
	return f
}

func (sel *aclSelector) describeKeys() string {
	if sel.allKeys {
		return "~*"
	}
	var out []string
	for _, k := range sel.keys {
		out = append(out, k.rule())
	}
	return strings.Join(out, " ")
}

// rule is the pattern as a rule gives it: ~p, %R~p or %W~p.
func (k aclKeyPattern) rule() string {
	switch {
	case k.read && k.write:
		return "~" + k.pattern
	case k.read:
		return "%R~" + k.pattern
	}
	return "%W~" + k.pattern
}

func (sel *aclSelector) describeChannels() string {
	if sel.allChannels {
		return "&*"
	}
	var out []string
	for _, c := range sel.channels {
		out = append(out, "&"+c)
	}
	return strings.Join(out, " ")
}

// listLine is the user's line in ACL LIST: its own rules, its root selector's, and each
// other selector's in parentheses.
func (u *aclUser) listLine() string {
	parts := append([]string{"user", u.name}, u.flags()...)
	for _, p := range u.passwords {
		parts = append(parts, "#"+p)
	}
	parts = append(parts, u.describe())
	for _, sel := range u.selectors {
		parts = append(parts, "("+sel.describe()+")")
	}
	return strings.Join(parts, " ")
}

// describe is the selector's rules as Redis writes them: keys, channels, commands.
func (sel *aclSelector) describe() string {
	var parts []string
	if k := sel.describeKeys(); k != "" {
		parts = append(parts, k)
	}
	if !sel.allChannels {
		parts = append(parts, "resetchannels")
	}
	if ch := sel.describeChannels(); ch != "" {
		parts = append(parts, ch)
	}
	return strings.Join(append(parts, sel.describeCommands()), " ")
}

// --- checking a command ---------------------------------------------------------------

// aclDenial is why a user may not run a command: what Redis's ACL log calls the reason,
// and its object (the command, key or channel). A command that refuses itself for want
// of permissions (SORT's BY and GET) has its own error instead, which is not logged.
type aclDenial struct {
	reason, object string
	pos            int // the argument the object is (0: the command)
	own            string
}

func (d aclDenial) err() string {
	if d.own != "" {
		return d.own
	}
	switch d.reason {
	case "key":
		return "NOPERM this user has no permissions to access one of the keys used as arguments"
	case "channel":
		return "NOPERM this user has no permissions to access one of the channels used as arguments"
	}
	return "NOPERM this user has no permissions to run the '" + d.object + "' command"
}

// dryRun is ACL DRYRUN's wording of the denial.
func (d aclDenial) dryRun() string {
	switch d.reason {
	case "key":
		return "This user has no permissions to access the '" + d.object + "' key"
	case "channel":
		return "This user has no permissions to access the '" + d.object + "' channel"
	}
	return "This user has no permissions to run the '" + d.object + "' command"
}

// channelCommands are the commands whose arguments from the second on are channels
// (publishers name one), and whether they are patterns, which must equal an allowed
// pattern.
var channelCommands = map[string]struct{ publish, pattern bool }{
	"publish": {publish: true}, "spublish": {publish: true},
	"subscribe": {}, "ssubscribe": {}, "psubscribe": {pattern: true},
}

// check returns why u may not run args, whose command is s, or nil. A command that is
// unknown or has a wrong argument count passes: it is refused as usual.
//
// The call is allowed when a selector (the root, then the others in order) allows all of
// it. Otherwise the denial is the one Redis's ACLCheckAllUserCommandPerm picks: a
// channel before a key before the command, and of two alike the later argument.
func (u *aclUser) check(s *kvstore.Spec, args [][]byte) *aclDenial {
	if u.free || !s.CheckArity(args) {
		return nil
	}
	set := aclCommands()
	name := s.Name
	if subs := set.subs[name]; len(subs) > 0 && len(args) > 1 {
		name += "|" + strings.ToLower(string(args[1]))
		if !set.known(name) {
			return nil // an unknown subcommand: the command says so
		}
	}
	var worst *aclDenial
	allowed := false
	for i := range 1 + len(u.selectors) {
		d := u.selector(i).check(name, s, args)
		if d == nil {
			allowed = true
			break
		}
		if worst == nil || d.rank() > worst.rank() || d.rank() == worst.rank() && d.pos > worst.pos {
			worst = d
		}
	}
	if !allowed {
		return worst
	}
	if s.Name != "sort" && s.Name != "sort_ro" {
		return nil
	}
	if opt := sortPatternOption(args); opt != "" {
		// SORT refuses these itself, once the ACL let it run, unless a selector that
		// allows the call may read every key (Redis's
		// ACLUserCheckCmdWithUnrestrictedKeyAccess)
		for i := range 1 + len(u.selectors) {
			if sel := u.selector(i); sel.mayReadAllKeys() && sel.check(name, s, args) == nil {
				return nil
			}
		}
		return &aclDenial{own: "ERR " + opt + " option of SORT denied due to insufficient ACL permissions."}
	}
	return nil
}

// selector is u's selector i: the root first, then the others in order.
func (u *aclUser) selector(i int) *aclSelector {
	if i == 0 {
		return &u.aclSelector
	}
	return u.selectors[i-1]
}

// rank orders denials as Redis's ACL_DENIED_* codes do: the highest is reported.
func (d *aclDenial) rank() int {
	switch d.reason {
	case "key":
		return 2
	case "channel":
		return 4
	}
	return 1
}

// check returns why sel does not allow args (whose command is s, named name with its
// subcommand), or nil.
func (sel *aclSelector) check(name string, s *kvstore.Spec, args [][]byte) *aclDenial {
	if !sel.cmds[name] && !(len(args) > 1 && sel.cmds[name+"|"+strings.ToLower(string(args[1]))]) {
		return &aclDenial{reason: "command", object: name}
	}
	if inner := wrapped(s.Name, args); inner != nil {
		// a command that runs another: that one is checked as if sent itself
		if spec := kvstore.Lookup(inner[0]); spec != nil {
			if runsScript(spec) {
				// its entry carries no rules for the script's calls (scriptacl.go)
				return &aclDenial{reason: "command", object: spec.Name}
			}
			innerName := spec.Name
			if len(aclCommands().subs[innerName]) > 0 && len(inner) > 1 {
				innerName += "|" + strings.ToLower(string(inner[1]))
			}
			// one that is unknown or has a wrong argument count is refused as usual
			if spec.CheckArity(inner) && aclCommands().known(innerName) {
				if d := sel.check(innerName, spec, inner); d != nil {
					d.pos += len(args) - len(inner)
					return d
				}
			}
		}
	}
	if !sel.allKeys && hasKeys(name, s) {
		// each key needs what the command does with it, as Redis finds it: read
		// access to read it, write access to insert, update or delete
		for _, r := range callKeys(name, s, args) {
			if !sel.mayKey(r.key, r.flags.read(), r.flags.write()) {
				return &aclDenial{reason: "key", object: string(r.key), pos: r.pos}
			}
		}
	}
	if cc, ok := channelCommands[s.Name]; ok && !sel.allChannels && len(args) > 1 {
		chans := args[1:]
		if cc.publish {
			chans = args[1:2]
		}
		for i, ch := range chans {
			if !sel.mayChannel(string(ch), cc.pattern) {
				return &aclDenial{reason: "channel", object: string(ch), pos: 1 + i}
			}
		}
	}
	return nil
}

// wrapped is the command a command runs, when it runs one as given: IDEMPOTENT's write,
// RAFT.DEBUG EXEC's read.
func wrapped(name string, args [][]byte) [][]byte {
	switch {
	case name == "idempotent" && len(args) > 3:
		return args[3:]
	case name == "raft.debug" && len(args) > 2 && strings.EqualFold(string(args[1]), "exec"):
		return args[2:]
	}
	return nil
}

// sortPatternOption is the first of SORT's options that reads keys no key position
// names, which Redis refuses a user without access to every key: "BY" with a pattern,
// or "GET". "" when there is none.
func sortPatternOption(args [][]byte) string {
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		switch a := strings.ToLower(string(args[j])); {
		case a == "limit" && left >= 2:
			j += 2
		case a == "store" && left >= 1:
			j++
		case a == "by" && left >= 1:
			if strings.Contains(string(args[j+1]), "*") {
				return "BY"
			}
			j++
		case a == "get" && left >= 1:
			return "GET"
		}
	}
	return ""
}

// mayReadAllKeys: the user may read every key (allkeys, or a read pattern of "*").
func (sel *aclSelector) mayReadAllKeys() bool {
	return sel.allKeys || slices.ContainsFunc(sel.keys, func(p aclKeyPattern) bool { return p.pattern == "*" && p.read })
}

// mayKey reports whether a pattern gives the access a call needs to key: read access to
// read it, write access to write it, neither to look at it (EXISTS, OBJECT ENCODING), as
// callKeys finds them.
func (sel *aclSelector) mayKey(key []byte, read, write bool) bool {
	for _, p := range sel.keys {
		if (!read || p.read) && (!write || p.write) && kvstore.Glob([]byte(p.pattern), key) {
			return true
		}
	}
	return false
}

func (sel *aclSelector) mayChannel(ch string, pattern bool) bool {
	for _, p := range sel.channels {
		if pattern && p == ch || !pattern && kvstore.Glob([]byte(p), []byte(ch)) {
			return true
		}
	}
	return false
}

// --- the ACL log ------------------------------------------------------------------------

// aclLogEntry is a denial, as ACL LOG shows it; denials alike within a minute are one
// entry with a count.
type aclLogEntry struct {
	count                             int
	reason, context, object, username string
	created, updated                  time.Time
	clientInfo                        string
}

const (
	aclLogMaxLen   = 128 // acllog-max-len's default
	aclLogGrouping = 60 * time.Second
)

func (t *aclTable) record(reason, context, object, username, clientInfo string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	for i := len(t.log) - 1; i >= 0; i-- {
		e := &t.log[i]
		if e.reason == reason && e.context == context && e.object == object && e.username == username && now.Sub(e.updated) < aclLogGrouping {
			e.count++
			e.updated, e.clientInfo = now, clientInfo
			// the updated entry is the newest
			moved := *e
			t.log = append(slices.Delete(t.log, i, i+1), moved)
			return
		}
	}
	t.log = append(t.log, aclLogEntry{count: 1, reason: reason, context: context, object: object, username: username, created: now, updated: now, clientInfo: clientInfo})
	if over := len(t.log) - t.logMax; over > 0 {
		t.log = slices.Delete(t.log, 0, over)
	}
}

// entries returns up to n entries, the newest first.
func (t *aclTable) entries(n int) []aclLogEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	n = min(n, len(t.log))
	out := make([]aclLogEntry, n)
	for i := range out {
		out[i] = t.log[len(t.log)-1-i]
	}
	return out
}

// setLogMaxLen sets acllog-max-len. As in Redis, a log longer than n is trimmed at the
// next entry.
func (t *aclTable) setLogMaxLen(n int) {
	t.mu.Lock()
	t.logMax = n
	t.mu.Unlock()
}

// setPubsubDefault sets acl-pubsub-default: allChannels for allchannels. It applies to
// the users and selectors created from then on.
func (t *aclTable) setPubsubDefault(allChannels bool) {
	t.mu.Lock()
	t.allChannels = allChannels
	t.mu.Unlock()
}

func (t *aclTable) resetLog() {
	t.mu.Lock()
	t.log = nil
	t.mu.Unlock()
}
