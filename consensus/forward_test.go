package consensus

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nanokv/nanokv/consensus/raft"
)

// follower returns a member that follows lead, once it knows lead (until then it
// refuses to forward, with ErrNotLeader).
func (c *testCluster) follower(lead *RaftNode) (uint64, *RaftNode) {
	for id, n := range c.nodes() {
		if n != lead && !c.net.isCut(id) {
			c.awaitLeaderKnown(n, lead.Status().ID)
			return id, n
		}
	}
	c.t.Fatal("no follower")
	return 0, nil
}

// awaitLeaderKnown polls until member n has heard from leader lead.
func (c *testCluster) awaitLeaderKnown(n *RaftNode, lead uint64) {
	c.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); n.Status().Lead != lead; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			c.t.Fatalf("member %d never heard from leader %d", n.Status().ID, lead)
		}
	}
}

// A follower's forwarded proposal commits once, in the one log, and its local value
// reaches the state machine of the follower that forwarded it, and no other.
func TestRaftNodeFollowerForwardsProposals(t *testing.T) {
	c := newTestCluster(t, 3, false)
	lead := c.leader()
	fid, f := c.follower(lead)
	ctx := ctxT(t)
	// A proposal that may not be forwarded is still refused on a follower.
	if _, err := f.Propose(ctx, []byte("x=1"), nil); !errors.Is(err, raft.ErrNotLeader) {
		t.Fatalf("Propose on a follower: %v", err)
	}
	var last uint64
	for i := range 20 {
		token := fmt.Sprintf("client-%d", i)
		idx, err := f.ProposeForward(ctx, fmt.Appendf(nil, "fk%d=v%d", i%3, i), token)
		if err != nil {
			t.Fatal(err)
		}
		if idx <= last {
			t.Fatalf("forwarded proposal %d committed at %d, after %d", i, idx, last)
		}
		last = idx
		if err := f.WaitApplied(ctx, idx); err != nil {
			t.Fatal(err)
		}
		if got := c.sm(fid).local(idx); got != token {
			t.Fatalf("entry %d reached the forwarding member with local %v, want %q", idx, got, token)
		}
	}
	for id, n := range c.nodes() {
		if err := n.WaitApplied(ctx, last); err != nil {
			t.Fatal(err)
		}
		if got := c.sm(id).get("fk1"); got != "v19" {
			t.Fatalf("member %d: fk1=%q", id, got)
		}
		if id != fid && c.sm(id).local(last) != nil {
			t.Fatalf("member %d got the forwarding member's local value", id)
		}
	}
	// The entries carry the plain data to every state machine: the forwarding tag is gone.
	for id := range c.nodes() {
		if got := c.sm(id).get("fk0"); got != "v18" {
			t.Fatalf("member %d: fk0=%q, want v18", id, got)
		}
	}
	// The leader's own ProposeForward is an ordinary proposal.
	idx, err := lead.ProposeForward(ctx, []byte("lk=1"), "mine")
	if err != nil {
		t.Fatal(err)
	}
	if err := lead.WaitApplied(ctx, idx); err != nil {
		t.Fatal(err)
	}
	for id, n := range c.nodes() {
		if n == lead && c.sm(id).local(idx) != "mine" {
			t.Fatalf("leader's local value lost")
		}
	}
}

// A forward that reaches a member that does not lead is refused at once, not left to
// time out.
func TestRaftNodeForwardToNonLeaderIsRefused(t *testing.T) {
	c := newTestCluster(t, 3, false)
	lead := c.leader()
	fid, f := c.follower(lead)
	var other uint64
	for id, n := range c.nodes() {
		if n != lead && id != fid {
			other = id
		}
	}
	c.net.mu.Lock()
	c.net.rewrite = func(m *raft.Message) {
		if m.Type == raft.MsgForward {
			m.To = other
		}
	}
	c.net.mu.Unlock()
	start := time.Now()
	_, err := f.ProposeForward(ctxT(t), []byte("k=v"), nil)
	if !errors.Is(err, raft.ErrNotLeader) {
		t.Fatalf("forward to a follower: %v, want ErrNotLeader", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("refusal took %v", waited)
	}
}

// Forwarding survives a leader change: once a new leader is known, forwards go to it.
func TestRaftNodeForwardAfterFailover(t *testing.T) {
	c := newTestCluster(t, 3, false)
	old := c.leader()
	for id, n := range c.nodes() {
		if n == old {
			c.net.setCut(id, true)
		}
	}
	lead := c.leader()
	_, f := c.follower(lead)
	if f == old {
		t.Fatal("picked the cut-off member")
	}
	ctx := ctxT(t)
	// The follower may still point at the old leader for a moment: retry until the
	// forward lands, as a frontend's client would.
	deadline := time.Now().Add(5 * time.Second)
	for {
		idx, err := f.ProposeForward(ctxShort(t, 200*time.Millisecond), []byte("after=1"), nil)
		if err == nil {
			if err := f.WaitApplied(ctx, idx); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("forward after failover: %v", err)
		}
	}
}

func ctxShort(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Forwards that reach the leader together are proposed together: one batch, so the
// first append that carries one of them to a follower carries them all (one datagram per
// follower in offload mode, where a proposal per forward cost a datagram each).
func TestRaftNodeProposesForwardsThatArriveTogetherAsOneBatch(t *testing.T) {
	c := newTestCluster(t, 3, false)
	lead := c.leader()
	leadID := lead.Status().ID
	var followers []*RaftNode
	for _, n := range c.nodes() {
		if n != lead {
			followers = append(followers, n)
		}
	}
	// Counted on the senders' side, under the network's lock: a message counted here is
	// in its receiver's inbox.
	forwards := 0
	firstApp := map[uint64]int{} // follower: forwarded entries in the first append with any
	c.net.mu.Lock()
	c.net.rewrite = func(m *raft.Message) {
		if m.Type == raft.MsgForward && m.To == leadID {
			forwards++
		}
		if m.Type != raft.MsgApp || m.From != leadID {
			return
		}
		n := 0
		for _, e := range m.Entries {
			if e.Type == raft.EntryForwarded {
				n++
			}
		}
		if _, seen := firstApp[m.To]; n > 0 && !seen {
			firstApp[m.To] = n
		}
	}
	c.net.mu.Unlock()

	// A follower that has not heard from the new leader yet refuses to forward.
	for _, f := range followers {
		c.awaitLeaderKnown(f, leadID)
	}

	// Hold the leader's loop up while each follower forwards a write.
	release, held := make(chan struct{}), make(chan struct{})
	go lead.do(context.Background(), func(*raft.Raft) error { close(held); <-release; return nil })
	<-held
	ctx := ctxT(t)
	errs := make(chan error, len(followers))
	for i, f := range followers {
		go func() {
			_, err := f.ProposeForward(ctx, fmt.Appendf(nil, "fw%d=1", i), nil)
			errs <- err
		}()
	}
	for {
		c.net.mu.Lock()
		n := forwards
		c.net.mu.Unlock()
		if n == len(followers) {
			break
		}
		if ctx.Err() != nil {
			close(release)
			t.Fatalf("%d of %d forwards reached the leader", n, len(followers))
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	for range followers {
		if err := <-errs; err != nil {
			t.Fatalf("forwarded write: %v", err)
		}
	}
	c.net.mu.Lock()
	defer c.net.mu.Unlock()
	for _, f := range followers {
		id := f.Status().ID
		if got := firstApp[id]; got != len(followers) {
			t.Errorf("the first append to member %d carried %d forwarded entries, want all %d", id, got, len(followers))
		}
	}
}
