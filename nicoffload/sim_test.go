package nicoffload

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// A three-member exchange over an in-memory network that drops, duplicates and reorders
// datagrams, on a virtual clock. The host of each member is modelled as the integration
// will be: it appends Output.Append to its log (checking the indexes are consecutive),
// reports durability, sends, and follows the commit index.

type flight struct {
	at   int64
	seq  int // tie-break, so runs are reproducible
	from uint64
	to   uint64
	b    []byte
}

type simHost struct {
	e      *Engine
	log    []Entry // after index 10
	commit uint64
}

type sim struct {
	t     testing.TB
	rng   *rand.Rand
	now   int64
	seq   int
	hosts map[uint64]*simHost
	net   []flight
	// fate decides what happens to the n-th datagram: its copies' delays (none: dropped).
	fate func(n int, f flight, p *Packet) []int64
	sent int
	// tickEvery is how often step ticks the engines (0: at every step); lastTick when it
	// last did.
	tickEvery, lastTick int64
}

func newSim(t testing.TB, seed uint64, cfg Config) *sim {
	s := &sim{t: t, rng: rand.New(rand.NewPCG(seed, 0x6e6b)), hosts: map[uint64]*simHost{}}
	cfg.ClusterID = testCluster
	for id := uint64(1); id <= 3; id++ {
		e := New(cfg)
		e.Open(0, regs(id, id == 1, 2, 10, 2, 10, 1, 2, 3))
		s.hosts[id] = &simHost{e: e, commit: 10}
	}
	s.fate = func(int, flight, *Packet) []int64 { return []int64{20 * usec} }
	return s
}

// collect runs every host's Ready: log, persist, send.
func (s *sim) collect() {
	for _, id := range []uint64{1, 2, 3} {
		h := s.hosts[id]
		if !h.e.HasReady() {
			continue
		}
		o := h.e.Ready()
		if o.Halt != nil {
			s.t.Fatalf("t=%d member %d halted: %+v (%v)", s.now, id, o.Halt, o.Halt.Reason)
		}
		if len(o.Recover) > 0 {
			s.t.Fatalf("t=%d member 1 gave %v to software", s.now, o.Recover)
		}
		for _, ent := range o.Append {
			if want := uint64(11 + len(h.log)); ent.Index != want {
				s.t.Fatalf("t=%d member %d: host ring got index %d, want %d", s.now, id, ent.Index, want)
			}
			ent.Data = bytes.Clone(ent.Data)
			h.log = append(h.log, ent)
		}
		if len(o.Append) > 0 {
			h.e.Persisted(o.Append[len(o.Append)-1].Index)
		}
		if o.CommitIndex != 0 {
			if o.CommitIndex < h.commit || o.CommitIndex > uint64(10+len(h.log)) {
				s.t.Fatalf("member %d: commit %d (was %d, log to %d)", id, o.CommitIndex, h.commit, 10+len(h.log))
			}
			h.commit = o.CommitIndex
		}
		for _, d := range o.Datagrams {
			f := flight{from: id, to: d.To, b: bytes.Clone(d.Bytes)}
			p, err := ParsePacket(f.b)
			if err != nil {
				s.t.Fatalf("member %d sent a bad datagram: %v", id, err)
			}
			for _, delay := range s.fate(s.sent, f, &p) {
				f.at, f.seq = s.now+delay, s.seq
				s.seq++
				s.net = append(s.net, f)
			}
			s.sent++
		}
		h.e.Advance(o)
	}
}

// step advances the clock by dt: delivers what is due, in arrival order, and ticks.
func (s *sim) step(dt int64) {
	s.now += dt
	slices.SortFunc(s.net, func(a, b flight) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.seq - b.seq
	})
	n := 0
	for n < len(s.net) && s.net[n].at <= s.now {
		n++
	}
	due := slices.Clone(s.net[:n])
	s.net = slices.Delete(s.net, 0, n)
	for _, f := range due {
		p, err := ParsePacket(f.b)
		if err != nil {
			s.t.Fatalf("undecodable datagram in flight: %v", err)
		}
		s.hosts[f.to].e.Step(s.now, &p)
		s.collect()
	}
	if s.now-s.lastTick < s.tickEvery {
		return
	}
	s.lastTick = s.now
	for _, id := range []uint64{1, 2, 3} {
		s.hosts[id].e.Tick(s.now)
	}
	s.collect()
}

func (s *sim) propose(n int) {
	d := make([][]byte, n)
	for i := range d {
		d[i] = fmt.Appendf(nil, "SET k%d %d", s.rng.IntN(1000), s.rng.Uint64())
	}
	if _, err := s.hosts[1].e.Propose(s.now, s.now/msec, d...); err != nil {
		s.t.Fatalf("propose: %v", err)
	}
	s.collect()
}

// settle runs until every member holds and has committed the leader's whole log.
func (s *sim) settle(limit int64) {
	end := s.now + limit
	for s.now < end {
		if s.converged() {
			return
		}
		s.step(50 * usec)
	}
	l := s.hosts[1]
	for id, h := range s.hosts {
		s.t.Logf("member %d: log to %d, commit %d, stats %+v", id, 10+len(h.log), h.commit, h.e.Stats())
	}
	s.t.Fatalf("not converged after %v (leader log to %d)", time.Duration(limit), 10+len(l.log))
}

func (s *sim) converged() bool {
	l := s.hosts[1]
	last := uint64(10 + len(l.log))
	for _, h := range s.hosts {
		if len(h.log) != len(l.log) || h.commit != last {
			return false
		}
	}
	return true
}

