package kvstore

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// zkh applies ZooKeeper transactions one per entry, with a clock the test moves, and
// records the results and watch events.
type zkh struct {
	t      *testing.T
	s      *Store
	index  uint64
	now    int64
	events [][]ZKEvent
}

type zkResults []*ZKResult

func (r *zkResults) ZKResult(x *ZKResult) { *r = append(*r, x) }

var _ ZKResultWriter = (*zkResults)(nil)

// zkResults is a ReplyWriter only to reach Apply; ZK txns write nothing else to it.
func (r *zkResults) Status(string)     {}
func (r *zkResults) Error(string)      {}
func (r *zkResults) Int(int64)         {}
func (r *zkResults) Bulk([]byte)       {}
func (r *zkResults) BulkString(string) {}
func (r *zkResults) Null()             {}
func (r *zkResults) NullArray()        {}
func (r *zkResults) Array(int)         {}
func (r *zkResults) Map(int)           {}
func (r *zkResults) Set(int)           {}
func (r *zkResults) Double(float64)    {}
func (r *zkResults) Resp3() bool       { return false }

const zkT0 = 1_700_000_000_000

func newZK(t *testing.T) *zkh {
	h := &zkh{t: t, s: New(), now: zkT0}
	h.s.SetZKWatcher(func(evs []ZKEvent) { h.events = append(h.events, slices.Clone(evs)) })
	return h
}

func (h *zkh) apply(txn *ZKTxn) *ZKResult {
	h.t.Helper()
	h.index++
	var rs zkResults
	if err := h.s.Apply(Entry{Index: h.index, Term: 1, Time: h.now, Data: AppendZK(nil, txn)}, &rs); err != nil {
		h.t.Fatalf("apply %+v: %v", txn, err)
	}
	if len(rs) != 1 {
		h.t.Fatalf("%d results for one txn", len(rs))
	}
	return rs[0]
}

func (h *zkh) session(timeout int32) int64 {
	h.t.Helper()
	return h.apply(&ZKTxn{Kind: ZKTxnCreateSession, Timeout: timeout}).Session.ID
}

func (h *zkh) op(session int64, auth []ZKID, op ZKOp) ZKOpResult {
	h.t.Helper()
	r := h.apply(&ZKTxn{Kind: ZKTxnOp, Session: session, Auth: auth, Ops: []ZKOp{op}})
	if r.Err != r.Ops[0].Err {
		h.t.Fatalf("header error %d, op error %d", r.Err, r.Ops[0].Err)
	}
	return r.Ops[0]
}

func create(path string, data string, mode int32) ZKOp {
	return ZKOp{Type: ZKOpCreate2, Path: path, Data: []byte(data), ACL: ZKOpenACL, Mode: mode}
}

func (h *zkh) mustCreate(sess int64, path string, mode int32) string {
	h.t.Helper()
	r := h.op(sess, nil, create(path, "", mode))
	if r.Err != ZOK {
		h.t.Fatalf("create %s: error %d", path, r.Err)
	}
	return r.Path
}

func (h *zkh) expectErr(sess int64, auth []ZKID, op ZKOp, want int32) {
	h.t.Helper()
	if r := h.op(sess, auth, op); r.Err != want {
		h.t.Fatalf("%+v: error %d, want %d", op, r.Err, want)
	}
}

func (h *zkh) stat(path string) ZKStat {
	h.t.Helper()
	n, ok := h.s.ZKGet(path)
	if !ok {
		h.t.Fatalf("%s missing", path)
	}
	return n.Stat
}

func (h *zkh) lastEvents() []ZKEvent {
	if len(h.events) == 0 {
		return nil
	}
	return h.events[len(h.events)-1]
}

// Observed on a fresh ZooKeeper 3.8.0: every Stat field 0 but the cversions (-1 for the
// root with its one child, -2 for /zookeeper with two) and /zookeeper/config's aversion
// (-1); the config node is world-readable only.
func TestZKFreshTree(t *testing.T) {
	h := newZK(t)
	want := map[string]ZKStat{
		"/":                 {Cversion: -1, NumChildren: 1},
		"/zookeeper":        {Cversion: -2, NumChildren: 2},
		"/zookeeper/config": {Aversion: -1},
		"/zookeeper/quota":  {},
	}
	for p, st := range want {
		if got := h.stat(p); got != st {
			t.Errorf("%s: stat %+v, want %+v", p, got, st)
		}
	}
	if n, _ := h.s.ZKGet("/zookeeper/config"); !reflect.DeepEqual(n.ACL, []ZKACL{{Perms: ZKPermRead, Scheme: "world", ID: "anyone"}}) {
		t.Errorf("config ACL %+v", n.ACL)
	}
	names, _, _ := h.s.ZKChildren("/zookeeper")
	if !reflect.DeepEqual(names, []string{"config", "quota"}) {
		t.Errorf("children of /zookeeper: %q", names)
	}
	if nodes, eph, _ := h.s.ZKCounts(); nodes != 4 || eph != 0 {
		t.Errorf("counts %d %d", nodes, eph)
	}
	if h.s.ZKLastZxid() != 0 {
		t.Error("zxid not 0")
	}
}

// As observed: the sequence number is the parent's count of creates, which deletes do not
// move: /a/x0000000000, /a/y, delete /a/y, then /a/x0000000002; the parent's cversion
// counts creates and deletes (4). Under the fresh root the first is 0000000000.
func TestZKSequentialNumbering(t *testing.T) {
	h := newZK(t)
	s := h.session(10000)
	if p := h.mustCreate(s, "/s-", ZKPersistentSequential); p != "/s-0000000000" {
		t.Fatalf("first sequential under the root: %s", p)
	}
	if st := h.stat("/"); st.Cversion != 0 || st.NumChildren != 2 {
		t.Fatalf("root after a create: %+v", st)
	}
	h.mustCreate(s, "/a", ZKPersistent)
	if p := h.mustCreate(s, "/a/x", ZKPersistentSequential); p != "/a/x0000000000" {
		t.Fatal(p)
	}
	h.mustCreate(s, "/a/y", ZKPersistent)
	h.op(s, nil, ZKOp{Type: ZKOpDelete, Path: "/a/y", Version: -1})
	if p := h.mustCreate(s, "/a/x", ZKEphemeralSequential); p != "/a/x0000000002" {
		t.Fatal(p)
	}
	if st := h.stat("/a"); st.Cversion != 4 || st.NumChildren != 2 {
		t.Fatalf("/a: %+v", st)
	}
	// "/a/" sequential names a child of /a
	if p := h.mustCreate(s, "/a/", ZKPersistentSequential); p != "/a/0000000003" {
		t.Fatal(p)
	}
}

