package kvstore

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
)

// mc applies one memcached batch as a log entry and returns its replies.
func (h *harness) mc(batch []byte) []any {
	h.t.Helper()
	h.index++
	w := tree{}
	if err := h.s.Apply(Entry{Index: h.index, Term: 1, Time: h.now, Data: batch}, &w); err != nil {
		h.t.Fatalf("apply: %v", err)
	}
	return w.out
}

// mcCode applies one command and returns its reply code (or error line).
func (h *harness) mcCode(batch []byte) string {
	h.t.Helper()
	out := h.mc(batch)
	if len(out) != 1 {
		h.t.Fatalf("want one reply, got %#v", out)
	}
	switch r := out[0].(type) {
	case Err:
		return string(r)
	case []any:
		return string(r[0].(Status))
	}
	h.t.Fatalf("unexpected reply %#v", out[0])
	return ""
}

func (h *harness) mcGet(key string) (MCItem, bool) { return h.s.MCGet([]byte(key), h.now) }

func set(key, val string, flags uint32, exptime int64) []byte {
	return AppendMCStore(nil, MCSet, []byte(key), []byte(val), flags, exptime, MCNoValue, MCNoValue)
}

func TestMemcacheCommandsAreHiddenFromRESP(t *testing.T) {
	for _, name := range []string{"mcstore", "mcdelete", "mcincr", "mctouch", "mcflush", "mcflushall"} {
		if Lookup([]byte(name)) != nil {
			t.Fatalf("%s is reachable through Lookup", name)
		}
		for _, s := range Commands() {
			if s.Name == name {
				t.Fatalf("%s is listed by Commands", name)
			}
		}
	}
	h := newHarness(t)
	h.expectErr("ERR unknown command 'mcstore'", "mcstore", "set", "k", "v", "0", "0", "", "")
	// a RESP transaction cannot smuggle one in either
	h.applied("SET", "k", "v")
	if got := h.mcCode(AppendMCDelete(nil, []byte("k"), MCNoValue)); got != MCDeleted {
		t.Fatalf("delete: %s", got)
	}
}

// An item that expires as it is stored still gets a unique of its own, as memcached
// gives it one: a client that sends it back must not match the next item at the key.
func TestMemcacheExpiredAtBirthHasAUniqueOfItsOwn(t *testing.T) {
	h := newHarness(t)
	r := h.mc(set("k", "old", 0, -1))[0].([]any)
	if r[0] != Status(MCStored) || r[1] != nil || r[3] == int64(0) {
		t.Fatalf("set of an expired item: %#v", r)
	}
	h.mc(set("k", "new", 0, 0))
	it, ok := h.mcGet("k")
	if !ok || int64(it.CAS) == r[3] {
		t.Fatalf("the next item %+v has the expired one's unique %v", it, r[3])
	}
	if got := h.mcCode(AppendMCStore(nil, MCAppend, []byte("k"), []byte("x"), 0, 0, itoa(uint64(r[3].(int64))), MCNoValue)); got != MCExists {
		t.Fatalf("append with the expired item's unique: %s", got)
	}
}

func TestMemcacheSetGetFlagsAndRedisInterplay(t *testing.T) {
	h := newHarness(t)
	out := h.mc(set("k", "hello", 42, 0))
	r := out[0].([]any)
	if r[0] != Status(MCStored) || r[1] != "hello" || r[2] != int64(42) || r[4] != int64(-1) {
		t.Fatalf("set reply %#v", r)
	}
	it, ok := h.mcGet("k")
	if !ok || it.Value != "hello" || it.Flags != 42 || int64(it.CAS) != r[3] {
		t.Fatalf("get %+v %v", it, ok)
	}
	h.expect("hello", "GET", "k")
	h.applied("SET", "k", "redis")
	if it, _ := h.mcGet("k"); it.Flags != 0 || it.Value != "redis" {
		t.Fatalf("after Redis SET: %+v", it)
	}
	// other Redis types are invisible to memcached reads and refuse add
	h.applied("RPUSH", "l", "a")
	if _, ok := h.mcGet("l"); ok {
		t.Fatal("a list is visible to memcached")
	}
	if got := h.mcCode(AppendMCStore(nil, MCAdd, []byte("l"), []byte("x"), 0, 0, MCNoValue, MCNoValue)); got != MCNotStored {
		t.Fatalf("add over a list: %s", got)
	}
	if got := h.mcCode(set("l", "x", 0, 0)); got != MCStored {
		t.Fatalf("set over a list: %s", got)
	}
	h.expect("x", "GET", "l")
}

