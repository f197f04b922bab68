package raft

import (
	"bytes"
	"container/heap"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/nanokv/nanokv/internal/kvmodel"
	"github.com/nanokv/nanokv/kvstore"
)

// The deterministic cluster simulator: one goroutine, a seeded RNG, a virtual clock, and a
// network that delays, drops, duplicates, reorders and partitions; members crash and
// restart from what they persisted. After every event it checks election safety, that all
// members apply the same entry at each index (state machine safety) with equal digests,
// and that a new leader holds every entry applied anywhere (leader completeness). At the
// end it heals everything, requires the cluster to converge, and checks the clients'
// history for linearizability with porcupine. A failure prints the seed. The state
// machine is nanokv's kvstore, so "equal state" is equal kvstore.Digest().
//
// go test runs 40 seeds; .ci/run runs 4000; a long run is
//
//	go test ./consensus/raft -run TestSimulatedClusterUnderFaults -sim.seeds=50000 -timeout 3h
//
// and -sim.from skips the seeds CI runs: -sim.from=4000 -sim.seeds=10000 runs 4000–13999.
// Seeds run in parallel subtests (-parallel bounds how many at once), each named by its
// seed.

var (
	simSeeds = flag.Int("sim.seeds", 40, "number of simulator seeds to run")
	simFrom  = flag.Int64("sim.from", 0, "first simulator seed to run")
	simSeed  = flag.Int64("sim.seed", -1, "run only this simulator seed")
	simTrace = flag.Bool("sim.trace", false, "log every simulator event")
)

const (
	tickEvery   = 10   // virtual time units per tick
	simDuration = 6000 // virtual time units of faulty operation
)

type simMsg struct {
	m    Message
	snap *smImage // the snapshot's contents, for MsgSnap
}

type event struct {
	at   int64
	seq  uint64 // tie-break, so the order is reproducible
	kind int
	node uint64
	msg  simMsg
	data []byte // evDatagram: the offload engine's datagram
}

const (
	evTick = iota
	evDeliver
	evCrash
	evRestart
	evPartition
	evHeal
	evClient
	evCompact
	evDatagram
	evPeerDown // msg.m.From crashed; node learns it as its driver would (connection refused)
)

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// smState is the simulated state machine: nanokv's own kvstore, fed the committed
// batches; digest is kvstore.Digest() after the entry at applied.
type smState struct {
	applied uint64
	digest  uint64
	store   *kvstore.Store
}

func newSM() *smState { return &smState{store: kvstore.New()} }

// smImage is a state machine as a snapshot file holds it: kvstore's snapshot bytes. It
// never changes once taken, so a member's snapshot, the copies of it in flight and the
// one a follower received share it; a member loads it (restore) only when it starts
// from it or installs it. (Cloning a live store at each of these steps instead, through
// Snapshot and Restore, was 30% of the simulator's CPU.)
type smImage struct {
	applied, digest uint64
	data            []byte
}

// image takes the state's snapshot, as a member writes its snapshot file.
func (s *smState) image() *smImage {
	var buf bytes.Buffer
	if err := s.store.Snapshot(&buf); err != nil {
		panic(err)
	}
	return &smImage{applied: s.applied, digest: s.digest, data: buf.Bytes()}
}

// restore loads the snapshot into a store of its own.
func (im *smImage) restore() *smState {
	s := &smState{applied: im.applied, digest: im.digest, store: kvstore.New()}
	if err := s.store.Restore(bytes.NewReader(im.data)); err != nil {
		panic(err)
	}
	return s
}

func (s *smState) apply(e Entry) {
	s.applied = e.Index
	if e.Type != EntryNormal || len(e.Data) == 0 {
		return // no-ops and membership entries leave the store as it is
	}
	if err := s.store.Apply(kvstore.Entry{Index: e.Index, Term: e.Term, Time: e.Time, Data: e.Data}, nil); err != nil {
		panic(err)
	}
	s.digest = 0
}

