package mcproto_test

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConcurrentConnectionsGetTheirOwnReplies runs many connections at once, so that
// the event loop proposes their writes together: each connection's batch is its own
// entry with its own reply sink, and every reply must reach the connection that asked.
// The shared counter's replies show it: every value from 1 to the total exactly once.
func TestConcurrentConnectionsGetTheirOwnReplies(t *testing.T) {
	const conns, rounds = 24, 150
	for _, mode := range frontendModes {
		t.Run(mode.name, func(t *testing.T) {
			node := startNodeMode(t, 0, mode)
			seed := dial(t, node.MemcacheAddr())
			seed.send("set shared 0 0 1\r\n0\r\n")
			seed.expect("STORED\r\n")

			var mu sync.Mutex
			seen := map[uint64]int{}
			var wg sync.WaitGroup
			errs := make(chan error, conns)
			for i := range conns {
				c := dial(t, node.MemcacheAddr())
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- converseRounds(c, i, rounds, func(v uint64) {
						mu.Lock()
						seen[v]++
						mu.Unlock()
					})
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if len(seen) != conns*rounds {
				t.Fatalf("the shared counter answered %d distinct values, want %d", len(seen), conns*rounds)
			}
			for v := uint64(1); v <= conns*rounds; v++ {
				if seen[v] != 1 {
					t.Fatalf("the shared counter answered %d %d times", v, seen[v])
				}
			}
		})
	}
}

// converseRounds is one client of TestConcurrentConnectionsGetTheirOwnReplies. Each
// round reads its key (the previous round's value), then sets it (a blind write),
// increments a counter of its own and the shared one: the writes end the pipeline, so
// they are still open when the loop proposes the round.
func converseRounds(c *testConn, id, rounds int, shared func(uint64)) error {
	key, ctr := "key"+strconv.Itoa(id), "ctr"+strconv.Itoa(id)
	c.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c.c, "set "+ctr+" 0 0 1\r\n0\r\n"); err != nil {
		return err
	}
	if l, err := c.r.ReadString('\n'); err != nil || l != "STORED\r\n" {
		return fmt.Errorf("conn %d: %q %v", id, l, err)
	}
	prev := ""
	for r := 1; r <= rounds; r++ {
		val := fmt.Sprintf("%d-%d", id, r)
		req := fmt.Sprintf("get %s\r\nset %s 0 0 %d\r\n%s\r\nincr %s 1\r\nincr shared 1\r\n", key, key, len(val), val, ctr)
		if _, err := io.WriteString(c.c, req); err != nil {
			return err
		}
		var want []string
		if prev != "" {
			want = append(want, fmt.Sprintf("VALUE %s 0 %d", key, len(prev)), prev)
		}
		want = append(want, "END", "STORED", strconv.Itoa(r), "shared")
		for _, w := range want {
			l, err := c.r.ReadString('\n')
			if err != nil {
				return fmt.Errorf("conn %d round %d: %v", id, r, err)
			}
			l = strings.TrimSuffix(l, "\r\n")
			if w == "shared" {
				v, err := strconv.ParseUint(l, 10, 64)
				if err != nil {
					return fmt.Errorf("conn %d round %d: shared counter replied %q", id, r, l)
				}
				shared(v)
				continue
			}
			if l != w {
				return fmt.Errorf("conn %d round %d: reply %q, want %q", id, r, l, w)
			}
		}
		prev = val
	}
	return nil
}

// TestSlowReaderStallsOnlyItself: a client that pipelines far more replies than the
// socket buffers hold and does not read them must not hold up the other clients, and
// must get every byte once it reads.
func TestSlowReaderStallsOnlyItself(t *testing.T) {
	const valueLen, gets = 256 << 10, 200 // 50 MiB of replies
	for _, mode := range frontendModes {
		t.Run(mode.name, func(t *testing.T) {
			node := startNodeMode(t, 0, mode)
			slow := dial(t, node.MemcacheAddr())
			value := strings.Repeat("v", valueLen)
			slow.send(fmt.Sprintf("set big 0 0 %d\r\n%s\r\n", valueLen, value))
			slow.expect("STORED\r\n")
			slow.send(strings.Repeat("get big\r\n", gets))

			other := dial(t, node.MemcacheAddr())
			for i := range 50 {
				other.send(fmt.Sprintf("set o%d 0 0 1\r\nx\r\nget o%d\r\n", i, i))
				other.expect(fmt.Sprintf("STORED\r\nVALUE o%d 0 1\r\nx\r\nEND\r\n", i))
			}

			reply := fmt.Sprintf("VALUE big 0 %d\r\n%s\r\nEND\r\n", valueLen, value)
			slow.c.SetReadDeadline(time.Now().Add(30 * time.Second))
			buf := make([]byte, len(reply))
			for i := range gets {
				if _, err := io.ReadFull(slow.r, buf); err != nil {
					t.Fatalf("reply %d: %v", i, err)
				}
				if string(buf) != reply {
					t.Fatalf("reply %d differs", i)
				}
			}
			// and the connection still serves
			slow.send("get o1\r\n")
			slow.expect("VALUE o1 0 1\r\nx\r\nEND\r\n")

			// A client that hangs up with megabytes of replies unsent: the server's
			// writes fail (EPIPE or a reset, never a signal that stops it), it drops the
			// connection, and serves on.
			gone := dial(t, node.MemcacheAddr())
			gone.send(strings.Repeat("get big\r\n", gets))
			gone.expect("VALUE big 0 ")
			gone.c.Close()
			waitConnections(t, other, "2") // other and slow
			other.send("get o2\r\n")
			other.expect("VALUE o2 0 1\r\nx\r\nEND\r\n")
		})
	}
}

// waitConnections polls stats through c until curr_connections is want.
func waitConnections(t *testing.T, c *testConn, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		c.send("stats\r\n")
		conns := ""
		for l := c.line(); l != "END\r\n"; l = c.line() {
			if f := strings.Fields(l); len(f) == 3 && f[1] == "curr_connections" {
				conns = f[2]
			}
		}
		if conns == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("curr_connections is %s, want %s", conns, want)
		}
	}
}

// TestConnectionsCloseWithTheServer: closing the node closes its clients' connections,
// and a client that hangs up stops counting as a connection.
func TestConnectionsCloseWithTheServer(t *testing.T) {
	for _, mode := range frontendModes {
		t.Run(mode.name, func(t *testing.T) {
			node := startNodeMode(t, 0, mode)
			a, b := dial(t, node.MemcacheAddr()), dial(t, node.MemcacheAddr())
			a.send("set k 0 0 1\r\nx\r\n")
			a.expect("STORED\r\n")
			b.send("get k\r\n")
			b.expect("VALUE k 0 1\r\nx\r\nEND\r\n")
			a.c.Close()
			waitConnections(t, b, "1")
			if err := node.Close(); err != nil {
				t.Fatal(err)
			}
			b.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if n, err := b.r.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
				t.Fatalf("read after the node closed: %d bytes, %v; want EOF", n, err)
			}
		})
	}
}
