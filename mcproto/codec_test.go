package mcproto

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func TestParseNumbersLikeMemcached(t *testing.T) {
	for _, c := range []struct {
		in   string
		u64  uint64
		ok64 bool
		i32  int64
		ok32 bool
	}{
		{"0", 0, true, 0, true},
		{"+7", 7, true, 7, true},
		{" 12", 12, true, 12, true},
		{"12\t", 12, true, 12, true},
		{"-0", 0, true, 0, true},
		{"-1", 0, false, -1, true},
		{"18446744073709551615", 18446744073709551615, true, 0, false}, // ERANGE for strtol
		{"18446744073709551616", 0, false, 0, false},
		{"2147483647", 2147483647, true, 2147483647, true},
		// safe_strtol parses a 64-bit long and stores its low 32 bits
		{"2147483648", 2147483648, true, -2147483648, true},
		{"4102444800", 4102444800, true, -192522496, true},
		{"4294967297", 4294967297, true, 1, true},
		{"-4294967295", 0, false, 1, true},
		{"9223372036854775807", 9223372036854775807, true, -1, true},
		{"9223372036854775808", 9223372036854775808, true, 0, false},
		{"-9223372036854775808", 0, false, 0, true},
		{"-9223372036854775809", 9223372036854775807, true, 0, false}, // strtoull wraps it
		{"", 0, false, 0, false},
		{"12a", 0, false, 0, false},
		{"x", 0, false, 0, false},
	} {
		u, ok := ParseUint64([]byte(c.in))
		if ok != c.ok64 || (ok && u != c.u64) {
			t.Errorf("ParseUint64(%q) = %d, %v", c.in, u, ok)
		}
		i, ok := ParseInt32([]byte(c.in))
		if ok != c.ok32 || (ok && i != c.i32) {
			t.Errorf("ParseInt32(%q) = %d, %v", c.in, i, ok)
		}
	}
	// client flags wrap at 32 bits, as memcached 1.6.18 stores them
	if v, ok := ParseUint32([]byte("4294967296")); !ok || v != 0 {
		t.Errorf("ParseUint32(2^32) = %d, %v", v, ok)
	}
}

func TestTooLargeMatchesMemcached(t *testing.T) {
	// measured on memcached 1.6.18 -I 1m: key "k", flags 0 → 1048516 bytes at most;
	// flags 1 → 1048512; a 10-byte key → 1048507
	for _, c := range []struct {
		key, vlen int
		flags     uint32
	}{{1, 1048516, 0}, {1, 1048512, 1}, {10, 1048507, 0}, {10, 1048503, 1}} {
		if TooLarge(c.key, c.flags, c.vlen, DefaultItemSizeMax) || !TooLarge(c.key, c.flags, c.vlen+1, DefaultItemSizeMax) {
			t.Errorf("limit for key %d flags %d is not %d", c.key, c.flags, c.vlen)
		}
	}
}

func TestParseIncompleteAndSwallow(t *testing.T) {
	lim := Limits{ItemSizeMax: 128, MaxLine: 1 << 20}
	in := []byte("set k 0 0 5\r\nhel")
	if _, _, need, err := Parse(in, lim, nil); !errors.Is(err, ErrIncomplete) || need != 20 {
		t.Fatalf("short data block: need %d, %v", need, err)
	}
	req, n, _, err := Parse([]byte("set k 0 0 100\r\n"), lim, nil)
	if err != nil || req.Kind != KindError || !req.TooLarge || req.Swallow != 102 || n != 15 {
		t.Fatalf("too large: %+v n=%d err=%v", req, n, err)
	}
	if _, _, _, err := Parse(bytes.Repeat([]byte("x"), 3000), lim, nil); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("a long line that is no get: %v", err)
	}
	if _, _, _, err := Parse(append([]byte("get "), bytes.Repeat([]byte("k "), 2000)...), lim, nil); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("a long multiget line: %v", err)
	}
}

// FuzzParseMemcache: no panic, progress on every request, nothing read past the input,
// and a storage request built from the inputs parses back to them.
func FuzzParseMemcache(f *testing.F) {
	f.Add([]byte("set k 0 0 1\r\nx\r\nget k\r\n"), []byte("key"), []byte("value"), uint32(3))
	f.Add([]byte("ms k 2 T0 F5 c k O1\r\nhi\r\nmg k v c f t s k O2 q\r\nmn\r\n"), []byte("\x10\x10k"), []byte(""), uint32(0))
	f.Add([]byte("cas k 1 2 3 4 noreply\r\nabc\r\nincr k 5\r\ndelete k 0 noreply\r\n"), []byte("k"), []byte("\r\n"), uint32(1))
	f.Add([]byte("ma k N0 J1 D2 MD q v t c\r\nmd k C5 q\r\nflush_all 10\r\ngat 1 a b\r\n"), []byte("a"), []byte("b"), uint32(9))
	f.Fuzz(func(t *testing.T, stream, key, value []byte, flags uint32) {
		lim := Limits{ItemSizeMax: 4096, MaxLine: 1 << 16}
		var scratch [][]byte
		b := stream
		for len(b) > 0 {
			req, n, need, err := Parse(b, lim, scratch)
			if err != nil {
				if errors.Is(err, ErrIncomplete) && need != 0 && need <= len(b) {
					t.Fatalf("incomplete but needs only %d of %d", need, len(b))
				}
				break
			}
			if n <= 0 || n > len(b) || req.Swallow < 0 {
				t.Fatalf("n=%d of %d, swallow %d", n, len(b), req.Swallow)
			}
			if req.Kind == KindMetaGet || req.Kind == KindMetaDelete || req.Kind == KindMetaArith {
				ParseMeta(req.Kind, req.Tokens[1], req.Tokens[2:])
			}
			scratch = req.Tokens[:0]
			b = b[n:]
			if req.Swallow > 0 {
				b = b[min(req.Swallow, len(b)):]
			}
		}
		// round trip
		if len(key) == 0 || len(key) > MaxKeyLen || bytes.ContainsAny(key, " \n\x00") {
			return
		}
		wire := fmt.Appendf(nil, "set %s %d 0 %d\r\n%s\r\n", key, flags, len(value), value)
		req, n, _, err := Parse(wire, lim, nil)
		if TooLarge(len(key), flags, len(value), lim.ItemSizeMax) {
			if err != nil || !req.TooLarge {
				t.Fatalf("too large item accepted: %+v %v", req, err)
			}
			return
		}
		// a key ending in '\r' loses it, as memcached's line reader strips one
		if key[len(key)-1] == '\r' {
			return
		}
		if err != nil || n != len(wire) || req.Kind != KindSet || !bytes.Equal(req.Key, key) || !bytes.Equal(req.Data, value) || req.Flags != flags {
			t.Fatalf("round trip of %q: %+v n=%d err=%v", wire, req, n, err)
		}
	})
}
