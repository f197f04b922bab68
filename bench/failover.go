package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Failover is the kill -9 scenario's result for one system.
type Failover struct {
	System   string    `json:"system"`
	TrialsMs []float64 `json:"trials_ms"` // kill -9 of the leader to the next acknowledged write
	Failed   int       `json:"failed"`    // trials with no acknowledged write within failoverLimit
	P50      float64   `json:"p50_ms"`
	P99      float64   `json:"p99_ms"`
	Max      float64   `json:"max_ms"`
	Skipped  string    `json:"skipped,omitempty"`
	Error    string    `json:"error,omitempty"`
}

// failoverLimit bounds one trial: no write acknowledged by then is a failed trial.
const failoverLimit = 30 * time.Second

// failoverWriters is how many closed-loop writers keep the cluster under load.
const failoverWriters = 4

// runFailover kills the leader of in with SIGKILL while writers keep writing, measures the
// time from the kill to the first write acknowledged that was sent after it, restarts the
// killed member (same ports and WAL) and waits for it to rejoin, trials times.
func (h *harness) runFailover(ctx context.Context, in *instance, trials int, progress func(string)) (Failover, error) {
	res := Failover{System: in.sys.name}
	for t := 0; t < trials && ctx.Err() == nil; t++ {
		progress(fmt.Sprintf("trial %d/%d", t+1, trials))
		ms, err := h.failoverTrial(ctx, in)
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			if errors.Is(err, errNoAck) {
				res.Failed++
				continue
			}
			return res, err
		}
		res.TrialsMs = append(res.TrialsMs, ms)
	}
	s := sortedCopy(res.TrialsMs)
	res.P50, res.P99, res.Max = quantile(s, 0.5), quantile(s, 0.99), quantile(s, 1)
	return res, ctx.Err()
}

var errNoAck = errors.New("no write acknowledged after the kill")

func (h *harness) failoverTrial(ctx context.Context, in *instance) (float64, error) {
	lead, err := in.leader(ctx, 20*time.Second)
	if err != nil {
		return 0, err
	}
	addrs := in.endpoints(protoRedis)
	var target atomic.Int64 // index of the member the writers talk to
	target.Store(int64(lead))
	var killedAt atomic.Int64 // UnixNano of the kill, 0 before
	var firstAck atomic.Int64 // UnixNano of the first ack of a write sent after the kill
	acked := make(chan struct{})
	var once sync.Once
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < failoverWriters; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var rc *respConn
			cur := -1
			for i := 0; ; i++ {
				select {
				case <-stop:
					if rc != nil {
						rc.Close()
					}
					return
				default:
				}
				idx := int(target.Load())
				if rc == nil || cur != idx {
					if rc != nil {
						rc.Close()
					}
					var derr error
					rc, derr = dialRESP(addrs[idx], 100*time.Millisecond)
					if derr != nil {
						rc = nil
						target.CompareAndSwap(int64(idx), int64((idx+1)%len(addrs)))
						time.Sleep(time.Millisecond)
						continue
					}
					cur = idx
				}
				sent := time.Now().UnixNano()
				_, err := rc.do(time.Second, "SET", "failover:"+strconv.Itoa(w)+":"+strconv.Itoa(i%1000), "v")
				if err == nil {
					if k := killedAt.Load(); k != 0 && sent >= k {
						now := time.Now().UnixNano()
						if firstAck.CompareAndSwap(0, now) {
							once.Do(func() { close(acked) })
						}
					}
					continue
				}
				// Find the leader again: follow -MOVED, or try the next member.
				var re *respError
				if errors.As(err, &re) && strings.HasPrefix(re.msg, "MOVED") {
					f := strings.Fields(re.msg)
					for j, a := range addrs {
						if len(f) == 3 && a == f[2] {
							target.Store(int64(j))
						}
					}
				} else {
					if !errors.As(err, &re) {
						rc.Close()
						rc = nil
					}
					target.CompareAndSwap(int64(idx), int64((idx+1)%len(addrs)))
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	// Under load for a moment, then the kill.
	select {
	case <-time.After(300 * time.Millisecond):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	victim := in.members[lead]
	killedAt.Store(time.Now().UnixNano())
	victim.proc.signal(syscall.SIGKILL)
	var ms float64
	select {
	case <-acked:
		ms = float64(firstAck.Load()-killedAt.Load()) / 1e6
	case <-time.After(failoverLimit):
		err = errNoAck
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	<-victim.proc.done
	if rerr := h.restart(ctx, in, lead); rerr != nil {
		return 0, fmt.Errorf("restart member %d: %w", lead+1, rerr)
	}
	return ms, err
}
