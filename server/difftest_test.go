package server

// Differential test: the same generated command corpus goes to nanokv and to a real
// redis-server 7.0, and every reply must be identical (after the normalisations listed
// below). The corpus generator lives in difftest_corpus_test.go.
//
// Organisation:
//   - startRedisServer runs redis-server as a child process on a free loopback port.
//   - rconn is a raw RESP2/RESP3 client; rval is a parsed reply, compared structurally
//     through its canonical rendering (render), which keeps the RESP type of every node.
//   - runner executes items (one command each, possibly on a second connection) against
//     both servers, normalises the replies, records mismatches, and resynchronises the two
//     stores after a mismatch (DEL of the keys involved) so that one bug does not cascade
//     into hundreds of follow-up mismatches. Every diffCheckEvery commands it compares a
//     full dump of the databases in use (checkpoint), which catches writes that replied
//     the same but left different state.
//   - pass 1 speaks RESP2 over the whole corpus; pass 2 speaks RESP3 (HELLO 3) over a
//     smaller corpus in other databases; at the end every database is dumped and compared.
//
// Environment:
//
//	NANOKV_DIFF_SEED    corpus seed (default 1; "random" picks one from the clock)
//	NANOKV_DIFF_N       number of RESP2 commands (default 6000; RESP3 pass is N/6)
//	NANOKV_DIFF_MAX     distinct mismatch groups printed in the failure (default 30)
//	NANOKV_DIFF_REPORT  file to write every mismatch to (all of them, ungrouped)
//	NANOKV_DIFF_COVERAGE  log, per command, how many redis replies were not errors
//	NANOKV_DIFF_TRACE   log every command naming this key, with both replies ("*": all)
//	NANOKV_DIFF_TARGET  "redis" compares redis-server against a second redis-server: a
//	                    self-check of the harness, which must report no mismatch at all
//
// Normalisations (everything else is compared exactly, error texts included):
//   - nSet: replies whose element order Redis does not define (KEYS, SMEMBERS, SINTER,
//     SUNION, SDIFF, HKEYS, HVALS, SPOP/SRANDMEMBER/HRANDFIELD/ZRANDMEMBER with a count
//     covering the whole collection) are compared as sorted multisets; the RESP type of the
//     aggregate (array vs RESP3 set) is kept.
//   - nPairs: HGETALL and HRANDFIELD/ZRANDMEMBER ... WITH{VALUES,SCORES} covering the whole
//     collection: compared as sorted (field, value) pairs; a RESP3 map keeps its type.
//   - scans (SCAN/HSCAN/SSCAN/ZSCAN): each server is iterated from cursor 0 until it
//     returns cursor 0 again; the union of the returned elements (pairs for HSCAN/ZSCAN) is
//     compared as a set. Cursor values and per-call batching are not compared.
//   - nTTL: TTL, PTTL, EXPIRETIME, PEXPIRETIME are compared only as the classes -2 (no
//     key), -1 (no TTL) and "positive" (every TTL in the corpus is 1000s or more, so nothing
//     expires while the test runs and the exact value depends only on the clock).
//   - nRandom: random picks (SRANDMEMBER, HRANDFIELD, ZRANDMEMBER with no count or a count
//     smaller than the collection or negative, SPOP, RANDOMKEY): only the RESP type and the
//     number of elements are compared; outside transactions every returned element must
//     also belong to the collection on that same server (checked with SMEMBERS / HKEYS /
//     ZRANGE / KEYS right after). SPOP that may leave different members behind is followed
//     by a DEL of the key on both servers.
//   - nExec: EXEC's array is compared element by element with the normalisation of each
//     queued command.
//   - HELLO: the "id" and "version" fields are masked (they differ by construction).
//   - BYLEX ranges are only defined when all scores are equal: before a lex command the
//     reference zset is checked, and if its scores differ the reply is only compared by RESP
//     type and the keys it may have written are deleted on both servers afterwards.
//   - RESP3 attributes (|) would be dropped; redis 7.0 sends none for this corpus.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nanokv/nanokv/internal/testnet"
)

const (
	diffDefaultSeed = 1
	diffDefaultN    = 6000
	diffCheckEvery  = 500
	diffMaxGroups   = 30
	diffHistory     = 10
	diffIOTimeout   = 10 * time.Second
)

func TestDifferentialAgainstRedis(t *testing.T) {
	differential(t, os.Getenv("NANOKV_DIFF_TARGET"))
}

// The same against a one-member cluster, whose Redis connections start on the
// asynchronous event loop; the connection moves to a goroutine of its own at its first
// MULTI, with what it had buffered.
func TestDifferentialAgainstRedisOnAClusterMember(t *testing.T) {
	differential(t, "member")
}

// differential runs the corpus against redis-server and target: "redis" (a second
// redis-server, to check the test itself), "member" (a one-member cluster), or a single
// node.
func differential(t *testing.T, target string) {
	if testing.Short() {
		t.Skip("differential test against redis-server: skipped in -short mode")
	}
	redisAddr := startRedisServer(t)
	targetName := "nanokv"
	var targetAddr string
	if target == "redis" {
		targetName = "redis#2"
		targetAddr = startRedisServer(t)
	} else {
		cfg := Config{RedisAddr: "127.0.0.1:0", MemoryOnly: true, Logger: log.New(io.Discard, "", 0)}
		if target == "member" {
			// a one-member cluster: Redis connections served by the asynchronous event loop
			targetName = "nanokv member"
			cfg = memberConfig(t, cfg)
		}
		srv, err := Start(cfg)
		if err != nil {
			t.Fatalf("start nanokv: %v", err)
		}
		t.Cleanup(func() { srv.Close() })
		targetAddr = srv.RedisAddr()
		if cfg.Peers != nil {
			awaitLead(t, srv)
		}
	}

	seed := int64(diffDefaultSeed)
	if s := os.Getenv("NANOKV_DIFF_SEED"); s == "random" {
		seed = time.Now().UnixNano()
	} else if s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("NANOKV_DIFF_SEED=%q: %v", s, err)
		}
		seed = v
	}
	n := diffDefaultN
	if s := os.Getenv("NANOKV_DIFF_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("NANOKV_DIFF_N=%q: want a positive integer", s)
		}
		n = v
	}
	maxGroups := diffMaxGroups
	if s := os.Getenv("NANOKV_DIFF_MAX"); s != "" {
		if v, err := strconv.Atoi(s); err == nil && v > 0 {
			maxGroups = v
		}
	}
	t.Logf("seed %d (rerun: NANOKV_DIFF_SEED=%d go test ./server/ -run Differential -count=1 -v); %d RESP2 + %d RESP3 commands; target %s at %s, redis at %s",
		seed, seed, n, n/6, targetName, targetAddr, redisAddr)

	rep := newDiffReport(seed, targetName)
	start := time.Now()

	// pass 1: RESP2, full corpus, databases 0-2
	r2 := newRunner(t, "resp2", 2, targetName, targetAddr, redisAddr, rep, 0)
	r2.run(newGen(seed, []int{0, 1, 2}, mainFamilies()), n)
	t.Logf("resp2 pass: %d commands in %v (%d lex ranges relaxed, %d SORTs after a stale errno, %d random-membership checks)",
		r2.idx, time.Since(start).Round(time.Millisecond), r2.relaxedLex, r2.relaxedSort, r2.memberChecks)

	// pass 2: RESP3, smaller corpus, databases 9-11
	if r2.fatal == nil {
		t3 := time.Now()
		r3 := newRunner(t, "resp3", 3, targetName, targetAddr, redisAddr, rep, 9)
		if r3.fatal == nil {
			r3.run(newGen(seed+1, []int{9, 10, 11}, resp3Families()), n/6)
		}
		t.Logf("resp3 pass: %d commands in %v", r3.idx, time.Since(t3).Round(time.Millisecond))
		r3.close()
	}

	// final full dump of every database
	if r2.fatal == nil {
		all := make([]int, 16)
		for i := range all {
			all[i] = i
		}
		r2.checkpoint(all, "final dump")
	}
	r2.close()
	t.Logf("total %v, %d mismatches in %d groups", time.Since(start).Round(time.Millisecond), len(rep.all), len(rep.order))

	if path := os.Getenv("NANOKV_DIFF_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(rep.full()), 0o644); err != nil {
			t.Errorf("write %s: %v", path, err)
		} else {
			t.Logf("all mismatches written to %s", path)
		}
	}
	if len(rep.all) > 0 {
		t.Fatal(rep.summary(maxGroups))
	}
}

