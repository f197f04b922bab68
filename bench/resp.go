package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// respConn is the harness's own minimal RESP2 client. The open-loop generator and the
// failover prober need what a pooled client hides: requests written at times the
// harness chooses, replies matched in order, and a deadline on every call.
type respConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialRESP(addr string, timeout time.Duration) (*respConn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return &respConn{c: c, r: bufio.NewReaderSize(c, 64<<10)}, nil
}

func (rc *respConn) Close() error { return rc.c.Close() }

// do sends one command and reads its reply within timeout. A RESP error reply is
// returned as a *respError.
func (rc *respConn) do(timeout time.Duration, args ...string) (string, error) {
	rc.c.SetDeadline(time.Now().Add(timeout))
	if _, err := rc.c.Write(appendCommand(nil, args...)); err != nil {
		return "", err
	}
	return readReply(rc.r)
}

// respError is an error reply ("-MOVED 0 127.0.0.1:1234").
type respError struct{ msg string }

func (e *respError) Error() string { return e.msg }

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(dst []byte, args ...string) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// maxBulk bounds a bulk reply the harness will read (its values are small).
const maxBulk = 64 << 20

// readReply reads one RESP2 reply; arrays are read and flattened into one line.
func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("resp: empty line")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", &respError{line[1:]}
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n > maxBulk {
			return "", fmt.Errorf("resp: bad bulk length %q", line)
		}
		if n < 0 {
			return "", nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return "", err
		}
		return string(b[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n > 1<<20 {
			return "", fmt.Errorf("resp: bad array length %q", line)
		}
		var parts []string
		for i := 0; i < n; i++ {
			s, err := readReply(r)
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, " "), nil
	}
	return "", fmt.Errorf("resp: unexpected %q", line)
}

// infoField returns field's value from an INFO reply ("" if absent).
func infoField(info, field string) string {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			return v
		}
	}
	return ""
}

// isLeader asks addr whether it leads its Raft cluster (nanokv and RedisRaft both
// answer INFO raft with raft_role).
func isLeader(addr string) bool {
	rc, err := dialRESP(addr, 300*time.Millisecond)
	if err != nil {
		return false
	}
	defer rc.Close()
	info, err := rc.do(time.Second, "INFO", "raft")
	return err == nil && infoField(info, "raft_role") == "leader"
}
