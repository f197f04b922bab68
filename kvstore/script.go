package kvstore

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"
	lua "github.com/yuin/gopher-lua"
)

// Lua scripting: EVAL EVALSHA EVAL_RO EVALSHA_RO and SCRIPT LOAD EXISTS FLUSH, with
// Redis 7.0's conversions between Lua values and replies, its error texts, and its
// protections (no new globals, no access to missing ones, read-only libraries).
//
// A script is a command like any other here: EVAL and EVALSHA go through the log and run
// on every replica's applier, holding every shard, so a script is atomic as in Redis and
// replicas stay identical. That needs a script to be deterministic, so what Redis leaves
// to chance comes from the log entry: math.random is seeded from the entry's randomness,
// TIME is the entry's clock, and SPOP, SRANDMEMBER and the rest draw as outside scripts.
// The script cache is state too: EVAL and SCRIPT LOAD add to it on every replica, and it
// is in snapshots and in the digest, so an EVALSHA finds the same script everywhere.
//
// The Lua is gopher-lua (a Lua 5.1 in Go, as Redis embeds Lua 5.1) with the base, table,
// string, math and coroutine libraries, LuaBitOp's bit, lua-cjson's cjson (luajson.go),
// lua-cmsgpack's cmsgpack (luamsgpack.go) and lua_struct's struct (luastruct.go). A compile
// error's text is gopher-lua's, not Lua's.

func init() {
	register(
		// A script holds its declared keys' shards from the start, and takes the others
		// its calls reach as it goes (reach), so that scripts on distinct keys do not pay
		// for all 256 shards. Read-only scripts run on the read path, where a reader may
		// not take shards one by one while it holds others: they hold all of them.
		&Spec{Name: "eval", Arity: -3, Flags: FlagWrite | FlagScript, Group: "scripting", Since: "2.6.0", Summary: "Execute a Lua script server side", Run: evalCmd(false, false), MoreKeys: scriptKeys},
		&Spec{Name: "evalsha", Arity: -3, Flags: FlagWrite | FlagScript, Group: "scripting", Since: "2.6.0", Summary: "Execute a Lua script server side", Run: evalCmd(true, false), MoreKeys: scriptKeys},
		&Spec{Name: "eval_ro", Arity: -3, Flags: FlagReadOnly | FlagAllKeys, Group: "scripting", Since: "7.0.0", Summary: "Execute a read-only Lua script server side", Run: evalCmd(false, true)},
		&Spec{Name: "evalsha_ro", Arity: -3, Flags: FlagReadOnly | FlagAllKeys, Group: "scripting", Since: "7.0.0", Summary: "Execute a read-only Lua script server side", Run: evalCmd(true, true)},
		// SCRIPT LOAD and FLUSH change the replicated script cache; EXISTS reads it.
		&Spec{Name: "script", Arity: -2, Flags: FlagWrite, Group: "scripting", Since: "2.6.0", Summary: "A container for Lua scripts management commands", Run: scriptCmd,
			Subcommands: scriptArity,
			ReadOnlyCall: func(args [][]byte) bool {
				sub := strings.ToLower(string(args[1]))
				return sub != "load" && sub != "flush"
			}},
	)
}

// scriptArity is the arity of each SCRIPT subcommand, Redis 7.0's (container included).
var scriptArity = map[string]int{"debug": 3, "exists": -3, "flush": -2, "help": 2, "kill": 2, "load": 3}

// scriptKeys is MoreKeys for EVAL and EVALSHA: the keys the call declares.
func scriptKeys(args [][]byte) [][]byte {
	n, ok := ParseInt(args[2])
	if !ok || n < 0 || n > int64(len(args)-3) {
		return nil
	}
	return args[3 : 3+n]
}

const (
	errNoScript = "NOSCRIPT No matching script. Please use EVAL."
	scriptChunk = "user_script"
	// scriptRegistryMax bounds a script's Lua value stack (gopher-lua's registry),
	// which starts at scriptRegistryMin values.
	scriptRegistryMax = 1 << 16
	scriptRegistryMin = 1 << 12
)

// scriptCache is the replicated sha1 -> body table, and the compiled bodies (not state).
type scriptCache struct {
	mu     sync.RWMutex
	bodies map[string]string
	protos map[string]compiledScript
}

// compiledScript is a script's compiled chunk and the flags of its shebang line.
type compiledScript struct {
	proto *lua.FunctionProto
	// shebang: the script starts with "#!lua" (Redis 7's scripts with flags); its flags
	// then decide whether it may write, not the command that runs it.
	shebang bool
	flags   funcFlags
}

// scriptShebang parses a script's "#!lua [flags=f1,f2]" line as Redis 7.0's
// evalExtractShebangFlags; n is the line's length (the newline stays in the body, so
// that line numbers count the shebang line).
func scriptShebang(body string) (flags funcFlags, n int, errMsg string) {
	nl := strings.IndexByte(body, '\n')
	if nl < 0 {
		return 0, 0, "ERR Invalid script shebang"
	}
	parts, ok := SplitArgs([]byte(body[:nl]), nil)
	if !ok || len(parts) == 0 {
		return 0, 0, "ERR Invalid engine in script shebang"
	}
	if string(parts[0]) != "#!lua" {
		return 0, 0, "ERR Unexpected engine in script shebang: " + string(parts[0])
	}
	for _, p := range parts[1:] {
		list, isFlags := strings.CutPrefix(string(p), "flags=")
		if !isFlags {
			return 0, 0, "ERR Unknown lua shebang option: " + string(p)
		}
		if list == "" {
			continue
		}
		for _, f := range strings.Split(list, ",") {
			i := slices.Index(funcFlagNames, f)
			if i < 0 {
				return 0, 0, "ERR Unexpected flag in script shebang: " + f
			}
			flags |= 1 << i
		}
	}
	return flags, nl, ""
}

func (sc *scriptCache) get(sha string) (string, bool) {
	sc.mu.RLock()
	defer sc.mu.RUnlock()
	b, ok := sc.bodies[sha]
	return b, ok
}