func TestMemcacheStorageModes(t *testing.T) {
	h := newHarness(t)
	st := func(mode MCStore, key, val string, cas string) string {
		return h.mcCode(AppendMCStore(nil, mode, []byte(key), []byte(val), 7, 0, cas, MCNoValue))
	}
	for _, c := range []struct {
		mode          MCStore
		key, val, cas string
		want          string
	}{
		{MCAdd, "a", "1", "", MCStored},
		{MCAdd, "a", "2", "", MCNotStored},
		{MCReplace, "b", "1", "", MCNotStored},
		{MCReplace, "a", "3", "", MCStored},
		{MCAppend, "a", "x", "", MCStored},
		{MCPrepend, "a", "y", "", MCStored},
		{MCAppend, "none", "x", "", MCNotStored},
		{MCPrepend, "none", "x", "", MCNotStored},
		{MCSet, "none", "x", "1", MCNotFound},
		{MCSet, "a", "x", "1", MCExists},
	} {
		if got := st(c.mode, c.key, c.val, c.cas); got != c.want {
			t.Fatalf("%s %s %s cas %q: %s, want %s", c.mode, c.key, c.val, c.cas, got, c.want)
		}
	}
	it, _ := h.mcGet("a")
	if it.Value != "y3x" || it.Flags != 7 {
		t.Fatalf("a = %+v", it)
	}
	if got := st(MCSet, "a", "new", itoa(it.CAS)); got != MCStored {
		t.Fatalf("cas with the right unique: %s", got)
	}
	if got := st(MCSet, "a", "newer", itoa(it.CAS)); got != MCExists {
		t.Fatalf("cas with a stale unique: %s", got)
	}
	// ms N: append creates a missing item
	if got := h.mcCode(AppendMCStore(nil, MCAppend, []byte("v"), []byte("z"), 0, 0, MCNoValue, "30")); got != MCStored {
		t.Fatalf("vivifying append: %s", got)
	}
	if it, ok := h.mcGet("v"); !ok || it.Value != "z" || it.SecondsLeft(h.now) != 30 {
		t.Fatalf("vivified %+v", it)
	}
}

func itoa(v uint64) string { return string(appendUint(nil, v)) }

func appendUint(b []byte, v uint64) []byte {
	if v >= 10 {
		b = appendUint(b, v/10)
	}
	return append(b, byte('0'+v%10))
}

func TestMemcacheExptime(t *testing.T) {
	h := newHarness(t)
	h.mc(set("rel", "v", 0, 100))
	h.mc(set("abs", "v", 0, h.now/1000+5000))
	h.mc(set("past", "v", 0, h.now/1000-10))
	h.mc(set("neg", "v", 0, -1))
	if it, ok := h.mcGet("rel"); !ok || it.SecondsLeft(h.now) != 100 {
		t.Fatalf("relative: %+v", it)
	}
	if it, ok := h.mcGet("abs"); !ok || it.SecondsLeft(h.now) != 5000 {
		t.Fatalf("absolute: %+v", it)
	}
	for _, k := range []string{"past", "neg"} {
		if _, ok := h.mcGet(k); ok {
			t.Fatalf("%s is visible", k)
		}
	}
	h.now += 100_000
	if _, ok := h.mcGet("rel"); ok {
		t.Fatal("rel outlived its TTL")
	}
	// touch: a new TTL, 0 for none, negative expires
	h.mc(set("t", "v", 0, 10))
	if got := h.mcCode(AppendMCTouch(nil, []byte("t"), 0)); got != MCTouched {
		t.Fatal(got)
	}
	if it, _ := h.mcGet("t"); it.Deadline != 0 {
		t.Fatalf("touch 0 left a deadline %+v", it)
	}
	if got := h.mcCode(AppendMCTouch(nil, []byte("t"), -1)); got != MCTouched {
		t.Fatal(got)
	}
	if got := h.mcCode(AppendMCTouch(nil, []byte("t"), 10)); got != MCNotFound {
		t.Fatal(got)
	}
}

