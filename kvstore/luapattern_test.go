package kvstore

import (
	"errors"
	"testing"
)

// FuzzLuaPattern matches arbitrary patterns against arbitrary subjects, as string.find
// does from every start: the matcher may refuse a pattern or run out of steps (a
// patError), but must not fail otherwise (an index out of range would end the applier
// of every member), and a match must lie within the subject, with its captures inside
// it. Every search runs under a budget, as a script's does: without one (the matcher's
// unbounded mode) a backtracking pattern such as "a?a?a?...a" takes exponential time
// and the fuzzer reports the worker as hung.
func FuzzLuaPattern(f *testing.F) {
	for _, c := range [][2]string{
		{"hello world", "(%w+) (%w+)"}, {"x(a(b)c)y", "%b()"}, {"THE (quick) fox", "%f[%a]%a+"},
		{"abab", "(ab)%1"}, {"aaa", ".-.-b"}, {"a]b", "[]]"}, {"k=v", "^(%w+)=(%w*)$"},
		{"abc", "[a"}, {"abc", "%"}, {"abc", "(()"}, {"a\x00b", "%z"}, {"", "()"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, src, pat string) {
		budget := &scriptBudget{left: 100_000}
		ms := &patState{src: src, pat: pat, budget: budget, left: budget.left}
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(patError); !ok {
					t.Fatalf("find(%q, %q): %v", src, pat, r)
				}
			}
		}()
		p := 0
		if len(pat) > 0 && pat[0] == '^' {
			p = 1
		}
		for s := 0; s <= len(src); s++ {
			ms.reset()
			e := ms.match(s, p)
			if e < 0 {
				continue
			}
			if e < s || e > len(src) {
				t.Fatalf("find(%q, %q) from %d: a match ending at %d", src, pat, s, e)
			}
			for i := 0; i < ms.level; i++ {
				c := ms.capture[i]
				if c.init < 0 || c.init > len(src) || c.len >= 0 && c.init+c.len > len(src) {
					t.Fatalf("find(%q, %q): capture %d at %d, length %d", src, pat, i, c.init, c.len)
				}
			}
		}
	})
}

// The step count is the budget's: a search stops once it has taken as many steps as
// the budget had left, and leaves the budget spent.
func TestPatternStepsAreTheBudgets(t *testing.T) {
	b := &scriptBudget{left: 5000}
	ms := &patState{src: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", pat: ".-.-.-b", budget: b, left: b.left}
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = errors.New(string(r.(patError)))
			}
			ms.settle()
		}()
		for s := 0; s <= len(ms.src); s++ {
			ms.reset()
			ms.match(s, 0)
		}
	}()
	if err == nil || err.Error() != scriptBudgetError().Error() {
		t.Fatalf("a search past the budget: %v", err)
	}
	if b.left >= 0 || b.Err() == nil {
		t.Fatalf("the budget is left at %d after the search ran out", b.left)
	}
}
