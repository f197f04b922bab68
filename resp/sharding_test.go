package resp

import "testing"

// KeySlot against Redis Cluster's specification: CRC16/XMODEM's check value, its
// examples of hash tags, and the slot of foo a Redis Cluster names in its MOVED.
func TestKeySlot(t *testing.T) {
	if got := crc16([]byte("123456789")); got != 0x31c3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3", got)
	}
	for key, want := range map[string]int{
		"foo":       12182,
		"123456789": 0x31c3 & 16383,
		"":          0,
	} {
		if got := KeySlot([]byte(key)); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
	same := func(a, b string) {
		t.Helper()
		if KeySlot([]byte(a)) != KeySlot([]byte(b)) {
			t.Errorf("KeySlot(%q) = %d, KeySlot(%q) = %d: want equal", a, KeySlot([]byte(a)), b, KeySlot([]byte(b)))
		}
	}
	same("{user1000}.following", "user1000")
	same("{user1000}.followers", "user1000")
	same("foo{{bar}}zap", "{bar") // the tag ends at the first }
	same("foo{bar}{zap}", "bar")  // the first tag counts
	// an empty tag hashes the whole key, not the tag after it
	if got, whole := KeySlot([]byte("foo{}{bar}")), int(crc16([]byte("foo{}{bar}"))&16383); got != whole {
		t.Errorf("KeySlot(foo{}{bar}) = %d, want %d (the whole key)", got, whole)
	}
}
