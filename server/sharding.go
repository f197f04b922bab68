package server

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/nanokv/nanokv/kvstore"
)

// RedisRaft's sharding (--sharding, CONFIG SET raft.sharding yes): the member answers
// cluster-aware clients (go-redis's ClusterClient, redis-py's RedisCluster, Lettuce,
// ioredis) as one shard group that holds every hash slot. CLUSTER SLOTS names the
// leader as the master of slots 0-16383 and the other members as its replicas; CLUSTER
// NODES lists the members in RedisRaft's format. A client that sends a key to a
// follower is answered -MOVED <the key's slot> <leader> (resp's shardRoute; RedisRaft
// says slot 0) and moves the slot: after a leadership change it finds the new leader
// by itself, where a plain client must be pointed at it. Keys in more than one slot
// are refused (CROSSSLOT). As in RedisRaft, CLUSTER answers SLOTS and NODES alone, and
// INFO says cluster_enabled:1 (redis-py checks it before it asks for the slots). A
// connection that sent READONLY has a follower serve its reads, each after the
// replica's read barrier (ReplicaReadBarrier), as clients that read from replicas
// expect of a Redis Cluster replica, but linearizable.

// numSlots is Redis Cluster's count of hash slots.
const numSlots = 16384

// ShardingSwitch implements resp.Sharder.
func (s *Server) ShardingSwitch() *atomic.Bool { return &s.sharding }

// ShardLeader implements resp.Sharder: the leader's Redis address while this member
// sends its clients there.
func (s *Server) ShardLeader() string {
	c := s.cl()
	if c == nil || c.proxy.Load() || c.isLeader() {
		return ""
	}
	if lead := c.raft.Status().Lead; lead != 0 && lead != c.nodeID {
		return c.tr.PeerMeta(lead)
	}
	return ""
}

// ReplicaReadBarrier implements resp.Sharder: a follower's barrier is an empty entry
// forwarded through the leader's log (proxiedBarrier), as under follower-proxy.
func (s *Server) ReplicaReadBarrier(ctx context.Context) error {
	if c := s.cl(); c != nil {
		return c.readBarrier(ctx, true)
	}
	return s.ReadBarrier(ctx)
}

// ClusterCommand implements resp.Sharder: RedisRaft's CLUSTER SLOTS and CLUSTER NODES,
// with its errors (ShardingHandleClusterCommand).
func (s *Server) ClusterCommand(args [][]byte, w kvstore.ReplyWriter) {
	if len(args) != 2 {
		w.Error(kvstore.WrongArgs(string(args[0]))) // the name as sent, as RedisModule_WrongArity
		return
	}
	c := s.cl()
	if c == nil {
		w.Error("NOCLUSTER No Raft Cluster")
		return
	}
	sub := strings.ToLower(string(args[1]))
	if sub != "slots" && sub != "nodes" {
		w.Error("ERR Unknown subcommand.")
		return
	}
	st := c.raft.Status()
	if st.Lead == 0 {
		w.Error("CLUSTERDOWN No raft leader")
		return
	}
	// The members with a known Redis address, the leader first (RedisRaft lists the
	// others in the order they joined; here by id).
	type member struct {
		id         uint64
		host, port string
	}
	var members []member
	add := func(id uint64) {
		addr := s.RedisAddr()
		if id != st.ID {
			addr = c.tr.PeerMeta(id)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return // not heard from yet, as RedisRaft skips a node it has no address of
		}
		members = append(members, member{id, host, port})
	}
	add(st.Lead)
	for _, ids := range [][]uint64{st.Membership.Voters, st.Membership.Learners} {
		for _, id := range ids {
			if id != st.Lead {
				add(id)
			}
		}
	}
	if len(members) == 0 || members[0].id != st.Lead {
		w.Error("CLUSTERDOWN No raft leader")
		return
	}
	nodeID := func(id uint64) string {
		// RedisRaft's "%.32s%08x" of its dbid and the node's id: 40 hex digits, as a
		// Redis Cluster node id; nanokv's dbid is 16 digits, padded to RedisRaft's 32.
		return fmt.Sprintf("%032x%08x", c.id, uint32(id))
	}
	if sub == "slots" {
		w.Array(1)
		w.Array(2 + len(members))
		w.Int(0)
		w.Int(numSlots - 1)
		for _, m := range members {
			port, _ := strconv.Atoi(m.port)
			w.Array(3)
			w.BulkString(m.host)
			w.Int(int64(port))
			w.BulkString(nodeID(m.id))
		}
		return
	}
	var b strings.Builder
	for _, m := range members {
		flags, master := "master", "-"
		if m.id != st.Lead {
			flags, master = "slave", nodeID(st.Lead)
		}
		if m.id == st.ID {
			flags = "myself," + flags
		}
		// id host:port@cport flags master ping-sent pong-recv epoch link-state slots,
		// every member with the group's slots and RedisRaft's \r\n line ends
		fmt.Fprintf(&b, "%s %s:%s@%s %s %s 0 0 %d connected 0-%d\r\n",
			nodeID(m.id), m.host, m.port, m.port, flags, master, st.Term, numSlots-1)
	}
	w.BulkString(b.String())
}
