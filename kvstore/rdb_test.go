package kvstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"
)

// rdbFile is an RDB file as readRDB parses it.
type rdbFile struct {
	aux       map[string]string
	keys      map[string]rdbKey // by "db:key"
	functions []string
	selects   int
}

type rdbKey struct {
	payload  string // the object as DUMP would give it
	expireMs int64  // 0: none
}

// readRDB parses an RDB file of the opcodes WriteRDB writes, with the objects read as
// RESTORE reads them, and checks its version and checksum.
func readRDB(t *testing.T, b []byte) rdbFile {
	t.Helper()
	if !bytes.HasPrefix(b, []byte("REDIS0010")) || len(b) < 9+1+8 {
		t.Fatalf("not an RDB file of version 10: %q", b[:min(len(b), 16)])
	}
	if sum := binary.LittleEndian.Uint64(b[len(b)-8:]); sum != redisCRC64(b[:len(b)-8]) {
		t.Fatalf("checksum %x, want %x", sum, redisCRC64(b[:len(b)-8]))
	}
	f := rdbFile{aux: map[string]string{}, keys: map[string]rdbKey{}}
	r := &rdbReader{b: b[9 : len(b)-8]}
	db, expire := -1, int64(0)
	for !r.bad {
		switch op := r.next(1)[0]; op {
		case rdbOpAux:
			k := r.str()
			f.aux[k] = r.str()
		case rdbOpSelectDB:
			n, _ := r.length()
			db = int(n)
			f.selects++
		case rdbOpExpireTimeM:
			expire = int64(binary.LittleEndian.Uint64(r.next(8)))
		case rdbOpcodeFunction2:
			f.functions = append(f.functions, r.str())
		case rdbOpEOF:
			if len(r.b) != 0 {
				t.Fatalf("%d bytes after EOF", len(r.b))
			}
			return f
		default:
			if db < 0 {
				t.Fatalf("a key before any SELECTDB")
			}
			key := r.str()
			// the object as RESTORE reads it: its type, then its value
			or := &rdbReader{b: append([]byte{op}, r.b...)}
			it, ok := or.object()
			if !ok || or.bad || r.bad {
				t.Fatalf("key %q: object does not decode", key)
			}
			r.b = or.b
			p, _ := dumpPayload(it)
			f.keys[fmt.Sprintf("%d:%s", db, key)] = rdbKey{payload: string(p), expireMs: expire}
			expire = 0
		}
	}
	t.Fatal("the file ends without EOF")
	return f
}

// TestWriteRDB writes an RDB of a store with every type, TTLs, several databases and a
// function library, and reads it back: the same keys with the objects DUMP gives, the
// same deadlines, nothing expired, no memcached flags, the library.
func TestWriteRDB(t *testing.T) {
	h := newHarness(t)
	h.do("SET", "s", "plain")
	h.do("SET", "n", "12345")
	h.do("SET", "big", strings.Repeat("x", 20000))
	h.do("RPUSH", "l", "a", "b", "c")
	h.do("SADD", "set", "1", "2", "x")
	h.do("ZADD", "z", "1.5", "m", "-2", "n")
	h.do("HSET", "h", "f", "v", "g", "w")
	h.do("XADD", "st", "1-1", "f", "v")
	h.do("XGROUP", "CREATE", "st", "g", "0")
	h.do("XREADGROUP", "GROUP", "g", "c", "STREAMS", "st", ">")
	h.do("SET", "ttl", "v", "PX", "60000")
	h.do("SET", "gone", "v", "PX", "10")
	h.mc(AppendMCStore(nil, MCSet, []byte("mc"), []byte("item"), 42, 0, MCNoValue, MCNoValue))
	h.do("FUNCTION", "LOAD", testLibrary)
	h.db = 5
	h.do("SET", "s", "in five")
	h.do("LPUSH", "l5", "x")
	h.db = 0
	for i := range 300 { // keys in many shards, so that the databases interleave
		h.do("SET", fmt.Sprint("k", i), fmt.Sprint(i))
	}
	h.db = 5
	for i := range 300 {
		h.do("SET", fmt.Sprint("k", i), fmt.Sprint(i))
	}
	h.now += 1000 // "gone" has expired; no entry has deleted it yet

	var snap, rdb bytes.Buffer
	if err := h.s.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	if err := WriteRDB(&snap, &rdb, RDBOptions{RedisVersion: "7.0.15", Now: h.now, Keys: true, Functions: true}); err != nil {
		t.Fatal(err)
	}
	f := readRDB(t, rdb.Bytes())
	if f.aux["redis-ver"] != "7.0.15" || f.aux["redis-bits"] != "64" || f.aux["ctime"] != fmt.Sprint(h.now/1000) {
		t.Errorf("aux fields %v", f.aux)
	}
	if f.selects < 3 {
		t.Errorf("%d SELECTDBs: the databases' keys did not interleave, and the test checks less than it should", f.selects)
	}

	want := map[string]rdbKey{}
	for _, db := range []int{0, 5} {
		h.db = db
		for _, k := range h.do("KEYS", "*").([]any) {
			k := k.(string)
			p := h.do("DUMP", k).(string)
			var exp int64
			if ms := h.do("PEXPIRETIME", k).(int64); ms > 0 {
				exp = ms
			}
			want[fmt.Sprintf("%d:%s", db, k)] = rdbKey{payload: p, expireMs: exp}
		}
	}
	if _, ok := want["0:gone"]; ok {
		t.Fatal("the expired key is still found: the test's clock is wrong")
	}
	if len(f.keys) != len(want) {
		t.Errorf("%d keys in the RDB, want %d", len(f.keys), len(want))
	}
	for k, w := range want {
		if got, ok := f.keys[k]; !ok || got != w {
			t.Errorf("key %s: %+v (%v), want %+v", k, got, ok, w)
		}
	}
	if w := want["0:ttl"]; w.expireMs != 1_700_000_060_000 {
		t.Errorf("ttl key's deadline %d", w.expireMs)
	}
	if len(f.functions) != 1 || f.functions[0] != testLibrary {
		t.Errorf("functions %q", f.functions)
	}

	// A snapshot that does not decode is refused.
	if err := WriteRDB(strings.NewReader("NKVSNAP9"), &rdb, RDBOptions{Keys: true}); err == nil {
		t.Error("a bad magic was converted")
	}
	snap.Reset()
	h.s.Snapshot(&snap)
	if err := WriteRDB(bytes.NewReader(snap.Bytes()[:snap.Len()/2]), &rdb, RDBOptions{Now: h.now, Keys: true}); err == nil {
		t.Error("half a snapshot was converted")
	}
}

