package server

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The ACL categories of every command and subcommand are Redis 7.0's: COMMAND INFO and
// ACL CAT on nanokv answer as redis-server does for every command both know. With
// NANOKV_WRITE_CATEGORIES=1 the test writes resp/commandcats.go from the redis-server on
// PATH instead of comparing.
func TestCommandCategoriesMatchRedis(t *testing.T) {
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
	cats := map[string]string{}
	var walk func(entries []rval)
	walk = func(entries []rval) {
		for _, e := range entries {
			if len(e.elems) < 10 {
				t.Fatalf("COMMAND entry %v", e)
			}
			var cs []string
			for _, c := range e.elems[6].elems {
				cs = append(cs, c.str)
			}
			cats[e.elems[0].str] = strings.Join(cs, " ")
			walk(e.elems[9].elems)
		}
	}
	walk(all.elems)
	if len(cats) < 300 {
		t.Fatalf("redis-server listed %d commands", len(cats))
	}
	if os.Getenv("NANOKV_WRITE_CATEGORIES") != "" {
		writeCategories(t, cats)
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
	compared := 0
	for _, name := range both(slices.Clone(ours)) {
		if strings.Contains(name, "|") {
			continue // COMMAND INFO describes containers; ACL CAT below covers subcommands
		}
		var got, want []string
		for _, c := range []struct {
			conn *rconn
			out  *[]string
		}{{n, &got}, {r, &want}} {
			v, err := c.conn.do("COMMAND", "INFO", name)
			if err != nil || len(v.elems) != 1 || len(v.elems[0].elems) < 7 {
				t.Fatalf("COMMAND INFO %s: %v %v", name, v, err)
			}
			for _, cat := range v.elems[0].elems[6].elems {
				*c.out = append(*c.out, cat.str)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("COMMAND INFO %s: categories %v, redis-server %v", name, got, want)
		}
		compared++
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
	if compared < 200 {
		t.Errorf("compared the categories of %d commands only", compared)
	}
}

func writeCategories(t *testing.T, cats map[string]string) {
	var b strings.Builder
	b.WriteString(`package resp

// redisCategories are the ACL categories of Redis 7.0's commands and subcommands, in
// Redis's order, as redis-server 7.0.15 reports them in COMMAND. Generated; do not edit:
// NANOKV_WRITE_CATEGORIES=1 go test ./server -run TestCommandCategoriesMatchRedis
// writes it anew from the redis-server on PATH.
var redisCategories = map[string]string{
`)
	names := make([]string, 0, len(cats))
	for name := range cats {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&b, "\t%q: %q,\n", name, cats[name])
	}
	b.WriteString("}\n")
	if err := os.WriteFile("../resp/commandcats.go", []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