func TestMemcacheIncrDecr(t *testing.T) {
	h := newHarness(t)
	incr := func(key string, decr bool, delta uint64) any {
		out := h.mc(AppendMCIncr(nil, []byte(key), decr, delta, MCNoValue, MCNoValue, 0, MCNoValue))
		if r, ok := out[0].([]any); ok {
			if r[0] != Status(MCOK) {
				return string(r[0].(Status))
			}
			return r[1]
		}
		return string(out[0].(Err))
	}
	// A number that fits the item replaces it in place, padded with spaces to its
	// length as memcached pads it (the frontend answers the number alone); a longer
	// one is a new item.
	pad := func(n string, to int) string { return n + strings.Repeat(" ", to-len(n)) }
	h.mc(set("n", "18446744073709551614", 3, 0))
	if got := incr("n", false, 3); got != pad("1", 20) {
		t.Fatalf("wrap: %q", got)
	}
	if got := incr("n", true, 5); got != pad("0", 20) {
		t.Fatalf("floor: %q", got)
	}
	h.mc(set("grow", "99", 0, 0))
	if got := incr("grow", false, 1); got != "100" {
		t.Fatalf("99 + 1: %q", got)
	}
	h.mc(set("junk", "5  x", 0, 0))
	if got := incr("junk", false, 1); got != "6   " {
		t.Fatalf("incr of '5  x': %q", got)
	}
	if it, _ := h.mcGet("n"); it.Flags != 3 {
		t.Fatalf("incr lost the flags: %+v", it)
	}
	for _, v := range []string{"", "abc", "12a", "-1", "123456789012345678901"} {
		h.mc(set("bad", v, 0, 0))
		if got := incr("bad", false, 1); got != MCNonNumeric {
			t.Fatalf("incr of %q: %v", v, got)
		}
	}
	h.mc(set("sp", " 12 ", 0, 0))
	if got := incr("sp", false, 1); got != "13  " {
		t.Fatalf("incr of ' 12 ': %v", got)
	}
	if got := incr("missing", false, 1); got != MCNotFound {
		t.Fatalf("missing: %v", got)
	}
	// An empty value, and one memcached keeps in chunks, are refused before the CAS
	// unique is compared; another value that is not a number after it.
	withCAS := func(key string) any {
		out := h.mc(AppendMCIncr(nil, []byte(key), false, 1, "999999", MCNoValue, 0, MCNoValue))
		if r, ok := out[0].([]any); ok {
			return string(r[0].(Status))
		}
		return string(out[0].(Err))
	}
	h.mc(set("empty", "", 0, 0))
	big := "5 " + strings.Repeat("x", MCChunkMax) // chunked whatever the key
	h.mc(set("big", big, 0, 0))
	h.mc(set("fits", big[:MCChunkMax-MCItemSize(len("fits"), 0, 0)], 0, 0)) // the largest unchunked
	for key, want := range map[string]string{"empty": MCNonNumeric, "big": MCNonNumeric, "fits": MCExists, "bad": MCExists} {
		if got := withCAS(key); got != want {
			t.Fatalf("incr of %s with another CAS unique: %v, want %v", key, got, want)
		}
	}
	if got := incr("fits", false, 1); got != pad("6", MCChunkMax-MCItemSize(len("fits"), 0, 0)) {
		t.Fatalf("incr of the largest unchunked item: %.20q", got)
	}
	// ma N J: create with the initial value, delta not applied
	out := h.mc(AppendMCIncr(nil, []byte("c"), false, 5, MCNoValue, "0", 10, MCNoValue))
	if r := out[0].([]any); r[0] != Status(MCStored) || r[1] != "10" {
		t.Fatalf("vivify: %#v", r)
	}
	h.expect(int64(11), "INCR", "c")
}

