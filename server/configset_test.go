package server

import (
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// configNotInNanokv lists the parameters of redis-server 7.0 that nanokv does not know,
// because it does not provide their effect (resp/settings.go).
func configNotInNanokv(name string) bool {
	switch name {
	case "maxmemory-clients", "min-replicas-to-write",
		"min-slaves-to-write", "min-replicas-max-lag", "min-slaves-max-lag", "oom-score-adj",
		"oom-score-adj-values", "shutdown-on-sigint", "shutdown-on-sigterm", "tcp-backlog",
		"dbfilename":
		return true
	}
	return strings.HasPrefix(name, "tls-")
}

// configFixedInNanokv lists the parameters Redis lets CONFIG SET change and nanokv does
// not: the compact encodings' limits, which OBJECT ENCODING applies, and settings whose
// value nanokv reports as it is.
func configFixedInNanokv(name string) bool {
	switch name {
	case "hash-max-listpack-entries", "hash-max-ziplist-entries", "hash-max-listpack-value",
		"hash-max-ziplist-value", "set-max-intset-entries", "zset-max-listpack-entries",
		"zset-max-ziplist-entries", "zset-max-listpack-value", "zset-max-ziplist-value",
		"list-max-listpack-size", "list-max-ziplist-size", "list-compress-depth",
		"stream-node-max-bytes", "stream-node-max-entries",
		"lua-time-limit", "busy-reply-threshold",
		"hll-sparse-max-bytes", "appendfsync":
		return true
	}
	return false
}

// configOwnValue lists the parameters whose value describes the server itself, so differs
// between any two servers, and those CONFIG SET would make this test's servers unusable.
func configOwnValue(name string) bool {
	switch name {
	case "port", "bind", "dir", "appendonly", "protected-mode", "requirepass", "maxclients", "save":
		return true
	}
	return false
}

// configValues are the values TestConfigAsRedis sets every parameter to: each kind's
// valid and invalid forms, bounds and their neighbours, units and Redis's parsing quirks.
var configValues = []string{
	"", "yes", "no", "YES", "-1", "0", "1", "01", "+1", "2", "7", "100", "1000", "1001",
	"65535", "65536", "2147483647", "2147483648", "4294967295", "4294967296",
	"9223372036854775807", "9223372036854775808", "18446744073709551615",
	"18446744073709551616", "-9223372036854775809", "abc", "1k", "1kb", "1KB", "1mb", "2gb",
	"20000000000gb", "1.5", " 1", "1 ", "mb", "-1mb", "10%", "-5%", "0x10", "inf", "nan",
	"Local", "allchannels", "WARNING", "debug", "ip", "hostname", "unknown-endpoint",
	"optional", "relative", "everysec", "swapdb", "clients", "panic-on-replicas", "0777",
	"777", "8", "1 2 3", "50 99.9", "101", "normal 0 0 0", "{title}", "{title} {port}",
	"{bogus}", "{title", "a b", "a_b", "host-1.example", strings.Repeat("h", 256),
	// client-output-buffer-limit's (a normal class's limit small enough to cut this
	// test's own connection off would end the test)
	"normal 1mb 2mb 3", "pubsub 1 1 1 slave 2 2 2", "master 0 0 0", "normal 0 0", "normal x 0 0",
	"replica 1kb 1kb -1", "NORMAL 1gb 2gb +3", "normal 0 0 ", "normal 0 0 \t5", "slave 1 1 4294967296",
	"pubsub 1 1 2147483648", "slave 1 1 99999999999999999999", "pubsub 1 1 1 bogus 1 1 1",
	"normal  0 0 0", "normal 0 0 0 pubsub 32mb 8mb 60",
}

// doRendered sends a command on c and renders its reply; a connection error fails t.
func doRendered(t *testing.T, c *rconn, args ...string) string {
	t.Helper()
	v, err := c.do(args...)
	if err != nil {
		t.Fatal(err)
	}
	return render(v)
}

// TestConfigAsRedis holds CONFIG GET and CONFIG SET to redis-server 7.0's answers: every
// parameter Redis lists is listed by nanokv with Redis's default, or is one nanokv
// leaves out and says it does not know; every value of configValues set to every
// parameter gets Redis's reply, and leaves CONFIG GET with Redis's value; several
// parameters in one CONFIG SET fail as Redis's do, and all or nothing.
func TestConfigAsRedis(t *testing.T) {
	real := startRedisServer(t)
	s := startServer(t, Config{})
	defer s.Close()
	nk, rs := dialNew(t, s.RedisAddr()), dialNew(t, real)
	do := func(c *rconn, args ...string) string { t.Helper(); return doRendered(t, c, args...) }
	get := func(c *rconn, patterns ...string) map[string]string {
		t.Helper()
		v, err := c.do(append([]string{"CONFIG", "GET"}, patterns...)...)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for i := 0; i+1 < len(v.elems); i += 2 {
			m[v.elems[i].str] = v.elems[i+1].str
		}
		return m
	}

	theirs, ours := get(rs, "*"), get(nk, "*")
	var names []string
	for name, want := range theirs {
		got, listed := ours[name]
		switch {
		case configNotInNanokv(name):
			if listed {
				t.Errorf("nanokv lists %s, which it was to leave out", name)
			}
			if r := do(nk, "CONFIG", "SET", name, want); r != "-ERR Unknown option or number of arguments for CONFIG SET - '"+name+"'" {
				t.Errorf("CONFIG SET %s: %s", name, r)
			}
		case !listed:
			t.Errorf("CONFIG GET * lacks %s (Redis: %q)", name, want)
		case configOwnValue(name):
		case got != want:
			t.Errorf("CONFIG GET %s: %q, Redis's default %q", name, got, want)
		default:
			names = append(names, name)
		}
	}
	for name := range ours {
		if _, ok := theirs[name]; !ok {
			t.Errorf("CONFIG GET * lists %s, which Redis does not have", name)
		}
	}
	sort.Strings(names)

	for _, name := range names {
		for _, v := range configValues {
			got, want := do(nk, "CONFIG", "SET", name, v), do(rs, "CONFIG", "SET", name, v)
			gotVal, wantVal := get(nk, name)[name], get(rs, name)[name]
			if configFixedInNanokv(name) {
				if immutable := "-ERR CONFIG SET failed (possibly related to argument '" + name + "') - can't set immutable config"; got != immutable {
					t.Errorf("CONFIG SET %s %q: %s, want %s", name, v, got, immutable)
				}
				wantVal = theirs[name]
			} else if got != want {
				t.Errorf("CONFIG SET %s %q: %s, Redis %s", name, v, got, want)
			}
			if n, err := strconv.ParseUint(wantVal, 10, 64); name == "maxmemory" && err == nil && n > math.MaxInt64 {
				// nanokv's limit is a signed 64-bit number: anything larger is the largest
				wantVal = strconv.FormatInt(math.MaxInt64, 10)
			}
			if gotVal != wantVal {
				t.Errorf("after CONFIG SET %s %q: CONFIG GET %s %q, Redis %q", name, v, name, gotVal, wantVal)
			}
		}
	}

	// What CONFIG GET shows, CONFIG SET takes back where Redis lets it be set, as tools
	// that copy a configuration from server to server rely on.
	roundTrips := 0
	for _, name := range names {
		if configFixedInNanokv(name) {
			continue
		}
		v := get(nk, name)[name]
		if do(rs, "CONFIG", "SET", name, v) != "+OK" {
			continue
		}
		if r := do(nk, "CONFIG", "SET", name, v); r != "+OK" {
			t.Errorf("CONFIG SET %s %q, the value CONFIG GET showed: %s", name, v, r)
		}
		if after := get(nk, name)[name]; after != v {
			t.Errorf("CONFIG SET %s %q made it %q", name, v, after)
		}
		roundTrips++
	}
	if roundTrips < 100 {
		t.Errorf("only %d parameters went from CONFIG GET back to CONFIG SET", roundTrips)
	}

	for _, cmd := range [][]string{
		{"CONFIG", "SET", "hz", "5", "bogus", "1"},
		{"CONFIG", "SET", "bogus", "1", "hz", "x"},
		{"CONFIG", "SET", "hz", "5", "daemonize", "yes"},
		{"CONFIG", "SET", "hz", "x", "daemonize", "yes"},
		{"CONFIG", "SET", "hz", "5", "HZ", "6"},
		{"CONFIG", "SET", "Hz", "6", "hz", "x"},
		{"CONFIG", "SET", "DAEMONIZE", "no"},
		{"CONFIG", "SET", "Bogus", "1"},
		{"CONFIG", "SET", "hz", "20", "loglevel", "bogus"},
		{"CONFIG", "GET", "hz"},
		{"CONFIG", "SET", "loglevel", "warning", "slowlog-max-len", "-1", "hz", "x"},
		{"CONFIG", "GET", "loglevel"},
		{"CONFIG", "SET", "replica-priority", "5", "slave-priority", "6"},
		{"CONFIG", "GET", "*priority"},
		{"CONFIG", "SET", "slave-priority", "x"},
		{"CONFIG", "SET", "maxmemory-policy", "ALLKEYS-LRU", "lazyfree-lazy-user-del", "YES"},
		{"CONFIG", "GET", "maxmemory-policy", "lazyfree-lazy-user-del", "LOGLEVEL"},
		{"CONFIG", "SET", "hz"},
		{"CONFIG", "SET", "hz", "1", "loglevel"},
	} {
		if cmd[1] == "GET" {
			if got, want := get(nk, cmd[2:]...), get(rs, cmd[2:]...); !maps.Equal(got, want) {
				t.Errorf("%q: %v, Redis %v", cmd, got, want)
			}
			continue
		}
		if got, want := do(nk, cmd...), do(rs, cmd...); got != want {
			t.Errorf("%q: %s, Redis %s", cmd, got, want)
		}
	}
}

// TestConfigActsAsRedis: the parameters of settings.go that nanokv acts on change what
// Redis's change. acl-pubsub-default decides the channels of the users and selectors
// created later, and of a user reset; acllog-max-len trims the ACL log at its next
// entry.
func TestConfigActsAsRedis(t *testing.T) {
	real := startRedisServer(t)
	s := startServer(t, Config{})
	defer s.Close()
	conv := [][]string{
		{"ACL", "SETUSER", "before", "on"},
		{"CONFIG", "SET", "acl-pubsub-default", "allchannels"},
		{"ACL", "SETUSER", "after", "on", "(+get ~k)"},
		{"ACL", "SETUSER", "before", "(+set)"},
		{"ACL", "LIST"},
		{"ACL", "SETUSER", "before", "reset"},
		{"CONFIG", "SET", "acl-pubsub-default", "resetchannels"},
		{"ACL", "SETUSER", "third", "on", "(+ping)"},
		{"ACL", "SETUSER", "after", "(+del)"},
		{"ACL", "LIST"},
		{"CONFIG", "GET", "acl*"},
		{"AUTH", "nobody1", "x"}, {"AUTH", "nobody2", "x"}, {"AUTH", "nobody3", "x"},
		{"CONFIG", "SET", "acllog-max-len", "2"},
		{"ACL", "LOG", "RESET"},
		{"AUTH", "nobody1", "x"}, {"AUTH", "nobody2", "x"}, {"AUTH", "nobody3", "x"},
		{"CONFIG", "SET", "acllog-max-len", "1"},
		{"ACL", "LOG"},
		{"AUTH", "nobody4", "x"},
		{"ACL", "LOG"},
		{"CONFIG", "SET", "acllog-max-len", "0"},
		{"AUTH", "nobody5", "x"},
		{"ACL", "LOG"},
	}
	var replies [2][]string
	for i, addr := range []string{s.RedisAddr(), real} {
		c, err := dialRESP(addr)
		if err != nil {
			t.Fatal(err)
		}
		for _, cmd := range conv {
			v, err := c.do(cmd...)
			if err != nil {
				t.Fatal(err)
			}
			r := render(v)
			if strings.EqualFold(cmd[1], "LOG") && len(cmd) == 2 {
				// the entries hold times and client details: compare how many, and whose
				var users []string
				for _, e := range v.elems {
					for j := 0; j+1 < len(e.elems); j += 2 {
						if e.elems[j].str == "username" {
							users = append(users, e.elems[j+1].str)
						}
					}
				}
				r = strings.Join(users, ",")
			}
			if cmd[1] == "GET" {
				r = sortedConfig(v)
			}
			replies[i] = append(replies[i], r)
		}
		c.close()
	}
	for i, cmd := range conv {
		if replies[0][i] != replies[1][i] {
			t.Errorf("%q: %s, Redis %s", cmd, replies[0][i], replies[1][i])
		}
	}
}

// sortedConfig is a CONFIG GET reply's pairs in name order: Redis lists them in its
// dictionary's.
func sortedConfig(v rval) string {
	var pairs []string
	for i := 0; i+1 < len(v.elems); i += 2 {
		pairs = append(pairs, v.elems[i].str+"="+v.elems[i+1].str)
	}
	sort.Strings(pairs)
	return strings.Join(pairs, " ")
}

// TestTimeoutClosesIdleClients: with CONFIG SET timeout 1, a client idle for more than a
// second is closed, and one that keeps sending, a subscriber and a client blocked in
// BLPOP are not, as in Redis.
func TestTimeoutClosesIdleClients(t *testing.T) {
	s := startServer(t, Config{})
	defer s.Close()
	dial := func() *rconn { return dialNew(t, s.RedisAddr()) }
	idle, busy, sub, blocked := dial(), dial(), dial(), dial()
	if v, err := busy.do("CONFIG", "SET", "timeout", "1"); err != nil || render(v) != "+OK" {
		t.Fatalf("CONFIG SET timeout 1: %v %v", render(v), err)
	}
	if _, err := idle.do("PING"); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.do("SUBSCRIBE", "ch"); err != nil {
		t.Fatal(err)
	}
	if err := blocked.send("BLPOP", "nothing", "0"); err != nil {
		t.Fatal(err)
	}
	// Poll from the busy client, which sends every 100 ms, until the idle one is gone.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := busy.do("PING"); err != nil {
			t.Fatalf("the busy client was closed: %v", err)
		}
		v, err := busy.do("CLIENT", "LIST")
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(v.str, "\n"); n == 3 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("after 10 s the server still has %d clients:\n%s", n, v.str)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := idle.do("PING"); err == nil {
		t.Error("the idle client still answers")
	}
	if v, err := sub.do("PING"); err != nil || render(v) != `["pong", ""]` {
		t.Errorf("the subscriber: %s %v", render(v), err)
	}
	if _, err := busy.do("LPUSH", "nothing", "x"); err != nil {
		t.Fatal(err)
	}
	if v, err := blocked.recv(); err != nil || render(v) != `["nothing", "x"]` {
		t.Errorf("the blocked client: %s %v", render(v), err)
	}
	if v, err := busy.do("CONFIG", "SET", "timeout", "0"); err != nil || render(v) != "+OK" {
		t.Fatalf("CONFIG SET timeout 0: %v %v", render(v), err)
	}
}

