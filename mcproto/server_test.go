package mcproto_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nanokv/nanokv/internal/testnet"
	"github.com/nanokv/nanokv/server"
)

// startNode starts one nanokv node with both frontends on free loopback ports. Its
// memcached connections are served by the event loop (on Linux).
func startNode(t testing.TB, itemSizeMax int) *server.Server {
	t.Helper()
	return startNodeMode(t, itemSizeMax, frontendModes[0])
}

// frontendMode is one way a node serves memcached connections.
type frontendMode struct {
	name       string
	goroutines bool // a goroutine per connection instead of an event loop
	// cluster: a member of a one-member cluster, whose event loop is asynchronous (it
	// proposes through consensus and goes on while the commit is on its way)
	cluster bool
}

var frontendModes = []frontendMode{
	{name: "event loop"},
	{name: "goroutine per connection", goroutines: true},
	{name: "cluster member's event loop", cluster: true},
}

// startNodeMode is startNode served as mode says.
func startNodeMode(t testing.TB, itemSizeMax int, mode frontendMode) *server.Server {
	t.Helper()
	cfg := server.Config{
		RedisAddr: "127.0.0.1:0", MemcacheAddr: "127.0.0.1:0", MemcacheItemSizeMax: itemSizeMax,
		MemcacheNoEventLoop: mode.goroutines,
		DataDir:             t.TempDir(), Logger: log.New(io.Discard, "", 0),
	}
	if mode.cluster {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg.NodeID, cfg.Peers, cfg.ClusterListener = 1, map[uint64]string{1: ln.Addr().String()}, ln
		cfg.TickInterval, cfg.ElectionTicks = 5*time.Millisecond, 10
	}
	s, err := server.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if mode.cluster {
		awaitLeadership(t, s.MemcacheAddr())
	}
	return s
}

// awaitLeadership polls a cluster member until it takes writes: a delete of a key that
// is not there (it changes nothing) answers NOT_FOUND instead of CLUSTERDOWN.
func awaitLeadership(t testing.TB, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for deadline := time.Now().Add(10 * time.Second); ; {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "delete no-such-key\r\n")
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "NOT_FOUND\r\n" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the member never led: %q", line)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startMemcached starts the real memcached (when installed) to compare replies with.
func startMemcached(t *testing.T, extra ...string) string {
	t.Helper()
	bin, err := exec.LookPath("memcached")
	if err != nil {
		return ""
	}
	for attempt := 0; attempt < 5; attempt++ {
		addr := fmt.Sprintf("127.0.0.1:%d", testnet.FreePort(t))
		_, port, _ := net.SplitHostPort(addr)
		// -m 1024: it keeps every item the tests store, as nanokv does
		args := append([]string{"-l", "127.0.0.1", "-p", port, "-U", "0", "-t", "1", "-m", "1024"}, extra...)
		if os.Geteuid() == 0 {
			args = append(args, "-u", "root")
		}
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		stop := func() { cmd.Process.Kill(); <-done }
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			select {
			case <-done:
				deadline = time.Time{}
				continue
			default:
			}
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				t.Cleanup(stop)
				return addr
			}
		}
		stop()
	}
	t.Fatal("memcached did not start")
	return ""
}

// converse sends req on a fresh connection and reads until the reply is as long as want
// (or the server stops sending for a while).
func converse(t *testing.T, addr, req string, want int) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	var got []byte
	buf := make([]byte, 1<<16)
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil && !isTimeout(err) {
			break
		}
	}
	// anything extra would show up within a moment
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	n, _ := c.Read(buf)
	return string(append(got, buf[:n]...))
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// A conversation and the reply memcached 1.6 gives to it. Every case has its own keys;
// "mn" at the end makes silent (noreply) cases observable. nodiff marks a deliberate
// difference from memcached (README), checked against nanokv only.
type protoCase struct {
	name, req, want string
	nodiff          bool
}

var k250, k251 = strings.Repeat("k", 250), strings.Repeat("k", 251)

// o33 is an opaque token one byte over memcached's limit.
var o33 = "O" + strings.Repeat("9", 33)

func b64(key string) string { return base64.StdEncoding.EncodeToString([]byte(key)) }