func TestZKCreateStat(t *testing.T) {
	h := newZK(t)
	s := h.session(10000)
	h.now += 5
	r := h.op(s, nil, create("/n", "data", ZKPersistent))
	zx := h.s.ZKLastZxid()
	want := ZKStat{Czxid: zx, Mzxid: zx, Pzxid: zx, Ctime: h.now, Mtime: h.now, DataLength: 4}
	if r.Err != ZOK || r.Path != "/n" || r.Stat != want || r.Type != ZKOpCreate2 {
		t.Fatalf("create: %+v, want stat %+v", r, want)
	}
	if st := h.stat("/"); st.Pzxid != zx || st.Cversion != 0 || st.NumChildren != 2 {
		t.Fatalf("root: %+v", st)
	}
	r = h.op(s, nil, create("/e", "", ZKEphemeral))
	if r.Stat.EphemeralOwner != s {
		t.Fatalf("ephemeral owner %#x, want %#x", r.Stat.EphemeralOwner, s)
	}
	// containers and TTL nodes keep their markers, but clients see owner 0 (observed)
	r = h.op(s, nil, ZKOp{Type: ZKOpCreateContainer, Path: "/c", ACL: ZKOpenACL, Mode: ZKContainer})
	if r.Err != ZOK || r.Stat.EphemeralOwner != 0 || h.s.zk.nodes["/c"].stat.EphemeralOwner != zkContainerOwner {
		t.Fatalf("container: %+v", r)
	}
	r = h.op(s, nil, ZKOp{Type: ZKOpCreateTTL, Path: "/t", ACL: ZKOpenACL, Mode: ZKPersistentWithTTL, TTL: 5000})
	if r.Err != ZOK || r.Stat.EphemeralOwner != 0 || uint64(h.s.zk.nodes["/t"].stat.EphemeralOwner) != 0xff00000000001388 {
		t.Fatalf("ttl: %+v, owner %#x", r, h.s.zk.nodes["/t"].stat.EphemeralOwner)
	}
}

func TestZKCreateErrors(t *testing.T) {
	h := newZK(t)
	s := h.session(10000)
	h.mustCreate(s, "/e", ZKEphemeral)
	h.mustCreate(s, "/p", ZKPersistent)
	locked := ZKOp{Type: ZKOpCreate, Path: "/locked", ACL: []ZKACL{{Perms: ZKPermRead, Scheme: "world", ID: "anyone"}}}
	h.op(s, nil, locked)
	for _, c := range []struct {
		op   ZKOp
		want int32
	}{
		{create("/p", "", ZKPersistent), ZNodeExists},
		{create("/missing/x", "", ZKPersistent), ZNoNode},
		{create("/e/x", "", ZKPersistent), ZNoChildrenForEphemerals},
		{create("/locked/x", "", ZKPersistent), ZNoAuth},
		{create("/p/", "", ZKPersistent), ZBadArguments},
		{create("/p/.", "", ZKPersistent), ZBadArguments},
		{create("/p//x", "", ZKPersistent), ZNoNode}, // parent "/p/" does not exist
		{create("noslash", "", ZKPersistent), ZBadArguments},
		{create("/p/a\x00b", "", ZKPersistent), ZBadArguments},
		{create("/p/\u0001", "", ZKPersistent), ZBadArguments},
		{create("/p/\U0001F600", "", ZKPersistent), ZBadArguments},
		{create("/p/x", "", 7), ZBadArguments},
		{create("/", "", ZKPersistent), ZNodeExists},
		{ZKOp{Type: ZKOpCreate, Path: "/p/x", Mode: ZKPersistentWithTTL}, ZBadArguments},
		{ZKOp{Type: ZKOpCreateTTL, Path: "/p/x", ACL: ZKOpenACL, Mode: ZKPersistentWithTTL, TTL: 0}, ZBadArguments},
		{ZKOp{Type: ZKOpCreateTTL, Path: "/p/x", ACL: ZKOpenACL, Mode: ZKPersistentWithTTL, TTL: ZKMaxTTL + 1}, ZBadArguments},
		{ZKOp{Type: ZKOpCreateTTL, Path: "/p/x", ACL: ZKOpenACL, Mode: ZKPersistent, TTL: 10}, ZBadArguments},
		{ZKOp{Type: ZKOpCreate, Path: "/p/x"}, ZInvalidACL},
		{ZKOp{Type: ZKOpCreate, Path: "/p/x", ACL: []ZKACL{{Perms: ZKPermAll, Scheme: "foo", ID: "x"}}}, ZInvalidACL},
		{ZKOp{Type: ZKOpCreate, Path: "/p/x", ACL: []ZKACL{{Perms: ZKPermAll, Scheme: "digest", ID: "nocolon"}}}, ZInvalidACL},
		{ZKOp{Type: ZKOpCreate, Path: "/p/x", ACL: []ZKACL{{Perms: ZKPermAll, Scheme: "ip", ID: "1.2.3"}}}, ZInvalidACL},
		{ZKOp{Type: ZKOpCreate, Path: "/p/x", ACL: []ZKACL{{Perms: ZKPermAll, Scheme: "auth"}}}, ZInvalidACL},
	} {
		h.expectErr(s, []ZKID{{Scheme: "ip", ID: "127.0.0.1"}}, c.op, c.want)
	}
	// the largest TTL is fine, and so is a digest id Java's split sees two parts in
	h.expectErr(s, nil, ZKOp{Type: ZKOpCreateTTL, Path: "/p/ttl", ACL: ZKOpenACL, Mode: ZKPersistentWithTTL, TTL: ZKMaxTTL}, ZOK)
	h.expectErr(s, nil, ZKOp{Type: ZKOpCreate, Path: "/p/d", ACL: []ZKACL{{Perms: ZKPermAll, Scheme: "digest", ID: "a:b:"}}}, ZOK)
	// failed ops still take a zxid, and change nothing else
	zx := h.s.ZKLastZxid()
	d := h.s.Digest()
	r := h.apply(&ZKTxn{Kind: ZKTxnOp, Session: s, Ops: []ZKOp{create("/p", "", ZKPersistent)}})
	if r.Zxid != zx+1 || h.s.ZKLastZxid() != zx+1 {
		t.Fatalf("error txn zxid %d, last %d, want %d", r.Zxid, h.s.ZKLastZxid(), zx+1)
	}
	h.s.zk.zxid--
	if h.s.Digest() != d {
		t.Fatal("a failed create changed the tree")
	}
}

