package raft

import (
	"fmt"
	"slices"
	"testing"
)

// disk is what a member persisted: the driver's side of Ready's duties.
type disk struct {
	hs      HardState
	snap    *SnapshotMeta
	entries []Entry
	reads   int // entries read back (ReadEntries)
}

func (d *disk) persist(rd Ready) {
	if rd.Snapshot != nil {
		d.snap = rd.Snapshot
		d.entries = nil
	}
	for _, e := range rd.Entries {
		// Entries at or before the last persisted index replace the tail (truncation).
		first := uint64(1)
		if d.snap != nil {
			first = d.snap.Index + 1
		}
		if len(d.entries) > 0 {
			first = d.entries[0].Index
		}
		if e.Index < first+uint64(len(d.entries)) {
			d.entries = d.entries[:e.Index-first]
		}
		d.entries = append(d.entries, e)
	}
	if rd.HardStateChanged {
		d.hs = rd.HardState
	}
}

// ReadEntries makes the disk a LogReader, as the driver's WAL is one: it reads the
// persisted entries [lo, hi], capped at maxBytes past the first, with their data copied.
func (d *disk) ReadEntries(lo, hi uint64, maxBytes int) ([]Entry, error) {
	if len(d.entries) == 0 || lo < d.entries[0].Index || lo > d.entries[len(d.entries)-1].Index {
		return nil, fmt.Errorf("entry %d is not on disk", lo)
	}
	var out []Entry
	size := 0
	for _, e := range d.entries[lo-d.entries[0].Index:] {
		if size += len(e.Data); e.Index > hi || len(out) > 0 && size > maxBytes {
			break
		}
		e.Data = slices.Clone(e.Data)
		out = append(out, e)
	}
	d.reads += len(out)
	return out, nil
}

func (d *disk) state(m Membership) State {
	return State{HardState: d.hs, Snapshot: d.snap, Entries: slices.Clone(d.entries), Membership: m}
}

// member is one core with its disk and what it applied.
type member struct {
	r       *Raft
	disk    disk
	applied []Entry
	reads   []ReadState
}

// network connects cores in memory and delivers messages synchronously, breadth first,
// until nothing is left to deliver. It is for scripted scenarios; sim_test.go has the
// randomized simulator.
type network struct {
	t       *testing.T
	cfg     func(id uint64) Config
	boot    Membership
	members map[uint64]*member
	cut     map[[2]uint64]bool // directed links that drop everything
	drop    map[MsgType]bool   // message types dropped everywhere
	sent    []Message          // every message sent, for assertions
}

func testConfig(id uint64) Config {
	return Config{ID: id, ElectionTicks: 10, HeartbeatTicks: 1, MaxMsgBytes: 1 << 20, MaxInflight: 256,
		Rand: func(n int) int { return int(id) % n }}
}

func newNetwork(t *testing.T, n int) *network {
	t.Helper()
	nw := &network{t: t, cfg: testConfig, members: map[uint64]*member{},
		cut: map[[2]uint64]bool{}, drop: map[MsgType]bool{}}
	for id := uint64(1); id <= uint64(n); id++ {
		nw.boot.Voters = append(nw.boot.Voters, id)
	}
	for _, id := range nw.boot.Voters {
		nw.start(id, nw.boot)
	}
	// Let every member's restart quiet period pass, so that scripted elections run.
	for _, m := range nw.members {
		for range m.r.cfg.ElectionTicks {
			m.r.ticks++
		}
	}
	return nw
}

// start boots member id. Its driver waits for commits (SetWaiting), as one whose
// clients wait on it does, so that a commit reaches it within the same settle:
// TestLeaderTellsOnlyWaitingMembersOfCommitAtOnce covers members that do not wait.
func (nw *network) start(id uint64, boot Membership) *member {
	m := &member{r: New(nw.cfg(id), State{Membership: boot})}
	m.r.SetWaiting(true)
	nw.members[id] = m
	return m
}

// restart rebuilds a member from its disk, as after a crash.
func (nw *network) restart(id uint64) *member {
	old := nw.members[id]
	// The state machine restarts from the snapshot (if any); applied lists what is
	// applied on top of it.
	m := &member{disk: old.disk, r: New(nw.cfg(id), old.disk.state(nw.boot))}
	m.r.SetWaiting(true)
	nw.members[id] = m
	return m
}

