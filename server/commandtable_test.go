package server

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Sweeps over the whole command table: every command and subcommand a server lists in
// COMMAND, called with arguments made up to its arity and past it, on nanokv and, where
// the reply is Redis's to match, on redis-server 7.0.

// commandTable is a server's COMMAND reply as a list, each container's subcommands after
// it.
func commandTable(t *testing.T, c *rconn) []rval {
	t.Helper()
	all, err := c.do("COMMAND")
	if err != nil {
		t.Fatal(err)
	}
	var out []rval
	var walk func([]rval)
	walk = func(entries []rval) {
		for _, e := range entries {
			out = append(out, e)
			walk(e.elems[9].elems)
		}
	}
	walk(all.elems)
	if len(out) < 200 {
		t.Fatalf("COMMAND listed %d commands", len(out))
	}
	return out
}

// entryCall is a COMMAND entry's name as the words that call it ("client|list": CLIENT
// LIST).
func entryCall(e rval) []string { return strings.Split(e.elems[0].str, "|") }

// entryArity is the number of words a call of the entry needs at least.
func entryArity(e rval) int { return int(max(e.elems[1].num, -e.elems[1].num)) }

// entryFlagged reports whether the entry has flag among its flags.
func entryFlagged(e rval, flag string) bool {
	return slices.ContainsFunc(e.elems[2].elems, func(f rval) bool { return f.str == flag })
}

// padded is call with arguments drawn by next appended until it has n words.
func padded(call []string, n int, next func() string) []string {
	out := slices.Clone(call)
	for len(out) < n {
		out = append(out, next())
	}
	return out
}

func zero() string { return "0" }

// drawFrom returns a draw of vals, seeded.
func drawFrom(vals []string, seed uint64) func() string {
	rng := rand.New(rand.NewPCG(seed, 1))
	return func() string { return vals[rng.IntN(len(vals))] }
}

// hasCommand reports whether the server behind c knows the command name.
func hasCommand(c *rconn, name string) bool {
	info, err := c.do("COMMAND", "INFO", name)
	return err == nil && len(info.elems) == 1 && !info.elems[0].null
}

// TestScriptsRefuseAsRedis has a script call every command and subcommand redis-server
// flags noscript, on nanokv and on redis-server, and requires the same replies: Redis's
// refusal, also for the server commands nanokv's store does not know (REPLCONF, LATENCY
// LATEST...), which it once answered as unknown; the arity checked first.
func TestScriptsRefuseAsRedis(t *testing.T) {
	r := dialNew(t, startRedisServer(t))
	var calls [][]string
	for _, e := range commandTable(t, r) {
		if entryFlagged(e, "noscript") {
			// the name alone (often the wrong arity), and with the arguments the arity asks
			calls = append(calls, entryCall(e), padded(entryCall(e), entryArity(e), zero))
		}
	}
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	n := dialNew(t, s.RedisAddr())
	for _, call := range calls {
		quoted := make([]string, len(call))
		for i, a := range call {
			quoted[i] = strconv.Quote(a)
		}
		script := "return redis.pcall(" + strings.Join(quoted, ", ") + ")"
		want, err1 := r.do("EVAL", script, "0")
		got, err2 := n.do("EVAL", script, "0")
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", script, err1, err2)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: nanokv %+v, redis-server %+v", script, got, want)
		}
	}
}

// TestQueuedAsRedis sends every command and subcommand of redis-server's table that
// nanokv has, at its arity, inside MULTI to both, and requires the same reply to it
// (QUEUED, or the refusal of a command Redis does not take in a transaction).
func TestQueuedAsRedis(t *testing.T) {
	real := startRedisServer(t)
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	n := dialNew(t, s.RedisAddr())
	queued := func(addr string, call []string) string {
		c := dialNew(t, addr)
		defer c.close()
		var out []string
		for _, cmd := range [][]string{{"MULTI"}, call, {"DISCARD"}} {
			v, err := c.do(cmd...)
			if err != nil { // QUIT: closed, with a reset or not as the DISCARD behind it lands
				return strings.Join(append(out, "closed"), " | ")
			}
			out = append(out, fmt.Sprintf("%c%s", v.kind, v.str))
		}
		return strings.Join(out, " | ")
	}
	for _, e := range commandTable(t, dialNew(t, real)) {
		call := padded(entryCall(e), entryArity(e), zero)
		if !hasCommand(n, call[0]) {
			continue // MIGRATE, LOLWUT...
		}
		if got, want := queued(s.RedisAddr(), call), queued(real, call); got != want {
			t.Errorf("MULTI, %q, DISCARD: nanokv %s, redis-server %s", call, got, want)
		}
	}
}

