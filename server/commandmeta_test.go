package server

import (
	"fmt"
	"go/format"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The flags, ACL categories, tips, key positions and key specifications of every command
// and subcommand are Redis 7.0's:
// COMMAND INFO and ACL CAT on nanokv answer as redis-server does for every command both
// know, in RESP2 and RESP3. With NANOKV_WRITE_META=1 the test writes resp/commandmeta.go
// from the redis-server on PATH instead of comparing.
func TestCommandMetadataMatchesRedis(t *testing.T) {
	r := dialNew(t, startRedisServer(t))
	all, err := r.do("COMMAND")
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string][7]string{} // flags, categories, tips, first key, last key, step, arity
	specs := map[string][]string{} // key specs, as Go literals of resp.keySpec
	words := func(v rval) string {
		var ws []string
		for _, e := range v.elems {
			ws = append(ws, e.str)
		}
		return strings.Join(ws, " ")
	}
	var walk func(entries []rval)
	walk = func(entries []rval) {
		for _, e := range entries {
			if len(e.elems) < 10 {
				t.Fatalf("COMMAND entry %v", e)
			}
			meta[e.elems[0].str] = [7]string{words(e.elems[2]), words(e.elems[6]), words(e.elems[7]),
				strconv.FormatInt(e.elems[3].num, 10), strconv.FormatInt(e.elems[4].num, 10), strconv.FormatInt(e.elems[5].num, 10),
				strconv.FormatInt(e.elems[1].num, 10)}
			for _, ks := range e.elems[8].elems {
				specs[e.elems[0].str] = append(specs[e.elems[0].str], keySpecLiteral(t, ks))
			}
			walk(e.elems[9].elems)
		}
	}
	walk(all.elems)
	if len(meta) < 300 {
		t.Fatalf("redis-server listed %d commands", len(meta))
	}
	if os.Getenv("NANOKV_WRITE_META") != "" {
		writeCommandMeta(t, meta, specs)
		return
	}

	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	n := dialNew(t, s.RedisAddr())
	names := func(c *rconn, args ...string) []string {
		v, err := c.do(args...)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range v.elems {
			out = append(out, e.str)
		}
		sort.Strings(out)
		return out
	}
	ours := names(n, "COMMAND", "LIST")
	theirs := names(r, "COMMAND", "LIST")
	both := func(list []string) []string {
		return slices.DeleteFunc(list, func(name string) bool {
			_, a := slices.BinarySearch(ours, name)
			_, b := slices.BinarySearch(theirs, name)
			return !a || !b
		})
	}
	compared, comparedSubs := 0, 0
	for _, proto := range []string{"2", "3"} {
		for _, c := range []*rconn{n, r} {
			if _, err := c.do("HELLO", proto); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range both(slices.Clone(ours)) {
			if strings.Contains(name, "|") {
				continue // COMMAND INFO describes containers; ACL CAT below covers subcommands
			}
			var got, want rval
			for _, c := range []struct {
				conn *rconn
				out  *rval
			}{{n, &got}, {r, &want}} {
				v, err := c.conn.do("COMMAND", "INFO", name)
				if err != nil || len(v.elems) != 1 || len(v.elems[0].elems) != 10 {
					t.Fatalf("COMMAND INFO %s: %v %v", name, v, err)
				}
				*c.out = v.elems[0]
			}
			// name, arity, flags, first, last, step, categories, tips, key specs, and
			// the same of each subcommand both know (in Redis's hash table's order
			// there: sorted here)
			for i := 0; i < 9; i++ {
				if render(got.elems[i]) != render(want.elems[i]) {
					t.Errorf("RESP%s COMMAND INFO %s element %d: %s, redis-server %s", proto, name, i, render(got.elems[i]), render(want.elems[i]))
				}
			}
			subs := func(v rval) map[string]string {
				out := map[string]string{}
				for _, e := range v.elems[9].elems {
					out[e.elems[0].str] = render(rval{kind: '*', elems: e.elems[:9]})
				}
				return out
			}
			gotSubs, wantSubs := subs(got), subs(want)
			for sub, w := range wantSubs {
				if g, ok := gotSubs[sub]; ok {
					if g != w {
						t.Errorf("RESP%s COMMAND INFO %s subcommand %s: %s, redis-server %s", proto, name, sub, g, w)
					}
					comparedSubs++
				}
			}
			for sub := range gotSubs {
				if _, ok := wantSubs[sub]; !ok && redisHas(theirs, sub) {
					t.Errorf("RESP%s COMMAND INFO %s lists %s, redis-server does not", proto, name, sub)
				}
			}
			compared++
		}
	}
	for _, cat := range names(r, "ACL", "CAT") {
		got, want := both(names(n, "ACL", "CAT", cat)), both(names(r, "ACL", "CAT", cat))
		if !slices.Equal(got, want) {
			t.Errorf("ACL CAT %s:\n got %v\nwant %v", cat, got, want)
		}
		if got, want := both(names(n, "COMMAND", "LIST", "FILTERBY", "ACLCAT", cat)), both(names(r, "COMMAND", "LIST", "FILTERBY", "ACLCAT", cat)); !slices.Equal(got, want) {
			t.Errorf("COMMAND LIST FILTERBY ACLCAT %s:\n got %v\nwant %v", cat, got, want)
		}
	}
	if compared < 400 || comparedSubs < 150 {
		t.Errorf("compared %d commands and %d subcommands only", compared, comparedSubs)
	}
}

// keySpecLiteral is a key specification of Redis's COMMAND reply in RESP2 (a flat
// array of names and values) as a Go literal of resp.keySpec.
func keySpecLiteral(t *testing.T, ks rval) string {
	field := func(v rval, name string) rval {
		for i := 0; i+1 < len(v.elems); i += 2 {
			if v.elems[i].str == name {
				return v.elems[i+1]
			}
		}
		return rval{}
	}
	var flags []string
	for _, f := range field(ks, "flags").elems {
		flags = append(flags, f.str)
	}
	bs, fk := field(ks, "begin_search"), field(ks, "find_keys")
	bsSpec, fkSpec := field(bs, "spec"), field(fk, "spec")
	var pos int64
	var keyword string
	switch field(bs, "type").str {
	case "index":
		pos = field(bsSpec, "index").num
	case "keyword":
		pos, keyword = field(bsSpec, "startfrom").num, field(bsSpec, "keyword").str
	case "unknown":
	default:
		t.Fatalf("key spec %s: begin_search %s", render(ks), render(bs))
	}
	var n [3]int64
	switch field(fk, "type").str {
	case "range":
		n = [3]int64{field(fkSpec, "lastkey").num, field(fkSpec, "keystep").num, field(fkSpec, "limit").num}
	case "keynum":
		n = [3]int64{field(fkSpec, "keynumidx").num, field(fkSpec, "firstkey").num, field(fkSpec, "keystep").num}
	case "unknown":
	default:
		t.Fatalf("key spec %s: find_keys %s", render(ks), render(fk))
	}
	return fmt.Sprintf("{%q, %q, %q, %d, %q, %q, [3]int{%d, %d, %d}}", field(ks, "notes").str, strings.Join(flags, " "),
		field(bs, "type").str, pos, keyword, field(fk, "type").str, n[0], n[1], n[2])
}

func writeCommandMeta(t *testing.T, meta map[string][7]string, specs map[string][]string) {
	var b strings.Builder
	b.WriteString(`package resp

// redisMeta are the flags, ACL categories, tips, key positions and arities of Redis 7.0's
// commands and subcommands, in Redis's order, as redis-server 7.0.15 reports them in
// COMMAND.
//
// Generated; do not edit: NANOKV_WRITE_META=1 go test ./server -run
// TestCommandMetadataMatchesRedis writes it anew from the redis-server on PATH.
var redisMeta = map[string]commandMeta{
`)
	names := make([]string, 0, len(meta))
	for name := range meta {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		m := meta[name]
		fmt.Fprintf(&b, "\t%q: {%q, %q, %q, %s, %s, %s, %s},\n", name, m[0], m[1], m[2], m[3], m[4], m[5], m[6])
	}
	b.WriteString(`}

// redisKeySpecs are the key specifications of Redis 7.0's commands and subcommands that
// have keys, as redis-server 7.0.15 reports them in COMMAND.
var redisKeySpecs = map[string][]keySpec{
`)
	for _, name := range names {
		if len(specs[name]) > 0 {
			fmt.Fprintf(&b, "\t%q: {%s},\n", name, strings.Join(specs[name], ", "))
		}
	}
	b.WriteString("}\n")
	src, err := format.Source([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("../resp/commandmeta.go", src, 0o644); err != nil {
		t.Fatal(err)
	}
}

func redisHas(sorted []string, name string) bool {
	_, ok := slices.BinarySearch(sorted, name)
	return ok
}

// COMMAND GETKEYS and GETKEYSANDFLAGS find the keys Redis finds, with its flags and its
// errors: by the key specifications, and by the command's own rules where those vary with
// the arguments (SET ... GET, BITFIELD, SORT ... STORE) or fail (a count of keys that is
// not one).
func TestCommandGetKeysMatchesRedis(t *testing.T) {
	r := dialNew(t, startRedisServer(t))
	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	n := dialNew(t, s.RedisAddr())
	calls := []string{
		"get k", "get", "get a b", "set k v", "set k v get", "set k v nx get", "set k v ex 10",
		"mset a 1 b 2", "mset a 1 b", "mget a b c", "del a b", "exists a", "type a", "touch a b",
		"append k v", "incr k", "getdel k", "getex k persist", "copy a b", "copy a b replace",
		"rename a b", "renamenx a b", "move a 1", "lcs a b", "object encoding k", "object freq k",
		"object help", "object", "object nosuch k", "memory usage k", "debug object k",
		"bitfield k get u8 0", "bitfield k get u8 0 overflow wrap get i4 1", "bitfield k set u8 0 1",
		"bitfield k incrby u8 0 1", "bitfield k get u8", "bitfield k", "bitfield_ro k get u8 0",
		"bitop and d a b", "bitcount k", "bitpos k 1", "setbit k 1 1", "pfcount a b", "pfmerge d a b",
		"sort k", "sort k by w get g store d", "sort k store d1 store d2", "sort k limit 0 1 store d",
		"sort k store", "sort_ro k by w", "sort k get store", "sort k by store",
		"zunionstore d 2 a b", "zunionstore d 2 a b weights 1 2", "zunionstore d 0 a", "zunionstore d x a",
		"zunionstore d 3 a b", "zunionstore d 2x a b", "zunionstore d -1 a", "zinterstore d 1 a",
		"zdiffstore d 2 a b", "zunion 2 a b", "zunion 0 a", "zinter 1 a withscores", "zdiff 2 a b",
		"zintercard 2 a b", "zintercard 2 a b limit 1", "zintercard 3 a b", "sintercard 1 a",
		"sunion a b", "sunionstore d a b", "sinterstore d a", "sdiffstore d a b", "smove a b m",
		"zrangestore d s 0 -1", "geosearchstore d s fromlonlat 0 0 byradius 1 km",
		"georadius k 0 0 1 km", "georadius k 0 0 1 km store d", "georadius k 0 0 1 km storedist d",
		"georadius k 0 0 1 km store d storedist e", "georadiusbymember k m 1 km store d",
		"georadius_ro k 0 0 1 km", "geoadd k 0 0 m", "geodist k a b",
		"eval s 0", "eval s 2 a b", "eval s 1 a b", "eval s 5 a", "eval s -1", "eval s x a",
		"evalsha h 1 a", "eval_ro s 1 a", "fcall f 1 a", "fcall_ro f 0",
		"lmpop 2 a b left", "lmpop 0 a left", "lmpop 3 a b left", "blmpop 0 2 a b left count 2",
		"zmpop 1 a min", "bzmpop 0 1 a max", "blpop a b 0", "brpoplpush a b 0", "blmove a b left right 0",
		"lmove a b left right", "rpoplpush a b", "bzpopmin a b 0",
		"xread streams a b 0 0", "xread count 1 streams a 0", "xread streams a b c", "xread a b",
		"xread count 1 block 0 streams a 0", "xreadgroup group g c streams a >",
		"xreadgroup group g c count 1 streams a b > >", "xadd k * f v", "xrange k - +",
		"xautoclaim k g c 0 0", "xinfo stream k", "xinfo groups k", "xgroup create k g $",
		"xgroup createconsumer k g c", "xack k g 0-1", "xclaim k g c 0 0-1",
		"hset h f v", "hgetall h", "lpush l a", "sadd s m", "zadd z 1 m", "expire k 10",
		"watch a b", "dump k", "restore k 0 x", "ping", "publish ch m", "subscribe ch",
		"spublish ch m", "ssubscribe ch", "info", "nosuch k", "client list", "config get x",
		"unlink a b", "persist k", "ttl k", "randomkey", "keys *", "scan 0", "dbsize", "flushall",
		"incrbyfloat k 1", "setrange k 0 v", "getrange k 0 1", "strlen k", "psetex k 10 v",
		"hincrby h f 1", "linsert l before a b", "lpos l a", "srandmember s", "zrandmember z",
		"zscore z m", "zmscore z a b", "geopos k a", "geohash k a", "pfadd h a", "pfdebug getreg h",
	}
	for _, proto := range []string{"2", "3"} {
		for _, c := range []*rconn{n, r} {
			if _, err := c.do("HELLO", proto); err != nil {
				t.Fatal(err)
			}
		}
		for _, call := range calls {
			for _, sub := range []string{"GETKEYS", "GETKEYSANDFLAGS"} {
				args := append([]string{"COMMAND", sub}, strings.Fields(call)...)
				got, err := n.do(args...)
				if err != nil {
					t.Fatal(err)
				}
				want, err := r.do(args...)
				if err != nil {
					t.Fatal(err)
				}
				if render(got) != render(want) {
					t.Errorf("RESP%s COMMAND %s %s: %s, redis-server %s", proto, sub, call, render(got), render(want))
				}
			}
		}
	}
	for _, args := range [][]string{{"COMMAND", "GETKEYS"}, {"COMMAND", "GETKEYSANDFLAGS"}, {"COMMAND", "HELP"},
		// a subcommand's description by its full name, as Redis 7 looks it up
		{"COMMAND", "INFO", "client|id", "CONFIG|GET", "script|flush", "cluster|slots", "object|encoding", "client|nosuch", "get|x"},
		// a container's subcommand is checked before it runs, as Redis's processCommand
		// checks it
		{"CLUSTER", "FOO"}, {"CLUSTER", "INFO"}, {"CLUSTER", "KEYSLOT"}, {"SCRIPT", "FLUSH", "a", "b"},
		{"SCRIPT", "FOO"}, {"SCRIPT", "LOAD"}, {"CLIENT", "KILL"}, {"SLOWLOG", "GET", "1", "2"}} {
		got, _ := n.do(args...)
		want, _ := r.do(args...)
		if render(got) != render(want) {
			t.Errorf("%v: %s, redis-server %s", args, render(got), render(want))
		}
	}
}

// dialNew connects to addr for the rest of the test.
func dialNew(t *testing.T, addr string) *rconn {
	t.Helper()
	c, err := dialRESP(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	return c
}
