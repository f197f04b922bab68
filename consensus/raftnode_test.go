package consensus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"math/rand/v2"

	"github.com/anishathalye/porcupine"
	"github.com/nanokv/nanokv/consensus/raft"
	"github.com/nanokv/nanokv/internal/kvmodel"
	"github.com/nanokv/nanokv/nicoffload"
)

// memNet connects RaftNodes in one process; links can be cut.
type memNet struct {
	mu    sync.Mutex
	nodes map[uint64]*RaftNode
	cut   map[uint64]bool // members cut off from everyone
	// rewrite, when set, may change a message on its way (called under mu).
	rewrite func(m *raft.Message)
	// dgramLoss drops this percentage of offload datagrams, chosen by rng.
	dgramLoss int
	rng       *rand.Rand
}

func (nw *memNet) send(msgs []raft.Message) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	for _, m := range msgs {
		if nw.cut[m.From] || nw.cut[m.To] {
			continue
		}
		if nw.rewrite != nil {
			nw.rewrite(&m)
		}
		if to := nw.nodes[m.To]; to != nil {
			to.Step(m)
		}
	}
}

// sendDatagrams delivers an offload engine's datagrams like the UDP transport would:
// decoded, to the member they name, lost when either end is cut off, and a fraction
// dropped (dgramLoss, in percent) as a lossy network drops them.
func (nw *memNet) sendDatagrams(from uint64, dgs []nicoffload.Outgoing) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	for _, d := range dgs {
		if nw.cut[from] || nw.cut[d.To] {
			continue
		}
		if nw.dgramLoss > 0 && nw.rng.IntN(100) < nw.dgramLoss {
			continue
		}
		p, err := nicoffload.ParsePacket(d.Bytes)
		if err != nil {
			panic(fmt.Sprintf("a datagram of member %d does not decode: %v", from, err))
		}
		if to := nw.nodes[d.To]; to != nil {
			to.StepDatagrams([]nicoffload.Packet{p})
		}
	}
}

func (nw *memNet) isCut(id uint64) bool {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	return nw.cut[id]
}

func (nw *memNet) setCut(id uint64, cut bool) {
	nw.mu.Lock()
	nw.cut[id] = cut
	nw.mu.Unlock()
}

// kvSM applies "key=value" entries to a map.
type kvSM struct {
	mu      sync.Mutex
	kv      map[string]string
	applied []Entry
	locals  map[uint64]any // the local value that came with an entry, by index
}

func (s *kvSM) Apply(e Entry, local any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// "k=v", or records "k=v;" one after another: what a leader that joins blind
	// proposals (testCluster.join) makes of several.
	if rest := string(e.Data); strings.HasSuffix(rest, ";") {
		for rest != "" {
			rec, after, _ := strings.Cut(rest, ";")
			k, v, _ := cutKV(rec)
			s.kv[k], rest = v, after
		}
	} else {
		k, v, _ := cutKV(rest)
		s.kv[k] = v
	}
	s.applied = append(s.applied, e)
	if local != nil {
		if s.locals == nil {
			s.locals = map[uint64]any{}
		}
		s.locals[e.Index] = local
	}
}

func (s *kvSM) local(index uint64) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.locals[index]
}

// Snapshot and Restore make kvSM a Snapshotter (JSON of the map).
func (s *kvSM) Snapshot(w io.Writer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return json.NewEncoder(w).Encode(s.kv)
}

func (s *kvSM) Restore(r io.Reader) error {
	kv := map[string]string{}
	if err := json.NewDecoder(r).Decode(&kv); err != nil {
		return err
	}
	s.mu.Lock()
	s.kv = kv
	s.mu.Unlock()
	return nil
}

func (s *kvSM) get(k string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kv[k]
}

