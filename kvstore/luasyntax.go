package kvstore

import (
	"bytes"
	"fmt"
	"strings"
)

// Lua 5.1's syntax errors, as Redis reports them. gopher-lua's parser, a yacc grammar,
// words a syntax error its own way ("user_script line:1(column:12) near 'end': syntax
// error"); Lua 5.1's recursive-descent parser (llex.c, lparser.c) names what it expected
// and the token it met ("user_script:1: '<eof>' expected near 'end'"), which is what
// Redis answers and what a script's author reads; and gopher-lua's grammar takes some
// chunks Lua 5.1 refuses (goto, labels). luaSyntaxError runs Lua 5.1's grammar, lexer
// quirks included, over a chunk before gopher-lua compiles it, and returns the first
// error as Lua 5.1 words it. It only checks: no code is generated. Of Lua's limits it
// checks the nesting of syntax levels; a chunk past another (200 locals in a function,
// 60 upvalues) is left to gopher-lua.

// Tokens other than single bytes, in llex.h's order.
const (
	tkAnd = 257 + iota
	tkBreak
	tkDo
	tkElse
	tkElseif
	tkEnd
	tkFalse
	tkFor
	tkFunction
	tkIf
	tkIn
	tkLocal
	tkNil
	tkNot
	tkOr
	tkRepeat
	tkReturn
	tkThen
	tkTrue
	tkUntil
	tkWhile
	tkConcat
	tkDots
	tkEq
	tkGe
	tkLe
	tkNe
	tkNumber
	tkName
	tkString
	tkEOS
)

// luaTokenNames is llex.c's luaX_tokens.
var luaTokenNames = [...]string{
	"and", "break", "do", "else", "elseif", "end", "false", "for", "function", "if", "in",
	"local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
	"..", "...", "==", ">=", "<=", "~=", "<number>", "<name>", "<string>", "<eof>",
}

var luaReserved = func() map[string]int {
	m := make(map[string]int)
	for i := tkAnd; i <= tkWhile; i++ {
		m[luaTokenNames[i-tkAnd]] = i
	}
	return m
}()

// luaMaxLevels is LUAI_MAXCCALLS, the parser's nesting limit.
const luaMaxLevels = 200

// luaSyntaxErr is a syntax error on its way out of the checker.
type luaSyntaxErr struct{ msg string }

// luaFuncState is what the checker keeps of a function being parsed (lparser.c's
// FuncState): enough to count its locals and upvalues against Lua 5.1's limits.
type luaFuncState struct {
	prev   *luaFuncState // the enclosing function; nil for the main chunk
	line   int           // linedefined, 0 for the main chunk (errorlimit's wording)
	vararg bool
	loops  int // breakable blocks open in this function
	// actvar are the locals: the first nactvar in scope, the rest declared by the
	// statement being parsed (new_localvar) and not yet in scope (adjustlocalvars)
	actvar  []string
	nactvar int
	ups     []luaUpval
}

// luaUpval is an upvalue of a function: a local of the enclosing function (its index
// among that function's locals) or an upvalue of it. indexupvalue tells them apart by
// these, not by name.
type luaUpval struct {
	local bool
	index int
}

// Lua 5.1's limits per function (LUAI_MAXVARS, LUAI_MAXUPVALUES).
const (
	luaMaxVars     = 200
	luaMaxUpvalues = 60
)

type luaSyntax struct {
	chunk    string // the chunk's name in messages
	src      string
	pos      int
	line     int // llex's linenumber
	lastline int
	tok      int // the current token
	ahead    int // the lookahead token, when there is one
	hasAhead bool
	buf      []byte // llex's buffer: the text of the last name, string or number lexed
	name     string // the current token's text when it is a name
	fs       *luaFuncState
	levels   int
}

// luaSyntaxError returns Lua 5.1's message for the first syntax error in src, a chunk
// called name, or "" if Lua 5.1 would compile it.
func luaSyntaxError(name, src string) (msg string) {
	p := &luaSyntax{chunk: name, src: src, line: 1, lastline: 1}
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(luaSyntaxErr)
			if !ok {
				panic(r)
			}
			msg = e.msg
		}
	}()
	p.fs = &luaFuncState{vararg: true} // the main chunk takes ...
	p.next()
	p.statList()
	p.check(tkEOS)
	return ""
}

// --- lexer (llex.c) ---

