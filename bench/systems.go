package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Protocols a system serves.
const (
	protoRedis    = "redis"
	protoMemcache = "memcache"
	protoZK       = "zk"
)

// zkJar is where Debian's zookeeper package puts the server; its manifest names the
// jars it needs.
const zkJar = "/usr/share/java/zookeeper.jar"

// system is something the harness can start on loopback in a temp dir.
type system struct {
	name   string
	proto  string // the protocol the scenario drives it with
	nodes  int
	mode   string // nanokv's --mode
	binary string // what must be installed; "" for nanokv itself
	hint   string // how to install it
	start  func(ctx context.Context, h *harness, s *system, dir string) (*instance, error)
}

// instance is a started system: one member per node.
type instance struct {
	sys     *system
	members []*member
}

type member struct {
	proc  *proc
	redis string // RESP address, if any
	mc    string // memcached address, if any
	zk    string // ZooKeeper client address, if any
}

// missing says what to install when the system's binary is not there ("" if it is).
func (s *system) missing() string {
	switch {
	case s.binary == "":
		return ""
	case s.binary == zkJar:
		if _, err := os.Stat(zkJar); err != nil {
			return "skipping " + s.name + ": install ZooKeeper (" + s.hint + ")"
		}
		if _, err := exec.LookPath("java"); err != nil {
			return "skipping " + s.name + ": install a Java runtime (apt-get install default-jre-headless)"
		}
		return ""
	case filepath.IsAbs(s.binary):
		if _, err := os.Stat(s.binary); err != nil {
			return "skipping " + s.name + ": " + s.binary + " not found (" + s.hint + ")"
		}
		return ""
	}
	if _, err := exec.LookPath(s.binary); err != nil {
		return "skipping " + s.name + ": " + s.binary + " not on PATH (" + s.hint + ")"
	}
	return ""
}

// stop ends every member.
func (in *instance) stop() {
	for _, m := range in.members {
		if m.proc != nil {
			m.proc.stop(5 * time.Second)
		}
	}
}

// leader is the index of the member that leads (0 for one node), waiting for one to be
// elected.
func (in *instance) leader(ctx context.Context, timeout time.Duration) (int, error) {
	if len(in.members) == 1 {
		return 0, nil
	}
	found := -1
	err := waitFor(ctx, nil, timeout, 20*time.Millisecond, func() error {
		for i, m := range in.members {
			if !m.proc.exited() && isLeader(m.redis) {
				found = i
				return nil
			}
		}
		return errors.New("no leader")
	})
	return found, err
}

// snapshots is how many snapshots the members have written (INFO persistence
// rdb_saves, summed; 0 for a system that answers no INFO, and for a member that does not
// answer).
func (in *instance) snapshots() int64 {
	var n int64
	for _, m := range in.members {
		if m.redis == "" || m.proc.exited() {
			continue
		}
		rc, err := dialRESP(m.redis, 300*time.Millisecond)
		if err != nil {
			continue
		}
		info, err := rc.do(time.Second, "INFO", "persistence")
		rc.Close()
		if err == nil {
			v, _ := strconv.ParseInt(infoField(info, "rdb_saves"), 10, 64)
			n += v
		}
	}
	return n
}

// endpoints are the client addresses of every member for a protocol.
func (in *instance) endpoints(proto string) []string {
	var out []string
	for _, m := range in.members {
		switch proto {
		case protoRedis:
			out = append(out, m.redis)
		case protoMemcache:
			out = append(out, m.mc)
		case protoZK:
			out = append(out, m.zk)
		}
	}
	return out
}

// nanokvSystem is nanokv with n members in a mode, serving proto.
// defaultMode is nanokv's own default --mode: systems named without a mode run it.
const defaultMode = "offload"

func nanokvSystem(n int, mode, proto string) *system {
	name := fmt.Sprintf("nanokv-%d", n)
	if mode != defaultMode {
		name += "-" + mode
	}
	return &system{name: name, proto: proto, nodes: n, mode: mode, start: startNanokv}
}

