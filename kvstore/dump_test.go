package kvstore

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestRedisCRC64(t *testing.T) {
	// the check value of Redis's crc64.c
	if got := redisCRC64([]byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("crc64: %#x", got)
	}
}

// Payloads redis-server 7.0.15 DUMPed (compact encodings: integers, LZF, listpacks, a
// quicklist with a compressed node, an intset), restored here and read back.
func TestRestoreRedisPayloads(t *testing.T) {
	h := newHarness(t)
	for _, v := range []struct{ key, hex string }{
		{"int", "00c139300a009d94ea2793fc08b9"},
		{"neg", "00c290eefeff0a002875de7b13eb2800"},
		{"lzf", "00c3094064017878e057000178780a005db7f663bb08625f"},
		{"raw", "000b68656c6c6f20776f726c640a000bfc49b9a6c7a034"},
		{"lp", "120102212100000005008161020101f178ec038568656c6c6f06f4000000000001000009ff0a00a7a5f89cc30c278d"},
		{"plain", "120202c3407a633607362300000100f0282006007ae0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e0ff00e00e000246adff020e0e000000010085736d616c6c06ff0a008644891897ab073c"},
		{"is", "0bc32730040800000005200302d4feff60000001200b4000000240042000017011a01102f2052a200900000a0023817ce9c044439a"},
		{"zl", "111d1d0000000600816302842d696e6605816102010181620283322e3504ff0a003992339be11f323d"},
		{"hl", "1012120000000400816602817602816e020c01ff0a0001369481d35b8974"},
		{"hh", "0403026630c3094046017676e03900017676026632c3094046017676e03900017676026631c3094046017676e039000176760a00971ede89a47a003f"},
		{"st", "0202016201610a0075d99d835ef85f65"},
	} {
		p, err := hex.DecodeString(v.hex)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.do("RESTORE", v.key, "0", string(p)); got != Status("OK") {
			t.Fatalf("RESTORE %s: %#v", v.key, got)
		}
	}
	sorted := func(v any) any {
		s := v.([]any)
		ss := make([]string, len(s))
		for i := range s {
			ss[i] = s[i].(string)
		}
		return strings.Join(ss, " ")
	}
	for _, c := range []struct {
		args []string
		want any
	}{
		{[]string{"GET", "int"}, "12345"},
		{[]string{"GET", "neg"}, "-70000"},
		{[]string{"GET", "lzf"}, strings.Repeat("x", 100)},
		{[]string{"GET", "raw"}, "hello world"},
		{[]string{"LRANGE", "lp", "0", "-1"}, []any{"a", "1", "-5000", "hello", "1099511627776"}},
		{[]string{"LRANGE", "plain", "0", "-1"}, []any{strings.Repeat("z", 9000), "small"}},
		{[]string{"ZRANGE", "zl", "0", "-1", "WITHSCORES"}, []any{"c", math.Inf(-1), "a", 1.0, "b", 2.5}},
		{[]string{"HGET", "hl", "n"}, "12"},
		{[]string{"HGET", "hh", "f2"}, strings.Repeat("v", 70)},
	} {
		if got := h.do(c.args...); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %#v, want %#v", c.args, got, c.want)
		}
	}
	if got := sorted(h.do("SORT", "is")); got != "-300 1 2 70000 5000000000" {
		t.Errorf("intset: %s", got)
	}
	if got := sorted(h.do("SORT", "st", "ALPHA")); got != "a b" {
		t.Errorf("set: %s", got)
	}
}

