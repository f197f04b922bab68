package kvstore

import (
	"bytes"
	"strings"
	"testing"
)

// TestLookupFindsEveryCommandInAnyCase: every registered command is found by its name in
// lower, upper and mixed case (sort_ro among them, whose '_' must not fold); names that
// differ by a prefix or an extension are not.
func TestLookupFindsEveryCommandInAnyCase(t *testing.T) {
	if len(commands) < 100 || commands["sort_ro"] == nil || commands["incrbyfloat"] == nil {
		t.Fatalf("%d commands registered, without sort_ro or incrbyfloat", len(commands))
	}
	for name, spec := range commands {
		mixed := []byte(name)
		for i := 0; i < len(mixed); i += 2 {
			mixed[i] = bytes.ToUpper(mixed[i : i+1])[0]
		}
		for _, n := range [][]byte{[]byte(name), []byte(strings.ToUpper(name)), mixed} {
			if got := Lookup(n); got != spec {
				t.Errorf("Lookup(%q) = %v, want %s", n, got, name)
			}
		}
		for _, miss := range []string{name + "x", name[:len(name)-1], "x" + name, name + "\x00"} {
			if got := Lookup([]byte(miss)); got != nil && got.Name != miss {
				t.Errorf("Lookup(%q) = %s", miss, got.Name)
			}
		}
	}
	for _, n := range []string{"", "s", "nosuchcommand", strings.Repeat("get", 20), "SET\r\n", "gét"} {
		if got := Lookup([]byte(n)); got != nil {
			t.Errorf("Lookup(%q) = %s, want nil", n, got.Name)
		}
	}
}

func BenchmarkLookupSET(b *testing.B) {
	name := []byte("SET")
	for range b.N {
		if Lookup(name) == nil {
			b.Fatal("no set")
		}
	}
}
