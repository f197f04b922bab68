//go:build linux

package netserve

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
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

// runLoop runs the loop NewLoop or NewAsyncLoop returned (runLoop(t)(NewLoop(...)));
// stop closes it and waits for Run to return.
func runLoop(t *testing.T) func(*Loop, error) (*Loop, func()) {
	return func(l *Loop, err error) (*Loop, func()) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { l.Run(); close(done) }()
		return l, func() { l.Close(); <-done }
	}
}

// awaitClients waits for the client goroutines, fails on the first error they sent, and
// polls until the loop has closed conns connections after their quit.
func awaitClients(t *testing.T, wg *sync.WaitGroup, errc chan error, closed *atomic.Int32, conns int32) {
	t.Helper()
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
}

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
	l, stop := runLoop(t)(NewLoop(propose, t.Logf))
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
	awaitClients(t, &wg, errc, &closed, conns)
	if got := batches.Load(); got != conns*rounds {
		t.Fatalf("%d batches proposed, want %d", got, conns*rounds)
	}
	t.Logf("%d batches in %d proposals", batches.Load(), proposals.Load())
	stop()
}

// TestLoopCloseClosesConnections: Close ends Run, which closes what it serves.
func TestLoopCloseClosesConnections(t *testing.T) {
	l, stop := runLoop(t)(NewLoop(func([][]byte, []kvstore.Sink, []error) {}, t.Logf))
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
	stop()
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

// asyncLineConn is lineConn's protocol for an asynchronous loop, with reads: "w <name>"
// is a write, answered "ok <name>" or "error: <why> <name>" once its batch comes back;
// "r <name>" is a read, answered "read <name> <acked>" with the count of this
// connection's writes acknowledged so far, or "readerr <name>" when its barrier failed.
// A read waits for the open batch and for the barrier, as a memcached get does. The
// read buffer is small, so that a pipeline fills it many times over.
type asyncLineConn struct {
	buf                    [48]byte
	end                    int
	open, batch            []string
	out                    []byte
	acked                  int
	barrierOK, wantBarrier bool
	barrierErr             error
	wantRelease            bool
	released               chan error // the goroutine's end, once released
	closed                 *atomic.Int32
}

func (c *asyncLineConn) Space() []byte { return c.buf[c.end:] }

func (c *asyncLineConn) Consume(n int, _ int64) bool {
	c.end += n
	if n > 0 {
		c.barrierOK = false
	}
	c.wantBarrier = false
	for {
		i := bytes.IndexByte(c.buf[:c.end], '\n')
		if i < 0 {
			if c.end == len(c.buf) {
				panic("a line longer than the buffer")
			}
			return true
		}
		line := string(c.buf[:i])
		switch {
		case line == "quit":
			return false
		case line == "g":
			if len(c.open) > 0 {
				return true
			}
			c.wantRelease = true
			return true // the goroutine takes it from here
		case strings.HasPrefix(line, "r "):
			if len(c.open) > 0 {
				return true // the loop proposes the batch, then resumes
			}
			if !c.barrierOK && c.barrierErr == nil {
				c.wantBarrier = true
				return true
			}
			if c.barrierErr != nil {
				c.out = fmt.Appendf(c.out, "readerr %s\n", line[2:])
				c.barrierErr = nil
			} else {
				c.out = fmt.Appendf(c.out, "read %s %d\n", line[2:], c.acked)
			}
		default:
			c.open = append(c.open, line[2:])
		}
		copy(c.buf[:], c.buf[i+1:c.end])
		c.end -= i + 1
	}
}

func (c *asyncLineConn) CutBatch() ([]byte, kvstore.Sink, bool) {
	if len(c.open) == 0 {
		return nil, nil, false
	}
	c.batch, c.open = c.open, nil
	c.barrierOK = false
	return []byte(strings.Join(c.batch, "\n")), nil, true
}

func (c *asyncLineConn) FinishBatch(err error, _ int64) {
	for _, name := range c.batch {
		if err != nil {
			c.out = fmt.Appendf(c.out, "error: %v %s\n", err, name)
		} else {
			c.acked++
			c.out = fmt.Appendf(c.out, "ok %s\n", name)
		}
	}
	c.batch = nil
}

func (c *asyncLineConn) WantsBarrier() bool { return c.wantBarrier }
func (c *asyncLineConn) WantsRelease() bool { return c.wantRelease }

// Released serves the rest from a goroutine: every line, the buffered ones first, is
// answered "goroutine <line>".
func (c *asyncLineConn) Released(fd int) {
	f := os.NewFile(uintptr(fd), "released")
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		c.released <- err
		return
	}
	go func() {
		defer nc.Close()
		r := bufio.NewReader(io.MultiReader(bytes.NewReader(bytes.Clone(c.buf[:c.end])), nc))
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				c.released <- nil
				return
			}
			fmt.Fprintf(nc, "goroutine %s", line)
		}
	}()
}
func (c *asyncLineConn) BarrierDone(err error) {
	c.wantBarrier = false
	c.barrierOK, c.barrierErr = err == nil, err
}
func (c *asyncLineConn) Output() []byte { return c.out }
func (c *asyncLineConn) Written(int)    { c.out = c.out[:0] }
func (c *asyncLineConn) Closed()        { c.closed.Add(1) }

