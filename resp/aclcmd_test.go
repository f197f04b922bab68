package resp

import "testing"

// spliceReplies puts replies among replies of every RESP2 and RESP3 type, and leaves a
// reply it cannot read, or one that is not an array of the replies that ran, as it is.
func TestSpliceReplies(t *testing.T) {
	ran := "*6\r\n+OK\r\n$4\r\na\r\nb\r\n*2\r\n:1\r\n_\r\n%1\r\n+k\r\n~1\r\n,1.5\r\n|1\r\n+a\r\n+b\r\n#t\r\n$-1\r\n"
	got := string(spliceReplies([]byte(ran), map[int][]byte{0: []byte("-E0\r\n"), 3: []byte("*1\r\n$2\r\nE3\r\n"), 8: []byte("-E8\r\n")}))
	want := "*9\r\n-E0\r\n+OK\r\n$4\r\na\r\nb\r\n*1\r\n$2\r\nE3\r\n*2\r\n:1\r\n_\r\n%1\r\n+k\r\n~1\r\n,1.5\r\n|1\r\n+a\r\n+b\r\n#t\r\n$-1\r\n-E8\r\n"
	if got != want {
		t.Fatalf("spliced:\n got %q\nwant %q", got, want)
	}
	for _, reply := range []string{"*-1\r\n", "_\r\n", "-EXECABORT x\r\n", "*2\r\n+OK\r\n", "*1\r\n$5\r\nab\r\n", "*1\r\n+OK\r\n+extra\r\n"} {
		if got := string(spliceReplies([]byte(reply), map[int][]byte{0: []byte("-E\r\n")})); got != reply {
			t.Errorf("spliceReplies(%q) = %q, want it unchanged", reply, got)
		}
	}
	if got := string(spliceReplies([]byte("*0\r\n"), map[int][]byte{0: []byte("-E0\r\n"), 1: []byte("-E1\r\n")})); got != "*2\r\n-E0\r\n-E1\r\n" {
		t.Errorf("every command denied: %q", got)
	}
}