func TestMemcacheDeleteAndFlush(t *testing.T) {
	h := newHarness(t)
	h.mc(set("a", "1", 0, 0))
	it, _ := h.mcGet("a")
	if got := h.mcCode(AppendMCDelete(nil, []byte("a"), itoa(it.CAS+1))); got != MCExists {
		t.Fatal(got)
	}
	if got := h.mcCode(AppendMCDelete(nil, []byte("a"), MCNoValue)); got != MCDeleted {
		t.Fatal(got)
	}
	if got := h.mcCode(AppendMCDelete(nil, []byte("a"), MCNoValue)); got != MCNotFound {
		t.Fatal(got)
	}
	h.mc(set("a", "1", 0, 0))
	h.mc(set("b", "1", 0, 5))
	h.db = 1
	h.applied("SET", "other-db", "x")
	h.db = 0
	if got := h.mcCode(AppendMCFlush(nil, 0)); got != MCOK {
		t.Fatal(got)
	}
	if h.s.DBSize(0) != 0 || h.s.DBSize(1) != 1 {
		t.Fatalf("flush_all: db0 %d db1 %d", h.s.DBSize(0), h.s.DBSize(1))
	}
}

// A delayed flush_all as memcached 1.6 has it (mcFlushAllCmd): `flush_all N` empties
// the cache at the start of the second N-1 from now, and what is stored in that second
// is flushed too; the entries' clock decides, the same on every member.
func TestMemcacheDelayedFlushAll(t *testing.T) {
	h := newHarness(t)
	sec := h.now / 1000
	at := func(s, ms int64) { h.now = s*1000 + ms }
	at(sec, 300)
	h.mc(set("a", "1", 0, 0))
	h.mc(set("b", "1", 0, 100))
	h.db = 1
	h.applied("SET", "other-db", "x")
	h.db = 0
	if got := h.mcCode(AppendMCFlush(nil, 3)); got != MCOK {
		t.Fatal(got)
	}
	// nothing changes before the second sec+2: no TTL set, none moved
	if it, ok := h.mcGet("a"); !ok || it.SecondsLeft(h.now) != -1 {
		t.Fatalf("a right after flush_all 3: %+v %v", it, ok)
	}
	if it, ok := h.mcGet("b"); !ok || it.SecondsLeft(h.now) != 100 {
		t.Fatalf("b right after flush_all 3: %+v %v", it, ok)
	}
	at(sec+1, 999)
	h.mc(set("c", "1", 0, 0)) // stored before the flush's second: flushed with the rest
	if _, ok := h.mcGet("a"); !ok {
		t.Fatal("a flushed a second early")
	}
	at(sec+2, 0)
	for _, k := range []string{"a", "b", "c"} {
		if it, ok := h.mcGet(k); ok || !it.Flushed {
			t.Fatalf("%s in the flush's second: %+v %v", k, it, ok)
		}
	}
	h.expect(nil, "GET", "a") // database 0 is Redis's too
	h.expect([]any{}, "KEYS", "*")
	h.db = 1
	h.expect("x", "GET", "other-db")
	h.db = 0
	// a write in that second finds no key, and what it stores is flushed as well
	at(sec+2, 500)
	if got := h.mcCode(AppendMCStore(nil, MCAdd, []byte("a"), []byte("2"), 0, 0, MCNoValue, MCNoValue)); got != MCStored {
		t.Fatalf("add of a flushed key: %s", got)
	}
	if _, ok := h.mcGet("a"); ok {
		t.Fatal("stored in the flush's second, and still there")
	}
	b := h.restored() // the pending flush is in the snapshot and the digest
	if _, ok := b.mcGet("b"); ok {
		t.Fatal("the restored store lost the pending flush")
	}
	// the first entry of a later second empties database 0 and ends the flush
	for _, h := range []*harness{h, b} {
		h.now = (sec + 3) * 1000
		h.mc(set("d", "1", 0, 0))
		if h.s.DBSize(0) != 1 || h.s.DBSize(1) != 1 || h.s.mcFlushLive.Load() != 0 {
			t.Fatalf("after the flush's second: db0 %d db1 %d, pending %d", h.s.DBSize(0), h.s.DBSize(1), h.s.mcFlushLive.Load())
		}
		if _, ok := h.mcGet("d"); !ok {
			t.Fatal("stored after the flush, and gone")
		}
	}
	if h.s.Digest() != b.s.Digest() {
		t.Fatal("the restored store went another way")
	}

	// flush_all 0 (or negative) flushes now and cancels a pending one; a later delay
	// replaces an earlier one; flush_all 1 flushes now and the rest of this second
	for _, tc := range []struct {
		flushes []int64
		gone    bool // the item stored before, 10 s later
	}{
		{[]int64{5, 0}, true},
		{[]int64{5, -1}, true},
		{[]int64{3, 100}, false},
		{[]int64{100, 3}, true},
		{[]int64{sec + 4}, true}, // absolute: the second before it
		{[]int64{sec + 100}, false},
		{[]int64{mcMaxRelative}, false}, // 30 days is still relative
	} {
		at(sec+4, 100)
		h.mcCode(AppendMCFlush(nil, 0))
		h.mc(set("k", "1", 0, 0))
		for _, f := range tc.flushes {
			h.mcCode(AppendMCFlush(nil, f))
		}
		after := set("later", "1", 0, 0) // stored right after the flushes
		h.mc(after)
		at(sec+14, 0)
		if _, ok := h.mcGet("k"); ok == tc.gone {
			t.Errorf("flush_all %v: k there %v", tc.flushes, ok)
		}
		_, kept := h.mcGet("later")
		if f := tc.flushes[len(tc.flushes)-1]; f <= 0 && !kept {
			t.Errorf("flush_all %v: what is stored after flush_all %d is gone", tc.flushes, f)
		}
	}
	at(sec+20, 400)
	h.mc(set("k", "1", 0, 0))
	h.mcCode(AppendMCFlush(nil, 1))
	if h.s.DBSize(0) != 0 {
		t.Fatal("flush_all 1 left items")
	}
	h.mc(set("k", "1", 0, 0))
	if _, ok := h.mcGet("k"); ok {
		t.Fatal("stored in the second of flush_all 1, and there")
	}
	at(sec+21, 0)
	h.mc(set("k", "1", 0, 0))
	if _, ok := h.mcGet("k"); !ok {
		t.Fatal("stored a second after flush_all 1, and gone")
	}
}

