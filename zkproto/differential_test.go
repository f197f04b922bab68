package zkproto_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nanokv/nanokv/internal/testnet"
	"github.com/nanokv/nanokv/internal/testtool"
	"github.com/nanokv/nanokv/kvstore"
	"github.com/nanokv/nanokv/server"
	"github.com/nanokv/nanokv/zkproto"
)

// The differential test: one op sequence, generated from a seed, goes to a real
// ZooKeeper 3.8 (Debian's package, started here) and to a nanokv node; every reply must
// be equal, Stat fields included, except what differs by nature: ctime/mtime, session
// ids (ephemeralOwner, mapped by order of first appearance) and zxids, which are
// compared by order of first appearance in each system's own sequence (ZooKeeper's carry
// the epoch in the high 32 bits).

const zkJar = "/usr/share/java/zookeeper.jar"

// startRealZooKeeper starts a standalone ZooKeeper 3.8, with TTL nodes enabled when
// extended, and returns its client address; the JVM and its process group are killed
// at cleanup.
func startRealZooKeeper(t *testing.T, extended bool) string {
	t.Helper()
	java, err := exec.LookPath("java")
	_, jarErr := os.Stat(zkJar)
	testtool.Require(t, err == nil && jarErr == nil, "java or "+zkJar)
	dir := t.TempDir()
	port := testnet.FreePort(t)
	// forceSync=no and a small preAllocSize (KB), as the bench's ZooKeeper: the test
	// compares replies, not durability, and with an fsync per transaction (the first one
	// also preallocating 64 MB of log) a CI machine busy with other packages' tests once
	// kept a session from being created for 10 s.
	cfg := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"+
		"admin.enableServer=false\n4lw.commands.whitelist=*\nmaxClientCnxns=0\nforceSync=no\npreAllocSize=1024\n",
		filepath.Join(dir, "data"), port)
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "zookeeper.log"))
	if err != nil {
		t.Fatal(err)
	}
	// The jar's manifest names every other jar it needs (Class-Path).
	cmd := exec.Command(java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.extendedTypesEnabled="+strconv.FormatBool(extended), "-Dzookeeper.admin.enableServer=false",
		"-cp", zkJar, "org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		logf.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logf.Name())
			t.Logf("ZooKeeper's log:\n%s", out)
		}
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(60 * time.Second)
	for {
		if fourLetter(addr, "ruok") == "imok" {
			return addr
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logf.Name())
			t.Fatalf("ZooKeeper did not answer ruok on %s:\n%s", addr, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func fourLetter(addr, word string) string {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return ""
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(2 * time.Second))
	nc.Write([]byte(word))
	var buf bytes.Buffer
	buf.ReadFrom(nc)
	return buf.String()
}

// diffTarget is one system under the differential test: a go-zookeeper session, a raw
// session for what go-zookeeper cannot send, and the normalisation of zxids and session
// ids by order of first appearance.
type diffTarget struct {
	name  string
	c     *zk.Conn
	raw   *rawClient
	zxids map[int64]int
	sess  map[int64]int
}

func newDiffTarget(t *testing.T, name, addr string) *diffTarget {
	t.Logf("connecting to %s at %s", name, addr) // shown if the session is not made
	c, _ := connectZK(t, []string{addr}, 10*time.Second, nil)
	d := &diffTarget{name: name, c: c, raw: dialRaw(t, addr, 0, nil), zxids: map[int64]int{}, sess: map[int64]int{}}
	// The two sessions' ids come first, in a fixed order.
	d.sid(c.SessionID())
	d.sid(d.raw.sess)
	return d
}

func (d *diffTarget) zx(z int64) string {
	if z == 0 {
		return "0"
	}
	n, ok := d.zxids[z]
	if !ok {
		n = len(d.zxids) + 1
		d.zxids[z] = n
	}
	return "z" + strconv.Itoa(n)
}

func (d *diffTarget) sid(s int64) string {
	if s == 0 {
		return "0"
	}
	n, ok := d.sess[s]
	if !ok {
		n = len(d.sess) + 1
		d.sess[s] = n
	}
	return "s" + strconv.Itoa(n)
}

func (d *diffTarget) stat(s *zk.Stat) string {
	if s == nil {
		return "nil"
	}
	return fmt.Sprintf("{cz=%s mz=%s pz=%s v=%d cv=%d av=%d eo=%s dl=%d nc=%d}", d.zx(s.Czxid), d.zx(s.Mzxid), d.zx(s.Pzxid),
		s.Version, s.Cversion, s.Aversion, d.sid(s.EphemeralOwner), s.DataLength, s.NumChildren)
}

func (d *diffTarget) kstat(s kvstore.ZKStat) string {
	return d.stat(&zk.Stat{Czxid: s.Czxid, Mzxid: s.Mzxid, Pzxid: s.Pzxid, Version: s.Version, Cversion: s.Cversion,
		Aversion: s.Aversion, EphemeralOwner: s.EphemeralOwner, DataLength: s.DataLength, NumChildren: s.NumChildren})
}

func errStr(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func dataStr(b []byte) string {
	if b == nil {
		return "null"
	}
	return strconv.Quote(string(b))
}

// diffOp is one generated operation: run performs it on a target and renders the reply.
type diffOp struct {
	desc string
	run  func(d *diffTarget) string
}

// diffGen generates the op sequence over a small path universe, so that collisions
// (NodeExists, NoNode, NotEmpty, BadVersion) are frequent.
type diffGen struct {
	r *rand.Rand
}

func (g *diffGen) path() string {
	p := fmt.Sprintf("/d%d", g.r.Intn(3))
	if g.r.Intn(5) > 0 {
		p += fmt.Sprintf("/n%d", g.r.Intn(4))
		if g.r.Intn(3) == 0 {
			p += fmt.Sprintf("/m%d", g.r.Intn(2))
		}
	}
	return p
}

// parent is a path that may get children (the m level never does, so that the
// containers kept there are never due for reaping, whose timing differs).
func (g *diffGen) parent() string {
	if g.r.Intn(3) == 0 {
		return fmt.Sprintf("/d%d", g.r.Intn(3))
	}
	return fmt.Sprintf("/d%d/n%d", g.r.Intn(3), g.r.Intn(4))
}

func (g *diffGen) data() []byte {
	switch g.r.Intn(4) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	return []byte(fmt.Sprintf("v%d", g.r.Intn(1000)))
}

func (g *diffGen) version() int32 { return int32(g.r.Intn(4)) - 1 }

var diffACLs = [][]zk.ACL{
	zk.WorldACL(zk.PermAll),
	zk.WorldACL(zk.PermRead | zk.PermWrite | zk.PermCreate | zk.PermDelete),
	zk.WorldACL(zk.PermAll &^ zk.PermDelete),
	append(zk.WorldACL(zk.PermRead), zk.DigestACL(zk.PermAll, "u", "p")...),
	{},
}

func (g *diffGen) op() diffOp {
	switch k := g.r.Intn(100); {
	case k < 22:
		return g.create()
	case k < 34:
		p, data, v := g.path(), g.data(), g.version()
		return diffOp{fmt.Sprintf("set %s %q %d", p, data, v), func(d *diffTarget) string {
			st, err := d.c.Set(p, data, v)
			return errStr(err) + " " + d.stat(st)
		}}
	case k < 44:
		p, v := g.path(), g.version()
		return diffOp{fmt.Sprintf("delete %s %d", p, v), func(d *diffTarget) string { return errStr(d.c.Delete(p, v)) }}
	case k < 50:
		p := g.path()
		return diffOp{"exists " + p, func(d *diffTarget) string {
			ok, st, err := d.c.Exists(p)
			return fmt.Sprintf("%v %s %s", ok, errStr(err), d.stat(st))
		}}
	case k < 56:
		p := g.path()
		return diffOp{"get " + p, func(d *diffTarget) string {
			b, st, err := d.c.Get(p)
			return fmt.Sprintf("%s %s %s", errStr(err), dataStr(b), d.stat(st))
		}}
	case k < 62:
		p := g.path()
		return diffOp{"children " + p, func(d *diffTarget) string {
			kids, st, err := d.c.Children(p)
			sort.Strings(kids)
			return fmt.Sprintf("%s %q %s", errStr(err), kids, d.stat(st))
		}}
	case k < 65:
		p := g.path()
		return diffOp{"getACL " + p, func(d *diffTarget) string {
			acl, st, err := d.c.GetACL(p)
			return fmt.Sprintf("%s %+v %s", errStr(err), acl, d.stat(st))
		}}
	case k < 69:
		p, v, acl := g.path(), g.version(), diffACLs[g.r.Intn(len(diffACLs))]
		return diffOp{fmt.Sprintf("setACL %s %+v %d", p, acl, v), func(d *diffTarget) string {
			st, err := d.c.SetACL(p, acl, v)
			return errStr(err) + " " + d.stat(st)
		}}
	case k < 82:
		return g.multi()
	case k < 85:
		p := g.path()
		return diffOp{"sync " + p, func(d *diffTarget) string {
			got, err := d.c.Sync(p)
			return errStr(err) + " " + got
		}}
	case k < 89:
		p := g.path()
		return diffOp{"getAllChildrenNumber " + p, func(d *diffTarget) string {
			var r zkproto.GetAllChildrenNumberResponse
			h := d.raw.call(kvstore.ZKOpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: p}, &r)
			return fmt.Sprintf("%d %d", h.Err, r.TotalNumber)
		}}
	case k < 92:
		prefix := []string{"/", "/d0", "/d1/n1", "/d2/"}[g.r.Intn(4)]
		return diffOp{"getEphemerals " + prefix, func(d *diffTarget) string {
			var r zkproto.GetEphemeralsResponse
			h := d.raw.call(kvstore.ZKOpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: prefix}, &r)
			sort.Strings(r.Ephemerals)
			return fmt.Sprintf("%d %q", h.Err, r.Ephemerals)
		}}
	case k < 96:
		p, p2 := g.path(), g.path()
		return diffOp{fmt.Sprintf("multiRead %s %s", p, p2), func(d *diffTarget) string {
			var r zkproto.MultiResponse
			h := d.raw.call(kvstore.ZKOpMultiRead, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
				{Type: kvstore.ZKOpGetData, Body: &zkproto.GetDataRequest{Path: p}},
				{Type: kvstore.ZKOpGetChildren, Body: &zkproto.GetChildrenRequest{Path: p2}},
			}}, &r)
			out := fmt.Sprintf("%d", h.Err)
			for _, res := range r.Results {
				kids := append([]string(nil), res.Children...)
				sort.Strings(kids)
				out += fmt.Sprintf(" [%d %d %s %q", res.Type, res.Err, dataStr(res.Data), kids)
				if res.Type == kvstore.ZKOpGetData {
					out += " " + d.kstat(res.Stat)
				}
				out += "]"
			}
			return out
		}}
	default:
		p := g.path()
		return diffOp{"getChildren(raw) " + p, func(d *diffTarget) string {
			var r zkproto.GetChildrenResponse
			h := d.raw.call(kvstore.ZKOpGetChildren, &zkproto.GetChildrenRequest{Path: p}, &r)
			sort.Strings(r.Children)
			return fmt.Sprintf("%d %q nil=%v", h.Err, r.Children, r.Children == nil)
		}}
	}
}