// slowBackend answers every proposal and barrier from another goroutine after a short
// random delay, so that outcomes come back in any order and while the loop is busy. A
// batch with "fail" in it is refused; every third barrier fails.
type slowBackend struct {
	proposals, barriers, failedBarriers atomic.Int64
	timeout                             time.Duration // RequestTimeout
	hang                                time.Duration // how late a batch with "hang" in it is answered
}

func (b *slowBackend) later(f func()) {
	d := time.Duration(rand.IntN(300)) * time.Microsecond
	time.AfterFunc(d, f)
}

func (b *slowBackend) ProposeAsync(data []byte, sink kvstore.Sink, done func(error)) {
	b.proposals.Add(1)
	var err error
	if bytes.Contains(data, []byte("fail")) {
		err = errors.New("refused")
	}
	if bytes.Contains(data, []byte("hang")) {
		time.AfterFunc(b.hang, func() { done(nil) })
		return
	}
	b.later(func() { done(err) })
}

func (b *slowBackend) ReadBarrierAsync(done func(error)) {
	var err error
	if b.barriers.Add(1)%3 == 0 {
		b.failedBarriers.Add(1)
		err = errors.New("no leader")
	}
	b.later(func() { done(err) })
}

func (b *slowBackend) ClientError(err error) error   { return fmt.Errorf("mapped %w", err) }
func (b *slowBackend) RequestTimeout() time.Duration { return b.timeout }