func TestZKUnknownSession(t *testing.T) {
	h := newZK(t)
	d := h.s.Digest()
	r := h.apply(&ZKTxn{Kind: ZKTxnOp, Session: 42, Ops: []ZKOp{create("/x", "", ZKPersistent)}})
	if r.Err != ZSessionExpired || r.Zxid != 0 || r.Ops[0].Err != ZSessionExpired {
		t.Fatalf("%+v", r)
	}
	r = h.apply(&ZKTxn{Kind: ZKTxnMulti, Session: 42, Ops: []ZKOp{create("/x", "", ZKPersistent)}})
	if r.Err != ZSessionExpired || r.Zxid != 0 {
		t.Fatalf("%+v", r)
	}
	r = h.apply(&ZKTxn{Kind: ZKTxnCloseSession, Session: 42})
	if r.Err != 0 || r.Zxid != 0 {
		t.Fatalf("%+v", r)
	}
	if h.s.Digest() != d || len(h.events) != 0 {
		t.Fatal("requests of an unknown session changed the state")
	}
}

func TestZKDelete(t *testing.T) {
	h := newZK(t)
	s := h.session(10000)
	h.mustCreate(s, "/a", ZKPersistent)
	h.mustCreate(s, "/a/b", ZKPersistent)
	h.op(s, nil, ZKOp{Type: ZKOpCreate, Path: "/nodel", ACL: []ZKACL{{Perms: ZKPermAll &^ ZKPermDelete, Scheme: "world", ID: "anyone"}}})
	h.mustCreate(s, "/nodel/x", ZKPersistent)
	for _, c := range []struct {
		op   ZKOp
		want int32
	}{
		{ZKOp{Type: ZKOpDelete, Path: "/a", Version: -1}, ZNotEmpty},
		{ZKOp{Type: ZKOpDelete, Path: "/a/b", Version: 3}, ZBadVersion},
		{ZKOp{Type: ZKOpDelete, Path: "/a/c", Version: -1}, ZNoNode},
		{ZKOp{Type: ZKOpDelete, Path: "/x/c", Version: -1}, ZNoNode},
		{ZKOp{Type: ZKOpDelete, Path: "/nodel/x", Version: -1}, ZNoAuth},
		// observed: the paths ZooKeeper keeps answer BadArguments
		{ZKOp{Type: ZKOpDelete, Path: "/", Version: -1}, ZBadArguments},
		{ZKOp{Type: ZKOpDelete, Path: "/zookeeper", Version: -1}, ZBadArguments},
		{ZKOp{Type: ZKOpDelete, Path: "/zookeeper/quota", Version: -1}, ZBadArguments},
		{ZKOp{Type: ZKOpDelete, Path: "/zookeeper/config", Version: -1}, ZBadArguments},
		{ZKOp{Type: ZKOpDelete, Path: "a", Version: -1}, ZBadArguments},
	} {
		h.expectErr(s, nil, c.op, c.want)
	}
	before := h.stat("/a")
	h.events = nil
	h.expectErr(s, nil, ZKOp{Type: ZKOpDelete, Path: "/a/b", Version: 0}, ZOK)
	zx := h.s.ZKLastZxid()
	after := h.stat("/a")
	if after.Cversion != before.Cversion+1 || after.NumChildren != 0 || after.Pzxid != zx {
		t.Fatalf("parent after delete: %+v (before %+v)", after, before)
	}
	want := []ZKEvent{{Type: ZKEventNodeDeleted, Path: "/a/b", Zxid: zx}, {Type: ZKEventNodeChildrenChanged, Path: "/a", Zxid: zx}}
	if !reflect.DeepEqual(h.events, [][]ZKEvent{want}) {
		t.Fatalf("events %+v", h.events)
	}
}

