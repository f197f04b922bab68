package server

import (
	"context"
	"fmt"
	"net"

	"github.com/nanokv/nanokv/kvstore"
	"github.com/nanokv/nanokv/zkproto"
)

// The ZooKeeper frontend (--zk). Unlike Redis clients, which a follower redirects with
// -MOVED, a ZooKeeper client may talk to any member: reads are served from the member's
// own store (ZooKeeper's sequential consistency) and writes are forwarded to the leader
// (consensus.RaftNode.ProposeForward), their results handed back when the member applies
// the entry.

func (s *Server) startZK() error {
	ln, err := net.Listen("tcp", s.cfg.ZKAddr)
	if err != nil {
		return fmt.Errorf("server: zookeeper listener: %w", err)
	}
	s.zkln = ln
	words := s.cfg.ZKFourLetterWords
	if words == nil {
		words = DefaultZKFourLetterWords
	}
	zc := zkproto.Config{FourLetterWords: words, ExtendedTypes: s.cfg.ZKExtendedTypes,
		ServerID: s.cfg.NodeID, DataDir: s.cfg.DataDir, Logf: s.logf, TickTime: s.cfg.ZKTickTime,
		SessionsChanged: func(n int) { s.zkSessions.Store(int64(n)) }}
	if s.node == nil && !s.cfg.ZKNoEventLoop {
		zc.Async = zkAsync{s}
	}
	s.zk = zkproto.NewServer(s, zc)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.zk.Serve(ln); err != nil {
			s.logf("server: zookeeper listener: %v", err)
		}
	}()
	return nil
}

// DefaultZKFourLetterWords is the default 4lw.commands.whitelist: ZooKeeper 3.8 allows
// only srvr by default; nanokv also answers the other read-only words, which tools
// (kazoo's server_version reads envi) and operators expect.
var DefaultZKFourLetterWords = []string{"srvr", "stat", "ruok", "isro", "envi", "mntr", "conf", "cons", "wchs", "dirs"}

// ZKAddr is the address the ZooKeeper listener is bound to ("" if disabled).
func (s *Server) ZKAddr() string {
	if s.zkln == nil {
		return ""
	}
	return s.zkln.Addr().String()
}

// ProposeAnywhere implements zkproto.Backend: on a follower the batch is forwarded to the
// leader.
func (s *Server) ProposeAnywhere(batch []byte, sink kvstore.Sink) error {
	var local any
	if sink != nil {
		local = sink
	}
	if c := s.cl(); c != nil {
		ctx, cancel := c.requestCtx(context.Background())
		defer cancel()
		_, err := c.raft.ProposeForward(ctx, batch, local)
		return err
	}
	if s.pending != nil {
		return errNoCluster
	}
	_, err := s.node.Propose(batch, local)
	return err
}

// zkAsync is what the ZooKeeper frontend's event loop proposes through on a cluster
// member: the Server's asynchronous proposals, forwarded from a follower to the leader
// as ProposeAnywhere's are, and answered once applied here.
type zkAsync struct{ *Server }

// ProposeAsync implements netserve.AsyncBackend.
func (z zkAsync) ProposeAsync(batch []byte, sink kvstore.Sink, done func(error)) {
	c := z.cl()
	if sink == nil {
		if c == nil {
			done(z.ProposeAnywhere(batch, nil))
			return
		}
		c.raft.ProposeAsync(batch, nil, true, done)
		return
	}
	as := &zkAppliedSink{appliedSink{Sink: sink, done: done}}
	if c == nil {
		// A member before INIT or JOIN: refused at once, as ProposeAnywhere is.
		if err := z.ProposeAnywhere(batch, as); err != nil {
			as.committed(err)
		}
		return
	}
	c.raft.ProposeAsync(batch, as, true, as.committed)
}

// zkAppliedSink is an appliedSink that hands the store's ZooKeeper results on to the
// sink it wraps (kvstore.ZKResultWriter), as the frontend's own sink takes them.
type zkAppliedSink struct{ appliedSink }

func (s *zkAppliedSink) ZKResult(res *kvstore.ZKResult) {
	if w, ok := s.Sink.(kvstore.ZKResultWriter); ok {
		w.ZKResult(res)
	}
}

// ReadBarrierAsync implements netserve.AsyncBackend; ZooKeeper reads need no barrier
// (zkproto never asks for one).
func (z zkAsync) ReadBarrierAsync(done func(error)) { done(nil) }

// IsLeader implements zkproto.Backend: a single node always leads.
func (s *Server) IsLeader() bool {
	if c := s.cl(); c != nil {
		return c.isLeader()
	}
	return s.pending == nil
}

// Mode implements zkproto.Backend (srvr's "Mode:").
func (s *Server) Mode() string {
	switch c := s.cl(); {
	case c == nil:
		return "standalone"
	case c.isLeader():
		return "leader"
	}
	return "follower"
}
