package zkproto_test

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nanokv/nanokv/kvstore"
	"github.com/nanokv/nanokv/server"
	"github.com/nanokv/nanokv/zkproto"
)

// Integration tests: nanokv nodes in this process, driven by go-zookeeper (every op it
// has) and, for the ops go-zookeeper lacks (create2, addWatch, getEphemerals,
// getAllChildrenNumber, whoAmI, checkWatches/removeWatches), by rawClient, a small
// synchronous client on the zkproto codec.

const waitFor = 10 * time.Second

// startNode starts a single-member nanokv with only its ZooKeeper listener: a single
// node, whose sessions have a goroutine each, or with onMember the one member of a
// cluster, whose sessions its asynchronous event loop serves (loopconn.go).
func startNode(t *testing.T, mod func(*server.Config)) *server.Server {
	t.Helper()
	cfg := server.Config{ZKAddr: "127.0.0.1:0", RedisAddr: "", MemcacheAddr: "", MemoryOnly: true,
		DataDir: t.TempDir(), Logger: log.New(io.Discard, "", 0)}
	if onMember {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg.NodeID, cfg.Peers, cfg.ClusterListener = 1, map[uint64]string{1: ln.Addr().String()}, ln
		cfg.TickInterval, cfg.ElectionTicks = 5*time.Millisecond, 10
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := server.Start(cfg)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	for deadline := time.Now().Add(waitFor); !s.IsLeader(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the member never led")
		}
	}
	return s
}

// onMember has startNode start a one-member cluster (TestOnAClusterMember).
var onMember bool

// TestOnAClusterMember runs the frontend's tests again on the one member of a cluster:
// every request through the event loop, every write through consensus.
func TestOnAClusterMember(t *testing.T) {
	onMember = true
	defer func() { onMember = false }()
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"GoZKEveryOp", TestGoZKEveryOp},
		{"GoZKWatches", TestGoZKWatches},
		{"RawOps", TestRawOps},
		{"BadRequestsBehindWrites", TestBadRequestsBehindWrites},
		{"SessionExpiry", TestSessionExpiry},
		{"Kazoo", TestKazoo},
		{"ZkCli", TestZkCli},
		{"DifferentialAgainstZooKeeper", TestDifferentialAgainstZooKeeper},
		{"DifferentialDefaultsAgainstZooKeeper", TestDifferentialDefaultsAgainstZooKeeper},
	} {
		t.Run(tc.name, tc.run)
	}
}

// clusterMode is the replication of startZKCluster's members: offload, nanokv's default,
// or raft (CI runs the cluster tests once more with -cluster.mode=raft).
var clusterMode = flag.String("cluster.mode", "offload", "replication of the cluster tests' members: offload or raft")

// startZKCluster starts n Raft members in this process, each with a ZooKeeper listener;
// the member listeners are opened first so that every member knows the peer list.
func startZKCluster(t *testing.T, n int, mod func(*server.Config)) []*server.Server {
	t.Helper()
	if *clusterMode != "offload" && *clusterMode != "raft" {
		t.Fatalf("-cluster.mode %q: want offload or raft", *clusterMode)
	}
	lns := make([]net.Listener, n)
	peers := map[uint64]string{}
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i], peers[uint64(i+1)] = ln, ln.Addr().String()
	}
	out := make([]*server.Server, n)
	for i := range out {
		cfg := server.Config{NodeID: uint64(i + 1), Peers: peers, ClusterListener: lns[i],
			TickInterval: 5 * time.Millisecond, ElectionTicks: 10, ZKAddr: "127.0.0.1:0",
			MemoryOnly: true, DataDir: t.TempDir(), Logger: log.New(io.Discard, "", 0), Offload: *clusterMode == "offload"}
		if mod != nil {
			mod(&cfg)
		}
		s, err := server.Start(cfg)
		if err != nil {
			t.Fatalf("start member %d: %v", i+1, err)
		}
		out[i] = s
		t.Cleanup(func() { s.Close() })
	}
	return out
}