// digestEvery spaces the digest checks: kvstore.Digest walks every shard, and doing it
// after each of the hundreds of thousands of entries a run applies would dominate it.
const digestEvery = 64

// checkpoint reports whether the digest is compared at this index, and computes it.
func (s *smState) checkpoint() bool {
	if s.applied%digestEvery != 0 {
		return false
	}
	s.digest = s.store.Digest()
	return true
}

// get reads a key the way the RESP frontend would.
func (s *smState) get(key string) string {
	var w getWriter
	s.store.Read(0, 1<<40, [][]byte{[]byte("GET"), []byte(key)}, &w)
	return w.val
}

// getWriter records the reply of a GET: a bulk string, or nothing for a missing key.
type getWriter struct{ val string }

func (w *getWriter) Bulk(b []byte)       { w.val = string(b) }
func (w *getWriter) BulkString(v string) { w.val = v }
func (w *getWriter) Null()               { w.val = "" }
func (*getWriter) Status(string)         {}
func (*getWriter) Error(string)          {}
func (*getWriter) Int(int64)             {}
func (*getWriter) NullArray()            {}
func (*getWriter) Array(int)             {}
func (*getWriter) Map(int)               {}
func (*getWriter) Set(int)               {}
func (*getWriter) Double(float64)        {}
func (*getWriter) Resp3() bool           { return false }

type simNode struct {
	id       uint64
	up       bool
	r        *Raft
	disk     disk
	snapData *smImage // contents of disk.snap
	sm       *smState
	inbound  map[uint64]*smImage // snapshot contents received, by index
	writes   map[uint64]*clientOp
	reads    map[uint64]*clientOp
	off      *simOffload // the offload engine (sim_offload_test.go), nil without
}

type clientOp struct {
	client   int
	put      bool
	key, val string
	call     int64
	node     uint64
	index    uint64 // put: the entry's index and term once proposed
	term     uint64
	ctx      uint64 // read: ReadIndex context
	readAt   uint64
	minRead  uint64 // read: the offload engine's commit when it was asked
	returned bool
}

type sim struct {
	t     *testing.T
	seed  int64
	rng   *rand.Rand
	now   int64
	seq   uint64
	q     eventQueue
	nodes map[uint64]*simNode
	ids   []uint64
	boot  Membership
	lease bool
	// offload runs an offload engine on every member.
	offload bool
	// evict keeps little of the log's data in memory (Config.LogReader): the members
	// read entries back from their disks.
	evict bool

	partition map[uint64]int // member → side; messages between sides are dropped
	faults    bool
	// calling: clients make new calls (until the run converges).
	calling bool
	// deaf are members whose engine datagrams are lost (their TCP messages are not).
	deaf map[uint64]bool

	leaders   map[uint64]uint64 // term → the leader elected in it
	committed map[uint64]Entry  // index → the entry applied there (anywhere)
	// committedBy: index → the lowest term of a member that applied it, no earlier than
	// the term in which it was committed (a member learns of a commit from a leader of
	// that term or later); leaders of later terms must hold it.
	committedBy map[uint64]uint64
	digests     map[uint64]uint64 // index → state digest after applying it
	maxIndex    uint64

	ops     []porcupine.Operation
	clients []*clientOp // the op each client has in flight (nil when idle)
	nextCtx uint64
	nextVal int
	stats   struct{ puts, gets, unknown, failed, msgs, dropped, accelerated, released, lazySends, readBack, detached, rejoined int }
}

func (s *sim) logf(format string, args ...any) {
	if *simTrace {
		s.t.Logf("[%6d] "+format, append([]any{s.now}, args...)...)
	}
}

func (s *sim) schedule(at int64, e *event) {
	s.seq++
	e.at, e.seq = at, s.seq
	heap.Push(&s.q, e)
}

