package resp

import (
	"encoding/binary"
	"errors"
	"strings"

	"github.com/nanokv/nanokv/kvstore"
)

// A restricted user's scripts run on every member's applier, checked there call by call
// against the user's rules as its log entry carries them (kvstore.AppendAsUser): every
// member decides each call alike, so the script has the same effects everywhere, and
// the member the client is connected to logs the denials.

func init() { kvstore.ACLFromRules = aclFromRules }

// encodeScriptRules are the rules of u that decide what its scripts' calls may do: its
// keys, channels and commands (Redis's best-fit description of them), and each other
// selector's as one "(...)" rule, as a list of length-prefixed rules (a key pattern may
// hold any byte).
func encodeScriptRules(u *aclUser) []byte {
	var rules []string
	if u.allKeys {
		rules = append(rules, "allkeys")
	}
	for _, p := range u.keys {
		rules = append(rules, p.rule())
	}
	if u.allChannels {
		rules = append(rules, "allchannels")
	} else {
		rules = append(rules, "resetchannels")
		for _, ch := range u.channels {
			rules = append(rules, "&"+ch)
		}
	}
	rules = append(rules, strings.Fields(u.describeCommands())...)
	for _, sel := range u.selectors {
		rules = append(rules, "("+sel.describe()+")")
	}
	b := binary.AppendUvarint(nil, uint64(len(rules)))
	for _, r := range rules {
		b = binary.AppendUvarint(b, uint64(len(r)))
		b = append(b, r...)
	}
	return b
}

var errBadRules = errors.New("resp: malformed script rules")

// aclFromRules reads encodeScriptRules back into a user to check calls against.
func aclFromRules(b []byte) (kvstore.CallACL, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errBadRules
	}
	b = b[k:]
	u := newACLUser("", false) // the rules name the channels: no default applies
	for ; n > 0; n-- {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, errBadRules
		}
		rule := string(b[k : k+int(l)])
		b = b[k+int(l):]
		if why := u.apply(rule, false); why != "" {
			return nil, errors.New("resp: script rule " + rule + ": " + why)
		}
	}
	return scriptACL{u}, nil
}

// scriptACL checks a script's calls as the connection checks its user's commands.
type scriptACL struct{ u *aclUser }

func (a scriptACL) Check(spec *kvstore.Spec, args [][]byte) (reason, object string) {
	d := a.u.check(spec, args)
	switch {
	case d == nil:
		return "", ""
	case d.own != "":
		return "error", d.own // SORT's own refusal of BY and GET
	}
	return d.reason, d.object
}

// connACLLog logs the denials of a read-only script's calls, which run on the
// connection's goroutine.
type connACLLog struct{ c *conn }

func (l connACLLog) LogACLDenial(reason, object, cmd string) {
	l.c.s.acl.record(reason, "lua", object, l.c.userName(), l.c.describe(cmd))
}

// LogACLDenial keeps a denial of a script's call the applier made for the batch; the
// connection logs it once the batch is applied (conn.finish).
func (s *replySink) LogACLDenial(reason, object, cmd string) {
	s.denials = append(s.denials, [3]string{reason, object, cmd})
}

// runsScript: the command runs a script or a function, whose calls a restricted user's
// rules must check.
func runsScript(s *kvstore.Spec) bool {
	switch s.Name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		return true
	}
	return false
}