func (sc *scriptCache) add(sha, body string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.bodies == nil {
		sc.bodies = make(map[string]string)
	}
	sc.bodies[sha] = body
}

func (sc *scriptCache) flush() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.bodies, sc.protos = nil, nil
}

// compile returns body's compiled chunk; the error is Redis's reply to a bad script.
func (sc *scriptCache) compile(sha, body string) (compiledScript, string) {
	sc.mu.RLock()
	cs, ok := sc.protos[sha]
	sc.mu.RUnlock()
	if ok {
		return cs, ""
	}
	if strings.HasPrefix(body, "#!") {
		flags, n, msg := scriptShebang(body)
		if msg != "" {
			return cs, msg
		}
		cs.shebang, cs.flags, body = true, flags, body[n:]
	}
	var err error
	if cs.proto, err = compileChunk(body, scriptChunk); err != nil {
		msg := strings.ReplaceAll(err.Error(), "\n", " ")
		return cs, "ERR Error compiling script (new function): " + msg
	}
	sc.mu.Lock()
	if sc.protos == nil {
		sc.protos = make(map[string]compiledScript)
	}
	sc.protos[sha] = cs
	sc.mu.Unlock()
	return cs, ""
}

// replace sets the bodies a snapshot holds.
func (sc *scriptCache) replace(bodies map[string]string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.bodies, sc.protos = bodies, nil
}

func (sc *scriptCache) appendSnapshot(dst []byte) []byte {
	sc.mu.RLock()
	defer sc.mu.RUnlock()
	shas := slices.Sorted(maps.Keys(sc.bodies))
	dst = binary.AppendUvarint(dst, uint64(len(shas)))
	for _, sha := range shas {
		dst = appendBytes(dst, sc.bodies[sha])
	}
	return dst
}

// scriptBodies reads the script cache of a snapshot.
func (r *snapReader) scriptBodies() map[string]string {
	n := r.uvarint()
	if r.err != nil || n == 0 {
		return nil
	}
	bodies := make(map[string]string)
	for i := uint64(0); i < n && r.err == nil; i++ {
		body := string(r.bytes())
		bodies[sha1hex(body)] = body
	}
	return bodies
}

func (sc *scriptCache) digest() uint64 {
	sc.mu.RLock()
	defer sc.mu.RUnlock()
	var sum uint64
	for sha := range sc.bodies {
		sum += xxhash.Sum64String("script:" + sha)
	}
	return sum
}

func sha1hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// scriptVM is a Lua state with Redis's environment, and the call it is running.
type scriptVM struct {
	L        *lua.LState
	c        *Ctx
	readOnly bool
	rand     rand48
	budget   scriptBudget       // the running script's instructions (scriptbudget.go)
	names    map[lua.LValue]int // tostring's names of the running script's tables (scriptnames.go)
	// onError is scriptErrorHandler, made once.
	onError *lua.LFunction
	// reached is the shards the running script took as its calls reached them, beyond
	// those its command or transaction held (Ctx.held).
	reached shardSet
	// The VM serves many scripts, on every replica in another order, so nothing a script
	// does may outlive it: the globals and the libraries are read-only, as in Redis 7.
	// ro holds the tables a script may not change (the globals, and read-only views of
	// the library tables); proxies maps a table to its view.
	ro      map[*lua.LTable]bool
	proxies map[*lua.LTable]*lua.LTable
	// libAPI is the redis table of a library's body while it loads, and registered
	// what that body registers (function.go).
	libAPI     *lua.LTable
	registered map[string]registration
	// oomUntilWrite: the running script was proposed over maxmemory without allow-oom,
	// so its denyoom calls fail until one of its calls has written; wrote: one has
	// (Redis's SCRIPT_WRITE_DIRTY).
	oomUntilWrite, wrote bool
	// broken: gopher-lua failed inside its own error handling (protectedCall); the
	// state is not used again.
	broken bool
	// pcalls are the pcalls running, innermost last (their handler closes upvalues).
	pcalls []pcallFrame
}

// pcallFrame is a running pcall: its state and its first register.
type pcallFrame struct {
	L    *lua.LState
	base int
}

var scriptVMs = sync.Pool{New: func() any { return newScriptVM() }}

// putVM returns vm to the pool, unless it is broken.
func putVM(vm *scriptVM) {
	if !vm.broken {
		scriptVMs.Put(vm)
	}
}

// protectedCall is PCall with the script error handler, for the chunk or function on
// the stack, and survives a failure of gopher-lua's own error handling: an error raised
// with the state's registry full (a call that returned or passed more values than it
// holds) makes PCall push the handler onto the full registry, which panics past PCall.
// That panic ended the process, on every member, and again at every restart as the
// entry was replayed. Here it is the script's error (the same on every member: the
// registry fills at the same instruction), and the state, left inconsistent, is
// dropped.
func (vm *scriptVM) protectedCall(nargs, nret int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			vm.broken = true
			if ae, ok := r.(*lua.ApiError); ok {
				err = ae
			} else {
				err = &lua.ApiError{Type: lua.ApiErrorPanic, Object: lua.LString(fmt.Sprint(r))}
			}
		}
	}()
	return vm.L.PCall(nargs, nret, vm.onError)
}