var modeNames = map[int32]string{0: "persistent", 1: "ephemeral", 2: "sequential", 3: "ephemeral-sequential",
	4: "container", 5: "ttl", 6: "ttl-sequential"}

func (g *diffGen) create() diffOp {
	mode := int32(g.r.Intn(7))
	p := g.path()
	if mode == zk.FlagSequence || mode == zk.FlagEphemeralSequential || mode == zk.FlagPersistentSequentialWithTTL {
		p = g.parent() + "/s-"
		if g.r.Intn(4) == 0 {
			p = g.parent() + "/" // an empty sequential name
		}
	}
	if mode == zk.FlagContainer {
		p = fmt.Sprintf("/d%d/n%d/m%d", g.r.Intn(3), g.r.Intn(4), g.r.Intn(2))
	}
	data, acl := g.data(), diffACLs[g.r.Intn(len(diffACLs)-1)]
	raw := g.r.Intn(3) == 0 // create2 from the raw session, with its Stat
	desc := fmt.Sprintf("create %s %s %q raw=%v", p, modeNames[mode], data, raw)
	return diffOp{desc, func(d *diffTarget) string {
		if raw {
			var r zkproto.Create2Response
			op := kvstore.ZKOpCreate2
			var body zkproto.Record = &zkproto.CreateRequest{Path: p, Data: data, ACL: kacl(acl), Flags: mode}
			switch mode {
			case zk.FlagContainer:
				op = kvstore.ZKOpCreateContainer
			case zk.FlagTTL, zk.FlagPersistentSequentialWithTTL:
				op = kvstore.ZKOpCreateTTL
				body = &zkproto.CreateTTLRequest{Path: p, Data: data, ACL: kacl(acl), Flags: mode, TTL: 3600_000}
			}
			h := d.raw.call(op, body, &r)
			if h.Err != 0 {
				return fmt.Sprintf("err %d", h.Err)
			}
			return fmt.Sprintf("%s %s hz=%s", r.Path, d.kstat(r.Stat), d.zx(h.Zxid))
		}
		var (
			got string
			err error
		)
		switch mode {
		case zk.FlagContainer:
			got, err = d.c.CreateContainer(p, data, mode, acl)
		case zk.FlagTTL, zk.FlagPersistentSequentialWithTTL:
			got, err = d.c.CreateTTL(p, data, mode, acl, time.Hour)
		default:
			got, err = d.c.Create(p, data, mode, acl)
		}
		return errStr(err) + " " + got
	}}
}

