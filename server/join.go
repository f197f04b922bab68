package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nanokv/nanokv/consensus/raft"
	"github.com/nanokv/nanokv/kvstore"
)

// Growing a running cluster, as RedisRaft does it: the new node asks any member (its
// redis port) to RAFT.NODE ADD it, following -MOVED to the leader; the leader adds it as
// a learner with its member address, replication (or a snapshot) brings it up to date,
// and the leader promotes it to voter once it has caught up. The new node keeps its id
// and the cluster id in <data-dir>/cluster.meta, so a restart rejoins nothing.

const clusterMetaFile = "cluster.meta"

func readClusterMeta(dir string) (id, clusterID uint64, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, clusterMetaFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, err
	}
	if _, err := fmt.Sscanf(string(b), "id %d\ncluster %x\n", &id, &clusterID); err != nil || id == 0 {
		return 0, 0, false, fmt.Errorf("server: %s: unreadable (%v)", clusterMetaFile, err)
	}
	return id, clusterID, true, nil
}

func writeClusterMeta(dir string, id, clusterID uint64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, clusterMetaFile)
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "id %d\ncluster %016x\n", id, clusterID)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(path+".tmp", path)
	}
	return err
}

// joinCluster asks the cluster behind addr (any member's redis address) to add this node
// with member address self, and returns the id it got and the cluster's id. It follows
// -MOVED to the leader and retries while the cluster has no leader, for up to a minute.
//
// A retry must not add the node twice. So the node picks its id itself when none is
// configured, and a request whose answer was lost (a timeout, a dropped connection) is
// retried with the same id. If the retry hears "node id has already been used", the first
// request was applied: the node is a member, and it reads the cluster id from INFO raft.
func joinCluster(addr string, id uint64, self string, logf func(string, ...any)) (uint64, uint64, error) {
	if id == 0 {
		id = uint64(rand.Int32N(1<<30)) + 1 // RedisRaft's ids are positive 32-bit ints
	}
	deadline := time.Now().Add(time.Minute)
	uncertain := false
	for hops := 0; ; hops++ {
		gotID, cid, err := raftNodeAdd(addr, id, self)
		if err == nil {
			return gotID, cid, nil
		}
		msg := err.Error()
		switch {
		// (without "ERR " from members built before RAFT.NODE took RedisRaft's current words)
		case uncertain && (msg == errNodeIDUsed || "ERR "+msg == errNodeIDUsed):
			if cid, err := clusterIDOf(addr); err == nil {
				return id, cid, nil
			}
			time.Sleep(200 * time.Millisecond)
			continue
		case strings.HasPrefix(msg, "MOVED ") && hops < 16:
			f := strings.Fields(msg)
			addr = f[len(f)-1]
			continue
		case strings.HasPrefix(msg, "CLUSTERDOWN"), strings.HasPrefix(msg, "TIMEOUT"), isNetErr(err):
			if time.Now().After(deadline) {
				return 0, 0, fmt.Errorf("server: join through %s: %w", addr, err)
			}
			uncertain = uncertain || !strings.HasPrefix(msg, "CLUSTERDOWN")
			logf("server: join through %s: %v; retrying", addr, err)
			time.Sleep(200 * time.Millisecond)
			continue
		}
		return 0, 0, fmt.Errorf("server: join through %s: %w", addr, err)
	}
}

// clusterIDOf reads raft_dbid from a member's INFO raft.
func clusterIDOf(addr string) (uint64, error) {
	reply, err := call(addr, "INFO", "raft")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(reply, "\r\n") {
		if v, ok := strings.CutPrefix(line, "raft_dbid:"); ok {
			return strconv.ParseUint(v, 16, 64)
		}
	}
	return 0, errors.New("no raft_dbid in INFO raft")
}

func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF)
}

// raftNodeAdd sends RAFT.NODE ADD <id> <self> and reads the [id, cluster id] reply.
func raftNodeAdd(addr string, id uint64, self string) (uint64, uint64, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, encodeCommand([]string{"RAFT.NODE", "ADD", strconv.FormatUint(id, 10), self})); err != nil {
		return 0, 0, err
	}
	r := bufio.NewReader(c)
	line, err := readReplyLine(r)
	if err != nil {
		return 0, 0, err
	}
	switch {
	case strings.HasPrefix(line, "-"):
		return 0, 0, errors.New(line[1:])
	case line != "*2":
		return 0, 0, fmt.Errorf("unexpected reply %q", line)
	}
	idLine, err := readReplyLine(r)
	if err != nil {
		return 0, 0, err
	}
	gotID, err := strconv.ParseUint(strings.TrimPrefix(idLine, ":"), 10, 64)
	if err != nil || !strings.HasPrefix(idLine, ":") {
		return 0, 0, fmt.Errorf("unexpected node id %q", idLine)
	}
	if _, err := readReplyLine(r); err != nil { // $16
		return 0, 0, err
	}
	dbid, err := readReplyLine(r)
	if err != nil {
		return 0, 0, err
	}
	cid, err := strconv.ParseUint(dbid, 16, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("unexpected cluster id %q", dbid)
	}
	return gotID, cid, nil
}

