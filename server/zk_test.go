package server

import (
	"io"
	"log"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

var quietZK = zk.WithLogger(log.New(io.Discard, "", 0))

// connectZK opens a go-zookeeper session on addr and waits until it has one.
func connectZK(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, 5*time.Second, quietZK)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	for ev := range events {
		if ev.State == zk.StateHasSession {
			return c
		}
	}
	t.Fatal("no session")
	return nil
}

// until polls cond for up to 10 s.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}

// The server counts the ZooKeeper sessions connected to it: with any, a cluster member
// asks to hear of every commit at once (RaftConfig.WantsCommits), for their watches.
func TestZKSessionsAreCountedForWantsCommits(t *testing.T) {
	s := startServer(t, Config{ZKAddr: "127.0.0.1:0", MemoryOnly: true})
	t.Cleanup(func() { s.Close() })
	until(t, "a session counted before any connected", func() bool { return s.zkSessions.Load() == 0 })
	c := connectZK(t, s.ZKAddr())
	until(t, "the session was not counted", func() bool { return s.zkSessions.Load() == 1 })
	c.Close()
	until(t, "the closed session is still counted", func() bool { return s.zkSessions.Load() == 0 })
}

// A cluster member serves its ZooKeeper sessions from its event loop: writes and reads in
// order, a watch notification that the applier queues while the loop waits, and a
// request that waits on its own (sync) moving its session to a goroutine for good.
func TestZKSessionsOnTheEventLoop(t *testing.T) {
	s := startServer(t, memberConfig(t, Config{ZKAddr: "127.0.0.1:0", MemoryOnly: true}))
	t.Cleanup(func() { s.Close() })
	awaitLead(t, s)
	a, b := connectZK(t, s.ZKAddr()), connectZK(t, s.ZKAddr())
	until(t, "the loop does not serve both sessions", func() bool { return s.zk.LoopSessions() == 2 })

	acl := zk.WorldACL(zk.PermAll)
	if _, err := a.Create("/n", []byte("1"), 0, acl); err != nil {
		t.Fatal(err)
	}
	d, st, ch, err := a.GetW("/n")
	if err != nil || string(d) != "1" || st.Version != 0 {
		t.Fatalf("get: %q %+v %v", d, st, err)
	}
	if _, err := b.Set("/n", []byte("2"), 0); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-ch:
		if ev.Type != zk.EventNodeDataChanged || ev.Path != "/n" {
			t.Fatalf("watch: %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch notification never came")
	}
	if _, err := b.Set("/n", []byte("3"), 0); err != zk.ErrBadVersion {
		t.Fatalf("set with a stale version: %v, want ErrBadVersion", err)
	}

	if _, err := a.Sync("/n"); err != nil {
		t.Fatal(err)
	}
	until(t, "sync did not move the session to a goroutine", func() bool { return s.zk.LoopSessions() == 1 })
	if _, err := a.Set("/n", []byte("4"), 1); err != nil {
		t.Fatal(err)
	}
	if d, _, err := b.Get("/n"); err != nil || string(d) != "4" {
		t.Fatalf("the other session read %q %v", d, err)
	}
	b.Close() // closeSession: through a goroutine too
	until(t, "the closed session is still served", func() bool { return s.zk.LoopSessions() == 0 && s.zk.NumConns() == 1 })
}
