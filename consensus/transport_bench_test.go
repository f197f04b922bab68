package consensus

import (
	"testing"
	"time"

	"github.com/nanokv/nanokv/consensus/raft"
	"github.com/nanokv/nanokv/internal/cputime"
)

// BenchmarkTransportRoundTrip: an append of one 32-byte entry from member 1 to member 2
// over the TCP transport, and member 2's response back, one at a time: the exchange of a
// leader and a follower under a load of one request at a time. cpu-µs/rtt is the CPU of
// both ends (and the loop) per round trip.
func BenchmarkTransportRoundTrip(b *testing.B) {
	back := make(chan struct{}, 1)
	var tb *TCPTransport
	ta, err := ListenTransport(TransportConfig{ID: 1, ClusterID: 7, Listen: "127.0.0.1:0",
		Deliver: func(raft.Message) { back <- struct{}{} }})
	if err != nil {
		b.Fatal(err)
	}
	defer ta.Close()
	resp := []raft.Message{{Type: raft.MsgAppResp, From: 2, To: 1, Term: 3, Index: 1}}
	tb, err = ListenTransport(TransportConfig{ID: 2, ClusterID: 7, Listen: "127.0.0.1:0",
		Deliver: func(raft.Message) { tb.Send(resp) }})
	if err != nil {
		b.Fatal(err)
	}
	defer tb.Close()
	ta.SetPeer(2, tb.Addr())
	tb.SetPeer(1, ta.Addr())
	app := []raft.Message{{Type: raft.MsgApp, From: 1, To: 2, Term: 3,
		Entries: []raft.Entry{{Index: 1, Term: 3, Data: make([]byte, 32)}}}}
	roundTrip := func() {
		ta.Send(app)
		select {
		case <-back:
		case <-time.After(5 * time.Second):
			b.Fatal("no response")
		}
	}
	roundTrip() // the connections are up
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cputime.Process()
	for range b.N {
		roundTrip()
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/rtt")
	b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/float64(b.N), "cpu-µs/rtt")
}