// --- redis-server child process ------------------------------------------------------------

// startRedisServer starts redis-server on a free loopback port, with extra arguments, and
// returns its address.
func startRedisServer(t *testing.T, extra ...string) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not found on PATH: the differential test needs a real redis-server 7.0 (CI installs it; apt-get install redis-server)")
	}
	dir := t.TempDir()
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port := testnet.FreePort(t)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		var out bytes.Buffer
		cmd := exec.Command(path, append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no", "--logfile", ""}, extra...)...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		if err := waitRedisReady(addr, exited); err != nil {
			cmd.Process.Kill()
			<-exited
			lastErr = fmt.Errorf("%v; output:\n%s", err, out.String())
			continue // most likely the port was taken meanwhile: try another one
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			<-exited
		})
		if c, err := dialRESP(addr); err == nil {
			if v, err := c.do("INFO", "server"); err == nil {
				for _, l := range strings.Split(v.str, "\r\n") {
					if strings.HasPrefix(l, "redis_version:") {
						ver := strings.TrimPrefix(l, "redis_version:")
						if !strings.HasPrefix(ver, "7.0.") {
							t.Logf("warning: redis-server is %s; the corpus targets 7.0 (7.0.15)", ver)
						}
					}
				}
			}
			c.close()
		}
		return addr
	}
	t.Fatalf("redis-server did not start: %v", lastErr)
	return ""
}

// waitRedisReady polls addr with a dial and a PING until redis answers PONG, the process
// exits, or 10s pass.
func waitRedisReady(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if c, err := dialRESP(addr); err == nil {
			v, err := c.do("PING")
			c.close()
			if err == nil && v.kind == '+' && v.str == "PONG" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("redis-server did not answer PING within 10s")
		}
		select {
		case <-exited:
			return errors.New("redis-server exited")
		case <-tick.C:
		}
	}
}

// --- RESP client ---------------------------------------------------------------------------

type rconn struct {
	nc net.Conn
	r  *bufio.Reader
	w  *bufio.Writer
}

func dialRESP(addr string) (*rconn, error) {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	return &rconn{nc: nc, r: bufio.NewReader(nc), w: bufio.NewWriter(nc)}, nil
}

func (c *rconn) close() { c.nc.Close() }

// do sends one command as a RESP array of bulk strings and reads one reply.
func (c *rconn) do(args ...string) (rval, error) {
	if err := c.send(args...); err != nil {
		return rval{}, err
	}
	return c.recv()
}

func (c *rconn) send(args ...string) error {
	c.nc.SetDeadline(time.Now().Add(diffIOTimeout))
	fmt.Fprintf(c.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(c.w, "$%d\r\n%s\r\n", len(a), a)
	}
	return c.w.Flush()
}

func (c *rconn) recv() (rval, error) { return readRESP(c.r) }

// rval is one reply. kind is the RESP type byte: + - : $ * and the RESP3 types _ , # ( =
// % ~ >. null marks $-1 and *-1 (RESP2 nulls). Maps keep their entries flattened as
// key, value, key, value in elems.
type rval struct {
	kind  byte
	str   string // simple string, error, bulk, double, boolean, big number, verbatim
	num   int64
	elems []rval
	null  bool
}

func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return "", fmt.Errorf("protocol error: line %q not terminated by CRLF", line)
	}
	return line[:len(line)-2], nil
}

func readRESP(r *bufio.Reader) (rval, error) {
	line, err := readLine(r)
	if err != nil {
		return rval{}, err
	}
	if line == "" {
		return rval{}, errors.New("protocol error: empty line")
	}
	k, rest := line[0], line[1:]
	switch k {
	case '+', '-', ',', '#', '(':
		return rval{kind: k, str: rest}, nil
	case ':':
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			return rval{}, fmt.Errorf("protocol error: bad integer %q", line)
		}
		return rval{kind: k, num: n}, nil
	case '_':
		if rest != "" {
			return rval{}, fmt.Errorf("protocol error: bad null %q", line)
		}
		return rval{kind: k}, nil
	case '$', '=':
		n, err := strconv.Atoi(rest)
		if err != nil || n < -1 {
			return rval{}, fmt.Errorf("protocol error: bad length %q", line)
		}
		if n == -1 {
			return rval{kind: k, null: true}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return rval{}, err
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return rval{}, fmt.Errorf("protocol error: bulk of %d bytes not followed by CRLF", n)
		}
		return rval{kind: k, str: string(buf[:n])}, nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(rest)
		if err != nil || n < -1 {
			return rval{}, fmt.Errorf("protocol error: bad length %q", line)
		}
		if n == -1 {
			return rval{kind: k, null: true}, nil
		}
		cnt := n
		if k == '%' || k == '|' {
			cnt = 2 * n
		}
		v := rval{kind: k, elems: make([]rval, 0, cnt)}
		for i := 0; i < cnt; i++ {
			e, err := readRESP(r)
			if err != nil {
				return rval{}, err
			}
			v.elems = append(v.elems, e)
		}
		if k == '|' { // attribute: out-of-band metadata, the reply follows it
			return readRESP(r)
		}
		return v, nil
	}
	return rval{}, fmt.Errorf("protocol error: unknown type byte in %q", line)
}

// render is the canonical form of a reply: equal renderings mean structurally equal
// replies of the same RESP types. Strings are quoted, so the form is unambiguous.
func render(v rval) string {
	var b strings.Builder
	renderTo(&b, v)
	return b.String()
}