func newScriptVM() *scriptVM {
	vm := &scriptVM{L: lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: 256, RegistrySize: scriptRegistryMin, RegistryMaxSize: scriptRegistryMax})}
	L := vm.L
	vm.onError = L.NewFunction(scriptErrorHandler)
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath}, {lua.CoroutineLibName, lua.OpenCoroutine}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	watchCoroutines(L)
	boundStringRep(L)
	boundStringBuilders(L)
	boundPatterns(L) // budgeted matching (luapattern.go)
	boundResults(L)
	boundTables(L)    // scripttable.go
	vm.nameObjects(L) // scriptnames.go
	g := L.Get(lua.GlobalsIndex).(*lua.LTable)
	g.RawSetString(concatGuardName, L.NewFunction(concatGuard))
	g.RawSetString(tableSetGuardName, L.NewFunction(tableSetGuard))
	g.RawSetString(tableCtorGuardName, L.NewFunction(tableCtorGuard))
	g.RawSetString(lenGuardName, L.NewFunction(lenGuard))
	for name, f := range map[string]lua.LGFunction{eqGuardName: eqGuard, ltGuardName: ltGuard,
		leGuardName: leGuard, gtGuardName: gtGuard, geGuardName: geGuard} {
		g.RawSetString(name, L.NewFunction(f)) // scriptcompare.go
	}
	// Redis has collectgarbage and gcinfo, but what they answer differs from replica to
	// replica.
	for _, name := range []string{"dofile", "loadfile", "print", "module", "require", "collectgarbage", "gcinfo", "newproxy", "setfenv", "getfenv", "_printregs"} {
		g.RawSetString(name, lua.LNil)
	}
	installLoaders(L, g, vm.onError) // luaload.go
	// Lua 5.1 converts a string to a number with C's strtod (hex, inf, nan, spaces around
	// it); gopher-lua's own conversion takes fewer forms.
	tonumber := g.RawGetString("tonumber").(*lua.LFunction)
	g.RawSetString("tonumber", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() >= 2 && L.Get(2) != lua.LNil && L.CheckInt(2) != 10 {
			L.Insert(tonumber, 1)
			L.Call(L.GetTop()-1, 1)
			return 1
		}
		switch v := L.CheckAny(1).(type) {
		case lua.LNumber:
			L.Push(v)
		case lua.LString:
			L.Push(luaStringNumber(string(v)))
		default:
			L.Push(lua.LNil)
		}
		return 1
	}))
	// Redis's pcall hands a script the message of an error reply, not the table; a
	// message of the VM's is worded as Lua's before the stack unwinds (luaerrors.go).
	// It also closes the upvalues of the failed call (closeUpvaluesFrom), from the base
	// of the innermost pcall running on this state.
	reword := L.NewFunction(func(L *lua.LState) int {
		if k := len(vm.pcalls); k > 0 && vm.pcalls[k-1].L == L {
			closeUpvaluesFrom(L, vm.pcalls[k-1].base)
		}
		L.Push(rewordError(L, L.Get(1)))
		return 1
	})
	g.RawSetString("pcall", L.NewFunction(func(L *lua.LState) int {
		n := L.GetTop()
		// Redis's pcall (luaRedisPcall) calls with lua_pcall, which fails a value that
		// cannot be called with Lua's message, placed nowhere; and with no argument at
		// all it calls the true it pushed for its result.
		var callee lua.LValue = lua.LTrue
		if n > 0 {
			callee = L.Get(1)
		}
		if _, ok := callee.(*lua.LFunction); !ok && L.GetMetaField(callee, "__call") == lua.LNil {
			L.SetTop(0)
			L.Push(lua.LFalse)
			L.Push(lua.LString("attempt to call a " + callee.Type().String() + " value"))
			return 2
		}
		vm.pcalls = append(vm.pcalls, pcallFrame{L, frameBase(L)})
		err := L.PCall(n-1, lua.MultRet, reword)
		vm.pcalls = vm.pcalls[:len(vm.pcalls)-1]
		if err != nil {
			var v lua.LValue = lua.LString(err.Error())
			if ae, ok := err.(*lua.ApiError); ok {
				v = ae.Object
			}
			if t, ok := v.(*lua.LTable); ok {
				if e, ok := t.RawGetString("err").(lua.LString); ok {
					v = e
				}
			}
			L.SetTop(0)
			L.Push(lua.LFalse)
			L.Push(v)
			return 2
		}
		L.Insert(lua.LTrue, 1)
		return L.GetTop()
	}))
	mathLib := g.RawGetString("math").(*lua.LTable)
	mathLib.RawSetString("huge", lua.LNumber(math.Inf(1))) // gopher-lua's is the largest finite double
	mathLib.RawSetString("random", L.NewFunction(vm.random))
	mathLib.RawSetString("randomseed", L.NewFunction(func(L *lua.LState) int {
		vm.rand.seed(int32(L.CheckInt(1)))
		return 0
	}))

	redis := L.NewTable()
	redis.RawSetString("call", L.NewFunction(func(L *lua.LState) int { return vm.call(true) }))
	redis.RawSetString("pcall", L.NewFunction(func(L *lua.LState) int { return vm.call(false) }))
	// Redis's checks of its own functions' arguments: error_reply and status_reply
	// return an error reply when not given one string (a number is not one), and
	// sha1hex raises one.
	errorTable := func(msg string) *lua.LTable {
		t := L.NewTable()
		t.RawSetString("err", lua.LString(msg))
		return t
	}
	reply := func(field string) lua.LGFunction {
		return func(L *lua.LState) int {
			s, ok := L.Get(1).(lua.LString)
			if L.GetTop() != 1 || !ok {
				L.Push(errorTable("ERR wrong number or type of arguments"))
				return 1
			}
			if field == "err" {
				s = lua.LString(errorReplyText(string(s)))
			}
			t := L.NewTable()
			t.RawSetString(field, s)
			L.Push(t)
			return 1
		}
	}
	redis.RawSetString("error_reply", L.NewFunction(reply("err")))
	redis.RawSetString("status_reply", L.NewFunction(reply("ok")))
	redis.RawSetString("sha1hex", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.Error(errorTable("ERR wrong number of arguments"), 0)
		}
		L.Push(lua.LString(sha1hex(L.ToString(1))))
		return 1
	}))
	redis.RawSetString("log", L.NewFunction(func(*lua.LState) int { return 0 }))
	redis.RawSetString("setresp", L.NewFunction(func(L *lua.LState) int {
		if L.CheckInt(1) != 2 {
			L.RaiseError("RESP version must be 2 in nanokv scripts")
		}
		return 0
	}))
	for name, v := range map[string]int{"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3} {
		redis.RawSetString(name, lua.LNumber(v))
	}
	g.RawSetString("redis", redis)
	g.RawSetString("bit", openBit(L))
	g.RawSetString("cjson", openCJSON(L))
	g.RawSetString("cmsgpack", openCMsgpack(L)) // luamsgpack.go
	g.RawSetString("struct", openStruct(L))     // luastruct.go

	asLuaArguments(L, g) // luaargs.go

	// Redis's global protection: a script may not create globals nor read missing ones,
	// nor change a library.
	vm.ro = map[*lua.LTable]bool{g: true}
	vm.proxies = map[*lua.LTable]*lua.LTable{}
	for _, name := range []string{"string", "table", "math", "coroutine", "redis", "bit", "cjson", "cmsgpack", "struct"} {
		g.RawSetString(name, vm.readOnlyView(g.RawGetString(name).(*lua.LTable)))
	}
	strMT := L.GetMetatable(lua.LString("")).(*lua.LTable)
	g.RawSetString("getmetatable", L.NewFunction(func(L *lua.LState) int {
		switch v := L.CheckAny(1).(type) {
		case lua.LString:
			L.Push(vm.readOnlyView(strMT))
		case *lua.LTable:
			if vm.ro[v] && v != g {
				L.Push(lua.LNil) // a library table has none in Redis
				return 1
			}
			L.Push(L.GetMetaField(v, "__metatable"))
			if L.Get(-1) == lua.LNil {
				L.Pop(1)
				L.Push(L.GetMetatable(v))
			}
		default:
			L.Push(L.GetMetatable(v))
		}
		return 1
	}))
	refuse := func(L *lua.LState) *lua.LTable {
		t := L.CheckTable(1)
		if vm.ro[t] {
			L.Error(lua.LString("Attempt to modify a readonly table"), 0)
		}
		return t
	}
	g.RawSetString("rawset", L.NewFunction(func(L *lua.LState) int {
		t := refuse(L)
		chargePadding(L, t, L.CheckAny(2)) // scripttable.go
		t.RawSet(L.CheckAny(2), L.CheckAny(3))
		L.SetTop(1)
		return 1
	}))
	setmt := g.RawGetString("setmetatable").(*lua.LFunction)
	g.RawSetString("setmetatable", L.NewFunction(func(L *lua.LState) int {
		refuse(L)
		return setmt.GFunction(L)
	}))
	wrapLuaLibrary(L, g, "") // luaargs.go
	mt := L.NewTable()
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	}))
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.ToString(2))
		return 0
	}))
	L.SetMetatable(g, mt)
	return vm
}

