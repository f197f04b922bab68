package kvstore

import (
	"encoding/binary"
	"strings"
	"sync"
)

// A script checks each of its calls against the ACL of the user who ran it, as Redis
// does. A script runs on the applier of every member, so the rules it is checked against
// travel in its log entry: every member decides each call alike, and the script's
// effects stay the same everywhere.
//
//	asUser   := rules:bytes command
//	txAsUser := rules:bytes tx (apply.go)
const (
	opAsUser   byte = 7
	opTxAsUser byte = 8
)

// CallACL is what a script's calls are checked against. Check returns why a call may not
// run ("command", "key" or "channel", and the command, key or channel denied; or "error"
// and the error the command would refuse itself with), or "".
type CallACL interface {
	Check(spec *Spec, args [][]byte) (reason, object string)
}

// ACLFromRules builds the CallACL of a user from the rules an entry carries (AppendAsUser).
// The frontend that keeps users (package resp) sets it at init.
var ACLFromRules func(rules []byte) (CallACL, error)

// ACLLogger is a reply writer that keeps the denials of a script's calls for its
// member's ACL log: the client's connection, on the member it is connected to.
type ACLLogger interface {
	LogACLDenial(reason, object, cmd string)
}

// AppendAsUser appends a command (a script) whose calls are checked against rules, a
// user's as ACLFromRules reads them.
func AppendAsUser(dst []byte, rules []byte, db int, args [][]byte) []byte {
	dst = append(dst, opAsUser)
	dst = binary.AppendUvarint(dst, uint64(len(rules)))
	dst = append(dst, rules...)
	return appendArgs(dst, db, args)
}

// AppendTxAsUser appends a transaction whose scripts' calls are checked against rules.
func AppendTxAsUser(dst []byte, rules []byte, watches []Watch, cmds []TxCommand) []byte {
	dst = append(dst, opTxAsUser)
	dst = binary.AppendUvarint(dst, uint64(len(rules)))
	dst = append(dst, rules...)
	return appendTxBody(dst, watches, cmds)
}

func (s *Store) applyAsUser(c *Ctx, d *decoder) {
	rules := d.bytes()
	db, args := d.command()
	if d.err != nil {
		return
	}
	s.asUser(c, rules)
	c.DB = db
	c.run(args, true)
	c.acl, c.aclLog = nil, nil
}

func (s *Store) applyTxAsUser(c *Ctx, d *decoder) {
	rules := d.bytes()
	if d.err != nil {
		return
	}
	s.asUser(c, rules)
	s.applyTx(c, d)
	c.acl, c.aclLog = nil, nil
}

// asUser sets c up to check scripts' calls against rules.
func (s *Store) asUser(c *Ctx, rules []byte) {
	acl, err := s.scriptACLs.get(rules)
	if err != nil {
		// the proposing member read these rules; one that cannot denies every call
		acl = denyAll{}
	}
	c.acl = acl
	if l, ok := c.W.(ACLLogger); ok {
		c.aclLog = l
	}
}

// ReadSpecAs is ReadSpec for a read-only script (EVAL_RO, FCALL_RO) of a user whose calls
// are checked against acl (nil: none); log, if not nil, keeps the denials.
func (s *Store) ReadSpecAs(spec *Spec, db int, now int64, args [][]byte, w ReplyWriter, acl CallACL, log ACLLogger) {
	// Reads may choose at random (SRANDMEMBER, RANDOMKEY): nothing replicated depends on
	// their choice, so any seed that differs between reads will do.
	c := ctxPool.Get().(*Ctx)
	*c = Ctx{s: s, DB: db, Now: now, W: w, rnd: rng{state: uint64(now) ^ readSeq.Add(1)<<32}, acl: acl, aclLog: log}
	c.runSpec(spec, args, false)
	*c = Ctx{}
	ctxPool.Put(c)
}

// checkScriptCall is a script's call checked against its user's ACL: Redis's error for
// a denied one, or "".
func (c *Ctx) checkScriptCall(spec *Spec, args [][]byte) string {
	if c.acl == nil {
		return ""
	}
	reason, object := c.acl.Check(spec, args)
	switch reason {
	case "":
		return ""
	case "error":
		return object // the command's own refusal, as it would give it running
	}
	if c.aclLog != nil {
		c.aclLog.LogACLDenial(reason, object, c.scriptCmd)
	}
	switch reason {
	case "key":
		return "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments"
	case "channel":
		return "ERR The user executing the script can't publish to the channel mentioned in the command"
	}
	return "ERR The user executing the script can't run this command or subcommand"
}

// noteScriptCmd notes the command that runs a script of a user whose calls are checked,
// for the ACL log's client description.
func (c *Ctx) noteScriptCmd(args [][]byte) {
	if c.acl != nil {
		c.scriptCmd = strings.ToLower(string(args[0]))
	}
}

type denyAll struct{}

func (denyAll) Check(spec *Spec, _ [][]byte) (string, string) { return "command", spec.Name }

// aclCache holds the CallACLs of the rules recent entries carried: a user's scripts
// carry the same rules until the user changes.
type aclCache struct {
	mu sync.Mutex
	m  map[string]CallACL
}

func (a *aclCache) get(rules []byte) (CallACL, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if acl, ok := a.m[string(rules)]; ok {
		return acl, nil
	}
	if ACLFromRules == nil {
		return denyAll{}, nil
	}
	acl, err := ACLFromRules(rules)
	if err != nil {
		return nil, err
	}
	if a.m == nil || len(a.m) >= 256 {
		a.m = map[string]CallACL{}
	}
	a.m[string(rules)] = acl
	return acl, nil
}
