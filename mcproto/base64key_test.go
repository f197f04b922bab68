package mcproto

import (
	"bytes"
	"encoding/base64"
	"testing"
)

// decodeKey reads back every key base64 encodes, whatever its bytes, and never fails on
// any input in any other way than refusing it (TestProtocolReplies compares the lenient
// cases with memcached).
func FuzzDecodeKey(f *testing.F) {
	for _, s := range []string{"", "YQ==", "YnE=", "YnF=", "Yn!E=", "YnE=YQ==", "Y===", "====", "aGVsbG8gd29ybGQ", "\xff\x00=="} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if key, ok := decodeKey(base64.StdEncoding.AppendEncode(nil, b)); len(b) > 0 && (!ok || !bytes.Equal(key, b)) {
			t.Fatalf("decodeKey(encoded %q) = %q, %v", b, key, ok)
		}
		key, ok := decodeKey(b)
		if ok && (len(key) == 0 || len(key) > len(b)) {
			t.Fatalf("decodeKey(%q) = %q: a key is never empty, nor longer than its encoding", b, key)
		}
		if !ok && key != nil {
			t.Fatalf("decodeKey(%q) refused it but returned %q", b, key)
		}
	})
}

func TestDecodeKeyAsMemcached(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"YnE=", "bq", true},
		{"YnF=", "bq", true},           // bits past the last byte are ignored
		{"Yn!E=", "bq", true},          // bytes outside the alphabet are skipped
		{"YnE=YQ==", "bq", true},       // the first padded block ends the key
		{"YW=j", "a`", true},           // padding inside a block counts as zero bits
		{"YWJjZA==", "abcd", true},     //
		{"YnE", "", false},             // three characters
		{"Y===", "", false},            // three '='
		{"====", "", false},            //
		{"!!!!", "", false},            // nothing of the alphabet
		{"", "", false},                //
		{"YWJjZA", "", false},          // six characters
		{"YWJj\x00ZA==", "abcd", true}, // a NUL is one more byte outside the alphabet
	} {
		got, ok := decodeKey([]byte(c.in))
		if ok != c.ok || string(got) != c.want {
			t.Errorf("decodeKey(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