// nanokvArgs is one member's command line.
func nanokvArgs(exe string, id int, peers, cluster, redis, mc, zk, dir, mode string) []string {
	args := []string{exe, "--id", strconv.Itoa(id), "--redis", redis, "--memcache", mc, "--zk", zk,
		"--data-dir", dir, "--mode", mode}
	if peers != "" {
		args = append(args, "--peers", peers, "--cluster", cluster)
	}
	return args
}

// startNanokv starts the members as child processes of the nanokv binary, as `nanokv
// local` does, each with its WAL in dir (fsync everysec, the default).
func startNanokv(ctx context.Context, h *harness, s *system, dir string) (*instance, error) {
	in := &instance{sys: s}
	var clusterAddrs []string
	var peers []string
	for i := 1; i <= s.nodes; i++ {
		m := &member{}
		var err error
		if m.redis, err = freeAddr(); err != nil {
			return nil, err
		}
		if m.mc, err = freeAddr(); err != nil {
			return nil, err
		}
		if s.proto == protoZK {
			if m.zk, err = freeAddr(); err != nil {
				return nil, err
			}
		}
		ca, err := freeAddr()
		if err != nil {
			return nil, err
		}
		clusterAddrs = append(clusterAddrs, ca)
		peers = append(peers, fmt.Sprintf("%d=%s", i, ca))
		in.members = append(in.members, m)
	}
	peerList := ""
	if s.nodes > 1 {
		peerList = strings.Join(peers, ",")
	}
	for i, m := range in.members {
		argv := nanokvArgs(h.cfg.Nanokv, i+1, peerList, clusterAddrs[i], m.redis, m.mc, m.zk,
			filepath.Join(dir, fmt.Sprintf("node%d", i+1)), s.mode)
		p, err := h.procs.start(fmt.Sprintf("%s/node%d", s.name, i+1), filepath.Join(dir, fmt.Sprintf("node%d.log", i+1)), argv)
		if err != nil {
			in.stop()
			return nil, err
		}
		m.proc = p
	}
	for _, m := range in.members {
		addr := m.redis
		if s.proto == protoZK {
			addr = m.zk
		}
		if err := waitFor(ctx, m.proc, 20*time.Second, 20*time.Millisecond, func() error { return dialOK(addr) }); err != nil {
			in.stop()
			return nil, asSkip(s, err)
		}
	}
	if _, err := in.leader(ctx, 20*time.Second); err != nil {
		in.stop()
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	return in, nil
}

// skipError is a system that cannot run here; the scenario records the reason as a row.
type skipError struct{ reason string }

func (e *skipError) Error() string { return e.reason }

// asSkip turns "this build lacks that" into a skip with the child's own words.
func asSkip(s *system, err error) error {
	var ee *exitedError
	if errors.As(err, &ee) && ee.unsupported() {
		lines := strings.Split(ee.tail, "\n")
		return &skipError{"skipping " + s.name + " (" + s.proto + "): " + strings.TrimPrefix(lines[len(lines)-1], "nanokv: ")}
	}
	return err
}

func redisSystem() *system {
	return &system{name: "redis-server", proto: protoRedis, nodes: 1, binary: "redis-server",
		hint: "apt-get install redis-server", start: startRedis}
}

// startRedis runs redis-server with no persistence at all: its best case.
func startRedis(ctx context.Context, h *harness, s *system, dir string) (*instance, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	p, err := h.procs.start(s.name, filepath.Join(dir, "redis.log"), []string{"redis-server",
		"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir})
	if err != nil {
		return nil, err
	}
	in := &instance{sys: s, members: []*member{{proc: p, redis: addr}}}
	if err := waitFor(ctx, p, 10*time.Second, 20*time.Millisecond, func() error { return pingRESP(addr) }); err != nil {
		in.stop()
		return nil, err
	}
	return in, nil
}

func pingRESP(addr string) error {
	rc, err := dialRESP(addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = rc.do(time.Second, "PING")
	return err
}

func memcachedSystem() *system {
	return &system{name: "memcached", proto: protoMemcache, nodes: 1, binary: "memcached",
		hint: "apt-get install memcached", start: startMemcached}
}

// startMemcached runs memcached with one worker thread: the machine has two cores for
// the server and the load generator together.
func startMemcached(ctx context.Context, h *harness, s *system, dir string) (*instance, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	argv := []string{"memcached", "-l", "127.0.0.1", "-p", port, "-U", "0", "-t", "1", "-m", "1024"}
	if os.Geteuid() == 0 {
		argv = append(argv, "-u", "root")
	}
	p, err := h.procs.start(s.name, filepath.Join(dir, "memcached.log"), argv)
	if err != nil {
		return nil, err
	}
	in := &instance{sys: s, members: []*member{{proc: p, mc: addr}}}
	if err := waitFor(ctx, p, 10*time.Second, 20*time.Millisecond, func() error { return dialOK(addr) }); err != nil {
		in.stop()
		return nil, err
	}
	return in, nil
}

func zookeeperSystem(n int) *system {
	return &system{name: fmt.Sprintf("zookeeper-%d", n), proto: protoZK, nodes: n, binary: zkJar,
		hint: "apt-get install zookeeper", start: startZooKeeper}
}

// startZooKeeper runs an ensemble of n servers from Debian's jars, each with its own
// zoo.cfg: forceSync=no (the anchors' setting), the admin server off, 4lw srvr allowed
// for the readiness probe.
func startZooKeeper(ctx context.Context, h *harness, s *system, dir string) (*instance, error) {
	type ports struct{ client, quorum, election string }
	var ps []ports
	for i := 0; i < s.nodes; i++ {
		var p [3]int
		for j := range p {
			var err error
			if p[j], err = freePort(); err != nil {
				return nil, err
			}
		}
		ps = append(ps, ports{strconv.Itoa(p[0]), strconv.Itoa(p[1]), strconv.Itoa(p[2])})
	}
	in := &instance{sys: s}
	for i := 0; i < s.nodes; i++ {
		sd := filepath.Join(dir, fmt.Sprintf("zk%d", i+1))
		data := filepath.Join(sd, "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			return nil, err
		}
		var cfg strings.Builder
		fmt.Fprintf(&cfg, "tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%s\nclientPortAddress=127.0.0.1\n", data, ps[i].client)
		cfg.WriteString("forceSync=no\nadmin.enableServer=false\n4lw.commands.whitelist=srvr,ruok\nmaxClientCnxns=0\n")
		if s.nodes > 1 {
			for j, p := range ps {
				fmt.Fprintf(&cfg, "server.%d=127.0.0.1:%s:%s\n", j+1, p.quorum, p.election)
			}
			if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(i+1)+"\n"), 0o644); err != nil {
				return nil, err
			}
		}
		cfgPath := filepath.Join(sd, "zoo.cfg")
		if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
			return nil, err
		}
		argv := []string{"java", "-Xms256m", "-Xmx256m", "-cp", sd + ":" + zkJar,
			"-Dzookeeper.log.dir=" + sd, "-Dzookeeper.jmx.log4j.disable=true",
			"org.apache.zookeeper.server.quorum.QuorumPeerMain", cfgPath}
		p, err := h.procs.start(fmt.Sprintf("%s/server%d", s.name, i+1), filepath.Join(sd, "zookeeper.log"), argv)
		if err != nil {
			in.stop()
			return nil, err
		}
		in.members = append(in.members, &member{proc: p, zk: "127.0.0.1:" + ps[i].client})
	}
	for _, m := range in.members {
		if err := waitFor(ctx, m.proc, 60*time.Second, 100*time.Millisecond, func() error { return zkServing(m.zk) }); err != nil {
			in.stop()
			return nil, err
		}
	}
	return in, nil
}

// zkServing asks a server with the srvr four-letter word whether it serves clients
// (a member of an ensemble without quorum says it does not).
func zkServing(addr string) error {
	_, err := zkMode(addr)
	return err
}

// zkMode asks a server with the srvr four-letter word for its role: "leader",
// "follower" or "standalone" (ZooKeeper's and nanokv's Mode line); errNotReady when it
// names none, as a member of an ensemble without quorum does.
func zkMode(addr string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return "", err
	}
	b := make([]byte, 4096)
	n, _ := readAll(c, b)
	mode, ok := parseZKMode(string(b[:n]))
	if !ok {
		return "", errNotReady
	}
	return mode, nil
}