// A stream redis-server 7.0.15 DUMPed: entries with and without the master's fields, a
// deleted entry, a group with a pending entry held by a consumer.
func TestRestoreRedisStream(t *testing.T) {
	p, _ := hex.DecodeString("13011000000000000000010000000000000001404444000000190002010101020181660281670200010201000100018176020a0105010301000101018177021401050100010101dfff020101856f74686572068178020601ff02020001010102030103677270010181ffffffffffffffff0100000000000000010000000000000001d893b923a2010000010105616c696365d893b923a201000001000000000000000100000000000000010a004a0233cc1112f56d")
	h := newHarness(t)
	if got := h.do("RESTORE", "st", "0", string(p)); got != Status("OK") {
		t.Fatalf("RESTORE: %#v", got)
	}
	want := []any{[]any{"1-1", []any{"f", "v", "g", "10"}}, []any{"2-0", []any{"other", "x"}}}
	if got := h.do("XRANGE", "st", "-", "+"); !reflect.DeepEqual(got, want) {
		t.Fatalf("XRANGE: %#v", got)
	}
	if got := h.do("XPENDING", "st", "grp"); !reflect.DeepEqual(got, []any{int64(1), "1-1", "1-1", []any{[]any{"alice", "1"}}}) {
		t.Fatalf("XPENDING: %#v", got)
	}
	// and back: the copy DUMPs as the restored stream does
	p2 := h.do("DUMP", "st").(string)
	if got := h.do("RESTORE", "st2", "0", p2); got != Status("OK") || h.do("DUMP", "st2") != p2 {
		t.Fatalf("round trip: %#v", got)
	}
}

// DUMP writes plain encodings; RESTORE reads them back to an equal value, TTL and all.
func TestDumpRestoreRoundTrip(t *testing.T) {
	h := newHarness(t)
	h.do("SET", "s", "value")
	h.do("RPUSH", "l", "a", "b", "c")
	h.do("SADD", "set", "x", "y")
	h.do("ZADD", "z", "1.5", "a", "-inf", "b")
	h.do("HSET", "h", "f", "v", "g", "w")
	h.do("XADD", "x", "1-1", "f", "v")
	h.do("XGROUP", "CREATE", "x", "g", "0")
	h.do("XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">")
	for _, k := range []string{"s", "l", "set", "z", "h", "x"} {
		p, ok := h.do("DUMP", k).(string)
		if !ok {
			t.Fatalf("DUMP %s: %#v", k, h.do("DUMP", k))
		}
		if got := h.do("RESTORE", k+"2", "100000", p); got != Status("OK") {
			t.Fatalf("RESTORE %s: %#v", k, got)
		}
		// the copy is built in the payload's order: it DUMPs to the same bytes
		if again := h.do("DUMP", k+"2"); again != p {
			t.Errorf("%s: the restored copy differs", k)
		}
		if ttl := h.do("PTTL", k+"2"); ttl != int64(100000) {
			t.Errorf("%s: PTTL %#v", k, ttl)
		}
	}
	if got := h.do("DUMP", "nosuch"); got != nil {
		t.Fatalf("DUMP of a missing key: %#v", got)
	}
}

// A Redis 6 payload: a hash in a ziplist (RDB 9), written by hand from the format.
func TestRestoreZiplist(t *testing.T) {
	var zl []byte
	entries := []byte{
		0x00, 0x01, 'f', // prevlen 0, a 1-byte string
		0x03, 0xfe, 0x85, // prevlen 3, an int8: -123
		0x03, 0xf3, // prevlen 3, the immediate 2
		0x02, 0xc0, 0x10, 0x27, // prevlen 2, an int16: 10000
	}
	zl = binary.LittleEndian.AppendUint32(zl, uint32(10+len(entries)+1))
	zl = binary.LittleEndian.AppendUint32(zl, 0) // the tail offset is not read
	zl = binary.LittleEndian.AppendUint16(zl, 4)
	zl = append(append(zl, entries...), 0xff)
	p := append([]byte{rdbHashZiplist}, rdbAppendString(nil, string(zl))...)
	p = binary.LittleEndian.AppendUint16(p, 9)
	p = binary.LittleEndian.AppendUint64(p, redisCRC64(p))
	h := newHarness(t)
	if got := h.do("RESTORE", "h", "0", string(p)); got != Status("OK") {
		t.Fatalf("RESTORE: %#v", got)
	}
	if got := h.do("HGET", "h", "f"); got != "-123" {
		t.Fatalf("HGET f: %#v", got)
	}
	if got := h.do("HGET", "h", "2"); got != "10000" {
		t.Fatalf("HGET 2: %#v", got)
	}
}

// RESTORE's errors in Redis's words and order; an expired TTL creates nothing.
func TestRestoreErrors(t *testing.T) {
	h := newHarness(t)
	h.do("SET", "k", "v")
	p := h.do("DUMP", "k").(string)
	bad := []byte(p)
	bad[1] ^= 1
	newer := []byte(p)
	binary.LittleEndian.PutUint16(newer[len(newer)-10:], rdbVersion+1)
	binary.LittleEndian.PutUint64(newer[len(newer)-8:], redisCRC64(newer[:len(newer)-8]))
	empty := binary.LittleEndian.AppendUint16([]byte{rdbSet, 0}, rdbVersion)
	empty = binary.LittleEndian.AppendUint64(empty, redisCRC64(empty))
	for _, c := range []struct {
		args []string
		want any
	}{
		{[]string{"RESTORE", "k", "0", p}, Err("BUSYKEY Target key name already exists.")},
		{[]string{"RESTORE", "k", "-1", p, "REPLACE"}, Err("ERR Invalid TTL value, must be >= 0")},
		{[]string{"RESTORE", "n", "0", string(bad)}, Err("ERR DUMP payload version or checksum are wrong")},
		{[]string{"RESTORE", "n", "0", string(newer)}, Err("ERR DUMP payload version or checksum are wrong")},
		{[]string{"RESTORE", "n", "0", string(empty)}, Err("ERR Bad data format")},
		{[]string{"RESTORE", "n", "0", p, "FREQ", "256"}, Err("ERR Invalid FREQ value, must be >= 0 and <= 255")},
		{[]string{"RESTORE", "n", "0", p, "IDLETIME", "1", "FREQ", "1"}, Err("ERR syntax error")},
		{[]string{"RESTORE", "k", "1", p, "ABSTTL", "REPLACE"}, Status("OK")},
		{[]string{"EXISTS", "k"}, int64(0)},
	} {
		if got := h.do(c.args...); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %#v, want %#v", c.args, got, c.want)
		}
	}
}