var protoCases = []protoCase{
	{"set get", "set a1 5 0 3\r\nabc\r\nget a1\r\n", "STORED\r\nVALUE a1 5 3\r\nabc\r\nEND\r\n", false},
	{"noreply and multiget", "set a2 5 0 3 noreply\r\nabc\r\nget a2 nope a2\r\n", "VALUE a2 5 3\r\nabc\r\nVALUE a2 5 3\r\nabc\r\nEND\r\n", false},
	{"unknown command", "bogus\r\nGET a\r\n\r\nx\r\n", "ERROR\r\nERROR\r\nERROR\r\nERROR\r\n", false},
	{"set arity", "set a3 5 0\r\nabc\r\n", "ERROR\r\nERROR\r\n", false},
	{"bad flags leave the data as a command", "set a4 x 0 3\r\nabc\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n", false},
	{"negative length", "set a5 5 0 -1\r\nabc\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n", false},
	{"bad data chunk", "set a6 5 0 3\r\nabc\r\nset a6 5 0 3\r\nabcd\r\nget a6\r\n", "STORED\r\nCLIENT_ERROR bad data chunk\r\nERROR\r\nVALUE a6 5 3\r\nabc\r\nEND\r\n", false},
	{"bad data chunk noreply", "set a7 5 0 3 noreply\r\nabcd\r\nmn\r\n", "ERROR\r\nMN\r\n", false},
	{"get arity", "get\r\ngets\r\n", "ERROR\r\nERROR\r\n", false},
	{"add replace append prepend", "add b1 0 0 1\r\nx\r\nadd b1 0 0 1\r\ny\r\nreplace b1n 0 0 1\r\nx\r\nappend b1 9 0 2\r\nyz\r\nprepend b1 9 0 2\r\n01\r\nappend b1n 0 0 1\r\nx\r\nget b1 b1n\r\n",
		"STORED\r\nNOT_STORED\r\nNOT_STORED\r\nSTORED\r\nSTORED\r\nNOT_STORED\r\nVALUE b1 0 5\r\n01xyz\r\nEND\r\n", false},
	{"cas miss and mismatch", "set b2 0 0 1\r\nq\r\ncas b2 0 0 1 0\r\nq\r\ncas b2n 0 0 1 5\r\nq\r\ncas b2 0 0 1 5 noreply\r\nq\r\nmn\r\n", "STORED\r\nEXISTS\r\nNOT_FOUND\r\nMN\r\n", false},
	{"cas arity and format", "cas b3 0 0 1\r\nx\r\ncas b3 0 0 1 abc\r\nx\r\n", "ERROR\r\nERROR\r\nCLIENT_ERROR bad command line format\r\nERROR\r\n", false},
	{"incr decr", "set c1 0 0 2\r\n10\r\nincr c1 5\r\ndecr c1 100\r\nincr c1 18446744073709551615\r\nincr c1 2\r\nincr c1 x\r\nincr c1 -1\r\nincr c1n 1\r\n",
		"STORED\r\n15\r\n0\r\n18446744073709551615\r\n1\r\nCLIENT_ERROR invalid numeric delta argument\r\nCLIENT_ERROR invalid numeric delta argument\r\nNOT_FOUND\r\n", false},
	{"incr non-numeric", "set c2 0 0 3\r\n12a\r\nincr c2 1\r\nset c2 0 0 0\r\n\r\ndecr c2 1\r\nset c2 0 0 21\r\n123456789012345678901\r\nincr c2 1\r\nset c2 0 0 3\r\n 12\r\nincr c2 1\r\n",
		"STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\nSTORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\nSTORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\nSTORED\r\n13\r\n", false},
	// a shorter number is padded with spaces to the item's length (changed in place), and
	// the reply is the number alone; an empty value is refused before the CAS unique
	{"counters in place are padded", "set c3 0 0 2\r\n10\r\ndecr c3 1\r\nget c3\r\nset c3 0 0 5\r\n00012\r\nincr c3 1\r\n" +
		"ma c3 D5 MD v\r\nmg c3 v s\r\nappend c3 0 0 1\r\nx\r\nincr c3 1\r\nget c3\r\nset c3 0 0 0\r\n\r\nma c3 C999\r\n",
		"STORED\r\n9\r\nVALUE c3 0 2\r\n9 \r\nEND\r\nSTORED\r\n13\r\nVA 1\r\n8\r\nVA 5 s5\r\n8    \r\nSTORED\r\n9\r\n" +
			"VALUE c3 0 6\r\n9     \r\nEND\r\nSTORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n", false},
	// memcached keeps an item over slab_chunk_size_max (512 KiB) in chunks, which it
	// calls too large to be a number: for key c5 a value of 524227 bytes is the largest
	// that is not
	{"incr of a chunked item", "set c5 0 0 524227\r\n5 " + strings.Repeat("x", 524225) + "\r\nincr c5 1\r\n" +
		"set c5 0 0 524228\r\n5 " + strings.Repeat("x", 524226) + "\r\nincr c5 1\r\n",
		"STORED\r\n6\r\nSTORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n", false},
	{"incr arity and noreply", "incr\r\nincr c4\r\ndecr c4 1 2 3\r\nincr c4 1 noreply\r\nmn\r\n", "ERROR\r\nERROR\r\nERROR\r\nMN\r\n", false},
	{"delete", "set d1 0 0 1\r\nx\r\ndelete d1\r\ndelete d1\r\ndelete d1 0\r\ndelete d1 5\r\ndelete d1 noreply\r\ndelete d1 5 noreply\r\ndelete\r\ndelete a b c\r\nmn\r\n",
		"STORED\r\nDELETED\r\nNOT_FOUND\r\nNOT_FOUND\r\nCLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\nERROR\r\nCLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\nMN\r\n", false},
	{"touch gat gats", "set e1 3 0 1\r\nv\r\ntouch e1 100\r\ntouch e1n 10\r\ntouch e1 x\r\ntouch e1\r\ngat 0 e1 e1n\r\ngat x e1\r\ngat 10\r\ngat\r\n",
		"STORED\r\nTOUCHED\r\nNOT_FOUND\r\nCLIENT_ERROR invalid exptime argument\r\nERROR\r\nVALUE e1 3 1\r\nv\r\nEND\r\nCLIENT_ERROR invalid exptime argument\r\nEND\r\nERROR\r\n", false},
	{"expired by touch and gat", "set e2 0 0 1\r\n1\r\ntouch e2 -1\r\nget e2\r\nset e2 0 0 1\r\n2\r\ngat -1 e2\r\nget e2\r\n",
		"STORED\r\nTOUCHED\r\nEND\r\nSTORED\r\nVALUE e2 0 1\r\n2\r\nEND\r\nEND\r\n", false},
	{"negative exptime", "set e3 0 -1 1\r\nx\r\nget e3\r\n", "STORED\r\nEND\r\n", false},
	{"version verbosity", "version\r\nverbosity 1\r\nverbosity\r\nverbosity 1 noreply\r\nverbosity 1 2 3\r\nmn\r\n", "VERSION 1.6.18\r\nOK\r\nERROR\r\nERROR\r\nMN\r\n", false},
	{"flush_all arguments", "flush_all x\r\nflush_all 1 2 3\r\nflush_all 0 noreply\r\nmn\r\n", "CLIENT_ERROR invalid exptime argument\r\nERROR\r\nMN\r\n", false},
	// memcached 1.6.18 drops the previous reply of a pipeline when a get has a too-long key
	// (a bug nanokv does not copy); "mn" flushes it first so that both agree
	{"key length", "set " + k250 + " 0 0 1\r\nx\r\nget " + k250 + "\r\nset " + k251 + " 0 0 1\r\nx\r\nmn\r\nget " + k251 + "\r\nincr " + k251 + " 1\r\ntouch " + k251 + " 1\r\ndelete " + k251 + "\r\n",
		"STORED\r\nVALUE " + k250 + " 0 1\r\nx\r\nEND\r\nCLIENT_ERROR bad command line format\r\nERROR\r\nMN\r\nCLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n", false},
	{"spaces tabs and control bytes", "set  f1   0  0 1\r\nx\r\nget f1\r\nset f\t2\x10 0 0 1\r\ny\r\nget f\t2\x10\r\n", "STORED\r\nVALUE f1 0 1\r\nx\r\nEND\r\nSTORED\r\nVALUE f\t2\x10 0 1\r\ny\r\nEND\r\n", false},
	{"bare newlines", "set f3 0 0 1\nx\r\nget f3\n", "STORED\r\nVALUE f3 0 1\r\nx\r\nEND\r\n", false},
	{"flags range", "set f4 4294967295 0 1\r\nx\r\nget f4\r\nset f4 4294967296 0 1\r\nx\r\nget f4\r\nset f4 -1 0 1\r\nx\r\n",
		"STORED\r\nVALUE f4 4294967295 1\r\nx\r\nEND\r\nSTORED\r\nVALUE f4 0 1\r\nx\r\nEND\r\nCLIENT_ERROR bad command line format\r\nERROR\r\n", false},
	{"trailing tokens", "set f5 0 0 1 junk\r\nx\r\nset f5 0 0 1 noreply extra\r\nx\r\nget f5\r\n", "STORED\r\nERROR\r\nERROR\r\nVALUE f5 0 1\r\nx\r\nEND\r\n", false},
	{"stats errors", "stats bogus\r\n", "ERROR\r\n", false},
	{"quit", "quit\r\nget a1\r\n", "", false},
	// meta commands
	{"mn mg miss", "mn\r\nmg g1 v\r\nmg g1 v q k O9\r\nmg g1 k O1\r\nmg g1\r\nmn\r\n", "MN\r\nEN\r\nEN kg1 O1\r\nEN\r\nMN\r\n", false},
	{"mg hit", "set g2 7 0 2\r\nhi\r\nmg g2 v f s t k O5\r\nmg g2\r\nmg g2 k q\r\nmg g2 s v\r\n", "STORED\r\nVA 2 f7 s2 t-1 kg2 O5\r\nhi\r\nHD\r\nHD kg2\r\nVA 2 s2\r\nhi\r\n", false},
	{"mg errors", "mg\r\nmg g3 zz\r\nmg g3 v v\r\nmg g3 Tx\r\nmg " + k251 + " v\r\nmn\r\n", "ERROR\r\nCLIENT_ERROR invalid flag\r\nCLIENT_ERROR duplicate flag\r\nCLIENT_ERROR bad token in command line format\r\nCLIENT_ERROR bad command line format\r\nMN\r\n", false},
	{"mg touch", "ms g4 2\r\nhi\r\nmg g4 T30 t v\r\nmg g4 t\r\nmg g4n T30 v\r\nmn\r\n", "HD\r\nVA 2 t30\r\nhi\r\nHD t30\r\nEN\r\nMN\r\n", false},
	{"ms modes", "ms h1 2 F7 T0\r\nhi\r\nmg h1 f v\r\nms h1 2 C1\r\nhi\r\nms h1 2 MA\r\nyo\r\nms h1 2 MP\r\n<<\r\nmg h1 v\r\nms h1n 2 MR\r\nxx\r\nms h1n 2 ME q\r\nxx\r\nms h1n 2 ME\r\nxx\r\nms h1 2 q\r\nxx\r\nmn\r\n",
		"HD\r\nVA 2 f7\r\nhi\r\nEX\r\nHD\r\nHD\r\nVA 6\r\n<<hiyo\r\nNS\r\nNS\r\nMN\r\n", false},
	// the unique of ms C means what the mode makes of it: cas for S and R, a check of an
	// existing item for A and P (not for C0), nothing for E
	{"ms modes with a unique", "ms h5e 1 C5 ME\r\nz\r\nms h5a 1 C5 MA\r\nz\r\nms h5r 1 C5 MR\r\nz\r\nms h5s 1 C5\r\nz\r\n" +
		"ms h5 1\r\na\r\nms h5 1 C99999999 ME\r\nb\r\nms h5 1 C99999999 MA\r\nb\r\nms h5 1 C99999999 MP\r\nb\r\nms h5 1 C99999999 MR\r\nb\r\nms h5 1 C0 MA\r\nc\r\nmg h5 v\r\n",
		"HD\r\nNS\r\nNF\r\nNF\r\nHD\r\nNS\r\nEX\r\nEX\r\nEX\r\nHD\r\nVA 2\r\nac\r\n", false},
	{"modes in capitals only", "ms h9 1 Ms\r\n1\r\nms h9 1 Me\r\n1\r\nms h9 1 Ma\r\n1\r\nms h9 1 Mp\r\n1\r\nms h9 1 Mr\r\n1\r\nma h9 Mi\r\nma h9 Md\r\nma h9 M+\r\nma h9 MD\r\n",
		strings.Repeat("CLIENT_ERROR invalid mode for ms M token\r\n", 5) + strings.Repeat("CLIENT_ERROR invalid mode for ma M token\r\n", 2) + "NF\r\nNF\r\n", false},
	{"ma T-1 answers, then the counter is gone", "set h10 0 0 1\r\n1\r\nma h10 T-1 v\r\nmg h10 v\r\nma h10n N1000 T-1 v\r\nmg h10n v\r\n",
		"STORED\r\nVA 1\r\n2\r\nEN\r\nVA 1\r\n0\r\nEN\r\n", false},
	{"ms too large removes the item in every mode", "set h12 0 0 1\r\nx\r\nms h12 1048600 MR\r\n" + strings.Repeat("v", 1048600) + "\r\nget h12\r\n" +
		"set h12 0 0 1\r\nx\r\nms h12 1048600 MA q\r\n" + strings.Repeat("v", 1048600) + "\r\nget h12\r\n",
		"STORED\r\nSERVER_ERROR object too large for cache\r\nEND\r\nSTORED\r\nSERVER_ERROR object too large for cache\r\nEND\r\n", false},
	{"ms c on a failure", "ms h8 1 c MP\r\n7\r\nms h8 1 c MR k O5\r\n7\r\nms h8n 1\r\n1\r\nms h8n 1 c ME\r\n7\r\nms h8n 1 c C5\r\n7\r\nms h8x 1 C5 c\r\n1\r\n",
		"NS c0\r\nNS c0 kh8 O5\r\nHD\r\nNS c0\r\nEX c0\r\nNF c0\r\n", false},
	{"ma N answers q when it creates", "ma h6 N0 q\r\nma h6 q\r\nma h6n N0 J5 q v k\r\nma h6n q v\r\nma h6x q\r\nmn\r\n", "HD\r\nVA 1 kh6n\r\n5\r\nNF\r\nMN\r\n", false},
	{"exptime wraps at 32 bits", "set h7 0 4102444800 1\r\nx\r\nget h7\r\nset h7 0 4294968296 1\r\nx\r\nget h7\r\nset h7 0 99999999999999999999 1\r\nx\r\n",
		"STORED\r\nEND\r\nSTORED\r\nVALUE h7 0 1\r\nx\r\nEND\r\nCLIENT_ERROR bad command line format\r\nERROR\r\n", false},
	{"ms errors", "ms h2\r\nms h2 x\r\nms h2 2 Fx\r\nhi\r\nms h2 2 MX\r\nhi\r\nms h2 2 MSS\r\nhi\r\nms h2 3\r\nhi\r\nmn\r\n",
		"CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\nCLIENT_ERROR invalid mode for ms M token\r\nCLIENT_ERROR incorrect length for M token\r\nCLIENT_ERROR bad data chunk\r\nERROR\r\n", false},
	{"ms ttl", "ms h3 2 T-1\r\nhi\r\nmg h3 v\r\nms h3 2 T100\r\nhi\r\nmg h3 t\r\nmn\r\n", "HD\r\nEN\r\nHD\r\nHD t100\r\nMN\r\n", false},
	{"ms return flags", "ms h4 2 O5 k\r\nhi\r\nms h4 2 k O6 q\r\nhi\r\nms h4 2 MR O7 k\r\nhi\r\nms h4n 2 MR O7 k\r\nhi\r\nmn\r\n", "HD O5 kh4\r\nHD O7 kh4\r\nNS O7 kh4n\r\nMN\r\n", false},
	{"md", "set i1 0 0 1\r\nx\r\nmd i1\r\nmd i1\r\nmd i1 q\r\nset i1 0 0 1\r\nx\r\nmd i1 q C1\r\nmd i1 k O3 C99999999\r\nmd i1n k O3\r\nmd i1 q\r\nmg i1\r\nmd\r\nmn\r\n",
		"STORED\r\nHD\r\nNF\r\nNF\r\nSTORED\r\nEX\r\nEX ki1 O3\r\nNF ki1n O3\r\nEN\r\nERROR\r\nMN\r\n", false},
	{"ma", "ma j1\r\nma j1 N0 J5\r\nma j1 v\r\nma j1 MD D2 v t\r\nma j1 q\r\nma j1n q\r\nma j1 M- D100 v O1 k\r\nma j1 MI D18446744073709551615 v\r\nmn\r\n",
		"NF\r\nHD\r\nVA 1\r\n6\r\nVA 1 t-1\r\n4\r\nNF\r\nVA 1 O1 kj1\r\n0\r\nVA 20\r\n18446744073709551615\r\nMN\r\n", false},
	{"ma vivify and touch", "ma j2 N30 J7 v t\r\nma j2 T100 t v\r\nmn\r\n", "VA 1 t30\r\n7\r\nVA 1 t100\r\n8\r\nMN\r\n", false},
	{"ma errors", "set j3 0 0 1\r\nz\r\nma j3\r\nma j3 Dx\r\nma j3 Jx\r\nma j3 MX\r\nma\r\nmn\r\n",
		"STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\nCLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR invalid mode for ma M token\r\nERROR\r\nMN\r\n", false},
	{"me", "me\r\nme l1\r\nms l1 2 T100\r\nhi\r\nmn\r\n", "CLIENT_ERROR bad command line format\r\nEN\r\nHD\r\nMN\r\n", false},
	// E (an explicit CAS unique) is memcached 1.6.27's: 1.6.18 refuses it (ms swallows its data)
	{"flags of later memcacheds are refused", "mg m1 E5 v\r\nmd m1 E5\r\nma m1 E5\r\nms m1 1 E5\r\nx\r\nmn\r\n",
		"CLIENT_ERROR invalid flag\r\nCLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR invalid flag\r\nMN\r\n", false},
	// b: the key is base64, the item's key what it decodes to (here with a space and
	// UTF-8), and k returns it encoded again, followed by b
	{"binary keys", "ms " + b64("b1 \u00e9") + " 2 b T0 F3\r\nhi\r\nmg " + b64("b1 \u00e9") + " b v k f s\r\nmg " + b64("b1 \u00e9") + " b k q\r\n" +
		"mg " + b64("b1 nope") + " b k v\r\nma " + b64("b1c") + " b N0 J5 v k\r\nget b1c\r\nmd " + b64("b1c") + " b k O2\r\nmd " + b64("b1c") + " b k q\r\n" +
		"me " + b64("b1 nope") + " b\r\nms " + b64("b1d") + " 1 b k O4\r\nx\r\nmg b1d v\r\nmn\r\n",
		"HD\r\nVA 2 k" + b64("b1 \u00e9") + " b f3 s2\r\nhi\r\nHD k" + b64("b1 \u00e9") + " b\r\nEN k" + b64("b1 nope") + " b\r\nVA 1 k" + b64("b1c") + " b\r\n5\r\n" +
			"VALUE b1c 0 1\r\n5\r\nEND\r\nHD k" + b64("b1c") + " b O2\r\nNF k" + b64("b1c") + " b\r\nEN\r\nHD k" + b64("b1d") + " b O4\r\nVA 1\r\nx\r\nMN\r\n", false},
	// a hit's k shows the key as the item was stored (ms with b marks it; a counter that
	// grows, an append and ma's N make an unmarked item; a touch keeps the mark), and
	// me's key too, where ms, md, ma and a miss go by the request
	{"binary keys by item", "ms " + b64("bk") + " 1 b\r\n9\r\nmg bk k v\r\nma " + b64("bk") + " b k\r\nmg bk k v\r\n" +
		"set bk2 0 0 1\r\nx\r\nmg " + b64("bk2") + " b k v\r\nms " + b64("bk2") + " 1 b\r\ny\r\nms bk2 1 MA k\r\nz\r\nmg bk2 k v\r\n" +
		"ms " + b64("bk3") + " 1 b\r\nq\r\nmg bk3 k T100\r\ntouch bk3 50\r\nmg bk3 k\r\nma " + b64("bk4") + " b N0 J5 k\r\nmg bk4 k\r\n" +
		"md bk3 k\r\nmn\r\n",
		"HD\r\nVA 1 k" + b64("bk") + " b\r\n9\r\nHD k" + b64("bk") + " b\r\nVA 2 kbk\r\n10\r\n" +
			"STORED\r\nVA 1 kbk2\r\nx\r\nHD\r\nHD kbk2\r\nVA 2 kbk2\r\nyz\r\n" +
			"HD\r\nHD k" + b64("bk3") + " b\r\nTOUCHED\r\nHD k" + b64("bk3") + " b\r\nHD k" + b64("bk4") + " b\r\nHD kbk4\r\n" +
			"HD kbk3\r\nMN\r\n", false},
	// memcached's decoder skips bytes outside the alphabet, ignores the bits past the
	// last byte and stops after the first block with padding; a count of characters
	// that is not a multiple of four, or three '=', is refused after the flags
	{"binary key decoding", "mg YnF= b k\r\nmg YW=j b k\r\nmg Yn!E= b k\r\nmg YnE=YQ== b k\r\nmg YnE b k\r\nmg Y=== b\r\nmg ==== b\r\nmg !!!! b\r\n" +
		"ms YnE 2 b\r\nhi\r\nms YnE 2 b Z\r\nhi\r\nmg YnE b T1x\r\nmd YnE b\r\nma YnE b\r\nme YnE b\r\nme YnE= bb\r\nmn\r\n",
		"EN kYnE= b\r\nEN kYWA= b\r\nEN kYnE= b\r\nEN kYnE= b\r\nCLIENT_ERROR error decoding key\r\nCLIENT_ERROR error decoding key\r\nCLIENT_ERROR error decoding key\r\n" +
			"CLIENT_ERROR error decoding key\r\nCLIENT_ERROR error decoding key\r\nCLIENT_ERROR invalid flag\r\nCLIENT_ERROR bad token in command line format\r\n" +
			"CLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR bad command line format\r\nEN\r\nMN\r\n", false},
	// which error a line with several gets: md and ma answer one line for all but a long
	// opaque; a bad number wins over a long opaque, whatever the order; a bad F leaves
	// the line's default error to a later one
	{"meta error precedence", "md n1 Z\r\nmd n1 q q\r\nmd n1 C1x\r\nmd n1 " + o33 + "\r\nma n1 " + o33 + "\r\nmd n1 T1x " + o33 + "\r\n" +
		"mg n1 T1x " + o33 + "\r\nmg n1 " + o33 + " T1x\r\nms n1 1 T1x F1x\r\nx\r\nms n1 1 F1x\r\nx\r\nms n1 1 F1x MXX\r\nx\r\nmn\r\n",
		"CLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR invalid or duplicate flag\r\n" +
			"CLIENT_ERROR opaque token too long\r\nCLIENT_ERROR opaque token too long\r\nCLIENT_ERROR invalid or duplicate flag\r\n" +
			"CLIENT_ERROR bad token in command line format\r\nCLIENT_ERROR bad token in command line format\r\nCLIENT_ERROR bad token in command line format\r\n" +
			"CLIENT_ERROR bad command line format\r\nCLIENT_ERROR incorrect length for M token\r\nMN\r\n", false},
	// h: read since stored, before this read; a read without u sets it (so does a touch),
	// a store starts a new item; ms, md and ma take h and l and show neither
	// Win tokens and stale items (memcached's anti-dogpiling): mg N creates a missing
	// item and wins it (W), later mgs see Z; R wins an item whose TTL left is below it
	// (after T), once; no TTL never wins; a bad token is refused.
	{"mg vivify and recache", "mg vv f v N30\r\nmg vv f v N30 q k\r\nmg vv s t v\r\nget vv\r\nms vv 2 T100\r\nhi\r\n" +
		"mg vv v t R30\r\nmg vv v t R200\r\nmg vv t R200\r\nms vv 2 T100\r\nhi\r\nmg vv T10 R30 t\r\nmg vv t R30\r\n" +
		"ms vw 1\r\n5\r\nmg vw R999999 t\r\nmg vx N-1 v\r\nmg vx v\r\nmg vy N0 v t\r\nmg vy T60 N30 v t\r\n" +
		"mg vz T60 N30 v t\r\nmg vu N30 u v\r\nmg vu h v\r\nmg vv Rx\r\nmg vv N\r\nmg vv R\r\nmg vq q N-1\r\nmn\r\n",
		"VA 0 f0 W\r\n\r\nVA 0 f0 kvv Z\r\n\r\nVA 0 s0 t30 Z\r\n\r\nVALUE vv 0 0\r\n\r\nEND\r\nHD\r\n" +
			"VA 2 t100\r\nhi\r\nVA 2 t100 W\r\nhi\r\nHD t100 Z\r\nHD\r\nHD t10 W\r\nHD t10 Z\r\n" +
			"HD\r\nHD t-1\r\nVA 0 W\r\n\r\nEN\r\nVA 0 t-1 W\r\n\r\nVA 0 t60 Z\r\n\r\n" +
			"VA 0 t30 W\r\n\r\nVA 0 W\r\n\r\nVA 0 h0 Z\r\n\r\nCLIENT_ERROR bad token in command line format\r\n" +
			"CLIENT_ERROR bad token in command line format\r\nCLIENT_ERROR bad token in command line format\r\nHD W\r\nMN\r\n", false},
	// md I marks an item stale instead of deleting it (T sets its TTL: 0 none, -1 gone);
	// the first mg wins it (X W), the others see Z X, a classic get sees the value; a
	// touch keeps the marks; md I again frees the token.
	{"md invalidate", "ms st 4 T100\r\ndata\r\nmd st I T30\r\nmg st t v\r\nmg st t v k\r\nget st\r\ntouch st 100\r\n" +
		"mg st t\r\nmd st I q\r\nmg st O9 k\r\nmd st I T0\r\nmg st t\r\nmd st I C1\r\nmd st I C1 q\r\nmd st I T-1\r\nmg st t\r\n" +
		"md nokey I\r\nmd nokey I q\r\nmd st2 I\r\nms st3 1\r\n5\r\nmd st3 T5\r\nmg st3\r\nmn\r\n",
		"HD\r\nHD\r\nVA 4 t30 X W\r\ndata\r\nVA 4 t30 kst Z X\r\ndata\r\nVALUE st 0 4\r\ndata\r\nEND\r\nTOUCHED\r\n" +
			"HD t100 Z X\r\nHD O9 kst X W\r\nHD\r\nHD t-1 X W\r\nEX\r\nEX\r\nHD\r\nEN\r\n" +
			"NF\r\nNF\r\nNF\r\nHD\r\nHD\r\nEN\r\nMN\r\n", false},
	// ms I with a CAS older than the item's stores the value stale, keeping the TTL and
	// the token; a newer or equal one, or none, stores as usual. A counter changed in
	// place (incr, ma) keeps the marks; one that grows, or an append, is a new item.
	{"ms invalidate", "ms si 1 T100\r\n5\r\nmd si I\r\nms si 1 I C1 T500\r\n6\r\nmg si t v\r\nms si 1 I C1 q\r\n7\r\n" +
		"mg si t v\r\nms si 1 I\r\n8\r\nmg si t v\r\nms si 1 C1\r\n9\r\nms si 1 I C99999999999999\r\n9\r\n" +
		"ms sj 1 I C1\r\n1\r\nms si 1 I C1 MR\r\n9\r\nmg si v\r\nms si 1 I C1 ME\r\n9\r\nms si 1 I C0\r\n9\r\n" +
		"ms sn 1\r\n5\r\nmd sn I\r\nincr sn 1\r\nmg sn v\r\nmd sn I\r\nincr sn 100\r\nmg sn v\r\n" +
		"ms sa 1\r\n5\r\nmd sa I\r\nappend sa 0 0 1\r\n1\r\nmg sa v\r\nms sm 1\r\n5\r\nmd sm I\r\nma sm v\r\nmg sm v\r\nmn\r\n",
		"HD\r\nHD\r\nHD\r\nVA 1 t100 X W\r\n6\r\nVA 1 t100 Z X\r\n7\r\nHD\r\nVA 1 t-1\r\n8\r\nEX\r\nEX\r\n" +
			"NF\r\nHD\r\nVA 1 X W\r\n9\r\nNS\r\nEX\r\n" +
			"HD\r\nHD\r\n6\r\nVA 1 X W\r\n6\r\nHD\r\n106\r\nVA 3\r\n106\r\n" +
			"HD\r\nHD\r\nSTORED\r\nVA 2\r\n51\r\nHD\r\nHD\r\nVA 1\r\n6\r\nVA 1 X W\r\n6\r\nMN\r\n", false},
	{"mg h", "ms hh 1 h l\r\na\r\nmg hh h\r\nmg hh h u k\r\nmg hh h v\r\nms hh 1 MA\r\nb\r\nmg hh h\r\nms hh 1\r\nc\r\n" +
		"touch hh 0\r\nmg hh h\r\nset hh 0 0 1\r\nd\r\ngat 0 hh\r\nmg hh h u\r\nma hh h l\r\nmd hh h l\r\nmg hh h l\r\nmn\r\n",
		"HD\r\nHD h0\r\nHD h1 khh\r\nVA 1 h1\r\na\r\nHD\r\nHD h0\r\nHD\r\nTOUCHED\r\nHD h1\r\nSTORED\r\nVALUE hh 0 1\r\nd\r\nEND\r\nHD h1\r\n" +
			"CLIENT_ERROR cannot increment or decrement non-numeric value\r\nHD\r\nEN\r\nMN\r\n", false},
}