func newSim(t *testing.T, seed int64, n int, lease, offload bool) *sim {
	s := &sim{t: t, seed: seed, rng: rand.New(rand.NewPCG(uint64(seed), 0x5eed)),
		nodes: map[uint64]*simNode{}, lease: lease, offload: offload, evict: seed/2%2 == 0, partition: map[uint64]int{}, faults: true, calling: true,
		leaders: map[uint64]uint64{}, committed: map[uint64]Entry{}, committedBy: map[uint64]uint64{}, digests: map[uint64]uint64{},
		clients: make([]*clientOp, 6)}
	for id := uint64(1); id <= uint64(n); id++ {
		s.ids = append(s.ids, id)
		s.boot.Voters = append(s.boot.Voters, id)
	}
	for _, id := range s.ids {
		nd := &simNode{id: id}
		s.nodes[id] = nd
		s.startNode(nd)
	}
	s.schedule(tickEvery, &event{kind: evTick})
	for c := range s.clients {
		s.schedule(int64(s.rng.IntN(50)), &event{kind: evClient, node: uint64(c)})
	}
	s.schedule(s.jitter(400), &event{kind: evPartition})
	s.schedule(s.jitter(700), &event{kind: evCrash})
	s.schedule(s.jitter(300), &event{kind: evCompact})
	return s
}

func (s *sim) jitter(mean int) int64 { return int64(mean/2 + s.rng.IntN(mean)) }

func (s *sim) config(id uint64) Config {
	src := rand.New(rand.NewPCG(uint64(s.seed), id))
	return Config{ID: id, ElectionTicks: 10, HeartbeatTicks: 2, MaxMsgBytes: 64, MaxInflight: 4, Rand: src.IntN}
}

// startNode (re)builds a member from its disk, as the driver does after a crash.
func (s *sim) startNode(nd *simNode) {
	st := nd.disk.state(s.boot)
	if st.Snapshot != nil {
		st.Entries = slices.DeleteFunc(st.Entries, func(e Entry) bool { return e.Index <= st.Snapshot.Index })
		nd.sm = nd.snapData.restore()
	} else {
		nd.sm = newSM()
	}
	cfg := s.config(nd.id)
	if s.evict {
		// Keep the data of about 30 entries (a SET is about 30 bytes): the rest is read
		// back from the disk. (With 64 bytes every Advance copied a chunk, and the
		// simulator took twice as long for the same checks.)
		cfg.LogReader, cfg.LogCacheBytes = &nd.disk, 1024
	}
	nd.r = New(cfg, st)
	nd.up = true
	nd.inbound = map[uint64]*smImage{}
	nd.writes = map[uint64]*clientOp{}
	nd.reads = map[uint64]*clientOp{}
	nd.off = nil
	if s.offload {
		nd.off = s.newOffload(nd)
	}
}

func (s *sim) run(until int64) {
	for s.q.Len() > 0 {
		e := heap.Pop(&s.q).(*event)
		if e.at > until {
			heap.Push(&s.q, e)
			return
		}
		s.now = e.at
		s.handle(e)
		s.check()
	}
}

