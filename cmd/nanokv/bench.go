package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nanokv/nanokv/bench"
)

// runBench is `nanokv bench`: the flags of the benchmark harness; package bench does
// the work, running this same binary as the nanokv members.
func runBench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("nanokv bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "the smoke-test profile: every scenario, small, under two minutes")
	full := fs.Bool("full", false, "the full profile: the figures of the README (about 20 minutes)")
	out := fs.String("out", "", "output directory (default bench-results/<timestamp>)")
	baseline := fs.String("baseline", strings.Join(bench.DefaultBaselines, ","), "ratios are to the first of these systems each scenario measured")
	scenarios := fs.String("scenarios", "", "comma-separated subset of: "+strings.Join(bench.AllScenarios, ","))
	systems := fs.String("systems", "", "comma-separated substrings: run only systems whose name contains one")
	redisRaft := fs.String("redisraft", "", "path of a redisraft.so module: adds a 3-node RedisRaft cluster")
	rounds := fs.Int("rounds", 1, "run the redis, memcache and zk scenarios this many times, the systems taking turns, and report each system's median round")
	valueSize := fs.Int("value-size", 32, "value size in bytes for redis-benchmark, memcaslap, memtier and the open loop")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *quick == *full {
		return fmt.Errorf("nanokv bench: give one of --quick or --full")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	profile := "quick"
	if *full {
		profile = "full"
	}
	_, err = bench.Run(context.Background(), bench.Config{
		Nanokv:    exe,
		Profile:   profile,
		Out:       *out,
		Baselines: splitList(*baseline),
		Scenarios: splitList(*scenarios),
		Systems:   splitList(*systems),
		RedisRaft: *redisRaft,
		ValueSize: *valueSize,
		Rounds:    *rounds,
		Command:   "nanokv bench " + strings.Join(args, " "),
		Stdout:    stdout,
		Stderr:    stderr,
	})
	return err
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
