package bench

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plot sizes: small enough to commit, legible in a README.
const (
	plotW = 6 * vg.Inch
	plotH = 4 * vg.Inch
)

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9]+`)

func fileName(parts ...string) string {
	s := strings.ToLower(strings.Join(parts, "-"))
	return strings.Trim(unsafeName.ReplaceAllString(s, "-"), "-") + ".png"
}

// plotCDFs writes one latency-CDF plot per test of the scenario, a line per system, and
// returns the file names (relative to dir).
func plotCDFs(dir string, sc Scenario) ([]string, error) {
	var tests []string
	byTest := map[string][]Row{}
	for _, r := range sc.Rows {
		if len(r.CDF) == 0 || r.Offered > 0 {
			continue
		}
		if _, ok := byTest[r.Test]; !ok {
			tests = append(tests, r.Test)
		}
		byTest[r.Test] = append(byTest[r.Test], r)
	}
	var files []string
	for _, test := range tests {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: %s, latency CDF", sc.Name, test)
		p.X.Label.Text = "latency (ms, log scale)"
		p.Y.Label.Text = "fraction of requests ≤ latency"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Legend.Top, p.Legend.Left = false, false
		var vs []any
		for _, r := range byTest[test] {
			var pts plotter.XYs
			for _, c := range r.CDF {
				if c.Ms > 0 {
					pts = append(pts, plotter.XY{X: c.Ms, Y: c.Fraction})
				}
			}
			if len(pts) > 0 {
				vs = append(vs, r.System, pts)
			}
		}
		if len(vs) == 0 {
			continue
		}
		if err := plotutil.AddLines(p, vs...); err != nil {
			return files, err
		}
		name := fileName(sc.Name, test, "cdf")
		if err := p.Save(plotW, plotH, filepath.Join(dir, name)); err != nil {
			return files, err
		}
		files = append(files, name)
	}
	return files, nil
}

// plotThroughputLatency writes the open-loop sweep: achieved ops/s against p99 latency,
// a line per system (the throughput–latency curve).
func plotThroughputLatency(dir string, sc Scenario) (string, error) {
	p := plot.New()
	p.Title.Text = "open loop SET: throughput vs latency"
	p.X.Label.Text = "achieved ops/s"
	p.Y.Label.Text = "latency (ms, log scale; solid p50, dashed p99)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	var order []string
	bySys := map[string][2]plotter.XYs{}
	for _, r := range sc.Rows {
		if r.Offered == 0 || r.Ops == 0 || r.P99 <= 0 || r.P50 <= 0 {
			continue
		}
		if _, ok := bySys[r.System]; !ok {
			order = append(order, r.System)
		}
		v := bySys[r.System]
		v[0] = append(v[0], plotter.XY{X: r.Ops, Y: r.P50})
		v[1] = append(v[1], plotter.XY{X: r.Ops, Y: r.P99})
		bySys[r.System] = v
	}
	if len(order) == 0 {
		return "", nil
	}
	for i, sys := range order {
		for j, pts := range bySys[sys] {
			l, s, err := plotter.NewLinePoints(pts)
			if err != nil {
				return "", err
			}
			l.Color, s.Color = plotutil.Color(i), plotutil.Color(i)
			s.Shape = plotutil.Shape(i)
			if j == 1 {
				l.Dashes = plotutil.Dashes(1)
				p.Legend.Add(sys+" p99", l, s)
			} else {
				p.Legend.Add(sys+" p50", l, s)
			}
			p.Add(l, s)
		}
	}
	name := fileName(sc.Name, "throughput-latency")
	return name, p.Save(plotW, plotH, filepath.Join(dir, name))
}

// plotFailover writes the distribution of failover times: per system the fraction of
// trials that had an acknowledged write within t of the kill.
func plotFailover(dir string, sc Scenario) (string, error) {
	p := plot.New()
	p.Title.Text = "kill -9 of the leader: time to the next acknowledged write"
	p.X.Label.Text = "ms after the kill"
	p.Y.Label.Text = "fraction of trials"
	p.Legend.Top, p.Legend.Left = false, false
	var vs []any
	for _, f := range sc.Failover {
		s := sortedCopy(f.TrialsMs)
		if len(s) == 0 {
			continue
		}
		n := float64(len(s) + f.Failed)
		pts := plotter.XYs{{X: 0, Y: 0}}
		for i, v := range s {
			pts = append(pts, plotter.XY{X: v, Y: float64(i) / n}, plotter.XY{X: v, Y: float64(i+1) / n})
		}
		vs = append(vs, f.System, pts)
	}
	if len(vs) == 0 {
		return "", nil
	}
	if err := plotutil.AddLines(p, vs...); err != nil {
		return "", err
	}
	name := fileName(sc.Name, "distribution")
	return name, p.Save(plotW, plotH, filepath.Join(dir, name))
}
