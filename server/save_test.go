package server

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// SAVE writes a snapshot of a single node and drops the WAL it covers; a restart loads it
// and replays the writes after it. BGSAVE, LASTSAVE and INFO persistence say what
// happened, in Redis's words.
func TestSaveSnapshotsASingleNode(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := startServer(t, Config{DataDir: dir})
	c := client(t, s)
	before := time.Now().Unix()
	for i := 0; i < 300; i++ {
		c.Set(ctx, fmt.Sprintf("k%d", i), i, 0)
	}
	c.HSet(ctx, "h", "f", "v")
	c.Expire(ctx, "k0", time.Hour)
	if got, err := c.Do(ctx, "SAVE").Text(); err != nil || got != "OK" {
		t.Fatalf("SAVE: %q %v", got, err)
	}
	info := c.Info(ctx, "persistence").Val()
	for _, want := range []string{"rdb_changes_since_last_save:0\r\n", "rdb_saves:1\r\n", "rdb_bgsave_in_progress:0\r\n", "rdb_last_bgsave_status:ok\r\n"} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO persistence lacks %q:\n%s", want, info)
		}
	}
	if ls, err := c.Do(ctx, "LASTSAVE").Int64(); err != nil || ls < before {
		t.Fatalf("LASTSAVE %d %v, want at least %d", ls, err, before)
	}
	if snaps, _ := filepath.Glob(filepath.Join(dir, "snap-*.snap")); len(snaps) != 1 {
		t.Fatalf("snapshot files after SAVE: %v", snaps)
	}
	c.Set(ctx, "after", "x", 0)
	if got, err := c.Do(ctx, "BGSAVE").Text(); err != nil || got != "Background saving started" {
		t.Fatalf("BGSAVE: %q %v", got, err)
	}
	if err := c.Do(ctx, "BGSAVE", "NOW").Err(); err == nil || err.Error() != "ERR syntax error" {
		t.Fatalf("BGSAVE NOW: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(c.Info(ctx, "persistence").Val(), "rdb_saves:2\r\n") {
		if time.Now().After(deadline) {
			t.Fatalf("BGSAVE never finished:\n%s", c.Info(ctx, "persistence").Val())
		}
		time.Sleep(time.Millisecond)
	}
	c.Set(ctx, "later", "y", 0) // in the WAL only
	c.Close()
	s.Close()

	s = startServer(t, Config{DataDir: dir})
	defer s.Close()
	c = client(t, s)
	for i := 0; i < 300; i++ {
		if v, err := c.Get(ctx, fmt.Sprintf("k%d", i)).Int(); err != nil || v != i {
			t.Fatalf("k%d after restart: %d %v", i, v, err)
		}
	}
	if v := c.HGet(ctx, "h", "f").Val(); v != "v" {
		t.Fatalf("hash after restart: %q", v)
	}
	if d := c.TTL(ctx, "k0").Val(); d <= 0 {
		t.Fatalf("TTL after restart: %v", d)
	}
	if a, l := c.Get(ctx, "after").Val(), c.Get(ctx, "later").Val(); a != "x" || l != "y" {
		t.Fatalf("writes after the snapshots: %q %q", a, l)
	}
	// Redis counts every save, one with nothing new to write too (rdb_saves since the
	// start); here the newest snapshot is then the state, and nothing is written.
	for i, want := range []string{"rdb_saves:1\r\n", "rdb_saves:2\r\n"} {
		if err := c.Do(ctx, "SAVE").Err(); err != nil {
			t.Fatalf("SAVE %d after the restart: %v", i+1, err)
		}
		if info := c.Info(ctx, "persistence").Val(); !strings.Contains(info, want) || !strings.Contains(info, "rdb_changes_since_last_save:0\r\n") {
			t.Fatalf("after SAVE %d since the restart, INFO persistence lacks %q:\n%s", i+1, want, info)
		}
	}
	if snaps, _ := filepath.Glob(filepath.Join(dir, "snap-*.snap")); len(snaps) != 1 {
		t.Fatalf("snapshot files after a SAVE with nothing new: %v", snaps)
	}
}

// Without a data directory there is nothing to save to; a cluster member's SAVE
// snapshots and compacts its Raft log.
func TestSaveMemoryOnlyAndCluster(t *testing.T) {
	ctx := context.Background()
	before := time.Now().Unix()
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	if err := client(t, s).Do(ctx, "SAVE").Err(); err == nil || !strings.Contains(err.Error(), "without a data directory") {
		t.Fatalf("SAVE on a memory-only node: %v", err)
	}
	// as Redis before its first save: when the server started
	if ls, err := client(t, s).Do(ctx, "LASTSAVE").Int64(); err != nil || ls < before || ls > time.Now().Unix() {
		t.Fatalf("LASTSAVE on a memory-only node: %d %v, want the start, %d", ls, err, before)
	}
	if info := client(t, s).Info(ctx, "persistence").Val(); !strings.Contains(info, fmt.Sprintf("rdb_last_save_time:%d", s.LastSave())) || s.LastSave() < before {
		t.Fatalf("INFO persistence on a memory-only node:\n%s", info)
	}
	servers := startCluster(t, 3, func(c *Config) { c.DataDir = t.TempDir() })
	_, lead := leaderOf(t, servers, 0)
	c := client(t, lead)
	c.Set(ctx, "k", "v", 0)
	if got, err := c.Do(ctx, "SAVE").Text(); err != nil || got != "OK" {
		t.Fatalf("SAVE on the leader: %q %v", got, err)
	}
	// the member's snapshot fields are a single node's: the one written, its index, what
	// was applied since
	info := c.Info(ctx, "persistence").Val()
	for _, want := range []string{"rdb_saves:1\r\n", "rdb_last_bgsave_status:ok\r\n", "rdb_last_bgsave_time_sec:0\r\n",
		"rdb_current_bgsave_time_sec:-1\r\n", "rdb_bgsave_in_progress:0\r\n"} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO persistence after SAVE lacks %q:\n%s", want, info)
		}
	}
	if strings.Contains(info, "snapshot_index:0\r\n") || !strings.Contains(info, "rdb_changes_since_last_save:") {
		t.Fatalf("INFO persistence after SAVE: no snapshot index:\n%s", info)
	}
}

// SHUTDOWN SAVE snapshots before it asks the node to stop; on a node that keeps no
// snapshots it refuses, unless FORCE, as Redis refuses when its save fails.
func TestShutdownSave(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, Config{DataDir: dir})
	defer s.Close()
	r := rawConn(t, s)
	r.expect(t, "+OK", "SET", "k", "v")
	r.send("SHUTDOWN", "SAVE")
	select {
	case <-s.ShutdownRequested():
	case <-time.After(10 * time.Second):
		t.Fatal("SHUTDOWN SAVE did not ask the node to stop")
	}
	if snaps, _ := filepath.Glob(filepath.Join(dir, "snap-*.snap")); len(snaps) != 1 {
		t.Fatalf("snapshot files after SHUTDOWN SAVE: %v", snaps)
	}

	m := startServer(t, Config{MemoryOnly: true})
	defer m.Close()
	r = rawConn(t, m)
	r.expect(t, "-ERR Errors trying to SHUTDOWN. Check logs.", "SHUTDOWN", "SAVE")
	r.send("SHUTDOWN", "SAVE", "FORCE")
	select {
	case <-m.ShutdownRequested():
	case <-time.After(10 * time.Second):
		t.Fatal("SHUTDOWN SAVE FORCE did not ask the node to stop")
	}
}
