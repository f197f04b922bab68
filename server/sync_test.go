package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestReplconfAsRedis sends REPLCONF's options and SYNC's and PSYNC's refusals to nanokv
// and to redis-server 7.0, and requires the same replies (REPLCONF ack and getack
// answer nothing: the PING behind them answers).
func TestReplconfAsRedis(t *testing.T) {
	real := startRedisServer(t)
	s := startServer(t, Config{})
	defer s.Close()
	convs := [][][]string{
		{{"REPLCONF"}},
		{{"REPLCONF", "a"}},
		{{"REPLCONF", "foo", "bar"}},
		{{"REPLCONF", "rdb-only", "2"}},
		{{"REPLCONF", "rdb-only", "x"}},
		{{"REPLCONF", "RDB-ONLY", "1", "capa", "eof", "capa", "psync2", "capa", "other"}},
		{{"REPLCONF", "listening-port", "x"}},
		{{"REPLCONF", "listening-port", "99999999", "ip-address", "10.0.0.1"}},
		{{"REPLCONF", "ip-address", strings.Repeat("1", 255)}},
		{{"REPLCONF", "ip-address", strings.Repeat("1", 256)}},
		{{"REPLCONF", "capa", "eof", "bogus", "x"}},
		{{"REPLCONF", "ack", "10"}, {"REPLCONF", "getack", "x"}, {"PING"}},
		{{"REPLCONF", "ack"}},
		{{"REPLCONF", "rdb-filter-only", "foo"}},
		{{"REPLCONF", "rdb-filter-only", `a"`}},
		{{"REPLCONF", "rdb-filter-only", "functions"}, {"SYNC"}},
		{{"REPLCONF", "rdb-filter-only", ""}, {"PSYNC", "?", "-1"}},
		{{"SYNC", "x"}},
		{{"PSYNC", "a", "b"}},
		{{"PSYNC", "?"}},
		{{"MULTI"}, {"SYNC"}, {"REPLCONF", "rdb-only", "1"}, {"EXEC"}},
	}
	for _, conv := range convs {
		var got [2][]rval
		for i, addr := range []string{s.RedisAddr(), real} {
			c, err := dialRESP(addr)
			if err != nil {
				t.Fatal(err)
			}
			for _, cmd := range conv {
				if err := c.send(cmd...); err != nil {
					t.Fatal(err)
				}
				if len(cmd) == 3 && (strings.EqualFold(cmd[1], "ack") || strings.EqualFold(cmd[1], "getack")) {
					continue
				}
				v, err := c.recv()
				if err != nil {
					t.Fatalf("%q to %s: %v", cmd, addr, err)
				}
				got[i] = append(got[i], v)
			}
			c.close()
		}
		if !reflect.DeepEqual(got[0], got[1]) {
			t.Errorf("%q: nanokv answered %+v, redis-server %+v", conv, got[0], got[1])
		}
	}
}

// TestSyncRefusesAReplica: a SYNC without rdb-only would start a replication stream,
// which nanokv does not send; one behind a reply not yet written is refused, as Redis
// refuses it.
func TestSyncRefusesAReplica(t *testing.T) {
	s := startServer(t, Config{})
	defer s.Close()
	c, err := dialRESP(s.RedisAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if v, err := c.do("SYNC"); err != nil || v.kind != '-' || !strings.Contains(v.str, "REPLCONF rdb-only 1") {
		t.Fatalf("SYNC: %+v %v", v, err)
	}
	c.nc.Write([]byte("REPLCONF rdb-only 1\r\nSYNC\r\nPING\r\n"))
	for _, want := range []string{"OK", "ERR SYNC and PSYNC are invalid with pending output", "PONG"} {
		if v, err := c.recv(); err != nil || v.str != want {
			t.Fatalf("got %+v %v, want %q", v, err, want)
		}
	}
}

// TestSyncGivesRedisAnRDB takes a backup as redis-cli --rdb takes one (SYNC after
// REPLCONF capa eof and rdb-only 1, the file with an end mark; and without capa eof,
// with a length), from a single node and from a cluster's leader and follower, and has
// redis-server load it: the same keys, values, deadlines and functions as nanokv
// serves. Where redis-cli is installed, it takes the backup too.
func TestSyncGivesRedisAnRDB(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not found on PATH: the test loads the RDB into it (apt-get install redis-server)")
	}
	ctx := context.Background()
	single := startServer(t, Config{})
	defer single.Close()
	members := startCluster(t, 3)
	leadID, lead := leaderOf(t, members, 0)
	follower := followerOf(members, leadID)
	for _, n := range []struct {
		name    string
		writeTo *Server // where the data is written
		syncAt  *Server // where the snapshot is taken
	}{{"single node", single, single}, {"leader", lead, lead}, {"follower", lead, follower}} {
		t.Run(n.name, func(t *testing.T) {
			c := client(t, n.writeTo)
			c.FlushAll(ctx)
			c.FunctionFlush(ctx)
			fill(t, c)
			if n.syncAt != n.writeTo {
				awaitSameState(t, members) // and the follower's data is the leader's
			}
			want := dataOf(t, c)
			if len(want) != 9+200+1 || !strings.HasPrefix(want["0:ttl"], "string v ") || strings.HasSuffix(want["0:ttl"], " -1") {
				t.Fatalf("nanokv holds %d keys and functions, ttl %q: the test reads less than it wrote", len(want), want["0:ttl"])
			}
			dir := t.TempDir()
			for _, eof := range []bool{true, false} {
				file := filepath.Join(dir, "dump.rdb")
				os.WriteFile(file, syncRDB(t, n.syncAt.RedisAddr(), eof, nil), 0o644)
				if got := dataOf(t, loadRDB(t, dir)); !reflect.DeepEqual(got, want) {
					t.Fatalf("capa eof %v: redis-server loaded\n%v\nnanokv holds\n%v", eof, got, want)
				}
			}
			if cli, err := exec.LookPath("redis-cli"); err == nil {
				host, port, _ := net.SplitHostPort(n.syncAt.RedisAddr())
				file := filepath.Join(dir, "dump.rdb")
				if out, err := exec.Command(cli, "-h", host, "-p", port, "--rdb", file).CombinedOutput(); err != nil {
					t.Fatalf("redis-cli --rdb: %v\n%s", err, out)
				}
				if got := dataOf(t, loadRDB(t, dir)); !reflect.DeepEqual(got, want) {
					t.Fatalf("redis-cli --rdb: redis-server loaded\n%v\nnanokv holds\n%v", got, want)
				}
			}
		})
	}
}

