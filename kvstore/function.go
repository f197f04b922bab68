package kvstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	lua "github.com/yuin/gopher-lua"
)

// Functions (FUNCTION, FCALL, FCALL_RO), as Redis 7.0 has them: a library is Lua code
// whose first line names it ("#!lua name=mylib") and whose body registers functions with
// redis.register_function; FCALL calls one by name with its keys and arguments.
//
// The libraries are replicated state, like the script cache: FUNCTION LOAD, DELETE,
// FLUSH and RESTORE go through the log, the libraries are in snapshots and in the
// digest. Every member runs every FCALL (nanokv replicates commands, not their effects),
// so a call must not depend on what earlier calls left behind: each FCALL runs its
// library's body afresh in the VM it gets, and calls the function that body registered.
// In Redis a library's local variables live on between calls on the master; here they
// start anew at every call, the same on every member.

func init() {
	register(
		&Spec{Name: "fcall", Arity: -3, Flags: FlagWrite | FlagScript, Group: "scripting", Since: "7.0.0", Summary: "Invoke a function", Run: fcallCmd(false), MoreKeys: scriptKeys},
		&Spec{Name: "fcall_ro", Arity: -3, Flags: FlagReadOnly | FlagAllKeys, Group: "scripting", Since: "7.0.0", Summary: "Invoke a read-only function", Run: fcallCmd(true)},
		// LOAD, DELETE, FLUSH and RESTORE change the libraries; the others read them.
		&Spec{Name: "function", Arity: -2, Flags: FlagWrite, Group: "scripting", Since: "7.0.0", Summary: "A container for function commands", Run: functionCmd,
			Subcommands: functionArity, Check: CheckFunctionLoad,
			ReadOnlyCall: func(args [][]byte) bool {
				switch strings.ToLower(string(args[1])) {
				case "load", "delete", "flush", "restore":
					return false
				}
				return true
			}},
	)
}

const (
	// functionChunk is the chunk name of library code in error messages.
	functionChunk = "user_function"
	// rdbOpcodeFunction2 and rdbOpcodeFunctionPreGA open a library in a FUNCTION DUMP
	// payload (Redis 7.0 GA, and its release candidates).
	rdbOpcodeFunction2     = 245
	rdbOpcodeFunctionPreGA = 246

	errFunctionNotFound = "ERR Function not found"
	errWriteFlagRO      = "ERR Can not execute a script with write flag using *_ro command."
	errFunctionName     = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
)

// funcFlags are a function's flags (Redis's script flags), in the order FUNCTION LIST
// shows them.
type funcFlags uint8

var funcFlagNames = []string{"no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"}

const (
	flagNoWrites funcFlags = 1 << iota
	flagAllowOOM
)

type funcMeta struct {
	desc    string
	hasDesc bool
	flags   funcFlags
}

// funcLibrary is a loaded library: its code, compiled, and what its body registers.
type funcLibrary struct {
	name  string
	code  string
	proto *lua.FunctionProto
	funcs map[string]funcMeta
}

// funcLibs is the replicated set of libraries. The applier changes it; the read path
// (FCALL_RO, FUNCTION LIST) reads it meanwhile.
type funcLibs struct {
	mu   sync.RWMutex
	libs map[string]*funcLibrary // by library name
	fns  map[string]*funcLibrary // by function name, lower-cased: Redis's are case-insensitive
}

// function finds a function by name, in any case; fn is the name it was registered
// with.
func (f *funcLibs) function(name string) (lib *funcLibrary, fn string, meta funcMeta, ok bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if lib = f.fns[strings.ToLower(name)]; lib == nil {
		return nil, "", funcMeta{}, false
	}
	if meta, ok = lib.funcs[name]; ok {
		return lib, name, meta, true
	}
	// the same name in another case; of several ('a' and 'A' in one library), the
	// first by name, the same on every member
	for _, fn = range slices.Sorted(maps.Keys(lib.funcs)) {
		if strings.EqualFold(fn, name) {
			break
		}
	}
	return lib, fn, lib.funcs[fn], true
}

func (f *funcLibs) library(name string) (*funcLibrary, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	lib, ok := f.libs[name]
	return lib, ok
}

// sorted returns the libraries by name.
func (f *funcLibs) sorted() []*funcLibrary {
	f.mu.RLock()
	defer f.mu.RUnlock()
	names := slices.Sorted(maps.Keys(f.libs))
	out := make([]*funcLibrary, len(names))
	for i, n := range names {
		out[i] = f.libs[n]
	}
	return out
}