// leaderIndex polls until one member leads and every member has heard from it. A
// follower that knows no leader yet cannot open a session (ZooKeeper's learner before it
// has synced closes the connection too), and go-zookeeper would then move on to the
// next server, which a test that names its member must not see.
func leaderIndex(t *testing.T, members []*server.Server) int {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for time.Now().Before(deadline) {
		lead := -1
		for i, s := range members {
			if s.IsLeader() {
				lead = i
			}
		}
		agreed := lead >= 0
		for _, s := range members {
			agreed = agreed && infoField(s, "raft_leader_id") == strconv.Itoa(lead+1)
		}
		if agreed {
			return lead
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no leader that every member knows")
	return -1
}

// infoField returns one field of a member's INFO raft.
func infoField(s *server.Server, name string) string {
	var b strings.Builder
	s.Info(&b, "raft")
	for _, line := range strings.Split(b.String(), "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// orderedHosts tries the servers in the order given to connectZK (zk.Connect shuffles
// them before Init), so that a test knows which member a client talks to.
type orderedHosts struct {
	mu      sync.Mutex
	servers []string
	next    int
	tried   int
}

func (h *orderedHosts) Init([]string) error { return nil }
func (h *orderedHosts) Len() int            { return len(h.servers) }
func (h *orderedHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.servers[h.next%len(h.servers)]
	h.next++
	h.tried++
	return s, h.tried > len(h.servers)
}
func (h *orderedHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tried = 0
}

// connectZK opens a go-zookeeper session and waits until it has one; dialer may be nil.
func connectZK(t *testing.T, servers []string, timeout time.Duration, dialer zk.Dialer) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	var (
		c   *zk.Conn
		ev  <-chan zk.Event
		err error
	)
	if dialer != nil {
		c, ev, err = zk.Connect(servers, timeout, zk.WithLogger(quietLogger{}), zk.WithHostProvider(&orderedHosts{servers: servers}), zk.WithDialer(dialer))
	} else {
		c, ev, err = zk.Connect(servers, timeout, zk.WithLogger(quietLogger{}), zk.WithHostProvider(&orderedHosts{servers: servers}))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	waitState(t, c, zk.StateHasSession)
	return c, ev
}

func waitState(t *testing.T, c *zk.Conn, st zk.State) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for c.State() != st {
		if time.Now().After(deadline) {
			t.Fatalf("state %v, want %v", c.State(), st)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func nextEvent(t *testing.T, ch <-chan zk.Event) zk.Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(waitFor):
		t.Fatal("no watch event")
	}
	return zk.Event{}
}

func noEvent(t *testing.T, ch <-chan zk.Event) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("unexpected event %+v", ev)
		}
	default:
	}
}

func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func wantErr(t *testing.T, what string, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

var worldAll = zk.WorldACL(zk.PermAll)

// TestGoZKEveryOp runs every request go-zookeeper can send against one node.
func TestGoZKEveryOp(t *testing.T) {
	s := startNode(t, func(c *server.Config) { c.ZKExtendedTypes = true })
	c, _ := connectZK(t, []string{s.ZKAddr()}, 10*time.Second, nil)
	mustS := must[string](t)
	mustStat := must[*zk.Stat](t)

	// create, every mode
	if p := mustS(c.Create("/a", []byte("1"), 0, worldAll)); p != "/a" {
		t.Fatalf("create: %q", p)
	}
	_, err := c.Create("/a", nil, 0, worldAll)
	wantErr(t, "create existing", err, zk.ErrNodeExists)
	_, err = c.Create("/missing/x", nil, 0, worldAll)
	wantErr(t, "create without parent", err, zk.ErrNoNode)
	for i := 0; i < 3; i++ {
		want := fmt.Sprintf("/a/s-%010d", i)
		if p := mustS(c.Create("/a/s-", nil, zk.FlagSequence, worldAll)); p != want {
			t.Fatalf("sequential %d: %q, want %q", i, p, want)
		}
	}
	e := mustS(c.Create("/a/e", []byte("eph"), zk.FlagEphemeral, worldAll))
	_, err = c.Create(e+"/child", nil, 0, worldAll)
	wantErr(t, "child of an ephemeral", err, zk.ErrNoChildrenForEphemerals)
	if p := mustS(c.Create("/a/es-", nil, zk.FlagEphemeral|zk.FlagSequence, worldAll)); p != "/a/es-0000000004" {
		t.Fatalf("ephemeral sequential: %q (the parent's cversion counts every child)", p)
	}
	if p := mustS(c.CreateContainer("/cont", nil, zk.FlagContainer, worldAll)); p != "/cont" {
		t.Fatalf("container: %q", p)
	}
	if p := mustS(c.CreateTTL("/ttl", nil, zk.FlagTTL, worldAll, time.Hour)); p != "/ttl" {
		t.Fatalf("ttl: %q", p)
	}
	if p := mustS(c.CreateTTL("/ttls-", nil, zk.FlagPersistentSequentialWithTTL, worldAll, time.Hour)); p != "/ttls-0000000003" {
		t.Fatalf("sequential ttl: %q", p)
	}
	_, st, err := c.Get(e)
	if err != nil || st.EphemeralOwner != c.SessionID() {
		t.Fatalf("ephemeral owner: %+v %v, session %x", st, err, c.SessionID())
	}

	// get, set, versions
	data, st, err := c.Get("/a")
	if err != nil || string(data) != "1" || st.Version != 0 || st.NumChildren != 5 || st.Cversion != 5 || st.DataLength != 1 {
		t.Fatalf("get /a: %q %+v %v", data, st, err)
	}
	st2 := mustStat(c.Set("/a", []byte("22"), 0))
	if st2.Version != 1 || st2.DataLength != 2 || st2.Czxid != st.Czxid || st2.Mzxid <= st.Mzxid {
		t.Fatalf("set: %+v after %+v", st2, st)
	}
	_, err = c.Set("/a", nil, 0)
	wantErr(t, "set with a stale version", err, zk.ErrBadVersion)
	_, err = c.Set("/nope", nil, -1)
	wantErr(t, "set missing", err, zk.ErrNoNode)
	mustStat(c.Set("/a", []byte("333"), -1))

	// exists, children
	ok, st, err := c.Exists("/a")
	if err != nil || !ok || st.Version != 2 {
		t.Fatalf("exists: %v %+v %v", ok, st, err)
	}
	if ok, st, err := c.Exists("/nope"); err != nil || ok || st.Version != 0 {
		t.Fatalf("exists missing: %v %+v %v", ok, st, err)
	}
	kids, st, err := c.Children("/a")
	sort.Strings(kids)
	wantKids := []string{"e", "es-0000000004", "s-0000000000", "s-0000000001", "s-0000000002"}
	if err != nil || !reflect.DeepEqual(kids, wantKids) || st.NumChildren != 5 {
		t.Fatalf("children: %v %+v %v", kids, st, err)
	}
	_, _, err = c.Children("/nope")
	wantErr(t, "children missing", err, zk.ErrNoNode)
	if kids, _, err := c.Children("/cont"); err != nil || len(kids) != 0 || kids == nil {
		t.Fatalf("children of a leaf: %#v %v", kids, err)
	}

	// delete
	wantErr(t, "delete non-empty", c.Delete("/a", -1), zk.ErrNotEmpty)
	wantErr(t, "delete stale version", c.Delete("/a/s-0000000000", 3), zk.ErrBadVersion)
	wantErr(t, "delete missing", c.Delete("/nope", -1), zk.ErrNoNode)
	if err := c.Delete("/a/s-0000000000", 0); err != nil {
		t.Fatal(err)
	}
	if _, st, _ := c.Exists("/a"); st.NumChildren != 4 || st.Cversion != 6 {
		t.Fatalf("parent after delete: %+v", st)
	}

	// ACLs
	acl, st, err := c.GetACL("/a")
	if err != nil || !reflect.DeepEqual(acl, worldAll) || st.Aversion != 0 {
		t.Fatalf("getACL: %+v %+v %v", acl, st, err)
	}
	readOnly := zk.WorldACL(zk.PermRead)
	_, err = c.SetACL("/a/e", readOnly, 3)
	wantErr(t, "setACL stale aversion", err, zk.ErrBadVersion)
	st = mustStat(c.SetACL("/a/e", readOnly, 0))
	if st.Aversion != 1 {
		t.Fatalf("setACL stat: %+v", st)
	}
	_, err = c.SetACL("/a/e", worldAll, -1)
	wantErr(t, "setACL without ADMIN", err, zk.ErrNoAuth)
	_, err = c.Set("/a/e", []byte("x"), -1)
	wantErr(t, "set without WRITE", err, zk.ErrNoAuth)
	_, err = c.Create("/a/bad-acl", nil, 0, nil)
	wantErr(t, "create with an empty ACL", err, zk.ErrInvalidACL)

	// digest auth
	if err := c.AddAuth("digest", []byte("alice:secret")); err != nil {
		t.Fatal(err)
	}
	mustS(c.Create("/private", []byte("p"), 0, zk.DigestACL(zk.PermAll, "alice", "secret")))
	acl, _, err = c.GetACL("/private")
	if err != nil || len(acl) != 1 || acl[0].Scheme != "digest" || acl[0].ID != zk.DigestACL(zk.PermAll, "alice", "secret")[0].ID {
		t.Fatalf("digest ACL: %+v %v", acl, err)
	}
	mustS(c.Create("/mine", nil, 0, zk.AuthACL(zk.PermAll)))
	acl, _, _ = c.GetACL("/mine")
	if len(acl) != 1 || acl[0].Scheme != "digest" || !strings.HasPrefix(acl[0].ID, "alice:") {
		t.Fatalf("auth ACL became %+v", acl)
	}
	other, _ := connectZK(t, []string{s.ZKAddr()}, 10*time.Second, nil)
	_, _, err = other.Get("/private")
	wantErr(t, "get without auth", err, zk.ErrNoAuth)
	_, err = other.Set("/private", nil, -1)
	wantErr(t, "set without auth", err, zk.ErrNoAuth)
	_, _, err = other.GetACL("/private")
	wantErr(t, "getACL without auth", err, zk.ErrNoAuth)
	if ok, _, err := other.Exists("/private"); err != nil || !ok {
		t.Fatalf("exists needs no permission: %v %v", ok, err)
	}
	if err := other.AddAuth("digest", []byte("alice:wrong")); err != nil {
		t.Fatal(err)
	}
	_, _, err = other.Get("/private")
	wantErr(t, "get with the wrong password", err, zk.ErrNoAuth)
	if err := other.AddAuth("digest", []byte("alice:secret")); err != nil {
		t.Fatal(err)
	}
	if d, _, err := other.Get("/private"); err != nil || string(d) != "p" {
		t.Fatalf("get with auth: %q %v", d, err)
	}

	// sync
	if p, err := c.Sync("/a"); err != nil || p != "/a" {
		t.Fatalf("sync: %q %v", p, err)
	}

	// multi: success
	res, err := c.Multi(
		&zk.CreateRequest{Path: "/m", Data: []byte("m"), Acl: worldAll},
		&zk.CreateRequest{Path: "/m/q-", Acl: worldAll, Flags: zk.FlagSequence},
		&zk.SetDataRequest{Path: "/m", Data: []byte("mm"), Version: 0},
		&zk.CheckVersionRequest{Path: "/m", Version: 1},
		&zk.DeleteRequest{Path: "/ttl", Version: -1},
	)
	if err != nil || len(res) != 5 || res[0].String != "/m" || res[1].String != "/m/q-0000000000" || res[2].Stat == nil || res[2].Stat.Version != 1 {
		t.Fatalf("multi: %+v %v", res, err)
	}
	for i, r := range res {
		if r.Error != nil {
			t.Fatalf("multi result %d: %v", i, r.Error)
		}
	}
	// multi: the third op fails, nothing happens, every result says why
	res, err = c.Multi(
		&zk.CreateRequest{Path: "/r1", Acl: worldAll},
		&zk.SetDataRequest{Path: "/m", Data: []byte("x"), Version: -1},
		&zk.CheckVersionRequest{Path: "/m", Version: 7},
		&zk.DeleteRequest{Path: "/m/q-0000000000", Version: -1},
	)
	if len(res) != 4 {
		t.Fatalf("failed multi: %+v %v", res, err)
	}
	wantRes := []error{nil, nil, zk.ErrBadVersion, nil}
	// ZooKeeper reports ZOK for the ops before the failing one and
	// RUNTIMEINCONSISTENCY (-2, which go-zookeeper has no name for) after it.
	for i, r := range res {
		want := wantRes[i]
		if i == 3 && (r.Error == nil || !strings.Contains(r.Error.Error(), "-2")) || i < 3 && !errors.Is(r.Error, want) {
			t.Fatalf("failed multi result %d: %v, want %v (all %+v)", i, r.Error, want, res)
		}
	}
	if ok, _, _ := c.Exists("/r1"); ok {
		t.Fatal("the failed multi created /r1")
	}
	if d, st, _ := c.Get("/m"); string(d) != "mm" || st.Version != 1 {
		t.Fatalf("the failed multi changed /m: %q %+v", d, st)
	}
}

// TestGoZKWatches: data, child and exist watches fire once, with the right type, before
// the client can read the change that fired them.
func TestGoZKWatches(t *testing.T) {
	s := startNode(t, nil)
	c, _ := connectZK(t, []string{s.ZKAddr()}, 10*time.Second, nil)
	w, _ := connectZK(t, []string{s.ZKAddr()}, 10*time.Second, nil)
	mustS := must[string](t)
	mustStat := must[*zk.Stat](t)

	mustS(c.Create("/w", []byte("0"), 0, worldAll))

	// data watch: one-shot
	_, _, dataCh, err := w.GetW("/w")
	if err != nil {
		t.Fatal(err)
	}
	mustStat(c.Set("/w", []byte("1"), -1))
	// The notification precedes every reply sent after the change: once w reads the
	// new data, the event is already delivered.
	if d, _, _ := w.Get("/w"); string(d) != "1" {
		t.Fatalf("get: %q", d)
	}
	select {
	case ev := <-dataCh:
		if ev.Type != zk.EventNodeDataChanged || ev.Path != "/w" {
			t.Fatalf("data watch: %+v", ev)
		}
	default:
		t.Fatal("the data watch's event came after the read that saw the change")
	}
	mustStat(c.Set("/w", []byte("2"), -1))
	w.Sync("/w")
	noEvent(t, dataCh)

	// exist watch on a missing node
	ok, _, existCh, err := w.ExistsW("/w/new")
	if err != nil || ok {
		t.Fatal(ok, err)
	}
	// child watch
	_, _, childCh, err := w.ChildrenW("/w")
	if err != nil {
		t.Fatal(err)
	}
	mustS(c.Create("/w/new", nil, 0, worldAll))
	if ev := nextEvent(t, existCh); ev.Type != zk.EventNodeCreated || ev.Path != "/w/new" {
		t.Fatalf("exist watch: %+v", ev)
	}
	if ev := nextEvent(t, childCh); ev.Type != zk.EventNodeChildrenChanged || ev.Path != "/w" {
		t.Fatalf("child watch: %+v", ev)
	}

	// deletion fires the data and the child watches of the node, and the parent's
	// child watch
	_, _, d1, _ := w.GetW("/w/new")
	_, _, d2, _ := w.ChildrenW("/w/new")
	_, _, pc, _ := w.ChildrenW("/w")
	if err := c.Delete("/w/new", -1); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []<-chan zk.Event{d1, d2} {
		if ev := nextEvent(t, ch); ev.Type != zk.EventNodeDeleted || ev.Path != "/w/new" {
			t.Fatalf("delete: %+v", ev)
		}
	}
	if ev := nextEvent(t, pc); ev.Type != zk.EventNodeChildrenChanged || ev.Path != "/w" {
		t.Fatalf("parent: %+v", ev)
	}
	// a data change does not fire a child watch
	_, _, cc, _ := w.ChildrenW("/w")
	mustStat(c.Set("/w", nil, -1))
	w.Sync("/")
	noEvent(t, cc)
	// an exist watch on an existing node is a data watch
	_, _, ew, _ := w.ExistsW("/w")
	mustStat(c.Set("/w", []byte("x"), -1))
	if ev := nextEvent(t, ew); ev.Type != zk.EventNodeDataChanged {
		t.Fatalf("exists on a node: %+v", ev)
	}
}

// TestRawOps covers what go-zookeeper cannot send: create2, addWatch (persistent and
// recursive), getEphemerals, getAllChildrenNumber, whoAmI, checkWatches, removeWatches
// and multiRead.
func TestRawOps(t *testing.T) {
	s := startNode(t, nil)
	r := dialRaw(t, s.ZKAddr(), 0, nil)
	other := dialRaw(t, s.ZKAddr(), 0, nil)

	var cr zkproto.Create2Response
	h := r.call(kvstore.ZKOpCreate2, &zkproto.CreateRequest{Path: "/p", Data: []byte("d"), ACL: openACL}, &cr)
	if h.Err != 0 || cr.Path != "/p" || cr.Stat.DataLength != 1 || cr.Stat.Czxid != h.Zxid || cr.Stat.Pzxid != h.Zxid {
		t.Fatalf("create2: %+v %+v", h, cr)
	}

	var ew zkproto.ErrorResponse
	if h := r.call(kvstore.ZKOpAddWatch, &zkproto.AddWatchRequest{Path: "/p", Mode: 0}, &ew); h.Err != 0 {
		t.Fatalf("addWatch persistent: %+v", h)
	}
	if h := r.call(kvstore.ZKOpAddWatch, &zkproto.AddWatchRequest{Path: "/", Mode: 1}, &ew); h.Err != 0 {
		t.Fatalf("addWatch recursive: %+v", h)
	}
	other.call(kvstore.ZKOpSetData, &zkproto.SetDataRequest{Path: "/p", Data: nil, Version: -1}, &zkproto.StatResponse{})
	other.call(kvstore.ZKOpCreate, &zkproto.CreateRequest{Path: "/p/c", ACL: openACL}, &zkproto.CreateResponse{})
	other.call(kvstore.ZKOpSetData, &zkproto.SetDataRequest{Path: "/p/c", Data: []byte("z"), Version: -1}, &zkproto.StatResponse{})
	other.call(kvstore.ZKOpDelete, &zkproto.DeleteRequest{Path: "/p/c", Version: -1}, nil)
	other.call(kvstore.ZKOpSetData, &zkproto.SetDataRequest{Path: "/p", Data: nil, Version: -1}, &zkproto.StatResponse{})
	// The persistent watch on /p sees its data change and its children change; the
	// recursive one on / sees every change below but no children changed; one
	// notification per event and connection.
	want := []zkproto.WatcherEvent{
		{Type: kvstore.ZKEventNodeDataChanged, Path: "/p"},
		{Type: kvstore.ZKEventNodeCreated, Path: "/p/c"},
		{Type: kvstore.ZKEventNodeChildrenChanged, Path: "/p"},
		{Type: kvstore.ZKEventNodeDataChanged, Path: "/p/c"},
		{Type: kvstore.ZKEventNodeDeleted, Path: "/p/c"},
		{Type: kvstore.ZKEventNodeChildrenChanged, Path: "/p"},
		{Type: kvstore.ZKEventNodeDataChanged, Path: "/p"},
	}
	for i, w := range want {
		ev := r.event(t)
		if ev.Type != w.Type || ev.Path != w.Path || ev.State != 3 {
			t.Fatalf("persistent/recursive event %d: %+v, want %+v", i, ev, w)
		}
	}
	r.call(kvstore.ZKOpSync, &zkproto.SyncRequest{Path: "/"}, &zkproto.SyncResponse{})
	if len(r.events) != 0 {
		t.Fatalf("extra events: %+v", r.events)
	}

	// checkWatches / removeWatches
	if h := r.call(kvstore.ZKOpCheckWatches, &zkproto.CheckWatchesRequest{Path: "/p", Type: 3}, nil); h.Err != 0 {
		t.Fatalf("checkWatches: %+v", h)
	}
	if h := r.call(kvstore.ZKOpCheckWatches, &zkproto.CheckWatchesRequest{Path: "/nope", Type: 3}, nil); h.Err != kvstore.ZNoWatcher {
		t.Fatalf("checkWatches on nothing: %+v", h)
	}
	if h := r.call(kvstore.ZKOpRemoveWatches, &zkproto.RemoveWatchesRequest{Path: "/p", Type: 3}, nil); h.Err != 0 {
		t.Fatalf("removeWatches: %+v", h)
	}

	// ephemerals and counts
	r.call(kvstore.ZKOpCreate, &zkproto.CreateRequest{Path: "/p/e1", ACL: openACL, Flags: kvstore.ZKEphemeral}, &zkproto.CreateResponse{})
	r.call(kvstore.ZKOpCreate, &zkproto.CreateRequest{Path: "/e2", ACL: openACL, Flags: kvstore.ZKEphemeral}, &zkproto.CreateResponse{})
	other.call(kvstore.ZKOpCreate, &zkproto.CreateRequest{Path: "/p/o", ACL: openACL, Flags: kvstore.ZKEphemeral}, &zkproto.CreateResponse{})
	var ge zkproto.GetEphemeralsResponse
	if h := r.call(kvstore.ZKOpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: "/p"}, &ge); h.Err != 0 || !reflect.DeepEqual(ge.Ephemerals, []string{"/p/e1"}) {
		t.Fatalf("getEphemerals /p: %+v %+v", h, ge)
	}
	r.call(kvstore.ZKOpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: "/"}, &ge)
	sort.Strings(ge.Ephemerals)
	if !reflect.DeepEqual(ge.Ephemerals, []string{"/e2", "/p/e1"}) {
		t.Fatalf("getEphemerals /: %+v", ge)
	}
	var gn zkproto.GetAllChildrenNumberResponse
	if h := r.call(kvstore.ZKOpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: "/p"}, &gn); h.Err != 0 || gn.TotalNumber != 2 {
		t.Fatalf("getAllChildrenNumber: %+v %+v", h, gn)
	}
	if h := r.call(kvstore.ZKOpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: "/nope"}, &gn); h.Err != kvstore.ZNoNode {
		t.Fatalf("getAllChildrenNumber missing: %+v", h)
	}

	// whoAmI
	var who zkproto.WhoAmIResponse
	r.call(kvstore.ZKOpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("bob:pw")}, nil)
	if h := r.call(kvstore.ZKOpWhoAmI, nil, &who); h.Err != 0 || len(who.ClientInfo) != 2 ||
		who.ClientInfo[0] != (zkproto.ClientInfo{AuthScheme: "ip", User: "127.0.0.1"}) ||
		who.ClientInfo[1] != (zkproto.ClientInfo{AuthScheme: "digest", User: "bob"}) {
		t.Fatalf("whoAmI: %+v %+v", h, who)
	}

	// multiRead
	var mr zkproto.MultiResponse
	h = r.call(kvstore.ZKOpMultiRead, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
		{Type: kvstore.ZKOpGetData, Body: &zkproto.GetDataRequest{Path: "/p"}},
		{Type: kvstore.ZKOpGetChildren, Body: &zkproto.GetChildrenRequest{Path: "/p"}},
		{Type: kvstore.ZKOpGetData, Body: &zkproto.GetDataRequest{Path: "/nope"}},
	}}, &mr)
	if h.Err != 0 || len(mr.Results) != 3 || mr.Results[0].Type != kvstore.ZKOpGetData ||
		len(mr.Results[1].Children) != 2 || mr.Results[2].Err != kvstore.ZNoNode {
		t.Fatalf("multiRead: %+v %+v", h, mr)
	}

	// addWatch with a bad mode
	if h := r.call(kvstore.ZKOpAddWatch, &zkproto.AddWatchRequest{Path: "/p", Mode: 7}, &ew); h.Err == 0 {
		t.Fatalf("addWatch mode 7: %+v", h)
	}
}