func (s *sim) handle(e *event) {
	switch e.kind {
	case evTick:
		for _, id := range s.ids {
			if nd := s.nodes[id]; nd.up {
				nd.r.Tick()
				if nd.off != nil {
					s.offloadTick(nd)
				}
				s.process(nd)
			}
		}
		s.schedule(s.now+tickEvery, &event{kind: evTick})
	case evDeliver:
		s.deliver(e.msg)
	case evDatagram:
		s.deliverDatagram(e)
	case evClient:
		s.clientStep(int(e.node))
	case evPartition:
		if !s.faults {
			return
		}
		if s.rng.IntN(2) == 0 {
			for _, id := range s.ids {
				s.partition[id] = s.rng.IntN(2)
			}
		} else {
			s.partition[s.ids[s.rng.IntN(len(s.ids))]] = 1 // isolate one member
		}
		s.logf("partition %v", s.partition)
		s.schedule(s.now+s.jitter(250), &event{kind: evHeal})
	case evHeal:
		clear(s.partition)
		s.logf("heal")
		if s.faults {
			s.schedule(s.now+s.jitter(300), &event{kind: evPartition})
		}
	case evCrash:
		if !s.faults {
			return
		}
		// Half the crashes hit a leader: that is where Figure 8's histories come from.
		nd := s.nodes[s.ids[s.rng.IntN(len(s.ids))]]
		if leaders := s.claimedLeaders(); len(leaders) > 0 && s.rng.IntN(2) == 0 {
			nd = leaders[s.rng.IntN(len(leaders))]
		}
		if nd.up {
			s.crash(nd)
			s.schedule(s.now+s.jitter(150), &event{kind: evRestart, node: nd.id})
			if s.rng.IntN(2) == 0 { // half the time the others' drivers notice
				for _, id := range s.ids {
					if id != nd.id {
						s.schedule(s.now+s.jitter(4), &event{kind: evPeerDown, node: id, msg: simMsg{m: Message{From: nd.id}}})
					}
				}
			}
		}
		s.schedule(s.now+s.jitter(400), &event{kind: evCrash})
	case evRestart:
		nd := s.nodes[e.node]
		if !nd.up {
			s.logf("restart %d", nd.id)
			s.startNode(nd)
		}
	case evPeerDown:
		// A driver proves death by a refused connection: only while the member is still
		// down, and only across a link that works (a partition refuses nothing).
		nd, dead := s.nodes[e.node], e.msg.m.From
		if nd.up && !s.nodes[dead].up && s.partition[nd.id] == s.partition[dead] {
			s.logf("%d learns %d is down", nd.id, dead)
			nd.r.PeerDown(dead)
			s.process(nd)
		}
	case evCompact:
		nd := s.nodes[s.ids[s.rng.IntN(len(s.ids))]]
		if nd.up && nd.sm.applied > 0 {
			s.compact(nd, uint64(s.rng.IntN(20)))
		}
		s.schedule(s.now+s.jitter(300), &event{kind: evCompact})
	}
}

// crash loses everything the member did not persist; its clients' calls become unknown.
func (s *sim) crash(nd *simNode) {
	s.logf("crash %d", nd.id)
	nd.up = false
	for _, op := range nd.writes {
		s.finishUnknown(op)
	}
	for _, op := range nd.reads {
		s.fail(op)
	}
	if nd.off != nil {
		for _, op := range nd.off.waiting {
			s.fail(op)
		}
	}
}

func (s *sim) compact(nd *simNode, trailing uint64) {
	idx := nd.sm.applied
	term, ok := nd.r.TermAt(idx)
	if !ok {
		return
	}
	meta := SnapshotMeta{Index: idx, Term: term, Membership: nd.r.MembershipAt(idx).Clone()}
	if e, ok := s.committed[idx]; ok {
		meta.Time = e.Time
	}
	if nd.disk.snap != nil && idx <= nd.disk.snap.Index {
		return
	}
	nd.disk.snap, nd.snapData = &meta, nd.sm.image()
	nd.disk.entries = slices.DeleteFunc(nd.disk.entries, func(e Entry) bool { return e.Index <= idx })
	nd.r.Compact(meta, trailing)
	s.logf("compact %d at %d trailing %d", nd.id, idx, trailing)
}

