package bench

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPUPerOp is the CPU time (user + system, every thread) that each process spent per
// operation of one tool run: the members' from /proc/<pid>/stat before and after the
// run, the tool's from its rusage. Divided by the operations the tool made, it is the
// cost of a request on each side, which a machine shared by servers and client turns
// into throughput: a server that spends less per request leaves more of the cores to
// the others. Figures are in µs; /proc counts in ticks of 10 ms, so a run should last a
// second or more for them to mean much.
type CPUPerOp struct {
	// Leader is the member the tool ran against: the leader of a cluster, the server
	// of a standalone system.
	Leader float64 `json:"leader_us"`
	// Followers are the other members, in the order they were started.
	Followers []float64 `json:"followers_us,omitempty"`
	Client    float64   `json:"client_us"`
}

// Servers is the CPU of every member per operation.
func (c *CPUPerOp) Servers() float64 {
	s := c.Leader
	for _, f := range c.Followers {
		s += f
	}
	return s
}

// String is the report's form: "leader 1.83 + followers 0.91, 1.05 · client 1.40", or
// "server 2.07 · client 1.28" for one process.
func (c *CPUPerOp) String() string {
	us := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	if len(c.Followers) == 0 {
		return "server " + us(c.Leader) + " · client " + us(c.Client)
	}
	fs := make([]string, len(c.Followers))
	for i, f := range c.Followers {
		fs[i] = us(f)
	}
	return "leader " + us(c.Leader) + " + followers " + strings.Join(fs, ", ") + " · client " + us(c.Client)
}

// clockTick is the unit of /proc/<pid>/stat's times: USER_HZ, which Linux fixes at 100
// for user space on the architectures Go runs on.
const clockTick = 10 * time.Millisecond

// procCPU is the CPU time process pid has used so far, its threads' past and present
// included (not its children's).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseProcStat(string(b))
}

// parseProcStat reads utime + stime (fields 14 and 15) from a /proc/<pid>/stat line.
// The command name, field 2, is in parentheses and may hold spaces and parentheses of
// its own: the fields are counted from the last ')'.
func parseProcStat(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("proc stat: no command name")
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3, the state
	if len(f) < 13 {
		return 0, errors.New("proc stat: too few fields")
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("proc stat: bad time %q", v)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// cpuTimes is procCPU of every member of in, in order; the error names the first that
// could not be read (a member that exited).
func (in *instance) cpuTimes() ([]time.Duration, error) {
	ts := make([]time.Duration, len(in.members))
	for i, m := range in.members {
		if m.proc == nil || m.proc.exited() {
			return nil, fmt.Errorf("member %d is not running", i+1)
		}
		t, err := procCPU(m.proc.cmd.Process.Pid)
		if err != nil {
			return nil, err
		}
		ts[i] = t
	}
	return ts, nil
}

// perOp is what each member and the client spent per operation between the samples
// before and after a run of ops operations against member leader.
func perOp(before, after []time.Duration, leader int, client time.Duration, ops int) *CPUPerOp {
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(ops) }
	c := &CPUPerOp{Client: us(client)}
	for i := range after {
		if i == leader {
			c.Leader = us(after[i] - before[i])
		} else {
			c.Followers = append(c.Followers, us(after[i]-before[i]))
		}
	}
	return c
}