// fill writes a key of every type, a key with a TTL, keys in another database and a
// function library.
func fill(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	for _, cmd := range [][]any{
		{"SET", "s", "plain"}, {"SET", "n", "12345"}, {"SET", "big", strings.Repeat("x", 3000)},
		{"RPUSH", "l", "a", "b", "c"}, {"SADD", "set", "1", "2", "x"},
		{"ZADD", "z", "1.5", "m", "-2", "n"}, {"HSET", "h", "f", "v", "g", "w"},
		{"XADD", "st", "1-1", "f", "v"}, {"XGROUP", "CREATE", "st", "g", "0"},
		{"SET", "ttl", "v", "EX", "1000"},
		{"FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('one', function() return 1 end)"},
	} {
		if err := c.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	pipe := c.Pipeline()
	pipe.Select(ctx, 3)
	for i := range 200 {
		pipe.Set(ctx, fmt.Sprint("k", i), i, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// dataOf reads a server's keys of databases 0 and 3 as comparable text: type, value and
// absolute deadline of each; and its function libraries' code.
func dataOf(t *testing.T, c *redis.Client) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for _, db := range []int{0, 3} {
		conn := c.Conn()
		defer conn.Close()
		conn.Select(ctx, db)
		keys, err := conn.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			typ := conn.Type(ctx, k).Val()
			var v any
			switch typ {
			case "string":
				v = conn.Get(ctx, k).Val()
			case "list":
				v = conn.LRange(ctx, k, 0, -1).Val()
			case "set":
				m := conn.SMembers(ctx, k).Val()
				slices.Sort(m)
				v = m
			case "zset":
				v = conn.ZRangeWithScores(ctx, k, 0, -1).Val()
			case "hash":
				v = conn.HGetAll(ctx, k).Val()
			case "stream":
				v = fmt.Sprint(conn.XRange(ctx, k, "-", "+").Val(), conn.XInfoGroups(ctx, k).Val())
			}
			at := conn.Do(ctx, "PEXPIRETIME", k).Val()
			out[strconv.Itoa(db)+":"+k] = fmt.Sprintf("%s %v %v", typ, v, at)
		}
	}
	libs, err := c.FunctionList(ctx, redis.FunctionListQuery{WithCode: true}).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range libs {
		out["function "+l.Name] = l.Code
	}
	return out
}

// syncRDB takes an RDB file from addr with SYNC, as redis-cli --rdb does, and requires
// the connection to close after it. beforeRead, if not nil, runs once SYNC is sent and
// before anything of its answer is read, with the client's address.
func syncRDB(t *testing.T, addr string, capaEOF bool, beforeRead func(client net.Addr)) []byte {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(nc)
	cmds := []string{"REPLCONF rdb-only 1", "SYNC"}
	if capaEOF {
		cmds = append([]string{"REPLCONF capa eof"}, cmds...)
	}
	var line string
	for _, cmd := range cmds {
		fmt.Fprintf(nc, "%s\r\n", cmd)
		if cmd == "SYNC" && beforeRead != nil {
			beforeRead(nc.LocalAddr())
		}
		if line, err = r.ReadString('\n'); err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		if cmd != "SYNC" && line != "+OK\r\n" {
			t.Fatalf("%s: %q", cmd, line)
		}
	}
	line = strings.TrimSuffix(line, "\r\n")
	var file []byte
	switch {
	case capaEOF && strings.HasPrefix(line, "$EOF:") && len(line) == 5+40:
		rest, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		mark := line[5:]
		if !strings.HasSuffix(string(rest), mark) {
			t.Fatalf("the file does not end with its mark %s", mark)
		}
		file = rest[:len(rest)-len(mark)]
	case !capaEOF && strings.HasPrefix(line, "$"):
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			t.Fatalf("SYNC: %q", line)
		}
		file = make([]byte, n)
		if _, err := io.ReadFull(r, file); err != nil {
			t.Fatal(err)
		}
		if b, err := r.ReadByte(); err != io.EOF {
			t.Fatalf("after the file: %q %v, want the connection closed", b, err)
		}
	default:
		t.Fatalf("SYNC (capa eof %v): %q", capaEOF, line)
	}
	return file
}

// loadRDB starts redis-server on dir's dump.rdb and returns a client of it.
func loadRDB(t *testing.T, dir string) *redis.Client {
	t.Helper()
	addr := startRedisServer(t, "--dir", dir, "--dbfilename", "dump.rdb")
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}
