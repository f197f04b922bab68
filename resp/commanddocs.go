package resp

import (
	_ "embed"
	"strconv"
	"strings"
	"sync"

	"github.com/nanokv/nanokv/kvstore"
)

// COMMAND DOCS answers with Redis 7.0's documentation of its commands: summary, since,
// group, complexity, history, arguments and subcommands, which redis-cli 7.2's hints
// and help, RedisInsight and client generators read. commanddocs.resp is redis-server
// 7.0.15's RESP3 reply to a bare COMMAND DOCS, kept as it came: a map of command name to
// documentation. A command nanokv has and Redis does not (RAFT.*) gets its summary,
// since and group only.
//
// Generated; do not edit: NANOKV_WRITE_DOCS=1 go test ./server -run
// TestCommandDocsAsRedis writes it anew from the redis-server on PATH.
//
//go:embed commanddocs.resp
var commandDocsRESP []byte

// commandDocs maps a command's name to its documentation's RESP3 encoding, within
// commandDocsRESP; read at the first COMMAND DOCS.
var commandDocs = sync.OnceValue(func() map[string][]byte {
	docs := map[string][]byte{}
	b := commandDocsRESP
	n, b, ok := respHeader(b, '%')
	for ; ok && n > 0; n-- {
		var name, value []byte
		if name, b, ok = respBulk(b); !ok {
			break
		}
		rest, ok2 := respSkip(b)
		if !ok2 {
			break
		}
		value, b = b[:len(b)-len(rest)], rest
		docs[string(name)] = value
	}
	return docs
})

// commandDocsReply is COMMAND DOCS [name ...]: every command's documentation, or that of
// the commands named that nanokv has, a subcommand by its full name ("client|kill") as
// Redis 7.0 looks it up; names it does not know are left out.
func commandDocsReply(c *conn, names [][]byte) {
	type entry struct {
		name string
		doc  []byte        // Redis's documentation, or
		spec *kvstore.Spec // nanokv's own command's
	}
	docs := commandDocs()
	var out []entry
	add := func(s *kvstore.Spec) { out = append(out, entry{name: s.Name, doc: docs[s.Name], spec: s}) }
	if len(names) == 0 {
		for _, s := range allSpecs() {
			add(s)
		}
	}
	for _, n := range names {
		if s := findSpec(n); s != nil {
			add(s)
			continue
		}
		full := strings.ToLower(string(n))
		container, _, isSub := strings.Cut(full, "|")
		if !isSub || findSpec([]byte(container)) == nil || !aclCommands().known(full) {
			continue
		}
		if d := subcommandDoc(docs[container], full); d != nil {
			out = append(out, entry{name: full, doc: d})
		}
	}
	c.Map(len(out))
	for _, e := range out {
		c.BulkString(e.name)
		if e.doc != nil {
			writeRESP3(&c.Writer, e.doc)
			continue
		}
		c.Map(3)
		c.BulkString("summary")
		c.BulkString(e.spec.Summary)
		c.BulkString("since")
		c.BulkString(e.spec.Since)
		c.BulkString("group")
		c.BulkString(e.spec.Group)
	}
}

// subcommandDoc finds the documentation of subcommand full in its container's doc.
func subcommandDoc(doc []byte, full string) []byte {
	n, b, ok := respHeader(doc, '%')
	for ; ok && n > 0; n-- {
		var key []byte
		if key, b, ok = respBulk(b); !ok {
			return nil
		}
		if string(key) != "subcommands" {
			b, ok = respSkip(b)
			continue
		}
		subs, rest, ok := respHeader(b, '%')
		for ; ok && subs > 0; subs-- {
			var name []byte
			if name, rest, ok = respBulk(rest); !ok {
				return nil
			}
			after, ok2 := respSkip(rest)
			if !ok2 {
				return nil
			}
			if string(name) == full {
				return rest[:len(rest)-len(after)]
			}
			rest = after
		}
		return nil
	}
	return nil
}

// writeRESP3 writes v, one reply in RESP3, in the connection's protocol: a RESP2 client
// gets maps as flat arrays and sets as arrays, as Redis sends them. v is well formed
// (it is commandDocsRESP's).
func writeRESP3(w *Writer, v []byte) []byte {
	if len(v) == 0 {
		return v
	}
	switch v[0] {
	case '%', '*', '~':
		n, rest, _ := respHeader(v, v[0])
		switch v[0] {
		case '%':
			w.Map(int(n))
			n *= 2
		case '*':
			w.Array(int(n))
		default:
			w.Set(int(n))
		}
		for ; n > 0; n-- {
			rest = writeRESP3(w, rest)
		}
		return rest
	case '$':
		s, rest, _ := respBulk(v)
		w.Bulk(s)
		return rest
	case '+':
		line, rest, _ := respLine(v)
		w.Status(string(line[1:]))
		return rest
	case ':':
		line, rest, _ := respLine(v)
		n, _ := strconv.ParseInt(string(line[1:]), 10, 64)
		w.Int(n)
		return rest
	}
	return nil
}

// respLine splits the first line (without its CRLF) off b.
func respLine(b []byte) (line, rest []byte, ok bool) {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '\r' && b[i+1] == '\n' {
			return b[:i], b[i+2:], true
		}
	}
	return nil, nil, false
}

// respHeader reads an aggregate's header of type t and its count.
func respHeader(b []byte, t byte) (int64, []byte, bool) {
	line, rest, ok := respLine(b)
	if !ok || len(line) < 2 || line[0] != t {
		return 0, nil, false
	}
	n, err := strconv.ParseInt(string(line[1:]), 10, 64)
	return n, rest, err == nil && n >= 0
}

// respBulk reads a bulk string.
func respBulk(b []byte) ([]byte, []byte, bool) {
	n, rest, ok := respHeader(b, '$')
	if !ok || int64(len(rest)) < n+2 {
		return nil, nil, false
	}
	return rest[:n], rest[n+2:], true
}

// respSkip returns what follows the reply at the start of b.
func respSkip(b []byte) ([]byte, bool) {
	if len(b) == 0 {
		return nil, false
	}
	switch b[0] {
	case '%', '*', '~':
		n, rest, ok := respHeader(b, b[0])
		if b[0] == '%' {
			n *= 2
		}
		for ; ok && n > 0; n-- {
			rest, ok = respSkip(rest)
		}
		return rest, ok
	case '$':
		_, rest, ok := respBulk(b)
		return rest, ok
	case '+', ':':
		_, rest, ok := respLine(b)
		return rest, ok
	}
	return nil, false
}