func cutKV(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == '=' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

type testCluster struct {
	t         *testing.T
	snapBytes int64 // SnapshotLogBytes for every member (0: the default)
	net       *memNet
	sms       map[uint64]*kvSM
	dirs      map[uint64]string
	boot      raft.Membership
	lease     bool
	// offload runs every member with an offload engine, its datagrams on net.
	offload bool
	// wantCommits is every member's RaftConfig.WantsCommits.
	wantCommits atomic.Bool
	// join is every member's RaftConfig.JoinBlind.
	join bool
	// logCache is every member's RaftConfig.LogCacheBytes.
	logCache int64
	// ringDatagrams bounds every offload engine's retransmission ring (0: the default).
	ringDatagrams int
}

func newTestCluster(t *testing.T, n int, lease bool) *testCluster {
	t.Helper()
	return newTestClusterWith(t, n, lease, false)
}

// newTestClusterWith starts n members; opts set up the cluster before they start.
func newTestClusterWith(t *testing.T, n int, lease, offload bool, opts ...func(*testCluster)) *testCluster {
	t.Helper()
	c := &testCluster{t: t, net: &memNet{nodes: map[uint64]*RaftNode{}, cut: map[uint64]bool{}},
		sms: map[uint64]*kvSM{}, dirs: map[uint64]string{}, lease: lease, offload: offload}
	for _, o := range opts {
		o(c)
	}
	for id := uint64(1); id <= uint64(n); id++ {
		c.boot.Voters = append(c.boot.Voters, id)
		c.dirs[id] = t.TempDir()
	}
	for _, id := range c.boot.Voters {
		c.start(id)
	}
	t.Cleanup(func() {
		for _, node := range c.nodes() {
			node.Close()
		}
	})
	return c
}

// start (re)starts a member from its directory, with a fresh state machine.
func (c *testCluster) start(id uint64) {
	c.t.Helper()
	sm := &kvSM{kv: map[string]string{}}
	var off *OffloadConfig
	if c.offload {
		off = &OffloadConfig{Engine: nicoffload.Config{ClusterID: 7, RetransmitTimeout: 4 * time.Millisecond,
			RingDatagrams: c.ringDatagrams},
			Send: func(dgs []nicoffload.Outgoing) { c.net.sendDatagrams(id, dgs) }}
	}
	node, err := StartRaft(RaftConfig{ID: id, Bootstrap: c.boot, SM: sm, Send: c.net.send, Dir: c.dirs[id],
		Fsync: FsyncNo, TickInterval: 2 * time.Millisecond, ElectionTicks: 10, LeaseReads: c.lease,
		SnapshotLogBytes: c.snapBytes, SnapshotTrailing: 5, Offload: off, WantsCommits: c.wantCommits.Load,
		JoinBlind: c.join, LogCacheBytes: c.logCache})
	if err != nil {
		c.t.Fatal(err)
	}
	c.net.mu.Lock()
	c.net.nodes[id] = node
	c.sms[id] = sm
	c.net.mu.Unlock()
}

func (c *testCluster) sm(id uint64) *kvSM {
	c.net.mu.Lock()
	defer c.net.mu.Unlock()
	return c.sms[id]
}

func (c *testCluster) nodes() map[uint64]*RaftNode {
	c.net.mu.Lock()
	defer c.net.mu.Unlock()
	out := map[uint64]*RaftNode{}
	for id, n := range c.net.nodes {
		out[id] = n
	}
	return out
}

// leader polls until exactly one reachable member leads and every other reachable member
// follows it.
func (c *testCluster) leader() *RaftNode {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var lead *RaftNode
		agree := true
		for id, n := range c.nodes() {
			if c.net.isCut(id) || n.closed.Load() {
				continue
			}
			st := n.Status()
			if st.Role == raft.Leader {
				if lead != nil {
					agree = false
				}
				lead = n
			}
		}
		if lead != nil && agree {
			return lead
		}
		time.Sleep(time.Millisecond)
	}
	c.t.Fatal("no leader elected")
	return nil
}

