package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/go-zookeeper/zk"
)

// zkValueSize is the payload of every setData, as in ZooKeeper's own benchmarks.
const zkValueSize = 100

// Histogram bounds, in microseconds: 1 µs to 60 s at 3 significant digits.
const (
	histMinUs = 1
	histMaxUs = 60_000_000
	histSig   = 3
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMinUs, histMaxUs, histSig) }

// rowFromHist fills a row's percentiles and CDF from a histogram of µs.
func rowFromHist(row *Row, h *hdrhistogram.Histogram) {
	if h.TotalCount() == 0 {
		row.P50, row.P99, row.P999 = -1, -1, -1
		return
	}
	row.P50 = float64(h.ValueAtQuantile(50)) / 1000
	row.P99 = float64(h.ValueAtQuantile(99)) / 1000
	row.P999 = float64(h.ValueAtQuantile(99.9)) / 1000
	for _, b := range h.CumulativeDistributionWithTicks(5) {
		row.CDF = append(row.CDF, CDFPoint{Ms: float64(b.ValueAt) / 1000, Fraction: b.Quantile / 100})
	}
}

// zkLoad is the built-in ZooKeeper load generator: clients sessions (go-zookeeper, one
// session each, spread over servers as ZooKeeper clients spread themselves), each doing
// setData of 100 bytes on a znode of its own in a closed loop for dur. It reports
// ops/s and the latency distribution of every call.
func zkLoad(ctx context.Context, servers []string, clients int, dur time.Duration) (Row, error) {
	row := Row{Test: fmt.Sprintf("setData, %d clients", clients), Tool: "built-in (go-zookeeper)"}
	if clients == 1 {
		row.Test = "setData, 1 client"
	}
	quiet := zk.WithLogger(log.New(io.Discard, "", 0))
	root := fmt.Sprintf("/nanokv-bench-%d", time.Now().UnixNano())
	conns := make([]*zk.Conn, clients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range conns {
		c, events, err := zk.Connect(servers, 10*time.Second, quiet)
		if err != nil {
			return row, err
		}
		conns[i] = c
		if err := waitSession(ctx, events); err != nil {
			return row, fmt.Errorf("session %d: %w", i, err)
		}
	}
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conns[0].Create(root, nil, 0, acl); err != nil {
		return row, fmt.Errorf("create %s: %w", root, err)
	}
	value := make([]byte, zkValueSize)
	for i := range value {
		value[i] = 'v'
	}
	for i, c := range conns {
		if _, err := c.Create(fmt.Sprintf("%s/c%d", root, i), value, 0, acl); err != nil {
			return row, fmt.Errorf("create node %d: %w", i, err)
		}
	}
	hists := make([]*hdrhistogram.Histogram, clients)
	errs := make([]int64, clients)
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(dur)
	for i, c := range conns {
		hists[i] = newHist()
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := fmt.Sprintf("%s/c%d", root, i)
			for ctx.Err() == nil {
				t0 := time.Now()
				if t0.After(stop) {
					return
				}
				if _, err := c.Set(path, value, -1); err != nil {
					errs[i]++
					if errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrConnectionClosed) {
						return
					}
					continue
				}
				hists[i].RecordValue(time.Since(t0).Microseconds())
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if ctx.Err() != nil {
		return row, ctx.Err()
	}
	total := newHist()
	for i, h := range hists {
		total.Merge(h)
		row.Errors += errs[i]
	}
	if clients == 1 {
		row.Session, _ = zkMode(conns[0].Server()) // unknown if the server does not say
	}
	row.Ops = float64(total.TotalCount()) / elapsed.Seconds()
	rowFromHist(&row, total)
	if total.TotalCount() == 0 {
		return row, fmt.Errorf("no setData succeeded (%d errors)", row.Errors)
	}
	return row, nil
}

func waitSession(ctx context.Context, events <-chan zk.Event) error {
	t := time.NewTimer(15 * time.Second)
	defer t.Stop()
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return nil
			}
		case <-t.C:
			return errors.New("no session within 15s")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
