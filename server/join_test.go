package server

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeMember answers one command per connection from replies, in turn, and counts the
// RAFT.NODE ADD requests it read (their ids in ids).
type fakeMember struct {
	mu      sync.Mutex
	replies map[string][]string // by command name: the raw replies, in turn
	ids     []string
}

func (f *fakeMember) serve(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.answer(c)
		}
	}()
	return ln.Addr().String()
}

func (f *fakeMember) answer(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	args, err := readCommand(r)
	if err != nil || len(args) == 0 {
		return
	}
	name := strings.ToUpper(args[0])
	f.mu.Lock()
	if name == "RAFT.NODE" && len(args) == 4 {
		f.ids = append(f.ids, args[2])
	}
	var reply string
	if q := f.replies[name]; len(q) > 0 {
		reply, f.replies[name] = q[0], q[1:]
	}
	f.mu.Unlock()
	io.WriteString(c, reply)
}

// added is the ids of the RAFT.NODE ADD requests read so far.
func (f *fakeMember) added() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ids...)
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil {
		return nil, err
	}
	args := make([]string, n)
	for i := range args {
		if _, err := r.ReadString('\n'); err != nil { // $len
			return nil, err
		}
		s, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		args[i] = strings.TrimSuffix(s, "\r\n")
	}
	return args, nil
}

// TestJoinRetryAfterALostAnswer (cluster_test.go) retries through a proxy that loses the
// first answer. A member built before RAFT.NODE took RedisRaft's current words answers
// the retry without "ERR ": the join still takes the id its first request got.
func TestJoinRetryHearsTheTakenIDWithoutERR(t *testing.T) {
	f := &fakeMember{replies: map[string][]string{
		"RAFT.NODE": {"-TIMEOUT Request timed out\r\n", "-" + strings.TrimPrefix(errNodeIDUsed, "ERR ") + "\r\n"},
		"INFO":      {"$26\r\nraft_dbid:00000000000000ab\r\n"},
	}}
	addr := f.serve(t)
	id, cid, err := joinCluster(addr, 7, "127.0.0.1:1", t.Logf)
	if err != nil || id != 7 || cid != 0xab {
		t.Fatalf("joined as %d of cluster %x, %v; want 7 of ab", id, cid, err)
	}
	if ids := f.added(); len(ids) != 2 || ids[0] != "7" || ids[1] != "7" {
		t.Fatalf("RAFT.NODE ADD sent with ids %v, want 7 twice", ids)
	}
}

// Without a lost answer before it, "id taken" means another node has the id: the join
// fails rather than pose as that member.
func TestJoinWithATakenIDFails(t *testing.T) {
	f := &fakeMember{replies: map[string][]string{"RAFT.NODE": {"-" + errNodeIDUsed + "\r\n"}}}
	addr := f.serve(t)
	if id, _, err := joinCluster(addr, 7, "127.0.0.1:1", t.Logf); err == nil || !strings.Contains(err.Error(), errNodeIDUsed) {
		t.Fatalf("joined as %d, %v; want the refusal", id, err)
	}
	if ids := f.added(); len(ids) != 1 {
		t.Fatalf("RAFT.NODE ADD sent %d times, want once", len(ids))
	}
}
