package mcproto

import (
	"testing"

	"github.com/nanokv/nanokv/kvstore"
)

// Item sizes, slab classes and key escapes as memcached 1.6.18 (default settings) showed
// them in lru_crawler metadump for the same items.
func TestMetadumpFieldsMatchMemcached(t *testing.T) {
	for _, c := range []struct {
		key       string
		flags     uint32
		vlen      int
		size, cls int
		escaped   string
	}{
		{"a", 0, 1, 61, 1, "a"},
		{"k%20x", 5, 3, 71, 1, "k%2520x"},
		{"big", 0, 200, 262, 6, "big"},
		{"sp\x01ce", 0, 1, 65, 1, "sp%01ce"},
		{"\xc3\xa9t\xe9", 0, 1, 64, 1, "%C3%A9t%E9"},
		{"x-y.z_~", 0, 1, 67, 1, "x-y.z_~"},
	} {
		size := kvstore.MCItemSize(len(c.key), c.flags, c.vlen)
		if size != c.size || slabClass(size) != c.cls || string(uriEncode(nil, c.key)) != c.escaped {
			t.Errorf("%q: size %d class %d escaped %q, want %d %d %q", c.key, size, slabClass(size), uriEncode(nil, c.key), c.size, c.cls, c.escaped)
		}
	}
	// memcached's stats slabs: 39 classes, 96 bytes to 512 KiB
	if len(slabClasses) != 39 || slabClasses[0] != 96 || slabClasses[5] != 304 || slabClasses[37] != 394840 || slabClasses[38] != 512<<10 {
		t.Errorf("slab classes %v", slabClasses)
	}
}