// join adds libs to the set (Redis's libraryJoin), or makes them the set when flush: a
// library of the same name is an error unless replace (exists is the error, with %s for
// the name), and so is a function name another library has. On error nothing changes.
func (f *funcLibs) join(libs []*funcLibrary, flush, replace bool, exists string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	next := map[string]*funcLibrary{}
	if !flush {
		maps.Copy(next, f.libs)
	}
	for _, lib := range libs {
		if _, taken := next[lib.name]; taken && !replace {
			return strings.Replace(exists, "%s", lib.name, 1)
		}
		next[lib.name] = lib
	}
	fns := map[string]*funcLibrary{}
	for _, name := range slices.Sorted(maps.Keys(next)) {
		lib := next[name]
		for _, fn := range slices.Sorted(maps.Keys(lib.funcs)) {
			if other, taken := fns[strings.ToLower(fn)]; taken && other != lib {
				return "ERR Function " + fn + " already exists"
			}
			fns[strings.ToLower(fn)] = lib
		}
	}
	f.libs, f.fns = next, fns
	return ""
}

func (f *funcLibs) delete(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	lib := f.libs[name]
	if lib == nil {
		return false
	}
	delete(f.libs, name)
	for fn := range lib.funcs {
		delete(f.fns, strings.ToLower(fn))
	}
	return true
}

func (f *funcLibs) appendSnapshot(dst []byte) []byte {
	libs := f.sorted()
	dst = binary.AppendUvarint(dst, uint64(len(libs)))
	for _, lib := range libs {
		dst = appendBytes(dst, lib.code)
	}
	return dst
}

// libraries reads the libraries of a snapshot, loading each again. Libraries that
// could not stand together (a name twice, a function in two) make a bad snapshot.
func (r *snapReader) libraries() []*funcLibrary {
	n := r.uvarint()
	var libs []*funcLibrary
	for i := uint64(0); i < n && r.err == nil; i++ {
		lib, msg := loadLibrary(string(r.bytes()))
		if msg != "" {
			r.err = ErrBadSnapshot
			return nil
		}
		libs = append(libs, lib)
	}
	var check funcLibs
	if check.join(libs, true, false, "%s") != "" {
		r.err = ErrBadSnapshot
		return nil
	}
	return libs
}

func (f *funcLibs) digest() uint64 {
	var sum uint64
	for _, lib := range f.sorted() {
		sum += xxhash.Sum64String("function:" + lib.code)
	}
	return sum
}

// --- loading a library ---------------------------------------------------------------------

// libraryHeader parses a library's first line, "#!<engine> name=<name>", as Redis's
// functionExtractLibMetaData, and returns the name and where the body starts (at the
// line's newline, so that the body's line numbers count the header).
func libraryHeader(code string) (name string, body int, errMsg string) {
	if !strings.HasPrefix(code, "#!") {
		return "", 0, "ERR Missing library metadata"
	}
	nl := strings.IndexByte(code, '\n')
	if nl < 0 {
		return "", 0, "ERR Invalid library metadata"
	}
	parts, ok := SplitArgs([]byte(code[2:nl]), nil)
	if !ok || len(parts) == 0 {
		return "", 0, "ERR Invalid library metadata"
	}
	hasName := false
	for _, p := range parts[1:] {
		if len(p) < 5 || !strings.EqualFold(string(p[:5]), "name=") {
			return "", 0, "ERR Invalid metadata value given: " + string(p)
		}
		if hasName {
			return "", 0, "ERR Invalid metadata value, name argument was given multiple times"
		}
		name, hasName = string(p[5:]), true
	}
	if !hasName {
		return "", 0, "ERR Library name was not given"
	}
	if !strings.EqualFold(string(parts[0]), "lua") {
		return "", 0, "ERR Engine '" + string(parts[0]) + "' not found"
	}
	if !validFunctionName(name) {
		return "", 0, "ERR " + errFunctionName
	}
	return name, nl, ""
}

// validFunctionName is Redis's functionsVerifyName, for libraries and functions alike.
func validFunctionName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// loadLibrary compiles code and runs its body to learn what it registers; the error is
// Redis's reply to FUNCTION LOAD of that code.
func loadLibrary(code string) (*funcLibrary, string) { return loadLibraryWithin(code, 0) }

