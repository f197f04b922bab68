package server

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/nanokv/nanokv/consensus"
	"github.com/nanokv/nanokv/consensus/raft"
	"github.com/nanokv/nanokv/internal/netserve"
	"github.com/nanokv/nanokv/kvstore"
	"github.com/nanokv/nanokv/nicoffload"
)

// A cluster member (started with --peers, with --join, or by RAFT.CLUSTER INIT/JOIN;
// join.go) runs a consensus.RaftNode and a member transport instead of the single-member
// pipeline. Clients of a follower are redirected to the leader as
// RedisRaft does: -MOVED 0 <leader's redis address>, or -CLUSTERDOWN when no leader is
// known. Each member learns the others' redis addresses from the transport's hello.

// cluster is the replicated side of a node.
type cluster struct {
	raft      *consensus.RaftNode
	tr        *consensus.TCPTransport
	udp       *nicoffload.UDPTransport // --mode offload
	timeoutNs atomic.Int64             // request timeout (CONFIG SET raft.request-timeout)
	// proxy is RedisRaft's follower-proxy: a follower forwards its clients' writes to
	// the leader and reads after a barrier through the leader, instead of -MOVED.
	proxy  atomic.Bool
	id     uint64 // the cluster id (RedisRaft's dbid), 16 hex digits on the wire
	nodeID uint64
	addr   string // this member's address
	// deadlines bound the requests of clients (deadline.go)
	deadlines sharedDeadlines
}

func (c *cluster) timeout() time.Duration { return time.Duration(c.timeoutNs.Load()) }

// requestCtx bounds a client's request by the request timeout, and by parent's own end
// if it has one.
func (c *cluster) requestCtx(parent context.Context) (context.Context, context.CancelFunc) {
	if parent.Done() == nil {
		return c.deadlines.after(c.timeout()), func() {}
	}
	return context.WithTimeout(parent, c.timeout())
}

// ClusterID derives the id every member of a static cluster agrees on from its member
// list, so that members started with different --peers refuse each other.
func ClusterID(peers map[uint64]string) uint64 {
	ids := make([]uint64, 0, len(peers))
	for id := range peers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "%d=%s,", id, peers[id])
	}
	return xxhash.Sum64String(b.String())
}

func (s *Server) startCluster(redisAddr string) error {
	cfg := s.cfg
	ln := cfg.ClusterListener
	// A member that joined or was initialized earlier comes back from cluster.meta.
	if !cfg.MemoryOnly {
		id, cid, ok, err := readClusterMeta(cfg.DataDir)
		if err != nil {
			return err
		}
		if ok {
			return s.launchCluster(redisAddr, id, cid, raft.Membership{}, ln)
		}
	}
	if cfg.JoinAddr == "" {
		nodeID := cfg.NodeID
		if _, ok := cfg.Peers[nodeID]; !ok {
			return fmt.Errorf("server: node id %d is not among the peers", nodeID)
		}
		boot := raft.Membership{Addrs: map[uint64]string{}}
		for id, addr := range cfg.Peers {
			boot.Voters = append(boot.Voters, id)
			boot.Addrs[id] = addr
		}
		sort.Slice(boot.Voters, func(i, j int) bool { return boot.Voters[i] < boot.Voters[j] })
		return s.launchCluster(redisAddr, nodeID, ClusterID(cfg.Peers), boot, ln)
	}
	if cfg.MemoryOnly {
		return errors.New("server: a joining member needs a data dir (not --memory-only) to remember its cluster")
	}
	if ln == nil {
		if cfg.ClusterAddr == "" {
			return errors.New("server: joining needs --cluster, the address other members reach this one on")
		}
		var err error
		if ln, err = net.Listen("tcp", cfg.ClusterAddr); err != nil {
			return fmt.Errorf("server: cluster listener: %w", err)
		}
	}
	nodeID, clusterID, err := joinCluster(cfg.JoinAddr, cfg.NodeID, ln.Addr().String(), s.logf)
	if err == nil {
		err = writeClusterMeta(cfg.DataDir, nodeID, clusterID)
	}
	if err != nil {
		ln.Close()
		return err
	}
	s.logf("server: joined cluster %016x as member %d", clusterID, nodeID)
	return s.launchCluster(redisAddr, nodeID, clusterID, raft.Membership{}, ln)
}

