package kvstore

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// The expected replies are what redis-server 7.0.15 answers for the same commands, in
// the same order, on an empty server (error texts whole: script SHA-1 and line).
func TestScriptCommands(t *testing.T) {
	h := newHarness(t)
	// conversions from Lua to a reply
	h.expect(3, "EVAL", "return 3.99", "0")
	h.expect(-3, "EVAL", "return -3.99", "0")
	h.expect("text", "EVAL", "return 'text'", "0")
	h.expect(1, "EVAL", "return true", "0")
	h.expect(nil, "EVAL", "return false", "0")
	h.expect(nil, "EVAL", "return nil", "0")
	h.expect([]any{1, 2, 3, "a"}, "EVAL", "return {1, 2, 3.7, 'a', nil, 5}", "0")
	h.expect([]any{1, []any{2, []any{3}}, 1, nil}, "EVAL", "return {1, {2, {3}}, true, false}", "0")
	h.expect(Status("fine"), "EVAL", "return {ok='fine'}", "0")
	h.expectErr("CUSTOM thing", "EVAL", "return {err='CUSTOM thing'}", "0")
	h.expect(Status("FINE"), "EVAL", "return redis.status_reply('FINE')", "0")
	h.expectErr("My err", "EVAL", "return redis.error_reply('My err')", "0")
	h.expect([]any{1, 2, Err("inner")}, "EVAL", "return {1, 2, {err='inner'}}", "0")
	h.expect("kkaa", "EVAL", "return KEYS[1]..ARGV[1]", "1", "kk", "aa")
	h.expect([]any{[]any{"a", "b"}, []any{"c"}}, "EVAL", "return {KEYS, ARGV}", "2", "a", "b", "c")
	h.expect("da39a3ee5e6b4b0d3255bfef95601890afd80709", "EVAL", "return redis.sha1hex('')", "0")
	// conversions from a reply to Lua
	h.expect(Status("OK"), "EVAL", "return redis.call('set', KEYS[1], ARGV[1])", "1", "s", "foo")
	h.expect("OK", "EVAL", "local t = redis.call('set', 'k', 'v'); return t['ok']", "0")
	h.expect("boolean", "EVAL", "return type(redis.call('get', 'nokey'))", "0")
	h.expect(3, "EVAL", "return redis.call('rpush', 'l', 1, 2, 3)", "0")
	h.expect([]any{"1", "2", "3"}, "EVAL", "return redis.call('lrange', 'l', 0, -1)", "0")
	h.expect(1, "EVAL", "return redis.call('hset', 'h', 'a', '1')", "0")
	h.expect([]any{"a", "1"}, "EVAL", "return redis.call('hgetall', 'h')", "0")
	h.expect(1, "EVAL", "return redis.call('zadd', 'z', '1.5', 'm')", "0")
	h.expect([]any{"m", "1.5"}, "EVAL", "return redis.call('zrange', 'z', 0, -1, 'withscores')", "0")
	h.expect("1.1", "EVAL", "return redis.call('incrbyfloat', 'f', '1.1')", "0")
	h.expect(Status("OK"), "EVAL", "return redis.call('set', 'n', 1.5)", "0")
	h.expect("1.5", "EVAL", "return redis.call('get', 'n')", "0")
	h.expect("2", "EVAL", "redis.call('set', 'x', '1'); redis.call('incr', 'x'); return redis.call('get', 'x')", "0")
	h.expect(Status("PONG"), "EVAL", "return redis.call('ping')", "0")
	h.expect(2, "EVAL", "return #redis.call('time')", "0")
	h.expect(1, "EVAL", "redis.call('select', '1'); redis.call('set', 'indb1', 'v'); return redis.call('dbsize')", "0")
	h.expect(0, "EXISTS", "indb1")
	// errors
	h.expectErr("ERR value is not an integer or out of range script: 70abbef89e172316f9219e67e313f248a5b98d9b, on @user_script:1.", "EVAL", "return redis.call('incr', 's')", "0")
	h.expectErr("ERR value is not an integer or out of range", "EVAL", "return redis.pcall('incr', 's')", "0")
	h.expectErr("WRONGTYPE Operation against a key holding the wrong kind of value script: 02b6b74fda5fc5e0bf4553442225299aa4a3b8ca, on @user_script:1.", "EVAL", "return redis.call('lpush', 's', 'x')", "0")
	h.expect("WRONGTYPE Operation against a key holding the wrong kind of value", "EVAL", "return redis.pcall('lpush', 's', 'x')['err']", "0")
	h.expect([]any{"false", "ERR value is not an integer or out of range"}, "EVAL", "local ok, e = pcall(function() redis.call('incr', 's') end) return {tostring(ok), e}", "0")
	h.expect("X y", "EVAL", "local ok, e = pcall(function() error({err='X y'}) end) return e", "0")
	h.expect([]any{1, 3, "x"}, "EVAL", "return {pcall(function(a, b) return a + b, 'x' end, 1, 2)}", "0")
	h.expectErr("ERR Unknown Redis command called from script script: 206396248e12c6e742fd7296250433c8d7343b74, on @user_script:1.", "EVAL", "return redis.call('nosuch')", "0")
	h.expectErr("ERR Wrong number of args calling Redis command from script script: f187dee77f607f7cff00bbabc9df38507582c78d, on @user_script:1.", "EVAL", "return redis.call('get')", "0")
	// a container's subcommands are commands of their own to a script
	h.expectErr("ERR Unknown Redis command called from script script: f086f066ae1bb1e90fae802aa881aa28bc8e4727, on @user_script:1.", "EVAL", "return redis.call('object','foo','k')", "0")
	h.expectErr("ERR Wrong number of args calling Redis command from script script: 04e76c91e2e28547aba62a5ba7a7c1c56f5a4596, on @user_script:1.", "EVAL", "return redis.call('xinfo','stream')", "0")
	h.expectErr("ERR Please specify at least one argument for this redis lib call script: 0a907e1429221a4d85516cab7fd219a82a9439d8, on @user_script:1.", "EVAL", "return redis.call()", "0")
	h.expectErr("ERR Lua redis lib command arguments must be strings or integers script: 150783c9b5062cdbec776b2ab0bb486b67036616, on @user_script:1.", "EVAL", "return redis.call('set', 'k', {})", "0")
	h.expectErr("ERR This Redis command is not allowed from script script: c329a1a294be6bf95b44144f7502610661ae925a, on @user_script:1.", "EVAL", "return redis.call('multi')", "0")
	h.expectErr("ERR This Redis command is not allowed from script script: c013ef47ef4bbac034f89c37b0e3ed18f87cd82e, on @user_script:1.", "EVAL", "return redis.call('eval', 'return 1', '0')", "0")
	h.expectErr("ERR This Redis command is not allowed from script", "EVAL", "return redis.pcall('config', 'get', 'x')", "0")
	h.expectErr("ERR user_script:1: Script attempted to access nonexistent global variable 'x' script: c7977cd7f36622d6ecd2600423927e1a1c3028b4, on @user_script:1.", "EVAL", "return x.y", "0")
	h.expectErr("ERR user_script:1: Attempt to modify a readonly table script: 18caf8c012aa13c49942060b9653c687e0dcabec, on @user_script:1.", "EVAL", "a = 5", "0")
	h.expectErr("ERR user_script:1: boom script: 82903a0434f1503e152f89c03c9acd881a0e8150, on @user_script:1.", "EVAL", "error('boom')", "0")
	h.expectErr("MY custom script: 784d3ae9e6566ecb57138d89d618d989007a9bc6, on @user_script:1.", "EVAL", "error({err='MY custom'})", "0")
	h.expectErr("ERR user_script:3: three script: dc08f9d793f00c2807c29640cdd3bbd7dcdef74b, on @user_script:3.", "EVAL", "local a = 1\x0alocal b = 2\x0aerror('three')", "0")
	h.expectErr("ERR Wrong number of args calling Redis command from script script: 5768b23881882192dcacf86abf4fc08d212e2a93, on @user_script:2.", "EVAL", "local a = 1\x0areturn redis.call('incr', 'x', 'y')", "0")
	h.expectErr("ERR Number of keys can't be negative", "EVAL", "return 1", "-1")
	h.expectErr("ERR Number of keys can't be greater than number of args", "EVAL", "return 1", "2", "a")
	h.expectErr("ERR value is not an integer or out of range", "EVAL", "return 1", "x")
	h.expectErr("ERR Write commands are not allowed from read-only scripts. script: 1ec5c8569e0cb2caa15ae94d564a56e22a60ce3e, on @user_script:1.", "EVAL_RO", "return redis.call('set', 'a', 'b')", "0")
	h.expect("foo", "EVAL_RO", "return redis.call('get', 's')", "0")
	// a shebang line: the script's flags decide whether it writes (replies of redis-server 7.0.15)
	h.expect(int64(1), "EVAL", "#!lua\nreturn 1", "0")
	h.expectErr("ERR Write commands are not allowed from read-only scripts. script: 6acb400a50fe96e33eca4e0af6e9dcfb21193726, on @user_script:2.", "EVAL", "#!lua flags=no-writes\nreturn redis.call('set','a','b')", "0")
	h.expectErr("ERR user_script:2: x script: 1df6642d528b7d63c62109603fed9134c04400f3, on @user_script:2.", "EVAL", "#!lua flags=no-writes,allow-stale\nerror('x')", "0")
	h.expectErr("ERR Can not execute a script with write flag using *_ro command.", "EVAL_RO", "#!lua\nreturn 1", "0")
	h.expect(int64(2), "EVAL_RO", "#!lua flags=no-writes\nreturn 2", "0")
	h.expect(Status("OK"), "EVAL", "#!lua flags=\nreturn redis.call('set','a','b')", "0")
	h.expectErr("ERR Unexpected flag in script shebang: bogus", "EVAL", "#!lua flags=bogus\nreturn 1", "0")
	h.expectErr("ERR Unexpected flag in script shebang: ", "EVAL", "#!lua flags=no-writes,,allow-oom\nreturn 1", "0")
	h.expectErr("ERR Unknown lua shebang option: name=x", "EVAL", "#!lua name=x\nreturn 1", "0")
	h.expectErr("ERR Unexpected engine in script shebang: #!LUA", "EVAL", "#!LUA\nreturn 1", "0")
	h.expectErr("ERR Invalid script shebang", "EVAL", "#!lua", "0")
	h.expectErr("ERR Unexpected flag in script shebang: x", "SCRIPT", "LOAD", "#!lua flags=x\nreturn 1")
	// the script cache
	h.expect("1b936e3fe509bcbc9cd0664897bbe8fd0cac101b", "SCRIPT", "LOAD", "return 'hello'")
	h.expect("hello", "EVALSHA", "1b936e3fe509bcbc9cd0664897bbe8fd0cac101b", "0")
	h.expect("hello", "EVALSHA", "1B936E3FE509BCBC9CD0664897BBE8FD0CAC101B", "0")
	h.expect("hello", "EVALSHA_RO", "1b936e3fe509bcbc9cd0664897bbe8fd0cac101b", "0")
	h.expectErr("NOSCRIPT No matching script. Please use EVAL.", "EVALSHA", "1b936e3fe509bcbc9cd0664897bbe8fd0ac95a6", "0")
	// a SHA1 of the wrong length is looked for before numkeys is read, one of the right
	// length after, as in Redis
	h.expectErr("NOSCRIPT No matching script. Please use EVAL.", "EVALSHA", "abc", "x")
	h.expectErr("NOSCRIPT No matching script. Please use EVAL.", "EVALSHA_RO", "abc", "-1")
	h.expectErr("ERR value is not an integer or out of range", "EVALSHA", "1b936e3fe509bcbc9cd0664897bbe8fd0ac95a60", "x")
	h.expect([]any{1, 0, 0}, "SCRIPT", "EXISTS", "1b936e3fe509bcbc9cd0664897bbe8fd0cac101b", "ffff", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db")
	h.expect(1, "EVAL", "return 1", "0")
	h.expect([]any{1}, "SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db")
	h.expect(Status("OK"), "SCRIPT", "FLUSH")
	h.expect([]any{0}, "SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db")
	h.expectErr("NOSCRIPT No matching script. Please use EVAL.", "EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0")
	h.expect(Status("OK"), "SCRIPT", "FLUSH", "ASYNC")
	h.expectErr("ERR SCRIPT FLUSH only support SYNC|ASYNC option", "SCRIPT", "FLUSH", "bogus")
	h.expectErr("ERR wrong number of arguments for 'script|load' command", "SCRIPT", "LOAD")
	h.expectErr("ERR unknown subcommand 'BOGUS'. Try SCRIPT HELP.", "SCRIPT", "BOGUS")
	// a script cannot leave anything behind for the next one (the VM serves them all)
	h.expectErr("ERR user_script:1: Attempt to modify a readonly table script: 3f77a250492aaaad06f570f7857ed6ad017e1c74, on @user_script:1.", "EVAL", "redis.call = nil return 1", "0")
	h.expectErr("ERR user_script:1: Attempt to modify a readonly table script: 61574b4b91ec75f725f3a3a2d314d3dcd1c1b577, on @user_script:1.", "EVAL", "string.foo = 1 return 1", "0")
	h.expectErr("ERR Attempt to modify a readonly table script: e068097f82e9f4a7bbf2d39eb91f78fec91f9301, on @user_script:1.", "EVAL", "rawset(_G, 'x', 1) return 1", "0")
	h.expectErr("ERR Attempt to modify a readonly table script: c122f21771d632cc334af0c2a37dd028f1a230b7, on @user_script:1.", "EVAL", "setmetatable(_G, nil) return 1", "0")
	h.expectErr("ERR Attempt to modify a readonly table script: 425ba6b83a9802b8090705867c60db850b893e14, on @user_script:1.", "EVAL", "rawset(string, 'x', 1) return 1", "0")
	h.expectErr("ERR user_script:1: Attempt to modify a readonly table script: 67b344ff140aed3747f37bc5d5562e26084a2df1, on @user_script:1.", "EVAL", "local m = getmetatable('') m.__index = nil return 1", "0")
	h.expectErr("ERR user_script:1: Attempt to modify a readonly table script: ac075ac18a268146edb19e945f6c06d3e450c70a, on @user_script:1.", "EVAL", "getmetatable('').__index.upper = nil return 1", "0")
	h.expectErr("ERR user_script:1: Script attempted to access nonexistent global variable 'x' script: 03c387736bb5cc009ff35151572cee04677aa374, on @user_script:1.", "EVAL", "return x", "0")
	h.expect(nil, "EVAL", "return string.foo", "0")
	h.expect("ABC", "EVAL", "return ('abc'):upper()", "0")
	h.expect(1, "EVAL", "return rawset({}, 'a', 1).a", "0")
	h.expect("nil", "EVAL", "return type(getmetatable(string))", "0")
	// LuaBitOp
	h.expect([]any{-1, 5, 2, 2, -2, 2147483647, 0}, "EVAL", "return {bit.tobit(0xffffffff), bit.tobit(2^32+5), bit.tobit(1.5), bit.tobit(2.5), bit.tobit(-1.5), bit.tobit(-2^31-1), bit.band(2^53)}", "0")
	h.expect([]any{"000000ff", "FFFF", "ff", "678", "", "00000001"}, "EVAL", "return {bit.tohex(255), bit.tohex(-1, -4), bit.tohex(255, 2), bit.tohex(0x12345678, -3), bit.tohex(1, 0), bit.tohex(1, 9)}", "0")
	h.expect([]any{-1, 3, 7, 6, 4}, "EVAL", "return {bit.bnot(0), bit.band(0xff, 0x0f, 0x3), bit.bor(1, 2, 4), bit.bxor(5, 3), bit.band('12', 4)}", "0")
	h.expect([]any{-2147483648, 2, 15, -16, 3, -2147483648, 2018915346}, "EVAL", "return {bit.lshift(1, 31), bit.lshift(1, 33), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rol(0x80000001, 1), bit.ror(1, 1), bit.bswap(0x12345678)}", "0")
	h.expectErr("ERR user_script:1: Attempt to modify a readonly table script: 902810e13d3aefd4d9a780b3b1f6c6f716481d08, on @user_script:1.", "EVAL", "bit.x = 1", "0")
	h.expect([]any{Status("SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"), Status("DEBUG (YES|SYNC|NO)"), Status("    Set the debug mode for subsequent scripts executed."), Status("EXISTS <sha1> [<sha1> ...]"), Status("    Return information about the existence of the scripts in the script cache."), Status("FLUSH [ASYNC|SYNC]"), Status("    Flush the Lua scripts cache. Very dangerous on replicas."), Status("    When called without the optional mode argument, the behavior is determined by the"), Status("    lazyfree-lazy-user-flush configuration directive. Valid modes are:"), Status("    * ASYNC: Asynchronously flush the scripts cache."), Status("    * SYNC: Synchronously flush the scripts cache."), Status("KILL"), Status("    Kill the currently executing Lua script."), Status("LOAD <script>"), Status("    Load a script into the scripts cache without executing it."), Status("HELP"), Status("    Prints this help.")}, "SCRIPT", "HELP")
	h.expectErr("NOTBUSY No scripts in execution right now.", "SCRIPT", "KILL")
	h.expectErr("ERR wrong number of arguments for 'script|kill' command", "SCRIPT", "KILL", "x")
	h.expect(Status("OK"), "SCRIPT", "DEBUG", "NO")
	h.expectErr("ERR Use SCRIPT DEBUG YES/SYNC/NO", "SCRIPT", "DEBUG", "maybe")
	h.expectErr("ERR wrong number of arguments for 'script|help' command", "SCRIPT", "HELP", "x")
	// cjson
	h.expect("{}", "EVAL", "return cjson.encode({})", "0")
	h.expect("[1,2,\x22a\x22,true,false]", "EVAL", "return cjson.encode({1,2,'a',true,false})", "0")
	h.expect("{\x22a\x22:1}", "EVAL", "return cjson.encode({a=1})", "0")
	h.expect("[1,null,3]", "EVAL", "return cjson.encode({[1]=1,[3]=3})", "0")
	h.expectErr("ERR user_script:1: Cannot serialise table: excessively sparse array script: 3e3efb2b344ca8164fbe64c5b409c85a7a80d9c9, on @user_script:1.", "EVAL", "return cjson.encode({[1]=1,[12]=3})", "0")
	h.expect("{\x221.5\x22:1}", "EVAL", "return cjson.encode({[1.5]=1})", "0")
	h.expect("0.1", "EVAL", "return cjson.encode(0.1)", "0")
	h.expect("0.33333333333333", "EVAL", "return cjson.encode(1/3)", "0")
	h.expect("1e+300", "EVAL", "return cjson.encode(1e300)", "0")
	h.expect("-0", "EVAL", "return cjson.encode(-0)", "0")
	h.expect("100", "EVAL", "return cjson.encode(100)", "0")
	h.expect("9.007199254741e+15", "EVAL", "return cjson.encode(2^53)", "0")
	h.expect("\x22a\x5c/b\x5c\x22c\x5c\x5cd\x5cn\x5ct\x5cu0001\x5cu007f\xe9\x5cr\x5cb\x5cf\x22", "EVAL", "return cjson.encode('a/b\x22c\x5c\x5cd\x5cn\x5ct\x5c1\x5c127\xe9\x5cr\x5cb\x5cf')", "0")
	h.expect("null", "EVAL", "return cjson.encode(nil)", "0")
	h.expect("null", "EVAL", "return cjson.encode(cjson.null)", "0")
	h.expectErr("ERR user_script:1: Cannot serialise function: type not supported script: 258fb2ba63f83b7e918b6fb359f2e85287e4d7ad, on @user_script:1.", "EVAL", "return cjson.encode(tostring)", "0")
	h.expectErr("ERR user_script:1: Cannot serialise number: must not be NaN or Inf script: d3f8d4e745d6587b04e9dd216e0d4631f0a306d9, on @user_script:1.", "EVAL", "return cjson.encode(0/0)", "0")
	h.expectErr("ERR user_script:1: Cannot serialise number: must not be NaN or Inf script: 08ffdaa5e7f117332da21c3b5222c2ede9492c60, on @user_script:1.", "EVAL", "return cjson.encode(1/0)", "0")
	h.expectErr("ERR user_script:1: Cannot serialise boolean: table key must be a number or string script: 376a640005c8509c694166527ca834359bf69aa8, on @user_script:1.", "EVAL", "return cjson.encode({[true]=1})", "0")
	h.expectErr("ERR user_script:1: bad argument #1 to 'encode' (expected 1 argument) script: fc593ea31f478c7ed65c77495cc63edeb9153530, on @user_script:1.", "EVAL", "return cjson.encode()", "0")
	h.expect("[[{}]]", "EVAL", "return cjson.encode({{{}}})", "0")
	h.expect("[null,2]", "EVAL", "return cjson.encode({[2]=2})", "0")
	h.expect("[null,2]", "EVAL", "return cjson.encode({nil, 2})", "0")
	h.expect("{\x22x\x22:[1,{\x22y\x22:\x22z\x22}]}", "EVAL", "return cjson.encode({x={1,{y='z'}}})", "0")
	h.expect("{\x220\x22:1}", "EVAL", "return cjson.encode({[0]=1})", "0")
	h.expect("{\x22-1\x22:1}", "EVAL", "return cjson.encode({[-1]=1})", "0")
	h.expect("{\x221\x22:1,\x222\x22:2,\x22x\x22:3}", "EVAL", "return cjson.encode({1, 2, x=3})", "0")
	h.expect("1e-05", "EVAL", "return cjson.encode(1e-5)", "0")
	h.expect("1.2345678901234e+14", "EVAL", "return cjson.encode(123456789012345)", "0")
	h.expectErr("ERR user_script:1: Expected value but found T_END at character 4 script: ad8248c68c719abd59f0dd09dea378bb946e7d3f, on @user_script:1.", "EVAL", "return cjson.decode('[1,')", "0")
	h.expectErr("ERR user_script:1: Expected value but found T_END at character 1 script: 7ff8cf86abed928f4d61a01dcc9713f0117b180a, on @user_script:1.", "EVAL", "return cjson.decode('')", "0")
	h.expectErr("ERR user_script:1: Expected colon but found T_NUMBER at character 6 script: 3486ee24bfdfc100c738c73355e99954ef01d92f, on @user_script:1.", "EVAL", "return cjson.decode('{\x22a\x22 1}')", "0")
	h.expectErr("ERR user_script:1: Expected object key string but found T_NUMBER at character 2 script: b7dfc51e0d5bf164c246fe708a2e33743e899be6, on @user_script:1.", "EVAL", "return cjson.decode('{1:2}')", "0")
	h.expectErr("ERR user_script:1: Expected comma or array end but found T_NUMBER at character 4 script: cae89247ef27d42d411c61ae44ff3af6ab258d99, on @user_script:1.", "EVAL", "return cjson.decode('[1 2]')", "0")
	h.expectErr("ERR user_script:1: Expected value but found invalid token at character 1 script: b0ae6f0426d6ff93bdff3364f547baa19aa4171b, on @user_script:1.", "EVAL", "return cjson.decode('tru')", "0")
	h.expect(1, "EVAL", "return cjson.decode('01')", "0")
	h.expect(100000, "EVAL", "return cjson.decode('1e5')", "0")
	h.expect(0, "EVAL", "return cjson.decode('-0')", "0")
	h.expect(16, "EVAL", "return cjson.decode('0x10')", "0")
	h.expectErr("ERR user_script:1: Expected the end but found invalid token at character 5 script: 90488ed3df43636c96be19291b12cbc738913942, on @user_script:1.", "EVAL", "return cjson.decode('[1] x')", "0")
	h.expectErr("ERR user_script:1: Expected value but found unexpected end of string at character 5 script: 30d67c6fb8e066eef4796bfcc59cee500c381744, on @user_script:1.", "EVAL", "return cjson.decode('\x22abc')", "0")
	h.expectErr("ERR user_script:1: Expected value but found invalid escape code at character 2 script: 469a6be20b8c762516eb8d35f233a4e25cd7e19c, on @user_script:1.", "EVAL", "return cjson.decode('\x22\x5c\x5cq\x22')", "0")
	h.expect(-9223372036854775808, "EVAL", "return cjson.decode('nan')", "0")
	h.expect(12, "EVAL", "return cjson.decode(' 12 ')", "0")
	h.expect("a\x09b", "EVAL", "return cjson.decode('\x22a\x5ctb\x22')", "0")
	h.expect("userdata", "EVAL", "return type(cjson.null)", "0")
	h.expect(2, "EVAL", "return cjson.decode('{\x22a\x22:1,\x22a\x22:2}').a", "0")
	h.expect(5, "EVAL", "return cjson.decode(5)", "0")
	h.expectErr("ERR user_script:1: bad argument #1 to 'decode' (expected 1 argument) script: 5378278d59343caf5c3375a655dfea5e69ab8a74, on @user_script:1.", "EVAL", "return cjson.decode()", "0")
	h.expect(1, "EVAL", "return #cjson.decode('[[[[1]]]]')", "0")
	h.expect(1, "EVAL", "return cjson.decode('+1')", "0")
	h.expectErr("ERR user_script:1: Expected value but found invalid token at character 1 script: 121c0b0f2d2ad62de9456ed953ed7b854d2ec58d, on @user_script:1.", "EVAL", "return cjson.decode('.5')", "0")
	h.expect(1, "EVAL", "return cjson.decode('1.')", "0")
	h.expect(-9223372036854775808, "EVAL", "return cjson.decode('Infinity')", "0")
	h.expect("\x00", "EVAL", "return cjson.decode('[\x22\x5c\x5cu0000\x22]')[1]", "0")
	h.expect("\xc3\xa9\xf0\x9f\x98\x80/", "EVAL", "return cjson.decode('\x22\x5c\x5cu00e9\x5c\x5cud83d\x5c\x5cude00\x5c\x5c/\x22')", "0")
	h.expectErr("ERR user_script:1: Expected value but found invalid unicode escape code at character 2 script: a6c52b6928b77ab585254f4aad3a29c682736f38, on @user_script:1.", "EVAL", "return cjson.decode('\x22\x5c\x5cud83d\x22')", "0")
	h.expectErr("ERR user_script:1: Expected value but found invalid unicode escape code at character 2 script: a551f20265e3eab757862642d41b385fa7b03fa1, on @user_script:1.", "EVAL", "return cjson.decode('\x22\x5c\x5cudc00\x22')", "0")
	h.expectErr("ERR user_script:1: Expected value but found invalid unicode escape code at character 2 script: abf3d7a6907669d8b3a294456e4dca885645512f, on @user_script:1.", "EVAL", "return cjson.decode('\x22\x5c\x5cu12\x22')", "0")
	h.expect([]any{1, 2, nil, 4}, "EVAL", "return cjson.decode('[1,2,null,4]')", "0")
	h.expect(1, "EVAL", "return cjson.decode('[1,2,null,4]')[3] == cjson.null", "0")
	h.expect("d", "EVAL", "return cjson.decode('{\x22a\x22:{\x22b\x22:[1,{\x22c\x22:\x22d\x22}]}}').a.b[2].c", "0")
	h.expectErr("ERR user_script:1: Expected object key string but found T_OBJ_END at character 8 script: 7e3659dd873275ff5047e436b0cc31cc91d160e4, on @user_script:1.", "EVAL", "return cjson.decode('{\x22a\x22:1,}')", "0")
	h.expectErr("ERR user_script:1: Expected value but found T_ARR_END at character 4 script: d31ab1dd313d99d4ad3dac6e48cdff283bea270c, on @user_script:1.", "EVAL", "return cjson.decode('[1,]')", "0")
	h.expectErr("ERR user_script:1: Expected object key string but found T_END at character 2 script: 6c60bbb22c4b71b0415e4e539d6dc66cc27df21d, on @user_script:1.", "EVAL", "return cjson.decode('{')", "0")
	h.expectErr("ERR user_script:1: Expected value but found invalid number at character 1 script: a968c762a4638482bd9ef50dcecdc4504214d87d, on @user_script:1.", "EVAL", "return cjson.decode('-')", "0")
	h.expectErr("ERR user_script:1: Expected comma or object end but found T_STRING at character 8 script: 7e6d40e89e823b8e3c90db9a275f3a62289f33af, on @user_script:1.", "EVAL", "return cjson.decode('{\x22a\x22:1 \x22b\x22:2}')", "0")
	h.expectErr("ERR user_script:1: Found too many nested data structures (1001) at character 1001 script: 2ddae80deeddb6a86c3c4e3c22b92b4350e40b1f, on @user_script:1.", "EVAL", "return cjson.decode(string.rep('[', 1001))", "0")
	h.expect("{\x22k\x22:[1,2.5,\x22s\x22,true,false,null,{}]}", "EVAL", "return cjson.encode(cjson.decode('{\x22k\x22:[1,2.5,\x22s\x22,true,false,null,{}]}'))", "0")
	h.expect("A", "EVAL", "return cjson.decode('\x22\x5c\x5cu0041\x22')", "0")
	h.expectErr("ERR user_script:1: Expected value but found T_END at character 3 script: ad90e2cff32ebb0824378d300466719d14e6d1da, on @user_script:1.", "EVAL", "return cjson.decode('  ')", "0")
	h.expectErr("ERR user_script:1: Expected value but found invalid token at character 1 script: 5586fdf8c512d9c8a68678c91a0de23617e84e25, on @user_script:1.", "EVAL", "return cjson.decode('nul')", "0")
	h.expect(-9223372036854775808, "EVAL", "return cjson.decode('1e999')", "0")
	h.expect(0, "EVAL", "return cjson.decode('[1e5,2E-3]')[2]", "0")
	h.expect("0.5", "EVAL", "return tostring(cjson.decode('0.5'))", "0")
	// numbers passed to redis.call
	h.expect("0.33333333333333331", "EVAL", "redis.call('set', 'n', 1/3) return redis.call('get', 'n')", "0")
	h.expect("9007199254740992", "EVAL", "redis.call('set', 'n', 2^53) return redis.call('get', 'n')", "0")
	h.expect("0.10000000000000001", "EVAL", "redis.call('set', 'n', 0.1) return redis.call('get', 'n')", "0")
	h.expect("-nan", "EVAL", "redis.call('set', 'n', 0/0) return redis.call('get', 'n')", "0")
	h.expect("-inf", "EVAL", "redis.call('set', 'n', -1/0) return redis.call('get', 'n')", "0")
	h.expect("-nan", "EVAL", "redis.call('set', 'n', math.huge - math.huge) return redis.call('get', 'n')", "0")
	// tonumber as Lua 5.1 over glibc strtod
	h.expect("12", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "12")
	h.expect("12", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", " 12 ")
	h.expect("31", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "0x1f")
	h.expect("inf", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "inf")
	h.expect("nan", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "nan")
	h.expect("-0", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "-0")
	h.expect("1e+20", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "1e20")
	h.expect("5", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "+5")
	h.expect("7", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "007")
	h.expect("1", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "1.0")
	h.expect("nil", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "abc")
	h.expect("nil", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "")
	h.expect("nil", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "12abc")
	h.expect("nil", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "0x")
	h.expect("nil", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "1e")
	h.expect("-0.5", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "  -.5  ")
	h.expect("3", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "0x1.8p1")
	h.expect("inf", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "infinity")
	h.expect("-nan", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "-nan")
	h.expect("nil", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "1 2")
	h.expect("12", "EVAL", "local n = tonumber(ARGV[1]) if n == nil then return 'nil' end redis.call('set', 'tn', n) return redis.call('get', 'tn')", "0", "12\x00x")
	h.expect([]any{35, 255, 12, "nil", 2, 12}, "EVAL", "return {tonumber('z', 36), tonumber('ff', 16), tonumber(12), tostring(tonumber(true)), tonumber('10', 2), tonumber('12', 10)}", "0")
	h.expectErr("ERR user_script:1: JSON parser does not support UTF-16 or UTF-32 script: 3684ed04c5bb8f36046ee1478f879f8d73dc1bd2, on @user_script:1.", "EVAL", "return cjson.decode(ARGV[1])", "0", "\x00\xff\x01")
	h.expectErr("ERR user_script:1: JSON parser does not support UTF-16 or UTF-32 script: 3684ed04c5bb8f36046ee1478f879f8d73dc1bd2, on @user_script:1.", "EVAL", "return cjson.decode(ARGV[1])", "0", "a\x00b")
}

// TestScriptCacheIsState: the script cache is replicated state, so a replica restored
// from a snapshot runs EVALSHA as the one it was taken from, and the digest tells two
// caches apart.
func TestScriptCacheIsState(t *testing.T) {
	h := newHarness(t)
	h.expect("1b936e3fe509bcbc9cd0664897bbe8fd0cac101b", "SCRIPT", "LOAD", "return 'hello'")
	h.expect(1, "EVAL", "return 1", "0")
	var snap bytes.Buffer
	if err := h.s.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	r := newHarness(t)
	if err := r.s.Restore(&snap); err != nil {
		t.Fatal(err)
	}
	if r.s.Digest() != h.s.Digest() {
		t.Fatal("the restored store's digest differs")
	}
	r.index = h.index
	r.expect("hello", "EVALSHA", "1b936e3fe509bcbc9cd0664897bbe8fd0cac101b", "0")
	r.expect(1, "EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0")

	before := h.s.Digest()
	h.expect(Status("OK"), "SCRIPT", "FLUSH")
	if h.s.Digest() == before {
		t.Fatal("SCRIPT FLUSH left the digest alone")
	}
}

// TestScriptDeterminism: two replicas applying the same entries get the same replies and
// state, with math.random, TIME and SPOP in the script.
func TestScriptDeterminism(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	script := "redis.call('sadd', 's', 'a', 'b', 'c', 'd', 'e', 'f')\n" +
		"local r = {math.random(1000), math.random(), redis.call('spop', 's'), redis.call('time')[2]}\n" +
		"redis.call('set', 'r', table.concat(r, ','))\n" +
		"return r"
	for i := 0; i < 5; i++ {
		ra, rb := a.do("EVAL", script, "0"), b.do("EVAL", script, "0")
		if !equalReplies(ra, rb) {
			t.Fatalf("replicas answered %v and %v", ra, rb)
		}
	}
	if a.s.Digest() != b.s.Digest() {
		t.Fatal("replicas diverged")
	}
	if ra, rb := a.do("EVAL", "return math.random(1000000)", "0"), a.do("EVAL", "return math.random(1000000)", "0"); equalReplies(ra, rb) {
		t.Fatalf("math.random gave %v at two calls: it should follow the entry's randomness", ra)
	}
}

// A script that would never end is stopped after scriptMaxInstructions on every
// replica at the same instruction, loops in a pcall or a coroutine too; what it wrote
// before stays, and the replicas stay equal. One under the budget runs to its end.
func TestScriptRunsOutOfInstructions(t *testing.T) {
	defer func(n int64) { scriptMaxInstructions = n }(scriptMaxInstructions)
	scriptMaxInstructions = 100_000
	killed := "ERR user_script:1: Script killed after 100000 Lua instructions: a script runs on every member's applier, and nanokv stops one that runs this long script: "
	a, b := newHarness(t), newHarness(t)
	for _, h := range []*harness{a, b} {
		h.expect("lib", "FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('spin', function() local n = 0 while true do n = n + 1 end end)")
	}
	for _, script := range []string{
		"redis.call('incr', 'before') while true do end redis.call('set', 'after', 1)",
		"redis.call('incr', 'before') while true do pcall(function() while true do end end) end",
		"redis.call('incr', 'before') local co = coroutine.wrap(function() while true do end end) co() redis.call('set', 'after', 1)",
		"redis.call('incr', 'before') local co = coroutine.create(function() while true do end end) coroutine.resume(co) redis.call('set', 'after', 1)",
	} {
		for _, h := range []*harness{a, b} {
			got, ok := h.do("EVAL", script, "0").(Err)
			if !ok || !strings.HasPrefix(string(got), killed) {
				t.Fatalf("%s: %v, want %q...", script, got, killed)
			}
		}
	}
	for _, h := range []*harness{a, b} {
		if got, ok := h.do("FCALL", "spin", "0").(Err); !ok || !strings.Contains(string(got), "Script killed after 100000 Lua instructions") {
			t.Fatalf("FCALL spin: %v", got)
		}
		h.expect("4", "GET", "before")
		h.expect(int64(0), "EXISTS", "after")
		h.expect(int64(20000), "EVAL", "local n = 0 for i = 1, 20000 do n = n + 1 end return n", "0")
	}
	if a.s.Digest() != b.s.Digest() {
		t.Fatal("replicas diverged")
	}
	// a string longer than Redis stores is a failed allocation, not the process's end
	a.expect(Err("ERR user_script:1: not enough memory script: 5741bfee3a362137648e0b90bef85649002141ef, on @user_script:1."), "EVAL", "return #string.rep('ab', 1e13)", "0")
	a.expect(Err("ERR user_script:1: not enough memory script: 49e5c80bc9e03726ccbc78019f501ef1a14fe495, on @user_script:1."), "EVAL", "return #('x'):rep(2^31 - 1)", "0")
	a.expect(int64(6), "EVAL", "return #string.rep('ab', 3)", "0")
}

// TestScriptConcatIsBounded: a concatenation whose result would pass scriptMaxString
// fails as a failed allocation, in a script or a function, on every replica at the same
// point, before it allocates, and so do string.format, string.gsub and table.concat;
// below the bound, `..` answers as before the guard, with numbers, metamethods, calls
// and varargs, and its errors name the script's line.
func TestScriptConcatIsBounded(t *testing.T) {
	defer func(n int) { scriptMaxString = n }(scriptMaxString)
	scriptMaxString = 1 << 14 // gopher-lua's gsub takes time quadratic in its matches
	a, b := newHarness(t), newHarness(t)
	for _, h := range []*harness{a, b} {
		h.expect("lib", "FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('double', function(keys, args) local s = 'x' for i = 1, 40 do s = s .. s redis.call('set', 'len', #s) end end)")
		h.expect(Err("ERR user_script:1: not enough memory script: 6312c13f00e1228cb13ab679c5394deaab7275d4, on @user_script:1."),
			"EVAL", "local s = 'x' for i = 1, 40 do s = s .. s end return #s", "0")
		if got, ok := h.do("FCALL", "double", "0").(Err); !ok || !strings.Contains(string(got), "not enough memory") {
			t.Fatalf("FCALL double: %v", got)
		}
		h.expect("16384", "GET", "len") // the last doubling that fit
		h.expect(int64(1<<14), "EVAL", "return #(string.rep('x', 2^13) .. string.rep('y', 2^13))", "0")
		h.expect(Err("ERR user_script:1: not enough memory script: 8d2c4bf4cb98c1d65b159187c2c84d00ccb578c0, on @user_script:1."),
			"EVAL", "return #(string.rep('x', 2^13) .. 'z' .. string.rep('y', 2^13))", "0")
	}
	// the library functions that build strings are bounded too
	for _, script := range []string{
		"local s = 'x' for i = 1, 40 do s = string.format('%s%s', s, s) end",
		"local s = 'x' for i = 1, 40 do s = string.format('%s%d%s', s, i, s) end",
		"local s = 'x' for i = 1, 40 do s = s:gsub('.', '%0%0') end",
		"local s = 'x' for i = 1, 40 do s = table.concat({s, s}) end",
		"local s = 'x' for i = 1, 40 do s = table.concat({s, s}, s) end",
	} {
		for _, h := range []*harness{a, b} {
			if got, ok := h.do("EVAL", "redis.call('incr', 'n') "+script+" redis.call('incr', 'n')", "0").(Err); !ok || !strings.Contains(string(got), "not enough memory") {
				t.Errorf("%s: %v", script, got)
			}
		}
	}
	for _, h := range []*harness{a, b} {
		h.expect("5", "GET", "n") // what ran before the failure stays written
		h.expect(int64(1<<14), "EVAL", "return #table.concat({string.rep('x', 2^13), string.rep('y', 2^13)})", "0")
		h.expect(int64(1<<14-1024), "EVAL", "return #string.format('%s', string.rep('x', 2^14 - 1024))", "0")
	}
	if a.s.Digest() != b.s.Digest() {
		t.Fatal("replicas diverged")
	}
	for _, c := range []struct {
		script string
		want   any
	}{
		{"return 'a' .. 1 .. 2.5 .. 'b'", "a12.5b"},
		{"return 1 .. 2", "12"},
		{"return 1e100 .. '|' .. 2^53", "1e+100|9.007199254741e+15"},
		{"local t = setmetatable({}, {__concat = function(a, b) return 'M' end}) return t .. 'x' .. 'y'", "M"},
		{"local t = setmetatable({}, {__concat = function(a, b) return type(a) .. '+' .. type(b) end}) return 'x' .. 'y' .. t", "xstring+table"},
		{"local function f() return 'a', 'b' end return f() .. f()", "aa"},
		{"local function f(...) return ... .. 'z' end return f('q', 'r')", "qz"},
		{"local t = {'a' .. 'b', k = 'c' .. 'd'} return t[1] .. t.k", "abcd"},
		{"local s = '' for i = 1, 100 do s = s .. i end return #s", int64(192)},
		{"local function f() return 'p' .. 'q', 'r' end local x, y = f() return x .. y", "pqr"},
		{"local a = 1\nlocal b = 2\nreturn 'x' ..\n nil", Err("ERR user_script:3: attempt to concatenate a nil value script: 52f089c514c2fa964f3ee0519507d52f0f5b04b7, on @user_script:3.")},
		{"return {} .. 'x'", Err("ERR user_script:1: attempt to concatenate a table value script: bd7fed2b307ec6d6b2ab70b695be1da1b8c86eca, on @user_script:1.")},
	} {
		a.expect(c.want, "EVAL", c.script, "0")
	}
}

// failsAfterWrite runs script on every replica after a write (INCR before) and requires
// an error that contains want.
func failsAfterWrite(t *testing.T, script, want string, replicas ...*harness) {
	t.Helper()
	for _, h := range replicas {
		if got, ok := h.do("EVAL", "redis.call('incr', 'before') "+script, "0").(Err); !ok || !strings.Contains(string(got), want) {
			t.Errorf("%.200s: %.200v, want an error with %q", script, got, want)
		}
	}
}

// TestPatternMatchIsBounded: a pattern search whose backtracking would outlast the
// script's budget (it ran for hours in one library call, unseen by the instruction
// count, and stalled the applier) fails at the same step on every replica as a script
// out of instructions does, in find, match, gmatch and gsub, in a pcall too; the steps
// of a match and a gsub replacement function's instructions share the budget; a pattern
// deeper than patMaxDepth is refused instead of exhausting the stack. (What the
// functions answer is compared with redis-server in server's TestLuaPatternsAsRedis.)
func TestPatternMatchIsBounded(t *testing.T) {
	defer func(n int64) { scriptMaxInstructions = n }(scriptMaxInstructions)
	scriptMaxInstructions = 1_000_000
	killed := "Script killed after 1000000 Lua instructions"
	a, b := newHarness(t), newHarness(t)
	for _, script := range []string{
		"return string.find(string.rep('a', 300), '.-.-.-b')",
		"return string.match(string.rep('a', 300), '(.-)(.-)(.-)b')",
		"for x in string.gmatch(string.rep('a', 300), '.-.-.-b') do end",
		"return string.gsub(string.rep('a', 300), '.-.-.-b', '')",
		"local ok = pcall(string.find, string.rep('a', 300), '.-.-.-b') redis.call('set', 'after', 1)",
		"return string.gsub(string.rep('a', 100000), 'a', function(c) for i = 1, 10 do end return c end)",
		// an error of the replacement function leaves its instructions counted
		"while true do pcall(string.gsub, 'abc', '.', function() while true do end end) end",
		"while true do pcall(string.gsub, 'abc', '.', setmetatable({}, {__index = function() while true do end end})) end",
	} {
		failsAfterWrite(t, script, killed, a, b)
	}
	for _, h := range []*harness{a, b} {
		h.expect("8", "GET", "before")
		h.expect(int64(0), "EXISTS", "after")
		// the same searches on shorter subjects fit in the budget
		h.expect(nil, "EVAL", "return string.find(string.rep('a', 30), '.-.-.-b')", "0")
		h.expect(int64(20000), "EVAL", "return select(2, string.gsub(string.rep('a', 20000), 'a', function(c) return c end))", "0")
		h.expect(Err("ERR user_script:1: pattern too complex script: 8377a1c6a89388ac0c87219798e444f8eef8ed97, on @user_script:1."),
			"EVAL", "return string.find(string.rep('a', 6000), string.rep('a?', 6000))", "0")
	}
	if a.s.Digest() != b.s.Digest() {
		t.Fatal("replicas diverged")
	}
}

// TestScriptStackIsBounded: a script that returns or passes more values than a Lua
// stack holds fails with an error, on every replica alike, and the process goes on.
// `{string.byte(s, 1, -1)}` of a string of 100K filled gopher-lua's registry, whose
// PCall then failed to push the error handler: the panic ended the process (every
// member, and again at each restart, replaying the entry).
func TestScriptStackIsBounded(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	fill := "local t = {} for i = 1, 7000 do t[i] = i end "
	for _, c := range []struct{ script, want string }{
		{"return {string.byte(string.rep('x', 1e5), 1, -1)}", "stack overflow (string slice too long)"},
		{fill + "t[7001] = 0 t[8001] = 0 return {unpack(t, 1, 8001)}", "too many results to unpack"},
		// each frame holds 7000 values: the registry fills inside the VM, or in a library
		// function's pushes (the case that ended the process)
		{fill + "local function f(n, ...) if n == 0 then return 0 end local r = f(n - 1, ...) return r end return f(100, unpack(t))", "registry overflow"},
		{fill + "local function f(n, ...) if n == 0 then return string.byte(string.rep('x', 7000), 1, -1) end local r = f(n - 1, ...) return r end return f(8, unpack(t))", "registry overflow"},
	} {
		failsAfterWrite(t, c.script, c.want, a, b)
	}
	for _, h := range []*harness{a, b} {
		h.expect("4", "GET", "before")
		h.expect(int64(7000), "EVAL", fill+"return select('#', unpack(t))", "0")
		h.expect(int64(7997), "EVAL", "return #{string.byte(string.rep('x', 7997), 1, -1)}", "0")
	}
	if a.s.Digest() != b.s.Digest() {
		t.Fatal("replicas diverged")
	}
}

// TestScriptSyntaxIsBounded: a script nested deeper than scriptMaxSyntaxDepth, or
// longer than scriptMaxSource, is a compile error. `return #{{{...}}}` a million deep
// ended the process: gopher-lua's compiler, recursing once per level on the applier,
// exhausted its stack, a fatal error; every member died, and again at each replay.
func TestScriptSyntaxIsBounded(t *testing.T) {
	h := newHarness(t)
	nested := func(n int) string { return "return #" + strings.Repeat("{", n) + strings.Repeat("}", n) }
	sum := func(n int) string { return "return " + strings.TrimSuffix(strings.Repeat("1+", n), "+") }
	for _, c := range []struct {
		script string
		want   any
	}{
		{nested(100), int64(1)},
		{nested(scriptMaxSyntaxDepth + 1), "chunk has too many syntax levels"},
		{nested(1_000_000), "chunk has too many syntax levels"},
		{"return " + strings.Repeat("not ", 1_000_000) + "true", "chunk has too many syntax levels"},
		{"local x = 0\n" + strings.Repeat("do ", 20_000) + strings.Repeat("end ", 20_000), "user_script:2: chunk has too many syntax levels"},
		// a long chain nests in gopher-lua's tree, not in Lua's parser: Redis takes it
		{sum(9000), int64(9000)},
	} {
		got := h.do("EVAL", c.script, "0")
		if want, ok := c.want.(string); ok {
			if e, isErr := got.(Err); !isErr || !strings.Contains(string(e), want) {
				t.Errorf("%.40s...: %.200v, want an error with %q", c.script, got, want)
			}
		} else if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%.40s...: %.200v, want %v", c.script, got, c.want)
		}
	}
	// loadstring and load compile as EVAL does: gopher-lua's own took this nesting and
	// overflowed the applier's stack (every member died)
	h.expect(`[string "return #{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{..."]:1: chunk has too many syntax levels`,
		"EVAL", "local f, e = loadstring('return #' .. string.rep('{', 1e6) .. string.rep('}', 1e6)) return e", "0")
	defer func(n int) { scriptMaxSource = n }(scriptMaxSource)
	scriptMaxSource = 1000
	h.expect(Err("ERR Error compiling script (new function): user_script:1: chunk too long (1009 bytes; nanokv compiles 1000 at most)"),
		"EVAL", "return '"+strings.Repeat("x", 1000)+"'", "0")
	h.expect(Err("ERR Error compiling function: user_function:1: chunk too long (1010 bytes; nanokv compiles 1000 at most)"),
		"FUNCTION", "LOAD", "#!lua name=big\nreturn '"+strings.Repeat("x", 1000)+"'")
	h.expect(int64(1000), "EVAL", "return #'"+strings.Repeat("x", 985)+"' + 15", "0") // 1000 bytes: compiled
	// a reader that never stops is read up to the same bound
	h.expect("(load):1: chunk too long (1001 bytes; nanokv compiles 1000 at most)",
		"EVAL", "local f, e = load(function() return 'x' end) return e", "0")
	h.expect("(load):1: chunk too long (1010 bytes; nanokv compiles 1000 at most)",
		"EVAL", "local f, e = load(function() return 'return 1 +' end) return e", "0")
}

// TestScriptStringsAreCharged: the strings a script makes count against its budget,
// one instruction per scriptBytesPerInstruction bytes, whichever function makes them,
// and so do the values of redis.call replies and coroutines, so that a loop making
// large things (one instruction each) ends as one of many instructions does, on every
// replica alike.
func TestScriptStringsAreCharged(t *testing.T) {
	defer func(n int64) { scriptMaxInstructions = n }(scriptMaxInstructions)
	scriptMaxInstructions = 100_000 // 1.6 MB of strings
	killed := "Script killed after 100000 Lua instructions"
	a, b := newHarness(t), newHarness(t)
	for _, h := range []*harness{a, b} {
		h.expect(Status("OK"), "SET", "big", strings.Repeat("v", 100_000))
		for i := 0; i < 1000; i++ {
			h.do("RPUSH", "list", "v")
		}
	}
	s := "local s = string.rep('x', 1e5) "
	for _, script := range []string{
		"for i = 1, 1e6 do local s = string.rep('x', 1e6) end",
		s + "for i = 1, 1e6 do local u = s:upper() end",
		s + "for i = 1, 1e6 do local u = s:lower() end",
		s + "for i = 1, 1e6 do local u = s:reverse() end",
		s + "for i = 1, 1e6 do local u = s .. i end",
		s + "for i = 1, 1e6 do local u = string.format('%s', s) end",
		s + "for i = 1, 1e6 do local u = table.concat({s, s}) end",
		s + "for i = 1, 1e6 do local u = s:gsub('^x', 'y') end",
		s + "local t = {s, s} for i = 1, 1e6 do local u = cjson.encode(t) end",
		s + "local j = cjson.encode(s) for i = 1, 1e6 do local u = cjson.decode(j) end",
		"for i = 1, 1e6 do local v = redis.call('get', 'big') end",
		"for i = 1, 1e6 do local v = redis.call('lrange', 'list', 0, -1) end", // many small values
		"local t = {} for i = 1, 1e6 do t[i] = coroutine.create(function() end) end",
		"local t = {} for i = 1, 1e6 do t[i] = coroutine.wrap(function() end) end",
	} {
		failsAfterWrite(t, script, killed, a, b)
	}
	for _, h := range []*harness{a, b} {
		h.expect("14", "GET", "before")
		// a megabyte fits, and a few coroutines
		h.expect(int64(10), "EVAL", "local t = {} for i = 1, 10 do t[i] = coroutine.create(function() end) end return #t", "0")
		h.expect(int64(1_000_000), "EVAL", "return #string.rep('x', 1e6)", "0")
		h.expect(int64(1_000_000), "EVAL", "local n = 0 for i = 1, 10 do n = n + #redis.call('get', 'big') end return n", "0")
	}
	if a.s.Digest() != b.s.Digest() {
		t.Fatal("replicas diverged")
	}
}

func equalReplies(a, b any) bool { return reflect.DeepEqual(normalize(a), normalize(b)) }

// BenchmarkApplyEVAL is a script's cost on the applier: set is a SET through
// redis.call, lock redis-py's Lock.release (a GET, a compare, a DEL), loop a thousand
// iterations of Lua arithmetic (where the instruction count of scriptbudget.go shows).
func BenchmarkApplyEVAL(b *testing.B) {
	for _, bc := range []struct{ name, script string }{
		{"set", "return redis.call('set', KEYS[1], ARGV[1])"},
		{"lock", "local t = redis.call('get', KEYS[1]) if not t or t ~= ARGV[1] then return 0 end redis.call('del', KEYS[1]) return 1"},
		{"loop", "local n = 0 for i = 1, 1000 do n = n + i % 7 end return n"},
		{"concat", "local s = '' for i = 1, 100 do s = s .. i .. ',' end return redis.call('set', KEYS[1] .. ':' .. ARGV[1], s)"},
		{"gsub", "return #(string.rep('a', 65536)):gsub('a', 'b')"},
		// pattern searches as scripts use them (luapattern.go)
		{"find", "local a, b, id, kind = string.find('user:12345:profile', '^user:(%d+):(%a+)$') return kind"},
		{"gmatch", "local n = 0 for w in string.gmatch('alpha, beta,gamma , delta,epsilon,zeta, eta,theta', '[^,]+') do n = n + 1 end return n"},
		{"split", "return (string.gsub('alpha, beta,gamma , delta,epsilon,zeta, eta,theta', '%s*,%s*', ';'))"},
		// tables written by key and measured with # (scripttable.go)
		{"table", "local t = {} for i = 1, 100 do t[i] = i end for i = 1, 100 do t[#t + 1] = i end return #t"},
		{"stack", "local t = {} for i = 1, 100 do t[#t + 1] = i end while #t > 0 do t[#t] = nil end return #t"},
		{"format", "return string.format('%s:%d:%.2f', KEYS[1], 42, 1.5)"},
		{"sort", "local t = {} for i = 1, 100 do t[i] = (i * 37) % 101 end table.sort(t) return t[1]"},
		// comparisons of two variables (scriptcompare.go)
		{"compare", "local n, s = 0, ARGV[1] for i = 1, 100 do if s == KEYS[1] or i <= n then n = n + 1 end end return n"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := New()
			set := AppendCommand(nil, 0, [][]byte{[]byte("SET"), []byte("k"), []byte("v")})
			eval := AppendCommand(nil, 0, [][]byte{[]byte("EVAL"), []byte(bc.script), []byte("1"), []byte("k"), []byte("v")})
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				s.Apply(Entry{Index: uint64(2*i + 1), Time: 1e12, Data: set}, nil)
				s.Apply(Entry{Index: uint64(2*i + 2), Time: 1e12, Data: eval}, nil)
			}
		})
	}
}