// TestProtocolReplies runs every conversation against nanokv, and against memcached when
// it is installed, requiring both to give the same bytes.
func TestProtocolReplies(t *testing.T) {
	mc := startMemcached(t)
	if mc == "" {
		t.Log("memcached not on PATH: checking nanokv against the recorded replies only")
	}
	for _, mode := range frontendModes {
		t.Run(mode.name, func(t *testing.T) {
			node := startNodeMode(t, 0, mode)
			for _, c := range protoCases {
				t.Run(c.name, func(t *testing.T) {
					if got := converse(t, node.MemcacheAddr(), c.req, len(c.want)); got != c.want {
						t.Errorf("nanokv\n got %q\nwant %q", got, c.want)
					}
					if mc != "" && !c.nodiff && mode == frontendModes[0] {
						if got := converse(t, mc, c.req, len(c.want)); got != c.want {
							t.Errorf("memcached (the test's expectation is wrong)\n got %q\nwant %q", got, c.want)
						}
					}
				})
			}
		})
	}
}

// TestGetsAndCas checks CAS uniques end to end (their values differ from memcached's).
func TestGetsAndCas(t *testing.T) {
	node := startNode(t, 0)
	c := dial(t, node.MemcacheAddr())
	c.send("set k 1 0 1\r\na\r\ngets k\r\n")
	c.expect("STORED\r\n")
	line := c.line()
	f := strings.Fields(line)
	if len(f) != 5 || f[0] != "VALUE" || f[1] != "k" || f[2] != "1" || f[3] != "1" {
		t.Fatalf("gets line %q", line)
	}
	c.expect("a\r\nEND\r\n")
	unique := f[4]
	c.send("cas k 2 0 1 " + unique + "\r\nb\r\ncas k 3 0 1 " + unique + "\r\nc\r\ngets k\r\n")
	c.expect("STORED\r\nEXISTS\r\n")
	f2 := strings.Fields(c.line())
	if f2[2] != "2" || f2[4] == unique {
		t.Fatalf("after cas: %v", f2)
	}
	c.expect("b\r\nEND\r\n")
	// mg c, ms C, md C, ma C with the current unique
	c.send("mg k c\r\n")
	hd := strings.Fields(c.line())
	cur := strings.TrimPrefix(hd[1], "c")
	c.send("ms k 1 C" + cur + " c\r\nz\r\n")
	ms := strings.Fields(c.line())
	if ms[0] != "HD" || ms[1] == "c"+cur {
		t.Fatalf("ms C: %v", ms)
	}
	c.send("md k C" + cur + "\r\nmd k " + strings.Replace(ms[1], "c", "C", 1) + "\r\nmg k\r\n")
	c.expect("EX\r\nHD\r\nEN\r\n")
}