func TestZKSetDataAndACL(t *testing.T) {
	h := newZK(t)
	s := h.session(10000)
	h.mustCreate(s, "/n", ZKPersistent)
	h.now += 10
	r := h.op(s, nil, ZKOp{Type: ZKOpSetData, Path: "/n", Data: []byte("xyz"), Version: 0})
	zx := h.s.ZKLastZxid()
	if r.Err != ZOK || r.Stat.Version != 1 || r.Stat.Mzxid != zx || r.Stat.Mtime != h.now || r.Stat.DataLength != 3 || r.Stat.Czxid == zx {
		t.Fatalf("setData: %+v", r)
	}
	if ev := h.lastEvents(); !reflect.DeepEqual(ev, []ZKEvent{{Type: ZKEventNodeDataChanged, Path: "/n", Zxid: zx}}) {
		t.Fatalf("events %+v", ev)
	}
	h.expectErr(s, nil, ZKOp{Type: ZKOpSetData, Path: "/n", Version: 0}, ZBadVersion)
	h.expectErr(s, nil, ZKOp{Type: ZKOpSetData, Path: "/none", Version: -1}, ZNoNode)
	h.expectErr(s, nil, ZKOp{Type: ZKOpSetData, Path: "/n/", Version: -1}, ZBadArguments)
	h.expectErr(s, nil, ZKOp{Type: ZKOpSetData, Path: "/zookeeper/config", Version: -1}, ZNoAuth) // observed

	readOnly := []ZKACL{{Perms: ZKPermRead | ZKPermAdmin, Scheme: "world", ID: "anyone"}}
	r = h.op(s, nil, ZKOp{Type: ZKOpSetACL, Path: "/n", ACL: readOnly, Version: 0})
	if r.Err != ZOK || r.Stat.Aversion != 1 || r.Stat.Version != 1 {
		t.Fatalf("setACL: %+v", r)
	}
	h.expectErr(s, nil, ZKOp{Type: ZKOpSetData, Path: "/n", Version: -1}, ZNoAuth)
	h.expectErr(s, nil, ZKOp{Type: ZKOpSetACL, Path: "/n", ACL: readOnly, Version: 0}, ZBadVersion)
	h.expectErr(s, nil, ZKOp{Type: ZKOpSetACL, Path: "/n", Version: -1}, ZInvalidACL)
	h.expectErr(s, nil, ZKOp{Type: ZKOpSetACL, Path: "/none", ACL: readOnly, Version: -1}, ZNoNode)
	h.op(s, nil, ZKOp{Type: ZKOpSetACL, Path: "/n", ACL: []ZKACL{{Perms: ZKPermRead, Scheme: "world", ID: "anyone"}}, Version: 1})
	h.expectErr(s, nil, ZKOp{Type: ZKOpSetACL, Path: "/n", ACL: readOnly, Version: -1}, ZNoAuth)
}

// The "auth" scheme becomes the session's authenticated identities (digest, not ip), as
// observed; a digest ACL admits only its id.
func TestZKACLAuthAndDigest(t *testing.T) {
	h := newZK(t)
	s := h.session(10000)
	user := ZKID{Scheme: "digest", ID: "user:2Om+GBbT2q/tS6pdvACZbbm7/1A="}
	ip := ZKID{Scheme: "ip", ID: "127.0.0.1"}
	auth := []ZKID{ip, user}
	h.expectErr(s, auth, ZKOp{Type: ZKOpCreate, Path: "/mine", ACL: []ZKACL{{Perms: ZKPermAll, Scheme: "auth"}}}, ZOK)
	n, _ := h.s.ZKGet("/mine")
	if !reflect.DeepEqual(n.ACL, []ZKACL{{Perms: ZKPermAll, Scheme: "digest", ID: user.ID}}) {
		t.Fatalf("auth expanded to %+v", n.ACL)
	}
	h.expectErr(s, []ZKID{ip}, ZKOp{Type: ZKOpSetData, Path: "/mine", Version: -1}, ZNoAuth)
	h.expectErr(s, auth, ZKOp{Type: ZKOpSetData, Path: "/mine", Version: -1}, ZOK)
	h.expectErr(s, []ZKID{{Scheme: "digest", ID: "user:other"}}, ZKOp{Type: ZKOpCreate, Path: "/mine/x", ACL: ZKOpenACL}, ZNoAuth)
	h.expectErr(s, auth, ZKOp{Type: ZKOpCreate, Path: "/mine/x", ACL: ZKOpenACL}, ZOK)
	// ip ACLs match by address and mask
	h.expectErr(s, nil, ZKOp{Type: ZKOpCreate, Path: "/net", ACL: []ZKACL{{Perms: ZKPermAll, Scheme: "ip", ID: "10.1.0.0/16"}}}, ZOK)
	h.expectErr(s, []ZKID{{Scheme: "ip", ID: "10.2.0.1"}}, ZKOp{Type: ZKOpCreate, Path: "/net/x", ACL: ZKOpenACL}, ZNoAuth)
	h.expectErr(s, []ZKID{{Scheme: "ip", ID: "10.1.200.3"}}, ZKOp{Type: ZKOpCreate, Path: "/net/x", ACL: ZKOpenACL}, ZOK)
	if !ZKCheckPerm(nil, ZKPermAdmin, nil) || ZKCheckPerm(n.ACL, ZKPermRead, nil) || !ZKCheckPerm(n.ACL, ZKPermRead, []ZKID{{Scheme: "super", ID: "x"}}) {
		t.Fatal("ZKCheckPerm: empty ACL, no identity or super")
	}
}

func TestZKMultiSuccess(t *testing.T) {
	h := newZK(t)
	s := h.session(10000)
	h.mustCreate(s, "/m", ZKPersistent)
	h.events = nil
	r := h.apply(&ZKTxn{Kind: ZKTxnMulti, Session: s, Ops: []ZKOp{
		create("/m/a", "1", ZKPersistent),
		{Type: ZKOpSetData, Path: "/m/a", Data: []byte("22"), Version: 0},
		{Type: ZKOpCheck, Path: "/m/a", Version: 1},
		{Type: ZKOpCreate, Path: "/m/a/b", ACL: ZKOpenACL},
	}})
	zx := r.Zxid
	if r.Err != 0 || zx != h.s.ZKLastZxid() || len(r.Ops) != 4 {
		t.Fatalf("%+v", r)
	}
	// as observed: one zxid for all, the setData sees the create
	wantStat := ZKStat{Czxid: zx, Mzxid: zx, Pzxid: zx, Ctime: h.now, Mtime: h.now, Version: 1, DataLength: 2}
	if r.Ops[0].Path != "/m/a" || r.Ops[1].Stat != wantStat || r.Ops[2].Err != 0 || r.Ops[3].Path != "/m/a/b" {
		t.Fatalf("%+v", r.Ops)
	}
	if st := h.stat("/m/a"); st.NumChildren != 1 || st.Cversion != 1 || st.Version != 1 {
		t.Fatalf("%+v", st)
	}
	want := []ZKEvent{
		{Type: ZKEventNodeCreated, Path: "/m/a", Zxid: zx}, {Type: ZKEventNodeChildrenChanged, Path: "/m", Zxid: zx},
		{Type: ZKEventNodeDataChanged, Path: "/m/a", Zxid: zx},
		{Type: ZKEventNodeCreated, Path: "/m/a/b", Zxid: zx}, {Type: ZKEventNodeChildrenChanged, Path: "/m/a", Zxid: zx},
	}
	if !reflect.DeepEqual(h.events, [][]ZKEvent{want}) {
		t.Fatalf("events %+v", h.events)
	}
}