// propose commits data through whichever member leads, proposing it again when a leader
// change refuses or drops it: on a loaded machine a 20 ms election timeout can lapse in
// the middle of a test that is not about elections. A retried entry may commit twice,
// so callers check values, not counts.
func (c *testCluster) propose(ctx context.Context, data []byte) uint64 {
	c.t.Helper()
	for {
		idx, err := c.leader().Propose(ctx, data, nil)
		switch {
		case err == nil:
			return idx
		case ctx.Err() == nil && (errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrTransferring) || errors.Is(err, ErrDropped)):
			continue
		default:
			c.t.Fatal(err)
		}
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestRaftNodeReplicatesToEveryMember(t *testing.T) {
	c := newTestCluster(t, 3, false)
	ctx := ctxT(t)
	var last uint64
	for i := range 50 {
		last = c.propose(ctx, fmt.Appendf(nil, "k%d=v%d", i%5, i))
	}
	for id, n := range c.nodes() {
		if err := n.WaitApplied(ctx, last); err != nil {
			t.Fatalf("member %d: %v", id, err)
		}
		if got := c.sm(id).get("k4"); got != "v49" {
			t.Fatalf("member %d: k4=%q", id, got)
		}
	}
	want := c.sm(1).applied
	for _, id := range c.boot.Voters {
		sm := c.sm(id)
		sm.mu.Lock()
		same := slices.EqualFunc(sm.applied, want, func(a, b Entry) bool {
			return a.Index == b.Index && a.Term == b.Term && string(a.Data) == string(b.Data)
		})
		sm.mu.Unlock()
		if !same {
			t.Fatalf("member %d applied a different sequence", id)
		}
	}
}

// Every member stops and restarts from its WAL: the fresh state machines get every
// committed entry again, terms and votes survive, and the cluster goes on.
func TestRaftNodeRestartsFromWAL(t *testing.T) {
	c := newTestCluster(t, 3, false)
	ctx := ctxT(t)
	var last uint64
	for i := range 20 {
		last = c.propose(ctx, fmt.Appendf(nil, "k=%d", i))
	}
	term := c.leader().Status().Term
	for _, n := range c.nodes() {
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range c.boot.Voters {
		c.start(id)
	}
	if st := c.leader().Status(); st.Term <= term {
		t.Fatalf("term %d after restart, was %d", st.Term, term)
	}
	idx := c.propose(ctx, []byte("k=after"))
	if idx <= last {
		t.Fatalf("new entry at %d, not after %d", idx, last)
	}
	for id, n := range c.nodes() {
		if err := n.WaitApplied(ctx, idx); err != nil {
			t.Fatal(err)
		}
		sm := c.sm(id)
		sm.mu.Lock()
		got := len(sm.applied)
		sm.mu.Unlock()
		// 21 entries, or more when a leader change had one proposed twice.
		if got < 21 || c.sm(id).get("k") != "after" {
			t.Fatalf("member %d applied %d entries, k=%q", id, got, c.sm(id).get("k"))
		}
	}
}

// Members snapshot their state machine and compact their log and WAL as the log grows;
// a restart loads the snapshot and replays only what follows it.
func TestRaftNodeSnapshotsAndCompacts(t *testing.T) {
	c := &testCluster{t: t, net: &memNet{nodes: map[uint64]*RaftNode{}, cut: map[uint64]bool{}},
		sms: map[uint64]*kvSM{}, dirs: map[uint64]string{}, snapBytes: 300}
	for id := uint64(1); id <= 3; id++ {
		c.boot.Voters = append(c.boot.Voters, id)
		c.dirs[id] = t.TempDir()
	}
	for _, id := range c.boot.Voters {
		c.start(id)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes() {
			n.Close()
		}
	})
	ctx := ctxT(t)
	var last uint64
	for i := range 300 {
		last = c.propose(ctx, fmt.Appendf(nil, "k%d=%d", i%7, i))
	}
	for id, n := range c.nodes() {
		if err := n.WaitApplied(ctx, last); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for n.Stats().Compactions.Load() == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("member %d never compacted", id)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for _, n := range c.nodes() {
		n.Close()
	}
	// Each WAL now starts at a snapshot: the first entries are gone from the disk.
	for id, dir := range c.dirs {
		s, st, err := openRaftStorage(dir, FsyncNo, t.Logf)
		if err != nil {
			t.Fatal(err)
		}
		s.close()
		if st.Snapshot == nil || (len(st.Entries) > 0 && st.Entries[0].Index != st.Snapshot.Index+1) {
			t.Fatalf("member %d WAL: snapshot %+v, first entry %+v", id, st.Snapshot, st.Entries[:min(1, len(st.Entries))])
		}
	}
	for _, id := range c.boot.Voters {
		c.start(id)
		// A snapshot written but not yet recorded when the member stopped is cleared away.
		if snaps, _ := filepath.Glob(filepath.Join(c.dirs[id], "snap-*")); len(snaps) != 1 {
			t.Fatalf("member %d keeps snapshots %v", id, snaps)
		}
	}
	idx := c.propose(ctx, []byte("k0=after"))
	for id, n := range c.nodes() {
		if err := n.WaitApplied(ctx, idx); err != nil {
			t.Fatal(err)
		}
		if got := c.sm(id).get("k6"); got != "293" {
			t.Fatalf("member %d after restart: k6=%q", id, got)
		}
		if got := c.sm(id).get("k0"); got != "after" {
			t.Fatalf("member %d after restart: k0=%q", id, got)
		}
	}
}

func TestRaftNodeFollowerRefusesProposalsAndReads(t *testing.T) {
	c := newTestCluster(t, 3, false)
	lead := c.leader()
	ctx := ctxT(t)
	for id, n := range c.nodes() {
		if n == lead {
			continue
		}
		if _, err := n.Propose(ctx, []byte("a=b"), nil); !errors.Is(err, raft.ErrNotLeader) {
			t.Fatalf("member %d propose: %v", id, err)
		}
		if err := n.ReadBarrier(ctx); !errors.Is(err, raft.ErrNotLeader) {
			t.Fatalf("member %d read: %v", id, err)
		}
	}
}

func TestRaftNodeFailover(t *testing.T) {
	c := newTestCluster(t, 3, false)
	lead := c.leader()
	ctx := ctxT(t)
	if _, err := lead.Propose(ctx, []byte("x=1"), nil); err != nil {
		t.Fatal(err)
	}
	old := lead.Status().ID
	c.net.setCut(old, true)
	start := time.Now()
	next := c.leader()
	if next.Status().ID == old {
		t.Fatal("the cut-off leader is still the only leader")
	}
	t.Logf("new leader after %v", time.Since(start))
	if _, err := next.Propose(ctx, []byte("x=2"), nil); err != nil {
		t.Fatal(err)
	}
	if err := next.ReadBarrier(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.sm(next.Status().ID).get("x"); got != "2" {
		t.Fatalf("x=%q on the new leader", got)
	}
	// The old leader comes back, steps down and catches up.
	c.net.setCut(old, false)
	deadline := time.Now().Add(10 * time.Second)
	for c.sm(old).get("x") != "2" {
		if time.Now().After(deadline) {
			t.Fatalf("old leader did not catch up: %+v", c.net.nodes[old].Status())
		}
		time.Sleep(time.Millisecond)
	}
}

// A follower cut off while the others go on catches up from the leader's WAL: the
// leader keeps almost no entry data in memory (LogCacheBytes), so what the follower
// missed is read back from the WAL's segments, not sent as a snapshot. With the engine
// on, its retransmission ring is kept too small to cover the gap, so software Raft
// does (with the default ring, a fast machine writes the 400 entries before the engine
// gives up on the follower, and the ring replays them). The cache may also shrink at
// run time (SetLogCacheBytes), from the default that holds it all.
func TestRaftNodeCatchesAFollowerUpFromTheWAL(t *testing.T) {
	for _, tc := range []struct {
		name             string
		offload, runTime bool
	}{{"raft", false, false}, {"offload", true, false}, {"raft, set at run time", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClusterWith(t, 3, false, tc.offload, func(c *testCluster) {
				if !tc.runTime {
					c.logCache = 64
				}
				c.ringDatagrams = 16
			})
			ctx := ctxT(t)
			lead := c.leader()
			var behind uint64
			for _, n := range c.nodes() {
				if id := n.Status().ID; id != lead.Status().ID {
					behind = id
				}
			}
			c.net.setCut(behind, true)
			var last uint64
			for i := range 400 {
				var err error
				if last, err = lead.Propose(ctx, fmt.Appendf(nil, "k%d=%d", i%13, i), nil); err != nil {
					t.Fatalf("proposal %d: %v", i, err)
				}
			}
			if tc.runTime {
				st := lead.Stats()
				deadline := time.Now().Add(10 * time.Second)
				for held := st.LogCachedBytes.Load(); held <= 64; held = st.LogCachedBytes.Load() {
					if time.Now().After(deadline) {
						t.Fatalf("the leader holds %d bytes of entry data with the default cache", held)
					}
					time.Sleep(time.Millisecond)
				}
				lead.SetLogCacheBytes(64)
				for held := st.LogCachedBytes.Load(); held > 64; held = st.LogCachedBytes.Load() {
					if time.Now().After(deadline) {
						t.Fatalf("the leader still holds %d bytes of entry data after the cache shrank to 64", held)
					}
					time.Sleep(time.Millisecond)
				}
			}
			c.net.setCut(behind, false)
			if err := c.net.nodes[behind].WaitApplied(ctx, last); err != nil {
				t.Fatal(err)
			}
			for i := 387; i < 400; i++ {
				if got, want := c.sm(behind).get(fmt.Sprintf("k%d", i%13)), fmt.Sprint(i); got != want {
					t.Fatalf("the follower caught up with k%d=%q, want %q", i%13, got, want)
				}
			}
			st := lead.Stats()
			if st.LogEntriesRead.Load() == 0 || st.Sent.Load() != 0 {
				t.Fatalf("the leader read %d entries back and sent %d snapshots; want some and none",
					st.LogEntriesRead.Load(), st.Sent.Load())
			}
		})
	}
}

func TestRaftNodeTransferLeadership(t *testing.T) {
	c := newTestCluster(t, 3, false)
	lead := c.leader()
	ctx := ctxT(t)
	to := lead.Status().ID%3 + 1
	if _, err := lead.TransferLeader(ctx, to); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.nodes()[to].Status().Role != raft.Leader {
		if time.Now().After(deadline) {
			t.Fatal("transfer did not happen")
		}
		time.Sleep(time.Millisecond)
	}
}

// A lease read does not wait for the loop: with the loop held up, the leader serves
// reads for as long as the lease it last published holds, and the latest acknowledged
// write is in them. Once that lease has run out, a read waits for the loop again.
func TestRaftNodeLeaseReadSkipsTheLoopUntilTheLeaseEnds(t *testing.T) {
	c := newTestCluster(t, 3, true)
	lead := c.leader()
	ctx := ctxT(t)
	if _, err := lead.Propose(ctx, []byte("x=1"), nil); err != nil {
		t.Fatal(err)
	}
	const tick, leaseTicks = 2 * time.Millisecond, 8 // newTestCluster's; LeaseTicks = ElectionTicks-2
	// raced counts reads that outlasted the lease: they waited for the held loop.
	raced := 0
	for attempt := 0; ; attempt++ {
		if attempt == 200 || raced == 3 {
			t.Fatalf("no lease read was served with the loop held up: %d attempts, %d of them waited for the loop until the lease had ended",
				attempt, raced)
		}
		release, held := make(chan struct{}), make(chan struct{})
		go lead.do(context.Background(), func(*raft.Raft) error { close(held); <-release; return nil })
		<-held
		heldAt := int64(time.Since(lead.epoch))
		end := lead.leaseEnd.Load()
		if end > heldAt+leaseTicks*int64(tick) {
			close(release)
			t.Fatalf("lease published until %v, more than a lease after %v", time.Duration(end), time.Duration(heldAt))
		}
		if end-heldAt < int64(4*time.Millisecond) {
			close(release) // too little left to try: wait for the next heartbeat round
			time.Sleep(tick)
			continue
		}
		first, cancel := context.WithTimeout(ctx, 2*time.Second) // bounded: the loop is held
		err := lead.ReadBarrier(first)
		cancel()
		if int64(time.Since(lead.epoch)) >= end {
			close(release) // the read may have raced the lease's end: try again
			raced++
			continue
		}
		if err != nil {
			close(release)
			t.Fatalf("lease read with the loop held up: %v", err)
		}
		if got := c.sm(lead.Status().ID).get("x"); got != "1" {
			close(release)
			t.Fatalf("lease read saw x=%q", got)
		}
		for int64(time.Since(lead.epoch)) < end {
			time.Sleep(100 * time.Microsecond)
		}
		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		err = lead.ReadBarrier(short)
		cancel()
		close(release)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("read after the lease ended, with the loop held up: %v", err)
		}
		return
	}
}

// A leadership transfer ends the lease before the TimeoutNow goes out, so no read is
// served off the loop once the target may be electing itself; and by the time the
// caller hears the transfer began.
func TestRaftNodeTransferEndsTheLease(t *testing.T) {
	c := newTestCluster(t, 3, true)
	lead := c.leader()
	ctx := ctxT(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := lead.leaseRead(); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the leader never published a lease")
		}
		time.Sleep(time.Millisecond)
	}
	var sent, leased atomic.Int32
	c.net.mu.Lock()
	c.net.rewrite = func(m *raft.Message) { // on the sender's loop, as it sends
		if m.Type == raft.MsgTimeoutNow {
			sent.Add(1)
			if _, ok := c.net.nodes[m.From].leaseRead(); ok {
				leased.Add(1)
			}
		}
	}
	c.net.mu.Unlock()
	if _, err := lead.TransferLeader(ctx, lead.Status().ID%3+1); err != nil {
		t.Fatal(err)
	}
	if _, ok := lead.leaseRead(); ok {
		t.Fatal("a lease read is still served once the transfer has begun")
	}
	for sent.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no TimeoutNow was sent")
		}
		time.Sleep(time.Millisecond)
	}
	if n := leased.Load(); n > 0 {
		t.Fatalf("%d TimeoutNow sent while the sender's lease still served reads", n)
	}
}

