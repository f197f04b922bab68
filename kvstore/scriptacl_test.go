package kvstore

import (
	"errors"
	"strings"
	"testing"
)

// denyKeyPrefix is a CallACL that denies calls naming a key that starts with its prefix.
type denyKeyPrefix string

func (p denyKeyPrefix) Check(spec *Spec, args [][]byte) (string, string) {
	for _, k := range spec.Keys(nil, args) {
		if strings.HasPrefix(string(k), string(p)) {
			return "key", string(k)
		}
	}
	return "", ""
}

// denials is a reply writer that keeps the denials it is told of, as a connection's
// reply sink does.
type denials struct {
	tree
	got []string
}

func (d *denials) LogACLDenial(reason, object, cmd string) {
	d.got = append(d.got, reason+" "+object+" "+cmd)
}

// A script in an as-user entry has its calls checked against the rules the entry
// carries: a denied call fails (and what ran before it stays), the writer that keeps
// denials hears of it, and rules that cannot be read deny every call.
func TestAsUserEntryChecksScriptCalls(t *testing.T) {
	saved := ACLFromRules
	defer func() { ACLFromRules = saved }()
	ACLFromRules = func(rules []byte) (CallACL, error) {
		if string(rules) == "bad" {
			return nil, errors.New("unreadable")
		}
		return denyKeyPrefix(rules), nil
	}
	s := New()
	apply := func(index uint64, rules string, w ReplyWriter, args ...string) {
		t.Helper()
		bargs := make([][]byte, len(args))
		for i, a := range args {
			bargs[i] = []byte(a)
		}
		if err := s.Apply(Entry{Index: index, Term: 1, Time: 1e12, Data: AppendAsUser(nil, []byte(rules), 0, bargs)}, w); err != nil {
			t.Fatal(err)
		}
	}
	w := &denials{}
	apply(1, "secret", w, "EVAL", "redis.call('set','a','1') return redis.call('get','secret1')", "0")
	if len(w.out) != 1 || !strings.HasPrefix(string(w.out[0].(Err)), "ERR The user executing the script can't access at least one of the keys") {
		t.Fatalf("denied call: reply %#v", w.out)
	}
	if len(w.got) != 1 || w.got[0] != "key secret1 eval" {
		t.Fatalf("denials %q, want [key secret1 eval]", w.got)
	}
	h := &harness{t: t, s: s, now: 1e12}
	if got := h.do("GET", "a"); got != "1" {
		t.Fatalf("the call before the denied one: GET a = %#v", got)
	}
	// the applier of another member has no such writer: same effects, nothing logged
	apply(2, "secret", Discard, "EVAL", "return redis.call('set','b','2')", "0")
	if got := h.do("GET", "b"); got != "2" {
		t.Fatalf("an allowed call: GET b = %#v", got)
	}
	w = &denials{}
	apply(3, "bad", w, "EVAL", "return redis.call('set','c','3')", "0")
	if len(w.out) != 1 || !strings.HasPrefix(string(w.out[0].(Err)), "ERR The user executing the script can't run this command") {
		t.Fatalf("unreadable rules: reply %#v", w.out)
	}
	if got := h.do("EXISTS", "c"); !equalReplies(got, 0) {
		t.Fatalf("unreadable rules let a call run: EXISTS c = %#v", got)
	}
	// a transaction's scripts are checked too, its other commands not
	w = &denials{}
	tx := AppendTxAsUser(nil, []byte("secret"), nil, []TxCommand{
		{Args: [][]byte{[]byte("SET"), []byte("secret2"), []byte("x")}},
		{Args: [][]byte{[]byte("EVAL"), []byte("return redis.call('get','secret2')"), []byte("0")}},
	})
	if err := s.Apply(Entry{Index: 4, Term: 1, Time: 1e12, Data: tx}, w); err != nil {
		t.Fatal(err)
	}
	if len(w.out) != 1 || !equalReplies(w.out[0].([]any)[0], Status("OK")) || len(w.got) != 1 || w.got[0] != "key secret2 eval" {
		t.Fatalf("transaction: reply %#v, denials %q", w.out, w.got)
	}
}