func (s *sim) checkLogs() {
	l := s.hosts[1]
	for _, id := range []uint64{2, 3} {
		h := s.hosts[id]
		for i := range l.log {
			a, b := l.log[i], h.log[i]
			if a.Index != b.Index || a.Term != b.Term || a.Time != b.Time || !bytes.Equal(a.Data, b.Data) {
				s.t.Fatalf("member %d entry %d: %+v, leader has %+v", id, a.Index, b, a)
			}
		}
	}
}

// vote runs the accelerated-term vote over a reliable network.
func (s *sim) vote() {
	s.collect()
	for range 10 {
		s.step(50 * usec)
	}
	if !s.hosts[1].e.Registers().Enabled {
		s.t.Fatalf("vote not won")
	}
}

// A scripted exchange: the first batch to 2 is lost, a batch to 3 is duplicated, two
// batches to 3 arrive in reverse order, and an ack from 2 is lost. Every entry reaches
// both followers' host rings in order and commits everywhere.
func TestThreeEnginesOverLossyNetworkScripted(t *testing.T) {
	s := newSim(t, 1, Config{})
	s.vote()
	appends := map[uint64]int{}
	acks2 := 0
	s.fate = func(_ int, f flight, p *Packet) []int64 {
		d := 20 * usec
		switch {
		case p.Type == Append && len(p.Entries) > 0 && f.to == 2:
			appends[2]++
			if appends[2] == 1 {
				return nil // lost
			}
		case p.Type == Append && len(p.Entries) > 0 && f.to == 3:
			appends[3]++
			switch appends[3] {
			case 1:
				return []int64{d, d + 5*usec} // duplicated
			case 2:
				return []int64{d + 100*usec} // overtaken by the third
			}
		case p.Type == Ack && f.from == 2:
			acks2++
			if acks2 == 1 {
				return nil
			}
		}
		return []int64{d}
	}
	for range 4 {
		s.propose(3)
		s.step(10 * usec)
	}
	s.settle(20 * time.Millisecond.Nanoseconds())
	s.checkLogs()
	if got := s.hosts[2].e.Stats().GapRequests; got == 0 {
		t.Fatalf("follower 2 never asked for the lost batch")
	}
	if got := s.hosts[3].e.Stats().Duplicates; got == 0 {
		t.Fatalf("follower 3 saw no duplicate")
	}
}

var (
	simSeeds = flag.Int("sim.seeds", 300, "number of random-network seeds to run (-short: 50)")
	simFrom  = flag.Uint64("sim.from", 0, "first random-network seed to run")
)

// The same over a few hundred seeds of random loss (up to 20%), duplication and
// reordering, with proposals at random times and sizes, batching by delay and size, and
// with and without AckAfterPersist. -sim.seeds and -sim.from run others; a failure names
// its seed (-run 'Random/seed=N$' reruns it).
func TestThreeEnginesOverLossyNetworkRandom(t *testing.T) {
	seeds := *simSeeds
	if testing.Short() {
		seeds = min(seeds, 50)
	}
	simTotals.replayed, simTotals.gaps, simTotals.dups, simTotals.lazy = 0, 0, 0, 0
	for seed := *simFrom; seed < *simFrom+uint64(seeds); seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { simRandom(t, seed) })
	}
	// The network did its job: the runs exercised every recovery path (a handful of
	// seeds chosen with -sim.seeds may all be lossless).
	if seeds >= 20 && (simTotals.replayed == 0 || simTotals.gaps == 0 || simTotals.dups == 0 || simTotals.lazy == 0) {
		t.Fatalf("no loss recovery exercised: %+v", simTotals)
	}
	t.Logf("replayed %d datagrams, %d gap requests, %d duplicates, %d lazy sends", simTotals.replayed,
		simTotals.gaps, simTotals.dups, simTotals.lazy)
}

func simRandom(t *testing.T, seed uint64) {
	{
		cfg := Config{BatchDelay: time.Duration(seed%3) * 30 * time.Microsecond,
			BatchBytes: []int{256, 1024, 32 << 10}[seed%3], AckAfterPersist: seed%2 == 1,
			InFlight: int(seed / 6 % 3)} // group commit, where BatchDelay is 0
		lazy := seed/2%2 == 1
		if lazy {
			// Ticks far apart, as the host's are, so that a lazy follower's batches
			// wait for their delay rather than for the next tick's flush.
			cfg.LazyDelay = 300 * time.Microsecond
		}
		s := newSim(t, seed, cfg)
		if lazy {
			s.tickEvery = 2 * msec
		}
		s.vote()
		loss := float64(seed%5) * 0.05
		s.fate = func(_ int, _ flight, _ *Packet) []int64 {
			if s.rng.Float64() < loss {
				return nil
			}
			d := []int64{10*usec + s.rng.Int64N(200*usec)} // reordering: random delays
			if s.rng.Float64() < 0.05 {
				d = append(d, 10*usec+s.rng.Int64N(400*usec))
			}
			return d
		}
		for range 40 + s.rng.IntN(40) {
			s.propose(1 + s.rng.IntN(8))
			s.step(s.rng.Int64N(100 * usec))
		}
		s.settle(int64(2 * time.Second))
		s.checkLogs()
		for _, h := range s.hosts {
			st := h.e.Stats()
			simTotals.replayed += st.Replayed
			simTotals.gaps += st.GapRequests
			simTotals.dups += st.Duplicates
			simTotals.lazy += st.LazySends
		}
	}
}

var simTotals struct{ replayed, gaps, dups, lazy uint64 }
