package server

import (
	"bufio"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nanokv/nanokv/consensus"
)

// benchClients runs b.N requests from `clients` connections, each sending `pipeline`
// requests per round trip, like redis-benchmark -c clients -P pipeline. The request is
// built by req(i) for a global request number i.
func benchClients(b *testing.B, s *Server, clients, pipeline int, req func(i int64) string) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", s.RedisAddr())
			if err != nil {
				b.Error(err)
				return
			}
			defer nc.Close()
			r := bufio.NewReaderSize(nc, 64<<10)
			var out []byte
			for {
				start := next.Add(int64(pipeline)) - int64(pipeline)
				if start >= int64(b.N) {
					return
				}
				n := min(int64(pipeline), int64(b.N)-start)
				out = out[:0]
				for i := int64(0); i < n; i++ {
					out = append(out, req(start+i)...)
				}
				if _, err := nc.Write(out); err != nil {
					b.Error(err)
					return
				}
				for i := int64(0); i < n; i++ {
					line, err := r.ReadSlice('\n')
					if err != nil {
						b.Error(err)
						return
					}
					if line[0] == '-' {
						b.Errorf("error reply %q", line)
						return
					}
					if line[0] == '$' && line[1] != '-' {
						var size int
						fmt.Sscanf(string(line[1:]), "%d", &size)
						r.Discard(size + 2)
					}
				}
			}
		}()
	}
	wg.Wait()
}

func setReq(i int64) string {
	k := fmt.Sprintf("key:%012d", i%1000000)
	return fmt.Sprintf("*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$3\r\nxxx\r\n", len(k), k)
}

func getReq(i int64) string {
	k := fmt.Sprintf("key:%012d", i%1000)
	return fmt.Sprintf("*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", len(k), k)
}

func benchServer(b *testing.B, cfg Config) *Server {
	b.Helper()
	if !cfg.MemoryOnly {
		cfg.DataDir = b.TempDir()
	}
	cfg.RedisAddr = "127.0.0.1:0"
	s, err := Start(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkSET measures blind writes through the whole pipeline (parse, propose, WAL,
// commit, reply; apply runs behind), as redis-benchmark -t set -c 50 does.
func BenchmarkSET(b *testing.B) {
	for _, p := range []int{1, 16} {
		for _, fsync := range []consensus.FsyncPolicy{consensus.FsyncEverySec, consensus.FsyncAlways} {
			b.Run(fmt.Sprintf("P%d/fsync=%s", p, fsync), func(b *testing.B) {
				s := benchServer(b, Config{Fsync: fsync})
				benchClients(b, s, 50, p, setReq)
			})
		}
	}
}

// BenchmarkGET measures reads: the read barrier, then the store under a shard read lock.
func BenchmarkGET(b *testing.B) {
	for _, p := range []int{1, 16} {
		b.Run(fmt.Sprintf("P%d", p), func(b *testing.B) {
			s := benchServer(b, Config{MemoryOnly: true})
			benchClients(&testing.B{N: 1000}, s, 1, 1000, setReqSmall)
			benchClients(b, s, 50, p, getReq)
		})
	}
}

func setReqSmall(i int64) string {
	k := fmt.Sprintf("key:%012d", i%1000)
	return fmt.Sprintf("*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$3\r\nxxx\r\n", len(k), k)
}
