package kvstore

import (
	"context"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Lua's patterns, as Lua 5.1 (Redis's Lua) matches them, for string.find, match, gmatch
// and gsub (luastrlib.go), with every step of the match counted against the script's
// instruction budget.
//
// A pattern match is a backtracking search: string.find(string.rep('a', 3000),
// '.-.-.-b') takes some 3000^4 steps. gopher-lua's matcher runs inside one library call,
// where the instruction count does not see it, so that one EVAL stalled the applier of
// every member for good, and again at every restart, since the script's entry is
// replayed. (Redis has the same search, but a stalled Redis is one process, and its
// restart does not run the script again.) Here a match that outruns the budget fails as
// a script that runs out of instructions does, at the same step on every member.
//
// The matcher is lstrlib.c's algorithm, so that a pattern means what it means in Redis,
// where gopher-lua's own differed: %f (frontier) patterns, "%x" in a replacement (Lua
// gives "x"), a '$' or '^' that is not an anchor, a NUL that ends a pattern, and Lua's
// error messages. Recursion is bounded by patMaxDepth (Lua 5.1 has no bound but the C
// stack; later versions stop at 200 calls with this message).

// patMaxCaptures is LUA_MAXCAPTURES.
const patMaxCaptures = 32

// patMaxDepth bounds the matcher's recursion, one level per quantifier or capture
// being tried: far above any pattern a script writes, far below what would exhaust a
// goroutine's stack (a pattern of a million "a?" would have).
const patMaxDepth = 5000

// A capture's length while it is open, or for a position capture "()".
const (
	capUnfinished = -1
	capPosition   = -2
)

// patCheckEvery: without a budget (a library's body run by FUNCTION LOAD, under its
// timeout), the match asks its context this often.
const patCheckEvery = 1 << 16

// patError is an error the matcher raises: a malformed pattern, or the budget spent.
type patError string

type patCapture struct{ init, len int }

// patState is one match of a pattern against a subject (lstrlib's MatchState).
type patState struct {
	src, pat string
	level    int // captures open or closed so far
	capture  [patMaxCaptures]patCapture
	depth    int

	left   int64         // steps before the budget is consulted again
	budget *scriptBudget // the script's; nil: ctx, or no bound
	ctx    context.Context
	lent   bool // the budget is the script's own again: Lua code runs (settle)
}

// newPatState prepares matches of pat against src under L's budget.
func newPatState(L *lua.LState, src, pat string) *patState {
	ms := &patState{src: src, pat: pat}
	switch ctx := L.Context().(type) {
	case *scriptBudget:
		ms.budget = ctx
		ms.left = ctx.left
	case nil:
		ms.left = math.MaxInt64
	default:
		ms.ctx = ctx
		ms.left = patCheckEvery
	}
	return ms
}

// settle hands the steps not taken back to the budget, before Lua code runs (a gsub
// replacement function) and when the library call returns.
func (ms *patState) settle() {
	if ms.budget != nil && !ms.lent {
		ms.budget.left = ms.left
	}
	ms.lent = true
}

// resume takes the budget back after Lua code ran.
func (ms *patState) resume() {
	if ms.budget != nil {
		ms.left = ms.budget.left
	}
	ms.lent = false
}

// step counts one step of the search.
func (ms *patState) step() {
	if ms.left--; ms.left < 0 {
		ms.exhausted()
	}
}

// charge counts n steps at once (comparing a back-reference of n bytes).
func (ms *patState) charge(n int) {
	if ms.left -= int64(n); ms.left < 0 {
		ms.exhausted()
	}
}

func (ms *patState) exhausted() {
	switch {
	case ms.budget != nil:
		// the VM raises the same error at its next instruction, past any pcall
		panic(patError(scriptBudgetError().Error()))
	case ms.ctx != nil:
		if err := ms.ctx.Err(); err != nil {
			panic(patError(err.Error()))
		}
		ms.left = patCheckEvery
	default:
		ms.left = math.MaxInt64
	}
}

// guard ends a library call that matches: it settles the budget (unless Lua code it
// called raised the error, and the budget is that code's) and raises the matcher's
// error as a Lua error of the calling script. Deferred.
func (ms *patState) guard(L *lua.LState) {
	ms.settle()
	if r := recover(); r != nil {
		if e, ok := r.(patError); ok {
			raiseAsC(L, string(e))
		}
		panic(r)
	}
}

// raiseAsC raises msg as lstrlib's luaL_error does: prefixed with the caller's
// position when a Lua function called, bare when pcall did (gopher-lua's RaiseError
// names the nearest Lua function either way).
func raiseAsC(L *lua.LState, msg string) {
	if where := L.Where(1); !strings.HasPrefix(where, "[G]") {
		msg = where + " " + msg
	}
	L.Error(lua.LString(msg), 0)
}