// As observed: [create /m/c, create /m/a (exists), delete /m/a, setData /m/zz] answers
// [ok(0), NodeExists, RuntimeInconsistency, RuntimeInconsistency], all ZKOpError, and
// leaves nothing behind but the zxid it took.
func TestZKMultiRollback(t *testing.T) {
	h := newZK(t)
	s := h.session(10000)
	h.mustCreate(s, "/m", ZKPersistent)
	h.mustCreate(s, "/m/a", ZKPersistent)
	h.mustCreate(s, "/m/e", ZKEphemeral)
	h.events = nil
	d := h.s.Digest()
	_, _, bytesBefore := h.s.ZKCounts()
	r := h.apply(&ZKTxn{Kind: ZKTxnMulti, Session: s, Ops: []ZKOp{
		create("/m/c", "1", ZKEphemeralSequential),
		{Type: ZKOpDelete, Path: "/m/e", Version: -1},
		{Type: ZKOpSetData, Path: "/m/a", Data: []byte("zz"), Version: -1},
		{Type: ZKOpSetACL, Path: "/m/a", ACL: ZKOpenACL, Version: -1},
		create("/m/a", "1", ZKPersistent),
		{Type: ZKOpDelete, Path: "/m/a", Version: -1},
		{Type: ZKOpSetData, Path: "/m/zz", Version: -1},
	}})
	want := []ZKOpResult{{Type: ZKOpError}, {Type: ZKOpError}, {Type: ZKOpError}, {Type: ZKOpError},
		{Type: ZKOpError, Err: ZNodeExists}, {Type: ZKOpError, Err: ZRuntimeInconsistency}, {Type: ZKOpError, Err: ZRuntimeInconsistency}}
	if r.Err != 0 || r.Zxid != h.s.ZKLastZxid() || !reflect.DeepEqual(r.Ops, want) {
		t.Fatalf("%+v", r)
	}
	h.s.zk.zxid--
	if h.s.Digest() != d || len(h.events) != 0 {
		t.Fatalf("a failed multi changed the tree or fired %v", h.events)
	}
	if _, eph, b := h.s.ZKCounts(); eph != 1 || b != bytesBefore || len(h.s.ZKEphemerals(s, "/")) != 1 {
		t.Fatal("counters or ephemerals index not restored")
	}
	h.s.zk.zxid++
	// the sequence number the rolled-back create took is free again
	if p := h.mustCreate(s, "/m/c", ZKPersistentSequential); p != "/m/c0000000002" {
		t.Fatal(p)
	}
	h.expectErr(s, nil, ZKOp{Type: ZKOpCheck, Path: "/m/a", Version: 5}, ZBadVersion)
	h.expectErr(s, nil, ZKOp{Type: ZKOpCheck, Path: "/m/none", Version: -1}, ZNoNode)
}

func TestZKSessionsAndEphemerals(t *testing.T) {
	h := newZK(t)
	s1 := h.apply(&ZKTxn{Kind: ZKTxnCreateSession, Timeout: 4000}).Session
	s2 := h.apply(&ZKTxn{Kind: ZKTxnCreateSession, Timeout: 4000}).Session
	if t0 := int64(zkT0); s1.ID != int64(uint64(t0<<24)>>8) || s2.ID != s1.ID+1 || s1.Passwd == s2.Passwd || s1.LastTouch != h.now || s1.Timeout != 4000 {
		t.Fatalf("sessions %+v %+v", s1, s2)
	}
	h.mustCreate(s1.ID, "/p", ZKPersistent)
	h.mustCreate(s1.ID, "/p/b", ZKEphemeral)
	h.mustCreate(s1.ID, "/p/a", ZKEphemeral)
	h.mustCreate(s2.ID, "/p/c", ZKEphemeral)
	if got := h.s.ZKEphemerals(s1.ID, "/p/"); !reflect.DeepEqual(got, []string{"/p/a", "/p/b"}) {
		t.Fatalf("ephemerals %q", got)
	}
	h.events = nil
	r := h.apply(&ZKTxn{Kind: ZKTxnCloseSession, Session: s1.ID})
	zx := r.Zxid
	want := []ZKEvent{
		{Type: ZKEventNodeDeleted, Path: "/p/a", Zxid: zx}, {Type: ZKEventNodeChildrenChanged, Path: "/p", Zxid: zx},
		{Type: ZKEventNodeDeleted, Path: "/p/b", Zxid: zx}, {Type: ZKEventNodeChildrenChanged, Path: "/p", Zxid: zx},
		{Type: ZKEventSessionClosed, Zxid: zx, Session: s1.ID},
	}
	if r.Err != 0 || zx != h.s.ZKLastZxid() || !reflect.DeepEqual(h.events, [][]ZKEvent{want}) {
		t.Fatalf("%+v events %+v", r, h.events)
	}
	if names, _, _ := h.s.ZKChildren("/p"); !reflect.DeepEqual(names, []string{"c"}) {
		t.Fatalf("children %q", names)
	}
	if _, ok := h.s.ZKSession(s1.ID); ok {
		t.Fatal("closed session still there")
	}
	// expiry: s2 touched in time survives a sweep, s3 does not
	s3 := h.session(4000)
	h.mustCreate(s3, "/p/d", ZKEphemeral)
	h.now += 3000
	h.apply(&ZKTxn{Kind: ZKTxnTouch, Sessions: []int64{s2.ID, 999}})
	h.now += 1000
	due, _ := h.s.ZKDue(h.now)
	if !reflect.DeepEqual(due, []int64{s3}) {
		t.Fatalf("due %v", due)
	}
	zx = h.s.ZKLastZxid()
	h.events = nil
	r = h.apply(&ZKTxn{Kind: ZKTxnExpireSessions, Sessions: []int64{s2.ID, s3}})
	if r.Zxid != zx+1 || h.s.ZKLastZxid() != zx+1 {
		t.Fatalf("expire %+v", r)
	}
	if _, ok := h.s.ZKSession(s2.ID); !ok {
		t.Fatal("touched session expired")
	}
	if _, ok := h.s.ZKGet("/p/d"); ok {
		t.Fatal("expired session's ephemeral survived")
	}
	if ev := h.lastEvents(); len(ev) != 3 || ev[2].Type != ZKEventSessionClosed || ev[2].Session != s3 {
		t.Fatalf("events %+v", ev)
	}
	if ss := h.s.ZKSessions(); len(ss) != 1 || ss[0].ID != s2.ID {
		t.Fatalf("sessions %+v", ss)
	}
	// a write counts as a touch
	h.now += 3999
	h.mustCreate(s2.ID, "/q", ZKPersistent)
	h.now += 3999
	if due, _ := h.s.ZKDue(h.now); len(due) != 0 {
		t.Fatalf("due after a write %v", due)
	}
}