// A TTL change (touch, gat, mg T, also to no TTL) keeps the item's CAS unique, as in
// memcached: a client's cas with the unique its gets saw still stores after another
// client touched the item. Checked against memcached first, then every frontend.
func TestTouchKeepsTheCASUnique(t *testing.T) {
	check := func(t *testing.T, addr string) {
		c := dial(t, addr)
		c.send("set tk 0 0 1\r\na\r\ngets tk\r\n")
		c.expect("STORED\r\n")
		f := strings.Fields(c.line())
		c.expect("a\r\nEND\r\n")
		unique := f[4]
		c.send("touch tk 100\r\ngats 200 tk\r\n")
		c.expect("TOUCHED\r\nVALUE tk 0 1 " + unique + "\r\na\r\nEND\r\n")
		c.send("mg tk T300 c\r\ntouch tk 0\r\ncas tk 0 0 1 " + unique + "\r\nb\r\n")
		c.expect("HD c" + unique + "\r\nTOUCHED\r\nSTORED\r\n")
	}
	if mc := startMemcached(t); mc != "" {
		t.Run("memcached", func(t *testing.T) { check(t, mc) })
	}
	for _, mode := range frontendModes {
		t.Run(mode.name, func(t *testing.T) { check(t, startNodeMode(t, 0, mode).MemcacheAddr()) })
	}
}

