package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The open-loop generator offers a fixed rate of SETs whatever the server does, and
// measures every request from the time it was *scheduled* to be sent, not from when it
// was actually written: a server that stalls is charged for the requests that queued
// behind the stall (no coordinated omission). Sweeping the rate gives the
// throughput–latency curve of the papers' figures.

// schedule is the send times of one connection's share of an open-loop step: the
// offered rate is spread evenly over conns connections, interleaved, so request k of
// connection c is due at (k·conns + c) / rate.
type schedule struct {
	rate  float64 // requests per second over all connections
	conns int
	conn  int // this connection's index
}

// at is when request k of this connection is due, from the step's start.
func (s schedule) at(k int) time.Duration {
	return time.Duration(float64(k*s.conns+s.conn) / s.rate * float64(time.Second))
}

// due is how many of this connection's requests are due by elapsed (the first k with
// at(k) > elapsed).
func (s schedule) due(elapsed time.Duration) int {
	if elapsed < 0 {
		return 0
	}
	x := elapsed.Seconds()*s.rate - float64(s.conn)
	if x < 0 {
		return 0
	}
	k := int(math.Floor(x/float64(s.conns))) + 1
	for k > 0 && s.at(k-1) > elapsed {
		k--
	}
	for s.at(k) <= elapsed {
		k++
	}
	return k
}

// total is how many requests the connection sends in a step of length dur.
func (s schedule) total(dur time.Duration) int { return s.due(dur - 1) }

// sweepRates are the offered rates of a sweep: doubling from start up to max.
func sweepRates(start, max float64) []float64 {
	var rates []float64
	for r := start; r <= max*1.0001; r *= 2 {
		rates = append(rates, r)
	}
	return rates
}

// openLoopStep offers rate SETs/s over conns connections to addr for dur.
func openLoopStep(ctx context.Context, addr string, rate float64, conns int, dur time.Duration, valueSize int) (Row, error) {
	row := Row{Test: fmt.Sprintf("SET at %.0f/s", rate), Tool: "built-in open loop", Offered: rate}
	value := make([]byte, valueSize)
	for i := range value {
		value[i] = 'x'
	}
	hist := newHist()
	var histMu sync.Mutex
	var completed, errCount atomic.Int64
	var lastReply atomic.Int64 // ns since start of the last reply
	start := time.Now().Add(50 * time.Millisecond)
	drainBy := start.Add(dur + 2*time.Second)
	var wg sync.WaitGroup
	errc := make(chan error, conns)
	for c := 0; c < conns; c++ {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return row, err
		}
		defer nc.Close()
		s := schedule{rate: rate, conns: conns, conn: c}
		n := s.total(dur)
		// The writer tells the reader each request's due time, in order.
		dueq := make(chan time.Duration, n+1)
		wg.Add(2)
		go func() { // writer
			defer wg.Done()
			defer close(dueq)
			// The writer sleeps until the next request is due and then sends everything
			// due by then in one write: at high rates the timer's own lateness batches
			// requests, never a busy loop; latency counts from each request's due time.
			var buf []byte
			sent := 0
			time.Sleep(time.Until(start))
			for sent < n && ctx.Err() == nil {
				upto := min(s.due(time.Since(start)), n)
				buf = buf[:0]
				for ; sent < upto; sent++ {
					key := "ol:" + strconv.Itoa(c) + ":" + strconv.Itoa(sent%100000)
					buf = appendCommand(buf, "SET", key, string(value))
					dueq <- s.at(sent)
				}
				if len(buf) > 0 {
					nc.SetWriteDeadline(drainBy)
					if _, err := nc.Write(buf); err != nil {
						errc <- err
						return
					}
				}
				if sent < n {
					time.Sleep(s.at(sent) - time.Since(start))
				}
			}
		}()
		go func() { // reader
			defer wg.Done()
			local := newHist()
			defer func() {
				histMu.Lock()
				hist.Merge(local)
				histMu.Unlock()
			}()
			r := bufio.NewReaderSize(nc, 64<<10)
			nc.SetReadDeadline(drainBy)
			for due := range dueq {
				_, err := readReply(r)
				now := time.Since(start)
				var re *respError
				switch {
				case errors.As(err, &re):
					errCount.Add(1)
				case err != nil:
					// Out of time: every request still owed is charged up to the deadline.
					errCount.Add(1)
					local.RecordValue((drainBy.Sub(start) - due).Microseconds())
					for due := range dueq {
						errCount.Add(1)
						local.RecordValue((drainBy.Sub(start) - due).Microseconds())
					}
					return
				}
				completed.Add(1)
				lastReply.Store(int64(now))
				local.RecordValue(max((now - due).Microseconds(), 1))
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return row, err
	}
	if ctx.Err() != nil {
		return row, ctx.Err()
	}
	elapsed := time.Duration(lastReply.Load())
	if elapsed < dur {
		elapsed = dur
	}
	row.Ops = float64(completed.Load()) / elapsed.Seconds()
	row.Errors = errCount.Load()
	rowFromHist(&row, hist)
	return row, nil
}

// saturated says a sweep should stop: the server fell well behind the offered rate, or
// its tail latency passed what any user would accept.
func saturated(r Row) bool { return r.Ops < 0.8*r.Offered || r.P99 > 200 || r.Errors > 0 }
