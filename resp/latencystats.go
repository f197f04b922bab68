package resp

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/nanokv/nanokv/kvstore"
)

// LATENCY HISTOGRAM and INFO latencystats, over each command's HDR histogram of its timed
// calls (kvstore.CmdStats.Latency): Redis's buckets and percentiles for the same
// samples. Redis times every call; nanokv times one in 16 (INFO commandstats), so a
// histogram's counts are its timed calls scaled up to all calls, and percentiles are
// those of the timed calls.

// defaultLatencyPercentiles is latency-tracking-info-percentiles's default, Redis's.
var defaultLatencyPercentiles = []float64{50, 99, 99.9}

// latencyHistogram is LATENCY HISTOGRAM [command ...]: every command with timed calls,
// or those named (a container stands for its subcommands), as Redis answers.
func latencyHistogram(c *conn, args [][]byte) {
	type entry struct {
		name    string
		calls   int64
		buckets []kvstore.LatencyBucket
	}
	want := map[string]bool{}
	for _, a := range args[2:] {
		want[strings.ToLower(string(a))] = true
	}
	var out []entry
	c.s.eachCommandStats(func(name string, st *kvstore.CmdStats) {
		container, _, _ := strings.Cut(name, "|")
		if len(want) > 0 && !want[name] && !want[container] {
			return
		}
		if calls, buckets, _, ok := st.Latency(nil); ok {
			out = append(out, entry{name, calls, buckets})
		}
	})
	c.Map(len(out))
	for _, e := range out {
		c.BulkString(e.name)
		c.Map(2)
		c.BulkString("calls")
		c.Int(e.calls)
		c.BulkString("histogram_usec")
		c.Map(len(e.buckets))
		for _, b := range e.buckets {
			c.Int(b.Usec)
			c.Int(b.Calls)
		}
	}
}

// appendLatencyStats writes INFO latencystats: the latency-tracking-info-percentiles of
// every command with timed calls.
func (s *Server) appendLatencyStats(b *strings.Builder) {
	ps := s.config().LatencyPercentiles
	s.eachCommandStats(func(name string, st *kvstore.CmdStats) {
		_, _, pct, ok := st.Latency(ps)
		if !ok {
			return
		}
		fmt.Fprintf(b, "latency_percentiles_usec_%s:", name)
		for i, p := range ps {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, "p%s=%.3f", strconv.FormatFloat(p, 'f', -1, 64), pct[i])
		}
		b.WriteString("\r\n")
	})
}

// parsePercentiles parses latency-tracking-info-percentiles as Redis does: numbers from
// 0 to 100, each after one space ("": an empty list). It returns the reason for
// refusing v, or "".
func parsePercentiles(v string) ([]float64, string) {
	ps := []float64{}
	if v == "" {
		return ps, ""
	}
	for _, f := range strings.Split(v, " ") {
		p, err := strconv.ParseFloat(hexFloat(f), 64)
		if err != nil || f == "" || f[0] == ' ' || math.IsNaN(p) {
			return nil, "Invalid latency-tracking-info-percentiles parameters"
		}
		if p < 0 || p > 100 {
			return nil, "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
		}
		ps = append(ps, p)
	}
	return ps, ""
}

// hexFloat gives a hexadecimal number without an exponent the "p0" that ParseFloat
// needs and C's strtod does not.
func hexFloat(f string) string {
	digits := strings.TrimLeft(f, "+-")
	if len(digits) > 2 && (digits[:2] == "0x" || digits[:2] == "0X") && !strings.ContainsAny(digits, "pP") {
		return f + "p0"
	}
	return f
}

func formatPercentiles(ps []float64) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.FormatFloat(p, 'f', -1, 64)
	}
	return strings.Join(s, " ")
}
