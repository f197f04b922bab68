package resp

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nanokv/nanokv/internal/testbackend"
)

// lateBackend is testbackend.Late with what resp needs besides.
type lateBackend struct{ *testbackend.Late }

func (lateBackend) Info(*strings.Builder, string) bool { return false }
func (lateBackend) ConfigGet() map[string]string       { return nil }
func (lateBackend) ConfigCheck(string, string) (func() error, bool, error) {
	return nil, false, errors.New("unknown")
}

// A write that timed out may still commit, and the applier then writes its replies to the
// sink it was proposed with. Those replies belong to no request any more: they must not
// reach the client, nor be taken for the replies of the connection's next write.
func TestLateRepliesOfATimedOutWriteAreDropped(t *testing.T) {
	b := testbackend.NewLate(t)
	s := NewServer(lateBackend{b}, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(nc)
	roundTrip := func(cmd, want string) {
		t.Helper()
		if _, err := nc.Write([]byte(cmd)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(want))
		if _, err := io.ReadFull(r, got); err != nil {
			t.Fatalf("%q: read: %v (got %q)", cmd, err, got)
		}
		if string(got) != want {
			t.Fatalf("%q replied %q, want %q", cmd, got, want)
		}
	}
	roundTrip("INCR k\r\n", "-TIMEOUT Request timed out\r\n")
	b.Release() // it committed after all: k is 1
	roundTrip("INCR k\r\n", ":2\r\n")
	roundTrip("INCR k\r\n", ":3\r\n")
	roundTrip("GET k\r\n", "$1\r\n3\r\n")
}