// readOnlyView is an empty table that reads through to t (and to read-only views of the
// tables in t) and refuses writes. rawset and setmetatable refuse it too.
func (vm *scriptVM) readOnlyView(t *lua.LTable) *lua.LTable {
	if p, ok := vm.proxies[t]; ok {
		return p
	}
	p := vm.proxy(func(L *lua.LState) int {
		v := t.RawGet(L.Get(2))
		if tv, ok := v.(*lua.LTable); ok {
			v = vm.readOnlyView(tv)
		}
		L.Push(v)
		return 1
	})
	vm.proxies[t] = p
	return p
}

// proxy is an empty table whose reads go to index (its __index) and whose writes are
// refused; rawset and setmetatable refuse it too.
func (vm *scriptVM) proxy(index lua.LGFunction) *lua.LTable {
	L := vm.L
	p := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(index))
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	}))
	L.SetMetatable(p, mt)
	vm.ro[p] = true
	return p
}

// openBit is LuaBitOp, the bit library Redis loads: 32-bit operations whose results are
// signed 32-bit numbers.
func openBit(L *lua.LState) *lua.LTable {
	// barg is LuaBitOp's conversion: the number rounded (half to even) and taken mod 2^32.
	// A NaN's low bits are its payload: 0 for every NaN Lua makes on x86 (strtod's, the
	// default one), 1 for Go's (gopher-lua's VM reads "nan" with Go's parser).
	barg := func(L *lua.LState, i int) uint32 {
		n := float64(L.CheckNumber(i))
		if n != n {
			return 0
		}
		return uint32(math.Float64bits(n + 6755399441055744.0))
	}
	ret := func(L *lua.LState, b uint32) int {
		L.Push(lua.LNumber(int32(b)))
		return 1
	}
	fold := func(op func(a, b uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			b := barg(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				b = op(b, barg(L, i))
			}
			return ret(L, b)
		}
	}
	shift := func(op func(b uint32, n uint) uint32) lua.LGFunction {
		return func(L *lua.LState) int { return ret(L, op(barg(L, 1), uint(barg(L, 2)&31))) }
	}
	t := L.NewTable()
	for name, fn := range map[string]lua.LGFunction{
		"tobit":   func(L *lua.LState) int { return ret(L, barg(L, 1)) },
		"bnot":    func(L *lua.LState) int { return ret(L, ^barg(L, 1)) },
		"band":    fold(func(a, b uint32) uint32 { return a & b }),
		"bor":     fold(func(a, b uint32) uint32 { return a | b }),
		"bxor":    fold(func(a, b uint32) uint32 { return a ^ b }),
		"lshift":  shift(func(b uint32, n uint) uint32 { return b << n }),
		"rshift":  shift(func(b uint32, n uint) uint32 { return b >> n }),
		"arshift": shift(func(b uint32, n uint) uint32 { return uint32(int32(b) >> n) }),
		"rol":     shift(func(b uint32, n uint) uint32 { return bits.RotateLeft32(b, int(n)) }),
		"ror":     shift(func(b uint32, n uint) uint32 { return bits.RotateLeft32(b, -int(n)) }),
		"bswap":   func(L *lua.LState) int { return ret(L, bits.ReverseBytes32(barg(L, 1))) },
		"tohex": func(L *lua.LState) int {
			b, n := barg(L, 1), 8
			if L.GetTop() >= 2 {
				n = int(int32(barg(L, 2)))
			}
			digits := "0123456789abcdef"
			if n < 0 {
				n, digits = -n, "0123456789ABCDEF"
			}
			n = min(n, 8)
			out := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				out[i] = digits[b&15]
				b >>= 4
			}
			L.Push(lua.LString(out))
			return 1
		},
	} {
		t.RawSetString(name, L.NewFunction(fn))
	}
	return t
}