// Concurrent clients against the cluster while the leader is cut off and healed, checked
// for linearizability: writes acknowledged at commit, reads through the read barrier.
// With join, the leader joins blind proposals that arrive together into one entry.
func TestRaftNodeLinearizableAcrossFailover(t *testing.T) {
	for _, tc := range []struct{ lease, join bool }{{false, false}, {true, false}, {true, true}} {
		t.Run(fmt.Sprintf("lease=%v,join=%v", tc.lease, tc.join), func(t *testing.T) {
			c := newTestClusterWith(t, 3, tc.lease, false, func(c *testCluster) { c.join = tc.join })
			c.leader()
			c.checkLinearizableUnderCuts(nil)
		})
	}
}

// checkLinearizableUnderCuts runs four clients (puts through Propose, gets after
// ReadBarrier, on every member in turn) while the leader is cut off and healed three
// times, and requires the history to be linearizable. onCut, if set, sees each leader
// just before it is cut off.
func (c *testCluster) checkLinearizableUnderCuts(onCut func(lead *RaftNode)) {
	t := c.t
	var mu sync.Mutex
	var ops []porcupine.Operation
	start := time.Now()
	stamp := func() int64 { return int64(time.Since(start)) }
	stopc := make(chan struct{})
	var wg sync.WaitGroup
	for cl := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stopc:
					return
				default:
				}
				n := c.nodes()[uint64(1+(cl+i)%3)]
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				key := []string{"a", "b"}[i%2]
				call := stamp()
				if i%3 == 0 {
					if err := n.ReadBarrier(ctx); err == nil {
						v := c.sm(n.Status().ID).get(key)
						mu.Lock()
						ops = append(ops, porcupine.Operation{ClientId: cl, Input: kvmodel.Get(key), Call: call, Output: v, Return: stamp()})
						mu.Unlock()
					}
				} else {
					val := fmt.Sprintf("%d-%d", cl, i)
					// ';'-terminated: a member that joins blind proposals may put
					// several in one entry (kvSM.Apply).
					_, err := n.Propose(ctx, []byte(key+"="+val+";"), nil)
					ret := stamp()
					switch {
					case err == nil:
					case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrTransferring), errors.Is(err, ErrDropped):
						cancel()
						continue // certainly not committed
					default:
						ret = 1 << 62 // unknown outcome
					}
					mu.Lock()
					ops = append(ops, porcupine.Operation{ClientId: cl, Input: kvmodel.Put(key, val), Call: call, Return: ret})
					mu.Unlock()
				}
				cancel()
			}
		}()
	}
	for range 3 { // the workload: run, cut the leader off, heal
		time.Sleep(150 * time.Millisecond)
		lead := c.leader()
		if onCut != nil {
			onCut(lead)
		}
		id := lead.Status().ID
		c.net.setCut(id, true)
		time.Sleep(150 * time.Millisecond)
		c.net.setCut(id, false)
	}
	close(stopc)
	wg.Wait()
	res := porcupine.CheckOperationsTimeout(kvmodel.Model, ops, 30*time.Second)
	if res != porcupine.Ok {
		t.Fatalf("history of %d ops is %s", len(ops), res)
	}
	t.Logf("%d operations linearizable", len(ops))
}

