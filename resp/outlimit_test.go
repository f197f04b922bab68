package resp

import (
	"slices"
	"testing"
)

// TestOutputLimitSoft: the soft limit breaks once it has been reached for longer than
// its seconds, every look in between at or past it, as Redis counts (whole seconds); the
// hard limit at once.
func TestOutputLimitSoft(t *testing.T) {
	lim := OutputLimit{Hard: 1000, Soft: 100, SoftSeconds: 2}
	var since int64
	for _, c := range []struct {
		used, now int64
		want      bool
	}{
		{50, 10, false}, {100, 10, false}, {150, 11, false}, {150, 12, false}, {150, 13, true},
		{10, 14, false}, {200, 15, false}, {200, 17, false}, {200, 18, true},
		{999, 18, true}, {10, 19, false}, {1000, 19, true},
	} {
		if got := lim.exceeded(c.used, c.now, &since); got != c.want {
			t.Errorf("%d bytes at %d s: exceeded %v, want %v", c.used, c.now, got, c.want)
		}
	}
}

// TestParseOutputLimits: a class not named keeps its limits; an error changes nothing.
func TestParseOutputLimits(t *testing.T) {
	got, why := parseOutputLimits("pubsub 1mb 2kb 7 replica 5 6 8", DefaultOutputLimits)
	want := [3]OutputLimit{{}, {5, 6, 8}, {1 << 20, 2 << 10, 7}}
	if why != "" || got != want {
		t.Errorf("got %v %q, want %v", got, why, want)
	}
	if s := formatOutputLimits(want); s != "normal 0 0 0 slave 5 6 8 pubsub 1048576 2048 7" {
		t.Errorf("formatted: %q", s)
	}
	if got, why := parseOutputLimits("pubsub 1 1 1 master 0 0 0", DefaultOutputLimits); why == "" || got != DefaultOutputLimits {
		t.Errorf("a bad group: %v %q", got, why)
	}
}

// FuzzSettingValues: no value makes a parameter's check fail other than by refusing it,
// and what a setting accepts it shows (CONFIG GET) in a form it accepts again unchanged,
// so that a configuration copied from CONFIG GET to CONFIG SET is the same.
func FuzzSettingValues(f *testing.F) {
	for _, v := range []string{"", "yes", "NO", "-1", "01", "1k", "1mb", "20000000000gb", "18446744073709551616",
		"normal 1mb 2mb 3", "pubsub 1 1 +5", "{title} {port}", "0777", "allchannels", "50 99.9", "0x10"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for i := range redisSettings {
			s := &redisSettings[i]
			out, why := s.parse(v)
			if why != "" {
				continue
			}
			if again, why := s.parse(out); why != "" || again != out {
				t.Errorf("%s: %q shows as %q, which reads back as %q (%s)", s.name, v, out, again, why)
			}
		}
		limits, why := parseOutputLimits(v, DefaultOutputLimits)
		if why == "" {
			shown := formatOutputLimits(limits)
			if again, why := parseOutputLimits(shown, [3]OutputLimit{}); why != "" || again != limits {
				t.Errorf("client-output-buffer-limit %q shows as %q, which reads back as %v (%s)", v, shown, again, why)
			}
		}
		if ps, why := parsePercentiles(v); why == "" {
			shown := formatPercentiles(ps)
			if again, why := parsePercentiles(shown); why != "" || !slices.Equal(again, ps) {
				t.Errorf("latency-tracking-info-percentiles %q shows as %q, which reads back as %v (%s)", v, shown, again, why)
			}
		}
	})
}
