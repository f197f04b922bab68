// Package testnet picks loopback ports for tests that must name a port before a child
// process (a nanokv member, redis-server, ZooKeeper) binds it.
//
// Such ports are taken below the kernel's ephemeral range. A port in that range, even one
// that 127.0.0.1:0 just returned and was closed again, may be handed to any outgoing
// connection or to another :0 listener (of this test, or of a test package running beside
// it) before the child binds it. A member that started seconds after the check (the fourth
// of TestClusterProcessesUnderFaults) once found its port taken that way. Below the range
// the kernel never hands a port out by itself, so only another explicit bind can race.
package testnet

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"testing"
)

// FreeRanges returns the first ports of k disjoint runs of n consecutive loopback ports
// that are free now. The runs are carved from one probed block, so they never overlap:
// two separate probes could (one CI run gave redis ports 25303-25305 and cluster ports
// 25302-25304, and two members found their port taken by a sibling).
func FreeRanges(t testing.TB, n, k int) []int {
	t.Helper()
	lo := ephemeralLow()
	total := n * k
	for attempt := 0; attempt < 50; attempt++ {
		base := 10000 + rand.IntN(lo-10000-total)
		if probe(base, total) {
			bases := make([]int, k)
			for j := range bases {
				bases[j] = base + j*n
			}
			return bases
		}
	}
	t.Fatal("no free port range")
	return nil
}

// FreePort returns one loopback port that is free now.
func FreePort(t testing.TB) int {
	t.Helper()
	return FreeRanges(t, 1, 1)[0]
}

// probe reports whether ports base … base+n-1 can all be bound on loopback.
func probe(base, n int) bool {
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's default when
// it cannot be read, or when it is too low to leave room below it).
func ephemeralLow() int {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var hi int
		if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil || lo < 12000 {
			lo = 32768
		}
	}
	return lo
}