// process is the driver: persist, send, apply, answer, Advance.
func (s *sim) process(nd *simNode) {
	defer s.answerWaitingReads(nd)
	for {
		if nd.up {
			if nd.off != nil {
				nd.off.Drain(s.now * simUnit)
			}
		}
		if !nd.up || !nd.r.HasReady() {
			return
		}
		rd := nd.r.Ready()
		if rd.SoftState != nil && rd.SoftState.Role == Leader {
			s.onNewLeader(nd)
		}
		if rd.Snapshot != nil {
			data := nd.inbound[rd.Snapshot.Index]
			if data == nil {
				s.t.Fatalf("seed %d: member %d installs snapshot %d it never received", s.seed, nd.id, rd.Snapshot.Index)
			}
			nd.sm, nd.snapData = data.restore(), data
			s.logf("member %d installed snapshot at %d", nd.id, rd.Snapshot.Index)
		}
		nd.disk.persist(rd)
		if nd.off != nil {
			nd.off.Persisted(nd.r.LastIndex()) // everything in the log is on disk now
		}
		for _, m := range rd.Messages {
			s.send(nd, m)
		}
		for _, e := range rd.CommittedEntries {
			if e.Index <= nd.sm.applied {
				continue // covered by the snapshot the member restarted from
			}
			s.applyAt(nd, e)
		}
		for _, rs := range rd.ReadStates {
			op := nd.reads[rs.Ctx]
			if op == nil {
				continue
			}
			delete(nd.reads, rs.Ctx)
			if rs.Lost {
				s.fail(op)
				continue
			}
			op.readAt = max(rs.Index, op.minRead)
			if nd.sm.applied < rs.Index {
				s.t.Fatalf("seed %d: read index %d beyond applied %d", s.seed, rs.Index, nd.sm.applied)
			}
			if nd.sm.applied < op.readAt {
				nd.off.waiting = append(nd.off.waiting, op) // behind the engine's commit
				continue
			}
			op.val = nd.sm.get(op.key)
			s.finish(op, op.val)
		}
		nd.r.Advance(rd)
	}
}

func (s *sim) applyAt(nd *simNode, e Entry) {
	if e.Index != nd.sm.applied+1 {
		s.t.Fatalf("seed %d: member %d applies %d after %d", s.seed, nd.id, e.Index, nd.sm.applied)
	}
	if prev, ok := s.committed[e.Index]; ok {
		if prev.Term != e.Term || string(prev.Data) != string(e.Data) || prev.Type != e.Type {
			s.t.Fatalf("seed %d: state machine safety: member %d applies %d term %d %q, another applied term %d %q",
				s.seed, nd.id, e.Index, e.Term, e.Data, prev.Term, prev.Data)
		}
	} else {
		s.committed[e.Index] = e
		s.maxIndex = max(s.maxIndex, e.Index)
	}
	if t, ok := s.committedBy[e.Index]; !ok || nd.r.Term() < t {
		s.committedBy[e.Index] = nd.r.Term()
	}
	nd.sm.apply(e)
	if nd.sm.checkpoint() {
		if d, ok := s.digests[e.Index]; ok && d != nd.sm.digest {
			s.t.Fatalf("seed %d: member %d kvstore digest at %d differs", s.seed, nd.id, e.Index)
		}
		s.digests[e.Index] = nd.sm.digest
	}
	if op := nd.writes[e.Index]; op != nil {
		delete(nd.writes, e.Index)
		if op.term == e.Term {
			s.finish(op, "")
		} else {
			// Another leader's entry took the slot: this write was never committed.
			s.finishUnknown(op)
		}
	}
}

// onNewLeader checks leader completeness: the new leader's log holds every entry
// applied anywhere that was committed in an earlier term than its own (those it still
// has in memory; compacted ones it applied itself). A leader of an older term than one
// that committed entries may still win its election (its voters had not heard of the
// later term), and need not hold them.
func (s *sim) onNewLeader(nd *simNode) {
	for i := nd.r.log.offset + 1; i <= s.maxIndex; i++ {
		e, ok := s.committed[i]
		if !ok || s.committedBy[i] >= nd.r.Term() {
			continue
		}
		if t, ok := nd.r.TermAt(i); !ok || t != e.Term {
			s.t.Fatalf("seed %d: leader completeness: new leader %d (term %d) lacks committed entry %d (term %d)",
				s.seed, nd.id, nd.r.Term(), i, e.Term)
		}
	}
}