// TestAsyncLoopKeepsEachConnectionsOrder: with outcomes coming back late and out of
// order, every connection still gets every reply, in its request order; a read sees the
// writes sent before it acknowledged (it waits for their batch); a failed barrier fails
// only its read; and a connection that quits behind writes gets their replies first.
func TestAsyncLoopKeepsEachConnectionsOrder(t *testing.T) {
	b := &slowBackend{}
	l, stop := runLoop(t)(NewAsyncLoop(b, t.Logf))
	var closed atomic.Int32

	const conns, lines = 12, 300
	var wg sync.WaitGroup
	errc := make(chan error, conns)
	for i := range conns {
		client, server := pair(t)
		defer client.Close()
		if err := l.Add(&asyncLineConn{closed: &closed}, server.(syscall.Conn)); err != nil {
			t.Fatal(err)
		}
		server.Close()
		// The whole pipeline goes out at once, from its own goroutine: the loop reads
		// it while batches are in flight.
		// A write with "fail" in its name fails, and so does every write proposed in
		// the same batch (the loop's batching decides which): a plain write may get
		// either reply. A read reports the acknowledged writes, which the client counts.
		var req strings.Builder
		var want []string // a reply's acceptable forms, "|"-separated
		for j := range lines {
			switch name := fmt.Sprintf("%d-%d", i, j); {
			case j%5 == 4:
				fmt.Fprintf(&req, "r %s\n", name)
				want = append(want, fmt.Sprintf("read %s %%d\n|readerr %s\n", name, name))
			case (i+j)%7 == 0:
				fmt.Fprintf(&req, "w fail%s\n", name)
				want = append(want, fmt.Sprintf("error: mapped refused fail%s\n", name))
			default:
				fmt.Fprintf(&req, "w %s\n", name)
				want = append(want, fmt.Sprintf("ok %s\n|error: mapped refused %s\n", name, name))
			}
		}
		req.WriteString("quit\n")
		wg.Add(2)
		go func() {
			defer wg.Done()
			io.WriteString(client, req.String())
		}()
		go func() {
			defer wg.Done()
			client.SetDeadline(time.Now().Add(20 * time.Second))
			r := bufio.NewReader(client)
			acked := 0
			for j, w := range want {
				got, err := r.ReadString('\n')
				if err != nil {
					errc <- fmt.Errorf("conn %d line %d: %v", i, j, err)
					return
				}
				forms := strings.Split(w, "|")
				forms[0] = strings.Replace(forms[0], "%d", strconv.Itoa(acked), 1)
				if !slices.Contains(forms, got) {
					errc <- fmt.Errorf("conn %d line %d: %q, want one of %q", i, j, got, forms)
					return
				}
				if strings.HasPrefix(got, "ok ") {
					acked++
				}
			}
			if _, err := r.ReadByte(); err != io.EOF {
				errc <- fmt.Errorf("conn %d: not closed after quit: %v", i, err)
			}
		}()
	}
	awaitClients(t, &wg, errc, &closed, conns)
	if b.failedBarriers.Load() == 0 || b.barriers.Load() == b.failedBarriers.Load() {
		t.Fatalf("%d of %d barriers failed: the test needs both outcomes", b.failedBarriers.Load(), b.barriers.Load())
	}
	t.Logf("%d proposals, %d barriers (%d failed)", b.proposals.Load(), b.barriers.Load(), b.failedBarriers.Load())
	stop()
}

// serveOne runs an asynchronous loop over b with lc as its only connection, and returns
// the client's side of the socket (closed at the end of the test), a reader of it, and
// expect, which fails the test unless the next line read is want.
func serveOne(t *testing.T, b AsyncBackend, lc AsyncConn) (client net.Conn, r *bufio.Reader, expect func(want string)) {
	t.Helper()
	l, stop := runLoop(t)(NewAsyncLoop(b, t.Logf))
	t.Cleanup(stop)
	client, server := pair(t)
	t.Cleanup(func() { client.Close() })
	if err := l.Add(lc, server.(syscall.Conn)); err != nil {
		t.Fatal(err)
	}
	server.Close()
	client.SetDeadline(time.Now().Add(10 * time.Second))
	r = bufio.NewReader(client)
	expect = func(want string) {
		t.Helper()
		if got, err := r.ReadString('\n'); err != nil || got != want {
			t.Fatalf("got %q %v, want %q", got, err, want)
		}
	}
	return client, r, expect
}