// Logs written before mcflushall carry mcflush, which replays as it applied then: a
// delay gives every item the flush's deadline as its TTL, unless it expires sooner.
func TestMemcacheFlushOfOlderLogs(t *testing.T) {
	h := newHarness(t)
	h.mc(set("a", "1", 0, 0))
	h.mc(set("b", "1", 0, 5))
	h.mc(set("c", "1", 0, 100))
	if got := h.mcCode(AppendMemcache(nil, [][]byte{[]byte("mcflush"), []byte("10")})); got != MCOK {
		t.Fatal(got)
	}
	if it, _ := h.mcGet("b"); it.SecondsLeft(h.now) != 5 {
		t.Fatalf("a delayed flush extended a TTL: %+v", it)
	}
	for _, k := range []string{"a", "c"} {
		if it, _ := h.mcGet(k); it.SecondsLeft(h.now) != 10 {
			t.Fatalf("%s after flush_all 10: %+v", k, it)
		}
	}
	h.mcCode(AppendMemcache(nil, [][]byte{[]byte("mcflush"), []byte("0")}))
	if h.s.DBSize(0) != 0 {
		t.Fatal("mcflush 0 left items")
	}
}

func TestMemcacheStateIsInSnapshotAndDigest(t *testing.T) {
	build := func() *Store {
		h := newHarness(t)
		h.mc(set("a", "1", 99, 0))
		h.mc(set("b", "2", 0, 30))
		h.mcCode(AppendMCFlush(nil, 60))
		h.mc(AppendMCIncr(nil, []byte("a"), false, 1, MCNoValue, MCNoValue, 0, MCNoValue))
		return h.s
	}
	a, b := build(), build()
	if a.Digest() != b.Digest() {
		t.Fatal("two stores applying the same memcached entries differ")
	}
	var snap bytes.Buffer
	if err := a.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	c := New()
	if err := c.Restore(&snap); err != nil {
		t.Fatal(err)
	}
	if c.Digest() != a.Digest() {
		t.Fatal("restored store differs")
	}
	ga, _ := a.MCGet([]byte("a"), 0)
	gc, _ := c.MCGet([]byte("a"), 0)
	ga.Idle, ga.Fetched, gc.Idle, gc.Fetched = 0, false, 0, false // each member's own
	if !reflect.DeepEqual(ga, gc) || gc.Flags != 99 {
		t.Fatalf("restored item %+v, want %+v", gc, ga)
	}
	// the flags are part of the digest
	h := newHarness(t)
	h.mc(set("a", "1", 1, 0))
	d1 := h.s.Digest()
	h2 := newHarness(t)
	h2.mc(set("a", "1", 2, 0))
	if d1 == h2.s.Digest() {
		t.Fatal("flags are not in the digest")
	}
}

