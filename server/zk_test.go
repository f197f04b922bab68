package server

import (
	"io"
	"log"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// The server counts the ZooKeeper sessions connected to it: with any, a cluster member
// asks to hear of every commit at once (RaftConfig.WantsCommits), for their watches.
func TestZKSessionsAreCountedForWantsCommits(t *testing.T) {
	s := startServer(t, Config{ZKAddr: "127.0.0.1:0", MemoryOnly: true})
	t.Cleanup(func() { s.Close() })
	until := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for s.zkSessions.Load() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%d sessions counted, want %d", s.zkSessions.Load(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	until(0)
	c, events, err := zk.Connect([]string{s.ZKAddr()}, 5*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	until(1)
	c.Close()
	until(0)
}