func (s *sim) send(from *simNode, m Message) {
	s.stats.msgs++
	sm := simMsg{m: m}
	if m.Type == MsgSnap {
		if from.disk.snap == nil || from.disk.snap.Index != m.Snapshot.Index {
			s.t.Fatalf("seed %d: member %d sends snapshot %d but holds %+v", s.seed, from.id, m.Snapshot.Index, from.disk.snap)
		}
		sm.snap = from.snapData
	}
	copies := s.faultCopies(0.02, 0.01)
	if copies == 0 {
		s.stats.dropped++
		s.snapFailed(sm)
	}
	for range copies {
		delay := int64(1 + s.rng.IntN(4))
		if s.faults && s.rng.IntN(20) == 0 {
			delay += int64(s.rng.IntN(60))
		}
		s.schedule(s.now+delay, &event{kind: evDeliver, msg: sm})
	}
}

func (s *sim) snapFailed(sm simMsg) {
	if sm.m.Type == MsgSnap {
		if from := s.nodes[sm.m.From]; from.up {
			from.r.ReportSnapshot(sm.m.To, true)
		}
	}
}

func (s *sim) deliver(sm simMsg) {
	m := sm.m
	if *simTrace && m.Type != MsgHeartbeat && m.Type != MsgHeartbeatResp {
		s.logf("deliver %v %d→%d term %d index %d logterm %d commit %d ents %d reject %v hint %d", m.Type, m.From, m.To, m.Term, m.Index, m.LogTerm, m.Commit, len(m.Entries), m.Reject, m.Hint)
	}
	to := s.nodes[m.To]
	if to == nil || !to.up || s.partition[m.From] != s.partition[m.To] {
		s.stats.dropped++
		s.snapFailed(sm)
		return
	}
	if to.off != nil {
		to.off.Observe(s.now*simUnit, m)
	}
	if sm.snap != nil {
		to.inbound[m.Snapshot.Index] = sm.snap
		if from := s.nodes[m.From]; from.up {
			from.r.ReportSnapshot(m.To, false)
			defer s.process(from)
		}
	}
	to.r.Step(m)
	s.process(to)
}

// check asserts election safety after every event.
func (s *sim) check() {
	for _, id := range s.ids {
		nd := s.nodes[id]
		if !nd.up || nd.r.Role() != Leader {
			continue
		}
		if l, ok := s.leaders[nd.r.Term()]; ok && l != id {
			s.t.Fatalf("seed %d: election safety: members %d and %d both lead term %d", s.seed, l, id, nd.r.Term())
		}
		s.leaders[nd.r.Term()] = id
	}
}

// --- clients ----------------------------------------------------------------------------

var simKeys = []string{"x", "y", "z"}

func (s *sim) clientStep(c int) {
	if s.clients[c] != nil || !s.calling {
		return // busy, or the run is converging: no new calls
	}
	target := s.pickNode()
	op := &clientOp{client: c, key: simKeys[s.rng.IntN(len(simKeys))], call: s.now, node: target.id}
	if !target.up {
		s.again(c)
		return
	}
	if s.rng.IntN(2) == 0 {
		op.put = true
		s.nextVal++
		op.val = fmt.Sprint(s.nextVal)
		batch := kvstore.AppendCommand(nil, 0, [][]byte{[]byte("SET"), []byte(op.key), []byte(op.val)})
		var idx uint64
		var err error
		viaEngine := false
		if target.off != nil {
			idx, viaEngine = target.off.Propose(s.now*simUnit, s.now, EntryNormal, batch)
		}
		if !viaEngine {
			idx, err = target.r.Propose(s.now, batch)
		}
		if err != nil {
			s.again(c)
			return
		}
		op.index, op.term = idx, target.r.Term()
		target.writes[idx] = op
	} else {
		s.nextCtx++
		op.ctx = s.nextCtx
		if target.off != nil {
			op.minRead = target.off.ReleasedTo()
		}
		if err := target.r.ReadIndex(op.ctx, s.lease); err != nil {
			s.again(c)
			return
		}
		target.reads[op.ctx] = op
	}
	s.clients[c] = op
	s.process(target)
}