// launchCluster starts this node's Raft member: the transport (on ln, or on the
// configured address) and the RaftNode.
func (s *Server) launchCluster(redisAddr string, nodeID, clusterID uint64, boot raft.Membership, ln net.Listener) error {
	cfg := s.cfg
	listen := cfg.ClusterAddr
	if listen == "" {
		listen = cfg.Peers[nodeID]
	}
	var node atomic.Pointer[consensus.RaftNode]
	snapDir := cfg.DataDir
	if cfg.MemoryOnly {
		snapDir = ""
	}
	tr, err := consensus.ListenTransport(consensus.TransportConfig{
		ID: nodeID, ClusterID: clusterID, Listen: listen, Listener: ln,
		Meta: redisAddr, Logf: s.logf, SnapshotDir: snapDir,
		Deliver: func(m raft.Message) {
			if n := node.Load(); n != nil {
				n.Step(m)
			}
		},
		PeerDown: func(id uint64) {
			if n := node.Load(); n != nil {
				n.PeerDown(id)
			}
		},
	})
	if err != nil {
		return err
	}
	for id, addr := range boot.Addrs {
		tr.SetPeer(id, addr)
	}
	var udp *nicoffload.UDPTransport
	var offload *consensus.OffloadConfig
	if cfg.Offload {
		// The engine's datagrams use the member's address, on UDP.
		udp, err = nicoffload.ListenUDP(nicoffload.UDPConfig{ClusterID: clusterID, Listen: tr.Addr(),
			Peers: boot.Addrs, Handler: func(pkts []nicoffload.Packet) {
				if n := node.Load(); n != nil {
					n.StepDatagrams(pkts)
				}
			}})
		if err != nil {
			tr.Close()
			return fmt.Errorf("server: offload transport: %w", err)
		}
		offload = &consensus.OffloadConfig{
			Engine: nicoffload.Config{ClusterID: clusterID, AckAfterPersist: cfg.Fsync == consensus.FsyncAlways,
				RetransmitTimeout: 20 * time.Millisecond, LazyDelay: time.Millisecond, InFlight: offloadInFlight(cfg.OffloadInFlight)},
			Send: func(dgs []nicoffload.Outgoing) {
				if err := udp.Send(dgs); err != nil {
					s.logf("server: offload transport: %v", err)
				}
			},
		}
	}
	rn, err := consensus.StartRaft(consensus.RaftConfig{
		Offload: offload,
		ID:      nodeID, Bootstrap: boot, Dir: cfg.DataDir, MemoryOnly: cfg.MemoryOnly, Fsync: cfg.Fsync,
		SM: &fsm{store: s.store, logf: s.logf}, Send: tr.Send, SendSnapshot: tr.SendSnapshot, SetLazy: tr.SetLazy,
		TickInterval: cfg.TickInterval, ElectionTicks: cfg.ElectionTicks, SnapshotLogBytes: s.logMax.Load(),
		SnapshotTrailing: cfg.SnapshotTrailing,
		LeaseReads:       cfg.ReadConsistency != "strict", Logf: s.logf,
		LogCacheBytes: s.logCache.Load(),
		// The store applies concatenated batches as the batches in turn.
		JoinBlind: true,
		// A ZooKeeper session's watches fire when this member applies: with sessions
		// here, it hears of every commit at once, as ZooKeeper's followers do.
		WantsCommits: func() bool { return s.zkSessions.Load() > 0 },
	})
	if err != nil {
		tr.Close()
		if udp != nil {
			udp.Close()
		}
		return err
	}
	node.Store(rn)
	timeout := cfg.RequestTimeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	c := &cluster{raft: rn, tr: tr, udp: udp, id: clusterID, nodeID: nodeID, addr: tr.Addr()}
	c.timeoutNs.Store(int64(timeout))
	c.proxy.Store(cfg.FollowerProxy)
	s.sharding.Store(cfg.Sharding)
	s.clusterP.Store(c)
	s.wg.Add(1)
	go s.runMembership()
	return nil
}

func (c *cluster) close() error {
	err := c.raft.Close()
	if terr := c.tr.Close(); err == nil {
		err = terr
	}
	if c.udp != nil {
		c.udp.Close()
	}
	return err
}

// redisError is an error whose text is a Redis error line (resp passes it through).
type redisError string

