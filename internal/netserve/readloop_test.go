package netserve

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// pair returns both ends of a loopback TCP connection.
func pair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// echo serves nc with ReadLoop through a buffer of size bytes, writing back what it
// reads; it returns a channel closed when ReadLoop returns.
func echo(nc net.Conn, size int, stopAt int) <-chan struct{} {
	done := make(chan struct{})
	buf := make([]byte, size)
	total := 0
	go func() {
		defer close(done)
		ReadLoop(nc, func() []byte { return buf }, func(n int) bool {
			total += n
			if _, err := nc.Write(buf[:n]); err != nil {
				return false
			}
			return stopAt == 0 || total < stopAt
		})
	}()
	return done
}

// ended fails the test unless ReadLoop has returned (done closed) within 10 s.
func ended(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ReadLoop did not return")
	}
}

// Request and response, one at a time: every request arrives while the loop waits for
// the poller after a read that drained the socket. A lost wake-up hangs the exchange,
// and the client's deadline fails the test.
func TestReadLoopWaitsForEachRequest(t *testing.T) {
	client, server := pair(t)
	done := echo(server, 64, 0)
	client.SetDeadline(time.Now().Add(20 * time.Second))
	got := make([]byte, 16)
	for i := range 2000 {
		msg := []byte{byte(i), byte(i >> 8), 'x', 'y'}
		if _, err := client.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(client, got[:len(msg)]); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if !bytes.Equal(got[:len(msg)], msg) {
			t.Fatalf("request %d: echoed %q, want %q", i, got[:len(msg)], msg)
		}
	}
	client.Close()
	ended(t, done)
}

// A read that fills the buffer is followed by another at once: a write much larger
// than the buffer comes back whole, with nothing more sent to wake the loop.
func TestReadLoopReadsOnAfterAFullBuffer(t *testing.T) {
	client, server := pair(t)
	done := echo(server, 7, 0)
	client.SetDeadline(time.Now().Add(20 * time.Second))
	msg := bytes.Repeat([]byte("0123456789abcdef"), 1<<12)
	go client.Write(msg)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(client, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("echo differs from what was sent")
	}
	client.Close()
	ended(t, done)
}

func TestReadLoopStopsWhenGotSaysSo(t *testing.T) {
	client, server := pair(t)
	done := echo(server, 64, 3)
	client.Write([]byte("abc"))
	ended(t, done) // without the client closing
}

func TestReadLoopEndsWhenTheConnIsClosed(t *testing.T) {
	_, server := pair(t)
	done := echo(server, 64, 0)
	server.Close() // the loop is waiting for the poller: the wait fails
	ended(t, done)
}

// A net.Conn that is no socket is read with Read.
func TestReadLoopOnAPipe(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	done := echo(server, 5, 0)
	msg := []byte("hello, pipe")
	go client.Write(msg)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(client, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("got %q, %v", got, err)
	}
	client.Close()
	ended(t, done)
}
