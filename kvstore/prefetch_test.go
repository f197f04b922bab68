package kvstore

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestPrefetcherLoadsWhereProbesStart checks that the prefetcher reads ahead the
// entries the commands' lookups start at, in each command's database and at its first
// key's position, skips commands without a key, and stops at the first op that is not a
// plain command or does not decode.
func TestPrefetcherLoadsWhereProbesStart(t *testing.T) {
	s := storeOfKeys(t, []int{0, 3}, "a", "b", "c", "a-key-longer-than-sixteen-bytes")
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

	p := prefetcher{d: decoder{b: data}, ring: new([prefetchRing]decodedCmd)}
	p.before(s)
	if p.n != len(want) || !p.done {
		t.Fatalf("read ahead %d commands (done %v), want %d", p.n, p.done, len(want))
	}
	// Each command comes back decoded, with where the entry goes on after it.
	next := data
	ends := map[int]bool{} // where commands end
	for i, w := range want {
		c := p.next()
		if c == nil {
			t.Fatalf("op %d: not read ahead", i)
		}
		d := decoder{b: next[1:]}
		db, args := d.command()
		if c.db != db || !reflect.DeepEqual(c.args, args) || c.spec != Lookup(args[0]) || c.rest != len(d.b) {
			t.Fatalf("op %d: read ahead db %d %q spec %v rest %d, want db %d %q rest %d", i, c.db, c.args, c.spec, c.rest, db, args, len(d.b))
		}
		next = d.b
		ends[len(data)-len(next)] = true
		if got := aheadEntry(s, c); got != w {
			t.Fatalf("op %d: entry %p, want %p", i, got, w)
		}
	}
	if p.next() != nil {
		t.Fatal("more commands than the entry holds")
	}

	// Reading ahead takes a memcached command too, in database 0 whatever its encoding
	// says, and stops before an op that is not a plain command...
	mixed := AppendCommand(nil, 0, cmd("SET", "a", "1"))
	mixed = appendArgs(append(mixed, opMemcache), 3, cmd("mcdelete", "c", ""))
	mixed = AppendCommand(mixed, 0, cmd("SET", "b", "1"))
	mixed = AppendTx(mixed, nil, []TxCommand{{Args: cmd("SET", "c", "1")}})
	mixed = AppendCommand(mixed, 0, cmd("SET", "c", "1"))
	p = prefetcher{d: decoder{b: mixed}, ring: new([prefetchRing]decodedCmd)}
	p.before(s)
	if !p.done || p.n != 3 || p.d.b[0] != opTx {
		t.Fatalf("read ahead %d commands (done %v), stopped at kind %d", p.n, p.done, p.d.b[0])
	}
	p.next()
	if mc := p.next(); mc.db != 0 || mc.spec != mcCommands["mcdelete"] || aheadEntry(s, mc) != home(0, "c") {
		t.Fatalf("the memcached command read ahead: db %d spec %v", mc.db, mc.spec)
	}
	// ...and at one that does not decode, which it leaves to Apply.
	for cut := 1; cut < len(data); cut++ {
		p = prefetcher{d: decoder{b: data[:cut]}, ring: new([prefetchRing]decodedCmd)}
		for range 8 {
			p.before(s)
		}
		if !p.done {
			t.Fatalf("cut at %d: not done", cut)
		}
		// Apply runs what was read ahead, then decodes the cut command and fails.
		if err := s.Apply(Entry{Index: uint64(10 + cut), Data: data[:cut]}, nil); (err == nil) != ends[cut] {
			t.Fatalf("cut at %d (a command's end: %v): Apply: %v", cut, ends[cut], err)
		}
	}
}