// TestScriptsReachShardsWhileReadersRun: scripts that take the shards of undeclared keys
// in descending and scattered orders, against readers holding several shards at once
// (MGET, EVAL_RO, DBSIZE) and a snapshot written meanwhile. Nothing deadlocks (the test
// would hang), nothing races (-race in CI), and the snapshot is the state between two
// scripts.
func TestScriptsReachShardsWhileReadersRun(t *testing.T) {
	s := New()
	stopReaders := runReaders(3, func(r, i int) {
		args := [][]byte{[]byte("MGET")}
		for j := range 6 {
			args = append(args, []byte(fmt.Sprintf("k%d", (i*7+j*13+r)%50)))
		}
		s.Read(0, 1e12, args, Discard)
		if i%10 == 0 {
			s.Read(0, 1e12, [][]byte{[]byte("EVAL_RO"), []byte("return redis.call('mget', 'k1', 'k2', 'k3')"), []byte("0")}, Discard)
		}
		if i%50 == 0 {
			s.Read(0, 1e12, [][]byte{[]byte("DBSIZE")}, Discard)
		}
	})
	// With a step coprime with 50, a script increments each of k0..k49 once, in an order
	// of its own; it declares one key.
	const script = "for i = 49, 0, -1 do redis.call('incr', 'k' .. ((i * ARGV[1]) % 50)) end return 1"
	steps := []string{"1", "3", "7", "9", "11", "13", "17"}
	var snap bytes.Buffer
	var snapDone sync.WaitGroup
	for i := range 300 {
		if i == 150 {
			write, err := s.BeginSnapshot()
			if err != nil {
				t.Fatal(err)
			}
			snapDone.Add(1)
			go func() {
				defer snapDone.Done()
				if err := write(&snap); err != nil {
					t.Error(err)
				}
			}()
		}
		data := AppendCommand(nil, 0, [][]byte{[]byte("EVAL"), []byte(script), []byte("1"), []byte("k7"), []byte(steps[i%len(steps)])})
		if err := s.Apply(Entry{Index: uint64(i + 1), Time: 1e12, Data: data}, nil); err != nil {
			t.Fatal(err)
		}
	}
	stopReaders()
	snapDone.Wait()
	for _, st := range []struct {
		s    *Store
		want string
	}{{s, "300"}, {restored(t, &snap), "150"}} {
		for k := range 50 {
			w := &tree{}
			st.s.Read(0, 1e12, [][]byte{[]byte("GET"), []byte(fmt.Sprintf("k%d", k))}, w)
			if got := fmt.Sprint(w.out...); got != st.want {
				t.Fatalf("k%d = %s, want %s", k, got, st.want)
			}
		}
	}
}