func TestZKReap(t *testing.T) {
	h := newZK(t)
	s := h.session(100000)
	h.op(s, nil, ZKOp{Type: ZKOpCreateContainer, Path: "/c", ACL: ZKOpenACL, Mode: ZKContainer})
	h.op(s, nil, ZKOp{Type: ZKOpCreateContainer, Path: "/never", ACL: ZKOpenACL, Mode: ZKContainer})
	h.op(s, nil, ZKOp{Type: ZKOpCreateTTL, Path: "/t", ACL: ZKOpenACL, Mode: ZKPersistentWithTTL, TTL: 1000})
	h.mustCreate(s, "/c/x", ZKPersistent)
	if _, due := h.s.ZKDue(h.now + 5000); !reflect.DeepEqual(due, []string{"/t"}) {
		t.Fatalf("due %q", due)
	}
	h.op(s, nil, ZKOp{Type: ZKOpDelete, Path: "/c/x", Version: -1})
	// as ContainerManager: a TTL node is due once more than its TTL has passed since mtime
	h.now += 1000
	if _, due := h.s.ZKDue(h.now); !reflect.DeepEqual(due, []string{"/c"}) {
		t.Fatalf("due %q", due)
	}
	// a Reap listing a path no longer due leaves it and takes no zxid
	zx := h.s.ZKLastZxid()
	r := h.apply(&ZKTxn{Kind: ZKTxnReap, Paths: []string{"/t", "/never", "/missing"}})
	if r.Zxid != 0 || h.s.ZKLastZxid() != zx {
		t.Fatalf("%+v", r)
	}
	h.now++
	h.events = nil
	r = h.apply(&ZKTxn{Kind: ZKTxnReap, Paths: []string{"/c", "/t"}})
	if r.Zxid != zx+2 {
		t.Fatalf("%+v", r)
	}
	want := []ZKEvent{
		{Type: ZKEventNodeDeleted, Path: "/c", Zxid: zx + 1}, {Type: ZKEventNodeChildrenChanged, Path: "/", Zxid: zx + 1},
		{Type: ZKEventNodeDeleted, Path: "/t", Zxid: zx + 2}, {Type: ZKEventNodeChildrenChanged, Path: "/", Zxid: zx + 2},
	}
	if !reflect.DeepEqual(h.events, [][]ZKEvent{want}) {
		t.Fatalf("events %+v", h.events)
	}
	if _, due := h.s.ZKDue(h.now + 1e9); len(due) != 0 {
		t.Fatalf("still due %q", due)
	}
}

func TestZKValidatePath(t *testing.T) {
	for p, ok := range map[string]bool{
		"/": true, "/a": true, "/a/b": true, "/...": true, "/a.b": true, "/a/.b": true,
		"": false, "a": false, "/a/": false, "//": false, "/a//b": false, "/.": false, "/..": false,
		"/a/./b": false, "/a/../b": false, "/a\x00": false, "/\x7f": false, "/\u0085": false,
		"/\ud7ff": true, "/\ue000": false, "/\ufff0": false, "/\U00010000": false, "/\xff": false, "/ü": true,
	} {
		if ZKValidatePath(p) != ok {
			t.Errorf("ZKValidatePath(%q) != %v", p, ok)
		}
	}
}

func TestZKReads(t *testing.T) {
	h := newZK(t)
	s := h.session(10000)
	h.mustCreate(s, "/a", ZKPersistent)
	h.mustCreate(s, "/a/b", ZKPersistent)
	h.mustCreate(s, "/a/b/c", ZKPersistent)
	h.mustCreate(s, "/a/d", ZKPersistent)
	if n, ok := h.s.ZKAllChildrenNumber("/a"); !ok || n != 3 {
		t.Fatalf("all children of /a: %d", n)
	}
	if n, _ := h.s.ZKAllChildrenNumber("/"); n != 7 {
		t.Fatalf("all children of /: %d", n)
	}
	h.op(s, nil, ZKOp{Type: ZKOpSetData, Path: "/a", Data: []byte("12345"), Version: -1})
	if nodes, _, b := h.s.ZKCounts(); nodes != 8 || b != int64(len("//zookeeper/zookeeper/quota/zookeeper/config/a/a/b/a/b/c/a/d12345")) {
		t.Fatalf("counts %d %d", nodes, b)
	}
}