// p is the pattern's byte at i, 0 past its end, as C reads a NUL-terminated string:
// a NUL ends the pattern wherever it is.
func (ms *patState) p(i int) byte {
	if i < len(ms.pat) {
		return ms.pat[i]
	}
	return 0
}

// s is the subject's byte at i, 0 at its end (%f reads it there).
func (ms *patState) s(i int) byte {
	if i < len(ms.src) {
		return ms.src[i]
	}
	return 0
}

// reset forgets the captures of a failed attempt before the next.
func (ms *patState) reset() { ms.level, ms.depth = 0, 0 }

// match matches the pattern from p against the subject from s: the end of the match,
// or -1.
func (ms *patState) match(s, p int) int {
	if ms.depth++; ms.depth > patMaxDepth {
		panic(patError("pattern too complex"))
	}
	e := ms.matchHere(s, p)
	ms.depth--
	return e
}

func (ms *patState) matchHere(s, p int) int {
	for {
		ms.step()
		switch ms.p(p) {
		case 0: // the pattern's end
			return s
		case '(':
			if ms.p(p+1) == ')' {
				return ms.startCapture(s, p+2, capPosition)
			}
			return ms.startCapture(s, p+1, capUnfinished)
		case ')':
			return ms.endCapture(s, p+1)
		case '$':
			if ms.p(p+1) == 0 { // an anchor only at the pattern's end
				if s == len(ms.src) {
					return s
				}
				return -1
			}
		case '%':
			switch c := ms.p(p + 1); {
			case c == 'b':
				if s = ms.matchBalance(s, p+2); s < 0 {
					return -1
				}
				p += 4
				continue
			case c == 'f':
				p += 2
				if ms.p(p) != '[' {
					panic(patError("missing '[' after '%f' in pattern"))
				}
				ep := ms.classEnd(p)
				var prev byte
				if s > 0 {
					prev = ms.src[s-1]
				}
				if ms.matchBracketClass(prev, p, ep-1) || !ms.matchBracketClass(ms.s(s), p, ep-1) {
					return -1
				}
				p = ep
				continue
			case isDigit(c):
				if s = ms.matchCapture(s, c); s < 0 {
					return -1
				}
				p += 2
				continue
			}
		}
		// a single character class, perhaps quantified
		ep := ms.classEnd(p)
		m := s < len(ms.src) && ms.singleMatch(ms.src[s], p, ep)
		switch ms.p(ep) {
		case '?':
			if m {
				if e := ms.match(s+1, ep+1); e >= 0 {
					return e
				}
			}
			p = ep + 1
		case '*':
			return ms.maxExpand(s, p, ep)
		case '+':
			if !m {
				return -1
			}
			return ms.maxExpand(s+1, p, ep)
		case '-':
			return ms.minExpand(s, p, ep)
		default:
			if !m {
				return -1
			}
			s, p = s+1, ep
		}
	}
}

// maxExpand matches as many characters of the class at p as it can, then gives them
// back one at a time until the rest of the pattern (after ep) matches.
func (ms *patState) maxExpand(s, p, ep int) int {
	i := 0
	for s+i < len(ms.src) && ms.singleMatch(ms.src[s+i], p, ep) {
		ms.step()
		i++
	}
	for ; i >= 0; i-- {
		if e := ms.match(s+i, ep+1); e >= 0 {
			return e
		}
	}
	return -1
}

// minExpand matches as few characters of the class at p as the rest allows.
func (ms *patState) minExpand(s, p, ep int) int {
	for {
		if e := ms.match(s, ep+1); e >= 0 {
			return e
		}
		if s < len(ms.src) && ms.singleMatch(ms.src[s], p, ep) {
			s++
		} else {
			return -1
		}
	}
}

func (ms *patState) startCapture(s, p, what int) int {
	if ms.level >= patMaxCaptures {
		panic(patError("too many captures"))
	}
	ms.capture[ms.level] = patCapture{init: s, len: what}
	ms.level++
	e := ms.match(s, p)
	if e < 0 {
		ms.level--
	}
	return e
}

func (ms *patState) endCapture(s, p int) int {
	l := ms.captureToClose()
	ms.capture[l].len = s - ms.capture[l].init
	e := ms.match(s, p)
	if e < 0 {
		ms.capture[l].len = capUnfinished
	}
	return e
}

func (ms *patState) captureToClose() int {
	for l := ms.level - 1; l >= 0; l-- {
		if ms.capture[l].len == capUnfinished {
			return l
		}
	}
	panic(patError("invalid pattern capture"))
}