func kacl(acl []zk.ACL) []kvstore.ZKACL {
	out := make([]kvstore.ZKACL, len(acl))
	for i, a := range acl {
		out[i] = kvstore.ZKACL{Perms: a.Perms, Scheme: a.Scheme, ID: a.ID}
	}
	return out
}

func (g *diffGen) multi() diffOp {
	n := 1 + g.r.Intn(4)
	ops := make([]any, n)
	var desc []string
	for i := range ops {
		switch g.r.Intn(4) {
		case 0:
			mode := int32(g.r.Intn(4))
			p := g.path()
			if mode&zk.FlagSequence != 0 {
				p = g.parent() + "/q-"
			}
			ops[i] = &zk.CreateRequest{Path: p, Data: g.data(), Acl: zk.WorldACL(zk.PermAll), Flags: mode}
			desc = append(desc, fmt.Sprintf("create %s %s", p, modeNames[mode]))
		case 1:
			p, v := g.path(), g.version()
			ops[i] = &zk.SetDataRequest{Path: p, Data: g.data(), Version: v}
			desc = append(desc, fmt.Sprintf("set %s %d", p, v))
		case 2:
			p, v := g.path(), g.version()
			ops[i] = &zk.DeleteRequest{Path: p, Version: v}
			desc = append(desc, fmt.Sprintf("delete %s %d", p, v))
		default:
			p, v := g.path(), g.version()
			ops[i] = &zk.CheckVersionRequest{Path: p, Version: v}
			desc = append(desc, fmt.Sprintf("check %s %d", p, v))
		}
	}
	return diffOp{"multi [" + strings.Join(desc, "; ") + "]", func(d *diffTarget) string {
		res, err := d.c.Multi(ops...)
		out := errStr(err)
		for _, r := range res {
			out += fmt.Sprintf(" [%s %q %s]", errStr(r.Error), r.String, d.stat(r.Stat))
		}
		return out
	}}
}

