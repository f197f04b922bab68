package server

import (
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestCommandDocsAsRedis: COMMAND DOCS of every command redis-server documents and
// nanokv has answers as redis-server does, in RESP2 and RESP3, subcommands in any order
// (Redis lists them in its dictionary's). With NANOKV_WRITE_DOCS=1 it first writes
// resp/commanddocs.resp anew from the redis-server on PATH.
func TestCommandDocsAsRedis(t *testing.T) {
	real := startRedisServer(t)
	rs, err := dialRESP(real)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.close()
	if _, err := rs.do("HELLO", "3"); err != nil {
		t.Fatal(err)
	}
	all, err := rs.do("COMMAND", "DOCS")
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("NANOKV_WRITE_DOCS") == "1" {
		var b strings.Builder
		encodeRESP3(&b, sortedSubcommands(all, true))
		if err := os.WriteFile("../resp/commanddocs.resp", []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	s := startServer(t, Config{})
	defer s.Close()
	ours := map[string]bool{}
	nk, err := dialRESP(s.RedisAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nk.close()
	list, err := nk.do("COMMAND", "LIST")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list.elems {
		ours[e.str] = true
	}
	// the commands, their subcommands by full name, and a few names in other cases or
	// unknown
	names := []string{"GET", "Client|Kill", "config|bogus", "nosuch", "client|kill|x"}
	for i := 0; i+1 < len(all.elems); i += 2 {
		name, doc := all.elems[i].str, all.elems[i+1]
		if !ours[name] {
			continue
		}
		names = append(names, name)
		for j := 0; j+1 < len(doc.elems); j += 2 {
			if doc.elems[j].str == "subcommands" {
				for k := 0; k+1 < len(doc.elems[j+1].elems); k += 2 {
					names = append(names, doc.elems[j+1].elems[k].str)
				}
			}
		}
	}
	checked := 0
	for _, proto := range []string{"2", "3"} {
		for _, c := range []*rconn{nk, rs} {
			if _, err := c.do("HELLO", proto); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range names {
			got, err := nk.do("COMMAND", "DOCS", name)
			if err != nil {
				t.Fatal(err)
			}
			want, err := rs.do("COMMAND", "DOCS", name)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := render(sortedSubcommands(got, false)), render(sortedSubcommands(want, false)); g != w {
				t.Errorf("RESP%s COMMAND DOCS %s:\n%s\nRedis:\n%s", proto, name, g, w)
			}
			checked++
		}
	}
	if checked < 600 {
		t.Errorf("compared the documentation of %d commands, fewer than expected", checked)
	}
}

// sortedSubcommands returns v with every "subcommands" map (and v itself, if top) in
// name order. It takes RESP2's flat arrays as maps where a "subcommands" key says so.
func sortedSubcommands(v rval, top bool) rval {
	if v.kind != '%' && v.kind != '*' {
		return v
	}
	out := v
	out.elems = make([]rval, len(v.elems))
	for i, e := range v.elems {
		out.elems[i] = sortedSubcommands(e, false)
		if i > 0 && (v.kind == '%' || v.kind == '*') && v.elems[i-1].str == "subcommands" {
			out.elems[i] = sortPairs(out.elems[i])
		}
	}
	if top {
		out = sortPairs(out)
	}
	return out
}

// sortPairs sorts a map's (or a flat array's) key-value pairs by key.
func sortPairs(v rval) rval {
	type pair struct{ k, v rval }
	var ps []pair
	for i := 0; i+1 < len(v.elems); i += 2 {
		ps = append(ps, pair{v.elems[i], v.elems[i+1]})
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].k.str < ps[j].k.str })
	out := v
	out.elems = slices.Grow([]rval(nil), len(v.elems))
	for _, p := range ps {
		out.elems = append(out.elems, p.k, p.v)
	}
	return out
}

// encodeRESP3 writes v as RESP3: the reply types COMMAND DOCS uses.
func encodeRESP3(b *strings.Builder, v rval) {
	switch v.kind {
	case '%':
		b.WriteString("%" + strconv.Itoa(len(v.elems)/2) + "\r\n")
	case '*', '~':
		b.WriteString(string(v.kind) + strconv.Itoa(len(v.elems)) + "\r\n")
	case '$':
		b.WriteString("$" + strconv.Itoa(len(v.str)) + "\r\n" + v.str + "\r\n")
		return
	case '+':
		b.WriteString("+" + v.str + "\r\n")
		return
	case ':':
		b.WriteString(":" + strconv.FormatInt(v.num, 10) + "\r\n")
		return
	default:
		panic("COMMAND DOCS replied a type this encoder does not know: " + string(v.kind))
	}
	for _, e := range v.elems {
		encodeRESP3(b, e)
	}
}
