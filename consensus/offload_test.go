package consensus

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanokv/nanokv/consensus/raft"
	"github.com/nanokv/nanokv/nicoffload"
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
// healed three times, datagrams lost; the history must be linearizable. The members
// join blind proposals, as a server's do.
func TestOffloadLinearizableAcrossFailover(t *testing.T) {
	c := newTestClusterWith(t, 3, true, true, func(c *testCluster) { c.join = true })
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

// datagramsLike returns packets as a follower receives them under load: appends of
// entries whose data alias one receive buffer, and an ack without entries.
func datagramsLike(buf []byte, perPacket int) []nicoffload.Packet {
	var pkts []nicoffload.Packet
	off := 0
	for p := range 2 {
		pk := nicoffload.Packet{Type: nicoffload.Append, From: 1, To: 2, Term: 3, PrevLogIndex: uint64(10 + p*perPacket), PrevLogTerm: 3}
		for i := range perPacket {
			l := 1 + (p+i)%40
			pk.Entries = append(pk.Entries, nicoffload.Entry{Index: pk.PrevLogIndex + 1 + uint64(i), Term: 3, Time: int64(i), Type: 1, Data: buf[off : off+l]})
			off += l
		}
		pkts = append(pkts, pk)
	}
	return append(pkts, nicoffload.Packet{Type: nicoffload.Ack, From: 3, To: 2, Term: 3, Index: 20})
}

// The copy keeps every field and entry, shares nothing with the transport's buffer, and
// keeps each entry within its own bytes: appending to one copied entry's data must not
// overwrite the next one's.
func TestCopyPacketsOwnsItsData(t *testing.T) {
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(i)
	}
	src := datagramsLike(buf, 6)
	var want []nicoffload.Packet
	for _, p := range src {
		q := p
		q.Entries = nil
		for _, e := range p.Entries {
			e.Data = bytes.Clone(e.Data)
			q.Entries = append(q.Entries, e)
		}
		want = append(want, q)
	}
	got := copyPackets(src)
	clear(buf) // the transport reuses its buffers
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("copy differs:\n got %+v\nwant %+v", got, want)
	}
	first := got[0].Entries[0].Data
	_ = append(first, 0xff, 0xff, 0xff)
	if !bytes.Equal(got[0].Entries[1].Data, want[0].Entries[1].Data) {
		t.Fatal("appending to one entry's data overwrote the next entry")
	}
	_ = append(got[0].Entries, nicoffload.Entry{Index: 99})
	if got[1].Entries[0].Index != want[1].Entries[0].Index {
		t.Fatal("appending to one packet's entries overwrote the next packet's")
	}
}

// BenchmarkCopyPackets: a follower's copy of one receive batch (two datagrams of six
// entries and an ack, as under redis-benchmark -c 50 -P 1 on three members).
func BenchmarkCopyPackets(b *testing.B) {
	buf := make([]byte, 4096)
	src := datagramsLike(buf, 6)
	b.ReportAllocs()
	for b.Loop() {
		copyPackets(src)
	}
}

// engineCounters carries every counter of nicoffload.Stats: a field added to Stats and
// forgotten here would read as zero in INFO raft.
func TestEngineCountersCarryEveryStat(t *testing.T) {
	var want nicoffload.Stats
	v := reflect.ValueOf(&want).Elem()
	for i := range v.NumField() {
		v.Field(i).SetUint(uint64(i + 1))
	}
	var c engineCounters
	c.store(want)
	if got := c.load(); got != want {
		t.Fatalf("stored %+v, loaded %+v", want, got)
	}
}

// steadyLoad keeps window proposals outstanding on member n (forwarded to the leader
// when n follows) until stop is closed; it returns how many were answered without error
// so far, and waits for the last ones when stopped.
func steadyLoad(n *RaftNode, window int, stop <-chan struct{}) (answered func() uint64, wait func()) {
	var ok atomic.Uint64
	slots := make(chan struct{}, window)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case slots <- struct{}{}:
			}
			wg.Add(1)
			n.ProposeAsync(fmt.Appendf(nil, "load%d=%d", i%16, i), nil, true, func(err error) {
				if err == nil {
					ok.Add(1)
				}
				<-slots
				wg.Done()
			})
		}
	}()
	return ok.Load, wg.Wait
}

// A leader elected while clients write without a pause opens an accelerated term
// without waiting for the load to stop: the open needs a tick at which every voter holds
// the whole log, committed, and a pipeline of 64 forwarded proposals leaves such ticks.
// The load goes on through the engine afterwards.
func TestOffloadReopensUnderSteadyLoad(t *testing.T) {
	c := newTestClusterWith(t, 3, false, true)
	lead := c.accelerated()
	stop := make(chan struct{})
	answered, wait := steadyLoad(c.nodes()[1], 64, stop)
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wait()
	}()
	for answered() < 1000 {
		time.Sleep(time.Millisecond)
	}
	ctx := ctxT(t)
	term := lead.Status().Term
	to, err := lead.TransferLeader(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The leader of any later term will do: on a loaded machine an election may follow
	// the transfer's.
	deadline := time.Now().Add(10 * time.Second)
	var opened *RaftNode
	for opened == nil && time.Now().Before(deadline) {
		for _, n := range c.nodes() {
			if st := n.Status(); st.Role == raft.Leader && st.Term > term && st.Offload.Accelerated {
				opened = n
			}
		}
		time.Sleep(time.Millisecond)
	}
	if opened == nil {
		t.Fatalf("no leader after the transfer to %d opened an accelerated term under load: %+v", to, c.nodes()[to].Status().Offload)
	}
	// The load ran on through the hold: the engine carries it now.
	sealed, was := opened.Status().Offload.Engine.Sealed, answered()
	for answered() < was+1000 || opened.Status().Offload.Engine.Sealed < sealed+10 {
		if time.Now().After(deadline) {
			t.Fatalf("the load stalled after the term opened: %d answered, %+v", answered()-was, opened.Status().Offload)
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wait()
	idx, err := opened.Propose(ctx, []byte("last=1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.sameApplied(idx)
}