// prelude is the fixed start: the parents, the root as each system has it, auth.
func prelude() []diffOp {
	var ops []diffOp
	for i := 0; i < 3; i++ {
		p := fmt.Sprintf("/d%d", i)
		ops = append(ops, diffOp{"create " + p, func(d *diffTarget) string {
			got, err := d.c.Create(p, []byte("parent"), 0, zk.WorldACL(zk.PermAll))
			return errStr(err) + " " + got
		}})
	}
	ops = append(ops,
		diffOp{"children /", func(d *diffTarget) string {
			kids, st, err := d.c.Children("/")
			sort.Strings(kids)
			return fmt.Sprintf("%s %q %s", errStr(err), kids, d.stat(st))
		}},
		diffOp{"get /zookeeper/config", func(d *diffTarget) string {
			b, _, err := d.c.Get("/zookeeper/config")
			return fmt.Sprintf("%s %d", errStr(err), len(b))
		}},
		diffOp{"children /zookeeper", func(d *diffTarget) string {
			kids, _, err := d.c.Children("/zookeeper")
			sort.Strings(kids)
			return fmt.Sprintf("%s %q", errStr(err), kids)
		}},
		diffOp{"getACL /", func(d *diffTarget) string {
			acl, _, err := d.c.GetACL("/")
			return fmt.Sprintf("%s %+v", errStr(err), acl)
		}},
		diffOp{"delete /zookeeper", func(d *diffTarget) string { return errStr(d.c.Delete("/zookeeper", -1)) }},
		diffOp{"create /a/ (a name ending in /)", func(d *diffTarget) string {
			var r zkproto.CreateResponse
			h := d.raw.call(kvstore.ZKOpCreate, &zkproto.CreateRequest{Path: "/d0/", ACL: openACL}, &r)
			return fmt.Sprintf("%d %s", h.Err, r.Path)
		}},
		diffOp{"create container via create", func(d *diffTarget) string {
			var r zkproto.CreateResponse
			h := d.raw.call(kvstore.ZKOpCreate, &zkproto.CreateRequest{Path: "/d0/c", ACL: openACL, Flags: kvstore.ZKContainer}, &r)
			return fmt.Sprintf("%d %s", h.Err, r.Path)
		}},
		diffOp{"create ttl via create", func(d *diffTarget) string {
			var r zkproto.CreateResponse
			h := d.raw.call(kvstore.ZKOpCreate, &zkproto.CreateRequest{Path: "/d0/t", ACL: openACL, Flags: kvstore.ZKPersistentWithTTL}, &r)
			return fmt.Sprintf("%d %s", h.Err, r.Path)
		}},
		diffOp{"createTTL with ttl 0", func(d *diffTarget) string {
			var r zkproto.Create2Response
			h := d.raw.call(kvstore.ZKOpCreateTTL, &zkproto.CreateTTLRequest{Path: "/d0/t0", ACL: openACL, Flags: kvstore.ZKPersistentWithTTL}, &r)
			return fmt.Sprintf("%d %s", h.Err, r.Path)
		}},
		diffOp{"null and empty data", func(d *diffTarget) string {
			out := ""
			get := func(p string) {
				var r zkproto.GetDataResponse
				h := d.raw.call(kvstore.ZKOpGetData, &zkproto.GetDataRequest{Path: p}, &r)
				out += fmt.Sprintf(" %d %s", h.Err, dataStr(r.Data))
			}
			for i, data := range [][]byte{nil, {}} {
				p := fmt.Sprintf("/d2/null%d", i)
				d.raw.call(kvstore.ZKOpCreate, &zkproto.CreateRequest{Path: p, Data: data, ACL: openACL}, &zkproto.CreateResponse{})
				get(p)
				d.raw.call(kvstore.ZKOpSetData, &zkproto.SetDataRequest{Path: p, Data: []byte("x"), Version: -1}, &zkproto.StatResponse{})
				d.raw.call(kvstore.ZKOpSetData, &zkproto.SetDataRequest{Path: p, Data: data, Version: -1}, &zkproto.StatResponse{})
				get(p)
				d.raw.call(kvstore.ZKOpDelete, &zkproto.DeleteRequest{Path: p, Version: -1}, nil)
			}
			return out
		}},
		diffOp{"whoAmI", func(d *diffTarget) string {
			d.raw.call(kvstore.ZKOpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("u:p")}, nil)
			var r zkproto.WhoAmIResponse
			h := d.raw.call(kvstore.ZKOpWhoAmI, nil, &r)
			return fmt.Sprintf("%d %+v", h.Err, r.ClientInfo)
		}},
		diffOp{"failed write's header zxid", func(d *diffTarget) string {
			d.raw.call(kvstore.ZKOpCreate, &zkproto.CreateRequest{Path: "/d1/hz", ACL: openACL}, &zkproto.CreateResponse{})
			h1 := d.raw.call(kvstore.ZKOpCreate, &zkproto.CreateRequest{Path: "/d1/hz", ACL: openACL}, nil)
			h2 := d.raw.call(kvstore.ZKOpDelete, &zkproto.DeleteRequest{Path: "/d1/hz", Version: -1}, nil)
			return fmt.Sprintf("%d %d step=%d", h1.Err, h2.Err, h2.Zxid-h1.Zxid)
		}},
	)
	return ops
}

