package server

import (
	"context"
	"strings"
	"testing"
	"time"
)

// CONFIG SET save takes and refuses what redis-server 7.0 does, and CONFIG GET save
// then shows what it shows.
func TestSaveParameterAsRedis(t *testing.T) {
	real := startRedisServer(t)
	s := startServer(t, Config{DataDir: t.TempDir()})
	defer s.Close()
	nk, rs := dialNew(t, s.RedisAddr()), dialNew(t, real)
	do := func(c *rconn, args ...string) string { t.Helper(); return doRendered(t, c, args...) }
	for _, v := range []string{
		"", "900 1", "900", "900 x", "-1 5", "0 1", "1 0", "1 -1", "1 1.5", "+5 1", "05 1", "-0 1", "1 -0",
		"900 1 60 100", "3600 1 300 100 60 10000", " 900  1 ", "900  1", "1 ", " 1", "9999999999999999999 1",
		"5 99999999999999999999", "5 4294967296", "5 2147483648", "1 2 3 4 5 6 7 8", "1 2 1 2", "a", "+ 1", "1 -",
		"1\t2", "\t1 2", "0x10 1", "1e3 1", "60 10000", "+-5 1", "-+5 1", "1 +-0", "++1 1", "5 -", "1 -1-",
	} {
		do(rs, "CONFIG", "SET", "save", "7 7")
		do(nk, "CONFIG", "SET", "save", "7 7")
		got, want := do(nk, "CONFIG", "SET", "save", v), do(rs, "CONFIG", "SET", "save", v)
		if got != want {
			t.Errorf("CONFIG SET save %q: %s, Redis %s", v, got, want)
		}
		if got, want := do(nk, "CONFIG", "GET", "save"), do(rs, "CONFIG", "GET", "save"); got != want {
			t.Errorf("after CONFIG SET save %q: CONFIG GET save %s, Redis %s", v, got, want)
		}
	}
}

// A save point snapshots a single node by itself once it is due, and "" turns save
// points off; a node without a data directory takes none but "".
func TestSavePointsSnapshot(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, Config{DataDir: t.TempDir()})
	defer s.Close()
	c := client(t, s)
	saves := func() string {
		info := c.Info(ctx, "persistence").Val()
		i := strings.Index(info, "rdb_saves:")
		return strings.TrimSpace(info[i : i+strings.Index(info[i:], "\r\n")])
	}
	if got := saves(); got != "rdb_saves:0" {
		t.Fatalf("a fresh node: %s", got)
	}
	if err := c.ConfigSet(ctx, "save", "1 3").Err(); err != nil {
		t.Fatal(err)
	}
	c.Set(ctx, "a", "1", 0)
	c.Set(ctx, "b", "2", 0)
	// two changes are fewer than the point's three: nothing is due however long it waits
	// (the point checks once a second; the test waits through two checks)
	deadline := time.Now().Add(2500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if got := saves(); got != "rdb_saves:0" {
			t.Fatalf("a snapshot before the point's changes: %s", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.Set(ctx, "c", "3", 0)
	deadline = time.Now().Add(10 * time.Second)
	for saves() != "rdb_saves:1" {
		if time.Now().After(deadline) {
			t.Fatalf("the save point never snapshotted: %s", c.Info(ctx, "persistence").Val())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ls := c.LastSave(ctx).Val(); ls < time.Now().Unix()-10 {
		t.Fatalf("LASTSAVE %d after the save point's snapshot", ls)
	}

	mem := startServer(t, Config{MemoryOnly: true})
	defer mem.Close()
	mc := client(t, mem)
	if err := mc.ConfigSet(ctx, "save", "1 1").Err(); err == nil ||
		err.Error() != "ERR CONFIG SET failed (possibly related to argument 'save') - this node keeps no snapshots: it runs without a data directory" {
		t.Fatalf("CONFIG SET save on a memory-only node: %v", err)
	}
	if err := mc.ConfigSet(ctx, "save", "").Err(); err != nil {
		t.Fatalf("CONFIG SET save \"\" on a memory-only node: %v", err)
	}
}

func TestSaveDue(t *testing.T) {
	points := []savePoint{{seconds: 60, changes: 100}, {seconds: 300, changes: 1}}
	for _, tc := range []struct {
		changes   uint64
		now, last int64
		lastOK    bool
		lastTry   int64
		want      bool
		why       string
	}{
		{100, 1061, 1000, true, 0, true, "100 changes, 61 s"},
		{100, 1060, 1000, true, 0, false, "60 s is not more than 60"},
		{99, 1200, 1000, true, 0, false, "99 changes and 200 s meet neither point"},
		{1, 1301, 1000, true, 0, true, "one change after 301 s"},
		{0, 5000, 1000, true, 0, false, "no changes"},
		{100, 1061, 1000, false, 1058, false, "a failed snapshot 3 s ago"},
		{100, 1061, 1000, false, 1055, true, "a failed snapshot 6 s ago"},
	} {
		if got := saveDue(points, tc.changes, tc.now, tc.last, tc.lastOK, tc.lastTry); got != tc.want {
			t.Errorf("%s: due %v", tc.why, got)
		}
	}
	// a count beyond a C int wraps to -1, which no count of changes is below
	if !saveDue([]savePoint{{seconds: 1, changes: -1}}, 0, 10, 0, true, 0) {
		t.Error("changes -1 was not reached by 0 changes")
	}
}