func TestMemcacheMalformedInternalArgs(t *testing.T) {
	h := newHarness(t)
	bad := AppendMemcache(nil, [][]byte{[]byte("mcstore"), []byte("set"), []byte("k"), []byte("v"), []byte("x"), []byte("0"), nil, nil})
	if got := h.mcCode(bad); got != "SERVER_ERROR bad internal command" {
		t.Fatal(got)
	}
	if got := h.mcCode(AppendMemcache(nil, [][]byte{[]byte("nosuch")})); got != "ERROR" {
		t.Fatal(got)
	}
}

// An item a meta command with b stored is marked binary, as memcached 1.6 marks it
// (ITEM_KEY_BINARY): the mark stays while the item does (a touch, a counter changed in
// place) and is gone with an item made anew (a counter that grows, a joined append, a
// vivified counter, a store without b). It is replicated state: in the snapshot and the
// digest.
func TestMemcacheBinaryKeyMark(t *testing.T) {
	h := newHarness(t)
	store := func(mode MCStore, key, val string, bin bool) string {
		t.Helper()
		return h.mcCode(AppendMCMetaStore(nil, mode, []byte(key), []byte(val), 0, bin, false, 0, MCNoValue, MCNoValue))
	}
	marked := func(key string) bool {
		t.Helper()
		it, ok := h.mcGet(key)
		if !ok {
			t.Fatalf("%s is missing", key)
		}
		return it.BinaryKey
	}
	incr := func(key string, decr bool) {
		t.Helper()
		if got := h.mcCode(AppendMCIncr(nil, []byte(key), decr, 1, MCNoValue, MCNoValue, 0, MCNoValue)); got != MCOK {
			t.Fatalf("incr %s: %s", key, got)
		}
	}
	store(MCSet, "k", "9", true)
	if !marked("k") {
		t.Fatal("ms with b stored an unmarked item")
	}
	h.mcCode(AppendMCTouch(nil, []byte("k"), 100))
	incr("k", true) // 9 -> 8, in place
	if !marked("k") {
		t.Fatal("a touch or a counter changed in place lost the mark")
	}
	store(MCSet, "k", "9", true)
	incr("k", false) // 9 -> 10: a new item
	if marked("k") {
		t.Fatal("a counter that grew kept the mark")
	}
	store(MCSet, "k", "x", true)
	store(MCAppend, "k", "y", true)
	if marked("k") {
		t.Fatal("an append kept the mark")
	}
	store(MCReplace, "k", "x", false)
	if marked("k") {
		t.Fatal("a store without b marked the item")
	}
	h.mc(AppendMCIncr(nil, []byte("n"), false, 1, MCNoValue, "0", 5, MCNoValue))
	if marked("n") {
		t.Fatal("a vivified counter is marked (memcached 1.6.18 does not mark it)")
	}

	store(MCSet, "k", "x", true)
	if it, _ := restoredCopy(t, h.s).MCGet([]byte("k"), h.now); !it.BinaryKey {
		t.Fatal("a restored snapshot lost the mark")
	}
	h2 := newHarness(t)
	h2.mc(AppendMCMetaStore(nil, MCSet, []byte("k"), []byte("x"), 0, false, false, 0, MCNoValue, MCNoValue))
	h3 := newHarness(t)
	h3.mc(AppendMCMetaStore(nil, MCSet, []byte("k"), []byte("x"), 0, true, false, 0, MCNoValue, MCNoValue))
	if h2.s.Digest() == h3.s.Digest() {
		t.Fatal("the mark is not in the digest")
	}
}

