package kvstore

import "testing"

// TestPrefetcherLoadsWhereProbesStart checks that the prefetcher reads ahead the
// entries the commands' lookups start at, in each command's database and at its first
// key's position, skips commands without a key, and stops at the first op that is not a
// plain command or does not decode.
func TestPrefetcherLoadsWhereProbesStart(t *testing.T) {
	s := New()
	var setup []byte
	for _, k := range []string{"a", "b", "c", "a-key-longer-than-sixteen-bytes"} {
		setup = AppendCommand(setup, 0, cmd("SET", k, "v"))
		setup = AppendCommand(setup, 3, cmd("SET", k, "v"))
	}
	if err := s.Apply(Entry{Index: 1, Data: setup}, nil); err != nil {
		t.Fatal(err)
	}
	home := func(db int, key string) *kent {
		h := hashKey(key)
		tb := &s.shards[h%numShards].dbs[db].keys
		i, ok := find(tb, h, key)
		if !ok {
			t.Fatalf("%q not in db %d", key, db)
		}
		if i != int(tagOf(h)&uint32(len(tb.ents)-1)) {
			t.Skipf("%q is not at its home entry; the test's keys need changing", key)
		}
		return &tb.ents[i]
	}

	var data []byte
	data = AppendCommand(data, 0, cmd("SET", "a", "1"))
	data = AppendCommand(data, 3, cmd("GETSET", "b", "2"))
	data = AppendCommand(data, 0, cmd("PING"))
	data = AppendCommand(data, 0, cmd("OBJECT", "ENCODING", "c"))
	data = AppendCommand(data, 0, cmd("NOSUCHCOMMAND", "a"))
	data = AppendCommand(data, 3, cmd("APPEND", "a-key-longer-than-sixteen-bytes", "x"))
	data = AppendCommand(data, 7, cmd("SET", "a", "1")) // an empty database
	want := []*kent{home(0, "a"), home(3, "b"), nil, home(0, "c"), nil, home(3, "a-key-longer-than-sixteen-bytes"), nil}

	p := prefetcher{d: decoder{b: data}}
	for i, w := range want {
		if p.d.b[0] != opCommand {
			t.Fatalf("op %d: kind %d", i, p.d.b[0])
		}
		p.d.b = p.d.b[1:]
		if got := p.keyEntry(s); got != w || p.d.err != nil {
			t.Fatalf("op %d: entry %p (err %v), want %p", i, got, p.d.err, w)
		}
	}
	if len(p.d.b) != 0 {
		t.Fatalf("%d bytes left", len(p.d.b))
	}

	// Reading ahead stops before an op that is not a plain command...
	mixed := AppendCommand(nil, 0, cmd("SET", "a", "1"))
	mixed = AppendCommand(mixed, 0, cmd("SET", "b", "1"))
	mixed = AppendMCStore(mixed, MCSet, []byte("c"), []byte("1"), 0, 0, MCNoValue, MCNoValue)
	mixed = AppendCommand(mixed, 0, cmd("SET", "c", "1"))
	p = prefetcher{d: decoder{b: mixed}}
	p.before(s)
	if !p.done || p.ahead != 2 || p.d.b[0] == opCommand {
		t.Fatalf("read ahead %d commands (done %v), stopped at kind %d", p.ahead, p.done, p.d.b[0])
	}
	// ...and at one that does not decode, as Apply does.
	for cut := 1; cut < len(data); cut++ {
		p = prefetcher{d: decoder{b: data[:cut]}}
		for range 8 {
			p.before(s)
		}
		if !p.done {
			t.Fatalf("cut at %d: not done", cut)
		}
	}
}

func cmd(args ...string) [][]byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return b
}