// functionLoadTimeout is Redis's bound on a library body's run at FUNCTION LOAD
// (LOAD_TIMEOUT_MS).
const functionLoadTimeout = 500 * time.Millisecond

// CheckFunctionLoad is what a frontend runs before it proposes FUNCTION LOAD or RESTORE:
// each library's body, within Redis's 500 ms. A body that runs longer (a loop that never
// ends) is refused here, as Redis refuses it, and never reaches the log: there every
// member runs it to its end, which must come. (A bound on the applier itself would
// depend on each member's speed, and members could disagree on whether a library
// loaded.) It returns the error reply, or "".
func CheckFunctionLoad(args [][]byte) string {
	if len(args) < 3 {
		return ""
	}
	switch strings.ToLower(string(args[1])) {
	case "load":
		_, msg := loadLibraryWithin(string(args[len(args)-1]), functionLoadTimeout)
		if strings.Contains(msg, "FUNCTION LOAD timeout") {
			return msg
		}
	case "restore":
		p := args[2]
		if len(p) < 10 {
			return ""
		}
		r := rdbReader{b: p[:len(p)-10]}
		for len(r.b) > 0 && !r.bad {
			if r.next(1)[0] != rdbOpcodeFunction2 {
				return ""
			}
			code := r.str()
			if r.bad {
				return ""
			}
			if _, msg := loadLibraryWithin(code, functionLoadTimeout); strings.Contains(msg, "FUNCTION LOAD timeout") {
				return msg
			}
		}
	}
	return "" // any other error is the applier's to give, in order with the other writes
}

func loadLibraryWithin(code string, timeout time.Duration) (*funcLibrary, string) {
	name, body, msg := libraryHeader(code)
	if msg != "" {
		return nil, msg
	}
	proto, err := compileChunk(code[body:], functionChunk)
	if err != nil {
		return nil, "ERR Error compiling function: " + strings.ReplaceAll(err.Error(), "\n", " ")
	}
	vm := scriptVMs.Get().(*scriptVM)
	// a body that draws (math.random) must register the same on every member, and when
	// a snapshot is loaded: its draws start from a fixed seed here (an FCALL seeds them
	// from its entry)
	vm.rand.seed(0)
	var ctx context.Context
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), timeout)
		defer cancel()
		vm.L.SetContext(ctx)
	}
	regs, msg := vm.loadLibrary(proto)
	if ctx != nil {
		vm.L.RemoveContext()
		if msg != "" && ctx.Err() != nil {
			// a VM stopped in the middle of a run is not used again
			return nil, "ERR Error registering functions: ERR FUNCTION LOAD timeout"
		}
	}
	putVM(vm)
	if msg != "" {
		return nil, msg
	}
	if len(regs) == 0 {
		return nil, "ERR No functions registered"
	}
	lib := &funcLibrary{name: name, code: code, proto: proto, funcs: map[string]funcMeta{}}
	for fn, r := range regs {
		lib.funcs[fn] = r.meta
	}
	return lib, ""
}

// registration is one redis.register_function call of a library's body.
type registration struct {
	fn   *lua.LFunction
	meta funcMeta
}

// loadLibrary runs a compiled library body with the library API as its redis table and
// returns what it registered.
func (vm *scriptVM) loadLibrary(proto *lua.FunctionProto) (map[string]registration, string) {
	L := vm.L
	g := L.Get(lua.GlobalsIndex).(*lua.LTable)
	full := g.RawGetString("redis")
	g.RawSetString("redis", vm.libraryAPI())
	vm.registered = map[string]registration{}
	defer func() {
		g.RawSetString("redis", full)
		vm.registered = nil
		L.SetTop(0)
	}()
	L.Push(L.NewFunctionFromProto(proto))
	if err := vm.protectedCall(0, 0); err != nil {
		msg, _ := luaError(err)
		return nil, "ERR Error registering functions: " + firstLine(msg)
	}
	return vm.registered, ""
}

// libraryAPI is the redis table a library's body sees while it loads (Redis's library
// API): register_function, log and the log levels. Anything else in it is missing, with
// the error of a missing global.
func (vm *scriptVM) libraryAPI() *lua.LTable {
	if vm.libAPI != nil {
		return vm.libAPI
	}
	L := vm.L
	t := L.NewTable()
	t.RawSetString("register_function", L.NewFunction(vm.registerFunction))
	t.RawSetString("log", L.NewFunction(func(*lua.LState) int { return 0 }))
	for name, v := range map[string]int{"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3} {
		t.RawSetString(name, lua.LNumber(v))
	}
	vm.libAPI = vm.proxy(func(L *lua.LState) int {
		v := t.RawGet(L.Get(2))
		if v == lua.LNil {
			L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.ToString(2))
		}
		L.Push(v)
		return 1
	})
	return vm.libAPI
}