// TestOutputLimitsAsRedis: client-output-buffer-limit disconnects, as Redis does, a
// client whose reply would pass the normal class's hard limit, and a subscriber whose
// message would pass the pubsub class's, without sending either; replies and messages
// under the limits go out.
func TestOutputLimitsAsRedis(t *testing.T) {
	real := startRedisServer(t)
	s := startServer(t, Config{})
	defer s.Close()
	big := strings.Repeat("x", 20000)
	type step struct {
		client int // 0: the admin, 1: a reader, 2: a subscriber
		cmd    []string
		recv   bool // read one reply of the client
	}
	steps := []step{
		{client: 0, cmd: []string{"SET", "big", big}},
		{client: 0, cmd: []string{"SET", "small", "y"}},
		{client: 0, cmd: []string{"CONFIG", "SET", "client-output-buffer-limit", "normal 10000 0 0"}},
		{client: 1, cmd: []string{"GET", "small"}},
		{client: 1, cmd: []string{"GET", "big"}},
		{client: 0, cmd: []string{"CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0 pubsub 10000 0 0"}},
		{client: 2, cmd: []string{"SUBSCRIBE", "ch"}},
		{client: 0, cmd: []string{"PUBLISH", "ch", "hello"}},
		{client: 2, recv: true},
		{client: 0, cmd: []string{"PUBLISH", "ch", big}},
		{client: 2, recv: true},
		{client: 0, cmd: []string{"PUBLISH", "ch", "after"}},
		{client: 0, cmd: []string{"GET", "big"}},
		{client: 0, cmd: []string{"CONFIG", "GET", "client-output-buffer-limit"}},
	}
	var outcomes [2][]string
	for i, addr := range []string{s.RedisAddr(), real} {
		var conns [3]*rconn
		for j := range conns {
			c, err := dialRESP(addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.close()
			conns[j] = c
		}
		for _, st := range steps {
			c := conns[st.client]
			var v rval
			var err error
			if st.recv {
				v, err = c.recv()
			} else {
				v, err = c.do(st.cmd...)
			}
			out := render(v)
			if err != nil {
				out = "closed"
			}
			if len(out) > 80 {
				out = out[:80]
			}
			outcomes[i] = append(outcomes[i], out)
		}
	}
	for k, st := range steps {
		if outcomes[0][k] != outcomes[1][k] {
			t.Errorf("step %d (client %d %q): %s, Redis %s", k, st.client, st.cmd, outcomes[0][k], outcomes[1][k])
		}
	}
	if outcomes[1][4] != "closed" || outcomes[1][10] != "closed" {
		t.Errorf("redis-server did not close the clients over the limits: %q", outcomes[1])
	}
}

// TestLatencyTrackingAsRedis: with latency-tracking off, calls go into no latency
// histogram and INFO latencystats is empty, as in Redis; back on, they do again.
func TestLatencyTrackingAsRedis(t *testing.T) {
	real := startRedisServer(t)
	s := startServer(t, Config{})
	defer s.Close()
	var got [2][]string
	for i, addr := range []string{s.RedisAddr(), real} {
		c, err := dialRESP(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.close()
		do := func(args ...string) rval {
			v, err := c.do(args...)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		do("CONFIG", "SET", "latency-tracking", "no")
		for range 64 { // nanokv times one call in 16
			do("STRLEN", "k")
			do("HELLO", "2")
		}
		got[i] = append(got[i], render(do("LATENCY", "HISTOGRAM", "strlen", "hello")), do("INFO", "latencystats").str)
		do("CONFIG", "SET", "latency-tracking", "yes")
		for range 64 {
			do("STRLEN", "k")
			do("HELLO", "2")
		}
		var names []string
		for j, e := range do("LATENCY", "HISTOGRAM", "strlen", "hello").elems {
			if j%2 == 0 {
				names = append(names, e.str)
			}
		}
		sort.Strings(names)
		got[i] = append(got[i], strings.Join(names, " "))
	}
	if !slices.Equal(got[0], got[1]) {
		t.Errorf("histograms with tracking off, INFO latencystats, histograms back on:\n%q\nRedis:\n%q", got[0], got[1])
	}
	if got[1][2] != "hello strlen" {
		t.Errorf("redis-server's histograms back on: %q", got[1][2])
	}
}

// TestTimeoutSparesSync: a client receiving an RDB file after SYNC is not closed by
// timeout while it is slow to read (Redis exempts replicas): the file arrives whole.
func TestTimeoutSparesSync(t *testing.T) {
	s := startServer(t, Config{})
	defer s.Close()
	c := dialNew(t, s.RedisAddr())
	value := strings.Repeat("0123456789abcdef", 4096) // 64 KiB
	for i := range 256 {                              // 16 MiB: more than the socket buffers hold
		if _, err := c.do("SET", "k"+strconv.Itoa(i), value); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := c.do("CONFIG", "SET", "timeout", "1"); err != nil || render(v) != "+OK" {
		t.Fatalf("CONFIG SET timeout 1: %v %v", render(v), err)
	}
	// Read nothing until the server's sweep has seen the transfer idle for over a second.
	waitIdle := func(client net.Addr) {
		for deadline := time.Now().Add(20 * time.Second); ; {
			v, err := c.do("CLIENT", "LIST")
			if err != nil {
				t.Fatal(err)
			}
			idle := -1
			for _, line := range strings.Split(v.str, "\n") {
				if strings.Contains(line, "addr="+client.String()+" ") {
					fmt.Sscanf(line[strings.Index(line, " idle=")+1:], "idle=%d", &idle)
				}
			}
			if idle >= 3 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the SYNC client (idle %d s) is gone or never idle:\n%s", idle, v.str)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if file := syncRDB(t, s.RedisAddr(), true, waitIdle); len(file) < 256*len(value) {
		t.Fatalf("the file came cut off: %d bytes", len(file))
	}
}