// TestPipelinedWritesAndReads: a pipeline mixing writes and reads sees its own writes, in
// order, and noreply writes stay silent.
func TestPipelinedWritesAndReads(t *testing.T) {
	for _, mode := range frontendModes {
		t.Run(mode.name, func(t *testing.T) {
			node := startNodeMode(t, 0, mode)
			c := dial(t, node.MemcacheAddr())
			var req, want strings.Builder
			for i := 0; i < 200; i++ {
				k := "p" + strconv.Itoa(i)
				req.WriteString("set " + k + " 0 0 1 noreply\r\nx\r\nappend " + k + " 0 0 1\r\ny\r\nincr n" + strconv.Itoa(i%3) + " 1\r\nget " + k + "\r\n")
				want.WriteString("STORED\r\nNOT_FOUND\r\nVALUE " + k + " 0 2\r\nxy\r\nEND\r\n")
			}
			c.send(req.String())
			c.expect(want.String())
		})
	}
}

// A read sent behind a write, in the same packet, never sees a clock earlier than the
// write's own: the TTL mg reports right after a set with exptime 100 is never 101 (it
// counts whole seconds up, so a clock one millisecond behind the write's shows).
func TestPipelinedTTLNeverExceedsWhatWasSet(t *testing.T) {
	for _, mode := range frontendModes {
		t.Run(mode.name, func(t *testing.T) {
			node := startNodeMode(t, 0, mode)
			c := dial(t, node.MemcacheAddr())
			for i := 0; i < 2000; i++ {
				c.send("set k 0 100 1\r\nx\r\nmg k t\r\n")
				c.expect("STORED\r\nHD t100\r\n")
			}
		})
	}
}

