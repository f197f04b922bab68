package server

import (
	"context"
	"net"
	"strconv"
	"strings"

	"github.com/nanokv/nanokv/kvstore"
)

// FAILOVER, REPLICAOF and SLAVEOF in Raft's terms. A Redis primary's replicas are a
// leader's followers here: FAILOVER hands leadership to one of them (to the one at host
// port, or to the one that holds the most of the log), as RAFT.TRANSFER_LEADER does, and
// answers once the transfer has begun, as Redis answers once its failover has. REPLICAOF
// NO ONE is already true of a single node or a leader; making a member follow another
// server is Raft's business (RAFT.NODE ADD, --join), and REPLICAOF host port is refused.

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
		w.Error(errLine(c.clientError(err)))
		return
	}
	w.Status("OK")
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
