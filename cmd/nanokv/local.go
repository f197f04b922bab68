package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// runLocal is `nanokv local`: a cluster of N child processes of this binary on loopback,
// for trying replication and failover on one machine. It prints every member's
// addresses, passes each child's log through with a prefix, and on SIGINT or SIGTERM
// stops them all. A child that dies (say, killed with kill -9 to watch a failover) is
// reported and the others keep running.
func runLocal(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("nanokv local", flag.ContinueOnError)
	fs.SetOutput(stderr)
	nodes := fs.Int("nodes", 3, "number of members")
	mode := fs.String("mode", "offload", "consensus mode of every member: offload|raft")
	redisBase := fs.Int("redis-base", 6401, "Redis port of member 1; member i listens on base+i-1")
	clusterBase := fs.Int("cluster-base", 7401, "member-traffic port of member 1")
	memcacheBase := fs.Int("memcache-base", 0, "memcached port of member 1 (0: no memcached listener)")
	zkBase := fs.Int("zk-base", 2181, "ZooKeeper port of member 1 (0: no ZooKeeper listener)")
	dataDir := fs.String("data-dir", "nanokv-local", "member i keeps its WAL in DIR/node<i>")
	fsync := fs.String("fsync", "everysec", "WAL fsync policy of every member: always|everysec|no")
	memoryOnly := fs.Bool("memory-only", false, "members keep no WAL")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: nanokv local [flags] [-- member flags]\n\nmember flags (after --) are given to every member, as in `-- --redis-event-loop=false`.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	memberFlags := fs.Args()
	if *nodes < 1 || *nodes > 9 {
		return fmt.Errorf("--nodes %d: want 1 to 9", *nodes)
	}
	if *mode != "raft" && *mode != "offload" {
		return fmt.Errorf("--mode %s: clusters run --mode raft or offload in this build", *mode)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var peers []string
	for i := 1; i <= *nodes; i++ {
		peers = append(peers, fmt.Sprintf("%d=127.0.0.1:%d", i, *clusterBase+i-1))
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)

	var out sync.Mutex // children's log lines are written whole
	exited := make(chan int, *nodes)
	var cmds []*exec.Cmd
	var wg sync.WaitGroup
	stopAll := func() {
		for _, c := range cmds {
			c.Process.Signal(syscall.SIGTERM)
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			for _, c := range cmds {
				c.Process.Kill()
			}
			<-done
		}
	}
	for i := 1; i <= *nodes; i++ {
		mc := ""
		if *memcacheBase > 0 {
			mc = "127.0.0.1:" + strconv.Itoa(*memcacheBase+i-1)
		}
		zk := ""
		if *zkBase > 0 {
			zk = "127.0.0.1:" + strconv.Itoa(*zkBase+i-1)
		}
		cmd := exec.Command(exe, append([]string{
			"--id", strconv.Itoa(i),
			"--peers", strings.Join(peers, ","),
			"--redis", "127.0.0.1:" + strconv.Itoa(*redisBase+i-1),
			"--memcache", mc, "--zk", zk,
			"--data-dir", filepath.Join(*dataDir, "node"+strconv.Itoa(i)),
			"--fsync", *fsync, "--mode", *mode, "--memory-only=" + strconv.FormatBool(*memoryOnly)},
			memberFlags...)...)
		pr, pw := io.Pipe()
		cmd.Stdout, cmd.Stderr = pw, pw
		if err := cmd.Start(); err != nil {
			stopAll()
			return fmt.Errorf("member %d: %w", i, err)
		}
		cmds = append(cmds, cmd)
		prefix := fmt.Sprintf("[node %d] ", i)
		go func() {
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				out.Lock()
				fmt.Fprintln(stderr, prefix+sc.Text())
				out.Unlock()
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := cmd.Wait()
			pw.Close()
			out.Lock()
			fmt.Fprintf(stderr, "%sexited: %v\n", prefix, errOrClean(err))
			out.Unlock()
			exited <- i
		}()
	}
	out.Lock()
	fmt.Fprintf(stdout, "nanokv local: %d members (stop with Ctrl-C)\n", *nodes)
	for i := 1; i <= *nodes; i++ {
		fmt.Fprintf(stdout, "  node %d  redis 127.0.0.1:%d  cluster 127.0.0.1:%d", i, *redisBase+i-1, *clusterBase+i-1)
		if *memcacheBase > 0 {
			fmt.Fprintf(stdout, "  memcache 127.0.0.1:%d", *memcacheBase+i-1)
		}
		if *zkBase > 0 {
			fmt.Fprintf(stdout, "  zookeeper 127.0.0.1:%d", *zkBase+i-1)
		}
		fmt.Fprintln(stdout)
	}
	out.Unlock()
	alive := *nodes
	for alive > 0 {
		select {
		case <-sig:
			stopAll()
			return nil
		case <-exited:
			alive--
		}
	}
	return fmt.Errorf("every member exited")
}

func errOrClean(err error) string {
	if err == nil {
		return "cleanly"
	}
	return err.Error()
}