// TestDifferentialAgainstZooKeeper: NANOKV_ZK_DIFF_SEED picks the seed (default 1),
// NANOKV_ZK_DIFF_OPS the length (default 300).
func TestDifferentialAgainstZooKeeper(t *testing.T) {
	seed, nops := int64(1), 300
	if v := os.Getenv("NANOKV_ZK_DIFF_SEED"); v != "" {
		seed, _ = strconv.ParseInt(v, 10, 64)
	}
	if v := os.Getenv("NANOKV_ZK_DIFF_OPS"); v != "" {
		nops, _ = strconv.Atoi(v)
	}
	realAddr := startRealZooKeeper(t, true)
	node := startNode(t, func(c *server.Config) { c.ZKExtendedTypes = true })
	real := newDiffTarget(t, "zookeeper", realAddr)
	ours := newDiffTarget(t, "nanokv", node.ZKAddr())
	for _, d := range []*diffTarget{real, ours} {
		if err := d.c.AddAuth("digest", []byte("u:p")); err != nil {
			t.Fatal(err)
		}
	}

	g := &diffGen{r: rand.New(rand.NewSource(seed))}
	ops := prelude()
	for len(ops) < nops {
		ops = append(ops, g.op())
	}
	// A tail that reads the whole tree back.
	for i := 0; i < 3; i++ {
		for j := -1; j < 4; j++ {
			p := fmt.Sprintf("/d%d", i)
			if j >= 0 {
				p += fmt.Sprintf("/n%d", j)
			}
			ops = append(ops, diffOp{"final get " + p, func(d *diffTarget) string {
				b, st, err := d.c.Get(p)
				kids, _, _ := d.c.Children(p)
				sort.Strings(kids)
				return fmt.Sprintf("%s %s %s %q", errStr(err), dataStr(b), d.stat(st), kids)
			}})
		}
	}
	mismatches := 0
	for i, op := range ops {
		want, got := op.run(real), op.run(ours)
		if want != got {
			mismatches++
			t.Errorf("seed %d op %d: %s\n  zookeeper: %s\n  nanokv:    %s", seed, i, op.desc, want, got)
			if mismatches >= 25 {
				t.Fatalf("seed %d: too many mismatches; rerun with NANOKV_ZK_DIFF_SEED=%d", seed, seed)
			}
		} else if testing.Verbose() && os.Getenv("NANOKV_ZK_DIFF_TRACE") != "" {
			t.Logf("op %d: %s → %s", i, op.desc, want)
		}
	}
	if mismatches > 0 {
		t.Logf("rerun with NANOKV_ZK_DIFF_SEED=%d", seed)
	}
}