// scriptErrorHandler turns the error a script raised into Rediss error table, with the
// script line where it was raised (as Rediss __redis__err__handler does).
func scriptErrorHandler(L *lua.LState) int {
	err := rewordError(L, L.Get(1)) // Lua 5.1's words (luaerrors.go)
	t, ok := err.(*lua.LTable)
	if !ok {
		t = L.NewTable()
		t.RawSetString("err", lua.LString("ERR "+errorValueText(err)))
	}
	// the line of the script where it failed: the innermost frame of the script
	for level := 0; ; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err == nil && (dbg.Source == scriptChunk || dbg.Source == functionChunk) && dbg.CurrentLine > 0 {
			t.RawSetString("line", lua.LNumber(dbg.CurrentLine))
			break
		}
	}
	L.Push(t)
	return 1
}

// errorValueText is how Redis writes an error value that is not a table: error(nil)
// (or error()) is "ERR nil", error(true) "ERR true".
func errorValueText(v lua.LValue) string {
	switch v := v.(type) {
	case lua.LNumber:
		return formatG(float64(v))
	case *lua.LNilType, lua.LBool:
		return v.String()
	}
	return lua.LVAsString(v)
}

// rand48 is the 48-bit generator of POSIX drand48, as Redis's rand.c implements it for
// math.random.
type rand48 struct{ x uint64 }

func (r *rand48) seed(s int32) { r.x = uint64(uint32(s))<<16 | 0x330e }

func (r *rand48) next() int32 {
	r.x = (0x5deece66d*r.x + 0xb) & (1<<48 - 1)
	return int32(r.x >> 17)
}

// random is Redis's math.random, on its generator.
func (vm *scriptVM) random(L *lua.LState) int {
	r := float64(vm.rand.next()%math.MaxInt32) / float64(math.MaxInt32)
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(r))
	case 1:
		u := L.CheckInt(1)
		if u < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u)) + 1))
	case 2:
		l, u := L.CheckInt(1), L.CheckInt(2)
		if l > u {
			L.ArgError(2, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u-l+1)) + float64(l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

// notFromScripts are the commands Redis 7.0 refuses inside a script (its noscript
// flag), and subcommands as "container|sub", each with its arity as Redis counts it (0:
// the store's own Spec checks it). To these the frontend adds the rest of Redis's
// command table (RefuseInScripts), with the server commands a store never runs
// (REPLCONF, LATENCY LATEST, SSUBSCRIBE...): refused, they answer Redis's errors, not
// the one for a command Redis does not know.
var notFromScripts = map[string]int{
	"multi": 0, "exec": 0, "discard": 0, "watch": 0, "unwatch": 0,
	"eval": 0, "evalsha": 0, "eval_ro": 0, "evalsha_ro": 0, "script": 0,
	"fcall": 0, "fcall_ro": 0, "function": 0,
	"config": 0, "client": 0, "auth": 0, "hello": 0, "subscribe": 0,
	"psubscribe": 0, "unsubscribe": 0, "punsubscribe": 0, "blpop": 0,
	"brpop": 0, "blmove": 0, "brpoplpush": 0, "bzpopmin": 0,
	"bzpopmax": 0, "wait": 0, "monitor": 0, "debug": 0,
	"acl": 0, "role": 0, "save": 0, "bgsave": 0, "bgrewriteaof": 0,
	"quit": 0, "reset": 0, "shutdown": 0, "sync": 0, "psync": 0,
	"replicaof": 0, "slaveof": 0, "failover": 0, "module": 0,
}

// RefuseInScripts adds commands that a script may not call, by name (lower case; a
// subcommand as "container|sub"), with their arities as Redis counts them. Called at
// init, before any script runs.
func RefuseInScripts(arities map[string]int) {
	maps.Copy(notFromScripts, arities)
}

// ScriptMonitor hears of every command a script calls, with the database it runs in:
// MONITOR's "[db lua]" lines. It is called only where the script's reply goes (the
// member that answers its client; not a member that applies the entry for nobody),
// and on the applier, so it must only queue, never block.
type ScriptMonitor func(db int, args [][]byte)

// SetScriptMonitor sets who hears of scripts' calls (nil: nobody).
func (s *Store) SetScriptMonitor(m ScriptMonitor) {
	if m == nil {
		s.scriptMonitor.Store(nil)
		return
	}
	s.scriptMonitor.Store(&m)
}

// call is redis.call (raise) and redis.pcall (return the error as a table).
func (vm *scriptVM) call(raise bool) int {
	L := vm.L
	n := L.GetTop()
	fail := func(msg string) int {
		t := L.NewTable()
		t.RawSetString("err", lua.LString(msg))
		if raise {
			L.Error(t, 1)
		}
		L.Push(t)
		return 1
	}
	if n == 0 {
		return fail("ERR Please specify at least one argument for this redis lib call")
	}
	args := make([][]byte, n)
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			args[i-1] = []byte(string(v))
		case lua.LNumber:
			args[i-1] = []byte(luaArgNumber(float64(v)))
		default:
			return fail("ERR Lua redis lib command arguments must be strings or integers")
		}
	}
	name := strings.ToLower(string(args[0]))
	if name == "time" && n == 1 { // the entry's clock, as every replica sees it
		t := L.CreateTable(2, 0)
		t.Append(lua.LString(strconv.FormatInt(vm.c.Now/1000, 10)))
		t.Append(lua.LString(strconv.FormatInt(vm.c.Now%1000*1000, 10)))
		L.Push(t)
		return 1
	}
	spec := Lookup(args[0])
	// As Redis: an unknown command, then the arity, then the refusal.
	refusedName := name
	if n > 1 {
		sub := name + "|" + strings.ToLower(string(args[1]))
		if _, ok := notFromScripts[sub]; ok {
			refusedName = sub
		}
	}
	arity, refused := notFromScripts[refusedName]
	switch {
	case refused && spec == nil:
		if arity > 0 && n != arity || arity < 0 && n < -arity {
			return fail("ERR Wrong number of args calling Redis command from script")
		}
		return fail("ERR This Redis command is not allowed from script")
	case spec == nil || spec.Subcommands != nil && len(args) > 1 && spec.Subcommands[strings.ToLower(string(args[1]))] == 0:
		return fail("ERR Unknown Redis command called from script")
	case spec.ArgsError(args) != "":
		vm.c.reject(spec, args)
		return fail("ERR Wrong number of args calling Redis command from script")
	case refused || spec.Flags&FlagNoMulti != 0:
		return fail("ERR This Redis command is not allowed from script")
	case vm.c.acl != nil:
		if msg := vm.c.checkScriptCall(spec, args); msg != "" {
			return fail(msg)
		}
	}
	switch {
	case spec.Writes(args) && (vm.readOnly || !vm.c.writing):
		return fail("ERR Write commands are not allowed from read-only scripts.")
	case vm.oomUntilWrite && !vm.wrote && spec.Flags&FlagDenyOOM != 0:
		// Redis's scriptVerifyOOM: over maxmemory a script may not start writing, but
		// once it has written it is not stopped in the middle
		return fail(ErrOOM)
	}
	if spec.Flags&FlagWrite != 0 {
		vm.wrote = true
	}
	c := vm.c
	if c.held != nil {
		vm.reach(spec.lockSet(args, true, nil))
	}
	if m := c.s.scriptMonitor.Load(); m != nil && c.W != Discard {
		(*m)(c.DB, args)
	}
	w := &luaWriter{L: L}
	saved := c.W
	c.W = w
	errs := c.errs
	c.call(spec, args) // under the shards the script holds (reach), no locking of its own
	c.errs = errs      // an error the script gets is not the script's reply
	c.W = saved
	if spec.Name == "select" && !w.isErr {
		db, _ := ParseInt(args[1])
		c.DB = int(db) // for the rest of the script only, as in Redis 7
	}
	chargeBytes(L, w.bytes) // after the call: a command does not stop halfway
	v := w.result()
	if t, ok := v.(*lua.LTable); ok && w.isErr {
		if raise {
			L.Error(t, 1)
		}
	}
	L.Push(v)
	return 1
}

