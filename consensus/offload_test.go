package consensus

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// accelerated polls until the leader runs an accelerated term.
func (c *testCluster) accelerated() *RaftNode {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		lead := c.leader()
		if st := lead.Status(); st.Offload != nil && st.Offload.Accelerated && st.Offload.Engine.Sealed+st.Offload.Opened > 0 {
			return lead
		}
		time.Sleep(time.Millisecond)
	}
	c.t.Fatal("the leader never opened an accelerated term")
	return nil
}

// sameApplied fails unless every member applied the same sequence of entries.
func (c *testCluster) sameApplied(last uint64) {
	c.t.Helper()
	ctx := ctxT(c.t)
	var want []Entry
	for _, id := range c.boot.Voters {
		n := c.nodes()[id]
		if err := n.WaitApplied(ctx, last); err != nil {
			c.t.Fatalf("member %d: %v", id, err)
		}
		sm := c.sm(id)
		sm.mu.Lock()
		got := slices.Clone(sm.applied)
		sm.mu.Unlock()
		if want == nil {
			want = got
			continue
		}
		n2 := min(len(want), len(got))
		if !slices.EqualFunc(want[:n2], got[:n2], func(a, b Entry) bool {
			return a.Index == b.Index && a.Term == b.Term && a.Time == b.Time && string(a.Data) == string(b.Data)
		}) {
			c.t.Fatalf("member %d applied a different sequence", id)
		}
	}
}

// In an accelerated term the entries travel in the engine's datagrams, every member
// applies the same log, and proposers are answered at the engine's commit.
func TestOffloadReplicatesThroughTheEngine(t *testing.T) {
	c := newTestClusterWith(t, 3, false, true)
	lead := c.accelerated()
	ctx := ctxT(t)
	before := lead.Status().Offload.Engine
	var last uint64
	for i := range 300 {
		idx, err := lead.Propose(ctx, fmt.Appendf(nil, "k%d=v%d", i%7, i), nil)
		if err != nil {
			t.Fatal(err)
		}
		last = idx
	}
	st := lead.Status().Offload
	if !st.Accelerated || st.Engine.Sealed-before.Sealed < 10 || st.Engine.Acks == 0 {
		t.Fatalf("the writes did not go through the engine: %+v", st)
	}
	c.sameApplied(last)
	for id := range c.nodes() {
		if got := c.sm(id).get("k6"); got != "v293" {
			t.Fatalf("member %d: k6=%q", id, got)
		}
	}
	// A follower's forwarded proposals ride the engine too.
	_, f := c.follower(lead)
	idx, err := f.ProposeForward(ctx, []byte("fwd=1"), "token")
	if err != nil {
		t.Fatal(err)
	}
	c.sameApplied(idx)
}

// Losing datagrams costs retransmissions (or a fallback to software Raft), never an
// entry: with a tenth of the datagrams dropped every member applies the same log.
func TestOffloadSurvivesDatagramLoss(t *testing.T) {
	c := newTestClusterWith(t, 3, false, true)
	c.accelerated()
	c.net.mu.Lock()
	c.net.dgramLoss, c.net.rng = 10, rand.New(rand.NewPCG(1, 2))
	c.net.mu.Unlock()
	ctx := ctxT(t)
	var last uint64
	for i := range 200 {
		idx, err := c.leader().Propose(ctx, fmt.Appendf(nil, "k%d=v%d", i%5, i), nil)
		if err != nil {
			t.Fatal(err)
		}
		last = idx
	}
	c.sameApplied(last)
	acks := uint64(0)
	for _, n := range c.nodes() {
		acks += n.Status().Offload.Engine.Acks
	}
	if acks == 0 {
		t.Fatal("no write went through an engine")
	}
}

// A membership change or a leadership transfer closes the accelerated term (software's
// business); the new leader opens its own.
func TestOffloadClosesForSoftwareAndReopens(t *testing.T) {
	c := newTestClusterWith(t, 3, false, true)
	lead := c.accelerated()
	ctx := ctxT(t)
	if _, err := lead.Propose(ctx, []byte("a=1"), nil); err != nil {
		t.Fatal(err)
	}
	to, err := lead.TransferLeader(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st := lead.Status().Offload; st.Closed == 0 {
		t.Fatalf("a transfer left the engine open: %+v", st)
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.leader().Status().ID != to && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	lead = c.accelerated()
	if lead.Status().ID != to {
		t.Fatalf("leader %d, transferred to %d", lead.Status().ID, to)
	}
	idx, err := lead.Propose(ctx, []byte("a=2"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.sameApplied(idx)
}

// The porcupine check of RaftNode, in offload mode: four clients, the leader cut off and
// healed three times, datagrams lost; the history must be linearizable.
func TestOffloadLinearizableAcrossFailover(t *testing.T) {
	c := newTestClusterWith(t, 3, true, true)
	c.accelerated()
	c.net.mu.Lock()
	c.net.dgramLoss, c.net.rng = 2, rand.New(rand.NewPCG(3, 4))
	c.net.mu.Unlock()
	opened := uint64(0)
	c.checkLinearizableUnderCuts(func(lead *RaftNode) {
		if st := lead.Status().Offload; st != nil {
			opened += st.Opened
		}
	})
	if opened == 0 {
		t.Fatal("no leader ran an accelerated term during the workload")
	}
}

// An entry too large for a datagram goes through software Raft: the accelerated term
// closes first, so the entry is not left in a log whose followers only the engine feeds.
func TestOffloadLargeEntryFallsBackToSoftware(t *testing.T) {
	c := newTestClusterWith(t, 3, false, true)
	lead := c.accelerated()
	ctx := ctxT(t)
	big := append([]byte("big="), bytes.Repeat([]byte("x"), 100<<10)...)
	idx, err := lead.Propose(ctx, big, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.sameApplied(idx)
	for id := range c.nodes() {
		if got := c.sm(id).get("big"); len(got) != 100<<10 {
			t.Fatalf("member %d holds %d bytes of the large value", id, len(got))
		}
	}
	// Acceleration comes back for the writes after it.
	lead = c.accelerated()
	idx, err = lead.Propose(ctx, []byte("small=1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.sameApplied(idx)
}
