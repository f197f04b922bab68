package kvstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

const testLibrary = "#!lua name=mylib\n" +
	"local function helper(x) return x end\n" +
	"redis.register_function('setk', function(keys, args) return redis.call('set', keys[1], helper(args[1])) end)\n" +
	"redis.register_function{function_name='getk', callback=function(keys, args) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads'}\n" +
	"redis.register_function('count', function() local t = {} t.n = (t.n or 0) + 1 return t.n end)\n" +
	"redis.register_function('args', function(keys, args) return {#keys, #args, keys[1], args[1]} end)\n" +
	"redis.register_function('boom', function() return error('boom') end)\n" +
	"redis.register_function('kv', function() return KEYS end)\n" +
	"redis.register_function{function_name='sneaky', callback=function() return redis.call('set','a','b') end, flags={'no-writes'}}\n"

// TestFunctions checks FUNCTION and FCALL against the replies redis-server 7.0.15 gave
// to the same commands.
func TestFunctions(t *testing.T) {
	h := newHarness(t)
	h.expect("mylib", "FUNCTION", "LOAD", testLibrary)
	h.expect(Status("OK"), "FCALL", "setk", "1", "k", "v")
	h.expect("v", "FCALL_RO", "getk", "1", "k")
	h.expect("v", "FCALL", "getk", "1", "k")
	h.expect([]any{int64(1), int64(2), "k", "a"}, "FCALL", "args", "1", "k", "a", "b")
	h.expect(int64(1), "FCALL", "count", "0")
	h.expect(int64(1), "FCALL", "count", "0") // nothing survives a call
	// function names are case-insensitive, library names are not (as in Redis)
	h.expect(Status("OK"), "FCALL", "SETK", "1", "k", "v")
	h.expect(Err("ERR Function SetK already exists"), "FUNCTION", "LOAD", "#!lua name=other\nredis.register_function('SetK', function() return 1 end)")
	h.expect("MYLIB", "FUNCTION", "LOAD", "#!lua name=MYLIB\nredis.register_function('upper', function() return 1 end)")
	h.expect(Status("OK"), "FUNCTION", "DELETE", "MYLIB")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"FCALL_RO", "setk", "1", "k", "v"}, "ERR Can not execute a script with write flag using *_ro command."},
		{[]string{"FCALL", "nosuch", "0"}, "ERR Function not found"},
		{[]string{"FCALL", "nosuch", "x"}, "ERR Function not found"},
		{[]string{"FCALL", "args", "x"}, "ERR Bad number of keys provided"},
		{[]string{"FCALL", "args", "-1"}, "ERR Number of keys can't be negative"},
		{[]string{"FCALL", "args", "2", "k"}, "ERR Number of keys can't be greater than number of args"},
		{[]string{"FCALL", "boom", "0"}, "ERR user_function:7: boom script: boom, on @user_function:7."},
		{[]string{"FCALL", "kv", "0"}, "ERR user_function:8: Script attempted to access nonexistent global variable 'KEYS' script: kv, on @user_function:8."},
		{[]string{"FCALL", "sneaky", "0"}, "ERR Write commands are not allowed from read-only scripts. script: sneaky, on @user_function:9."},
		{[]string{"EVAL", "return redis.call('fcall', 'count', '0')", "0"}, "ERR This Redis command is not allowed from script script: 236e5f280d2da7fa01158f8bd14822e3994c2e2a, on @user_script:1."},
		{[]string{"FUNCTION", "LOAD", testLibrary}, "ERR Library 'mylib' already exists"},
		{[]string{"FUNCTION", "LOAD", "#!lua name=mylib\nreturn 1"}, "ERR Library 'mylib' already exists"},
		{[]string{"FUNCTION", "LOAD", "return 1"}, "ERR Missing library metadata"},
		{[]string{"FUNCTION", "LOAD", "#!lua"}, "ERR Invalid library metadata"},
		{[]string{"FUNCTION", "LOAD", "#!lua name=x foo=bar\n"}, "ERR Invalid metadata value given: foo=bar"},
		{[]string{"FUNCTION", "LOAD", "#!lua name=x name=y\n"}, "ERR Invalid metadata value, name argument was given multiple times"},
		{[]string{"FUNCTION", "LOAD", "#!js name=x\n"}, "ERR Engine 'js' not found"},
		{[]string{"FUNCTION", "LOAD", "#!lua name=a-b\n"}, "ERR " + errFunctionName},
		{[]string{"FUNCTION", "LOAD", "#!lua name=x\n"}, "ERR No functions registered"},
		{[]string{"FUNCTION", "LOAD", "#!lua name=x\nredis.call('ping')"}, "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'"},
		{[]string{"FUNCTION", "LOAD", "#!lua name=x\nx = 1"}, "ERR Error registering functions: ERR user_function:2: Attempt to modify a readonly table"},
		{[]string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('a', function() end) redis.register_function('a', function() end)"}, "ERR Error registering functions: ERR Function already exists in the library"},
		{[]string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('setk', function() end)"}, "ERR Function setk already exists"},
		{[]string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function{function_name='g', callback=function() end, flags={'bad'}}"}, "ERR Error registering functions: ERR unknown flag given"},
		{[]string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function{function_name='g', callback=function() end, flags='no-writes'}"}, "ERR Error registering functions: ERR flags argument to redis.register_function must be a table representing function flags"},
		{[]string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function{function_name='g', callback=function() end, foo=1}"}, "ERR Error registering functions: ERR unknown argument given to redis.register_function"},
		{[]string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function{function_name='g'}"}, "ERR Error registering functions: ERR redis.register_function must get a callback argument"},
		{[]string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('g')"}, "ERR Error registering functions: ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."},
		{[]string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('g h', function() end)"}, "ERR Error registering functions: ERR " + errFunctionName},
		{[]string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function(1, 2, 3)"}, "ERR Error registering functions: ERR wrong number of arguments to redis.register_function"},
		{[]string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('z', 2)"}, "ERR Error registering functions: ERR second argument to redis.register_function must be a function"},
		{[]string{"FUNCTION", "LOAD", "#!lua name=x\nredis.sha1hex('a')"}, "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'sha1hex'"},
		{[]string{"FUNCTION", "LOAD", "FOO", "#!lua name=x\n"}, "ERR Unknown option given: FOO"},
		{[]string{"FUNCTION", "DELETE", "nosuch"}, "ERR Library not found"},
		{[]string{"FUNCTION", "FLUSH", "foo"}, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option"},
		{[]string{"FUNCTION", "LIST", "foo"}, "ERR Unknown argument foo"},
		{[]string{"FUNCTION", "LIST", "libraryname"}, "ERR library name argument was not given"},
		{[]string{"FUNCTION", "LIST", "withcode", "withcode"}, "ERR Unknown argument withcode"},
		{[]string{"FUNCTION", "KILL"}, "NOTBUSY No scripts in execution right now."},
		{[]string{"FUNCTION", "RESTORE", "abc"}, "ERR DUMP payload version or checksum are wrong"},
		{[]string{"FUNCTION", "RESTORE", "abc", "foo"}, "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."},
		{[]string{"FUNCTION", "FOO"}, "ERR unknown subcommand 'FOO'. Try FUNCTION HELP."},
	} {
		h.expect(Err(c.want), c.args...)
	}
	// a number is a string to register_function, as to Lua
	h.expect("numbered", "FUNCTION", "LOAD", "#!lua name=numbered\nredis.register_function(1, function() return 1 end)")
	h.expect([]any{[]any{"library_name", "numbered", "engine", "LUA", "functions",
		[]any{[]any{"name", "1", "description", nil, "flags", []any{}}}}}, "FUNCTION", "LIST", "LIBRARYNAME", "NUM*")
	h.expect([]any{"running_script", nil, "engines", []any{"LUA", []any{"libraries_count", int64(2), "functions_count", int64(8)}}}, "FUNCTION", "STATS")
	list := h.do("FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "mylib").([]any)
	lib := list[0].([]any)
	if len(list) != 1 || lib[7] != testLibrary {
		t.Fatalf("FUNCTION LIST WITHCODE: %#v", list)
	}
	if fns := lib[5].([]any); len(fns) != 7 || fns[3].([]any)[1] != "getk" || fns[3].([]any)[3] != "reads" || fns[3].([]any)[5].([]any)[0] != Status("no-writes") {
		t.Fatalf("FUNCTION LIST functions: %#v", fns)
	}
	h.expect(Status("OK"), "FUNCTION", "DELETE", "numbered")
	h.expect(Err("ERR Function not found"), "FCALL", "1", "0")
	// REPLACE swaps the library's functions
	h.expect("mylib", "FUNCTION", "LOAD", "REPLACE", "#!lua name=mylib\nredis.register_function('other', function() return 2 end)")
	h.expect(Err("ERR Function not found"), "FCALL", "setk", "1", "k", "v")
	h.expect(int64(2), "FCALL", "other", "0")
	h.expect(Status("OK"), "FUNCTION", "FLUSH", "ASYNC")
	h.expect([]any{}, "FUNCTION", "LIST")
}

// redisFunctionDump is FUNCTION DUMP of redis-server 7.0.15 holding one library (lib1,
// functions hello and hello2), its code LZF-compressed.
const redisFunctionDump = "\xf5\xc3\x40\x68\x40\xbc\x1f\x23\x21\x6c\x75\x61\x20\x6e\x61\x6d\x65\x3d\x6c\x69\x62\x31\x0a\x72\x65\x64\x69\x73\x2e\x72\x65\x67\x69\x73\x74\x65\x72\x5f\x66\x10\x75\x6e\x63\x74\x69\x6f\x6e\x28\x27\x68\x65\x6c\x6c\x6f\x27\x2c\x20\xe0\x00\x11\x12\x6b\x65\x79\x73\x2c\x20\x61\x72\x67\x73\x29\x20\x72\x65\x74\x75\x72\x6e\x20\x80\x24\x04\x20\x27\x20\x2e\x2e\x60\x18\x07\x5b\x31\x5d\x20\x65\x6e\x64\x29\xe0\x16\x55\x00\x32\xe0\x2c\x56\x01\x64\x29\x0a\x00\x83\xeb\xeb\xd9\x54\x49\x43\xc3"

func TestFunctionDumpRestore(t *testing.T) {
	h := newHarness(t)
	h.expect(Status("OK"), "FUNCTION", "RESTORE", redisFunctionDump)
	h.expect("hello you", "FCALL", "hello2", "0", "you")
	h.expect(Err("ERR Library lib1 already exists"), "FUNCTION", "RESTORE", redisFunctionDump)
	h.expect(Status("OK"), "FUNCTION", "RESTORE", redisFunctionDump, "REPLACE")
	h.expect("mylib", "FUNCTION", "LOAD", testLibrary)
	dump := h.do("FUNCTION", "DUMP").(string)
	h.expect(Status("OK"), "FUNCTION", "RESTORE", redisFunctionDump, "FLUSH")
	h.expect(Err("ERR Function not found"), "FCALL", "setk", "1", "k", "v")
	h.expect(Status("OK"), "FUNCTION", "RESTORE", dump, "FLUSH")
	h.expect(Status("OK"), "FCALL", "setk", "1", "k", "v")
	if again := h.do("FUNCTION", "DUMP"); again != dump {
		t.Fatalf("DUMP after RESTORE differs")
	}
	// a function name another library has is refused, and nothing changes
	h.expect(Status("OK"), "FUNCTION", "FLUSH")
	h.expect("x", "FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('hello', function() return 1 end)")
	h.expect(Err("ERR Function hello already exists"), "FUNCTION", "RESTORE", redisFunctionDump)
	h.expect([]any{"running_script", nil, "engines", []any{"LUA", []any{"libraries_count", int64(1), "functions_count", int64(1)}}}, "FUNCTION", "STATS")
	bad := []byte(redisFunctionDump)
	bad[0] = 0 // a key's type, not a library
	h.expect(Err(errDumpChecksum.Error()), "FUNCTION", "RESTORE", string(bad))
}

// TestFunctionsInSnapshots: libraries are replicated state, in snapshots and the digest.
func TestFunctionsInSnapshots(t *testing.T) {
	a := newHarness(t)
	before := a.s.Digest()
	a.expect("mylib", "FUNCTION", "LOAD", testLibrary)
	if a.s.Digest() == before {
		t.Fatal("loading a library did not change the digest")
	}
	b := a.restored()
	b.expect(Status("OK"), "FCALL", "setk", "1", "k", "v")
	b.expect("v", "FCALL_RO", "getk", "1", "k")
}

// TestFunctionBodyRunsEachCall: a body that registers on a condition is run afresh at
// every call; a call that finds its function unregistered this time is refused, not a
// crash.
func TestFunctionBodyRunsEachCall(t *testing.T) {
	h := newHarness(t)
	const coin = "#!lua name=coin\nredis.register_function('always', function() return 1 end)\nif math.random(2) == 1 then redis.register_function('sometimes', function() return 2 end) end"
	// a load draws from a fixed seed, so every member (and a snapshot's load) registers
	// the same: with this body, 'sometimes' too
	for range 3 {
		h.expect("coin", "FUNCTION", "LOAD", "REPLACE", coin)
		if _, ok := h.s.functions.libs["coin"].funcs["sometimes"]; !ok {
			t.Fatal("a load did not register 'sometimes'")
		}
	}
	seen := map[any]bool{}
	for range 40 {
		seen[h.do("FCALL", "sometimes", "0")] = true
	}
	if !seen[int64(2)] || !seen[Err(errFunctionNotFound)] || len(seen) != 2 {
		t.Fatalf("FCALL of a function registered at random: %v", seen)
	}
}

// TestCheckFunctionLoad: a body that runs past Redis's 500 ms is refused before the log
// (FUNCTION LOAD and RESTORE alike); anything else is left to the applier.
func TestCheckFunctionLoad(t *testing.T) {
	const loop = "#!lua name=loop\nwhile true do end"
	const timeout = "ERR Error registering functions: ERR FUNCTION LOAD timeout"
	args := func(a ...string) [][]byte {
		var out [][]byte
		for _, s := range a {
			out = append(out, []byte(s))
		}
		return out
	}
	if got := CheckFunctionLoad(args("FUNCTION", "LOAD", loop)); got != timeout {
		t.Fatalf("LOAD of a loop: %q", got)
	}
	if got := CheckFunctionLoad(args("FUNCTION", "LOAD", "REPLACE", loop)); got != timeout {
		t.Fatalf("LOAD REPLACE of a loop: %q", got)
	}
	for _, ok := range []string{testLibrary, "return 1", "#!lua name=x\n"} {
		if got := CheckFunctionLoad(args("FUNCTION", "LOAD", ok)); got != "" {
			t.Fatalf("LOAD of %q: %q", ok, got)
		}
	}
	p := rdbAppendString([]byte{rdbOpcodeFunction2}, loop)
	p = binary.LittleEndian.AppendUint16(p, rdbVersion)
	p = binary.LittleEndian.AppendUint64(p, redisCRC64(p))
	if got := CheckFunctionLoad([][]byte{[]byte("FUNCTION"), []byte("RESTORE"), p}); got != timeout {
		t.Fatalf("RESTORE of a loop: %q", got)
	}
	if got := CheckFunctionLoad(args("FUNCTION", "RESTORE", redisFunctionDump)); got != "" {
		t.Fatalf("RESTORE of Redis's dump: %q", got)
	}
}

// TestSnapshotOfCollidingLibraries: libraries that could not have loaded together (a
// function in two of them) make a bad snapshot, not a store missing one.
func TestSnapshotOfCollidingLibraries(t *testing.T) {
	a := newHarness(t)
	a.expect("one", "FUNCTION", "LOAD", "#!lua name=one\nredis.register_function('f', function() return 1 end)")
	two, msg := loadLibrary("#!lua name=two\nredis.register_function('F', function() return 2 end)")
	if msg != "" {
		t.Fatal(msg)
	}
	a.s.functions.libs["two"] = two // as no FUNCTION LOAD would leave it
	var snap bytes.Buffer
	if err := a.s.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	if err := New().Restore(bytes.NewReader(snap.Bytes())); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("restore: %v, want ErrBadSnapshot", err)
	}
}
