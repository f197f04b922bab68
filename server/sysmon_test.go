package server

import "testing"

func TestWithSchedtraceKeepsTheUsersChoice(t *testing.T) {
	for _, c := range []struct {
		in, want string
		changed  bool
	}{
		{"", schedtraceSetting, true},
		{"gctrace=1", "gctrace=1," + schedtraceSetting, true},
		{"schedtracex=1", "schedtracex=1," + schedtraceSetting, true},
		{"schedtrace=0", "schedtrace=0", false},
		{"gctrace=1,schedtrace=1000", "gctrace=1,schedtrace=1000", false},
	} {
		got, changed := withSchedtrace(c.in)
		if got != c.want || changed != c.changed {
			t.Errorf("withSchedtrace(%q) = %q, %v; want %q, %v", c.in, got, changed, c.want, c.changed)
		}
	}
}

func TestSysmonEnvSetsGodebugOnce(t *testing.T) {
	env, ok := SysmonEnv([]string{"HOME=/h", "GODEBUG=gctrace=1", "GODEBUG=x=2", "A=b"})
	want := []string{"HOME=/h", "A=b", "GODEBUG=gctrace=1," + schedtraceSetting}
	if !ok || len(env) != len(want) {
		t.Fatalf("SysmonEnv = %q, %v; want %q", env, ok, want)
	}
	for i := range want {
		if env[i] != want[i] {
			t.Fatalf("SysmonEnv = %q; want %q", env, want)
		}
	}
	// Run again with that environment: nothing left to do, so no second re-execution.
	if again, ok := SysmonEnv(env); ok || len(again) != len(env) {
		t.Fatalf("SysmonEnv of its own result = %q, %v; want it unchanged, false", again, ok)
	}
	if _, ok := SysmonEnv([]string{"GODEBUG=schedtrace=0"}); ok {
		t.Fatal("SysmonEnv overrode the user's schedtrace")
	}
}