// pickNode mostly finds a member that believes it leads, as a client following
// redirects would; with a partition there may be two, and clients reach both.
func (s *sim) pickNode() *simNode {
	if s.rng.IntN(5) > 0 {
		if leaders := s.claimedLeaders(); len(leaders) > 0 {
			return leaders[s.rng.IntN(len(leaders))]
		}
	}
	return s.nodes[s.ids[s.rng.IntN(len(s.ids))]]
}

func (s *sim) claimedLeaders() []*simNode {
	var out []*simNode
	for _, id := range s.ids {
		if nd := s.nodes[id]; nd.up && nd.r.Role() == Leader {
			out = append(out, nd)
		}
	}
	return out
}

func (s *sim) again(c int) {
	s.schedule(s.now+int64(1+s.rng.IntN(10)), &event{kind: evClient, node: uint64(c)})
}

func (s *sim) finish(op *clientOp, out string) {
	if op.returned {
		return
	}
	op.returned = true
	if op.put {
		s.stats.puts++
	} else {
		s.stats.gets++
	}
	s.ops = append(s.ops, porcupine.Operation{ClientId: op.client, Input: kvmodel.Input{Put: op.put, Key: op.key, Val: op.val},
		Call: op.call, Output: out, Return: s.now})
	s.clients[op.client] = nil
	s.again(op.client)
}

// finishUnknown records a write whose outcome the client never learned: it may take
// effect at any point after its call, so it returns "at the end of time".
func (s *sim) finishUnknown(op *clientOp) {
	if op.returned {
		return
	}
	op.returned = true
	s.stats.unknown++
	s.ops = append(s.ops, porcupine.Operation{ClientId: op.client, Input: kvmodel.Input{Put: op.put, Key: op.key, Val: op.val},
		Call: op.call, Output: "", Return: 1 << 62})
	s.clients[op.client] = nil
	s.again(op.client)
}

// fail drops a call that certainly had no effect (a read that got no answer, a write
// that never reached a log): the client retries.
func (s *sim) fail(op *clientOp) {
	if op.returned {
		return
	}
	op.returned = true
	s.stats.failed++
	s.clients[op.client] = nil
	s.again(op.client)
}

// converge heals every fault, lets the cluster settle, and requires one leader and every
// member applied to the same index with the same digest.
func (s *sim) converge() {
	s.faults, s.calling = false, false
	clear(s.partition)
	for _, id := range s.ids {
		if nd := s.nodes[id]; !nd.up {
			s.startNode(nd)
		}
	}
	deadline := s.now + 400*tickEvery
	for s.now < deadline {
		s.run(s.now + 50*tickEvery)
		var leader *simNode
		for _, id := range s.ids {
			if nd := s.nodes[id]; nd.r.Role() == Leader {
				leader = nd
			}
		}
		if leader == nil {
			continue
		}
		done := true
		for _, id := range s.ids {
			nd := s.nodes[id]
			if nd.sm.applied != leader.r.Committed() || nd.sm.store.Digest() != leader.sm.store.Digest() || nd.r.Lead() != leader.id {
				done = false
			}
		}
		if done {
			return
		}
	}
	for _, id := range s.ids {
		nd := s.nodes[id]
		s.t.Logf("member %d: %v applied %d round %d ticks %d up %v now %d", id, nd.r, nd.sm.applied, nd.r.round, nd.r.ticks, nd.up, s.now)
		for pid, pr := range nd.r.prs {
			s.t.Logf("  progress %d: %+v", pid, *pr)
		}
		if nd.off != nil {
			s.t.Logf("  offload: open %v leading %v offloaded %v registers %+v stats %+v", nd.off.Open(), nd.off.Leading(),
				nd.r.offloaded, nd.off.eng.Registers(), nd.off.EngineStats())
		}
	}
	s.t.Fatalf("seed %d: cluster did not converge after healing", s.seed)
}

