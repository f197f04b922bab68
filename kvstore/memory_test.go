package kvstore

import "testing"

func TestMemoryUsage(t *testing.T) {
	h := newHarness(t)
	usage := func(args ...string) any {
		t.Helper()
		bargs := [][]byte{[]byte("MEMORY"), []byte("USAGE")}
		for _, a := range args {
			bargs = append(bargs, []byte(a))
		}
		var w tree
		h.s.ReadSpec(MemoryUsageSpec, 0, h.now, bargs, &w)
		return w.out[0]
	}
	h.do("SET", "s", "hello")
	h.do("SET", "big", string(make([]byte, 1000)))
	h.do("RPUSH", "l", "a", "b", "c")
	small, big, list := usage("s"), usage("big"), usage("l")
	if small.(int64) < 5 || big.(int64)-small.(int64) != 995 || list.(int64) <= small.(int64) {
		t.Fatalf("usage: string %v, 1000-byte string %v, list %v", small, big, list)
	}
	h.do("EXPIRE", "s", "100")
	if got := usage("s"); got.(int64) <= small.(int64) {
		t.Fatalf("a TTL costs nothing: %v", got)
	}
	for _, c := range []struct {
		args []string
		want any
	}{
		{[]string{"nosuch"}, nil},
		{[]string{"s", "SAMPLES", "0"}, usage("s")},
		{[]string{"s", "SAMPLES", "x"}, Err(ErrNotInteger)},
		{[]string{"s", "SAMPLES", "-1"}, Err(ErrSyntax)},
		{[]string{"s", "SAMPLES"}, Err(ErrSyntax)},
		{[]string{"s", "FOO"}, Err(ErrSyntax)},
	} {
		if got := usage(c.args...); got != c.want {
			t.Errorf("%q: %#v, want %#v", c.args, got, c.want)
		}
	}
}
