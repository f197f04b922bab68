package server

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The flags, ACL categories, tips and key positions of every command and subcommand are
// Redis 7.0's:
// COMMAND INFO and ACL CAT on nanokv answer as redis-server does for every command both
// know, in RESP2 and RESP3. With NANOKV_WRITE_META=1 the test writes resp/commandmeta.go
// from the redis-server on PATH instead of comparing.
func TestCommandMetadataMatchesRedis(t *testing.T) {
	raddr := startRedisServer(t)
	r, err := dialRESP(raddr)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	all, err := r.do("COMMAND")
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string][7]string{} // flags, categories, tips, first key, last key, step, arity
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
			walk(e.elems[9].elems)
		}
	}
	walk(all.elems)
	if len(meta) < 300 {
		t.Fatalf("redis-server listed %d commands", len(meta))
	}
	if os.Getenv("NANOKV_WRITE_META") != "" {
		writeCommandMeta(t, meta)
		return
	}

	s := startServer(t, Config{MemoryOnly: true})
	defer s.Close()
	n, err := dialRESP(s.RedisAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
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
			// name, arity, flags, first, last, step, categories, tips, and the same of
			// each subcommand both know (in Redis's hash table's order there: sorted
			// here); not the key specs, which nanokv does not give
			for i := 0; i < 8; i++ {
				if render(got.elems[i]) != render(want.elems[i]) {
					t.Errorf("RESP%s COMMAND INFO %s element %d: %s, redis-server %s", proto, name, i, render(got.elems[i]), render(want.elems[i]))
				}
			}
			subs := func(v rval) map[string]string {
				out := map[string]string{}
				for _, e := range v.elems[9].elems {
					out[e.elems[0].str] = render(rval{kind: '*', elems: e.elems[:8]})
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

func writeCommandMeta(t *testing.T, meta map[string][7]string) {
	var b strings.Builder
	b.WriteString(`package resp

// redisMeta are the flags, ACL categories, tips, key positions and arities of Redis 7.0's
// commands and subcommands, in Redis's order, as redis-server 7.0.15 reports them in
// COMMAND.
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
	b.WriteString("}\n")
	if err := os.WriteFile("../resp/commandmeta.go", []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func redisHas(sorted []string, name string) bool {
	_, ok := slices.BinarySearch(sorted, name)
	return ok
}