// TestAsyncLoopTimesOutRequests: a batch whose outcome does not come back within the
// request timeout is answered with the timeout error; the connection goes on, and the
// outcome that comes back later is dropped, not taken for a later batch's.
func TestAsyncLoopTimesOutRequests(t *testing.T) {
	b := &slowBackend{timeout: 20 * time.Millisecond, hang: 200 * time.Millisecond}
	var closed atomic.Int32
	client, _, expect := serveOne(t, b, &asyncLineConn{closed: &closed})
	start := time.Now()
	io.WriteString(client, "w hang1\n")
	expect("error: mapped context deadline exceeded hang1\n")
	// The deadline counts from the loop's clock of the round that read the request,
	// which can be read a little before start (CI saw 19.7 ms for 20): the bound below
	// only tells a timeout from an outcome that came back.
	if took := time.Since(start); took < b.timeout/2 || took >= b.hang {
		t.Fatalf("timed out after %v: want between the timeout %v and the outcome %v", took, b.timeout, b.hang)
	}
	// Batches proposed while the late outcome is on its way get their own.
	for i := 0; time.Since(start) < b.hang+50*time.Millisecond; i++ {
		fmt.Fprintf(client, "w x%d\n", i)
		expect(fmt.Sprintf("ok x%d\n", i))
		fmt.Fprintf(client, "w fail%d\n", i)
		expect(fmt.Sprintf("error: mapped refused fail%d\n", i))
	}
}

// TestAsyncLoopReleasesAConnection: a connection that asks for it leaves the loop once its
// batch is answered and its replies written, and its goroutine gets the socket with
// what the connection had buffered behind the request that asked.
func TestAsyncLoopReleasesAConnection(t *testing.T) {
	var closed atomic.Int32
	lc := &asyncLineConn{closed: &closed, released: make(chan error, 1)}
	client, r, _ := serveOne(t, &slowBackend{}, lc)
	io.WriteString(client, "w a\nr b\nw c\ng\nw d\n")
	for _, want := range []string{"ok a\n", "read b 1\n", "ok c\n", "goroutine g\n", "goroutine w d\n"} {
		if got, err := r.ReadString('\n'); err != nil || got != want {
			t.Fatalf("got %q %v, want %q", got, err, want)
		}
	}
	io.WriteString(client, "w e\n")
	if got, err := r.ReadString('\n'); err != nil || got != "goroutine w e\n" {
		t.Fatalf("after the release: %q %v", got, err)
	}
	client.Close()
	if err := <-lc.released; err != nil {
		t.Fatal(err)
	}
	if closed.Load() != 0 {
		t.Fatal("the loop closed a connection it released")
	}
}

// kickConn is an asyncLineConn whose notes, queued from another goroutine, go out when
// the loop is kicked.
type kickConn struct {
	asyncLineConn
	mu    sync.Mutex
	notes []byte
	kick  func(close bool)
}

func (c *kickConn) SetKick(kick func(close bool)) { c.kick = kick }

func (c *kickConn) note(s string) {
	c.mu.Lock()
	c.notes = append(c.notes, s...)
	c.mu.Unlock()
	c.kick(false)
}

func (c *kickConn) Output() []byte {
	if len(c.out) == 0 {
		c.mu.Lock()
		c.out, c.notes = append(c.out, c.notes...), c.notes[:0]
		c.mu.Unlock()
	}
	return c.out
}

// TestAsyncLoopServesAKickedConnection: a kick has the loop go on with what a connection
// buffered before Add, write what another goroutine queued though the socket reported
// nothing, and close the connection.
func TestAsyncLoopServesAKickedConnection(t *testing.T) {
	var closed atomic.Int32
	lc := &kickConn{asyncLineConn: asyncLineConn{closed: &closed}}
	lc.end = copy(lc.buf[:], "w before\n") // read before the loop took the socket
	client, r, expect := serveOne(t, &slowBackend{}, lc)
	if lc.kick == nil {
		t.Fatal("Add did not hand the connection its kick")
	}
	lc.kick(false)
	expect("ok before\n")
	io.WriteString(client, "w a\n")
	expect("ok a\n")
	lc.note("note 1\n") // nothing arrives on the socket for it
	expect("note 1\n")
	lc.kick(true)
	if got, err := r.ReadString('\n'); err != io.EOF {
		t.Fatalf("after kick(true): %q %v, want the connection closed", got, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for closed.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the loop did not close the kicked connection")
		}
		time.Sleep(time.Millisecond)
	}
	lc.kick(false) // a kick after the close does nothing
}
