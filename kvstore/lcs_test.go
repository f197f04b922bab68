package kvstore

import "testing"

// The expected replies are what redis-server 7.0.15 answers for the same commands.
func TestLCS(t *testing.T) {
	h := newHarness(t)
	h.do("MSET", "key1", "ohmytext", "key2", "mynewtext")
	h.do("RPUSH", "list", "a")
	h.expect("mytext", "LCS", "key1", "key2")
	h.expect(6, "LCS", "key1", "key2", "LEN")
	h.expect("", "LCS", "key1", "nokey")
	h.expect([]any{"matches", []any{
		[]any{[]any{4, 7}, []any{5, 8}},
		[]any{[]any{2, 3}, []any{0, 1}},
	}, "len", 6}, "LCS", "key1", "key2", "IDX")
	h.expect([]any{"matches", []any{
		[]any{[]any{4, 7}, []any{5, 8}, 4},
	}, "len", 6}, "LCS", "key1", "key2", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN")
	h.expect("mytext", "LCS", "key1", "key2", "WITHMATCHLEN") // ignored without IDX
	h.expectErr("ERR If you want both the length and indexes, please just use IDX.", "LCS", "key1", "key2", "LEN", "IDX")
	h.expectErr("ERR The specified keys must contain string values", "LCS", "key1", "list")
	h.expectErr("ERR syntax error", "LCS", "key1", "key2", "FOO")
	h.expectErr("ERR value is not an integer or out of range", "LCS", "key1", "key2", "MINMATCHLEN", "abc")
	h.resp3 = true
	if got := h.raw("LCS", "key1", "key2", "LEN", "WITHMATCHLEN"); got != ":6\r\n" {
		t.Fatalf("RESP3 LCS LEN: %q", got)
	}
	if got := h.raw("LCS", "key1", "nokey", "IDX"); got != "%2\r\n$7\r\nmatches\r\n*0\r\n$3\r\nlen\r\n:0\r\n" {
		t.Fatalf("RESP3 LCS IDX: %q", got)
	}
}