func (e redisError) Error() string      { return string(e) }
func (e redisError) RedisError() string { return string(e) }

// clientError turns what consensus said into what RedisRaft would tell the client.
func (c *cluster) clientError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrTransferring):
		st := c.raft.Status()
		if st.Lead == 0 || st.Lead == st.ID {
			return redisError("CLUSTERDOWN No raft leader")
		}
		if addr := c.tr.PeerMeta(st.Lead); addr != "" {
			return redisError("MOVED 0 " + addr)
		}
		return redisError("CLUSTERDOWN No raft leader")
	case errors.Is(err, netserve.ErrBarrierTimeout):
		// No majority confirmed the leadership in time: RedisRaft's answer to a read.
		return redisError("TIMEOUT no quorum for read")
	case errors.Is(err, consensus.ErrDropped):
		// The entry left the log (a leader change replaced it), as when RedisRaft frees
		// an entry whose client waits: RedisRaft's words.
		return redisError("TIMEOUT not committed yet")
	case errors.Is(err, context.DeadlineExceeded):
		return redisError("TIMEOUT Request timed out")
	}
	return err
}

func (c *cluster) propose(data []byte, local any) error {
	ctx, cancel := c.requestCtx(context.Background())
	defer cancel()
	var err error
	if c.proxy.Load() {
		_, err = c.raft.ProposeForward(ctx, data, local)
	} else {
		_, err = c.raft.Propose(ctx, data, local)
	}
	if err != nil {
		return c.clientError(err)
	}
	return nil
}

// readBarrier passes once a linearizable read may be served on this member: on the
// leader, or (follower-proxy, or replica, a READONLY connection's read under sharding)
// on a follower that has applied what the leader had committed when it was asked.
func (c *cluster) readBarrier(ctx context.Context, replica bool) error {
	ctx, cancel := c.requestCtx(ctx)
	defer cancel()
	err := c.raft.ReadBarrier(ctx)
	switch {
	case errors.Is(err, raft.ErrNotLeader) && (replica || c.proxy.Load()):
		err = c.proxiedBarrier(ctx)
	case errors.Is(err, context.DeadlineExceeded):
		err = netserve.ErrBarrierTimeout
	}
	if err != nil {
		return c.clientError(err)
	}
	return nil
}

// proxiedBarrier is a follower's read barrier under follower-proxy: an empty entry
// forwarded through the leader's log. Once it is applied here, so is everything that
// was committed before the read arrived, and the read may be served from this member.
func (c *cluster) proxiedBarrier(ctx context.Context) error {
	idx, err := c.raft.ProposeForward(ctx, nil, nil)
	if err != nil {
		return err
	}
	return c.raft.WaitApplied(ctx, idx)
}

func (c *cluster) isLeader() bool { return c.raft.Role() == raft.Leader }

// info writes INFO raft with RedisRaft's field names.
func (c *cluster) info(w func(k string, v any)) {
	st := c.raft.Status()
	m := st.Membership
	w("raft_node_id", st.ID)
	w("raft_dbid", fmt.Sprintf("%016x", c.id))
	w("raft_state", "up")
	w("raft_role", st.Role)
	w("raft_leader_id", st.Lead)
	w("raft_current_term", st.Term)
	w("raft_num_nodes", len(m.Voters)+len(m.Learners))
	w("raft_num_voting_nodes", len(m.Voters))
	voting := "no"
	if m.IsVoter(st.ID) {
		voting = "yes"
	}
	w("raft_is_voting", voting)
	w("raft_current_index", st.LastIndex)
	w("raft_commit_index", st.CommitIndex)
	w("raft_last_applied_index", st.AppliedIndex)
	stats := c.raft.Stats()
	w("raft_snapshots", stats.Snapshots.Load())
	w("raft_snapshot_bytes", stats.SnapshotBytes.Load())
	w("raft_snapshots_sent", stats.Sent.Load())
	w("raft_snapshots_installed", stats.Installed.Load())
	w("raft_snapshot_max_apply_stall_ms", time.Duration(stats.SnapshotMaxStall.Load()).Milliseconds())
	w("raft_log_entries_read", stats.LogEntriesRead.Load())
	w("raft_log_cached_bytes", stats.LogCachedBytes.Load())
	mode := "raft"
	if o := st.Offload; o != nil {
		mode = "offload"
		accel := "no"
		if o.Accelerated {
			accel = "yes"
		}
		w("raft_offload_accelerated", accel)
		w("raft_offload_terms_opened", o.Opened)
		w("raft_offload_fallbacks", o.Fallbacks)
		w("raft_offload_detached", o.Detached)
		w("raft_offload_rejoined", o.Rejoined)
		w("raft_offload_batches", o.Engine.Sealed)
		w("raft_offload_held", o.Engine.Held)
		w("raft_offload_datagrams", o.Engine.Sent)
		w("raft_offload_retransmissions", o.Engine.Replayed)
		w("raft_offload_acks", o.Engine.Acks)
		w("raft_offload_lazy_sends", o.Engine.LazySends)
	}
	w("raft_mode", mode)
}