func renderTo(b *strings.Builder, v rval) {
	switch v.kind {
	case '+':
		b.WriteString("+" + v.str)
	case '-':
		b.WriteString("-" + v.str)
	case ':':
		b.WriteString(":" + strconv.FormatInt(v.num, 10))
	case '$':
		if v.null {
			b.WriteString("$nil")
		} else {
			b.WriteString(strconv.Quote(v.str))
		}
	case '=':
		if v.null {
			b.WriteString("=nil")
		} else {
			b.WriteString("=" + strconv.Quote(v.str))
		}
	case '_':
		b.WriteString("_null")
	case ',':
		b.WriteString("," + v.str)
	case '#':
		b.WriteString("#" + v.str)
	case '(':
		b.WriteString("(" + v.str)
	case '*', '~', '>':
		if v.null {
			b.WriteString(string(v.kind) + "nil")
			return
		}
		open := map[byte]string{'*': "[", '~': "~[", '>': ">["}[v.kind]
		b.WriteString(open)
		for i, e := range v.elems {
			if i > 0 {
				b.WriteString(", ")
			}
			renderTo(b, e)
		}
		b.WriteString("]")
	case '%':
		b.WriteString("%{")
		for i := 0; i+1 < len(v.elems); i += 2 {
			if i > 0 {
				b.WriteString(", ")
			}
			renderTo(b, v.elems[i])
			b.WriteString(": ")
			renderTo(b, v.elems[i+1])
		}
		b.WriteString("}")
	default:
		b.WriteString("?" + string(v.kind))
	}
}

func bulk(s string) rval { return rval{kind: '$', str: s} }

// --- normalisation -------------------------------------------------------------------------

type norm uint8

const (
	nExact  norm = iota
	nSet         // undefined order: sort the elements
	nPairs       // undefined order of field/value pairs: sort the pairs
	nTTL         // -2 / -1 / positive
	nRandom      // random choice: RESP type and element count only
	nExec        // EXEC: per-element normalisation from item.sub
	nHello       // HELLO: mask id and version
	nKind        // relaxed: RESP type only (and the error text for errors)
)

func isAggregate(v rval) bool {
	return !v.null && (v.kind == '*' || v.kind == '~' || v.kind == '%' || v.kind == '>')
}

func sortedByRender(vs []rval) []rval {
	out := append([]rval(nil), vs...)
	sort.SliceStable(out, func(i, j int) bool { return render(out[i]) < render(out[j]) })
	return out
}

func normalize(v rval, n norm, sub []norm) rval {
	switch n {
	case nSet:
		if isAggregate(v) && v.kind != '%' {
			v.elems = sortedByRender(v.elems)
		}
	case nPairs:
		if !isAggregate(v) {
			return v
		}
		nested := len(v.elems) > 0
		for _, e := range v.elems {
			if !(e.kind == '*' && len(e.elems) == 2) {
				nested = false
			}
		}
		if nested || len(v.elems)%2 != 0 { // RESP3 array of [field, value] pairs
			v.elems = sortedByRender(v.elems)
			return v
		}
		pairs := make([]rval, 0, len(v.elems)/2)
		for i := 0; i+1 < len(v.elems); i += 2 {
			pairs = append(pairs, rval{kind: '*', elems: v.elems[i : i+2]})
		}
		pairs = sortedByRender(pairs)
		flat := make([]rval, 0, len(v.elems))
		for _, p := range pairs {
			flat = append(flat, p.elems...)
		}
		v.elems = flat
	case nTTL:
		if v.kind == ':' && v.num >= 0 {
			v.num = 1 // "positive"
		}
	case nRandom:
		if v.kind == '$' && !v.null {
			v.str = "?"
		}
		if isAggregate(v) {
			el := make([]rval, len(v.elems))
			for i := range el {
				el[i] = bulk("?")
			}
			v.elems = el
		}
	case nExec:
		if isAggregate(v) && len(v.elems) == len(sub) {
			el := make([]rval, len(v.elems))
			for i, e := range v.elems {
				el[i] = normalize(e, sub[i], nil)
			}
			v.elems = el
		}
	case nHello:
		if isAggregate(v) {
			el := append([]rval(nil), v.elems...)
			for i := 0; i+1 < len(el); i += 2 {
				if k := el[i].str; k == "id" || k == "version" {
					el[i+1] = bulk("<masked>")
				}
			}
			v.elems = el
		}
	case nKind:
		if v.kind != '-' {
			return rval{kind: v.kind, null: v.null}
		}
	}
	return v
}

// --- runner --------------------------------------------------------------------------------

type diffSide struct {
	name        string
	main, other *rconn
	events      *eventWatch
}

// eventWatch follows one server's keyspace notifications: sub is subscribed to every
// keyspace and keyevent channel and to diffEventMark, on which pub publishes the marker
// that ends the events of a step. On nanokv the marker goes through the log behind the
// step's writes, so it arrives after their events there too.
type eventWatch struct {
	sub, pub *rconn
	seq      int
}

const diffEventMark = "nanokv-difftest-mark"

// diffNotifyFlags: every class Redis 7.0 publishes for writes, new-key events and the
// misses of reads.
const diffNotifyFlags = "KEAnm"