// matchCapture matches a back-reference (%1-%9) to a closed capture.
func (ms *patState) matchCapture(s int, c byte) int {
	l := int(c - '1')
	if l < 0 || l >= ms.level || ms.capture[l].len == capUnfinished {
		panic(patError("invalid capture index"))
	}
	n := ms.capture[l].len
	if n < 0 || len(ms.src)-s < n { // a position capture matches nothing, as in C
		return -1
	}
	ms.charge(n / 16)
	init := ms.capture[l].init
	if ms.src[init:init+n] != ms.src[s:s+n] {
		return -1
	}
	return s + n
}

// matchBalance matches %bxy at p: x, then up to the y that balances it.
func (ms *patState) matchBalance(s, p int) int {
	if ms.p(p) == 0 || ms.p(p+1) == 0 {
		panic(patError("unbalanced pattern"))
	}
	if s >= len(ms.src) || ms.src[s] != ms.p(p) {
		return -1
	}
	b, e := ms.p(p), ms.p(p+1)
	cont := 1
	for s++; s < len(ms.src); s++ {
		ms.step()
		switch ms.src[s] {
		case e:
			if cont--; cont == 0 {
				return s + 1
			}
		case b:
			cont++
		}
	}
	return -1
}

// classEnd is the index just past the single character class at p.
func (ms *patState) classEnd(p int) int {
	c := ms.p(p)
	p++
	switch c {
	case '%':
		if ms.p(p) == 0 {
			panic(patError("malformed pattern (ends with '%')"))
		}
		return p + 1
	case '[':
		if ms.p(p) == '^' {
			p++
		}
		for { // the first character is the set's even when it is ']'
			if ms.p(p) == 0 {
				panic(patError("malformed pattern (missing ']')"))
			}
			c := ms.p(p)
			p++
			if c == '%' && ms.p(p) != 0 {
				p++ // an escape, such as %]
			}
			if ms.p(p) == ']' {
				return p + 1
			}
		}
	}
	return p
}

// singleMatch reports whether c is in the class from p to ep.
func (ms *patState) singleMatch(c byte, p, ep int) bool {
	switch ms.p(p) {
	case '.':
		return true
	case '%':
		return matchClass(c, ms.p(p+1))
	case '[':
		return ms.matchBracketClass(c, p, ep-1)
	default:
		return ms.p(p) == c
	}
}

// matchBracketClass reports whether c is in the set from p ('[') to ec (']').
func (ms *patState) matchBracketClass(c byte, p, ec int) bool {
	in := true
	if ms.p(p+1) == '^' {
		in = false
		p++
	}
	for p++; p < ec; p++ {
		switch {
		case ms.p(p) == '%':
			p++
			if matchClass(c, ms.p(p)) {
				return in
			}
		case ms.p(p+1) == '-' && p+2 < ec:
			p += 2
			if ms.p(p-2) <= c && c <= ms.p(p) {
				return in
			}
		case ms.p(p) == c:
			return in
		}
	}
	return !in
}

// matchClass reports whether c is in the class %cl, in the C locale Redis's Lua runs
// under; an upper-case class is its lower-case one's complement, and any other
// character stands for itself.
func matchClass(c, cl byte) bool {
	var in bool
	switch cl | 0x20 {
	case 'a':
		in = isAlphaByte(c)
	case 'c':
		in = c < 0x20 || c == 0x7f
	case 'd':
		in = isDigit(c)
	case 'l':
		in = 'a' <= c && c <= 'z'
	case 'p':
		in = 0x21 <= c && c <= 0x7e && !isAlphaByte(c) && !isDigit(c)
	case 's':
		in = isSpace(c) // C's isspace
	case 'u':
		in = 'A' <= c && c <= 'Z'
	case 'w':
		in = isAlphaByte(c) || isDigit(c)
	case 'x':
		in = isDigit(c) || 'a' <= c|0x20 && c|0x20 <= 'f'
	case 'z':
		in = c == 0
	default:
		return cl == c
	}
	if 'A' <= cl && cl <= 'Z' {
		return !in
	}
	return in
}

func isAlphaByte(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// captureValue is capture i of the match from s to e, as Lua hands it out: the match
// itself when the pattern has no captures and i is 0, a position capture as a number.
func (ms *patState) captureValue(i, s, e int) lua.LValue {
	if i >= ms.level {
		if i != 0 {
			panic(patError("invalid capture index"))
		}
		return lua.LString(ms.src[s:e])
	}
	c := ms.capture[i]
	switch c.len {
	case capUnfinished:
		panic(patError("unfinished capture"))
	case capPosition:
		return lua.LNumber(c.init + 1)
	}
	return lua.LString(ms.src[c.init : c.init+c.len])
}

// pushCaptures pushes the captures of the match from s to e (the match itself when
// there are none and whole is set) and returns how many it pushed.
func (ms *patState) pushCaptures(L *lua.LState, s, e int, whole bool) int {
	n := ms.level
	if n == 0 && whole {
		n = 1
	}
	for i := 0; i < n; i++ {
		L.Push(ms.captureValue(i, s, e))
	}
	return n
}
