package nicoffload

import (
	"testing"
	"time"

	"github.com/nanokv/nanokv/internal/cputime"
)

// BenchmarkEngineLeader: one propose+ack cycle of a three-member leader — a proposal of
// one 32-byte entry sealed at once into one datagram per follower, both acks, the commit.
func BenchmarkEngineLeader(b *testing.B) {
	e := newLeader(b, Config{})
	payload := make([]byte, 32)
	a2 := ack(2, 2, 0)
	a3 := ack(3, 2, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		now := int64(i)
		idx, err := e.Propose(now, 0, payload)
		if err != nil {
			b.Fatal(err)
		}
		e.Advance(e.Ready())
		a2.Index, a3.Index = idx, idx
		e.Step(now, a2)
		e.Step(now, a3)
		if o := e.Ready(); o.CommitIndex != idx {
			b.Fatalf("commit %d, want %d", o.CommitIndex, idx)
		} else {
			e.Advance(o)
		}
	}
}

// BenchmarkEngineFollower: one Append of one entry decoded, checked, appended and acked.
func BenchmarkEngineFollower(b *testing.B) {
	f := newFollower(b, Config{}, 2)
	payload := make([]byte, 32)
	p := Packet{ClusterID: testCluster, From: 1, To: 2, Type: Append, Term: 2, PrevLogTerm: 2,
		Entries: []Entry{{Term: 2, Data: payload}}}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		p.PrevLogIndex = uint64(10 + i)
		buf = AppendPacket(buf[:0], &p)
		pk, err := ParsePacket(buf)
		if err != nil {
			b.Fatal(err)
		}
		f.Step(int64(i), &pk)
		f.Advance(f.Ready())
	}
}

// BenchmarkUDPRoundTrip: a datagram to a peer transport over loopback and its echo back,
// blocking receive (SpinBudget 0) and with a 50µs spin.
func BenchmarkUDPRoundTrip(b *testing.B) {
	for _, spin := range []time.Duration{0, 50 * time.Microsecond} {
		b.Run("spin="+spin.String(), func(b *testing.B) {
			back := make(chan struct{}, 1)
			var echo *UDPTransport
			reply := []Outgoing{{To: 1, Bytes: dgram(Packet{ClusterID: testCluster, From: 2, To: 1, Type: Ack, Term: 2})}}
			a, e := pair(b, func([]Packet) { back <- struct{}{} }, func([]Packet) { echo.Send(reply) }, spin)
			echo = e
			req := []Outgoing{{To: 2, Bytes: dgram(Packet{ClusterID: testCluster, From: 1, To: 2, Type: Append,
				Term: 2, Entries: []Entry{{Term: 2, Data: make([]byte, 32)}}})}}
			b.ReportAllocs()
			b.ResetTimer()
			start, cpu0 := time.Now(), cputime.Process()
			for range b.N {
				if err := a.Send(req); err != nil {
					b.Fatal(err)
				}
				select {
				case <-back:
				case <-time.After(time.Second):
					b.Fatal("datagram lost on loopback")
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/rtt")
			// The CPU of both ends and the benchmark's loop, all in this process: on a
			// machine whose cores the members share, what a round trip costs them.
			b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/float64(b.N), "cpu-µs/rtt")
		})
	}
}