// TestTooLargeItemIsSwallowed: a value over -I is refused without reading it as commands,
// and a refused set removes the old value (memcached does not keep stale data).
func TestTooLargeItemIsSwallowed(t *testing.T) {
	node := startNode(t, 1024)
	c := dial(t, node.MemcacheAddr())
	big := strings.Repeat("get x\r\n", 300) // looks like commands: must not run
	c.send("set k 0 0 1\r\nv\r\nset k 0 0 " + strconv.Itoa(len(big)) + "\r\n" + big + "\r\nget k\r\n")
	c.expect("STORED\r\nSERVER_ERROR object too large for cache\r\nEND\r\n")
	c.send("add k 0 0 2000 noreply\r\n" + strings.Repeat("z", 2000) + "\r\nms k 2000\r\n" + strings.Repeat("z", 2000) + "\r\nmn\r\n")
	c.expect("SERVER_ERROR object too large for cache\r\nMN\r\n")
	// a huge announced length is swallowed as it streams in, never buffered whole
	c.send("set h 0 0 100000000 noreply\r\n")
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for sent := 0; sent < 100000000; sent += len(chunk) {
		c.c.Write(chunk[:min(len(chunk), 100000000-sent)])
	}
	c.send("\r\nversion\r\n")
	c.expect("VERSION 1.6.18\r\n")
}

