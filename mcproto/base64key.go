package mcproto

import "encoding/base64"

// Binary keys (the meta commands' b flag, memcached 1.6.10+): the key token is base64,
// and the item's key is what it decodes to, any bytes at all. Clients send it for keys
// the text protocol cannot carry (Dalli, the Ruby client, for every key with whitespace
// or non-ASCII bytes); a k flag then returns the key encoded again, followed by b.

// errDecodeKey is memcached's reply to a b flag with a key that does not decode.
const errDecodeKey = "CLIENT_ERROR error decoding key"

// b64Value maps a byte to its 6-bit base64 value; b64Pad marks '=', b64Skip anything
// else.
const (
	b64Pad  = 0x40
	b64Skip = 0x80
)

var b64Value = func() (t [256]byte) {
	for i := range t {
		t[i] = b64Skip
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := 0; i < len(alphabet); i++ {
		t[alphabet[i]] = byte(i)
	}
	t['='] = b64Pad
	return t
}()

// decodeKey decodes a b-flagged key as memcached 1.6 does (its base64.c), which is more
// lenient than RFC 4648 in three ways clients can meet: bytes outside the alphabet are
// skipped, the bits past the last whole byte need not be zero, and decoding ends with the
// first block of four that holds padding. It refuses a count of alphabet and '=' bytes
// that is zero or not a multiple of four, and a block with more than two '='.
func decodeKey(enc []byte) ([]byte, bool) {
	n := 0
	for _, ch := range enc {
		if b64Value[ch] != b64Skip {
			n++
		}
	}
	if n == 0 || n%4 != 0 {
		return nil, false
	}
	out := make([]byte, 0, n/4*3)
	var block [4]byte
	filled, pad := 0, 0
	for _, ch := range enc {
		v := b64Value[ch]
		switch v {
		case b64Skip:
			continue
		case b64Pad:
			v = 0
			pad++
		}
		block[filled] = v
		if filled++; filled < 4 {
			continue
		}
		out = append(out, block[0]<<2|block[1]>>4, block[1]<<4|block[2]>>2, block[2]<<6|block[3])
		filled = 0
		if pad > 0 {
			if pad > 2 {
				return nil, false
			}
			return out[:len(out)-pad], true
		}
	}
	return out, true
}

// appendKey appends key as a reply's k flag shows it: as it is, or base64 and then the
// b flag when the command named it with b.
func appendKey(dst, key []byte, binary bool) []byte {
	if !binary {
		return append(dst, key...)
	}
	dst = base64.StdEncoding.AppendEncode(dst, key)
	return append(dst, " b"...)
}