// reach write-locks the shards of l the script does not hold yet. Waiting for one while
// holding others cannot deadlock: the applier is the only writer, and readers never wait
// while they hold a shard (Store.rlockShards).
func (vm *scriptVM) reach(l lockSet) {
	c := vm.c
	take := func(i int) {
		if !c.held.has(i) {
			c.s.shards[i].mu.Lock()
			c.s.beforeWrite(i)
			c.held.add(i)
			vm.reached.add(i)
		}
	}
	if l.all {
		for i := range numShards {
			take(i)
		}
		return
	}
	for _, id := range l.ids[:l.n] {
		take(int(id))
	}
}

// release lets go of the shards the script run on c reached.
func (vm *scriptVM) release(c *Ctx) {
	if vm.reached == (shardSet{}) {
		return
	}
	for i := range numShards {
		if vm.reached.has(i) {
			c.s.shards[i].mu.Unlock()
			c.held.remove(i)
		}
	}
	vm.reached = shardSet{}
}

// luaStringNumber is Lua 5.1's luaO_str2d over glibc: the number a string holds, or nil.
// The string ends at a NUL, as a C string does.
func luaStringNumber(s string) lua.LValue {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	v, n, _ := strtod([]byte(s))
	if n == 0 {
		return lua.LNil
	}
	rest := s[n:]
	if rest != "" && rest[0]|0x20 == 'x' {
		return lua.LNil // "0x" without digits: strtoul stops at the x too
	}
	for rest != "" && isCSpace(rest[0]) {
		rest = rest[1:]
	}
	if rest != "" {
		return lua.LNil
	}
	return lua.LNumber(v)
}

// luaArgNumber is a number passed to redis.call as Redis prints it: glibc's "%.17g" (Lua's
// own "%.14g" would lose digits), whose NaN of 0/0 is "-nan".
func luaArgNumber(f float64) string {
	if math.IsNaN(f) {
		if math.Signbit(f) {
			return "-nan"
		}
		return "nan"
	}
	return FormatDouble(f)
}

// luaWriter turns a command's reply into a Lua value, as Redis converts a RESP2 reply.
type luaWriter struct {
	L     *lua.LState
	stack []luaFrame
	top   lua.LValue
	isErr bool
	bytes int // the reply's size in Lua (charged once the call is over)
}

// luaValueBytes is what a value of a reply costs in Lua beyond its string's bytes: its
// slot in a table and its header (a KEYS * of a million short keys is tens of MB).
const luaValueBytes = 32

type luaFrame struct {
	t    *lua.LTable
	left int
}

func (w *luaWriter) put(v lua.LValue) {
	w.bytes += luaValueBytes
	for {
		if len(w.stack) == 0 {
			w.top = v
			return
		}
		f := &w.stack[len(w.stack)-1]
		f.t.Append(v)
		f.left--
		if f.left > 0 {
			return
		}
		v = f.t
		w.stack = w.stack[:len(w.stack)-1]
	}
}

func (w *luaWriter) open(n int) {
	t := w.L.CreateTable(n, 0)
	if n == 0 {
		w.put(t)
		return
	}
	w.stack = append(w.stack, luaFrame{t: t, left: n})
}

func (w *luaWriter) result() lua.LValue {
	if w.top == nil {
		return lua.LFalse
	}
	return w.top
}

func (w *luaWriter) Status(s string) {
	t := w.L.NewTable()
	t.RawSetString("ok", lua.LString(s))
	w.put(t)
}

func (w *luaWriter) Error(msg string) {
	t := w.L.NewTable()
	t.RawSetString("err", lua.LString(msg))
	if len(w.stack) == 0 {
		w.isErr = true
	}
	w.put(t)
}

