package kvstore

import (
	"strconv"
	"strings"
	"testing"
)

// many returns n arguments "<prefix><i>", each followed by val when val is not "" (a
// hash's field-value pairs); with prefix "#", "<i> m<i>" score-member pairs.
func many(prefix string, n int, val string) []string {
	var out []string
	for i := range n {
		switch {
		case prefix == "#":
			out = append(out, strconv.Itoa(i), "m"+strconv.Itoa(i))
		case val != "":
			out = append(out, prefix+strconv.Itoa(i), val)
		default:
			out = append(out, prefix+strconv.Itoa(i))
		}
	}
	return out
}

// TestObjectEncoding runs each case's commands on an empty store and compares OBJECT
// ENCODING and OBJECT REFCOUNT of key k with what redis-server 7.0.15 answered to the
// same commands.
func TestObjectEncoding(t *testing.T) {
	x := strings.Repeat
	c := func(args ...string) []string { return args }
	for _, tc := range []struct {
		name     string
		cmds     [][]string
		enc      string
		refcount int64
	}{
		{"int", [][]string{c("SET", "k", "12")}, "int", sharedRefcount},
		{"shared int bound", [][]string{c("SET", "k", "9999")}, "int", sharedRefcount},
		{"unshared int", [][]string{c("SET", "k", "10000")}, "int", 1},
		{"negative int", [][]string{c("SET", "k", "-1")}, "int", 1},
		{"leading zero", [][]string{c("SET", "k", "007")}, "embstr", 1},
		{"plus sign", [][]string{c("SET", "k", "+5")}, "embstr", 1},
		{"int64 max", [][]string{c("SET", "k", "9223372036854775807")}, "int", 1},
		{"past int64", [][]string{c("SET", "k", "9223372036854775808")}, "embstr", 1},
		{"embstr 44", [][]string{c("SET", "k", x("x", 44))}, "embstr", 1},
		{"raw 45", [][]string{c("SET", "k", x("x", 45))}, "raw", 1},
		{"empty", [][]string{c("SET", "k", "")}, "embstr", 1},
		{"append new", [][]string{c("APPEND", "k", "12")}, "int", sharedRefcount},
		{"append existing", [][]string{c("SET", "k", "1"), c("APPEND", "k", "2")}, "raw", 1},
		{"append empty", [][]string{c("SET", "k", "1"), c("APPEND", "k", "")}, "raw", 1},
		{"setrange", [][]string{c("SET", "k", "12"), c("SETRANGE", "k", "0", "3")}, "raw", 1},
		{"setrange empty", [][]string{c("SET", "k", "12"), c("SETRANGE", "k", "0", "")}, "int", sharedRefcount},
		{"setrange new", [][]string{c("SETRANGE", "k", "1", "a")}, "raw", 1},
		{"incr", [][]string{c("INCR", "k")}, "int", sharedRefcount},
		{"incr big", [][]string{c("SET", "k", "99999"), c("INCR", "k")}, "int", 1},
		{"incrbyfloat int", [][]string{c("INCRBYFLOAT", "k", "3")}, "embstr", 1},
		{"incrbyfloat", [][]string{c("INCRBYFLOAT", "k", "3.5")}, "embstr", 1},
		{"setbit", [][]string{c("SET", "k", "abc"), c("SETBIT", "k", "1", "1")}, "raw", 1},
		{"setbit unchanged", [][]string{c("SET", "k", "abc"), c("SETBIT", "k", "0", "0")}, "raw", 1},
		{"bitfield get", [][]string{c("SET", "k", "abc"), c("BITFIELD", "k", "GET", "u8", "0")}, "embstr", 1},
		{"bitfield set unchanged", [][]string{c("SET", "k", "abc"), c("BITFIELD", "k", "SET", "u8", "0", "97")}, "raw", 1},
		{"bitop", [][]string{c("SET", "a", "1"), c("BITOP", "NOT", "k", "a")}, "raw", 1},
		{"pfadd", [][]string{c("PFADD", "k", "a")}, "raw", 1},
		{"pfdebug", [][]string{c("SET", "k", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xfe"), c("PFDEBUG", "ENCODING", "k")}, "raw", 1},
		{"copy shared int", [][]string{c("SET", "a", "12"), c("COPY", "a", "k")}, "int", 1},
		{"copy embstr", [][]string{c("SET", "a", "abc"), c("COPY", "a", "k")}, "embstr", 1},
		{"copy raw", [][]string{c("SET", "a", "1"), c("APPEND", "a", "2"), c("COPY", "a", "k")}, "raw", 1},
		{"getex keeps", [][]string{c("SET", "k", "1"), c("APPEND", "k", "2"), c("GETEX", "k", "EX", "100")}, "raw", 1},
		{"rename keeps", [][]string{c("SET", "a", "1"), c("APPEND", "a", "2"), c("RENAME", "a", "k")}, "raw", 1},
		{"set over raw", [][]string{c("SET", "k", "1"), c("APPEND", "k", "2"), c("SET", "k", "12")}, "int", sharedRefcount},
		{"mset", [][]string{c("MSET", "k", "5")}, "int", sharedRefcount},
		{"lua set", [][]string{c("EVAL", "redis.call('set','k','5')", "0")}, "int", sharedRefcount},
		{"list", [][]string{c("RPUSH", "k", "a")}, "quicklist", 1},
		{"hash small", [][]string{c("HSET", "k", "f", "v")}, "listpack", 1},
		{"hash long value", [][]string{c("HSET", "k", "f", x("x", 65))}, "hashtable", 1},
		{"hash value 64", [][]string{c("HSET", "k", "f", x("x", 64))}, "listpack", 1},
		{"hash long field", [][]string{c("HSET", "k", x("x", 65), "v")}, "hashtable", 1},
		{"hash long then deleted", [][]string{c("HSET", "k", "f", x("x", 65), "g", "v"), c("HDEL", "k", "f")}, "hashtable", 1},
		{"hash setnx long existing", [][]string{c("HSET", "k", "f", "v"), c("HSETNX", "k", "f", x("x", 65))}, "listpack", 1},
		{"hash setnx long new", [][]string{c("HSET", "k", "f", "v"), c("HSETNX", "k", "g", x("x", 65))}, "hashtable", 1},
		{"hash incrbyfloat long", [][]string{c("HINCRBYFLOAT", "k", "f", "1e80")}, "hashtable", 1},
		{"hash 512", [][]string{append(c("HSET", "k"), many("f", 512, "v")...)}, "listpack", 1},
		{"hash 513", [][]string{append(c("HSET", "k"), many("f", 513, "v")...)}, "hashtable", 1},
		{"set ints", [][]string{c("SADD", "k", "1", "2", "-3")}, "intset", 1},
		{"set text", [][]string{c("SADD", "k", "a")}, "hashtable", 1},
		{"set int then text", [][]string{c("SADD", "k", "1"), c("SADD", "k", "a"), c("SREM", "k", "a")}, "hashtable", 1},
		{"set non-canonical int", [][]string{c("SADD", "k", "01")}, "hashtable", 1},
		{"set 512 ints", [][]string{append(c("SADD", "k"), many("", 512, "")...)}, "intset", 1},
		{"set 513 ints", [][]string{append(c("SADD", "k"), many("", 513, "")...)}, "hashtable", 1},
		{"sinterstore ints", [][]string{c("SADD", "a", "1", "x"), c("SADD", "b", "1", "y"), c("SINTERSTORE", "k", "a", "b")}, "intset", 1},
		{"sunionstore mixed", [][]string{c("SADD", "a", "1"), c("SADD", "b", "y"), c("SUNIONSTORE", "k", "a", "b")}, "hashtable", 1},
		{"smove int", [][]string{c("SADD", "a", "x", "5"), c("SMOVE", "a", "k", "5")}, "intset", 1},
		{"zset small", [][]string{c("ZADD", "k", "1", "a")}, "listpack", 1},
		{"zset long member", [][]string{c("ZADD", "k", "1", x("x", 65))}, "skiplist", 1},
		{"zset long member later removed", [][]string{c("ZADD", "k", "1", x("x", 65), "2", "b"), c("ZREM", "k", x("x", 65))}, "skiplist", 1},
		{"zset 128", [][]string{append(c("ZADD", "k"), many("#", 128, "")...)}, "listpack", 1},
		{"zset 129", [][]string{append(c("ZADD", "k"), many("#", 129, "")...)}, "skiplist", 1},
		{"zunionstore recomputes", [][]string{c("ZADD", "a", "1", x("x", 65), "2", "b"), c("ZREM", "a", x("x", 65)), c("ZUNIONSTORE", "k", "1", "a")}, "listpack", 1},
		{"zrangestore", [][]string{c("ZADD", "a", "1", x("x", 65), "2", "b"), c("ZRANGESTORE", "k", "a", "1", "1")}, "listpack", 1},
		{"sort converts", [][]string{c("ZADD", "k", "1", "a"), c("SORT", "k")}, "skiplist", 1},
		{"sort syntax error", [][]string{c("ZADD", "k", "1", "a"), c("SORT", "k", "FOO")}, "listpack", 1},
		{"copy zset keeps", [][]string{c("ZADD", "a", "1", "a"), c("SORT", "a"), c("COPY", "a", "k")}, "skiplist", 1},
		{"geoadd", [][]string{c("GEOADD", "k", "13.36", "38.11", "a")}, "listpack", 1},
		{"stream", [][]string{c("XADD", "k", "1-1", "f", "v")}, "stream", 1},
	} {
		h := newHarness(t)
		for _, cmd := range tc.cmds {
			h.do(cmd...)
		}
		if got := h.do("OBJECT", "ENCODING", "k"); got != tc.enc {
			t.Errorf("%s: OBJECT ENCODING %v, want %s", tc.name, got, tc.enc)
		}
		if got := h.do("OBJECT", "REFCOUNT", "k"); got != tc.refcount {
			t.Errorf("%s: OBJECT REFCOUNT %v, want %d", tc.name, got, tc.refcount)
		}
	}
}

// TestObjectEncodingAfterSnapshot: a store restored from a snapshot holds what a Redis
// server holds after loading its RDB file: strings as SET makes them, collections in
// their compact encoding while within its limits.
func TestObjectEncodingAfterSnapshot(t *testing.T) {
	a := newHarness(t)
	a.do("SET", "s", "1")
	a.do("APPEND", "s", "2")
	a.do(append([]string{"HSET", "h", "big", strings.Repeat("x", 65)}, many("f", 3, "v")...)...)
	a.do("HDEL", "h", "big")
	a.do(append([]string{"SADD", "set", "x"}, many("", 3, "")...)...)
	a.do("SREM", "set", "x")
	a.do("ZADD", "z", "1", "a")
	a.do("SORT", "z")
	want := map[string][2]string{"s": {"raw", "int"}, "h": {"hashtable", "listpack"}, "set": {"hashtable", "intset"}, "z": {"skiplist", "listpack"}}
	for k, w := range want {
		if got := a.do("OBJECT", "ENCODING", k); got != w[0] {
			t.Fatalf("%s before the snapshot: %v, want %s", k, got, w[0])
		}
	}
	b := a.restored()
	for k, w := range want {
		if got := b.do("OBJECT", "ENCODING", k); got != w[1] {
			t.Errorf("%s after the snapshot: %v, want %s", k, got, w[1])
		}
	}
}

func TestObjectErrors(t *testing.T) {
	h := newHarness(t)
	h.do("SET", "k", "v")
	for _, c := range []struct {
		args []string
		want any
	}{
		{[]string{"OBJECT", "ENCODING", "nosuch"}, nil},
		{[]string{"OBJECT", "REFCOUNT", "nosuch"}, nil},
		{[]string{"OBJECT", "FREQ", "nosuch"}, nil},
		{[]string{"OBJECT", "IDLETIME", "nosuch"}, nil},
		{[]string{"OBJECT", "FREQ", "k"}, Err(errNoLFU)},
		{[]string{"OBJECT", "IDLETIME", "k"}, int64(0)}, // noeviction keeps LRU clocks (access_test.go: the others)
		{[]string{"OBJECT", "FOO", "k"}, Err("ERR unknown subcommand 'FOO'. Try OBJECT HELP.")},
		{[]string{"OBJECT", "ENCODING"}, Err("ERR wrong number of arguments for 'object|encoding' command")},
		{[]string{"OBJECT", "encoding", "k", "k"}, Err("ERR wrong number of arguments for 'object|encoding' command")},
		{[]string{"OBJECT", "HELP", "x"}, Err("ERR wrong number of arguments for 'object|help' command")},
	} {
		if got := h.do(c.args...); got != c.want {
			t.Errorf("%q: %#v, want %#v", c.args, got, c.want)
		}
	}
	help, ok := h.do("OBJECT", "help").([]any)
	if !ok || len(help) != len(objectHelp) || help[0] != Status(objectHelp[0]) {
		t.Errorf("OBJECT HELP: %#v", help)
	}
}