func (nw *network) r(id uint64) *Raft { return nw.members[id].r }

// process handles one member's Ready as the driver would and returns its messages.
func (nw *network) process(id uint64) []Message {
	m := nw.members[id]
	if !m.r.HasReady() {
		return nil
	}
	rd := m.r.Ready()
	m.disk.persist(rd)
	m.applied = append(m.applied, rd.CommittedEntries...)
	m.reads = append(m.reads, rd.ReadStates...)
	m.r.Advance(rd)
	return rd.Messages
}

// settle delivers messages until the network is quiet.
func (nw *network) settle() {
	for round := 0; ; round++ {
		if round > 10000 {
			nw.t.Fatal("network did not settle")
		}
		var msgs []Message
		for _, id := range nw.ids() {
			msgs = append(msgs, nw.process(id)...)
		}
		if len(msgs) == 0 {
			return
		}
		for _, msg := range msgs {
			nw.sent = append(nw.sent, msg)
			if nw.cut[[2]uint64{msg.From, msg.To}] || nw.drop[msg.Type] {
				continue
			}
			if to := nw.members[msg.To]; to != nil {
				to.r.Step(msg)
			}
		}
	}
}

func (nw *network) ids() []uint64 {
	ids := make([]uint64, 0, len(nw.members))
	for id := range nw.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// isolate cuts every link to and from id; heal restores all.
func (nw *network) isolate(id uint64) {
	for _, o := range nw.ids() {
		if o != id {
			nw.cut[[2]uint64{id, o}] = true
			nw.cut[[2]uint64{o, id}] = true
		}
	}
}

func (nw *network) heal() { nw.cut = map[[2]uint64]bool{} }

// tick ticks one member n times, settling after each.
func (nw *network) tick(id uint64, n int) {
	for range n {
		nw.r(id).Tick()
		nw.settle()
	}
}

// tickAll ticks every member n times, settling after each round.
func (nw *network) tickAll(n int) {
	for range n {
		for _, id := range nw.ids() {
			nw.r(id).Tick()
		}
		nw.settle()
	}
}

// elect makes id leader through an ordinary (pre-vote) election.
func (nw *network) elect(id uint64) {
	nw.t.Helper()
	nw.r(id).campaign(campaignPreElection)
	nw.settle()
	if nw.r(id).Role() != Leader {
		nw.t.Fatalf("member %d did not become leader: role %v term %d", id, nw.r(id).Role(), nw.r(id).Term())
	}
}

func (nw *network) propose(id uint64, data ...string) uint64 {
	nw.t.Helper()
	bs := make([][]byte, len(data))
	for i, d := range data {
		bs[i] = []byte(d)
	}
	idx, err := nw.r(id).Propose(0, bs...)
	if err != nil {
		nw.t.Fatalf("propose on %d: %v", id, err)
	}
	nw.settle()
	return idx
}

// appliedData is what a member applied, without the leaders' empty no-ops.
func (m *member) appliedData() []string {
	var out []string
	for _, e := range m.applied {
		if e.Type == EntryNormal && len(e.Data) > 0 {
			out = append(out, string(e.Data))
		}
	}
	return out
}

func (nw *network) countSent(t MsgType, from, to uint64) int {
	n := 0
	for _, m := range nw.sent {
		if m.Type == t && m.From == from && m.To == to {
			n++
		}
	}
	return n
}

func (nw *network) expectLeader(id uint64) {
	nw.t.Helper()
	for _, o := range nw.ids() {
		r := nw.r(o)
		want := Follower
		if o == id {
			want = Leader
		}
		if r.Role() != want || r.Lead() != id {
			nw.t.Fatalf("member %d: role %v lead %d, want %v lead %d", o, r.Role(), r.Lead(), want, id)
		}
	}
}

func (m *member) String() string {
	return fmt.Sprintf("term %d role %v lead %d last %d commit %d", m.r.term, m.r.role, m.r.lead, m.r.LastIndex(), m.r.Committed())
}