func (w *luaWriter) Int(n int64)           { w.put(lua.LNumber(n)) }
func (w *luaWriter) Bulk(b []byte)         { w.bytes += len(b); w.put(lua.LString(string(b))) }
func (w *luaWriter) BulkString(s string)   { w.bytes += len(s); w.put(lua.LString(s)) }
func (w *luaWriter) Null()                 { w.put(lua.LFalse) }
func (w *luaWriter) NullArray()            { w.put(lua.LFalse) }
func (w *luaWriter) Array(n int)           { w.open(n) }
func (w *luaWriter) Map(n int)             { w.open(2 * n) }
func (w *luaWriter) Set(n int)             { w.open(n) }
func (w *luaWriter) Double(f float64)      { w.put(lua.LString(FormatDouble(f))) }
func (w *luaWriter) Resp3() bool           { return false }
func (w *luaWriter) HumanDouble(f float64) { w.put(lua.LString(FormatHumanDouble(f))) }

// numKeys reads EVAL's or FCALL's numkeys (args[2]), which the arguments after it must
// hold; notInt is the command's reply to one that is not an integer.
func (c *Ctx) numKeys(args [][]byte, notInt string) (int, bool) {
	n, ok := ParseInt(args[2])
	switch {
	case !ok:
		c.Error(notInt)
	case n < 0:
		c.Error("ERR Number of keys can't be negative")
	case n > int64(len(args)-3):
		c.Error("ERR Number of keys can't be greater than number of args")
	default:
		return int(n), true
	}
	return 0, false
}

// evalCmd runs EVAL (bySHA false) or EVALSHA, read-only for the _RO variants.
func evalCmd(bySHA, readOnly bool) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		c.noteScriptCmd(args)
		if bySHA && len(args[1]) != 40 {
			c.Error(errNoScript) // no SHA1 is that long: Redis answers before numkeys
			return
		}
		numkeys, ok := c.numKeys(args, ErrNotInteger)
		if !ok {
			return
		}
		var sha, body string
		if bySHA {
			sha = strings.ToLower(string(args[1]))
			if body, ok = c.s.scripts.get(sha); !ok {
				c.Error(errNoScript)
				return
			}
		} else {
			body = string(args[1])
			sha = sha1hex(body)
		}
		cs, e := c.s.scripts.compile(sha, body)
		if e != "" {
			c.Error(e)
			return
		}
		ro := readOnly // EVAL_RO's
		if cs.shebang {
			// a script with a shebang line says itself whether it writes
			if ro && cs.flags&flagNoWrites == 0 {
				c.Error(errWriteFlagRO)
				return
			}
			ro = cs.flags&flagNoWrites != 0
		}
		if !bySHA && c.writing {
			c.s.scripts.add(sha, body)
		}
		vm := scriptVMs.Get().(*scriptVM)
		defer putVM(vm)
		vm.run(c, cs, sha, args[3:3+numkeys], args[3+numkeys:], ro)
	}
}

// run calls the compiled script with KEYS and ARGV and replies with what it returns.
func (vm *scriptVM) run(c *Ctx, cs compiledScript, sha string, keys, argv [][]byte, readOnly bool) {
	vm.exec(c, readOnly, cs.flags, scriptChunk, sha, func(L *lua.LState, g *lua.LTable) (int, string) {
		g.RawSetString("KEYS", luaStrings(L, keys))
		g.RawSetString("ARGV", luaStrings(L, argv))
		L.Push(L.NewFunctionFromProto(cs.proto))
		return 0, ""
	})
}

// exec runs a script or a function for c and replies with what it returns. push pushes
// the Lua function and its arguments and returns how many arguments, or an error reply;
// chunk (the code's chunk name) and name (the script's SHA-1 or the function's name) are
// for error replies.
func (vm *scriptVM) exec(c *Ctx, readOnly bool, flags funcFlags, chunk, name string, push func(L *lua.LState, g *lua.LTable) (int, string)) {
	L := vm.L
	vm.c, vm.readOnly = c, readOnly
	vm.oomUntilWrite, vm.wrote = c.overMemory && flags&flagAllowOOM == 0, false
	if c.writing {
		c.s.scriptRunning.Store(true)
		defer c.s.scriptRunning.Store(false)
	}
	db := c.DB
	defer func() {
		c.DB = db
		vm.release(c)
	}()
	// Redis 7 no longer reseeds math.random for each script (it replicates a script's
	// effects, not the script); here every replica runs the script, so the seed comes
	// from the entry's randomness: different at every call, the same on every replica.
	vm.rand.x = c.rnd.next() & (1<<48 - 1)
	vm.budget.left = scriptMaxInstructions
	vm.names = nil // tostring's names start again (scriptnames.go)
	L.SetContext(&vm.budget)
	defer func() { vm.c = nil; L.SetTop(0); L.RemoveContext() }()
	g := L.Get(lua.GlobalsIndex).(*lua.LTable)
	nargs, e := push(L, g)
	if e != "" {
		c.Error(e)
		return
	}
	if err := vm.protectedCall(nargs, 1); err != nil {
		msg, line := luaError(err)
		c.Error(firstLine(msg) + " script: " + name + ", on @" + chunk + ":" + strconv.Itoa(line) + ".")
		return
	}
	v := L.Get(-1)
	// The reply costs what the values of redis.call's replies cost (luaValueBytes, two
	// instructions each): a table that others share is written once for each, and
	// thirty levels of `t = {t, t}` are a billion values from a few instructions.
	if n := replyValues(v, 0, vm.budget.left/2); 2*n > vm.budget.left {
		c.errs++
		c.Error("ERR " + scriptBudgetError().Error() + " (its reply) script: " + name + ", on @" + chunk + ".")
		return
	}
	if t, ok := v.(*lua.LTable); ok {
		if _, isErr := t.RawGetString("err").(lua.LString); isErr {
			c.errs++ // the script replies an error: its call failed
		}
	}
	replyLua(c.W, v, 0)
}

// luaReplyMaxDepth is how deeply a script's reply nests at most. Redis converts it with
// lua_checkstack(4) at every level, which fails past Lua 5.1's 8000 stack slots: a
// table nested deeper (a cycle: `t[1] = t`) replies 7995 arrays and the error "reached
// lua stack limit" innermost. nanokv recursed until the Go stack overflowed, a fatal
// error, on every member and again at every replay of the entry.
const luaReplyMaxDepth = 7995