// A member whose WAL fails stops taking part and answers every request with the error,
// instead of acknowledging what it could not persist or leaving callers hanging.
func TestRaftNodeStopsWhenItsWALFails(t *testing.T) {
	sm := &kvSM{kv: map[string]string{}}
	n, err := StartRaft(RaftConfig{ID: 1, Bootstrap: raft.Membership{Voters: []uint64{1}}, SM: sm,
		Send: func([]raft.Message) {}, Dir: t.TempDir(), Fsync: FsyncAlways, TickInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx := ctxT(t)
	for n.Status().Role != raft.Leader {
		time.Sleep(time.Millisecond)
	}
	if _, err := n.Propose(ctx, []byte("a=1"), nil); err != nil {
		t.Fatal(err)
	}
	n.storage.mu.Lock()
	n.storage.w.f.Close() // the disk goes away under the member
	n.storage.mu.Unlock()
	if _, err := n.Propose(ctx, []byte("a=2"), nil); err == nil || ctx.Err() != nil {
		t.Fatalf("proposal after a WAL failure: %v", err)
	}
	if _, err := n.Propose(ctx, []byte("a=3"), nil); err == nil || ctx.Err() != nil {
		t.Fatalf("later proposal: %v", err)
	}
	if sm.get("a") == "2" {
		t.Fatal("an entry that was never persisted was applied")
	}
}

// A membership change asked of a leader that has not yet committed the first entry of
// its term (right after RAFT.TIMEOUT_NOW or a failover) waits for that entry instead of
// being refused with ErrConfPending: the refusal made an admin's RAFT.NODE REMOVE fail
// for a condition one round trip long.
func TestRaftNodeMembershipChangeWaitsForTheNewLeadersFirstEntry(t *testing.T) {
	c := newTestCluster(t, 3, false)
	old := c.leader()
	ctx := ctxT(t)
	idx, err := old.Propose(ctx, []byte("a=1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.sameApplied(idx)
	oldID := old.Status().ID
	var next *RaftNode
	for id, n := range c.nodes() {
		if id != oldID {
			next = n
			break
		}
	}
	nextID := next.Status().ID
	// The new leader hears no MsgAppResp, so its first entry cannot commit.
	c.net.mu.Lock()
	c.net.rewrite = func(m *raft.Message) {
		if m.Type == raft.MsgAppResp && m.To == nextID {
			m.To = 0 // nobody: dropped
		}
	}
	c.net.mu.Unlock()
	if err := next.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	for st := next.Status(); st.Role != raft.Leader; st = next.Status() {
		if ctx.Err() != nil {
			t.Fatalf("member %d did not take over: %+v", nextID, st)
		}
		time.Sleep(time.Millisecond)
	}
	if st := next.Status(); st.CommitIndex >= st.LastIndex {
		t.Fatalf("the new leader's first entry committed while acks were dropped: %+v", st)
	}
	done := make(chan error, 1)
	go func() { done <- next.ChangeMembership(ctx, raft.ConfChange{Type: raft.RemoveNode, Node: oldID}) }()
	select {
	case err := <-done:
		t.Fatalf("the change returned before the leader could take it: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	c.net.mu.Lock()
	c.net.rewrite = nil
	c.net.mu.Unlock()
	if err := <-done; err != nil {
		t.Fatalf("the change failed once the first entry could commit: %v", err)
	}
	// Status shows the change once ChangeMembership has returned.
	if m := next.Status().Membership; m.IsVoter(oldID) || len(m.Voters) != 2 {
		t.Fatalf("membership after removing %d: %+v", oldID, m)
	}
}

// A member waits for commits (its answers to the leader say so) while it has a forward
// outstanding, and whenever its host wants them (RaftConfig.WantsCommits: a member with
// ZooKeeper sessions, whose watches fire when it applies).
func TestRaftNodeWaitsForCommitsWhenItsHostWantsThem(t *testing.T) {
	c := newTestCluster(t, 3, false)
	lead := c.leader()
	var f *RaftNode
	for _, n := range c.nodes() {
		if n != lead {
			f = n
			break
		}
	}
	waiting := func() bool {
		var w bool
		if err := f.do(ctxT(t), func(r *raft.Raft) error { w = r.Waiting(); return nil }); err != nil {
			t.Fatal(err)
		}
		return w
	}
	until := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for waiting() != want {
			if time.Now().After(deadline) {
				t.Fatalf("waiting stayed %v", !want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	until(false) // no forward, and the host wants nothing
	c.wantCommits.Store(true)
	until(true)
	c.wantCommits.Store(false)
	until(false)
}