// TestWriteRDBParts writes the functions alone, and nothing, as REPLCONF rdb-filter-only
// asks.
func TestWriteRDBParts(t *testing.T) {
	h := newHarness(t)
	h.do("SET", "k", "v")
	h.do("FUNCTION", "LOAD", testLibrary)
	var snap, rdb bytes.Buffer
	h.s.Snapshot(&snap)
	if err := WriteRDB(&snap, &rdb, RDBOptions{Now: h.now, Functions: true}); err != nil {
		t.Fatal(err)
	}
	if f := readRDB(t, rdb.Bytes()); len(f.keys) != 0 || len(f.functions) != 1 {
		t.Errorf("functions only: %d keys, functions %q", len(f.keys), f.functions)
	}
	rdb.Reset()
	if err := WriteRDB(nil, &rdb, RDBOptions{Now: h.now}); err != nil {
		t.Fatal(err)
	}
	if f := readRDB(t, rdb.Bytes()); len(f.keys) != 0 || len(f.functions) != 0 {
		t.Errorf("nothing: %d keys, functions %q", len(f.keys), f.functions)
	}
}

// FuzzWriteRDB converts arbitrary snapshot bytes. The conversion reads a snapshot as
// Restore does, so it succeeds exactly when Restore does, and then writes a file that
// parses, checksum and all, with the keys Restore finds.
func FuzzWriteRDB(f *testing.F) {
	h := newHarness(&testing.T{})
	populate(h, 200)
	h.do("FUNCTION", "LOAD", testLibrary)
	var snap bytes.Buffer
	h.s.Snapshot(&snap)
	f.Add(snap.Bytes())
	f.Add([]byte(snapshotMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		var rdb bytes.Buffer
		err := WriteRDB(bytes.NewReader(b), &rdb, RDBOptions{Now: math.MinInt64, Keys: true, Functions: true})
		s := New()
		if rerr := s.Restore(bytes.NewReader(b)); (err == nil) != (rerr == nil) {
			t.Fatalf("WriteRDB: %v, Restore: %v", err, rerr)
		}
		if err != nil {
			return
		}
		got := readRDB(t, rdb.Bytes())
		want := 0
		for i := range s.shards {
			for db := range s.shards[i].dbs {
				s.shards[i].dbs[db].keys.each(func(k string, _ slot) bool {
					if _, ok := got.keys[fmt.Sprintf("%d:%s", db, k)]; !ok {
						t.Fatalf("key %q of db %d is not in the RDB", k, db)
					}
					want++
					return true
				})
			}
		}
		if len(got.keys) != want {
			t.Fatalf("%d keys in the RDB, %d restored", len(got.keys), want)
		}
	})
}