// TestFlushAllDelay: flush_all 3 leaves the items as they are (no TTL given, none
// moved), and 1 to 2 seconds later they are gone, counted as get_flushed (as memcached
// 1.6.18; kvstore's TestMemcacheDelayedFlushAll pins the rules at each second).
func TestFlushAllDelay(t *testing.T) {
	node := startNode(t, 0)
	c := dial(t, node.MemcacheAddr())
	c.send("set a 0 0 1\r\n1\r\nset b 0 100 1\r\n1\r\nflush_all 3\r\nmg a t\r\nmg b t\r\n")
	c.expect("STORED\r\nSTORED\r\nOK\r\nHD t-1\r\nHD t100\r\n")
	start := time.Now()
	for {
		c.send("mg a v\r\n")
		if l := c.line(); l == "EN\r\n" {
			break
		} else if l != "VA 1\r\n" {
			t.Fatalf("mg a v: %q", l)
		}
		c.line()
		if time.Since(start) > 5*time.Second {
			t.Fatal("flush_all 3: a still there after 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if took := time.Since(start); took < 900*time.Millisecond {
		t.Fatalf("flush_all 3 took effect after %v: before its second", took)
	}
	c.send("get b\r\nstats\r\n")
	c.expect("END\r\n")
	flushed := ""
	for l := c.line(); l != "END\r\n"; l = c.line() {
		if strings.HasPrefix(l, "STAT get_flushed ") {
			flushed = l
		}
	}
	if flushed != "STAT get_flushed 2\r\n" {
		t.Fatalf("after two reads of flushed items: %q", flushed)
	}
	c.send("flush_all\r\nset c 0 0 1\r\n1\r\nget a b c\r\n")
	c.expect("OK\r\nSTORED\r\nVALUE c 0 1\r\n1\r\nEND\r\n")
}

func TestLongLineClosesConnection(t *testing.T) {
	node := startNode(t, 0)
	c := dial(t, node.MemcacheAddr())
	c.send(strings.Repeat("x", 5000))
	c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.c.Read(make([]byte, 10)); err == nil {
		t.Fatalf("connection still open after a 5000-byte line (read %d)", n)
	}
	// a long multiget is fine
	c2 := dial(t, node.MemcacheAddr())
	c2.send("get " + strings.Repeat("k ", 5000) + "\r\n")
	c2.expect("END\r\n")
}

func TestStats(t *testing.T) {
	node := startNode(t, 0)
	c := dial(t, node.MemcacheAddr())
	c.send("set a 0 0 1\r\n1\r\nget a b\r\nstats\r\n")
	c.expect("STORED\r\nVALUE a 0 1\r\n1\r\nEND\r\n")
	stats := map[string]string{}
	for {
		l := c.line()
		if l == "END\r\n" {
			break
		}
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != "STAT" {
			t.Fatalf("stats line %q", l)
		}
		stats[f[1]] = f[2]
	}
	for k, v := range map[string]string{"cmd_get": "2", "cmd_set": "1", "get_hits": "1", "get_misses": "1", "curr_items": "1", "curr_connections": "1"} {
		if stats[k] != v {
			t.Errorf("stat %s = %q, want %s", k, stats[k], v)
		}
	}
	if n, err := strconv.ParseUint(stats["bytes"], 10, 64); err != nil || n == 0 {
		t.Errorf("stat bytes = %q, want the heap in use", stats["bytes"])
	}
	c.send("stats settings\r\n")
	found := false
	for l := c.line(); l != "END\r\n"; l = c.line() {
		found = found || l == "STAT item_size_max 1048576\r\n"
	}
	if !found {
		t.Error("stats settings has no item_size_max 1048576")
	}
	c.send("stats items\r\n")
	c.expect("STAT items:1:number 1\r\n")
}

type testConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *testConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &testConn{t: t, c: c, r: bufio.NewReader(c)}
}

func (c *testConn) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.c, s); err != nil {
		c.t.Fatal(err)
	}
}