// registerFunction is redis.register_function(name, callback) or
// redis.register_function{function_name=..., callback=..., flags={...}, description=...},
// with Redis 7.0's checks and errors.
func (vm *scriptVM) registerFunction(L *lua.LState) int {
	fail := func(msg string) {
		t := L.NewTable()
		t.RawSetString("err", lua.LString("ERR "+msg))
		L.Error(t, 1)
	}
	var name lua.LValue = lua.LNil
	var callback *lua.LFunction
	var meta funcMeta
	switch L.GetTop() {
	case 1:
		args, ok := L.Get(1).(*lua.LTable)
		if !ok {
			fail("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		var problem string
		forEachInOrder(args, func(k, v lua.LValue) {
			if problem != "" {
				return
			}
			switch lua.LVAsString(k) {
			case "function_name":
				if !luaIsString(v) {
					problem = "function_name argument given to redis.register_function must be a string"
				}
				name = v
			case "description":
				if !luaIsString(v) {
					problem = "description argument given to redis.register_function must be a string"
				}
				meta.desc, meta.hasDesc = lua.LVAsString(v), true
			case "callback":
				f, ok := v.(*lua.LFunction)
				if !ok {
					problem = "callback argument given to redis.register_function must be a function"
				}
				callback = f
			case "flags":
				flags, ok := v.(*lua.LTable)
				if !ok {
					problem = "flags argument to redis.register_function must be a table representing function flags"
					return
				}
				forEachInOrder(flags, func(_, f lua.LValue) {
					i := slices.Index(funcFlagNames, lua.LVAsString(f))
					if !luaIsString(f) || i < 0 {
						problem = "unknown flag given"
						return
					}
					meta.flags |= 1 << i
				})
			default:
				problem = "unknown argument given to redis.register_function"
			}
		})
		switch {
		case problem != "":
			fail(problem)
		case name == lua.LNil:
			fail("redis.register_function must get a function name argument")
		case callback == nil:
			fail("redis.register_function must get a callback argument")
		}
	case 2:
		if !luaIsString(L.Get(1)) {
			fail("first argument to redis.register_function must be a string")
		}
		f, ok := L.Get(2).(*lua.LFunction)
		if !ok {
			fail("second argument to redis.register_function must be a function")
		}
		name, callback = L.Get(1), f
	default:
		fail("wrong number of arguments to redis.register_function")
	}
	fn := lua.LVAsString(name)
	if !validFunctionName(fn) {
		fail(errFunctionName)
	}
	if _, dup := vm.registered[fn]; dup { // in its library, case counts (not across)
		fail("Function already exists in the library")
	}
	vm.registered[fn] = registration{fn: callback, meta: meta}
	return 0
}

// luaIsString is Lua's lua_isstring: a string, or a number (which converts to one).
func luaIsString(v lua.LValue) bool {
	switch v.(type) {
	case lua.LString, lua.LNumber:
		return true
	}
	return false
}

// --- FCALL ---------------------------------------------------------------------------------

func fcallCmd(readOnly bool) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		c.noteScriptCmd(args)
		lib, name, meta, ok := c.s.functions.function(string(args[1]))
		if !ok {
			c.Error(errFunctionNotFound)
			return
		}
		numkeys, ok := c.numKeys(args, "ERR Bad number of keys provided")
		if !ok {
			return
		}
		if readOnly && meta.flags&flagNoWrites == 0 {
			c.Error(errWriteFlagRO)
			return
		}
		vm := scriptVMs.Get().(*scriptVM)
		defer putVM(vm)
		keys, argv := args[3:3+numkeys], args[3+numkeys:]
		vm.exec(c, readOnly || meta.flags&flagNoWrites != 0, meta.flags, functionChunk, name, func(L *lua.LState, g *lua.LTable) (int, string) {
			g.RawSetString("KEYS", lua.LNil)
			g.RawSetString("ARGV", lua.LNil)
			regs, msg := vm.loadLibrary(lib.proto)
			if msg != "" {
				return 0, msg
			}
			r, ok := regs[name]
			if !ok { // a body that registers at random did not, this time
				return 0, errFunctionNotFound
			}
			L.Push(r.fn)
			L.Push(luaStrings(L, keys))
			L.Push(luaStrings(L, argv))
			return 2, ""
		})
	}
}

