package resp

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func parseAll(t *testing.T, in string, lim ParseLimits) ([][]string, error) {
	t.Helper()
	b := []byte(in)
	var out [][]string
	for len(b) > 0 {
		args, n, _, err := ParseCommand(b, nil, lim)
		if err != nil {
			return out, err
		}
		if len(args) > 0 {
			var s []string
			for _, a := range args {
				s = append(s, string(a))
			}
			out = append(out, s)
		}
		b = b[n:]
	}
	return out, nil
}

func TestParseMultibulk(t *testing.T) {
	got, err := parseAll(t, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n", ParseLimits{})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"GET", "k"}, {"SET", "k", ""}}
	if strings.Join(flat(got), "|") != strings.Join(flat(want), "|") || len(got) != 2 {
		t.Fatalf("got %q", got)
	}
}

func flat(x [][]string) []string {
	var out []string
	for _, a := range x {
		out = append(out, strings.Join(a, " "))
	}
	return out
}

func TestParseEmptyRequestsAreIgnored(t *testing.T) {
	for _, in := range []string{"*0\r\n", "*-1\r\n", "\r\n", "\n", "   \r\n"} {
		args, n, _, err := ParseCommand([]byte(in), nil, ParseLimits{})
		if err != nil || len(args) != 0 || n != len(in) {
			t.Fatalf("%q: args %q n %d err %v", in, args, n, err)
		}
	}
}

func TestParseInline(t *testing.T) {
	cases := map[string][]string{
		"PING\r\n":                   {"PING"},
		"set a b\n":                  {"set", "a", "b"},
		"set \"a b\" 'c d'\r\n":      {"set", "a b", "c d"},
		"set k \"\\x41\\n\\t\"\r\n":  {"set", "k", "A\n\t"},
		"set k 'it\\'s'\r\n":         {"set", "k", "it's"},
		"  lots   of   spaces  \r\n": {"lots", "of", "spaces"},
		"set k \"\"\r\n":             {"set", "k", ""},
	}
	for in, want := range cases {
		got, err := parseAll(t, in, ParseLimits{})
		if err != nil || len(got) != 1 || strings.Join(got[0], "\x00") != strings.Join(want, "\x00") {
			t.Errorf("%q: got %q err %v, want %q", in, got, err, want)
		}
	}
}

func TestParseErrorsMatchRedis(t *testing.T) {
	cases := map[string]string{
		"*abc\r\n":               "Protocol error: invalid multibulk length",
		"*3000000000\r\n":        "Protocol error: invalid multibulk length",
		"*1\r\nx":                "Protocol error: expected '$', got 'x'",
		"*1\r\n$-5\r\n":          "Protocol error: invalid bulk length",
		"*1\r\n$536870913\r\n":   "Protocol error: invalid bulk length",
		"*1\r\n$x\r\n":           "Protocol error: invalid bulk length",
		"set \"unterminated\r\n": "Protocol error: unbalanced quotes in request",
		"set \"a\"b\r\n":         "Protocol error: unbalanced quotes in request",
		"*1\r\n$" + strings.Repeat("1", InlineMax+1): "Protocol error: too big bulk count string",
		"*" + strings.Repeat("1", InlineMax+1):       "Protocol error: too big mbulk count string",
		strings.Repeat("a", InlineMax+1):             "Protocol error: too big inline request",
	}
	for in, want := range cases {
		_, _, _, err := ParseCommand([]byte(in), nil, ParseLimits{})
		var pe *ProtocolError
		if !errors.As(err, &pe) || pe.Msg != want {
			t.Errorf("%.40q: got %v, want %q", in, err, want)
		}
	}
}

func TestParseUnauthenticatedLimits(t *testing.T) {
	lim := ParseLimits{Unauth: true}
	_, _, _, err := ParseCommand([]byte("*11\r\n"), nil, lim)
	if err == nil || err.Error() != "Protocol error: unauthenticated multibulk length" {
		t.Fatalf("count: %v", err)
	}
	_, _, _, err = ParseCommand([]byte("*1\r\n$16385\r\n"), nil, lim)
	if err == nil || err.Error() != "Protocol error: unauthenticated bulk length" {
		t.Fatalf("bulk: %v", err)
	}
}

func TestParseIncompleteReportsNeed(t *testing.T) {
	full := []byte("*2\r\n$3\r\nSET\r\n$10\r\n0123456789\r\n")
	for i := 0; i < len(full); i++ {
		_, _, need, err := ParseCommand(full[:i], nil, ParseLimits{})
		if !errors.Is(err, ErrIncomplete) {
			t.Fatalf("prefix %d: %v", i, err)
		}
		if need <= i || need > len(full) {
			t.Fatalf("prefix %d: need %d, want in (%d, %d]", i, need, i, len(full))
		}
	}
	args, n, _, err := ParseCommand(full, nil, ParseLimits{})
	if err != nil || n != len(full) || string(args[1]) != "0123456789" {
		t.Fatalf("full: %q %d %v", args, n, err)
	}
}

func TestWriterShapes(t *testing.T) {
	w2 := &Writer{Proto: 2}
	w3 := &Writer{Proto: 3}
	for _, w := range []*Writer{w2, w3} {
		w.Map(1)
		w.BulkString("k")
		w.Double(1.5)
		w.Null()
		w.Set(0)
		w.Error("ERR a\r\nb")
	}
	if got := string(w2.B); got != "*2\r\n$1\r\nk\r\n$3\r\n1.5\r\n$-1\r\n*0\r\n-ERR a  b\r\n" {
		t.Fatalf("RESP2: %q", got)
	}
	if got := string(w3.B); got != "%1\r\n$1\r\nk\r\n,1.5\r\n_\r\n~0\r\n-ERR a  b\r\n" {
		t.Fatalf("RESP3: %q", got)
	}
}

func FuzzParseRESP(f *testing.F) {
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"))
	f.Add([]byte("set \"a\\x41\" 'b'\r\n"))
	f.Add([]byte("*1\r\n$99999999999\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		args, n, need, err := ParseCommand(b, nil, ParseLimits{MaxBulk: 1 << 20})
		switch {
		case errors.Is(err, ErrIncomplete):
			if need <= len(b) && need != 0 {
				t.Fatalf("incomplete with need %d <= len %d", need, len(b))
			}
		case err != nil:
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("non-protocol error %v", err)
			}
		default:
			if n <= 0 || n > len(b) {
				t.Fatalf("consumed %d of %d", n, len(b))
			}
			if b[0] == '*' {
				// re-encode and parse again: same args
				var w Writer
				w.Array(len(args))
				for _, a := range args {
					w.Bulk(a)
				}
				again, m, _, err := ParseCommand(w.B, nil, ParseLimits{MaxBulk: 1 << 20})
				if len(args) > 0 && (err != nil || m != len(w.B) || len(again) != len(args)) {
					t.Fatalf("round trip: %v", err)
				}
				for i := range again {
					if !bytes.Equal(again[i], args[i]) {
						t.Fatalf("arg %d changed", i)
					}
				}
			}
		}
	})
}