// call sends one command and returns a bulk or status reply as text (errors as errors).
func call(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, encodeCommand(args)); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := readReplyLine(r)
	switch {
	case err != nil:
		return "", err
	case strings.HasPrefix(line, "-"):
		return "", errors.New(line[1:])
	case strings.HasPrefix(line, "+"):
		return line[1:], nil
	case strings.HasPrefix(line, "$"):
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 || n > 1<<20 {
			return "", fmt.Errorf("unexpected reply %q", line)
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return "", err
		}
		return string(b[:n]), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

func encodeCommand(args []string) string {
	var req strings.Builder
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	return req.String()
}

func readReplyLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// runMembership keeps the transport's peers in step with the membership, and on the
// leader promotes learners that have caught up.
func (s *Server) runMembership() {
	defer s.wg.Done()
	c := s.cl()
	known := map[uint64]string{}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		st := c.raft.Status()
		m := st.Membership
		changed := false
		for id, addr := range m.Addrs {
			if id != st.ID && known[id] != addr {
				c.tr.SetPeer(id, addr)
				known[id] = addr
				changed = true
			}
		}
		for id := range known {
			if !m.IsVoter(id) && !m.IsLearner(id) {
				c.tr.RemovePeer(id)
				delete(known, id)
				changed = true
			}
		}
		if changed && c.udp != nil {
			if err := c.udp.SetPeers(known); err != nil {
				s.logf("server: offload transport: %v", err)
			}
		}
		if st.Role == raft.Leader && len(m.Learners) > 0 {
			s.promoteCaughtUp(m.Learners)
		}
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

// promoteCaughtUp makes a learner a voter once it holds everything but the last few
// entries: promoting a member far behind would make it a voter that cannot yet vote
// usefully, and with an even split could stall commits until it catches up.
func (s *Server) promoteCaughtUp(learners []uint64) {
	const slack = 64
	c := s.cl()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout())
	defer cancel()
	match, commit, err := c.raft.Progress(ctx)
	if err != nil {
		return
	}
	for _, id := range learners {
		if match[id]+slack >= commit && match[id] > 0 {
			if err := c.raft.ChangeMembership(ctx, raft.ConfChange{Type: raft.PromoteVoter, Node: id}); err != nil {
				if !errors.Is(err, raft.ErrConfPending) {
					s.logf("server: promoting member %d: %v", id, err)
				}
				return
			}
			s.logf("server: member %d caught up and now votes", id)
			return // one change at a time
		}
	}
}

// errNoCluster answers everything on a node that waits for RAFT.CLUSTER INIT or JOIN.
var errNoCluster = redisError("NOCLUSTER No Raft Cluster")

// pendingCluster is a node started with --cluster alone, as a RedisRaft node starts:
// uninitialized, answering NOCLUSTER until RAFT.CLUSTER INIT creates a cluster of one
// or RAFT.CLUSTER JOIN joins a running one. It holds the member listener meanwhile, so
// the address stays this node's.
type pendingCluster struct {
	mu        sync.Mutex // one INIT or JOIN at a time
	ln        net.Listener
	redisAddr string
}

func (s *Server) startPending(redisAddr string) error {
	if !s.cfg.MemoryOnly {
		if _, _, ok, err := readClusterMeta(s.cfg.DataDir); err != nil {
			return err
		} else if ok {
			return s.startCluster(redisAddr) // initialized or joined before: rejoin
		}
	}
	ln := s.cfg.ClusterListener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.ClusterAddr); err != nil {
			return fmt.Errorf("server: cluster listener: %w", err)
		}
	}
	s.pending = &pendingCluster{ln: ln, redisAddr: redisAddr}
	s.sharding.Store(s.cfg.Sharding) // CLUSTER answers NOCLUSTER until INIT or JOIN
	s.logf("server: waiting for RAFT.CLUSTER INIT or RAFT.CLUSTER JOIN (member address %s)", ln.Addr())
	return nil
}

func (p *pendingCluster) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ln.Close()
}

// command runs RAFT.CLUSTER INIT [dbid] or RAFT.CLUSTER JOIN addr... on a pending node.
func (p *pendingCluster) command(s *Server, args [][]byte, w kvstore.ReplyWriter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.cl() != nil {
		w.Error("ERR Already cluster member")
		return
	}
	if len(args) < 2 {
		w.Error(kvstore.WrongArgs("raft.cluster"))
		return
	}
	self := p.ln.Addr().String()
	var id, cid uint64
	switch strings.ToLower(string(args[1])) {
	case "init":
		if len(args) > 3 {
			w.Error(kvstore.WrongArgs("raft.cluster"))
			return
		}
		if len(args) == 3 {
			v, err := strconv.ParseUint(string(args[2]), 16, 64)
			if err != nil || len(args[2]) != 16 || v == 0 {
				w.Error("ERR invalid dbid: want 16 hex digits")
				return
			}
			cid = v
		}
		for cid == 0 {
			cid = rand.Uint64()
		}
		if id = s.cfg.NodeID; id == 0 {
			id = uint64(rand.Int32N(1<<30)) + 1
		}
	case "join":
		if len(args) < 3 {
			w.Error(kvstore.WrongArgs("raft.cluster"))
			return
		}
		var err error
		for _, a := range args[2:] {
			if id, cid, err = joinCluster(string(a), s.cfg.NodeID, self, s.logf); err == nil {
				break
			}
		}
		if err != nil {
			w.Error("ERR " + err.Error())
			return
		}
	default:
		w.Error("ERR RAFT.CLUSTER supports INIT / JOIN only")
		return
	}
	if !s.cfg.MemoryOnly {
		if err := writeClusterMeta(s.cfg.DataDir, id, cid); err != nil {
			w.Error("ERR " + err.Error())
			return
		}
	}
	var boot raft.Membership
	if strings.EqualFold(string(args[1]), "init") {
		boot = raft.Membership{Voters: []uint64{id}, Addrs: map[uint64]string{id: self}}
	}
	if err := s.launchCluster(p.redisAddr, id, cid, boot, p.ln); err != nil {
		w.Error("ERR " + err.Error())
		return
	}
	if boot.Voters != nil {
		w.Status(fmt.Sprintf("OK %016x", cid))
		return
	}
	w.Status("OK")
}