func restored(t *testing.T, snap *bytes.Buffer) *Store {
	t.Helper()
	s := New()
	if err := s.Restore(snap); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestScriptMethodDefinition: `function t:m()` compiles and runs. Its name has no Func
// in gopher-lua's tree (a Receiver and a Method instead), and guardChunk dereferenced
// the nil Func: one such EVAL ended the applier of every member, and again at each
// replay of its entry.
func TestScriptMethodDefinition(t *testing.T) {
	h := newHarness(t)
	h.expect(int64(7), "EVAL", "local t = {n = 3} function t:add(k) return self.n + k end return t:add(4)", "0")
	h.expect(int64(2), "EVAL", "local t = {u = {}} function t.u:f() return 2 end return t.u:f()", "0")
	h.expect("ok", "EVAL", "local t = {} local f = loadstring('local t = ... function t:m() return \"ok\" end') f(t) return t:m()", "0")
}

// TestScriptCompilingIsCharged: loadstring charges the script for what it compiles, so a
// loop over it ends as a long loop does, where each call (one instruction) compiled
// megabytes for seconds of every applier's time.
func TestScriptCompilingIsCharged(t *testing.T) {
	defer func(n int64) { scriptMaxInstructions = n }(scriptMaxInstructions)
	scriptMaxInstructions = 1_000_000
	h := newHarness(t)
	h.expect(int64(10), "EVAL", "local n = 0 for i = 1, 10 do if loadstring('return 1') then n = n + 1 end end return n", "0")
	h.expectErr("ERR user_script:1: Script killed after 1000000 Lua instructions",
		"EVAL", "local s = string.rep('x = 1 ', 10000) for i = 1, 100 do loadstring(s) end return 1", "0")
}
