//go:build linux

package netserve

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nanokv/nanokv/kvstore"
)

// lineConn is a toy protocol for the loop: every line is a write, answered once the
// round's proposal returns, with "ok <line>" or "error <line>".
type lineConn struct {
	buf    []byte
	end    int
	open   [][]byte // lines of the open batch
	batch  [][]byte // lines proposed this round
	out    []byte
	closed *atomic.Int32
}

func (c *lineConn) Space() []byte {
	if c.end == len(c.buf) {
		c.buf = append(c.buf, make([]byte, 4096)...)
	}
	return c.buf[c.end:]
}

func (c *lineConn) Consume(n int, _ int64) bool {
	c.end += n
	for {
		i := bytes.IndexByte(c.buf[:c.end], '\n')
		if i < 0 {
			return true
		}
		line := bytes.Clone(c.buf[:i])
		copy(c.buf, c.buf[i+1:c.end])
		c.end -= i + 1
		if string(line) == "quit" {
			return false
		}
		c.open = append(c.open, line)
	}
}

func (c *lineConn) CutBatch() ([]byte, kvstore.Sink, bool) {
	if len(c.open) == 0 {
		return nil, nil, false
	}
	c.batch, c.open = c.open, nil
	return bytes.Join(c.batch, []byte{'\n'}), nil, true
}

func (c *lineConn) FinishBatch(err error, _ int64) {
	word := "ok"
	if err != nil {
		word = "error"
	}
	for _, l := range c.batch {
		c.out = fmt.Appendf(c.out, "%s %s\n", word, l)
	}
	c.batch = nil
}

func (c *lineConn) Output() []byte { return c.out }
func (c *lineConn) Written(n int) {
	if n != len(c.out) {
		panic("Written is told less than the whole output")
	}
	c.out = c.out[:0]
}
func (c *lineConn) Closed() { c.closed.Add(1) }

// TestLoopAnswersEachConnectionsBatch: connections whose writes the loop proposes
// together each get their own batch's outcome, and a connection that quits is closed.
func TestLoopAnswersEachConnectionsBatch(t *testing.T) {
	var proposals, batches atomic.Int64
	propose := func(data [][]byte, sinks []kvstore.Sink, errs []error) {
		proposals.Add(1)
		batches.Add(int64(len(data)))
		for i, d := range data {
			if bytes.Contains(d, []byte("fail")) {
				errs[i] = errors.New("refused")
			}
		}
	}
	l, err := NewLoop(propose, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { l.Run(); close(done) }()
	var closed atomic.Int32

	const conns, rounds = 16, 50
	clients := make([]net.Conn, conns)
	for i := range clients {
		client, server := pair(t)
		if err := l.Add(&lineConn{closed: &closed}, server.(syscall.Conn)); err != nil {
			t.Fatal(err)
		}
		server.Close()
		clients[i] = client
		defer client.Close()
	}
	var wg sync.WaitGroup
	errc := make(chan error, conns)
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			r := bufio.NewReader(c)
			for j := range rounds {
				word, want := "pass", "ok"
				if (i+j)%3 == 0 {
					word, want = "fail", "error"
				}
				line := fmt.Sprintf("%s-%d-%d", word, i, j)
				fmt.Fprintf(c, "%s\n", line)
				got, err := r.ReadString('\n')
				if err != nil || got != want+" "+line+"\n" {
					errc <- fmt.Errorf("conn %d round %d: %q %v, want %q", i, j, got, err, want+" "+line)
					return
				}
			}
			fmt.Fprintf(c, "quit\n")
			if _, err := r.ReadByte(); err == nil {
				errc <- fmt.Errorf("conn %d: data after quit", i)
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); closed.Load() != conns; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d connections closed after quit", closed.Load(), conns)
		}
	}
	if got := batches.Load(); got != conns*rounds {
		t.Fatalf("%d batches proposed, want %d", got, conns*rounds)
	}
	t.Logf("%d batches in %d proposals", batches.Load(), proposals.Load())
	l.Close()
	<-done
}

// TestLoopCloseClosesConnections: Close ends Run, which closes what it serves.
func TestLoopCloseClosesConnections(t *testing.T) {
	l, err := NewLoop(func([][]byte, []kvstore.Sink, []error) {}, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { l.Run(); close(done) }()
	var closed atomic.Int32
	client, server := pair(t)
	defer client.Close()
	if err := l.Add(&lineConn{closed: &closed}, server.(syscall.Conn)); err != nil {
		t.Fatal(err)
	}
	server.Close()
	fmt.Fprintf(client, "x\n")
	r := bufio.NewReader(client)
	client.SetDeadline(time.Now().Add(10 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(got, "ok x") {
		t.Fatalf("reply %q %v", got, err)
	}
	l.Close()
	<-done
	if closed.Load() != 1 {
		t.Fatalf("Closed called %d times, want 1", closed.Load())
	}
	if _, err := r.ReadByte(); err == nil {
		t.Fatal("the connection is still open after Close")
	}
}

// A read clock is read again only after a proposal, and never goes back.
func TestReadClock(t *testing.T) {
	var c ReadClock
	future := time.Now().Add(time.Hour).UnixMilli()
	c.Set(5)
	if got := c.Now(); got != 5 {
		t.Fatalf("Now %d after Set(5)", got)
	}
	c.Proposed()
	if got := c.Now(); got < time.Now().Add(-time.Minute).UnixMilli() {
		t.Fatalf("Now %d after a proposal: the time was not read again", got)
	}
	c.Set(future)
	c.Proposed()
	if got := c.Now(); got != future {
		t.Fatalf("Now %d after a proposal, want %d: the clock went back", got, future)
	}
	c.AtLeast(future + 1)
	if got := c.Now(); got != future+1 {
		t.Fatalf("Now %d after AtLeast(%d)", got, future+1)
	}
}
