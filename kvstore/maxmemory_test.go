package kvstore

import (
	"reflect"
	"testing"
)

// An op after the over-maxmemory mark runs its scripts as Redis runs a script that
// started over maxmemory: the first denyoom call fails unless a write came before it,
// a script with allow-oom writes freely; the mark holds for that op alone, and two
// replicas applying the same entry agree.
func TestOverMemoryMarkRefusesAScriptsFirstWrite(t *testing.T) {
	evalArgs := func(script string) [][]byte { return [][]byte{[]byte("EVAL"), []byte(script), []byte("0")} }
	var entry []byte
	for _, script := range []string{
		"return redis.call('set', 'a', '1')",
		"return redis.pcall('set', 'a', '1')['err']",
		"redis.call('del', 'none') return redis.call('set', 'b', '1')",
		"#!lua flags=allow-oom\nreturn redis.call('set', 'c', '1')",
		"return redis.call('get', 'b')",
	} {
		entry = AppendCommand(AppendOverMemory(entry), 0, evalArgs(script))
	}
	entry = AppendCommand(entry, 0, evalArgs("return redis.call('set', 'd', '1')")) // unmarked
	tx := AppendTx(AppendOverMemory(nil), nil, []TxCommand{{Args: evalArgs("return redis.call('set', 'e', '1')")}, {Args: [][]byte{[]byte("SET"), []byte("f"), []byte("1")}}})
	want := []any{
		Err(ErrOOM + " script: " + sha1hex("return redis.call('set', 'a', '1')") + ", on @user_script:1."),
		ErrOOM,
		Status("OK"),
		Status("OK"),
		"1",
		Status("OK"),
		[]any{Err(ErrOOM + " script: " + sha1hex("return redis.call('set', 'e', '1')") + ", on @user_script:1."), Status("OK")},
	}
	var digests []uint64
	for range 2 {
		s := New()
		var w tree
		for i, data := range [][]byte{entry, tx} {
			if err := s.Apply(Entry{Index: uint64(i + 1), Time: 1e12, Data: data}, &w); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(w.out, want) {
			t.Fatalf("replies\n got %#v\nwant %#v", w.out, want)
		}
		for key, exists := range map[string]bool{"a": false, "b": true, "c": true, "d": true, "e": false, "f": true} {
			if _, ok := s.MCGet([]byte(key), 1e12); ok != exists {
				t.Errorf("key %s exists %v, want %v", key, ok, exists)
			}
		}
		digests = append(digests, s.Digest())
	}
	if digests[0] != digests[1] {
		t.Fatal("replicas diverged")
	}
}
