package consensus

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/nanokv/nanokv/consensus/raft"
)

// A member that joins blind proposals: those proposed together become one entry, which
// every member applies as the proposals in order; a proposal with a local value keeps
// an entry of its own, with its own data and local; every proposer is answered. The
// leader joins what it proposes, a follower what it forwards to the leader.
func TestRaftNodeJoinsBlindProposals(t *testing.T) {
	for _, offload := range []bool{false, true} {
		for _, forward := range []bool{false, true} {
			name := map[bool]string{false: "raft", true: "offload"}[offload] +
				map[bool]string{false: "/leader", true: "/forwarded"}[forward]
			t.Run(name, func(t *testing.T) {
				// A leader change refuses or drops some writes, and the checks below
				// need all of them in order: a run that sees one starts again on a
				// fresh cluster (an election timeout is 20 ms here, and may lapse on a
				// loaded machine).
				for attempt := 1; !joinRun(t, offload, forward); attempt++ {
					if attempt == 3 {
						t.Fatal("a leader change in each of three runs")
					}
				}
			})
		}
	}
}

// joinRun is one run of TestRaftNodeJoinsBlindProposals, its proposals made on the
// leader or, with forward, forwarded by a follower; false when a leader change refused
// or dropped a write.
func joinRun(t *testing.T, offload, forward bool) bool {
	c := newTestClusterWith(t, 3, false, offload, func(c *testCluster) { c.join = true })
	defer func() {
		for _, n := range c.nodes() {
			n.Close()
		}
	}()
	lead := c.leader()
	if offload {
		lead = c.accelerated()
	}
	proposer := lead
	if forward {
		_, proposer = c.follower(lead)
	}
	const n = 600
	var wg sync.WaitGroup
	errs := make(chan error, n)
	wg.Add(n)
	for i := range n {
		// Every tenth proposal has a local value; the others are blind, and
		// the key k1 is written by many, so the order of the applied records
		// decides its value.
		data, local := fmt.Appendf(nil, "k%d=%d;", i%2, i), any(nil)
		if i%10 == 0 {
			data, local = fmt.Appendf(nil, "own%d=%d;", i, i), fmt.Sprint("token", i)
		}
		proposer.ProposeAsync(data, local, forward, func(err error) {
			errs <- err
			wg.Done()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrTransferring), errors.Is(err, ErrDropped):
			t.Logf("a leader change: %v", err)
			return false
		default:
			t.Fatal(err)
		}
	}
	idx, err := lead.Propose(ctxT(t), []byte("last=1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.sameApplied(idx)
	joined := 0
	for id := range c.nodes() {
		sm := c.sm(id)
		if got := sm.get("k1"); got != fmt.Sprint(n-1) {
			t.Fatalf("member %d: k1=%q, want the last write's %d", id, got, n-1)
		}
		if got := sm.get("k0"); got != fmt.Sprint(n-2) {
			t.Fatalf("member %d: k0=%q, want %d", id, got, n-2)
		}
		sm.mu.Lock()
		for _, e := range sm.applied {
			d := string(e.Data)
			if strings.Count(d, ";") > 1 {
				joined++
				if strings.Contains(d, "own") {
					t.Errorf("member %d: a proposal with a local value was joined: %q", id, d)
				}
			}
			if strings.HasPrefix(d, "own") {
				var i int
				fmt.Sscanf(d, "own%d=", &i)
				if want := fmt.Sprint("token", i); id == proposer.Status().ID && sm.locals[e.Index] != want {
					t.Errorf("entry %q came with local %v, want %s", d, sm.locals[e.Index], want)
				}
			}
		}
		sm.mu.Unlock()
		for i := 0; i < n; i += 10 {
			if got := sm.get(fmt.Sprint("own", i)); got != fmt.Sprint(i) {
				t.Fatalf("member %d: own%d=%q", id, i, got)
			}
		}
	}
	if joined == 0 {
		t.Fatal("no entry joined two proposals")
	}
	return true
}
