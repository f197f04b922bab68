package server

import (
	"context"
	"errors"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/nanokv/nanokv/consensus/raft"
	"github.com/nanokv/nanokv/kvstore"
)

// FAILOVER, REPLICAOF and SLAVEOF in Raft's terms, and RAFT.TRANSFER_LEADER. A Redis
// primary's replicas are a leader's followers here: FAILOVER hands leadership to one of
// them (to the one at host port, or to the one that holds the most of the log), as
// RAFT.TRANSFER_LEADER does, and answers once the transfer has begun, as Redis answers
// once its failover has; RAFT.TRANSFER_LEADER answers once it is over, as RedisRaft does.
// REPLICAOF NO ONE is already true of a single node or a leader; making a member follow
// another server is Raft's business (RAFT.NODE ADD, --join), and REPLICAOF host port is
// refused.

func (s *Server) failover(ctx context.Context, args [][]byte, w kvstore.ReplyWriter) {
	if len(args) == 2 && strings.EqualFold(string(args[1]), "abort") {
		w.Error("ERR No failover in progress.") // a transfer is not abortable: it is over at once
		return
	}
	var timeout, port int64
	var host string
	force := false
	for j := 1; j < len(args); j++ {
		a := strings.ToLower(string(args[j]))
		switch {
		case a == "timeout" && j+1 < len(args) && timeout == 0:
			n, ok := kvstore.ParseInt(args[j+1])
			if !ok {
				w.Error("ERR value is not an integer or out of range")
				return
			}
			if n <= 0 {
				w.Error("ERR FAILOVER timeout must be greater than 0")
				return
			}
			timeout, j = n, j+1
		case a == "to" && j+2 < len(args) && host == "":
			n, ok := kvstore.ParseInt(args[j+2])
			if !ok {
				w.Error("ERR value is not an integer or out of range")
				return
			}
			host, port, j = string(args[j+1]), n, j+2
		case a == "force" && !force:
			force = true
		default:
			w.Error(kvstore.ErrSyntax)
			return
		}
	}
	c := s.cl()
	switch {
	case c == nil && s.pending != nil:
		w.Error(string(errNoCluster))
		return
	case c == nil:
		w.Error("ERR FAILOVER requires connected replicas.")
		return
	}
	st := c.raft.Status()
	switch {
	case st.Lead != st.ID:
		w.Error("ERR FAILOVER is not valid when server is a replica.")
		return
	case len(st.Membership.Voters) < 2:
		w.Error("ERR FAILOVER requires connected replicas.")
		return
	case force && (timeout == 0 || host == ""):
		w.Error("ERR FAILOVER with force option requires both a timeout and target HOST and IP.")
		return
	}
	var target uint64
	if host != "" {
		want := net.JoinHostPort(host, strconv.FormatInt(port, 10))
		for _, id := range st.Membership.Voters {
			if id != st.ID && c.tr.PeerMeta(id) == want {
				target = id
			}
		}
		if target == 0 {
			w.Error("ERR FAILOVER target HOST and PORT is not a replica.")
			return
		}
	}
	if _, err := c.raft.TransferLeader(ctx, target); err != nil {
		if errors.Is(err, raft.ErrTransferring) {
			w.Error("ERR FAILOVER already in progress.")
		} else {
			w.Error(errLine(c.clientError(err)))
		}
		return
	}
	w.Status("OK")
}

// transferLeader is RAFT.TRANSFER_LEADER [id], with RedisRaft's replies: the leader
// hands over to member id, or with no id (or -1, RedisRaft's "no node") to the member
// that holds the most of the log, and answers +OK once that member leads; "ERR
// different node elected leader" if another took over, "ERR transfer timed out" if the
// leader gave up (after an election timeout) or the request timed out.
func (s *Server) transferLeader(ctx context.Context, c *cluster, args [][]byte, w kvstore.ReplyWriter) {
	if len(args) > 2 {
		w.Error(kvstore.WrongArgs("raft.transfer_leader"))
		return
	}
	var target uint64
	if len(args) == 2 {
		id, ok := kvstore.ParseInt(args[1]) // Redis's rules for an integer
		switch {
		case !ok || id < math.MinInt32 || id > math.MaxInt32: // RedisRaft's node ids are ints
			w.Error("ERR invalid target node id")
			return
		case id == -1: // RedisRaft's "no node": the leader picks
		case id <= 0:
			w.Error("ERR invalid node id")
			return
		default:
			target = uint64(id)
		}
	}
	to, err := c.raft.TransferLeader(ctx, target)
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		w.Error("ERR not leader")
		return
	case errors.Is(err, raft.ErrTransferring):
		w.Error("ERR leader transfer is in progress")
		return
	case errors.Is(err, raft.ErrBadConfChange): // itself, not a voter, or no one to take over
		w.Error("ERR invalid node id")
		return
	case err != nil:
		w.Error(errLine(c.clientError(err)))
		return
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		st := c.raft.Status()
		switch {
		case st.Lead == to:
			w.Status("OK")
			return
		case st.Lead != raft.None && st.Lead != st.ID:
			w.Error("ERR different node elected leader")
			return
		case st.Lead == st.ID && st.Transferee != to:
			w.Error("ERR transfer timed out") // the leader gave up on it
			return
		}
		select {
		case <-ctx.Done():
			w.Error("ERR transfer timed out")
			return
		case <-tick.C:
		}
	}
}

func (s *Server) replicaof(args [][]byte, w kvstore.ReplyWriter) {
	if strings.EqualFold(string(args[1]), "no") && strings.EqualFold(string(args[2]), "one") {
		if c := s.cl(); c != nil {
			if st := c.raft.Status(); st.Lead != st.ID {
				w.Error("ERR this member follows the Raft leader: RAFT.TRANSFER_LEADER on the leader, or RAFT.TIMEOUT_NOW here, makes it lead")
				return
			}
		}
		w.Status("OK") // a single node, or the leader: a master already
		return
	}
	if _, ok := kvstore.ParseInt(args[2]); !ok {
		w.Error("ERR value is not an integer or out of range")
		return
	}
	w.Error("ERR REPLICAOF is not supported: nanokv members replicate through Raft (RAFT.NODE ADD, --join)")
}