// --- FUNCTION ------------------------------------------------------------------------------

var functionArity = map[string]int{"load": -3, "delete": 3, "flush": -2, "list": -2, "dump": 2, "restore": -3, "stats": 2, "kill": 2, "help": 2}

var functionHelp = []string{
	"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"LOAD [REPLACE] <FUNCTION CODE>",
	"    Create a new library with the given library name and code.",
	"DELETE <LIBRARY NAME>",
	"    Delete the given library.",
	"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
	"    Return general information on all the libraries:",
	"    * Library name",
	"    * The engine used to run the Library",
	"    * Library description",
	"    * Functions list",
	"    * Library code (if WITHCODE is given)",
	"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
	"STATS",
	"    Return information about the current function running:",
	"    * Function name",
	"    * Command used to run the function",
	"    * Duration in MS that the function is running",
	"    If no function is running, return nil",
	"    In addition, returns a list of available engines.",
	"KILL",
	"    Kill the current running function.",
	"FLUSH [ASYNC|SYNC]",
	"    Delete all the libraries.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the libraries.",
	"    * SYNC: Synchronously flush the libraries.",
	"DUMP",
	"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
	"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
	"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
	"    control how to handle existing libraries (default APPEND):",
	"    * FLUSH: delete all existing libraries.",
	"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
	"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
	"      libraries with the new libraries (notice that even on this option there is a chance of failure",
	"      in case of functions name collision with another library).",
	"HELP",
	"    Prints this help.",
}