// TestApplyRunsReadAheadCommandsInOrder applies entries longer than the ring of commands
// read ahead, with memcached commands (which it reads too, a known and an unknown one)
// and transactions (which it stops at) in between, and checks every reply and the store
// against the same commands applied one per entry.
func TestApplyRunsReadAheadCommandsInOrder(t *testing.T) {
	var ops [][]string
	for i := range 150 {
		switch {
		case i%37 == 36:
			ops = append(ops, nil) // a memcached set of "mc"
		case i%41 == 40:
			ops = append(ops, []string{}) // a memcached command this build does not know
		case i%29 == 28:
			ops = append(ops, []string{"MULTI", "INCR", "tx"})
		case i%3 == 0:
			ops = append(ops, []string{"RPUSH", "list", fmt.Sprint(i)})
		case i%3 == 1:
			ops = append(ops, []string{"INCRBY", fmt.Sprintf("n%d", i%5), fmt.Sprint(i)})
		default:
			ops = append(ops, []string{"SET", fmt.Sprintf("k%d", i%7), fmt.Sprint(i)})
		}
	}
	appendOp := func(b []byte, op []string) []byte {
		switch {
		case op == nil:
			return AppendMCStore(b, MCSet, []byte("mc"), []byte("v"), 0, 0, MCNoValue, MCNoValue)
		case len(op) == 0:
			return appendArgs(append(b, opMemcache), 0, cmd("mcnosuch", "mc"))
		case op[0] == "MULTI":
			return AppendTx(b, nil, []TxCommand{{Args: cmd(op[1:]...)}})
		}
		return AppendCommand(b, 0, cmd(op...))
	}
	one, all := New(), New()
	var wantReplies []any
	for i, op := range ops {
		w := &tree{}
		if err := one.Apply(Entry{Index: uint64(i + 1), Time: 1e12, Data: appendOp(nil, op)}, w); err != nil {
			t.Fatal(err)
		}
		wantReplies = append(wantReplies, w.out...)
	}
	var data []byte
	for _, op := range ops {
		data = appendOp(data, op)
	}
	w := &tree{}
	if err := all.Apply(Entry{Index: 1, Time: 1e12, Data: data}, w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(w.out, wantReplies) {
		t.Fatalf("replies differ:\n one entry: %v\n per op:    %v", w.out, wantReplies)
	}
	if one.Digest() != all.Digest() {
		t.Fatal("the store differs from the same commands applied one per entry")
	}
	for i, c := range all.prefetched {
		for _, a := range c.args[:cap(c.args)] {
			if a != nil {
				t.Fatalf("ring slot %d still refers to the entry", i)
			}
		}
	}
}

// aheadEntry is the key table entry the prefetcher prefetches for c, or nil.
func aheadEntry(s *Store, c *decodedCmd) *kent {
	var a tablesAhead
	a.add(s, c)
	var ents [prefetchAhead]*kent
	if got := a.entries(&ents); len(got) == 1 {
		return got[0]
	}
	return nil
}

// storeOfKeys is a store that holds each of keys in each of dbs.
func storeOfKeys(t *testing.T, dbs []int, keys ...string) *Store {
	s := New()
	var setup []byte
	for _, k := range keys {
		for _, db := range dbs {
			setup = AppendCommand(setup, db, cmd("SET", k, "v"))
		}
	}
	if err := s.Apply(Entry{Index: 1, Data: setup}, nil); err != nil {
		t.Fatal(err)
	}
	return s
}

func cmd(args ...string) [][]byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return b
}

// TestPrefetchEntriesFindsFirstKeys checks what PrefetchEntries loads: where the first
// command of each entry starts its probe, a memcached command's in database 0 whatever
// its encoding says, nothing for an entry that begins with another op, is empty or does
// not decode, at most prefetchAhead entries; and that it keeps no reference into them.
func TestPrefetchEntriesFindsFirstKeys(t *testing.T) {
	s := storeOfKeys(t, []int{0, 2}, "a", "b", "mc", "a-key-longer-than-sixteen-bytes")
	home := func(db int, key string) *kent { // where the probe starts, wherever the key is
		h := hashKey(key)
		tb := &s.shards[h%numShards].dbs[db].keys
		return &tb.ents[tagOf(h)&uint32(len(tb.ents)-1)]
	}
	one := func(db int, args ...string) []byte { return AppendCommand(nil, db, cmd(args...)) }
	two := append(one(2, "SET", "b", "1"), one(0, "SET", "a", "1")...)
	mc := AppendMCStore(nil, MCSet, []byte("mc"), []byte("1"), 0, 0, MCNoValue, MCNoValue)
	mcInDB2 := appendArgs([]byte{opMemcache}, 2, cmd("mcdelete", "mc", ""))
	tx := AppendTx(nil, nil, []TxCommand{{DB: 0, Args: cmd("SET", "a", "1")}})
	datas := [][]byte{
		one(0, "SET", "a", "1"),
		two, // its first command only
		mc,
		mcInDB2,
		tx,
		nil,
		one(0, "PING"),
		one(2, "GET", "a-key-longer-than-sixteen-bytes"),
		one(5, "SET", "a", "1"), // an empty database
		one(0, "SET", "b", "1")[:4],
	}
	want := []*kent{home(0, "a"), home(2, "b"), home(0, "mc"), home(0, "mc"), home(2, "a-key-longer-than-sixteen-bytes")}
	var ents [prefetchAhead]*kent
	if got := s.entriesAhead(datas, &ents); !slices.Equal(got, want) {
		t.Fatalf("entries ahead %p, want %p", got, want)
	}
	for _, a := range s.aheadArgs[:cap(s.aheadArgs)] {
		if a != nil {
			t.Fatal("the scratch still refers to an entry")
		}
	}
	many := make([][]byte, 3*prefetchAhead)
	for i := range many {
		many[i] = one(0, "SET", "a", "1")
	}
	if got := s.entriesAhead(many, &ents); len(got) != prefetchAhead {
		t.Fatalf("%d entries ahead of %d, want %d", len(got), len(many), prefetchAhead)
	}
	s.PrefetchEntries(datas) // and loads them without a fault
}