// parseZKMode finds the role in srvr's answer.
func parseZKMode(srvr string) (string, bool) {
	for line := range strings.Lines(srvr) {
		if mode, ok := strings.CutPrefix(line, "Mode:"); ok {
			mode = strings.TrimSpace(mode)
			return mode, mode != ""
		}
	}
	return "", false
}

func readAll(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func redisRaftSystem(module string, n int) *system {
	return &system{name: fmt.Sprintf("redisraft-%d", n), proto: protoRedis, nodes: n, binary: module,
		hint: "build RedisRaft and pass --redisraft /path/to/redisraft.so", start: startRedisRaft}
}

// startRedisRaft runs n redis-servers with the RedisRaft module (its README's command
// line: raft.addr per node, the log under the node's dir), then RAFT.CLUSTER INIT on the
// first and JOIN on the others.
func startRedisRaft(ctx context.Context, h *harness, s *system, dir string) (*instance, error) {
	in := &instance{sys: s}
	for i := 1; i <= s.nodes; i++ {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		_, port, _ := net.SplitHostPort(addr)
		nd := filepath.Join(dir, fmt.Sprintf("node%d", i))
		if err := os.MkdirAll(nd, 0o755); err != nil {
			return nil, err
		}
		p, err := h.procs.start(fmt.Sprintf("%s/node%d", s.name, i), filepath.Join(nd, "redis.log"), []string{"redis-server",
			"--port", port, "--bind", "127.0.0.1", "--dir", nd, "--save", "", "--appendonly", "no",
			"--loadmodule", s.binary, "--raft.addr", addr, "--raft.log-filename", "raftlog.db"})
		if err != nil {
			in.stop()
			return nil, err
		}
		in.members = append(in.members, &member{proc: p, redis: addr})
	}
	for i, m := range in.members {
		if err := waitFor(ctx, m.proc, 10*time.Second, 20*time.Millisecond, func() error { return pingRESP(m.redis) }); err != nil {
			in.stop()
			return nil, err
		}
		args := []string{"RAFT.CLUSTER", "INIT"}
		if i > 0 {
			args = []string{"RAFT.CLUSTER", "JOIN", in.members[0].redis}
		}
		err := waitFor(ctx, m.proc, 20*time.Second, 50*time.Millisecond, func() error {
			rc, err := dialRESP(m.redis, time.Second)
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = rc.do(5*time.Second, args...)
			return err
		})
		if err != nil {
			in.stop()
			return nil, fmt.Errorf("%s: %s: %w", s.name, strings.Join(args, " "), err)
		}
	}
	if _, err := in.leader(ctx, 20*time.Second); err != nil {
		in.stop()
		return nil, err
	}
	return in, nil
}

// restart starts member i again with its old command line (same ports, same data dir),
// after a kill, and waits until it is back in the cluster.
func (h *harness) restart(ctx context.Context, in *instance, i int) error {
	m := in.members[i]
	p, err := h.procs.start(m.proc.name, m.proc.logPath, m.proc.argv)
	if err != nil {
		return err
	}
	m.proc = p
	return waitFor(ctx, p, 20*time.Second, 20*time.Millisecond, func() error {
		rc, err := dialRESP(m.redis, 200*time.Millisecond)
		if err != nil {
			return err
		}
		defer rc.Close()
		info, err := rc.do(time.Second, "INFO", "raft")
		if err != nil {
			return err
		}
		if l := infoField(info, "raft_leader_id"); l == "" || l == "0" || l == "-1" {
			return errNotReady
		}
		return nil
	})
}