func (c *testConn) expect(want string) {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, len(want))
	n, err := io.ReadFull(c.r, got)
	if err != nil || string(got) != want {
		c.t.Fatalf("got %q (%v), want %q", got[:n], err, want)
	}
}

func (c *testConn) line() string {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	l, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("read line: %v (%q)", err, l)
	}
	return l
}

// lru_crawler, stats sizes and detail, and shutdown, replied as memcached 1.6.18 replies
// (CAS values are nanokv's versions).
func TestAdminCommands(t *testing.T) {
	for _, mode := range frontendModes {
		t.Run(mode.name, func(t *testing.T) {
			c := dial(t, startNodeMode(t, 0, mode).MemcacheAddr())
			c.send("set big 0 0 200\r\n" + strings.Repeat("y", 200) + "\r\n")
			c.expect("STORED\r\n")
			c.send("gets big\r\n")
			cas := strings.Fields(c.line())[4]
			c.expect(strings.Repeat("y", 200) + "\r\nEND\r\n")
			// metadump's la is the unix second of the last access (the gets), me's the
			// seconds since; fetch: read since stored
			start := time.Now().Unix()
			c.send("lru_crawler metadump 6\r\nlru_crawler metadump 1\r\n")
			var la int64
			if _, err := fmt.Sscanf(c.line(), "key=big exp=-1 la=%d cas="+cas+" fetch=yes cls=6 size=262\n", &la); err != nil || la < start-2 || la > time.Now().Unix() {
				t.Fatalf("metadump of an item just read: la=%d (%v), want about %d", la, err, start)
			}
			c.expect("END\r\nEND\r\n")
			c.send("me big\r\n") // memcached 1.6.18: the same size and class
			if l := c.line(); l != "ME big exp=-1 la=0 cas="+cas+" fetch=yes cls=6 size=262\r\n" && l != "ME big exp=-1 la=1 cas="+cas+" fetch=yes cls=6 size=262\r\n" {
				t.Fatalf("me of an item just read: %q", l)
			}
			c.send("mg big l h u\r\n")
			if l := c.line(); l != "HD l0 h1\r\n" && l != "HD l1 h1\r\n" {
				t.Fatalf("mg l h of an item just read: %q", l)
			}
			for _, x := range []struct{ req, want string }{
				{"lru_crawler metadump 99\r\n", "BADCLASS invalid class id\r\n"},
				{"lru_crawler metadump all extra\r\n", "ERROR\r\n"},
				{"lru_crawler crawl all\r\n", "OK\r\n"},
				{"lru_crawler enable\r\n", "ERROR failed to start lru crawler thread\r\n"},
				{"lru_crawler disable\r\n", "OK\r\n"},
				{"lru_crawler metadump all\r\n", "CLIENT_ERROR lru crawler disabled\r\n"},
				{"lru_crawler enable\r\n", "OK\r\n"},
				{"lru_crawler sleep 2000000\r\n", "CLIENT_ERROR sleep must be one second or less\r\n"},
				{"lru_crawler tocrawl -1\r\n", "CLIENT_ERROR bad command line format\r\n"},
				{"lru_crawler\r\n", "ERROR\r\n"},
				{"stats sizes\r\n", "STAT sizes_status disabled\r\nEND\r\n"},
				{"stats detail on\r\n", "OK\r\n"},
				{"stats detail dump\r\n", "END\r\n"},
				{"stats detail\r\n", "CLIENT_ERROR usage: stats detail on|off|dump\r\n"},
				{"shutdown\r\n", "ERROR: shutdown not enabled\r\n"},
			} {
				c.send(x.req)
				c.expect(x.want)
			}
		})
	}
}

// me shows a key in base64 (without b) when a meta command with b stored its item, as
// memcached does, whether or not me itself was given b.
func TestMetaDebugShowsBinaryKey(t *testing.T) {
	addr := startNode(t, 0).MemcacheAddr()
	enc := b64("me key")
	p, err := dialPeer("nanokv", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.c.Close()
	got, err := p.exchange("ms "+enc+" 1 b\r\nx\r\nme "+enc+" b\r\nset mk 0 0 1\r\ny\r\nme "+b64("mk")+" b\r\nme mk\r\nme !!!! b\r\n", 0)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(got, "\r\n")
	want := []string{"HD", "ME " + enc + " exp=-1 ", "STORED", "ME mk exp=-1 ", "ME mk exp=-1 ", "CLIENT_ERROR bad command line format", ""}
	if len(lines) != len(want) {
		t.Fatalf("replies %q", got)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("reply %d: %q, want it to begin %q", i, lines[i], w)
		}
	}
}

// TestWinTokenStatsAsMemcached counts what the win tokens' commands do as memcached
// 1.6.18 counts it: an item mg N creates is a hit and an item stored, md I is neither a
// delete hit nor (when it finds the item) a miss.
func TestWinTokenStatsAsMemcached(t *testing.T) {
	const req = "ms a 1\r\n1\r\nmd a I\r\nmg a v\r\nmg b N30 v\r\nmg b v\r\nmg c R30\r\nmd zz I\r\nmg q N-1\r\nmn\r\n"
	const want = "HD\r\nHD\r\nVA 1 X W\r\n1\r\nVA 0 W\r\n\r\nVA 0 Z\r\n\r\nEN\r\nNF\r\nHD W\r\nMN\r\n"
	counters := []string{"cmd_get", "get_hits", "get_misses", "delete_hits", "delete_misses", "total_items"}
	read := func(addr string) map[string]string {
		c := dial(t, addr)
		c.send(req)
		c.expect(want)
		c.send("stats\r\n")
		stats := map[string]string{}
		for l := c.line(); l != "END\r\n"; l = c.line() {
			if f := strings.Fields(l); len(f) == 3 && slices.Contains(counters, f[1]) {
				stats[f[1]] = f[2]
			}
		}
		return stats
	}
	got := read(startNode(t, 0).MemcacheAddr())
	wantStats := map[string]string{"cmd_get": "5", "get_hits": "4", "get_misses": "1", "delete_hits": "0",
		"delete_misses": "1", "total_items": "3"}
	if !maps.Equal(got, wantStats) {
		t.Errorf("nanokv's counters %v, want %v", got, wantStats)
	}
	if mc := startMemcached(t); mc != "" {
		if m := read(mc); !maps.Equal(m, wantStats) {
			t.Errorf("memcached's counters %v (the test's expectation is wrong), want %v", m, wantStats)
		}
	}
}