// replyValues counts the values replyLua writes for v at depth, stopping once past
// limit.
func replyValues(v lua.LValue, depth int, limit int64) int64 {
	t, ok := v.(*lua.LTable)
	if !ok || depth >= luaReplyMaxDepth {
		return 1
	}
	if _, isErr := t.RawGetString("err").(lua.LString); isErr {
		return 1
	}
	if _, isOK := t.RawGetString("ok").(lua.LString); isOK {
		return 1
	}
	n := int64(1)
	for i := 1; n <= limit; i++ {
		e := t.RawGetInt(i)
		if e == lua.LNil {
			break
		}
		n += replyValues(e, depth+1, limit-n)
	}
	return n
}

// errorReplyText is the err field of redis.error_reply(s), as Redis 7 makes it
// (luaPushErrorBuff): s's first word is the error code when s starts with '-', else the
// code is ERR ("x" is "ERR x", "-MY err" is "MY err"), and the message loses the CRs and
// LFs at its ends.
func errorReplyText(s string) string {
	s = strings.TrimPrefix(s, "-")
	code, msg, ok := strings.Cut(s, " ")
	if !ok {
		code, msg = "ERR", s
	}
	return code + " " + strings.Trim(msg, "\r\n")
}

// luaError is the error reply a script's error makes (scriptErrorHandler's table), and
// the line of the script it was raised on.
func luaError(err error) (msg string, line int) {
	msg = "ERR unknown error"
	if ae, ok := err.(*lua.ApiError); ok {
		if t, ok := ae.Object.(*lua.LTable); ok {
			msg = lua.LVAsString(t.RawGetString("err"))
			if n, ok := t.RawGetString("line").(lua.LNumber); ok {
				line = int(n)
			}
		} else {
			msg = "ERR " + lua.LVAsString(ae.Object)
		}
	}
	return msg, line
}

func firstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}

func luaStrings(L *lua.LState, bs [][]byte) *lua.LTable {
	t := L.CreateTable(len(bs), 0)
	for _, b := range bs {
		t.Append(lua.LString(string(b)))
	}
	return t
}

// replyLua writes a script's return value, at depth, as Redis converts it: a number is
// truncated to an integer, a table with err or ok is an error or a status, other tables
// are arrays up to their first nil (down to luaReplyMaxDepth), true is 1 and false or
// nil a null.
func replyLua(w ReplyWriter, v lua.LValue, depth int) {
	if depth >= luaReplyMaxDepth {
		w.Error("ERR reached lua stack limit") // whatever v is, as Redis's check
		return
	}
	switch v := v.(type) {
	case lua.LNumber:
		// (long long) of a double on x86-64: NaN and what does not fit are the "integer
		// indefinite", the smallest int64
		if f := float64(v); f != f || f >= 0x1p63 || f < -0x1p63 {
			w.Int(math.MinInt64)
		} else {
			w.Int(int64(f))
		}
	case lua.LString:
		w.BulkString(string(v))
	case lua.LBool:
		if v {
			w.Int(1)
		} else {
			w.Null()
		}
	case *lua.LTable:
		if e, ok := v.RawGetString("err").(lua.LString); ok {
			w.Error(firstLine(string(e)))
			return
		}
		if s, ok := v.RawGetString("ok").(lua.LString); ok {
			w.Status(firstLine(string(s)))
			return
		}
		n := 0
		for v.RawGetInt(n+1) != lua.LNil {
			n++
		}
		w.Array(n)
		for i := 1; i <= n; i++ {
			replyLua(w, v.RawGetInt(i), depth+1)
		}
	default:
		w.Null()
	}
}

var scriptHelp = []string{
	"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DEBUG (YES|SYNC|NO)",
	"    Set the debug mode for subsequent scripts executed.",
	"EXISTS <sha1> [<sha1> ...]",
	"    Return information about the existence of the scripts in the script cache.",
	"FLUSH [ASYNC|SYNC]",
	"    Flush the Lua scripts cache. Very dangerous on replicas.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the scripts cache.",
	"    * SYNC: Synchronously flush the scripts cache.",
	"KILL",
	"    Kill the currently executing Lua script.",
	"LOAD <script>",
	"    Load a script into the scripts cache without executing it.",
	"HELP",
	"    Prints this help.",
}

func scriptCmd(c *Ctx, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	switch {
	case sub == "load" && len(args) == 3:
		body := string(args[2])
		sha := sha1hex(body)
		if _, e := c.s.scripts.compile(sha, body); e != "" {
			c.Error(e)
			return
		}
		c.s.scripts.add(sha, body)
		c.W.BulkString(sha)
	case sub == "exists" && len(args) >= 3:
		c.W.Array(len(args) - 2)
		for _, a := range args[2:] {
			if _, ok := c.s.scripts.get(strings.ToLower(string(a))); ok {
				c.W.Int(1)
			} else {
				c.W.Int(0)
			}
		}
	case sub == "flush":
		if len(args) > 3 || len(args) == 3 && !eq(args[2], "sync") && !eq(args[2], "async") {
			c.Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
			return
		}
		c.s.scripts.flush()
		c.W.Status("OK")
	case sub == "kill" && len(args) == 2:
		// A script that runs has its effects in the log already: every replica runs it to
		// its end, as Redis does once a script has written.
		if c.s.scriptRunning.Load() {
			c.Error("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
		} else {
			c.Error("NOTBUSY No scripts in execution right now.")
		}
	case sub == "debug" && len(args) == 3:
		switch strings.ToLower(string(args[2])) {
		case "no":
			c.W.Status("OK")
		case "yes", "sync":
			c.Error("ERR SCRIPT DEBUG is not supported by nanokv")
		default:
			c.Error("ERR Use SCRIPT DEBUG YES/SYNC/NO")
		}
	case sub == "help" && len(args) == 2:
		c.statusLines(scriptHelp)
	case sub == "load" || sub == "exists" || sub == "flush" || sub == "kill" || sub == "debug" || sub == "help":
		c.Error(WrongArgs("script|" + sub))
	default:
		c.Error("ERR unknown subcommand '" + string(args[1]) + "'. Try SCRIPT HELP.")
	}
}