// TestMemcacheStaleAndWon covers the marks behind memcached's anti-dogpiling as state
// the log decides: mcmget wins a token once (WON, then TOUCHED with the mark), vivifies
// a miss, leaves a key of another Redis type alone; mcinvalidate marks an item stale,
// frees its token and moves its CAS unique; ms with I and an older unique stores a
// stale value that keeps the TTL and the token. The marks survive a snapshot and are
// in the digest.
func TestMemcacheStaleAndWon(t *testing.T) {
	h := newHarness(t)
	mget := func(key, recache string) string {
		t.Helper()
		return h.mcCode(AppendMCMetaGet(nil, []byte(key), MCNoValue, MCNoValue, recache, true))
	}
	marks := func(key string) (stale, won bool) {
		t.Helper()
		it, ok := h.mcGet(key)
		if !ok {
			t.Fatalf("%s is missing", key)
		}
		return it.Stale, it.Won
	}

	if got := h.mcCode(AppendMCMetaGet(nil, []byte("v"), MCNoValue, "30", MCNoValue, true)); got != MCWon {
		t.Fatalf("mg N of a miss: %s, want %s", got, MCWon)
	}
	if it, _ := h.mcGet("v"); it.Value != "" || !it.Won || it.Stale || it.SecondsLeft(h.now) != 30 {
		t.Fatalf("vivified item %+v", it)
	}
	if got := h.mcCode(AppendMCMetaGet(nil, []byte("v"), MCNoValue, "30", MCNoValue, true)); got != MCTouched {
		t.Fatalf("mg N of the vivified item: %s, want %s (its token is won)", got, MCTouched)
	}

	h.mc(set("k", "v", 0, 100))
	if got := mget("k", "50"); got != MCTouched {
		t.Fatalf("R50 with 100 s left: %s", got)
	}
	if got := mget("k", "101"); got != MCWon {
		t.Fatalf("R101 with 100 s left: %s", got)
	}
	if got := mget("k", "101"); got != MCTouched {
		t.Fatalf("second R101: %s (the token is won once)", got)
	}
	before, _ := h.mcGet("k")
	if got := h.mcCode(AppendMCInvalidate(nil, []byte("k"), MCNoValue, MCNoValue)); got != MCDeleted {
		t.Fatalf("md I: %s", got)
	}
	it, _ := h.mcGet("k")
	if !it.Stale || it.Won || it.CAS == before.CAS || it.SecondsLeft(h.now) != 100 {
		t.Fatalf("after md I: %+v (before %+v)", it, before)
	}
	if got := mget("k", MCNoValue); got != MCWon {
		t.Fatalf("mg of a stale item: %s, want %s", got, MCWon)
	}
	won, _ := h.mcGet("k")
	if won.CAS != it.CAS {
		t.Fatal("winning the token moved the CAS unique")
	}
	if got := h.mcCode(AppendMCMetaStore(nil, MCSet, []byte("k"), []byte("new"), 7, false, true, 500, "1", MCNoValue)); got != MCStored {
		t.Fatalf("ms I with an older unique: %s", got)
	}
	if it, _ := h.mcGet("k"); it.Value != "new" || it.Flags != 7 || !it.Stale || !it.Won || it.SecondsLeft(h.now) != 100 {
		t.Fatalf("stale store: %+v", it)
	}
	if got := h.mcCode(AppendMCMetaStore(nil, MCSet, []byte("k"), []byte("x"), 0, false, true, 0, "99999999", MCNoValue)); got != MCExists {
		t.Fatalf("ms I with a newer unique: %s", got)
	}
	if got := h.mcCode(AppendMCMetaStore(nil, MCSet, []byte("k"), []byte("x"), 0, false, false, 0, "1", MCNoValue)); got != MCExists {
		t.Fatalf("ms with an older unique, no I: %s", got)
	}

	h.do("RPUSH", "list", "a")
	for _, op := range [][]byte{
		AppendMCMetaGet(nil, []byte("list"), MCNoValue, "30", MCNoValue, true),
		AppendMCIncr(nil, []byte("list"), false, 1, MCNoValue, "30", 5, MCNoValue),
		AppendMCInvalidate(nil, []byte("list"), MCNoValue, MCNoValue),
	} {
		if got := h.mcCode(op); got != MCNotFound {
			t.Fatalf("%q on a list: %s, want %s", op, got, MCNotFound)
		}
	}
	if got := h.do("LLEN", "list"); got != int64(1) {
		t.Fatalf("the list after memcached's vivifying commands: LLEN %v", got)
	}

	if it, _ := restoredCopy(t, h.s).MCGet([]byte("k"), h.now); !it.Stale || !it.Won {
		t.Fatalf("restored item %+v lost its marks", it)
	}
	h.mcCode(AppendMCInvalidate(nil, []byte("k"), MCNoValue, MCNoValue)) // frees the token
	d := h.s.Digest()
	h.mcCode(AppendMCMetaGet(nil, []byte("k"), MCNoValue, MCNoValue, MCNoValue, true))
	if h.s.Digest() == d {
		t.Fatal("the won token is not in the digest")
	}
	if stale, won := marks("k"); !stale || !won {
		t.Fatal("mg did not win the stale item")
	}
}