// zkWorkload applies a mix of every transaction kind from a few sessions.
func zkWorkload(h *zkh, n int) {
	var sessions []int64
	for i := 0; i < n; i++ {
		h.now += 7
		if len(sessions) < 3 || i%50 == 0 {
			sessions = append(sessions, h.session(1000))
		}
		s := sessions[i%len(sessions)]
		p := fmt.Sprintf("/w%d", i%5)
		switch i % 11 {
		case 0, 1:
			h.op(s, nil, create(p, fmt.Sprint(i), int32(i%4)))
		case 2:
			h.op(s, nil, create(p+"/k", "x", ZKPersistentSequential))
		case 3:
			h.op(s, nil, ZKOp{Type: ZKOpSetData, Path: p, Data: []byte(fmt.Sprint(i)), Version: -1})
		case 4:
			h.op(s, nil, ZKOp{Type: ZKOpDelete, Path: p, Version: -1})
		case 5:
			h.apply(&ZKTxn{Kind: ZKTxnMulti, Session: s, Ops: []ZKOp{create(p+"/m", "", ZKEphemeralSequential), {Type: ZKOpCheck, Path: p, Version: int32(i % 2)}}})
		case 6:
			h.op(s, nil, ZKOp{Type: ZKOpCreateContainer, Path: fmt.Sprintf("/c%d", i%3), ACL: ZKOpenACL, Mode: ZKContainer})
			h.op(s, nil, create(fmt.Sprintf("/c%d/x", i%3), "", ZKEphemeralSequential))
		case 7:
			h.op(s, nil, ZKOp{Type: ZKOpCreateTTL, Path: fmt.Sprintf("/t%d", i%3), ACL: ZKOpenACL, Mode: ZKPersistentSequentialWithTTL, TTL: 50})
		case 8:
			h.apply(&ZKTxn{Kind: ZKTxnTouch, Sessions: sessions[:1]})
		case 9:
			due, paths := h.s.ZKDue(h.now)
			h.apply(&ZKTxn{Kind: ZKTxnExpireSessions, Sessions: due})
			h.apply(&ZKTxn{Kind: ZKTxnReap, Paths: paths})
		case 10:
			h.op(s, nil, ZKOp{Type: ZKOpSetACL, Path: p, ACL: []ZKACL{{Perms: ZKPermAll, Scheme: "auth"}}, Version: -1})
		}
	}
}

func TestZKSnapshotRestoreIsTheSameState(t *testing.T) {
	a := newZK(t)
	zkWorkload(a, 600)
	var snap bytes.Buffer
	if err := a.s.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	b := newZK(t)
	b.index, b.now = a.index, a.now
	if err := b.s.Restore(bytes.NewReader(snap.Bytes())); err != nil {
		t.Fatal(err)
	}
	if a.s.Digest() != b.s.Digest() {
		t.Fatal("digest differs after restore")
	}
	var again bytes.Buffer
	b.s.Snapshot(&again)
	if !bytes.Equal(snap.Bytes(), again.Bytes()) {
		t.Fatal("snapshot of the restored store differs")
	}
	for _, p := range []string{"/", "/w1", "/c0"} {
		na, _, oka := a.s.ZKChildren(p)
		nb, _, okb := b.s.ZKChildren(p)
		if oka != okb || !reflect.DeepEqual(na, nb) {
			t.Fatalf("%s: %q vs %q", p, na, nb)
		}
	}
	a.events, b.events = nil, nil
	zkWorkload(a, 400)
	zkWorkload(b, 400)
	if a.s.Digest() != b.s.Digest() || !reflect.DeepEqual(a.events, b.events) {
		t.Fatal("stores diverged after restore")
	}
	ca, ea, ba := a.s.ZKCounts()
	cb, eb, bb := b.s.ZKCounts()
	if ca != cb || ea != eb || ba != bb {
		t.Fatal("counts diverged after restore")
	}
}

func TestZKDigestSeesChanges(t *testing.T) {
	h := newZK(t)
	s := h.session(1000)
	d := h.s.Digest()
	h.mustCreate(s, "/x", ZKPersistent)
	d1 := h.s.Digest()
	h.op(s, nil, ZKOp{Type: ZKOpSetData, Path: "/x", Data: []byte("1"), Version: -1})
	d2 := h.s.Digest()
	h.apply(&ZKTxn{Kind: ZKTxnTouch, Sessions: []int64{s}})
	h.now++
	h.apply(&ZKTxn{Kind: ZKTxnTouch, Sessions: []int64{s}})
	if d == d1 || d1 == d2 || d2 == h.s.Digest() {
		t.Fatal("digest missed a change")
	}
}

func TestZKSameEntriesSameDigest(t *testing.T) {
	a, b := newZK(t), newZK(t)
	zkWorkload(a, 800)
	zkWorkload(b, 800)
	if a.s.Digest() != b.s.Digest() || !reflect.DeepEqual(a.events, b.events) {
		t.Fatal("two stores given the same entries differ")
	}
}

// A snapshot of the format before the ZooKeeper tree restores with a fresh tree.
func TestZKRestoreOldSnapshot(t *testing.T) {
	h := newZK(t)
	s := h.session(1000)
	h.mustCreate(s, "/x", ZKPersistent)
	var snap bytes.Buffer
	New().Snapshot(&snap)
	old := append([]byte(snapshotMagicV1), snap.Bytes()[len(snapshotMagic):]...)
	old = old[:len(old)-len(New().zk.appendSnapshot(nil))]
	if err := h.s.Restore(bytes.NewReader(old)); err != nil {
		t.Fatal(err)
	}
	if h.s.Digest() != New().Digest() {
		t.Fatal("old snapshot did not restore to a fresh tree")
	}
}

func TestZKCorruptBatches(t *testing.T) {
	good := AppendZK(nil, &ZKTxn{Kind: ZKTxnOp, Session: 1, Ops: []ZKOp{create("/a", "d", ZKPersistent)}})
	for name, data := range map[string][]byte{
		"truncated":    good[:len(good)-1],
		"bad kind":     {opZK, 9},
		"no kind":      {opZK},
		"op, no ops":   AppendZK(nil, &ZKTxn{Kind: ZKTxnOp}),
		"huge count":   {opZK, byte(ZKTxnTouch), 0, 0, 0, 0, 0xff, 0xff, 0x3f},
		"int32 range ": AppendZK(nil, &ZKTxn{Kind: ZKTxnTouch, Sessions: nil, Timeout: 0})[:3],
	} {
		if err := New().Apply(Entry{Index: 1, Data: data}, nil); err == nil {
			t.Errorf("%s: applied without error", name)
		}
	}
}