// Replicas implements resp.Replicator for WAIT: a node that is not a cluster member has
// none, like a standalone Redis.
func (s *Server) Replicas(ctx context.Context) (int64, error) {
	c := s.cl()
	if c == nil {
		if s.pending != nil {
			return 0, errNoCluster
		}
		return 0, nil
	}
	n, err := c.raft.Replicas(ctx)
	if err != nil {
		return 0, c.clientError(err)
	}
	return int64(n), nil
}

// RaftCommand answers RedisRaft's administration commands (resp.RaftAdmin).
func (s *Server) RaftCommand(ctx context.Context, args [][]byte, w kvstore.ReplyWriter) {
	switch strings.ToLower(string(args[0])) {
	case "failover":
		s.failover(ctx, args, w)
		return
	case "replicaof", "slaveof":
		s.replicaof(args, w)
		return
	}
	c := s.cl()
	if c == nil {
		if s.pending != nil && strings.EqualFold(string(args[0]), "raft.cluster") {
			s.pending.command(s, args, w)
			return
		}
		w.Error("NOCLUSTER No Raft Cluster")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	sub := func(i int) string {
		if i < len(args) {
			return strings.ToLower(string(args[i]))
		}
		return ""
	}
	switch sub(0) {
	case "raft.timeout_now":
		if err := c.raft.Campaign(ctx); err != nil {
			w.Error(errLine(c.clientError(err)))
			return
		}
		w.Status("OK")
	case "raft.transfer_leader":
		s.transferLeader(ctx, c, args, w)
	case "raft.node":
		switch sub(1) {
		case "remove":
			if len(args) != 3 {
				w.Error(kvstore.WrongArgs("raft.node"))
				return
			}
			id, ok := parseNodeID(args[2])
			if !ok || id == 0 {
				w.Error("ERR invalid node id")
				return
			}
			if !c.isLeader() {
				w.Error(errLine(c.clientError(raft.ErrNotLeader)))
				return
			}
			if m := c.raft.Status().Membership; !m.IsVoter(id) && !m.IsLearner(id) {
				w.Error("ERR node id does not exist")
				return
			}
			if err := c.raft.ChangeMembership(ctx, raft.ConfChange{Type: raft.RemoveNode, Node: id}); err != nil {
				w.Error(errLine(c.clientError(err)))
				return
			}
			c.tr.RemovePeer(id)
			w.Status("OK")
		case "add":
			s.raftNodeAdd(ctx, args, w)
		default:
			w.Error("ERR RAFT.NODE supports ADD / REMOVE only")
		}
	case "raft.cluster":
		switch sub(1) {
		case "init", "join":
			w.Error("ERR Already cluster member")
		default:
			w.Error("ERR RAFT.CLUSTER supports INIT / JOIN only")
		}
	case "raft.debug":
		if sub(1) == "digest" && len(args) == 2 {
			// [applied index, kvstore digest]: equal on every member at equal index.
			idx, sum := s.appliedDigest()
			w.Array(2)
			w.Int(int64(idx))
			w.BulkString(fmt.Sprintf("%016x", sum))
			return
		}
		if sub(1) == "compact" && len(args) <= 3 {
			// RedisRaft's optional delay argument is accepted and ignored.
			if err := c.raft.Compact(ctx); err != nil {
				w.Error(errLine(err))
				return
			}
			w.Status("OK")
			return
		}
		if sub(1) != "exec" || len(args) < 3 {
			w.Error("ERR RAFT.DEBUG supports EXEC, COMPACT and DIGEST only")
			return
		}
		// A local, unreplicated read: on a follower it may be stale, which is the point.
		spec := kvstore.Lookup(args[2])
		switch {
		case spec == nil:
			w.Error(kvstore.UnknownCommand(args[2:]))
		case spec.Flags&(kvstore.FlagReadOnly|kvstore.FlagWrite) == 0,
			// a write command whose call only reads (SORT without STORE, SCRIPT EXISTS)
			// may run
			spec.Flags&kvstore.FlagWrite != 0 && (!spec.CheckArity(args[2:]) || spec.Writes(args[2:])):
			w.Error("ERR RAFT.DEBUG EXEC runs read-only commands only")
		case !spec.CheckArity(args[2:]):
			w.Error(kvstore.WrongArgs(spec.Name))
		default:
			s.store.ReadSpec(spec, 0, time.Now().UnixMilli(), args[2:], w)
		}
	default:
		w.Error(kvstore.UnknownCommand(args))
	}
}

// errLine is the Redis error line for an error (without the leading '-').
func errLine(err error) string {
	var re interface{ RedisError() string }
	if errors.As(err, &re) {
		return re.RedisError()
	}
	return "ERR " + err.Error()
}

// errNodeIDUsed is RAFT.NODE ADD's answer for an id the cluster has; a joining node
// that hears it on a retry knows its first request was applied (joinCluster).
const errNodeIDUsed = "ERR node id has already been used in this cluster"

// parseNodeID reads a RAFT.NODE id by Redis's rules for an integer (RedisRaft reads it
// with RedisModule_StringToLongLong: no sign, spaces or leading zeros), 0 or more.
func parseNodeID(b []byte) (uint64, bool) {
	v, ok := kvstore.ParseInt(b)
	return uint64(v), ok && v >= 0
}

// raftNodeAdd is RAFT.NODE ADD <id|0> <host:port>: the leader adds a learner (promoted
// once caught up) and answers [id, cluster id].
func (s *Server) raftNodeAdd(ctx context.Context, args [][]byte, w kvstore.ReplyWriter) {
	c := s.cl()
	if len(args) != 4 {
		w.Error(kvstore.WrongArgs("raft.node"))
		return
	}
	id, ok := parseNodeID(args[2])
	if !ok {
		w.Error("ERR invalid node id")
		return
	}
	addr := string(args[3])
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" || port == "0" {
		w.Error("ERR invalid node address")
		return
	}
	if !c.isLeader() {
		w.Error(errLine(c.clientError(raft.ErrNotLeader)))
		return
	}
	m := c.raft.Status().Membership
	if id != 0 && (m.IsVoter(id) || m.IsLearner(id)) {
		w.Error(errNodeIDUsed)
		return
	}
	for id == 0 || m.IsVoter(id) || m.IsLearner(id) {
		id = uint64(rand.Int32N(1<<30)) + 1 // RedisRaft's ids are positive 32-bit ints
	}
	if err := c.raft.ChangeMembership(ctx, raft.ConfChange{Type: raft.AddLearner, Node: id, Addr: addr}); err != nil {
		w.Error(errLine(c.clientError(err)))
		return
	}
	w.Array(2)
	w.Int(int64(id))
	w.BulkString(fmt.Sprintf("%016x", c.id))
}

// appliedDigest is the applied index and the store's digest, read together: the applier
// cannot move between the two (the store's digest and its applied index are taken under
// the same read of the store).
func (s *Server) appliedDigest() (uint64, uint64) {
	return s.store.AppliedDigest()
}

// DefaultOffloadInFlight is how many batches an offload leader sends before it holds the
// next for a commit. On the 2-core machine, redis-benchmark -c 50 -P 1 against three
// members: 1 halves the datagrams (about 15 writes a batch instead of 8) but costs the
// -c 4 client a tenth of its throughput (a write waits for the batch ahead of it); 2
// keeps nearly all of the batching and the low-concurrency latency of 0.
const DefaultOffloadInFlight = 2

// offloadInFlight turns Config.OffloadInFlight into nicoffload.Config.InFlight.
func offloadInFlight(n int) int {
	switch {
	case n == 0:
		return DefaultOffloadInFlight
	case n < 0:
		return 0
	}
	return n
}
