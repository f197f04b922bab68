package mcproto_test

import (
	"net"
	"testing"
	"time"

	"github.com/nanokv/nanokv/internal/testbackend"
	"github.com/nanokv/nanokv/mcproto"
)

// A write that timed out may still commit, and the applier then writes its results to
// the sink it was proposed with. They belong to no request any more: they must not be
// taken for the results of the connection's next write that waits for its apply.
func TestLateResultsOfATimedOutWriteAreDropped(t *testing.T) {
	b := testbackend.NewLate(t)
	c := serveBackend(t, b)
	c.send("set k 0 0 1\r\n0\r\n") // blind: commits at once
	c.expect("STORED\r\n")
	c.send("incr k 1\r\n")
	c.expect("SERVER_ERROR request timed out\r\n")
	b.Release() // it committed after all: k is 1
	c.send("incr k 1\r\n")
	c.expect("2\r\n")
	c.send("incr k 5\r\n")
	c.expect("7\r\n")
	c.send("get k\r\n")
	c.expect("VALUE k 0 1\r\n7\r\nEND\r\n")
}

// stats counts the items of the connection's own writes, as memcached's does: a set is
// answered at commit, before it is applied, so stats passes the read barrier first, as a
// get does.
func TestStatsSeesTheConnectionsOwnWrites(t *testing.T) {
	b := testbackend.NewLagging()
	c := serveBackend(t, b)
	t.Cleanup(b.CatchUp) // before the server closes: a connection waiting for the barrier lets go
	c.send("set k 0 0 1\r\n0\r\n")
	c.expect("STORED\r\n") // at commit: the applier has not applied it
	c.send("stats items\r\n")
	reply := make(chan string, 1)
	go func() {
		c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		l, err := c.r.ReadString('\n')
		if err != nil {
			l = err.Error()
		}
		reply <- l
	}()
	select {
	case <-b.Waits():
	case l := <-reply:
		t.Fatalf("stats answered %q before the applier caught up with the set", l)
	}
	b.CatchUp()
	if l := <-reply; l != "STAT items:1:number 1\r\n" {
		t.Fatalf("stats items: %q", l)
	}
}

// serveBackend serves memcached on a loopback port from b, a goroutine per connection,
// and returns a connection to it.
func serveBackend(t *testing.T, b mcproto.Backend) *testConn {
	s := mcproto.NewServer(b, mcproto.Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return dial(t, ln.Addr().String())
}
