package consensus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanokv/nanokv/consensus/raft"
)

func listenT(t *testing.T, id, cluster uint64, addr string, deliver func(raft.Message), logf func(string, ...any)) *TCPTransport {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	tr, err := ListenTransport(TransportConfig{ID: id, ClusterID: cluster, Listen: addr, Deliver: deliver, Logf: logf,
		Meta: fmt.Sprintf("member-%d", id)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

func recvWithin(t *testing.T, ch <-chan raft.Message) raft.Message {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("message not delivered")
	}
	return raft.Message{}
}

func TestTransportDeliversBothWays(t *testing.T) {
	in1, in2 := make(chan raft.Message, 16), make(chan raft.Message, 16)
	a := listenT(t, 1, 7, "", func(m raft.Message) { in1 <- m }, nil)
	b := listenT(t, 2, 7, "", func(m raft.Message) { in2 <- m }, nil)
	a.SetPeer(2, b.Addr())
	b.SetPeer(1, a.Addr())
	a.Send([]raft.Message{{Type: raft.MsgApp, From: 1, To: 2, Term: 3, Entries: []raft.Entry{{Index: 1, Term: 3, Data: []byte("x")}}}})
	b.Send([]raft.Message{{Type: raft.MsgAppResp, From: 2, To: 1, Term: 3, Index: 1}})
	if m := recvWithin(t, in2); m.Type != raft.MsgApp || string(m.Entries[0].Data) != "x" {
		t.Fatalf("b got %+v", m)
	}
	if m := recvWithin(t, in1); m.Type != raft.MsgAppResp || m.Index != 1 {
		t.Fatalf("a got %+v", m)
	}
	// Each learned what the other said of itself in its hello.
	if a.PeerMeta(2) != "member-2" || b.PeerMeta(1) != "member-1" {
		t.Fatalf("metas %q %q", a.PeerMeta(2), b.PeerMeta(1))
	}
}

// A member of another cluster is refused before any of its messages is delivered.
// A lazy peer's AppendEntries wait lazyDelay, but not one that says its receiver waits
// for a commit (raft.Message.Waiting: a write it forwarded), nor other messages.
func TestTransportSendsAtOnceToALazyPeerThatWaits(t *testing.T) {
	// Restored after the transports' own cleanups (registered later, run first), so no
	// writer goroutine still reads it.
	was := lazyDelay
	t.Cleanup(func() { lazyDelay = was })
	lazyDelay = 30 * time.Second // held back, a message would miss recvWithin's 10 s
	in := make(chan raft.Message, 16)
	a := listenT(t, 1, 7, "", nil, nil)
	b := listenT(t, 2, 7, "", func(m raft.Message) { in <- m }, nil)
	a.SetPeer(2, b.Addr())
	a.SetLazy(2, true)
	a.Send([]raft.Message{{Type: raft.MsgHeartbeat, From: 1, To: 2, Term: 3}})
	if m := recvWithin(t, in); m.Type != raft.MsgHeartbeat {
		t.Fatalf("got %+v, want the heartbeat", m)
	}
	a.Send([]raft.Message{{Type: raft.MsgApp, From: 1, To: 2, Term: 3, Index: 4, Waiting: true,
		Entries: []raft.Entry{{Index: 5, Term: 3, Data: []byte("x")}}}})
	if m := recvWithin(t, in); m.Type != raft.MsgApp || m.Index != 4 {
		t.Fatalf("got %+v, want the MsgApp", m)
	}
}

func TestTransportRejectsOtherCluster(t *testing.T) {
	in := make(chan raft.Message, 16)
	rejected := make(chan string, 4)
	b := listenT(t, 2, 7, "", func(m raft.Message) { in <- m }, func(f string, args ...any) {
		if len(args) > 1 {
			if err, ok := args[1].(error); ok && errors.Is(err, ErrWrongCluster) {
				rejected <- err.Error()
			}
		}
	})
	stranger := listenT(t, 1, 8, "", func(raft.Message) {}, nil)
	stranger.SetPeer(2, b.Addr())
	stranger.Send([]raft.Message{{Type: raft.MsgVote, From: 1, To: 2, Term: 99}})
	select {
	case msg := <-rejected:
		if !strings.Contains(msg, "another cluster") {
			t.Fatalf("rejection %q", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("connection from another cluster not rejected")
	}
	friend := listenT(t, 3, 7, "", func(raft.Message) {}, nil)
	friend.SetPeer(2, b.Addr())
	friend.Send([]raft.Message{{Type: raft.MsgHeartbeat, From: 3, To: 2, Term: 1}})
	if m := recvWithin(t, in); m.From != 3 {
		t.Fatalf("delivered %+v from the other cluster", m)
	}
}

// A peer that goes away and comes back on the same address is reconnected to.
func TestTransportReconnects(t *testing.T) {
	in := make(chan raft.Message, 64)
	deliver := func(m raft.Message) {
		select {
		case in <- m:
		default:
		}
	}
	b := listenT(t, 2, 7, "", deliver, nil)
	addr := b.Addr()
	a := listenT(t, 1, 7, "", func(raft.Message) {}, nil)
	a.SetPeer(2, addr)
	a.Send([]raft.Message{{Type: raft.MsgHeartbeat, From: 1, To: 2, Term: 1}})
	recvWithin(t, in)
	b.Close()
	listenT(t, 2, 7, addr, deliver, nil) // the peer comes back on the same address
	deadline := time.Now().Add(10 * time.Second)
	for {
		a.Send([]raft.Message{{Type: raft.MsgHeartbeat, From: 1, To: 2, Term: 2}})
		select {
		case m := <-in:
			if m.Term == 2 {
				return
			}
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no delivery after the peer came back")
		}
	}
}

// A peer whose connection breaks is probed on its member port: a live one (still
// listening) is not reported, a dead one (refused) is, once.
func TestTransportReportsDeadPeer(t *testing.T) {
	down := make(chan uint64, 8)
	in := make(chan raft.Message, 1)
	b, err := ListenTransport(TransportConfig{ID: 2, ClusterID: 7, Listen: "127.0.0.1:0",
		Deliver: func(m raft.Message) { in <- m }, PeerDown: func(id uint64) { down <- id }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := new(atomic.Int64)
	a, err := ListenTransport(TransportConfig{ID: 1, ClusterID: 7, Listener: acceptCounter{ln, accepted},
		Deliver: func(raft.Message) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b.SetPeer(1, a.Addr())

	// One connection from member 1 breaks while member 1 still runs: b's probe
	// connects, every time it tries, and reports nothing. The probe must be over before
	// member 1 dies: its last dial would be refused then, and rightly report. (Counting
	// the dials member 1 accepts cannot tell: b's own connection to it may be dialled
	// once or twice, as the break also makes b's writer dial again.)
	c, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(a.hello()); err != nil {
		t.Fatal(err)
	}
	c.Close()
	for deadline := time.Now().Add(10 * time.Second); b.probesDone.Load() < 1; {
		if time.Now().After(deadline) {
			t.Fatal("the live peer's probe did not finish")
		}
		time.Sleep(time.Millisecond)
	}
	if len(down) != 0 {
		t.Fatal("the live peer was reported")
	}
	for deadline := time.Now().Add(10 * time.Second); accepted.Load() < probeAttempts; {
		if time.Now().After(deadline) {
			t.Fatalf("member 1 accepted %d connections; the probe dials %d times", accepted.Load(), probeAttempts)
		}
		time.Sleep(time.Millisecond)
	}

	// Member 1 dies: its connection ends and its port refuses.
	a.SetPeer(2, b.Addr())
	a.Send([]raft.Message{{Type: raft.MsgHeartbeat, From: 1, To: 2, Term: 1}})
	recvWithin(t, in)
	a.Close()
	select {
	case id := <-down:
		if id != 1 {
			t.Fatalf("reported member %d", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the dead peer was not reported")
	}
	b.Close() // waits for every probe
	// More than one of member 1's connections may break as it dies (its writer can be
	// redialling as it closes), and each break is probed: a dead peer may be reported
	// again, which raft.PeerDown ignores (it has dropped that leader already). Only
	// another member must not be reported.
	for len(down) > 0 {
		if id := <-down; id != 1 {
			t.Fatalf("reported member %d", id)
		}
	}
}

// acceptCounter counts the connections its listener accepts.
type acceptCounter struct {
	net.Listener
	accepted *atomic.Int64
}

func (l acceptCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// tcpCluster is n RaftNodes over real TCP transports, memory only, with a fast clock.
type tcpCluster struct {
	t     *testing.T
	nodes map[uint64]*RaftNode
	trs   map[uint64]*TCPTransport
	sms   map[uint64]*kvSM
}

// startTCPCluster starts it; config, if set, adjusts each member's RaftConfig (every
// transport is listening by then).
func startTCPCluster(t *testing.T, n int, config func(c *tcpCluster, cfg *RaftConfig)) *tcpCluster {
	var mu sync.Mutex
	c := &tcpCluster{t: t, nodes: map[uint64]*RaftNode{}, trs: map[uint64]*TCPTransport{}, sms: map[uint64]*kvSM{}}
	var boot raft.Membership
	for id := uint64(1); id <= uint64(n); id++ {
		boot.Voters = append(boot.Voters, id)
	}
	for _, id := range boot.Voters {
		c.trs[id] = listenT(t, id, 42, "", func(m raft.Message) {
			mu.Lock()
			node := c.nodes[m.To]
			mu.Unlock()
			if node != nil {
				node.Step(m)
			}
		}, nil)
	}
	for _, id := range boot.Voters {
		for _, peer := range boot.Voters {
			c.trs[id].SetPeer(peer, c.trs[peer].Addr())
		}
		c.sms[id] = &kvSM{kv: map[string]string{}}
		cfg := RaftConfig{ID: id, Bootstrap: boot, SM: c.sms[id], Send: c.trs[id].Send, MemoryOnly: true,
			TickInterval: 5 * time.Millisecond, ElectionTicks: 10}
		if config != nil {
			config(c, &cfg)
		}
		node, err := StartRaft(cfg)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		c.nodes[id] = node
		mu.Unlock()
		t.Cleanup(func() { node.Close() })
	}
	return c
}

// leaderOf waits for a leader other than exclude.
func (c *tcpCluster) leaderOf(exclude uint64) *RaftNode {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for id, node := range c.nodes {
			if id != exclude && node.Status().Role == raft.Leader {
				return node
			}
		}
		time.Sleep(time.Millisecond)
	}
	c.t.Fatal("no leader")
	return nil
}

// Three members over real TCP: election, replication, failover when the leader stops.
func TestRaftNodeOverTCP(t *testing.T) {
	c := startTCPCluster(t, 3, nil)
	nodes, trs, sms, leaderOf := c.nodes, c.trs, c.sms, c.leaderOf
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lead := leaderOf(0)
	idx, err := lead.Propose(ctx, []byte("k=1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for id, node := range nodes {
		if err := node.WaitApplied(ctx, idx); err != nil {
			t.Fatalf("member %d: %v", id, err)
		}
	}
	old := lead.Status().ID
	lead.Close()
	trs[old].Close()
	start := time.Now()
	next := leaderOf(old)
	t.Logf("failover over TCP took %v", time.Since(start))
	if _, err := next.Propose(ctx, []byte("k=2"), nil); err != nil {
		t.Fatal(err)
	}
	if err := next.ReadBarrier(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sms[next.Status().ID].get("k"); got != "2" {
		t.Fatalf("k=%q", got)
	}
}

// The leader of three keeps one follower eager and holds the other's entries back (the
// transport's SetLazy); when the eager one stops, writes commit through the lazy one,
// which the leader then makes eager.
func TestLazyFollowerTakesOver(t *testing.T) {
	var mu sync.Mutex
	lazy := map[uint64]map[uint64]bool{} // member -> peer -> lazy
	c := startTCPCluster(t, 3, func(c *tcpCluster, cfg *RaftConfig) {
		id, tr := cfg.ID, c.trs[cfg.ID]
		lazy[id] = map[uint64]bool{}
		cfg.SetLazy = func(peer uint64, l bool) {
			tr.SetLazy(peer, l)
			mu.Lock()
			lazy[id][peer] = l
			mu.Unlock()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lead := c.leaderOf(0)
	leadID := lead.Status().ID
	// waitLazy waits until the leader holds back exactly want (and no other member any).
	waitLazy := func(want uint64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			ok := true
			for member, peers := range lazy {
				for peer, l := range peers {
					if l != (member == leadID && peer == want) {
						ok = false
					}
				}
			}
			ok = ok && lazy[leadID][want]
			mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("lazy peers %v, want member %d to hold back %d alone", lazy, leadID, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	if _, err := lead.Propose(ctx, []byte("k=1"), nil); err != nil {
		t.Fatal(err)
	}
	var held uint64
	deadline := time.Now().Add(10 * time.Second)
	for held == 0 {
		mu.Lock()
		for peer, l := range lazy[leadID] {
			if l {
				held = peer
			}
		}
		mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the leader never held a follower back")
		}
		time.Sleep(time.Millisecond)
	}
	waitLazy(held)
	var eager uint64
	for id := range c.nodes {
		if id != leadID && id != held {
			eager = id
		}
	}
	c.nodes[eager].Close()
	c.trs[eager].Close()
	idx, err := lead.Propose(ctx, []byte("k=2"), nil)
	if err != nil {
		t.Fatalf("a write with the eager follower gone: %v", err)
	}
	waitLazy(eager)
	if err := c.nodes[held].WaitApplied(ctx, idx); err != nil {
		t.Fatal(err)
	}
	if got := c.sms[held].get("k"); got != "2" {
		t.Fatalf("k=%q on the follower that was lazy", got)
	}
}

// A snapshot arrives whole or not at all: the MsgSnap is delivered only after every chunk
// is on disk, and an announcement without its chunks is refused.
func TestTransportSnapshots(t *testing.T) {
	in := make(chan raft.Message, 4)
	dir := t.TempDir()
	b, err := ListenTransport(TransportConfig{ID: 2, ClusterID: 7, Listen: "127.0.0.1:0", SnapshotDir: dir,
		Deliver: func(m raft.Message) { in <- m }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a := listenT(t, 1, 7, "", func(raft.Message) {}, nil)
	a.SetPeer(2, b.Addr())
	data := bytes.Repeat([]byte("snapshot!"), 300000) // several chunks
	m := raft.Message{Type: raft.MsgSnap, From: 1, To: 2, Term: 3, Snapshot: &raft.SnapshotMeta{Index: 42, Term: 3}}
	if err := a.SendSnapshot(m, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if got := recvWithin(t, in); got.Type != raft.MsgSnap || got.Snapshot.Index != 42 {
		t.Fatalf("delivered %+v", got)
	}
	if got, err := os.ReadFile(receivedSnapshotPath(dir, 42)); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("received file: %d bytes, %v", len(got), err)
	}
	// A MsgSnap with no chunks before it.
	c, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(a.hello())
	m.Snapshot = &raft.SnapshotMeta{Index: 43, Term: 3}
	c.Write(appendMsgFrame(nil, &m))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection kept open after a bogus snapshot announcement")
	}
	select {
	case got := <-in:
		t.Fatalf("bogus announcement delivered: %+v", got)
	default:
	}
}