// What the random corpus does not reach, against a ZooKeeper with its default settings
// (extended types off): TTL nodes refused, containers allowed, and getACL as sessions
// with and without rights on the node see it (digest ids are masked for a session
// without ADMIN).
func TestDifferentialDefaultsAgainstZooKeeper(t *testing.T) {
	realAddr := startRealZooKeeper(t, false)
	node := startNode(t, nil)
	addrs := map[string]string{"zookeeper": realAddr, "nanokv": node.ZKAddr()}
	targets := []*diffTarget{newDiffTarget(t, "zookeeper", realAddr), newDiffTarget(t, "nanokv", node.ZKAddr())}
	for _, d := range targets {
		if err := d.c.AddAuth("digest", []byte("u:p")); err != nil {
			t.Fatal(err)
		}
	}
	acls := map[string][]zk.ACL{
		"/acl-digest-all-world-read": append(zk.DigestACL(zk.PermAll, "u", "p"), zk.WorldACL(zk.PermRead)...),
		"/acl-digest-all":            zk.DigestACL(zk.PermAll, "u", "p"),
		"/acl-world-admin":           zk.WorldACL(zk.PermAdmin),
		"/acl-world-write":           zk.WorldACL(zk.PermWrite),
	}
	names := make([]string, 0, len(acls))
	for p := range acls {
		names = append(names, p)
	}
	sort.Strings(names)
	ops := []diffOp{
		{"createTTL without extended types", func(d *diffTarget) string {
			var r zkproto.Create2Response
			h := d.raw.call(kvstore.ZKOpCreateTTL, &zkproto.CreateTTLRequest{Path: "/ttl", ACL: openACL, Flags: kvstore.ZKPersistentWithTTL, TTL: 1000}, &r)
			return fmt.Sprintf("%d %q", h.Err, r.Path)
		}},
		{"create with a TTL mode without extended types", func(d *diffTarget) string {
			var r zkproto.CreateResponse
			h := d.raw.call(kvstore.ZKOpCreate, &zkproto.CreateRequest{Path: "/ttl2", ACL: openACL, Flags: kvstore.ZKPersistentWithTTL}, &r)
			return fmt.Sprintf("%d %q", h.Err, r.Path)
		}},
		{"multi with a TTL mode create without extended types", func(d *diffTarget) string {
			res, err := d.c.Multi(&zk.CreateRequest{Path: "/m0", Acl: zk.WorldACL(zk.PermAll)},
				&zk.CreateRequest{Path: "/m1", Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagTTL})
			out := errStr(err)
			for _, r := range res {
				out += fmt.Sprintf(" [%s %q]", errStr(r.Error), r.String)
			}
			return out
		}},
		{"multi with a createTTL without extended types", func(d *diffTarget) string {
			m := &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
				{Type: kvstore.ZKOpCreate, Body: &zkproto.CreateRequest{Path: "/m2", ACL: openACL}},
				{Type: kvstore.ZKOpCreateTTL, Body: &zkproto.CreateTTLRequest{Path: "/m3", ACL: openACL, Flags: kvstore.ZKPersistentWithTTL, TTL: 1000}},
			}}
			var r zkproto.MultiResponse
			h := d.raw.call(kvstore.ZKOpMulti, m, &r)
			out := fmt.Sprint(h.Err)
			for _, res := range r.Results {
				out += fmt.Sprintf(" [%d %d %q]", res.Type, res.Err, res.Path)
			}
			return out
		}},
		{"createContainer without extended types", func(d *diffTarget) string {
			var r zkproto.Create2Response
			h := d.raw.call(kvstore.ZKOpCreateContainer, &zkproto.CreateRequest{Path: "/container", ACL: openACL, Flags: kvstore.ZKContainer}, &r)
			return fmt.Sprintf("%d %q", h.Err, r.Path)
		}},
	}
	for _, p := range names {
		ops = append(ops, diffOp{"create " + p, func(d *diffTarget) string {
			got, err := d.c.Create(p, nil, 0, acls[p])
			return errStr(err) + " " + got
		}})
	}
	for _, who := range []string{"the owner", "anyone"} {
		for _, p := range names {
			ops = append(ops, diffOp{"getACL " + p + " as " + who, func(d *diffTarget) string {
				c := d.c
				if who == "anyone" {
					c, _ = connectZK(t, []string{addrs[d.name]}, 10*time.Second, nil)
					defer c.Close()
				}
				acl, st, err := c.GetACL(p)
				return fmt.Sprintf("%s %+v %s", errStr(err), acl, d.stat(st))
			}})
		}
	}
	for i, op := range ops {
		if want, got := op.run(targets[0]), op.run(targets[1]); want != got {
			t.Errorf("op %d: %s\n  zookeeper: %s\n  nanokv:    %s", i, op.desc, want, got)
		}
	}
}
