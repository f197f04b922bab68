package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// procs is every process the harness started. Each runs in a process group of its own
// (so a JVM's or a tool's children die with it) with SIGKILL as its parent-death signal
// (so even a kill -9 of the harness leaves nothing behind); killAll stops whatever is
// still running, on the normal path, on a failed scenario and on SIGINT/SIGTERM.
type procs struct {
	mu   sync.Mutex
	list []*proc
}

// proc is one started process with its output in a log file.
type proc struct {
	name    string
	argv    []string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has been waited for
	err     error         // Wait's result, valid once done is closed
}

// start runs argv with stdout and stderr appended to logPath.
func (ps *procs) start(name, logPath string, argv []string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, argv: argv, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	ps.mu.Lock()
	ps.list = append(ps.list, p)
	ps.mu.Unlock()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process's whole group.
func (p *proc) signal(sig syscall.Signal) {
	if !p.exited() {
		syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// stop asks the group to terminate and kills it if it has not within grace.
func (p *proc) stop(grace time.Duration) {
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.signal(syscall.SIGKILL)
		<-p.done
	}
	// A group member that outlived the leader (a JVM thread's child, say) goes too.
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

// logTail is the last n lines of the process's log, for error messages.
func (p *proc) logTail(n int) string {
	b, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// killAll stops every process still running, concurrently.
func (ps *procs) killAll() {
	ps.mu.Lock()
	list := append([]*proc(nil), ps.list...)
	ps.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range list {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop(3 * time.Second) }()
	}
	wg.Wait()
}

// runTool runs a load tool to completion and returns its combined output. Cancelling ctx
// kills the tool's process group.
func runTool(ctx context.Context, argv []string) (string, error) {
	out, _, err := runToolCPU(ctx, argv)
	return out, err
}

// runToolCPU is runTool that also returns the CPU time (user + system) the tool used.
func runToolCPU(ctx context.Context, argv []string) (string, time.Duration, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.CombinedOutput()
	var cpu time.Duration
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if ctx.Err() != nil {
		return string(out), cpu, ctx.Err()
	}
	if err != nil {
		return string(out), cpu, fmt.Errorf("%s: %w: %s", argv[0], err, lastLines(string(out), 5))
	}
	return string(out), cpu, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// freePort asks the OS for a free loopback port. Between the close and the server's
// bind another process could take it (startRetrying starts again then).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func freeAddr() (string, error) {
	p, err := freePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", p), nil
}

// errNotReady is returned by a readiness probe that should be tried again.
var errNotReady = errors.New("bench: not ready")

// waitFor polls probe every interval until it succeeds, p exits, ctx ends or timeout.
// A process that exits while starting fails with its log's last lines.
func waitFor(ctx context.Context, p *proc, timeout, interval time.Duration, probe func() error) error {
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		err := probe()
		if err == nil {
			return nil
		}
		if p != nil && p.exited() {
			return &exitedError{name: p.name, tail: p.logTail(3)}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %v", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// exitedError is a process that exited while it was being started.
type exitedError struct{ name, tail string }

func (e *exitedError) Error() string {
	return fmt.Sprintf("%s exited while starting: %s", e.name, e.tail)
}

// portTaken reports whether the process could not bind its address.
func (e *exitedError) portTaken() bool { return strings.Contains(e.tail, "address already in use") }

// unsupported reports whether the process refused a configuration this build lacks
// (nanokv says "not in this build" or "in this build"), which is a skip, not a failure.
func (e *exitedError) unsupported() bool { return strings.Contains(e.tail, "in this build") }

func dialOK(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	return c.Close()
}