func functionCmd(c *Ctx, args [][]byte) {
	sub, msg := CheckSubcommand(args, "function", functionArity)
	if msg != "" {
		c.Error(msg)
		return
	}
	f := &c.s.functions
	switch sub {
	case "load":
		replace := false
		for _, o := range args[2 : len(args)-1] {
			if !eq(o, "replace") {
				c.Error("ERR Unknown option given: " + string(o))
				return
			}
			replace = true
		}
		code := string(args[len(args)-1])
		name, _, msg := libraryHeader(code)
		if msg == "" && !replace {
			if _, taken := f.library(name); taken {
				msg = "ERR Library '" + name + "' already exists"
			}
		}
		var lib *funcLibrary
		if msg == "" {
			lib, msg = loadLibrary(code)
		}
		if msg == "" {
			msg = f.join([]*funcLibrary{lib}, false, replace, "ERR Library '%s' already exists")
		}
		if msg != "" {
			c.Error(msg)
			return
		}
		c.W.BulkString(lib.name)
	case "delete":
		if !f.delete(string(args[2])) {
			c.Error("ERR Library not found")
			return
		}
		c.W.Status("OK")
	case "flush":
		if len(args) > 3 || len(args) == 3 && !eq(args[2], "sync") && !eq(args[2], "async") {
			c.Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
			return
		}
		f.join(nil, true, false, "")
		c.W.Status("OK")
	case "list":
		c.functionList(args[2:])
	case "dump":
		var b []byte
		for _, lib := range f.sorted() {
			b = rdbAppendString(append(b, rdbOpcodeFunction2), lib.code)
		}
		b = binary.LittleEndian.AppendUint16(b, rdbVersion)
		c.W.Bulk(binary.LittleEndian.AppendUint64(b, redisCRC64(b)))
	case "restore":
		c.functionRestore(args[2:])
	case "stats":
		// a function runs on the applier, between the replies of the read path: none is
		// ever seen running from here
		c.W.Map(2)
		c.W.BulkString("running_script")
		c.W.Null()
		c.W.BulkString("engines")
		c.W.Map(1)
		c.W.BulkString("LUA")
		c.W.Map(2)
		libs := f.sorted()
		n := 0
		for _, lib := range libs {
			n += len(lib.funcs)
		}
		c.W.BulkString("libraries_count")
		c.W.Int(int64(len(libs)))
		c.W.BulkString("functions_count")
		c.W.Int(int64(n))
	case "kill":
		// as SCRIPT KILL: a function that runs has its effects in the log already
		if c.s.scriptRunning.Load() {
			c.Error("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
		} else {
			c.Error("NOTBUSY No scripts in execution right now.")
		}
	case "help":
		c.statusLines(functionHelp)
	}
}

// functionList is FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]: libraries and their
// functions sorted by name (Redis lists them in its hash tables' order).
func (c *Ctx) functionList(opts [][]byte) {
	var pattern []byte
	hasPattern, withCode := false, false
	for i := 0; i < len(opts); i++ {
		switch {
		case eq(opts[i], "withcode") && !withCode:
			withCode = true
		case eq(opts[i], "libraryname") && !hasPattern:
			if i+1 == len(opts) {
				c.Error("ERR library name argument was not given")
				return
			}
			pattern, hasPattern = bytes.ToLower(opts[i+1]), true
			i++
		default:
			c.Error("ERR Unknown argument " + string(opts[i]))
			return
		}
	}
	var libs []*funcLibrary
	for _, lib := range c.s.functions.sorted() {
		if !hasPattern || Glob(pattern, []byte(strings.ToLower(lib.name))) {
			libs = append(libs, lib)
		}
	}
	c.W.Array(len(libs))
	for _, lib := range libs {
		if withCode {
			c.W.Map(4)
		} else {
			c.W.Map(3)
		}
		c.W.BulkString("library_name")
		c.W.BulkString(lib.name)
		c.W.BulkString("engine")
		c.W.BulkString("LUA")
		c.W.BulkString("functions")
		c.W.Array(len(lib.funcs))
		for _, name := range slices.Sorted(maps.Keys(lib.funcs)) {
			m := lib.funcs[name]
			c.W.Map(3)
			c.W.BulkString("name")
			c.W.BulkString(name)
			c.W.BulkString("description")
			if m.hasDesc {
				c.W.BulkString(m.desc)
			} else {
				c.W.Null()
			}
			c.W.BulkString("flags")
			var flags []string
			for i, f := range funcFlagNames {
				if m.flags&(1<<i) != 0 {
					flags = append(flags, f)
				}
			}
			c.W.Set(len(flags))
			for _, f := range flags {
				c.W.Status(f)
			}
		}
		if withCode {
			c.W.BulkString("library_code")
			c.W.BulkString(lib.code)
		}
	}
}

// functionRestore is FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE].
func (c *Ctx) functionRestore(args [][]byte) {
	policy := "append"
	if len(args) > 2 {
		c.Error(WrongArgs("function|restore"))
		return
	}
	if len(args) == 2 {
		policy = strings.ToLower(string(args[1]))
		if policy != "flush" && policy != "append" && policy != "replace" {
			c.Error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
			return
		}
	}
	p := args[0]
	if len(p) < 10 || binary.LittleEndian.Uint16(p[len(p)-10:]) > rdbVersion ||
		binary.LittleEndian.Uint64(p[len(p)-8:]) != redisCRC64(p[:len(p)-8]) {
		c.Error(errDumpChecksum.Error())
		return
	}
	r := rdbReader{b: p[:len(p)-10]}
	var libs []*funcLibrary
	names := map[string]bool{}
	for len(r.b) > 0 {
		switch t := r.next(1)[0]; t {
		case rdbOpcodeFunctionPreGA:
			c.Error("ERR Pre-GA function format not supported by nanokv")
			return
		case rdbOpcodeFunction2:
		default:
			c.Error("ERR given type is not a function")
			return
		}
		code := r.str()
		if r.bad {
			c.Error("ERR Failed loading library payload")
			return
		}
		lib, msg := loadLibrary(code)
		if msg == "" && names[lib.name] {
			msg = "ERR Library '" + lib.name + "' already exists"
		}
		if msg != "" {
			c.Error(msg)
			return
		}
		names[lib.name] = true
		libs = append(libs, lib)
	}
	if msg := c.s.functions.join(libs, policy == "flush", policy == "replace", "ERR Library %s already exists"); msg != "" {
		c.Error(msg)
		return
	}
	c.W.Status("OK")
}

// ScriptCounts is what INFO memory counts of the scripts: the scripts in the cache
// (number_of_cached_scripts), and the functions and libraries loaded.
func (s *Store) ScriptCounts() (scripts, functions, libraries int) {
	s.scripts.mu.RLock()
	scripts = len(s.scripts.bodies)
	s.scripts.mu.RUnlock()
	s.functions.mu.RLock()
	defer s.functions.mu.RUnlock()
	return scripts, len(s.functions.fns), len(s.functions.libs)
}