func (r *Raft) String() string {
	return fmt.Sprintf("term %d role %v lead %d last %d commit %d", r.term, r.role, r.lead, r.LastIndex(), r.Committed())
}

func runSim(t *testing.T, seed int64, n int, lease, offload bool) *sim {
	s := newSim(t, seed, n, lease, offload)
	s.run(simDuration)
	s.converge()
	// Calls still in flight are unknown writes or unanswered reads.
	for _, op := range s.clients {
		if op != nil && op.put {
			s.finishUnknown(op)
		}
	}
	res, info := porcupine.CheckOperationsVerbose(kvmodel.Model, s.ops, 30*time.Second)
	if res != porcupine.Ok {
		// The visualization outlives the test (t.TempDir would not) so it can be opened.
		path := filepath.Join(os.TempDir(), fmt.Sprintf("nanokv-sim-%d-%d.html", seed, n))
		if err := porcupine.VisualizePath(kvmodel.Model, info, path); err != nil {
			path = "not written: " + err.Error()
		}
		t.Fatalf("seed %d (lease %v, offload %v): history is %s (%d ops); visualization: %s", seed, lease, offload, res, len(s.ops), path)
	}
	for _, nd := range s.nodes {
		if nd.off != nil { // the engines of the members' last lives
			s.stats.lazySends += int(nd.off.EngineStats().LazySends)
			s.stats.detached += int(nd.off.Stats().Detached)
			s.stats.rejoined += int(nd.off.Stats().Rejoined)
		}
		s.stats.readBack += nd.disk.reads
	}
	return s
}

func TestSimulatedClusterUnderFaults(t *testing.T) {
	seeds := make([]int64, 0, *simSeeds)
	if *simSeed >= 0 {
		seeds = append(seeds, *simSeed)
	} else {
		for i := range *simSeeds {
			seeds = append(seeds, *simFrom+int64(i))
		}
	}
	// Seeds are independent, so they run side by side, as many at once as go test's
	// -parallel allows (GOMAXPROCS by default); each is its own subtest, named by its seed.
	var mu sync.Mutex
	var total struct{ puts, gets, unknown, msgs, dropped, leaders, accelerated, released, lazySends, readBack, detached, rejoined int }
	t.Run("seed", func(t *testing.T) {
		for _, seed := range seeds {
			t.Run(strconv.FormatInt(seed, 10), func(t *testing.T) {
				t.Parallel()
				for _, n := range []int{3, 5} {
					for _, offload := range []bool{false, true} {
						lease := seed%2 == 1
						s := runSim(t, seed, n, lease, offload)
						mu.Lock()
						total.puts += s.stats.puts
						total.gets += s.stats.gets
						total.unknown += s.stats.unknown
						total.msgs += s.stats.msgs
						total.dropped += s.stats.dropped
						total.leaders += len(s.leaders)
						total.accelerated += s.stats.accelerated
						total.released += s.stats.released
						total.lazySends += s.stats.lazySends
						total.readBack += s.stats.readBack
						total.detached += s.stats.detached
						total.rejoined += s.stats.rejoined
						mu.Unlock()
					}
				}
			})
		}
	})
	if t.Failed() {
		return
	}
	// The run must have done something worth checking, with and without the engine.
	if total.puts == 0 || total.gets == 0 || total.leaders <= 2*len(seeds) || total.accelerated < len(seeds) || total.released == 0 ||
		(len(seeds) >= 20 && (total.lazySends == 0 || total.readBack == 0 || total.detached == 0 || total.rejoined == 0)) {
		t.Fatalf("simulation exercised too little: %+v", total)
	}
	t.Logf("%d seeds: %+v", len(seeds), total)
}

// faultCopies is how many copies of a message the network delivers: with faults on, none
// with probability drop, two with probability dup, else one.
func (s *sim) faultCopies(drop, dup float64) int {
	if !s.faults {
		return 1
	}
	switch p := s.rng.Float64(); {
	case p < drop:
		return 0
	case p < drop+dup:
		return 2
	}
	return 1
}
