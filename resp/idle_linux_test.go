package resp

import (
	"net"
	"syscall"
	"testing"
)

// TestSetKeepAliveAsRedis: tcp-keepalive N sets the socket's probes as Redis's
// anetKeepAlive does (after N s idle, every N/3 s, three of them), and 0 turns them off.
func TestSetKeepAliveAsRedis(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cl, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	tc := nc.(*net.TCPConn)
	opt := func(level, name int) int {
		rc, err := tc.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var v int
		var gerr error
		if err := rc.Control(func(fd uintptr) { v, gerr = syscall.GetsockoptInt(int(fd), level, name) }); err != nil || gerr != nil {
			t.Fatal(err, gerr)
		}
		return v
	}
	for _, c := range []struct{ seconds, idle, interval int64 }{{300, 300, 100}, {2, 2, 1}, {7, 7, 2}} {
		if err := setKeepAlive(tc, c.seconds); err != nil {
			t.Fatal(err)
		}
		got := [4]int{opt(syscall.SOL_SOCKET, syscall.SO_KEEPALIVE), opt(syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE),
			opt(syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL), opt(syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT)}
		if want := [4]int{1, int(c.idle), int(c.interval), 3}; got != want {
			t.Errorf("tcp-keepalive %d: keepalive, idle, interval, count %v, want %v", c.seconds, got, want)
		}
	}
	if err := setKeepAlive(tc, 0); err != nil {
		t.Fatal(err)
	}
	if v := opt(syscall.SOL_SOCKET, syscall.SO_KEEPALIVE); v != 0 {
		t.Errorf("tcp-keepalive 0: SO_KEEPALIVE %d", v)
	}
}