// TestSessionExpiry: a client that vanishes without closeSession loses its session
// after the timeout; its ephemerals go, watchers hear it, and the client, back, is told
// its session expired.
func TestSessionExpiry(t *testing.T) {
	start := time.Now()
	s := startNode(t, func(c *server.Config) { c.ZKTickTime = 50 * time.Millisecond })
	var cut cutDialer
	c, events := connectZK(t, []string{s.ZKAddr()}, 500*time.Millisecond, cut.dial)
	if _, err := c.Create("/eph", nil, zk.FlagEphemeral, worldAll); err != nil {
		t.Fatal(err)
	}
	w, _ := connectZK(t, []string{s.ZKAddr()}, 10*time.Second, nil)
	ok, _, ch, err := w.ExistsW("/eph")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	cut.cut() // the client's link dies; it cannot reconnect
	if ev := nextEvent(t, ch); ev.Type != zk.EventNodeDeleted || ev.Path != "/eph" {
		t.Fatalf("event: %+v", ev)
	}
	cut.restore()
	deadline := time.After(waitFor)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateExpired {
				t.Logf("session expired and reported in %v", time.Since(start))
				return
			}
		case <-deadline:
			t.Fatalf("the client was not told its session expired (state %v)", c.State())
		}
	}
}

// cutDialer dials normally until cut: then it closes the connections it made and refuses
// new ones until restore.
type cutDialer struct {
	mu    sync.Mutex
	down  bool
	conns []net.Conn
}