func (p *luaSyntax) cur() int {
	if p.pos < len(p.src) {
		return int(p.src[p.pos])
	}
	return -1 // EOZ
}

func (p *luaSyntax) saveNext() {
	p.buf = append(p.buf, p.src[p.pos])
	p.pos++
}

func isLuaNewline(c int) bool { return c == '\n' || c == '\r' }
func isLuaDigit(c int) bool   { return c >= '0' && c <= '9' }
func isLuaAlpha(c int) bool   { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isLuaAlnum(c int) bool   { return isLuaAlpha(c) || isLuaDigit(c) }

// newline skips \n, \r, \n\r or \r\n, counting one line.
func (p *luaSyntax) newline() {
	old := p.cur()
	p.pos++
	if c := p.cur(); isLuaNewline(c) && c != old {
		p.pos++
	}
	p.line++
}

// lexError stops at a lexical error, near the token tok (0: none).
func (p *luaSyntax) lexError(msg string, tok int) {
	msg = fmt.Sprintf("%s:%d: %s", p.chunk, p.line, msg)
	if tok != 0 {
		msg += " near '" + p.text(tok) + "'"
	}
	panic(luaSyntaxErr{msg})
}

// text is llex's txtToken: a name, string or number as the buffer holds it, up to a
// NUL (Lua formats it as a C string).
func (p *luaSyntax) text(tok int) string {
	switch tok {
	case tkName, tkString, tkNumber:
		if i := bytes.IndexByte(p.buf, 0); i >= 0 {
			return string(p.buf[:i])
		}
		return string(p.buf)
	}
	return luaTokenString(tok)
}

// luaTokenString is luaX_token2str.
func luaTokenString(tok int) string {
	if tok < 257 {
		if tok < 32 || tok == 127 {
			return fmt.Sprintf("char(%d)", tok)
		}
		return string([]byte{byte(tok)})
	}
	return luaTokenNames[tok-257]
}

// skipSep reads [ or ] and the = after it: their count when the same bracket follows,
// else -count-1.
func (p *luaSyntax) skipSep() int {
	s := p.cur()
	p.saveNext()
	count := 0
	for p.cur() == '=' {
		p.saveNext()
		count++
	}
	if p.cur() == s {
		return count
	}
	return -count - 1
}

func (p *luaSyntax) longString(sep int, comment bool) {
	p.saveNext() // the second [
	if isLuaNewline(p.cur()) {
		p.newline() // a first newline is skipped
	}
	for {
		switch c := p.cur(); {
		case c < 0:
			if comment {
				p.lexError("unfinished long comment", tkEOS)
			}
			p.lexError("unfinished long string", tkEOS)
		case c == '[':
			// Redis builds Lua without LUA_COMPAT_LSTR: a [[ inside is text
			if p.skipSep() == sep {
				p.saveNext()
			}
		case c == ']':
			if p.skipSep() == sep {
				p.saveNext()
				return
			}
		case isLuaNewline(c):
			p.buf = append(p.buf, '\n')
			p.newline()
		default:
			p.saveNext()
		}
	}
}

func (p *luaSyntax) readString(del int) {
	p.saveNext()
	for p.cur() != del {
		switch c := p.cur(); {
		case c < 0:
			p.lexError("unfinished string", tkEOS)
		case isLuaNewline(c):
			p.lexError("unfinished string", tkString)
		case c == '\\':
			p.pos++ // the \ is not kept
			switch e := p.cur(); {
			case e < 0:
				// the next round reports the unfinished string
			case strings.IndexByte("abfnrtv", byte(e)) >= 0:
				p.buf = append(p.buf, "\a\b\f\n\r\t\v"[strings.IndexByte("abfnrtv", byte(e))])
				p.pos++
			case isLuaNewline(e):
				p.buf = append(p.buf, '\n')
				p.newline()
			case !isLuaDigit(e):
				p.saveNext()
			default:
				v := 0
				for i := 0; i < 3 && isLuaDigit(p.cur()); i++ {
					v = 10*v + p.cur() - '0'
					p.pos++
				}
				if v > 255 {
					p.lexError("escape sequence too large", tkString)
				}
				p.buf = append(p.buf, byte(v))
			}
		default:
			p.saveNext()
		}
	}
	p.saveNext()
}

func (p *luaSyntax) readNumeral() {
	for isLuaDigit(p.cur()) || p.cur() == '.' {
		p.saveNext()
	}
	if c := p.cur(); c == 'e' || c == 'E' {
		p.saveNext()
		if c := p.cur(); c == '+' || c == '-' {
			p.saveNext()
		}
	}
	for c := p.cur(); isLuaAlnum(c) || c == '_'; c = p.cur() {
		p.saveNext()
	}
	if !luaNumeralOK(string(p.buf)) {
		p.lexError("malformed number", tkNumber)
	}
}

// luaNumeralOK is luaO_str2d on a numeral: C's strtod reads all of it, or strtoul in
// base 16 does when strtod stops at an x.
func luaNumeralOK(s string) bool {
	_, n, _ := strtod([]byte(s))
	if n == 0 {
		return false
	}
	if n < len(s) && (s[n] == 'x' || s[n] == 'X') {
		n = strtoulHexPrefix(s)
	}
	return n == len(s)
}

// strtoulHexPrefix is how much of s strtoul(s, 16) reads.
func strtoulHexPrefix(s string) int {
	i := 0
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && isHexDigit(s[2]) {
		i = 2
	}
	for i < len(s) && isHexDigit(s[i]) {
		i++
	}
	return i
}

// lex reads the next token; names, strings and numbers leave their text in buf.
func (p *luaSyntax) lex() int {
	p.buf = p.buf[:0]
	for {
		c := p.cur()
		switch {
		case c < 0:
			return tkEOS
		case isLuaNewline(c):
			p.newline()
		case c == ' ' || c == '\t' || c == '\v' || c == '\f':
			p.pos++
		case c == '-':
			p.pos++
			if p.cur() != '-' {
				return '-'
			}
			p.pos++
			if p.cur() == '[' {
				sep := p.skipSep()
				p.buf = p.buf[:0]
				if sep >= 0 {
					p.longString(sep, true)
					p.buf = p.buf[:0]
					continue
				}
			}
			for c := p.cur(); c >= 0 && !isLuaNewline(c); c = p.cur() {
				p.pos++
			}
		case c == '[':
			sep := p.skipSep()
			if sep >= 0 {
				p.longString(sep, false)
				return tkString
			}
			if sep != -1 {
				p.lexError("invalid long string delimiter", tkString)
			}
			return '['
		case c == '=' || c == '<' || c == '>' || c == '~':
			p.pos++
			if p.cur() != '=' {
				return c
			}
			p.pos++
			switch c {
			case '=':
				return tkEq
			case '<':
				return tkLe
			case '>':
				return tkGe
			}
			return tkNe
		case c == '"' || c == '\'':
			p.readString(c)
			return tkString
		case c == '.':
			p.saveNext()
			if p.cur() == '.' {
				p.saveNext()
				if p.cur() == '.' {
					p.saveNext()
					return tkDots
				}
				return tkConcat
			}
			if !isLuaDigit(p.cur()) {
				return '.'
			}
			p.readNumeral()
			return tkNumber
		case isLuaDigit(c):
			p.readNumeral()
			return tkNumber
		case isLuaAlpha(c) || c == '_':
			for c := p.cur(); isLuaAlnum(c) || c == '_'; c = p.cur() {
				p.saveNext()
			}
			if t, ok := luaReserved[string(p.buf)]; ok {
				return t
			}
			return tkName
		default:
			p.pos++
			return c
		}
	}
}

// --- parser (lparser.c), checking only ---

func (p *luaSyntax) next() {
	p.lastline = p.line
	if p.hasAhead {
		p.tok, p.hasAhead = p.ahead, false
	} else {
		p.tok = p.lex()
	}
	if p.tok == tkName {
		p.name = string(p.buf) // a lookahead lexes over buf
	}
}

func (p *luaSyntax) lookahead() int {
	p.ahead, p.hasAhead = p.lex(), true
	return p.ahead
}

func (p *luaSyntax) syntaxError(msg string) { p.lexError(msg, p.tok) }

func (p *luaSyntax) errorExpected(tok int) {
	p.syntaxError("'" + luaTokenString(tok) + "' expected")
}

func (p *luaSyntax) check(tok int) {
	if p.tok != tok {
		p.errorExpected(tok)
	}
}

func (p *luaSyntax) checkNext(tok int) {
	p.check(tok)
	p.next()
}

func (p *luaSyntax) testNext(tok int) bool {
	if p.tok == tok {
		p.next()
		return true
	}
	return false
}

func (p *luaSyntax) checkMatch(what, who, where int) {
	if p.tok == what {
		p.next()
		return
	}
	if where == p.line {
		p.errorExpected(what)
	}
	p.syntaxError(fmt.Sprintf("'%s' expected (to close '%s' at line %d)", luaTokenString(what), luaTokenString(who), where))
}

func (p *luaSyntax) checkName() { p.checkNext(tkName) }

// strCheckName is str_checkname: the name, once past it.
func (p *luaSyntax) strCheckName() string {
	p.check(tkName)
	name := p.name
	p.next()
	return name
}

// --- locals and upvalues: what Lua 5.1 counts of them against its limits ---

// errorLimit is errorlimit: a function over one of Lua's limits.
func (p *luaSyntax) errorLimit(fs *luaFuncState, limit int, what string) {
	msg := fmt.Sprintf("main function has more than %d %s", limit, what)
	if fs.line != 0 {
		msg = fmt.Sprintf("function at line %d has more than %d %s", fs.line, limit, what)
	}
	p.lexError(msg, 0)
}

// newLocal is new_localvar: the n-th local a statement declares, not yet in scope.
func (p *luaSyntax) newLocal(name string, n int) {
	fs := p.fs
	if fs.nactvar+n+1 > luaMaxVars {
		p.errorLimit(fs, luaMaxVars, "local variables")
	}
	fs.actvar = append(fs.actvar[:fs.nactvar+n], name)
}

// adjustLocals is adjustlocalvars: the last n declared locals come into scope.
func (p *luaSyntax) adjustLocals(n int) { p.fs.nactvar += n }

// leaveScope ends the scope of the locals declared since nactvar (leaveblock).
func (p *luaSyntax) leaveScope(nactvar int) {
	p.fs.nactvar = nactvar
	p.fs.actvar = p.fs.actvar[:nactvar]
}

// Kinds of variable a name resolves to.
const (
	varGlobal = iota
	varLocal
	varUpval
)

// singleVar is singlevar for a name in fs: a local in scope, an upvalue (counted, as
// indexupvalue counts them, in every function between) or a global. It returns the
// kind and the local's or the upvalue's index.
func (p *luaSyntax) singleVar(fs *luaFuncState, name string) (kind, index int) {
	if fs == nil {
		return varGlobal, 0
	}
	for i := fs.nactvar - 1; i >= 0; i-- {
		if fs.actvar[i] == name {
			return varLocal, i
		}
	}
	kind, index = p.singleVar(fs.prev, name)
	if kind == varGlobal {
		return varGlobal, 0
	}
	up := luaUpval{local: kind == varLocal, index: index}
	for i, u := range fs.ups {
		if u == up {
			return varUpval, i
		}
	}
	if len(fs.ups)+1 > luaMaxUpvalues {
		p.errorLimit(fs, luaMaxUpvalues, "upvalues")
	}
	fs.ups = append(fs.ups, up)
	return varUpval, len(fs.ups) - 1
}

func (p *luaSyntax) enterLevel() {
	if p.levels++; p.levels > luaMaxLevels {
		p.lexError("chunk has too many syntax levels", 0)
	}
}

func blockFollow(tok int) bool {
	switch tok {
	case tkElse, tkElseif, tkEnd, tkUntil, tkEOS:
		return true
	}
	return false
}

// block is lparser.c's block: statements that are a scope for the locals they declare.
func (p *luaSyntax) block() {
	nactvar := p.fs.nactvar
	p.statList()
	p.leaveScope(nactvar)
}

// statList is lparser.c's chunk: statements up to a block's end.
func (p *luaSyntax) statList() {
	p.enterLevel()
	for !blockFollow(p.tok) {
		last := p.statement()
		p.testNext(';')
		if last {
			break
		}
	}
	p.levels--
}

func (p *luaSyntax) loopBlock() {
	p.fs.loops++
	p.block()
	p.fs.loops--
}

// loopBody is the do ... end of a while loop that began at line.
func (p *luaSyntax) loopBody(who, line int) {
	p.checkNext(tkDo)
	p.loopBlock()
	p.checkMatch(tkEnd, who, line)
}

// statement parses one statement and reports whether it must be the block's last.
func (p *luaSyntax) statement() bool {
	line := p.line
	switch p.tok {
	case tkIf:
		p.testThenBlock()
		for p.tok == tkElseif {
			p.testThenBlock()
		}
		if p.testNext(tkElse) {
			p.block()
		}
		p.checkMatch(tkEnd, tkIf, line)
	case tkWhile:
		p.next()
		p.expr()
		p.loopBody(tkWhile, line)
	case tkDo:
		p.next()
		p.block()
		p.checkMatch(tkEnd, tkDo, line)
	case tkFor:
		nactvar := p.fs.nactvar // the scope of the loop's variables
		p.next()
		name := p.strCheckName()
		nvars := 1
		switch p.tok {
		case '=':
			p.newLocal("(for index)", 0)
			p.newLocal("(for limit)", 1)
			p.newLocal("(for step)", 2)
			p.newLocal(name, 3)
			p.next()
			p.expr()
			p.checkNext(',')
			p.expr()
			if p.testNext(',') {
				p.expr()
			}
		case ',', tkIn:
			p.newLocal("(for generator)", 0)
			p.newLocal("(for state)", 1)
			p.newLocal("(for control)", 2)
			p.newLocal(name, 3)
			for p.testNext(',') {
				p.newLocal(p.strCheckName(), 3+nvars)
				nvars++
			}
			p.checkNext(tkIn)
			p.exprList()
		default:
			p.syntaxError("'=' or 'in' expected")
		}
		p.adjustLocals(3) // the control variables
		p.checkNext(tkDo)
		p.adjustLocals(nvars) // the declared ones, in the body's scope
		p.loopBlock()
		p.checkMatch(tkEnd, tkFor, line)
		p.leaveScope(nactvar)
	case tkRepeat:
		// the condition is in the scope of the body's locals
		nactvar := p.fs.nactvar
		p.next()
		p.fs.loops++
		p.statList()
		p.fs.loops--
		p.checkMatch(tkUntil, tkRepeat, line)
		p.expr()
		p.leaveScope(nactvar)
	case tkFunction:
		p.next()
		p.singleVar(p.fs, p.strCheckName())
		for p.tok == '.' {
			p.next()
			p.checkName()
		}
		method := p.tok == ':'
		if method {
			p.next()
			p.checkName()
		}
		p.body(line, method)
	case tkLocal:
		p.next()
		if p.testNext(tkFunction) {
			p.newLocal(p.strCheckName(), 0)
			p.adjustLocals(1) // in scope in its own body: it may call itself
			p.body(p.line, false)
			break
		}
		n := 0
		for {
			p.newLocal(p.strCheckName(), n)
			n++
			if !p.testNext(',') {
				break
			}
		}
		if p.testNext('=') {
			p.exprList()
		}
		p.adjustLocals(n)
	case tkReturn:
		p.next()
		if !blockFollow(p.tok) && p.tok != ';' {
			p.exprList()
		}
		return true
	case tkBreak:
		p.next()
		if p.fs.loops == 0 {
			p.syntaxError("no loop to break")
		}
		return true
	default:
		p.exprStat()
	}
	return false
}

func (p *luaSyntax) testThenBlock() {
	p.next()
	p.expr()
	p.checkNext(tkThen)
	p.block()
}

// body is a function's parameters and block; line is where its definition began (its
// linedefined), method whether it takes self.
func (p *luaSyntax) body(line int, method bool) {
	outer := p.fs
	p.fs = &luaFuncState{prev: outer, line: line}
	p.checkNext('(')
	if method {
		p.newLocal("self", 0)
		p.adjustLocals(1)
	}
	n := 0
	if p.tok != ')' {
		for {
			switch p.tok {
			case tkName:
				p.newLocal(p.strCheckName(), n)
			case tkDots:
				p.next()
				p.fs.vararg = true
				p.newLocal("arg", n) // LUA_COMPAT_VARARG, as Redis builds Lua
			default:
				p.syntaxError("<name> or '...' expected")
			}
			n++
			if p.fs.vararg || !p.testNext(',') {
				break
			}
		}
	}
	p.adjustLocals(n)
	p.checkNext(')')
	p.statList()
	p.checkMatch(tkEnd, tkFunction, line)
	p.fs = outer
}

// Kinds of expression that matter to an expression statement.
const (
	expOther  = iota
	expVar    // a name or an indexed expression: assignable
	expCall   // a call: a statement by itself
	expParens // a parenthesised expression: neither
)

func (p *luaSyntax) exprStat() {
	if kind := p.primaryExp(); kind != expCall {
		p.assignment(kind)
	}
}

func (p *luaSyntax) assignment(kind int) {
	for {
		if kind != expVar {
			p.syntaxError("syntax error")
		}
		if !p.testNext(',') {
			break
		}
		kind = p.primaryExp()
	}
	p.checkNext('=')
	p.exprList()
}

// prefixExp is a name or a parenthesised expression.
func (p *luaSyntax) prefixExp() int {
	switch p.tok {
	case '(':
		line := p.line
		p.next()
		p.expr()
		p.checkMatch(')', '(', line)
		return expParens
	case tkName:
		p.singleVar(p.fs, p.strCheckName())
		return expVar
	}
	p.syntaxError("unexpected symbol")
	return expOther
}

// primaryExp is a prefix expression and its suffixes (fields, indexes, calls).
func (p *luaSyntax) primaryExp() int {
	kind := p.prefixExp()
	for {
		switch p.tok {
		case '.':
			p.next()
			p.checkName()
			kind = expVar
		case '[':
			p.next()
			p.expr()
			p.checkNext(']')
			kind = expVar
		case ':':
			p.next()
			p.checkName()
			p.funcArgs()
			kind = expCall
		case '(', tkString, '{':
			p.funcArgs()
			kind = expCall
		default:
			return kind
		}
	}
}

func (p *luaSyntax) funcArgs() {
	line := p.line
	switch p.tok {
	case '(':
		if line != p.lastline {
			p.syntaxError("ambiguous syntax (function call x new statement)")
		}
		p.next()
		if p.tok != ')' {
			p.exprList()
		}
		p.checkMatch(')', '(', line)
	case tkString:
		p.next()
	case '{':
		p.constructor()
	default:
		p.syntaxError("function arguments expected")
	}
}

func (p *luaSyntax) constructor() {
	line := p.line
	p.checkNext('{')
	for p.tok != '}' {
		switch p.tok {
		case tkName:
			if p.lookahead() != '=' {
				p.expr()
			} else {
				p.next()
				p.checkNext('=')
				p.expr()
			}
		case '[':
			p.next()
			p.expr()
			p.checkNext(']')
			p.checkNext('=')
			p.expr()
		default:
			p.expr()
		}
		if !p.testNext(',') && !p.testNext(';') {
			break
		}
	}
	p.checkMatch('}', '{', line)
}

func (p *luaSyntax) exprList() {
	p.expr()
	for p.testNext(',') {
		p.expr()
	}
}

// luaPriority is lparser.c's priority table: each binary operator's left and right
// priority. They decide how deep the parser recurses, which the nesting limit counts.
var luaPriority = map[int][2]int{
	'+': {6, 6}, '-': {6, 6}, '*': {7, 7}, '/': {7, 7}, '%': {7, 7}, '^': {10, 9}, tkConcat: {5, 4},
	tkNe: {3, 3}, tkEq: {3, 3}, '<': {3, 3}, tkLe: {3, 3}, '>': {3, 3}, tkGe: {3, 3}, tkAnd: {2, 2}, tkOr: {1, 1},
}

const luaUnaryPriority = 8

func (p *luaSyntax) expr() { p.subExpr(0) }

// subExpr reads an expression whose operators bind tighter than limit and returns the
// binary operator it stopped at (0: none).
func (p *luaSyntax) subExpr(limit int) int {
	p.enterLevel()
	if p.tok == tkNot || p.tok == '-' || p.tok == '#' {
		p.next()
		p.subExpr(luaUnaryPriority)
	} else {
		p.simpleExp()
	}
	op := p.tok
	for {
		pri, ok := luaPriority[op]
		if !ok || pri[0] <= limit {
			break
		}
		p.next()
		op = p.subExpr(pri[1])
	}
	p.levels--
	if _, ok := luaPriority[op]; !ok {
		return 0
	}
	return op
}

func (p *luaSyntax) simpleExp() {
	switch p.tok {
	case tkNumber, tkString, tkNil, tkTrue, tkFalse:
		p.next()
	case tkDots:
		if !p.fs.vararg {
			p.syntaxError("cannot use '...' outside a vararg function")
		}
		p.next()
	case '{':
		p.constructor()
	case tkFunction:
		p.next()
		p.body(p.line, false)
	default:
		p.primaryExp()
	}
}