// TestPrefetchChangesNothing runs prefetch (assembly on amd64) over nothing, one entry,
// and every entry of a table, the last of its array among them, and prefetchTables over
// every table of the store, empty ones among them, and prefetchValues over every page of
// a table: they must neither fault nor write.
func TestPrefetchChangesNothing(t *testing.T) {
	s := storeOfKeys(t, []int{0}, "a", "b", "a-key-longer-than-sixteen-bytes")
	tb := &s.shards[hashKey("a")%numShards].dbs[0].keys
	all := make([]*kent, len(tb.ents))
	for i := range tb.ents {
		all[i] = &tb.ents[i]
	}
	before := slices.Clone(tb.ents)
	prefetch(nil)
	prefetch(all[:1])
	prefetch(all)
	var tables []*keyTable
	for i := range s.shards {
		for db := range s.shards[i].dbs {
			tables = append(tables, &s.shards[i].dbs[db].keys)
		}
	}
	prefetchTables(nil)
	prefetchTables(tables)
	prefetchBytes(nil)
	for lo := 0; lo < len(tb.ents); lo += frozenPage {
		prefetchValues(tb.ents[lo:min(lo+frozenPage, len(tb.ents))])
	}
	if !slices.Equal(tb.ents, before) || &tb.ents[0] != all[0] {
		t.Fatal("prefetch changed the table")
	}
	if i, ok := find(tb, hashKey("a"), "a"); !ok || tb.ents[i].str != "v" {
		t.Fatal("key a lost its value")
	}
}

// BenchmarkApplyOneCommandEntries1MKeys applies entries of one SET each to random keys
// of a million, as an applier gets them under redis-benchmark -P 1 (the entries read
// ahead with PrefetchEntries, or not, a window of 16 at a time, as the consensus
// appliers read ahead).
func BenchmarkApplyOneCommandEntries1MKeys(b *testing.B) {
	for _, ahead := range []bool{false, true} {
		b.Run(fmt.Sprintf("ahead=%v", ahead), func(b *testing.B) {
			s := New()
			const keys = 1 << 20
			var fill []byte
			for i := range keys {
				fill = AppendCommand(fill, 0, cmd("SET", fmt.Sprintf("key:%012d", i), "xxx"))
			}
			if err := s.Apply(Entry{Index: 1, Data: fill}, nil); err != nil {
				b.Fatal(err)
			}
			rnd := rand.New(rand.NewPCG(1, 2))
			datas := make([][]byte, keys) // each of its keys is a miss, the cache holding few of them
			for i := range datas {
				datas[i] = AppendCommand(nil, 0, cmd("SET", fmt.Sprintf("key:%012d", rnd.IntN(keys)), "yyy"))
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				j := i % len(datas)
				if ahead && j%16 == 0 {
					s.PrefetchEntries(datas[j:min(j+16, len(datas))])
				}
				if err := s.Apply(Entry{Index: uint64(i + 2), Data: datas[j]}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
