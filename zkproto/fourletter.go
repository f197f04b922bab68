package zkproto

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"
)

// The four-letter words: a connection whose first four bytes spell one gets a text
// answer and is closed (ZooKeeper's FourLetterCommands). Only the words in
// Config.FourLetterWords are answered; the others get ZooKeeper's refusal.
var fourLetterWords = map[string]func(s *Server) string{
	"ruok": func(*Server) string { return "imok" },
	"isro": func(*Server) string { return "rw" },
	"srvr": func(s *Server) string { return s.srvr(false) },
	"stat": func(s *Server) string { return s.srvr(true) },
	"envi": (*Server).envi,
	"mntr": (*Server).mntr,
	"conf": (*Server).conf,
	"cons": (*Server).cons,
	"wchs": (*Server).wchs,
	"dirs": func(*Server) string { return "datadir_size: 0\nlogdir_size: 0\n" },
}

func isFourLetterWord(w string) bool {
	_, ok := fourLetterWords[w]
	return ok
}

func (s *Server) fourLetterWord(nc net.Conn, word string) {
	allowed := false
	for _, w := range s.cfg.FourLetterWords {
		if w == "*" || w == word {
			allowed = true
		}
	}
	if !allowed {
		nc.Write([]byte(word + " is not executed because it is not in the whitelist.\n"))
		return
	}
	nc.Write([]byte(fourLetterWords[word](s)))
}

func (s *Server) latency() (minMs, avgMs, maxMs float64) {
	n := s.stats.latencyCount.Load()
	if n == 0 {
		return 0, 0, 0
	}
	return 0, float64(s.stats.latencyTotalUs.Load()) / float64(n) / 1000, float64(s.stats.latencyMaxUs.Load()) / 1000
}

func (s *Server) srvr(withClients bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Zookeeper version: %s, built on %s\n", Version, s.start.UTC().Format("01/02/2006 15:04 MST"))
	if withClients {
		b.WriteString("Clients:\n")
		for _, c := range s.connList() {
			fmt.Fprintf(&b, " /%s[1](queued=0,recved=%d,sent=%d)\n", c.remote, c.received.Load(), c.sent.Load())
		}
		b.WriteString("\n")
	}
	mn, avg, mx := s.latency()
	fmt.Fprintf(&b, "Latency min/avg/max: %g/%.4f/%g\n", mn, avg, mx)
	fmt.Fprintf(&b, "Received: %d\nSent: %d\nConnections: %d\nOutstanding: 0\n", s.stats.received.Load(), s.stats.sent.Load(), s.NumConns())
	fmt.Fprintf(&b, "Zxid: 0x%x\nMode: %s\n", s.store.ZKLastZxid(), s.b.Mode())
	nodes, _, _ := s.store.ZKCounts()
	fmt.Fprintf(&b, "Node count: %d\n", nodes)
	return b.String()
}

func (s *Server) envi() string {
	host, _ := os.Hostname()
	wd, _ := os.Getwd()
	var b strings.Builder
	b.WriteString("Environment:\n")
	for _, kv := range [][2]string{
		{"zookeeper.version", Version + ", built on " + s.start.UTC().Format("01/02/2006 15:04 MST")},
		{"host.name", host},
		{"java.version", runtime.Version()},
		{"java.vendor", "nanokv"},
		{"os.name", runtime.GOOS},
		{"os.arch", runtime.GOARCH},
		{"user.dir", wd},
	} {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], kv[1])
	}
	return b.String()
}

func (s *Server) mntr() string {
	nodes, ephemerals, dataBytes := s.store.ZKCounts()
	_, watchPaths, watches := s.watches.counts()
	mn, avg, mx := s.latency()
	var b strings.Builder
	for _, kv := range []struct {
		k string
		v any
	}{
		{"zk_version", Version},
		{"zk_server_state", s.b.Mode()},
		{"zk_avg_latency", avg},
		{"zk_max_latency", mx},
		{"zk_min_latency", mn},
		{"zk_packets_received", s.stats.received.Load()},
		{"zk_packets_sent", s.stats.sent.Load()},
		{"zk_num_alive_connections", s.NumConns()},
		{"zk_outstanding_requests", 0},
		{"zk_znode_count", nodes},
		{"zk_watch_count", watches},
		{"zk_watched_paths", watchPaths},
		{"zk_ephemerals_count", ephemerals},
		{"zk_approximate_data_size", dataBytes},
		{"zk_uptime", time.Since(s.start).Milliseconds()},
	} {
		fmt.Fprintf(&b, "%s\t%v\n", kv.k, kv.v)
	}
	return b.String()
}

func (s *Server) conf() string {
	var b strings.Builder
	port := ""
	s.mu.Lock()
	if len(s.lns) > 0 {
		_, port, _ = net.SplitHostPort(s.lns[0].Addr().String())
	}
	s.mu.Unlock()
	fmt.Fprintf(&b, "clientPort=%s\n", port)
	fmt.Fprintf(&b, "dataDir=%s\ndataDirSize=0\ndataLogDir=%s\ndataLogSize=0\n", s.cfg.DataDir, s.cfg.DataDir)
	fmt.Fprintf(&b, "tickTime=%d\nmaxClientCnxns=%d\n", s.cfg.TickTime.Milliseconds(), s.cfg.MaxClientCnxns)
	fmt.Fprintf(&b, "minSessionTimeout=%d\nmaxSessionTimeout=%d\n", s.cfg.MinSessionTimeout.Milliseconds(), s.cfg.MaxSessionTimeout.Milliseconds())
	fmt.Fprintf(&b, "clientPortListenBacklog=-1\nserverId=%d\n", s.cfg.ServerID)
	return b.String()
}

func (s *Server) cons() string {
	type line struct {
		remote string
		text   string
	}
	var lines []line
	s.mu.Lock()
	for _, conns := range s.bySess {
		for c := range conns {
			lines = append(lines, line{c.remote, fmt.Sprintf(" /%s[1](queued=0,recved=%d,sent=%d,sid=0x%x,lop=NA,est=%d,to=%d)\n",
				c.remote, c.received.Load(), c.sent.Load(), c.sess, c.connected.UnixMilli(), c.timeout)})
		}
	}
	s.mu.Unlock()
	sort.Slice(lines, func(i, j int) bool { return lines[i].remote < lines[j].remote })
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.text)
	}
	b.WriteString("\n")
	return b.String()
}

func (s *Server) wchs() string {
	conns, paths, watches := s.watches.counts()
	return fmt.Sprintf("%d connections watching %d paths\nTotal watches:%d\n", conns, paths, watches)
}