func newEventWatch(addr string) (*eventWatch, error) {
	w := &eventWatch{}
	var err error
	if w.sub, err = dialRESP(addr); err != nil {
		return nil, err
	}
	if w.pub, err = dialRESP(addr); err != nil {
		return nil, err
	}
	if _, err := w.pub.do("CONFIG", "SET", "notify-keyspace-events", diffNotifyFlags); err != nil {
		return nil, err
	}
	for _, cmd := range [][]string{{"PSUBSCRIBE", "__key*__:*"}, {"SUBSCRIBE", diffEventMark}} {
		if _, err := w.sub.do(cmd...); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func (w *eventWatch) close() {
	w.sub.close()
	w.pub.close()
}

// next returns the events published since the last call, each as "channel message".
func (w *eventWatch) next() ([]string, error) {
	w.seq++
	mark := strconv.Itoa(w.seq)
	if _, err := w.pub.do("PUBLISH", diffEventMark, mark); err != nil {
		return nil, err
	}
	var evs []string
	for {
		v, err := w.sub.recv()
		if err != nil {
			return nil, err
		}
		switch {
		case len(v.elems) == 3 && v.elems[0].str == "message" && v.elems[1].str == diffEventMark:
			if v.elems[2].str == mark {
				return evs, nil
			}
		case len(v.elems) == 4 && v.elems[0].str == "pmessage":
			evs = append(evs, v.elems[2].str+" "+v.elems[3].str)
		}
	}
}

type histEntry struct {
	idx  int
	db   int // the reference connection's database when it ran (main connection)
	tag  string
	args []string
}

type runner struct {
	t     *testing.T
	pass  string
	proto int
	sides [2]*diffSide // 0: server under test, 1: reference redis-server
	rep   *diffReport
	hist  []histEntry
	idx   int
	refDB int // the reference connection's selected database

	inTx         bool
	txMismatch   bool
	pendingKeys  map[int]map[string]bool // db -> keys to delete on both servers
	pendingFlush bool

	relaxedLex   int
	relaxedSort  int    // SORT replies that met Redis's stale errno (staleErrnoSort)
	relaxedStep  bool   // a reply of this step was compared loosely: its events may differ
	redisAddr    string // the reference redis-server, for staleErrnoSort
	memberChecks int
	dbs          []int  // databases of the current pass (checkpoints)
	trace        string // NANOKV_DIFF_TRACE: log every command naming this key ("*": all)
	verify       bool   // compare a dump once outside the transaction (after a mismatch)
	verifies     int
	// coverage: per command name, replies of the reference and how many were errors
	calls, errs map[string]int
	fatal       error
}

func newRunner(t *testing.T, pass string, proto int, targetName, targetAddr, redisAddr string, rep *diffReport, db int) *runner {
	r := &runner{t: t, pass: pass, proto: proto, rep: rep, refDB: db, pendingKeys: map[int]map[string]bool{},
		calls: map[string]int{}, errs: map[string]int{}, trace: os.Getenv("NANOKV_DIFF_TRACE"), redisAddr: redisAddr}
	for i, a := range []struct{ name, addr string }{{targetName, targetAddr}, {"redis", redisAddr}} {
		s := &diffSide{name: a.name}
		var err error
		if s.main, err = dialRESP(a.addr); err != nil {
			t.Fatalf("dial %s: %v", a.name, err)
		}
		if s.other, err = dialRESP(a.addr); err != nil {
			t.Fatalf("dial %s: %v", a.name, err)
		}
		if s.events, err = newEventWatch(a.addr); err != nil {
			t.Fatalf("subscribe to %s's keyspace events: %v", a.name, err)
		}
		r.sides[i] = s
	}
	if proto == 3 {
		// HELLO 3 on the main connections; the second connections stay on RESP2
		if !r.step(item{args: []string{"HELLO", "3"}, norm: nHello}) {
			return r
		}
		if v, err := r.sides[0].main.do("PING"); err != nil || v.kind != '+' {
			r.fatal = fmt.Errorf("%s did not switch to RESP3", targetName)
			return r
		}
	}
	if db != 0 {
		r.step(item{args: []string{"SELECT", strconv.Itoa(db)}})
		r.step(item{args: []string{"SELECT", strconv.Itoa(db)}, other: true})
	}
	return r
}

func (r *runner) close() {
	for _, s := range r.sides {
		s.main.close()
		s.other.close()
		s.events.close()
	}
}

// run executes n corpus commands, with a checkpoint every diffCheckEvery commands.
func (r *runner) run(g *gen, n int) {
	r.dbs = g.dbs
	next := r.idx + diffCheckEvery
	for r.idx < n && r.fatal == nil {
		its := g.next()
		for i := 0; i < len(its); {
			k := max(its[i].pipe, 1)
			if !r.stepGroup(its[i : i+k]) {
				return
			}
			i += k
		}
		if r.idx >= next && !r.inTx {
			r.checkpoint(g.dbs, "checkpoint")
			next += diffCheckEvery
		}
	}
	if r.fatal == nil {
		r.checkpoint(g.dbs, "end of "+r.pass)
	}
	total, errs := 0, 0
	var never []string
	for name, n := range r.calls {
		total += n
		errs += r.errs[name]
		if r.errs[name] == n && n >= 3 {
			never = append(never, name)
		}
	}
	sort.Strings(never)
	if os.Getenv("NANOKV_DIFF_COVERAGE") != "" {
		names := make([]string, 0, len(r.calls))
		for name := range r.calls {
			names = append(names, name)
		}
		sort.Strings(names)
		var b strings.Builder
		for _, name := range names {
			fmt.Fprintf(&b, " %s=%d/%d", name, r.calls[name]-r.errs[name], r.calls[name])
		}
		r.t.Logf("%s coverage (successful/total redis replies):%s", r.pass, b.String())
	}
	r.t.Logf("%s coverage: %d distinct commands, %d of %d redis replies were errors; never succeeded: %q",
		r.pass, len(r.calls), errs, total, never)
}

func (s *diffSide) conn(other bool) *rconn {
	if other {
		return s.other
	}
	return s.main
}

// step runs one item on both servers and compares; false if the run cannot continue.
func (r *runner) step(it item) bool { return r.stepGroup([]item{it}) }

// stepGroup runs items as one pipeline: all the commands are written to each server
// before any reply is read (a group of one is a plain round trip). Both servers get the
// commands before either is read, so they work concurrently.
func (r *runner) stepGroup(its []item) bool {
	norms := make([]norm, len(its))
	idxs := make([]int, len(its))
	for i, it := range its {
		r.idx++
		idxs[i] = r.idx
		tag := ""
		if it.other {
			tag = "conn2"
		}
		if len(its) > 1 {
			tag = fmt.Sprintf("pipeline %d/%d", i+1, len(its))
		}
		r.hist = append(r.hist, histEntry{idx: r.idx, db: r.refDB, tag: tag, args: it.args})
		norms[i] = it.norm
		if len(it.lexKeys) > 0 {
			uniform := r.lexUniform(it.lexKeys)
			r.compareEvents(nil, 0, false) // the probe's key misses are not the step's events
			if !uniform {
				r.relaxedStep = true // it may write differently on the two servers
				norms[i] = nKind
				r.relaxedLex++
				r.schedule(it) // may have written differently-ordered ranges: drop the keys afterwards
			}
		}
	}

	got, want := make([]rval, len(its)), make([]rval, len(its))
	var errA, errB error
	if len(its) == 1 && its[0].scan > 0 {
		got[0], errA = scanAll(r.sides[0].main, its[0])
		want[0], errB = scanAll(r.sides[1].main, its[0])
	} else {
		ca, cb := r.sides[0].conn(its[0].other), r.sides[1].conn(its[0].other)
		for _, it := range its {
			if errA == nil {
				errA = ca.send(it.args...)
			}
			if errB == nil {
				errB = cb.send(it.args...)
			}
		}
		for i := range its {
			if errA == nil {
				got[i], errA = ca.recv()
			}
			if errB == nil {
				want[i], errB = cb.recv()
			}
		}
	}
	if errB != nil {
		r.t.Fatalf("redis-server connection failed at %s #%d %s: %v", r.pass, r.idx, fmtCmd(its[0].args), errB)
	}
	if errA != nil {
		r.fatal = errA
		for i := range its {
			if got[i].kind == 0 {
				r.record(its[i], idxs[i], rval{kind: '-', str: "<connection failed: " + errA.Error() + ">"}, want[i], "connection failed; run aborted")
				break
			}
		}
		return false
	}

	// in a pipeline, a mismatch makes the later commands on the same keys (and the
	// keyless ones) consequences rather than bugs of their own: they are grouped apart
	tainted := map[string]bool{}
	anyMismatch := false
	for i, it := range its {
		if it.txStart {
			r.inTx = true
		}
		keys := itemKeys(it.args)
		after := anyMismatch && (len(keys) == 0 || slices.ContainsFunc(keys, func(k string) bool { return tainted[k] }))
		if r.compare(it, idxs[i], norms[i], got[i], want[i], len(its) == 1, after) {
			anyMismatch = true
			for _, k := range keys {
				tainted[k] = true
			}
		}
		if it.txEnd {
			r.inTx = false
			if r.txMismatch {
				// one server may still be inside MULTI or watching: reset both
				for _, s := range r.sides {
					s.main.do("DISCARD")
					s.main.do("UNWATCH")
				}
				r.txMismatch = false
			}
		}
	}
	if !r.inTx {
		// a step whose replies differ, or were compared loosely, may have written
		// differently: its events are read, not compared
		r.compareEvents(its, idxs[len(its)-1], !anyMismatch && !r.relaxedStep)
		r.relaxedStep = false
		r.resync()
		r.compareEvents(nil, 0, false) // the resync's own deletions
		if r.verify && r.dbs != nil && r.verifies < 200 {
			r.verifies++
			r.checkpoint(r.dbs, fmt.Sprintf("dump after the mismatch at #%d", r.idx))
		}
		r.verify = false
	}
	return r.fatal == nil
}

// compare checks one reply pair and does the bookkeeping that follows it; it reports a
// mismatch. after marks a command that follows a mismatch in the same pipeline.
func (r *runner) compare(it item, idx int, n norm, got, want rval, alone, after bool) bool {
	mismatched := false
	if r.trace != "" && (r.trace == "*" || slices.Contains(it.args[1:], r.trace) || slices.ContainsFunc(it.subArgs, func(a []string) bool { return slices.Contains(a, r.trace) })) {
		r.t.Logf("trace %s #%d db%d %s\n\t%s: %s\n\tredis: %s", r.pass, idx, r.refDB, fmtCmd(it.args), r.sides[0].name, render(got), render(want))
	}
	ga, wa := normalize(got, n, it.sub), normalize(want, n, it.sub)
	gr, wr := render(ga), render(wa)
	if readsScores(it) {
		// the -0 score Redis keeps in skiplist-encoded sets (see dump): documented, not compared
		gr, wr = positiveZero(gr), positiveZero(wr)
	}
	if gr != wr && r.staleErrnoSort(it, n, got, want, alone, gr) {
		r.relaxedSort++
		r.relaxedStep = true
		gr = wr
	}
	if gr != wr && it.norm == nExec && alone {
		if fixed, ok := r.staleErrnoSortsInExec(it, got, want); ok {
			r.relaxedSort++
			r.relaxedStep = true
			wr = render(normalize(fixed, n, it.sub))
		}
	}
	if gr != wr {
		mismatched = true
		note := ""
		if after {
			note = "after an earlier mismatch in the same pipeline"
		}
		r.record(it, idx, got, want, note)
		r.schedule(it)
		if r.inTx {
			r.txMismatch = true
		}
		// a mismatch other than a missing command may hide a state difference elsewhere
		// (another database, another key): compare the dumps right away
		if !strings.Contains(r.rep.all[len(r.rep.all)-1].sig, "unknown command (target only)") {
			r.verify = true
		}
	} else if it.universe != nil && !r.inTx && alone {
		r.memberChecks++
		for i, s := range r.sides {
			v := got
			if i == 1 {
				v = want
			}
			if bad := checkMembers(s.main, v, it.universe); bad != "" {
				r.record(it, idx, got, want, s.name+": "+bad)
				r.schedule(it)
			}
		}
	}
	r.trackDB(it, want)
	name := strings.ToUpper(it.args[0])
	r.calls[name]++
	if want.kind == '-' {
		r.errs[name]++
	}
	return mismatched
}

// trackDB follows the reference connection's selected database (SELECT, also inside EXEC).
func (r *runner) trackDB(it item, want rval) {
	if it.other {
		return
	}
	if strings.EqualFold(it.args[0], "select") && want.kind == '+' && want.str == "OK" { // not QUEUED
		r.refDB, _ = strconv.Atoi(it.args[1])
	}
	if it.norm == nExec && isAggregate(want) && len(want.elems) == len(it.subArgs) {
		for i, a := range it.subArgs {
			if strings.EqualFold(a[0], "select") && want.elems[i].kind == '+' && want.elems[i].str == "OK" {
				r.refDB, _ = strconv.Atoi(a[1])
			}
		}
	}
}

// schedule marks the keys of an item (and of its queued commands) for deletion on both
// servers once outside a transaction.
func (r *runner) schedule(it item) {
	if it.flushOnMismatch {
		r.pendingFlush = true
	}
	dbs := append([]int{r.refDB}, it.extraDBs...)
	if it.other {
		dbs = it.extraDBs
	}
	keys := itemKeys(it.args)
	for _, a := range it.subArgs {
		keys = append(keys, itemKeys(a)...)
	}
	for _, db := range dbs {
		if r.pendingKeys[db] == nil {
			r.pendingKeys[db] = map[string]bool{}
		}
		for _, k := range keys {
			r.pendingKeys[db][k] = true
		}
	}
}

// compareEvents reads the keyspace events both servers published since the last call
// and, if compare, records a mismatch when they differ. its are the commands that
// produced them (for the report), the last at idx.
func (r *runner) compareEvents(its []item, idx int, compare bool) {
	var evs [2][]string
	for i, s := range r.sides {
		var err error
		if evs[i], err = s.events.next(); err != nil {
			if i == 1 {
				r.t.Fatalf("redis-server's event connection failed: %v", err)
			}
			r.fatal = err
			return
		}
	}
	if !compare || slices.Equal(evs[0], evs[1]) {
		return
	}
	asReply := func(evs []string) rval {
		v := rval{kind: '*'}
		for _, e := range evs {
			v.elems = append(v.elems, rval{kind: '$', str: e})
		}
		return v
	}
	note := "keyspace events differ"
	if len(its) > 1 {
		note += fmt.Sprintf(" (after a pipeline of %d ending here)", len(its))
	}
	r.record(its[len(its)-1], idx, asReply(evs[0]), asReply(evs[1]), note)
}

// resync brings both servers back to the same state after a mismatch: the keys involved
// are deleted on both, and both connections are put back in the reference's database.
func (r *runner) resync() {
	if len(r.pendingKeys) == 0 && !r.pendingFlush {
		return
	}
	if r.pendingFlush {
		r.admin("FLUSHALL")
	}
	// CLIENT SETNAME / HELLO SETNAME may have applied on one side only
	r.admin("CLIENT", "SETNAME", "")
	dbs := make([]int, 0, len(r.pendingKeys))
	for db := range r.pendingKeys {
		dbs = append(dbs, db)
	}
	sort.Ints(dbs)
	for _, db := range dbs {
		keys := make([]string, 0, len(r.pendingKeys[db]))
		for k := range r.pendingKeys[db] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if len(keys) == 0 {
			continue
		}
		// the target may be in another database than the reference (a SELECT that should
		// not have applied, or the other way round): always select explicitly
		r.admin("SELECT", strconv.Itoa(db))
		r.admin(append([]string{"DEL"}, keys...)...)
	}
	r.admin("SELECT", strconv.Itoa(r.refDB))
	r.pendingKeys = map[int]map[string]bool{}
	r.pendingFlush = false
}

// admin runs a bookkeeping command on both main connections, outside the corpus; it is
// shown in the history with the tag "resync".
func (r *runner) admin(args ...string) {
	r.hist = append(r.hist, histEntry{idx: r.idx, db: r.refDB, tag: "resync", args: args})
	for _, s := range r.sides {
		if _, err := s.main.do(args...); err != nil && s == r.sides[1] {
			r.t.Fatalf("redis-server connection failed during resync: %v", err)
		}
	}
}

// lexUniform reports whether each zset among keys has all its scores equal on the
// reference server (BYLEX ranges are undefined otherwise).
func (r *runner) lexUniform(keys []string) bool {
	for _, k := range keys {
		v, err := r.sides[1].main.do("ZRANGE", k, "0", "-1", "WITHSCORES")
		if err != nil || !isAggregate(v) {
			continue
		}
		var scores []string
		for i, e := range v.elems {
			switch {
			case e.kind == '*' && len(e.elems) == 2: // RESP3 [member, score]
				scores = append(scores, render(e.elems[1]))
			case i%2 == 1:
				scores = append(scores, render(e))
			}
		}
		for _, s := range scores {
			if s != scores[0] {
				return false
			}
		}
	}
	return true
}

// scanAll iterates a SCAN-like command from cursor 0 until the cursor is 0 again and
// returns the set of elements (pairs for HSCAN/ZSCAN) as a sorted array; an error reply
// (or any malformed reply) of the first call is returned as is.
func scanAll(c *rconn, it item) (rval, error) {
	args := append([]string(nil), it.args...)
	seen := map[string]rval{}
	cursor := "0"
	for i := 0; ; i++ {
		args[it.scan] = cursor
		v, err := c.do(args...)
		if err != nil {
			return v, err
		}
		if v.kind != '*' || len(v.elems) != 2 || v.elems[0].kind != '$' || !isAggregate(v.elems[1]) {
			if i == 0 {
				return v, nil
			}
			return rval{kind: '-', str: fmt.Sprintf("<scan call %d with cursor %s replied %s>", i, cursor, render(v))}, nil
		}
		el := v.elems[1].elems
		if it.scanPairs {
			if len(el)%2 != 0 {
				return rval{kind: '-', str: "<scan returned an odd number of elements: " + render(v) + ">"}, nil
			}
			for j := 0; j < len(el); j += 2 {
				p := rval{kind: '*', elems: el[j : j+2]}
				seen[render(p)] = p
			}
		} else {
			for _, e := range el {
				seen[render(e)] = e
			}
		}
		cursor = v.elems[0].str
		if cursor == "0" {
			break
		}
		if i > 10000 {
			return rval{kind: '-', str: "<scan did not return cursor 0 after 10000 calls>"}, nil
		}
	}
	out := rval{kind: '*'}
	for _, e := range seen {
		out.elems = append(out.elems, e)
	}
	out.elems = sortedByRender(out.elems)
	return out, nil
}

// checkMembers checks that every element of a random reply belongs to the collection
// listed by the universe query on the same server; it returns a description of the
// failure, or "".
func checkMembers(c *rconn, v rval, universe []string) string {
	var elems []rval
	switch {
	case v.kind == '$' && !v.null:
		elems = []rval{v}
	case isAggregate(v):
		elems = v.elems
	default:
		return ""
	}
	u, err := c.do(universe...)
	if err != nil {
		return "universe query failed: " + err.Error()
	}
	set := map[string]bool{}
	if isAggregate(u) {
		for _, e := range u.elems {
			set[render(e)] = true
		}
	}
	for _, e := range elems {
		if !set[render(e)] {
			return fmt.Sprintf("random reply element %s is not in %s = %s", render(e), fmtCmd(universe), render(u))
		}
	}
	return ""
}

// --- dumps ---------------------------------------------------------------------------------

// dump lists every key of dbs with its type, TTL class and full contents.
func dump(c *rconn, dbs []int) (map[string]string, error) {
	out := map[string]string{}
	for _, db := range dbs {
		if _, err := c.do("SELECT", strconv.Itoa(db)); err != nil {
			return nil, err
		}
		kv, err := c.do("KEYS", "*")
		if err != nil {
			return nil, err
		}
		if !isAggregate(kv) {
			out[fmt.Sprintf("db%d KEYS *", db)] = render(kv)
			continue
		}
		for _, e := range kv.elems {
			k := e.str
			typ, err := c.do("TYPE", k)
			if err != nil {
				return nil, err
			}
			var q []string
			n := nExact
			switch typ.str {
			case "string":
				q = []string{"GET", k}
			case "list":
				q = []string{"LRANGE", k, "0", "-1"}
			case "hash":
				q, n = []string{"HGETALL", k}, nPairs
			case "set":
				q, n = []string{"SMEMBERS", k}, nSet
			case "zset":
				q = []string{"ZRANGE", k, "0", "-1", "WITHSCORES"}
			}
			desc := "type " + render(typ)
			ttl, err := c.do("PTTL", k)
			if err != nil {
				return nil, err
			}
			desc += " pttl " + render(normalize(ttl, nTTL, nil))
			if q != nil {
				v, err := c.do(q...)
				if err != nil {
					return nil, err
				}
				desc += " " + render(normalize(v, n, nil))
			}
			if typ.str == "zset" {
				// Redis keeps a -0 score once a set has its skiplist encoding (large sets,
				// or any set SORT has read); nanokv always stores 0, as Redis does for small
				// sets. A documented difference (README), not compared.
				desc = positiveZero(desc)
			}
			out[fmt.Sprintf("db%d %s", db, strconv.Quote(k))] = desc
		}
	}
	return out, nil
}

// readsScores reports whether a reply may carry sorted-set scores: a Z command, alone,
// queued in a transaction, or run by a script (fScripts passes the command in ARGV).
func readsScores(it item) bool {
	isZ := func(name string) bool {
		n := strings.ToUpper(name)
		return strings.HasPrefix(n, "Z") || strings.HasPrefix(n, "BZ")
	}
	if isZ(it.args[0]) || slices.ContainsFunc(it.subArgs, func(a []string) bool { return len(a) > 0 && isZ(a[0]) }) {
		return true
	}
	return strings.HasPrefix(strings.ToUpper(it.args[0]), "EVAL") && slices.ContainsFunc(it.args[1:], isZ)
}

// negativeZero is a -0 score as render writes it: a bulk string (RESP2) or a double
// (RESP3), followed by the end of its element.
var negativeZero = regexp.MustCompile(`("-0"|,-0)([,\]]|$)`)

// positiveZero writes every -0 score in a rendered reply as 0 (see dump).
func positiveZero(s string) string {
	return negativeZero.ReplaceAllStringFunc(s, func(m string) string { return strings.Replace(m, "-0", "0", 1) })
}

// staleErrnoSort reports whether a SORT that Redis failed with "One or more scores
// can't be converted into double", where the server under test answered with the sorted
// elements (rendered gr), failed in Redis only because of an earlier command. Redis
// checks errno after strtod without clearing it first: once a number out of range
// (1e400, say) has set ERANGE, a SORT whose elements all convert fails until some other
// call sets errno. A new connection does: Redis's accept loop ends on EAGAIN. So the
// same SORT is asked again on a new connection to Redis, and must give gr. Only a SORT
// that does not store, alone (not pipelined) and outside a transaction.
func (r *runner) staleErrnoSort(it item, n norm, got, want rval, alone bool, gr string) bool {
	if !errnoSortFailure(it.args, got, want) || !alone || r.inTx {
		return false
	}
	return r.redisAloneGives(it.args, n, it.sub, gr)
}

// errnoSortFailure reports whether args is a SORT that does not store, which Redis failed
// with the error a stale errno gives, and which the server under test answered.
func errnoSortFailure(args []string, got, want rval) bool {
	name := strings.ToUpper(args[0])
	return (name == "SORT" || name == "SORT_RO") && want.kind == '-' &&
		want.str == "ERR One or more scores can't be converted into double" && isAggregate(got) &&
		!slices.ContainsFunc(args[1:], func(a string) bool { return strings.EqualFold(a, "STORE") })
}

// staleErrnoSortsInExec is staleErrnoSort for the SORTs queued in a transaction, asked
// again on a new connection after the EXEC: it returns Redis's EXEC reply with those
// that then answer as the server under test did replaced by that answer. A transaction
// that SELECTs, or that writes a key a failed SORT reads, is left as it is: the SORT
// asked again would not see what it saw inside.
func (r *runner) staleErrnoSortsInExec(it item, got, want rval) (rval, bool) {
	if !isAggregate(got) || !isAggregate(want) || len(got.elems) != len(it.subArgs) || len(want.elems) != len(it.subArgs) {
		return want, false
	}
	fixed := want
	fixed.elems = slices.Clone(want.elems)
	changed := false
	for i, args := range it.subArgs {
		if !errnoSortFailure(args, got.elems[i], want.elems[i]) {
			continue
		}
		for j, other := range it.subArgs {
			if j != i && (strings.EqualFold(other[0], "SELECT") ||
				!strings.HasPrefix(strings.ToUpper(other[0]), "SORT") && slices.Contains(itemKeys(other), args[1])) {
				return want, false
			}
		}
		if !r.redisAloneGives(args, it.sub[i], nil, render(normalize(got.elems[i], it.sub[i], nil))) {
			return want, false
		}
		fixed.elems[i] = got.elems[i]
		changed = true
	}
	return fixed, changed
}

// redisAloneGives asks args of Redis again, on a new connection in the reference
// database, and reports whether the reply, normalised by n, renders as gr.
func (r *runner) redisAloneGives(args []string, n norm, sub []norm, gr string) bool {
	c, err := dialRESP(r.redisAddr)
	if err != nil {
		return false
	}
	defer c.close()
	if r.proto == 3 {
		if v, err := c.do("HELLO", "3"); err != nil || v.kind == '-' {
			return false
		}
	}
	if v, err := c.do("SELECT", strconv.Itoa(r.refDB)); err != nil || v.kind == '-' {
		return false
	}
	again, err := c.do(args...)
	return err == nil && render(normalize(again, n, sub)) == gr
}

// checkpoint compares full dumps of dbs; differing keys are reported and deleted on both.
func (r *runner) checkpoint(dbs []int, what string) {
	var dumps [2]map[string]string
	for i, s := range r.sides {
		d, err := dump(s.main, dbs)
		if err != nil {
			if i == 1 {
				r.t.Fatalf("redis-server dump failed: %v", err)
			}
			r.fatal = err
			r.rep.add(mismatch{pass: r.pass, idx: r.idx, cmd: what, sig: "DUMP|connection", got: err.Error(), note: "dump failed"})
			return
		}
		dumps[i] = d
	}
	keys := map[string]bool{}
	for i := range dumps {
		for k := range dumps[i] {
			keys[k] = true
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		a, okA := dumps[0][k]
		b, okB := dumps[1][k]
		if okA && okB && a == b {
			continue
		}
		if !okA {
			a = "(key missing)"
		}
		if !okB {
			b = "(key missing)"
		}
		var db int
		var name string
		fmt.Sscanf(k, "db%d", &db)
		if i := strings.IndexByte(k, ' '); i >= 0 {
			name, _ = strconv.Unquote(k[i+1:])
		}
		r.rep.add(mismatch{
			pass: r.pass, idx: r.idx, cmd: what + ": " + k, got: a, want: b,
			sig:  "STATE|" + typeOfDump(a) + "|" + typeOfDump(b),
			note: "state differs although the replies agreed (or after an earlier mismatch)",
			prev: r.historyOf(r.idx+1, name),
		})
		if name != "" {
			if r.pendingKeys[db] == nil {
				r.pendingKeys[db] = map[string]bool{}
			}
			r.pendingKeys[db][name] = true
		}
	}
	// dump changed the selected database
	for _, s := range r.sides {
		s.main.do("SELECT", strconv.Itoa(r.refDB))
	}
	r.resync()
	r.compareEvents(nil, 0, false) // the dump's own reads (their key misses) and deletions
}

func typeOfDump(d string) string {
	if strings.HasPrefix(d, "type ") {
		if f := strings.Fields(d); len(f) > 1 {
			return f[1]
		}
	}
	return d
}

// historyOf is the last diffHistory commands before the current one mentioning one of
// keys (in any database).
func (r *runner) historyOf(before int, keys ...string) []string {
	var out []string
	if len(keys) == 0 {
		return nil
	}
	for i := len(r.hist) - 1; i >= 0 && len(out) < diffHistory; i-- {
		if r.hist[i].idx >= before && r.hist[i].tag != "resync" {
			continue
		}
		h := r.hist[i]
		if h.tag == "resync" && len(h.args) > 0 && strings.EqualFold(h.args[0], "select") {
			continue
		}
	args:
		for _, a := range h.args[1:] {
			for _, k := range keys {
				if a == k {
					out = append(out, fmtHist(h))
					break args
				}
			}
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// --- mismatch report -----------------------------------------------------------------------

type mismatch struct {
	pass      string
	idx       int
	cmd       string
	got, want string
	note      string
	sig       string
	prev      []string
	keyPrev   []string // previous commands on the same keys
}

type diffGroup struct {
	first mismatch
	count int
	idxs  []string
}

type diffReport struct {
	seed   int64
	target string
	all    []mismatch
	groups map[string]*diffGroup
	order  []string
}

func newDiffReport(seed int64, target string) *diffReport {
	return &diffReport{seed: seed, target: target, groups: map[string]*diffGroup{}}
}

func (rep *diffReport) add(m mismatch) {
	rep.all = append(rep.all, m)
	g := rep.groups[m.sig]
	if g == nil {
		g = &diffGroup{first: m}
		rep.groups[m.sig] = g
		rep.order = append(rep.order, m.sig)
	}
	g.count++
	if len(g.idxs) < 8 {
		g.idxs = append(g.idxs, fmt.Sprintf("%s#%d", m.pass, m.idx))
	}
}

// record adds a reply mismatch for it (command number idx), with the previous
// diffHistory commands.
func (r *runner) record(it item, idx int, got, want rval, note string) {
	m := mismatch{pass: r.pass, idx: idx, cmd: fmtCmd(it.args), got: render(got), want: render(want), note: note}
	if it.other {
		m.cmd = "[conn2] " + m.cmd
	}
	m.sig = strings.ToUpper(it.args[0]) + "|" + shape(got) + "|" + shape(want)
	if note != "" {
		m.sig += "|" + note
	}
	if shape(got) == "-ERR unknown command" && shape(want) != shape(got) {
		m.sig = strings.ToUpper(it.args[0]) + "|unknown command (target only)"
	}
	if strings.HasPrefix(note, "after an earlier mismatch") && shape(got) != "-ERR unknown command" {
		m.sig = strings.ToUpper(it.args[0]) + "|" + note
	}
	if it.txEnd && r.txMismatch {
		m.sig = strings.ToUpper(it.args[0]) + "|after an earlier mismatch in the same transaction"
		m.note = "consequence of an earlier mismatch in this transaction (see the queued commands)"
	}
	if it.norm == nExec && isAggregate(got) && isAggregate(want) && len(got.elems) == len(it.subArgs) && len(want.elems) == len(it.subArgs) {
		for i := range it.subArgs {
			a, b := normalize(got.elems[i], it.sub[i], nil), normalize(want.elems[i], it.sub[i], nil)
			if render(a) != render(b) {
				m.sig = "EXEC/" + strings.ToUpper(it.subArgs[i][0]) + "|" + shape(got.elems[i]) + "|" + shape(want.elems[i])
				m.note = fmt.Sprintf("queued command %d (%s) differs", i+1, fmtCmd(it.subArgs[i]))
				break
			}
		}
	}
	pos := len(r.hist) - 1
	for pos > 0 && !(r.hist[pos].idx == idx && r.hist[pos].tag != "resync") {
		pos--
	}
	for i := max(pos-diffHistory, 0); i < pos; i++ {
		m.prev = append(m.prev, fmtHist(r.hist[i]))
	}
	keys := itemKeys(it.args)
	for _, a := range it.subArgs {
		keys = append(keys, itemKeys(a)...)
	}
	m.keyPrev = r.historyOf(idx, keys...)
	r.rep.add(m)
}

// shape classifies a reply for grouping: the error text (with the variable part of
// unknown-command errors cut), or the RESP type.
func shape(v rval) string {
	switch {
	case v.kind == '-':
		if strings.HasPrefix(v.str, "ERR unknown command") {
			return "-ERR unknown command"
		}
		return "-" + v.str
	case v.null:
		return string(v.kind) + "nil"
	}
	return string(v.kind)
}

func fmtCmd(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a == "" || strings.ContainsAny(a, " \"'\\\r\n\t") || strings.IndexFunc(a, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
			b.WriteString(strconv.Quote(a))
		} else {
			b.WriteString(a)
		}
	}
	return b.String()
}

func fmtHist(h histEntry) string {
	s := fmt.Sprintf("#%d db%d ", h.idx, h.db)
	if h.tag == "conn2" {
		s = fmt.Sprintf("#%d ", h.idx)
	}
	if h.tag != "" {
		s += "[" + h.tag + "] "
	}
	return s + fmtCmd(h.args)
}

func (m mismatch) String(target string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %s #%d: %s\n", m.pass, m.idx, m.cmd)
	fmt.Fprintf(&b, "    %-7s %s\n", target+":", m.got)
	fmt.Fprintf(&b, "    %-7s %s\n", "redis:", m.want)
	if m.note != "" {
		fmt.Fprintf(&b, "    note:   %s\n", m.note)
	}
	if len(m.prev) > 0 {
		b.WriteString("    previous commands:\n")
		for _, p := range m.prev {
			fmt.Fprintf(&b, "      %s\n", p)
		}
	}
	if len(m.keyPrev) > 0 {
		b.WriteString("    previous commands on its keys:\n")
		for _, p := range m.keyPrev {
			fmt.Fprintf(&b, "      %s\n", p)
		}
	}
	return b.String()
}

func (rep *diffReport) header() string {
	return fmt.Sprintf("differential test: %d mismatches in %d groups between %s and redis-server (seed %d; rerun: NANOKV_DIFF_SEED=%d go test ./server/ -run Differential -count=1 -v)\n",
		len(rep.all), len(rep.order), rep.target, rep.seed, rep.seed)
}

// summary is the failure message: the first mismatch, then one example per group (groups
// of commands the target does not know at all come last, one line each).
func (rep *diffReport) summary(maxGroups int) string {
	var b strings.Builder
	b.WriteString(rep.header())
	b.WriteString("first mismatch:\n")
	b.WriteString(rep.all[0].String(rep.target))
	var real, unknown []string
	for _, sig := range rep.order {
		if strings.HasSuffix(sig, "|unknown command (target only)") {
			unknown = append(unknown, sig)
		} else {
			real = append(real, sig)
		}
	}
	fmt.Fprintf(&b, "mismatch groups (same command and reply shapes), first %d of %d:\n", min(maxGroups, len(real)), len(real))
	for i, sig := range real {
		if i == maxGroups {
			fmt.Fprintf(&b, "... %d more groups (set NANOKV_DIFF_MAX or NANOKV_DIFF_REPORT)\n", len(real)-maxGroups)
			break
		}
		g := rep.groups[sig]
		fmt.Fprintf(&b, "[%d] %s  (%d occurrences: %s)\n", i+1, sig, g.count, strings.Join(g.idxs, " "))
		b.WriteString(g.first.String(rep.target))
	}
	if len(unknown) > 0 {
		fmt.Fprintf(&b, "commands %s does not know (%d):\n", rep.target, len(unknown))
		for _, sig := range unknown {
			g := rep.groups[sig]
			fmt.Fprintf(&b, "  %-12s %3d occurrences, e.g. %s #%d: %s -> redis: %s\n", strings.TrimSuffix(sig, "|unknown command (target only)"),
				g.count, g.first.pass, g.first.idx, g.first.cmd, g.first.want)
		}
	}
	return b.String()
}

// full lists every mismatch, for NANOKV_DIFF_REPORT.
func (rep *diffReport) full() string {
	var b strings.Builder
	b.WriteString(rep.header())
	for i, sig := range rep.order {
		fmt.Fprintf(&b, "[%d] %s  (%d occurrences)\n", i+1, sig, rep.groups[sig].count)
	}
	b.WriteString("\nall mismatches:\n")
	for _, m := range rep.all {
		b.WriteString(m.String(rep.target))
	}
	return b.String()
}

func TestPositiveZero(t *testing.T) {
	for in, want := range map[string]string{
		`[["m5", ,0], ["m7", ,-0]]`: `[["m5", ,0], ["m7", ,0]]`, // RESP3 doubles
		`["m7", "-0", "m8", "-0"]`:  `["m7", "0", "m8", "0"]`,   // RESP2 bulk strings
		`,-0`:                       `,0`,
		`["m7", ,-0.5, "-05"]`:      `["m7", ,-0.5, "-05"]`, // not a zero
	} {
		if got := positiveZero(in); got != want {
			t.Errorf("positiveZero(%s) = %s, want %s", in, got, want)
		}
	}
}