// TestEveryCommandSurvivesOddArguments sends every command and subcommand nanokv lists,
// with 0 to 3 arguments past its arity drawn from numbers, non-numbers, overflowing and
// special values and key names over keys of every type, to a node and to a cluster
// member, and requires each connection to answer a PING after each: no input may stop
// the server (a bare COMMAND once did). Left out: what would end, block, pause or lock
// out the test's own connection, shut the server down, or answer more than once.
func TestEveryCommandSurvivesOddArguments(t *testing.T) {
	skip := map[string]bool{"shutdown": true, "quit": true, "monitor": true, "subscribe": true, "psubscribe": true,
		"ssubscribe": true, "sync": true, "psync": true, "reset": true, "failover": true, "client": true,
		"blpop": true, "brpop": true, "blmove": true, "brpoplpush": true, "bzpopmin": true, "bzpopmax": true,
		"blmpop": true, "bzmpop": true, "wait": true, "config": true, "acl": true, "multi": true, "hello": true,
		"raft.cluster": true, "raft.node": true, "raft.transfer_leader": true, "raft.timeout_now": true,
		"unsubscribe": true, "punsubscribe": true, "sunsubscribe": true} // a reply per channel
	draw := drawFrom([]string{"0", "-1", "x", "", "99999999999999999999", "1.5", "inf", "-inf", "nan", "*", "+", "-",
		"(", "[a", "1-1", "$", ">", "0-0", "k", "l", "h", "z", "s", "st", "hll", "b", "g"}, 1)
	setup := [][]string{{"SET", "k", "1"}, {"RPUSH", "l", "a", "b"}, {"HSET", "h", "f", "v"}, {"ZADD", "z", "1", "m"},
		{"SADD", "s", "a"}, {"XADD", "st", "1-1", "f", "v"}, {"PFADD", "hll", "a"}, {"SETBIT", "b", "7", "1"},
		{"GEOADD", "g", "10", "20", "p"}}
	single := startServer(t, Config{MemoryOnly: true})
	defer single.Close()
	member := startServer(t, memberConfig(t, Config{MemoryOnly: true}))
	defer member.Close()
	awaitLead(t, member)
	for name, s := range map[string]*Server{"node": single, "member": member} {
		c := dialNew(t, s.RedisAddr())
		var calls [][]string
		for _, e := range commandTable(t, c) {
			if !skip[entryCall(e)[0]] {
				for extra := range 4 {
					for range 3 {
						calls = append(calls, padded(entryCall(e), entryArity(e)+extra, draw))
					}
				}
			}
		}
		for _, call := range calls {
			for _, cmd := range append(setup, call) {
				if err := c.send(cmd...); err != nil {
					t.Fatalf("%s: %q: %v", name, cmd, err)
				}
			}
			for range len(setup) + 1 {
				if _, err := c.recv(); err != nil {
					t.Fatalf("%s: %q: %v", name, call, err)
				}
			}
			if v, err := c.do("PING", "alive"); err != nil || v.str != "alive" {
				t.Fatalf("%s: after %q: %+v %v", name, call, v, err)
			}
		}
	}
}

// TestEveryCommandAsRedis sends every command and subcommand of redis-server's table
// that nanokv has and whose output Redis calls deterministic, at its arity and with one
// and two arguments more (small numbers, words, and the names of keys of every type), to
// nanokv (a node and a cluster member) and to redis-server, each after the same few
// writes, and requires the same replies. A script that does not compile is compared by
// its error's first words: gopher-lua words its parse errors its own way.
func TestEveryCommandAsRedis(t *testing.T) {
	real := startRedisServer(t)
	skip := map[string]bool{"quit": true, "shutdown": true, "monitor": true, "reset": true, "sync": true,
		"psync": true, "failover": true, "subscribe": true, "psubscribe": true, "ssubscribe": true,
		"unsubscribe": true, "punsubscribe": true, "sunsubscribe": true, "client": true, "info": true,
		"time": true, "lastsave": true, "config": true, "acl": true, "debug": true, "memory": true,
		"command": true, "latency": true, "slowlog": true, "hello": true, "object": true, "role": true,
		"dbsize": true, "wait": true, "blpop": true, "brpop": true, "blmove": true, "brpoplpush": true,
		"bzpopmin": true, "bzpopmax": true, "blmpop": true, "bzmpop": true, "bgsave": true, "save": true,
		"bgrewriteaof": true, "replicaof": true, "slaveof": true, "module": true, "pubsub": true,
		"cluster": true, "multi": true, "scan": true, "keys": true, "function": true, "script": true}
	setup := [][]string{{"FLUSHALL"}, {"FUNCTION", "FLUSH"}, {"SET", "k", "1"}, {"RPUSH", "l", "a", "b"},
		{"HSET", "h", "f", "v"}, {"ZADD", "z", "1", "m"}, {"SADD", "s", "a"}, {"XADD", "st", "1-1", "f", "v"}}
	draw := drawFrom([]string{"0", "1", "-1", "x", "2", "10", "1.5", "a", "k", "l", "h", "z", "s", "st"}, 2)
	single := startServer(t, Config{MemoryOnly: true})
	defer single.Close()
	member := startServer(t, memberConfig(t, Config{MemoryOnly: true}))
	defer member.Close()
	awaitLead(t, member)
	replies := func(addr string, call []string) []string {
		c := dialNew(t, addr)
		defer c.close()
		var out []string
		for _, cmd := range append(slices.Clone(setup), call) {
			v, err := c.do(cmd...)
			if err != nil {
				t.Fatalf("%q to %s: %v", cmd, addr, err)
			}
			s := fmt.Sprintf("%+v", v)
			if v.kind == '-' && strings.HasPrefix(v.str, "ERR Error compiling script") {
				s = "ERR Error compiling script"
			}
			out = append(out, s)
		}
		return out
	}
	n := dialNew(t, single.RedisAddr())
	compared := 0
	for _, e := range commandTable(t, dialNew(t, real)) {
		call := entryCall(e)
		if skip[call[0]] || strings.Contains(fmt.Sprint(e.elems[7]), "nondeterministic") || !hasCommand(n, call[0]) {
			continue
		}
		for extra := range 3 {
			call := padded(call, entryArity(e)+extra, draw)
			want := replies(real, call)
			for _, s := range []*Server{single, member} {
				if got := replies(s.RedisAddr(), call); !slices.Equal(got, want) {
					t.Errorf("%q: nanokv %v\nredis-server %v", call, got[len(setup):], want[len(setup):])
				}
			}
			compared++
		}
	}
	if compared < 400 {
		t.Fatalf("only %d calls compared", compared)
	}
}