// restoredCopy is a store restored from a snapshot of s, which must have s's digest.
func restoredCopy(t *testing.T, s *Store) *Store {
	t.Helper()
	var snap bytes.Buffer
	if err := s.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	c := restored(t, &snap)
	if c.Digest() != s.Digest() {
		t.Fatal("restored store differs")
	}
	return c
}

// A snapshot from before the pending flush_all was in it (NKVSNAP5) restores with none.
func TestSnapshotV5Restores(t *testing.T) {
	h := newHarness(t)
	h.mc(set("a", "1", 7, 0))
	h.applied("SET", "b", "2")
	var snap bytes.Buffer
	if err := h.s.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	b := snap.Bytes()
	head := len(snapshotMagic) + len(binary.AppendUvarint(nil, h.s.applied)) + len(binary.AppendUvarint(nil, h.s.ver))
	if b[head] != 0 {
		t.Fatalf("no flush pending, and the header says %d", b[head])
	}
	v5 := append(append([]byte(snapshotMagicV5), b[len(snapshotMagic):head]...), b[head+1:]...)
	c := New()
	if err := c.Restore(bytes.NewReader(v5)); err != nil {
		t.Fatal(err)
	}
	if c.Digest() != h.s.Digest() {
		t.Fatal("the NKVSNAP5 snapshot restored another state")
	}
}