// FuzzApplyZK applies arbitrary batches, after a few valid ZooKeeper transactions, to two
// stores: no panic, and equal digests.
func FuzzApplyZK(f *testing.F) {
	f.Add(AppendZK(nil, &ZKTxn{Kind: ZKTxnCreateSession, Timeout: 1000}))
	f.Add(AppendZK(nil, &ZKTxn{Kind: ZKTxnMulti, Session: 1, Ops: []ZKOp{create("/a", "d", ZKPersistentSequential), {Type: ZKOpCheck, Path: "/a", Version: -1}}}))
	f.Add(AppendZK(nil, &ZKTxn{Kind: ZKTxnOp, Session: 1, Auth: []ZKID{{Scheme: "digest", ID: "a:b"}}, Ops: []ZKOp{{Type: ZKOpCreateTTL, Path: "/t", ACL: []ZKACL{{Perms: 31, Scheme: "auth"}}, Mode: ZKPersistentWithTTL, TTL: 5}}}))
	f.Add(AppendZK(nil, &ZKTxn{Kind: ZKTxnReap, Paths: []string{"/c", "/t"}, Sessions: []int64{1}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		var stores [2]*Store
		for i := range stores {
			s := New()
			// a session (id 1 << 24 >> 8 at time 1: the entry's time), a container with
			// a child, a TTL node: state for the fuzzed batch to act on
			setup := AppendZK(nil, &ZKTxn{Kind: ZKTxnCreateSession, Timeout: 10})
			sid := int64(1 << 16)
			setup = AppendZK(setup, &ZKTxn{Kind: ZKTxnMulti, Session: sid, Ops: []ZKOp{
				{Type: ZKOpCreateContainer, Path: "/c", ACL: ZKOpenACL, Mode: ZKContainer},
				create("/c/e", "", ZKEphemeral),
				{Type: ZKOpCreateTTL, Path: "/t", ACL: ZKOpenACL, Mode: ZKPersistentWithTTL, TTL: 1},
			}})
			if err := s.Apply(Entry{Index: 1, Term: 1, Time: 1, Data: setup}, nil); err != nil {
				t.Fatal(err)
			}
			s.Apply(Entry{Index: 2, Term: 1, Time: 1e6, Data: data}, nil)
			stores[i] = s
		}
		if stores[0].Digest() != stores[1].Digest() {
			t.Fatal("replicas disagree")
		}
		var snap bytes.Buffer
		stores[0].Snapshot(&snap)
		r := New()
		if err := r.Restore(&snap); err != nil || r.Digest() != stores[0].Digest() {
			t.Fatalf("snapshot does not restore: %v", err)
		}
	})
}

// Readers run while the applier applies (go test -race checks the locking).
func TestZKReadersDuringApply(t *testing.T) {
	h := newZK(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 2000; i++ {
			h.s.ZKGet("/w1")
			h.s.ZKChildren("/")
			h.s.ZKAllChildrenNumber("/w2")
			h.s.ZKSessions()
			h.s.ZKCounts()
			h.s.ZKDue(zkT0 + 1e6)
			for _, se := range h.s.ZKSessions() {
				h.s.ZKEphemerals(se.ID, "/")
			}
		}
	}()
	zkWorkload(h, 300)
	<-done
}

// zkSetDataLoad is a store with 32 znodes under /b and, for each, a committed entry that
// sets its data to 100 bytes (the bench's ZooKeeper load), for a follower to apply: no
// one waits for the result, and a watcher callback finds no watch.
type zkSetDataLoad struct {
	s       *Store
	index   uint64
	entries [][]byte
}

func newZKSetDataLoad(tb testing.TB) *zkSetDataLoad {
	l := &zkSetDataLoad{s: New()}
	l.s.SetZKWatcher(func([]ZKEvent) {})
	var rs zkResults
	l.apply(tb, AppendZK(nil, &ZKTxn{Kind: ZKTxnCreateSession, Timeout: 10000}), &rs)
	sess := rs[0].Session.ID
	value := bytes.Repeat([]byte{'v'}, 100)
	l.apply(tb, AppendZK(nil, &ZKTxn{Kind: ZKTxnOp, Session: sess, Ops: []ZKOp{{Type: ZKOpCreate, Path: "/b", ACL: ZKOpenACL}}}), nil)
	for i := range 32 {
		path := fmt.Sprintf("/b/c%d", i)
		l.apply(tb, AppendZK(nil, &ZKTxn{Kind: ZKTxnOp, Session: sess, Ops: []ZKOp{{Type: ZKOpCreate, Path: path, Data: value, ACL: ZKOpenACL}}}), nil)
		l.entries = append(l.entries, AppendZK(nil, &ZKTxn{Kind: ZKTxnOp, Session: sess, Ops: []ZKOp{{Type: ZKOpSetData, Path: path, Data: value, Version: -1}}}))
	}
	return l
}

func (l *zkSetDataLoad) apply(tb testing.TB, data []byte, w ReplyWriter) {
	l.index++
	if err := l.s.Apply(Entry{Index: l.index, Term: 1, Time: zkT0, Data: data}, w); err != nil {
		tb.Fatal(err)
	}
}

// A member applying a setData no client waits on allocates the new data and its path
// (the node keeps the one, the watch event the other), nothing else: the applier reuses
// the transaction, the apply state and the events from one entry to the next. It
// allocated nine times before. And the data is set.
func TestApplyZKSetDataAllocatesOnlyDataAndPath(t *testing.T) {
	l := newZKSetDataLoad(t)
	allocs := testing.AllocsPerRun(100, func() { l.apply(t, l.entries[0], nil) })
	if allocs > 2 {
		t.Errorf("%.1f allocations per setData applied, want at most 2", allocs)
	}
	n, ok := l.s.ZKGet("/b/c0")
	if !ok || n.Stat.Version != 101 || len(n.Data) != 100 { // AllocsPerRun runs it once more
		t.Fatalf("/b/c0 after 101 setData: %v version %d, %d bytes", ok, n.Stat.Version, len(n.Data))
	}
}

// BenchmarkApplyZKSetData applies the entries of zkSetDataLoad in turn.
func BenchmarkApplyZKSetData(b *testing.B) {
	l := newZKSetDataLoad(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		l.apply(b, l.entries[i%len(l.entries)], nil)
	}
}
