package kvstore

import "testing"

// The expected replies are what redis-server 7.0.15 answers for the same commands.
func TestSort(t *testing.T) {
	h := newHarness(t)
	h.do("RPUSH", "l", "3", "1", "2", "10")
	h.do("MSET", "w_1", "30", "w_2", "20", "w_3", "10", "o_1", "one", "o_2", "two", "o_3", "three")
	h.do("HSET", "h_1", "f", "z")
	h.do("HSET", "h_2", "f", "y")
	h.do("SADD", "s", "b", "a", "c")
	h.do("RPUSH", "bad", "1", "x")

	h.expect([]string{"1", "2", "3", "10"}, "SORT", "l")
	h.expect([]string{"10", "3", "2", "1"}, "SORT", "l", "DESC")
	h.expect([]string{"1", "10", "2", "3"}, "SORT", "l", "ALPHA")
	h.expect([]string{"2", "3"}, "SORT", "l", "LIMIT", "1", "2")
	// a missing BY key scores 0
	h.expect([]string{"10", "3", "2", "1"}, "SORT", "l", "BY", "w_*")
	h.expect([]any{nil, "10", "three", "3", "two", "2", "one", "1"}, "SORT", "l", "BY", "w_*", "GET", "o_*", "GET", "#")
	// a BY without '*' keeps the native order; DESC reverses it, LIMIT windows it
	h.expect([]string{"3", "1", "2", "10"}, "SORT", "l", "BY", "nosort")
	h.expect([]string{"10", "2"}, "SORT", "l", "BY", "nosort", "DESC", "LIMIT", "0", "2")
	// hash fields; elements with no BY value sort first, in their input order
	h.expect([]string{"3", "10", "2", "1"}, "SORT", "l", "BY", "h_*->f", "ALPHA")
	h.expect([]any{"z", "y", nil, nil}, "SORT", "l", "GET", "h_*->f")
	h.expect([]string{"a", "b", "c"}, "SORT", "s", "ALPHA")
	h.expectErr("ERR One or more scores can't be converted into double", "SORT", "bad")

	h.expect(4, "SORT", "l", "STORE", "dst")
	h.expect([]string{"1", "2", "3", "10"}, "LRANGE", "dst", "0", "-1")
	h.expect(4, "SORT", "l", "GET", "o_*", "STORE", "dst2")
	h.expect([]string{"one", "two", "three", ""}, "LRANGE", "dst2", "0", "-1") // a missing GET stores ""
	h.expect(0, "SORT", "nokey", "STORE", "dst")
	h.expect(0, "EXISTS", "dst") // an empty result deletes the destination

	h.expectErr("ERR syntax error", "SORT_RO", "l", "STORE", "x")
	h.expectErr("ERR value is not an integer or out of range", "SORT", "l", "LIMIT", "a", "1")
	h.expectErr(ErrWrongType, "SORT", "w_1")
	h.expect([]string{"1", "2", "3", "10"}, "SORT_RO", "l")
}