// Whatever the bytes, RESTORE answers and never panics or allocates beyond its input.
func FuzzRestorePayload(f *testing.F) {
	h := newHarness(f)
	h.do("RPUSH", "l", "a", "b")
	h.do("HSET", "h", "f", "v")
	h.do("ZADD", "z", "1", "m")
	for _, k := range []string{"l", "h", "z"} {
		f.Add([]byte(h.do("DUMP", k).(string)))
	}
	for _, v := range []string{"120102212100000005008161020101f178ec038568656c6c6f06f4000000000001000009ff0a00a7a5f89cc30c278d",
		"00c3094064017878e057000178780a005db7f663bb08625f",
		"13011000000000000000010000000000000001404444000000190002010101020181660281670200010201000100018176020a0105010301000101018177021401050100010101dfff020101856f74686572068178020601ff02020001010102030103677270010181ffffffffffffffff0100000000000000010000000000000001d893b923a2010000010105616c696365d893b923a201000001000000000000000100000000000000010a004a0233cc1112f56d"} {
		b, _ := hex.DecodeString(v)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		// with a valid checksum, so that the decoder sees the bytes
		if len(body) > 10 {
			body = body[:len(body)-10]
		}
		p := binary.LittleEndian.AppendUint16(append([]byte(nil), body...), rdbVersion)
		p = binary.LittleEndian.AppendUint64(p, redisCRC64(p))
		it, err := restorePayload(p)
		if err != nil {
			return
		}
		// what RESTORE accepts, DUMP writes, and that restores to the same
		p2, ok := dumpPayload(it)
		if !ok {
			t.Fatalf("restored a value DUMP cannot write: %v", it.typ)
		}
		it2, err := restorePayload(p2)
		if err != nil {
			t.Fatalf("DUMP wrote what RESTORE refuses (%v): %x", err, p2)
		}
		if p3, _ := dumpPayload(it2); string(p3) != string(p2) {
			t.Fatalf("DUMP, RESTORE, DUMP changed the payload: %x then %x", p2, p3)
		}
	})
}