func (d *cutDialer) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.down {
		return nil, errors.New("cut")
	}
	nc, err := net.DialTimeout(network, addr, timeout)
	if err == nil {
		d.conns = append(d.conns, nc)
	}
	return nc, err
}

func (d *cutDialer) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = true
	for _, c := range d.conns {
		c.Close()
	}
}

func (d *cutDialer) restore() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = false
}

// TestClusterForwardsAndMovesSessions: writes through a follower reach every member; a
// client whose member goes away resumes its session on another, its watches set again
// with setWatches and fired by a change made through a third member.
func TestClusterForwardsAndMovesSessions(t *testing.T) {
	members := startZKCluster(t, 3, func(c *server.Config) { c.ZKFourLetterWords = []string{"srvr", "wchs"} })
	lead := leaderIndex(t, members)
	a, b := (lead+1)%3, (lead+2)%3 // two followers; the leader is C
	cAddr := members[lead].ZKAddr()

	cl, events := connectZK(t, []string{members[a].ZKAddr(), members[b].ZKAddr()}, 10*time.Second, nil)
	if cl.Server() != members[a].ZKAddr() {
		t.Fatalf("connected to %s, want %s", cl.Server(), members[a].ZKAddr())
	}
	if _, err := cl.Create("/f", []byte("via follower"), 0, worldAll); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Create("/f/eph", nil, zk.FlagEphemeral, worldAll); err != nil {
		t.Fatal(err)
	}
	if d, _, err := cl.Get("/f"); err != nil || string(d) != "via follower" {
		t.Fatalf("read your write on the follower: %q %v", d, err)
	}
	for i, m := range members {
		r, _ := connectZK(t, []string{m.ZKAddr()}, 10*time.Second, nil)
		if _, err := r.Sync("/f"); err != nil {
			t.Fatal(err)
		}
		if d, st, err := r.Get("/f"); err != nil || string(d) != "via follower" || st.NumChildren != 1 {
			t.Fatalf("member %d: %q %+v %v", i, d, st, err)
		}
		r.Close()
	}

	_, _, dataCh, err := cl.GetW("/f")
	if err != nil {
		t.Fatal(err)
	}
	_, _, childCh, err := cl.ChildrenW("/f")
	if err != nil {
		t.Fatal(err)
	}
	_, _, existCh, err := cl.ExistsW("/later")
	if err != nil {
		t.Fatal(err)
	}

	members[a].Close()
	// go-zookeeper reconnects to b with its session and sends setWatches.
	deadline := time.After(waitFor)
	for reconnected := false; !reconnected; {
		select {
		case ev := <-events:
			if ev.State == zk.StateExpired {
				t.Fatal("the session expired while moving")
			}
			reconnected = ev.State == zk.StateHasSession && cl.Server() == members[b].ZKAddr()
		case <-deadline:
			t.Fatalf("no reconnect to %s (state %v, server %s)", members[b].ZKAddr(), cl.State(), cl.Server())
		}
	}
	// go-zookeeper reports the session before it sends setWatches, and it reads the
	// zxid for them unsynchronised with the reply reader (go-zookeeper/zk#35, open): a
	// request now would race with it under -race. Wait until b holds the three watches.
	for until := time.Now().Add(waitFor); !strings.Contains(fourLetter(members[b].ZKAddr(), "wchs"), "Total watches:3\n"); {
		if time.Now().After(until) {
			t.Fatalf("b never held the moved watches: %q", fourLetter(members[b].ZKAddr(), "wchs"))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if ok, _, err := cl.Exists("/f/eph"); err != nil || !ok {
		t.Fatalf("the ephemeral did not survive the move: %v %v", ok, err)
	}

	other, _ := connectZK(t, []string{cAddr}, 10*time.Second, nil)
	if _, err := other.Set("/f", []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create("/f/kid", nil, 0, worldAll); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create("/later", nil, 0, worldAll); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, dataCh); ev.Type != zk.EventNodeDataChanged || ev.Path != "/f" {
		t.Fatalf("data watch after the move: %+v", ev)
	}
	if ev := nextEvent(t, childCh); ev.Type != zk.EventNodeChildrenChanged || ev.Path != "/f" {
		t.Fatalf("child watch after the move: %+v", ev)
	}
	if ev := nextEvent(t, existCh); ev.Type != zk.EventNodeCreated || ev.Path != "/later" {
		t.Fatalf("exist watch after the move: %+v", ev)
	}
	// closing the session removes its ephemeral everywhere
	cl.Close()
	deadline = time.After(waitFor)
	for {
		ok, _, err := other.Exists("/f/eph")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		select {
		case <-deadline:
			t.Fatal("the ephemeral outlived its closed session")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

var openACL = []kvstore.ZKACL{{Perms: kvstore.ZKPermAll, Scheme: "world", ID: "anyone"}}

// rawClient is a synchronous ZooKeeper client on the zkproto codec: one request at a
// time; notifications that arrive meanwhile are kept in events.
type rawClient struct {
	t       *testing.T
	nc      net.Conn
	buf     []byte
	xid     int32
	sess    int64
	timeout int32
	events  []zkproto.WatcherEvent
}

// dialRaw opens a session (or resumes sess with passwd).
func dialRaw(t *testing.T, addr string, sess int64, passwd []byte) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if passwd == nil {
		passwd = make([]byte, 16)
	}
	c := &rawClient{t: t, nc: nc}
	req := zkproto.ConnectRequest{TimeOut: 10000, SessionID: sess, Passwd: passwd}
	if _, err := nc.Write(zkproto.AppendFrame(nil, req.Append)); err != nil {
		t.Fatal(err)
	}
	var resp zkproto.ConnectResponse
	if err := zkproto.DecodeRecord(c.frame(), &resp); err != nil {
		t.Fatal(err)
	}
	c.sess, c.timeout = resp.SessionID, resp.TimeOut
	return c
}

// frame reads one frame's payload.
func (c *rawClient) frame() []byte {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(waitFor))
	for {
		payload, n, err := zkproto.ParseFrame(c.buf, 64<<20)
		if err == nil {
			out := append([]byte(nil), payload...)
			c.buf = c.buf[n:]
			return out
		}
		if !errors.Is(err, zkproto.ErrIncomplete) {
			c.t.Fatal(err)
		}
		tmp := make([]byte, 64<<10)
		n, err = c.nc.Read(tmp)
		if n == 0 && err != nil {
			c.t.Fatalf("read: %v", err)
		}
		c.buf = append(c.buf, tmp[:n]...)
	}
}

// call sends one request and returns its reply's header, decoding the body into resp.
func (c *rawClient) call(op int32, req, resp zkproto.Record) zkproto.ReplyHeader {
	c.t.Helper()
	c.xid++
	if _, err := c.nc.Write(zkproto.AppendRequest(nil, zkproto.RequestHeader{Xid: c.xid, Type: op}, req)); err != nil {
		c.t.Fatal(err)
	}
	for {
		payload := c.frame()
		var ev zkproto.WatcherEvent
		h, err := zkproto.ParseReply(payload, nil)
		if err != nil {
			c.t.Fatal(err)
		}
		if h.Xid == zkproto.XidNotification {
			if _, err := zkproto.ParseReply(payload, &ev); err != nil {
				c.t.Fatal(err)
			}
			c.events = append(c.events, ev)
			continue
		}
		if h.Xid != c.xid {
			c.t.Fatalf("reply xid %d to request %d", h.Xid, c.xid)
		}
		if resp != nil {
			if _, err := zkproto.ParseReply(payload, resp); err != nil {
				c.t.Fatalf("op %d: %v", op, err)
			}
		}
		return h
	}
}

// event returns the next notification, waiting for one if none is kept.
func (c *rawClient) event(t *testing.T) zkproto.WatcherEvent {
	t.Helper()
	for len(c.events) == 0 {
		payload := c.frame()
		var ev zkproto.WatcherEvent
		h, err := zkproto.ParseReply(payload, &ev)
		if err != nil || h.Xid != zkproto.XidNotification {
			t.Fatalf("waiting for an event, got %+v %v", h, err)
		}
		c.events = append(c.events, ev)
	}
	ev := c.events[0]
	c.events = c.events[1:]
	return ev
}

// TestBadRequestsBehindWrites: requests ZooKeeper refuses, pipelined behind a write,
// are answered in order after it, and the write lands. A body that does not decode gets
// ZMarshallingError and the connection goes on; an unknown opcode gets ZUnimplemented
// and the connection closes (ZooKeeper 3.8's FinalRequestProcessor and
// UnimplementedRequestProcessor).
func TestBadRequestsBehindWrites(t *testing.T) {
	s := startNode(t, nil)
	r := dialRaw(t, s.ZKAddr(), 0, nil)
	if h := r.call(kvstore.ZKOpCreate, &zkproto.CreateRequest{Path: "/b", ACL: openACL}, &zkproto.CreateResponse{}); h.Err != 0 {
		t.Fatalf("create: %+v", h)
	}
	var b []byte
	b = zkproto.AppendRequest(b, zkproto.RequestHeader{Xid: 11, Type: kvstore.ZKOpSetData},
		&zkproto.SetDataRequest{Path: "/b", Data: []byte("new"), Version: -1})
	// a setData whose body is only a path: it does not decode
	b = zkproto.AppendRequest(b, zkproto.RequestHeader{Xid: 12, Type: kvstore.ZKOpSetData}, &zkproto.SyncRequest{Path: "/b"})
	b = zkproto.AppendRequest(b, zkproto.RequestHeader{Xid: 13, Type: kvstore.ZKOpGetData}, &zkproto.GetDataRequest{Path: "/b"})
	b = zkproto.AppendRequest(b, zkproto.RequestHeader{Xid: 14, Type: 999}, nil)
	if _, err := r.nc.Write(b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct{ xid, err int32 }{{11, 0}, {12, kvstore.ZMarshallingError}, {13, 0}, {14, kvstore.ZUnimplemented}} {
		var gd zkproto.GetDataResponse
		var body zkproto.Record
		if want.xid == 13 {
			body = &gd
		}
		h, err := zkproto.ParseReply(r.frame(), body)
		if err != nil || h.Xid != want.xid || h.Err != want.err {
			t.Fatalf("reply %+v %v, want xid %d err %d", h, err, want.xid, want.err)
		}
		if want.xid == 13 && string(gd.Data) != "new" {
			t.Fatalf("getData behind the write read %q", gd.Data)
		}
	}
	r.nc.SetReadDeadline(time.Now().Add(waitFor))
	if n, err := r.nc.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read %d bytes after the unknown opcode, want the connection closed", n)
	}
}
