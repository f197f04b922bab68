package kvstore

import (
	"testing"
)

// Consumer groups against replies taken from redis-server 7.0.15 (RESP2), the same
// sequence run there on an empty database; the replies that hold idle times (which
// depend on each server's clock) are left out.
func TestStreamGroupsAsRedis(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"del", "s"}, ":0\r\n"},
		{[]string{"xgroup", "create", "s", "g", "$"}, "-ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.\r\n"},
		{[]string{"xgroup", "create", "s", "g", "$", "mkstream"}, "+OK\r\n"},
		{[]string{"xgroup", "create", "s", "g", "$", "mkstream"}, "-BUSYGROUP Consumer Group name already exists\r\n"},
		{[]string{"xgroup", "create", "s", "g2", "0", "entriesread", "5"}, "+OK\r\n"},
		{[]string{"xgroup", "create", "s", "g3", "0", "entriesread", "-5"}, "-ERR value for ENTRIESREAD must be positive or -1\r\n"},
		{[]string{"xgroup", "create", "s", "g4", "x"}, "-ERR Invalid stream ID specified as stream command argument\r\n"},
		{[]string{"xgroup", "create", "s", "g5", "0", "foo"}, "-ERR unknown subcommand or wrong number of arguments for 'create'. Try XGROUP HELP.\r\n"},
		{[]string{"xgroup", "foo"}, "-ERR unknown subcommand 'foo'. Try XGROUP HELP.\r\n"},
		{[]string{"xgroup", "create", "s"}, "-ERR wrong number of arguments for 'xgroup|create' command\r\n"},
		{[]string{"xgroup", "setid", "s", "nog", "0"}, "-NOGROUP No such consumer group 'nog' for key name 's'\r\n"},
		{[]string{"xgroup", "setid", "s", "g", "0", "entriesread", "3"}, "+OK\r\n"},
		{[]string{"xgroup", "createconsumer", "s", "g", "c1"}, ":1\r\n"},
		{[]string{"xgroup", "createconsumer", "s", "g", "c1"}, ":0\r\n"},
		{[]string{"xgroup", "createconsumer", "s", "nog", "c1"}, "-NOGROUP No such consumer group 'nog' for key name 's'\r\n"},
		{[]string{"xgroup", "delconsumer", "s", "g", "c9"}, ":0\r\n"},
		{[]string{"xadd", "s", "1-0", "a", "1"}, "$3\r\n1-0\r\n"},
		{[]string{"xadd", "s", "2-0", "b", "2"}, "$3\r\n2-0\r\n"},
		{[]string{"xadd", "s", "3-0", "c", "3"}, "$3\r\n3-0\r\n"},
		{[]string{"xinfo", "groups", "s"}, "*2\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:1\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$3\r\n0-0\r\n$12\r\nentries-read\r\n:3\r\n$3\r\nlag\r\n:0\r\n*12\r\n$4\r\nname\r\n$2\r\ng2\r\n$9\r\nconsumers\r\n:0\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$3\r\n0-0\r\n$12\r\nentries-read\r\n:5\r\n$3\r\nlag\r\n:-2\r\n"},
		{[]string{"xreadgroup", "group", "g", "c1", "count", "1", "streams", "s", ">"}, "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n"},
		{[]string{"xreadgroup", "group", "g", "c2", "streams", "s", ">"}, "*1\r\n*2\r\n$1\r\ns\r\n*2\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n"},
		{[]string{"xreadgroup", "group", "g", "c2", "streams", "s", ">"}, "*-1\r\n"},
		{[]string{"xreadgroup", "group", "g", "c1", "streams", "s", "0"}, "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n"},
		{[]string{"xreadgroup", "group", "g", "c1", "streams", "s", "1-0"}, "*1\r\n*2\r\n$1\r\ns\r\n*0\r\n"},
		{[]string{"xreadgroup", "group", "nog", "c1", "streams", "s", ">"}, "-NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option\r\n"},
		{[]string{"xreadgroup", "group", "g", "c1", "streams", "nx", ">"}, "-NOGROUP No such key 'nx' or consumer group 'g' in XREADGROUP with GROUP option\r\n"},
		{[]string{"xreadgroup", "group", "g", "c1", "streams", "s", "$"}, "-ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.\r\n"},
		{[]string{"xreadgroup", "streams", "s", ">"}, "-ERR wrong number of arguments for 'xreadgroup' command\r\n"},
		{[]string{"xreadgroup", "group", "g", "c1", "noack", "streams", "s", ">"}, "*-1\r\n"},
		{[]string{"xreadgroup", "group", "g", "c1", "streams", "s"}, "-ERR wrong number of arguments for 'xreadgroup' command\r\n"},
		{[]string{"xpending", "s", "g"}, "*4\r\n:3\r\n$3\r\n1-0\r\n$3\r\n3-0\r\n*2\r\n*2\r\n$2\r\nc1\r\n$1\r\n1\r\n*2\r\n$2\r\nc2\r\n$1\r\n2\r\n"},
		{[]string{"xpending", "s", "nog"}, "-NOGROUP No such key 's' or consumer group 'nog'\r\n"},
		{[]string{"xpending", "nx", "g"}, "-NOGROUP No such key 'nx' or consumer group 'g'\r\n"},
		{[]string{"xack", "s", "g", "1-0", "9-0"}, ":1\r\n"},
		{[]string{"xack", "s", "g", "x"}, "-ERR Invalid stream ID specified as stream command argument\r\n"},
		{[]string{"xack", "s", "nog", "1-0"}, ":0\r\n"},
		{[]string{"xack", "nx", "g", "1-0"}, ":0\r\n"},
		{[]string{"xpending", "s", "g"}, "*4\r\n:2\r\n$3\r\n2-0\r\n$3\r\n3-0\r\n*1\r\n*2\r\n$2\r\nc2\r\n$1\r\n2\r\n"},
		{[]string{"xdel", "s", "2-0"}, ":1\r\n"},
		{[]string{"xreadgroup", "group", "g", "c2", "streams", "s", "0"}, "*1\r\n*2\r\n$1\r\ns\r\n*2\r\n*2\r\n$3\r\n2-0\r\n*-1\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n"},
		{[]string{"xinfo", "groups", "s"}, "*2\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:2\r\n$7\r\npending\r\n:2\r\n$17\r\nlast-delivered-id\r\n$3\r\n3-0\r\n$12\r\nentries-read\r\n:6\r\n$3\r\nlag\r\n:-3\r\n*12\r\n$4\r\nname\r\n$2\r\ng2\r\n$9\r\nconsumers\r\n:0\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$3\r\n0-0\r\n$12\r\nentries-read\r\n:5\r\n$3\r\nlag\r\n$-1\r\n"},
		{[]string{"xgroup", "delconsumer", "s", "g", "c2"}, ":2\r\n"},
		{[]string{"xpending", "s", "g"}, "*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n"},
		{[]string{"xgroup", "destroy", "s", "g2"}, ":1\r\n"},
		{[]string{"xgroup", "destroy", "s", "g2"}, ":0\r\n"},
		{[]string{"xinfo", "groups", "s"}, "*1\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:1\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$3\r\n3-0\r\n$12\r\nentries-read\r\n:6\r\n$3\r\nlag\r\n:-3\r\n"},
		{[]string{"xinfo", "stream", "s"}, "*20\r\n$6\r\nlength\r\n:2\r\n$15\r\nradix-tree-keys\r\n:1\r\n$16\r\nradix-tree-nodes\r\n:2\r\n$17\r\nlast-generated-id\r\n$3\r\n3-0\r\n$20\r\nmax-deleted-entry-id\r\n$3\r\n2-0\r\n$13\r\nentries-added\r\n:3\r\n$23\r\nrecorded-first-entry-id\r\n$3\r\n1-0\r\n$6\r\ngroups\r\n:1\r\n$11\r\nfirst-entry\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n$10\r\nlast-entry\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n"},
		{[]string{"xadd", "s", "4-0", "d", "4"}, "$3\r\n4-0\r\n"},
		{[]string{"xreadgroup", "group", "g3", "c", "count", "10", "streams", "s", ">"}, "-NOGROUP No such key 's' or consumer group 'g3' in XREADGROUP with GROUP option\r\n"},
		{[]string{"xinfo", "groups", "s"}, "*1\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:1\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$3\r\n3-0\r\n$12\r\nentries-read\r\n:6\r\n$3\r\nlag\r\n:-2\r\n"},
		{[]string{"xclaim", "s", "g3", "c9", "0", "1-0", "3-0", "justid"}, "-NOGROUP No such key 's' or consumer group 'g3'\r\n"},
		{[]string{"xclaim", "s", "g3", "c9", "0", "1-0", "4-0", "retrycount", "5", "justid"}, "-NOGROUP No such key 's' or consumer group 'g3'\r\n"},
		{[]string{"xclaim", "s", "g3", "c9", "0", "9-0", "force", "justid"}, "-NOGROUP No such key 's' or consumer group 'g3'\r\n"},
		{[]string{"xpending", "s", "g3", "-", "+", "10"}, "-NOGROUP No such key 's' or consumer group 'g3'\r\n"},
		{[]string{"xclaim", "s", "g3", "c9", "x", "1-0"}, "-NOGROUP No such key 's' or consumer group 'g3'\r\n"},
		{[]string{"xclaim", "s", "g3", "c9", "0", "x"}, "-NOGROUP No such key 's' or consumer group 'g3'\r\n"},
		{[]string{"xclaim", "s", "g3", "c9", "0", "1-0", "idle", "x"}, "-NOGROUP No such key 's' or consumer group 'g3'\r\n"},
		{[]string{"xclaim", "s", "nog", "c9", "0", "1-0"}, "-NOGROUP No such key 's' or consumer group 'nog'\r\n"},
		{[]string{"xautoclaim", "s", "g3", "c8", "0", "0", "count", "2"}, "-NOGROUP No such key 's' or consumer group 'g3'\r\n"},
		{[]string{"xautoclaim", "s", "g3", "c8", "0", "0", "count", "2", "justid"}, "-NOGROUP No such key 's' or consumer group 'g3'\r\n"},
		{[]string{"xautoclaim", "s", "g3", "c8", "0", "0", "count", "0"}, "-ERR COUNT must be > 0\r\n"},
		{[]string{"xautoclaim", "s", "g3", "c8", "0", "x"}, "-ERR Invalid stream ID specified as stream command argument\r\n"},
		{[]string{"xautoclaim", "s", "nog", "c8", "0", "0"}, "-NOGROUP No such key 's' or consumer group 'nog'\r\n"},
		{[]string{"xdel", "s", "1-0"}, ":1\r\n"},
		{[]string{"xautoclaim", "s", "g3", "c8", "0", "0"}, "-NOGROUP No such key 's' or consumer group 'g3'\r\n"},
		{[]string{"xpending", "s", "g3"}, "-NOGROUP No such key 's' or consumer group 'g3'\r\n"},
		{[]string{"xgroup", "setid", "s", "g3", "$"}, "-NOGROUP No such consumer group 'g3' for key name 's'\r\n"},
		{[]string{"xinfo", "groups", "s"}, "*1\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:1\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$3\r\n3-0\r\n$12\r\nentries-read\r\n:6\r\n$3\r\nlag\r\n:-2\r\n"},
		{[]string{"xgroup", "help"}, "*17\r\n+XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+CREATE <key> <groupname> <id|$> [option]\r\n+    Create a new consumer group. Options are:\r\n+    * MKSTREAM\r\n+      Create the empty stream if it does not exist.\r\n+    * ENTRIESREAD entries_read\r\n+      Set the group's entries_read counter (internal use).\r\n+CREATECONSUMER <key> <groupname> <consumer>\r\n+    Create a new consumer in the specified group.\r\n+DELCONSUMER <key> <groupname> <consumer>\r\n+    Remove the specified consumer.\r\n+DESTROY <key> <groupname>\r\n+    Remove the specified group.\r\n+SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]\r\n+    Set the current group ID and entries_read counter.\r\n+HELP\r\n+    Prints this help.\r\n"},
		{[]string{"del", "s"}, ":1\r\n"},
		{[]string{"xadd", "s", "1-0", "a", "1"}, "$3\r\n1-0\r\n"},
		{[]string{"xadd", "s", "2-0", "b", "2"}, "$3\r\n2-0\r\n"},
		{[]string{"xadd", "s", "3-0", "c", "3"}, "$3\r\n3-0\r\n"},
		{[]string{"xadd", "s", "4-0", "d", "4"}, "$3\r\n4-0\r\n"},
		{[]string{"xgroup", "create", "s", "g", "0"}, "+OK\r\n"},
		{[]string{"xreadgroup", "group", "g", "c1", "count", "3", "streams", "s", ">"}, "*1\r\n*2\r\n$1\r\ns\r\n*3\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n"},
		{[]string{"xclaim", "s", "g", "c9", "0", "1-0", "3-0", "justid"}, "*2\r\n$3\r\n1-0\r\n$3\r\n3-0\r\n"},
		{[]string{"xclaim", "s", "g", "c9", "0", "1-0", "4-0", "retrycount", "5", "justid"}, "*1\r\n$3\r\n1-0\r\n"},
		{[]string{"xclaim", "s", "g", "c9", "0", "4-0", "force", "justid"}, "*1\r\n$3\r\n4-0\r\n"},
		{[]string{"xclaim", "s", "g", "c9", "0", "9-0", "force", "justid"}, "*0\r\n"},
		{[]string{"xpending", "s", "g"}, "*4\r\n:4\r\n$3\r\n1-0\r\n$3\r\n4-0\r\n*2\r\n*2\r\n$2\r\nc1\r\n$1\r\n1\r\n*2\r\n$2\r\nc9\r\n$1\r\n3\r\n"},
		{[]string{"xclaim", "s", "g", "c9", "x", "1-0"}, "-ERR Invalid min-idle-time argument for XCLAIM\r\n"},
		{[]string{"xclaim", "s", "g", "c9", "0", "x"}, "-ERR Unrecognized XCLAIM option 'x'\r\n"},
		{[]string{"xclaim", "s", "g", "c9", "0", "1-0", "idle", "x"}, "-ERR Invalid IDLE option argument for XCLAIM\r\n"},
		{[]string{"xclaim", "s", "g", "c9", "0", "1-0", "foo"}, "-ERR Unrecognized XCLAIM option 'foo'\r\n"},
		{[]string{"xclaim", "s", "g", "c9", "0", "1-0", "lastid", "10-0", "justid"}, "*1\r\n$3\r\n1-0\r\n"},
		{[]string{"xinfo", "groups", "s"}, "*1\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:2\r\n$7\r\npending\r\n:4\r\n$17\r\nlast-delivered-id\r\n$4\r\n10-0\r\n$12\r\nentries-read\r\n:3\r\n$3\r\nlag\r\n:1\r\n"},
		{[]string{"xclaim", "s", "g", "c8", "0", "2-0"}, "*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n"},
		{[]string{"xclaim", "s", "nog", "c9", "0", "1-0"}, "-NOGROUP No such key 's' or consumer group 'nog'\r\n"},
		{[]string{"xautoclaim", "s", "g", "c8", "0", "0", "count", "2"}, "*3\r\n$3\r\n3-0\r\n*2\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n*0\r\n"},
		{[]string{"xautoclaim", "s", "g", "c8", "0", "0", "count", "2", "justid"}, "*3\r\n$3\r\n3-0\r\n*2\r\n$3\r\n1-0\r\n$3\r\n2-0\r\n*0\r\n"},
		{[]string{"xautoclaim", "s", "g", "c8", "0", "0", "count", "0"}, "-ERR COUNT must be > 0\r\n"},
		{[]string{"xautoclaim", "s", "g", "c8", "0", "x"}, "-ERR Invalid stream ID specified as stream command argument\r\n"},
		{[]string{"xautoclaim", "s", "g", "c8", "x", "0"}, "-ERR Invalid min-idle-time argument for XAUTOCLAIM\r\n"},
		{[]string{"xautoclaim", "s", "g", "c8", "0", "0", "foo"}, "-ERR syntax error\r\n"},
		{[]string{"xautoclaim", "s", "nog", "c8", "0", "0"}, "-NOGROUP No such key 's' or consumer group 'nog'\r\n"},
		{[]string{"xdel", "s", "1-0"}, ":1\r\n"},
		{[]string{"xautoclaim", "s", "g", "c7", "0", "0", "count", "1", "justid"}, "*3\r\n$3\r\n2-0\r\n*0\r\n*1\r\n$3\r\n1-0\r\n"},
		{[]string{"xautoclaim", "s", "g", "c7", "0", "0", "justid"}, "*3\r\n$3\r\n0-0\r\n*3\r\n$3\r\n2-0\r\n$3\r\n3-0\r\n$3\r\n4-0\r\n*0\r\n"},
		{[]string{"xautoclaim", "s", "g", "c7", "0", "(2-0", "justid"}, "*3\r\n$3\r\n0-0\r\n*2\r\n$3\r\n3-0\r\n$3\r\n4-0\r\n*0\r\n"},
		{[]string{"xpending", "s", "g"}, "*4\r\n:3\r\n$3\r\n2-0\r\n$3\r\n4-0\r\n*1\r\n*2\r\n$2\r\nc7\r\n$1\r\n3\r\n"},
		{[]string{"xreadgroup", "group", "g", "c7", "streams", "s", "0"}, "*1\r\n*2\r\n$1\r\ns\r\n*3\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n*2\r\n$3\r\n4-0\r\n*2\r\n$1\r\nd\r\n$1\r\n4\r\n"},
		{[]string{"xreadgroup", "group", "g", "c7", "count", "1", "streams", "s", "0"}, "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n"},
		{[]string{"xgroup", "setid", "s", "g", "0"}, "+OK\r\n"},
		{[]string{"xreadgroup", "group", "g", "c6", "streams", "s", ">"}, "*1\r\n*2\r\n$1\r\ns\r\n*3\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n*2\r\n$3\r\n4-0\r\n*2\r\n$1\r\nd\r\n$1\r\n4\r\n"},
		{[]string{"xpending", "s", "g"}, "*4\r\n:3\r\n$3\r\n2-0\r\n$3\r\n4-0\r\n*1\r\n*2\r\n$2\r\nc6\r\n$1\r\n3\r\n"},
		{[]string{"xgroup", "setid", "s", "g", "$", "entriesread", "2"}, "+OK\r\n"},
		{[]string{"xinfo", "groups", "s"}, "*1\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:5\r\n$7\r\npending\r\n:3\r\n$17\r\nlast-delivered-id\r\n$3\r\n4-0\r\n$12\r\nentries-read\r\n:2\r\n$3\r\nlag\r\n:2\r\n"},
		{[]string{"xgroup", "setid", "s", "g", "-"}, "+OK\r\n"},
		{[]string{"xgroup", "setid", "s", "g", "+", "entriesread", "-1"}, "+OK\r\n"},
		{[]string{"xinfo", "groups", "s"}, "*1\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:5\r\n$7\r\npending\r\n:3\r\n$17\r\nlast-delivered-id\r\n$41\r\n18446744073709551615-18446744073709551615\r\n$12\r\nentries-read\r\n$-1\r\n$3\r\nlag\r\n$-1\r\n"},
		{[]string{"xadd", "s", "5-0", "e", "5"}, "$3\r\n5-0\r\n"},
		{[]string{"xinfo", "groups", "s"}, "*1\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:5\r\n$7\r\npending\r\n:3\r\n$17\r\nlast-delivered-id\r\n$41\r\n18446744073709551615-18446744073709551615\r\n$12\r\nentries-read\r\n$-1\r\n$3\r\nlag\r\n$-1\r\n"},
		{[]string{"xreadgroup", "group", "g", "c5", "noack", "streams", "s", ">"}, "*-1\r\n"},
		{[]string{"xinfo", "groups", "s"}, "*1\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:5\r\n$7\r\npending\r\n:3\r\n$17\r\nlast-delivered-id\r\n$41\r\n18446744073709551615-18446744073709551615\r\n$12\r\nentries-read\r\n$-1\r\n$3\r\nlag\r\n$-1\r\n"},
		{[]string{"xack", "s", "g", "2-0", "3-0", "4-0", "9-9"}, ":3\r\n"},
		{[]string{"xpending", "s", "g"}, "*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n"},
		{[]string{"xgroup", "delconsumer", "s", "g", "c7"}, ":0\r\n"},
		{[]string{"xgroup", "createconsumer", "s", "g", "c7"}, ":1\r\n"},
		{[]string{"xgroup", "create", "s", "g2", "$"}, "+OK\r\n"},
		{[]string{"xadd", "s", "6-0", "f", "6"}, "$3\r\n6-0\r\n"},
		{[]string{"xinfo", "groups", "s"}, "*2\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:5\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$41\r\n18446744073709551615-18446744073709551615\r\n$12\r\nentries-read\r\n$-1\r\n$3\r\nlag\r\n$-1\r\n*12\r\n$4\r\nname\r\n$2\r\ng2\r\n$9\r\nconsumers\r\n:0\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$3\r\n5-0\r\n$12\r\nentries-read\r\n$-1\r\n$3\r\nlag\r\n$-1\r\n"},
		{[]string{"xreadgroup", "group", "g2", "c", "streams", "s", ">"}, "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n6-0\r\n*2\r\n$1\r\nf\r\n$1\r\n6\r\n"},
		{[]string{"xinfo", "groups", "s"}, "*2\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:5\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$41\r\n18446744073709551615-18446744073709551615\r\n$12\r\nentries-read\r\n$-1\r\n$3\r\nlag\r\n$-1\r\n*12\r\n$4\r\nname\r\n$2\r\ng2\r\n$9\r\nconsumers\r\n:1\r\n$7\r\npending\r\n:1\r\n$17\r\nlast-delivered-id\r\n$3\r\n6-0\r\n$12\r\nentries-read\r\n:6\r\n$3\r\nlag\r\n:0\r\n"},
		{[]string{"xread", "streams", "s", "0"}, "*1\r\n*2\r\n$1\r\ns\r\n*5\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n*2\r\n$3\r\n4-0\r\n*2\r\n$1\r\nd\r\n$1\r\n4\r\n*2\r\n$3\r\n5-0\r\n*2\r\n$1\r\ne\r\n$1\r\n5\r\n*2\r\n$3\r\n6-0\r\n*2\r\n$1\r\nf\r\n$1\r\n6\r\n"},
		{[]string{"xgroup", "create", "nx", "g", "0"}, "-ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.\r\n"},
		{[]string{"xgroup", "create", "nx", "g", "$", "mkstream", "entriesread", "3"}, "+OK\r\n"},
		{[]string{"xinfo", "groups", "nx"}, "*1\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:0\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$3\r\n0-0\r\n$12\r\nentries-read\r\n:3\r\n$3\r\nlag\r\n:0\r\n"},
		{[]string{"xgroup", "create", "nx", "g3", "0", "mkstream", "mkstream"}, "+OK\r\n"},
		{[]string{"xgroup", "destroy", "nx", "g"}, ":1\r\n"},
		{[]string{"xgroup", "destroy", "nx", "g"}, ":0\r\n"},
		{[]string{"xgroup", "destroy", "nokey", "g"}, "-ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.\r\n"},
		{[]string{"set", "str", "v"}, "+OK\r\n"},
		{[]string{"xgroup", "create", "str", "g", "0", "mkstream"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"xreadgroup", "group", "g", "c", "streams", "str", ">"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"xack", "str", "g", "1-0"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"xpending", "str", "g"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"xclaim", "str", "g", "c", "0", "1-0"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"xreadgroup", "group", "g", "c", "streams", "s", "s2", ">", ">"}, "-NOGROUP No such key 's2' or consumer group 'g' in XREADGROUP with GROUP option\r\n"},
		{[]string{"xreadgroup", "group", "g", "streams", "s", ">"}, "-ERR wrong number of arguments for 'xreadgroup' command\r\n"},
		{[]string{"xread", "group", "g", "c", "streams", "s", "0"}, "-ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.\r\n"},
		{[]string{"xread", "noack", "streams", "s", "0"}, "-ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.\r\n"},
		{[]string{"xreadgroup", "group", "g", "c", "streams", "s"}, "-ERR wrong number of arguments for 'xreadgroup' command\r\n"},
		{[]string{"xgroup", "create", "s", "bad", "18446744073709551615-18446744073709551615"}, "+OK\r\n"},
		{[]string{"xinfo", "groups", "s"}, "*3\r\n*12\r\n$4\r\nname\r\n$3\r\nbad\r\n$9\r\nconsumers\r\n:0\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$41\r\n18446744073709551615-18446744073709551615\r\n$12\r\nentries-read\r\n$-1\r\n$3\r\nlag\r\n$-1\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:5\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$41\r\n18446744073709551615-18446744073709551615\r\n$12\r\nentries-read\r\n$-1\r\n$3\r\nlag\r\n$-1\r\n*12\r\n$4\r\nname\r\n$2\r\ng2\r\n$9\r\nconsumers\r\n:1\r\n$7\r\npending\r\n:1\r\n$17\r\nlast-delivered-id\r\n$3\r\n6-0\r\n$12\r\nentries-read\r\n:6\r\n$3\r\nlag\r\n:0\r\n"},
		{[]string{"xinfo", "stream", "s"}, "*20\r\n$6\r\nlength\r\n:5\r\n$15\r\nradix-tree-keys\r\n:1\r\n$16\r\nradix-tree-nodes\r\n:2\r\n$17\r\nlast-generated-id\r\n$3\r\n6-0\r\n$20\r\nmax-deleted-entry-id\r\n$3\r\n1-0\r\n$13\r\nentries-added\r\n:6\r\n$23\r\nrecorded-first-entry-id\r\n$3\r\n2-0\r\n$6\r\ngroups\r\n:3\r\n$11\r\nfirst-entry\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n$10\r\nlast-entry\r\n*2\r\n$3\r\n6-0\r\n*2\r\n$1\r\nf\r\n$1\r\n6\r\n"},
		{[]string{"copy", "s", "s2"}, ":1\r\n"},
		{[]string{"xinfo", "groups", "s2"}, "*3\r\n*12\r\n$4\r\nname\r\n$3\r\nbad\r\n$9\r\nconsumers\r\n:0\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$41\r\n18446744073709551615-18446744073709551615\r\n$12\r\nentries-read\r\n$-1\r\n$3\r\nlag\r\n$-1\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:5\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$41\r\n18446744073709551615-18446744073709551615\r\n$12\r\nentries-read\r\n$-1\r\n$3\r\nlag\r\n$-1\r\n*12\r\n$4\r\nname\r\n$2\r\ng2\r\n$9\r\nconsumers\r\n:1\r\n$7\r\npending\r\n:1\r\n$17\r\nlast-delivered-id\r\n$3\r\n6-0\r\n$12\r\nentries-read\r\n:6\r\n$3\r\nlag\r\n:0\r\n"},
	} {
		if got := h.raw(c.args...); got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.args, got, c.want)
		}
	}
}

// Delivery and seen times are the entry's clock; idle times are the reader's clock
// minus them. XCLAIM's IDLE and TIME set the delivery time, and a TIME in the future is
// now, as in Redis.
func TestStreamGroupTimes(t *testing.T) {
	h := newHarness(t)
	h.now = 10_000
	h.expect("1-0", "XADD", "s", "1-0", "f", "v")
	h.expect("2-0", "XADD", "s", "2-0", "f", "v")
	h.expect(Status("OK"), "XGROUP", "CREATE", "s", "g", "0")
	h.do("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
	h.now = 10_250
	h.expect([]any{[]any{"1-0", "alice", 250, 1}, []any{"2-0", "alice", 250, 1}}, "XPENDING", "s", "g", "-", "+", "10")
	h.expect([]any{}, "XPENDING", "s", "g", "IDLE", "300", "-", "+", "10")
	h.expect([]any{"2-0"}, "XCLAIM", "s", "g", "bob", "200", "2-0", "IDLE", "50", "JUSTID")
	h.expect([]any{"1-0"}, "XCLAIM", "s", "g", "bob", "0", "1-0", "TIME", "99999999", "JUSTID")
	h.now = 10_300
	h.expect([]any{[]any{"1-0", "bob", 50, 1}, []any{"2-0", "bob", 100, 1}}, "XPENDING", "s", "g", "-", "+", "10")
	h.expect([]any{[]any{"name", "alice", "pending", 0, "idle", 300}, []any{"name", "bob", "pending", 2, "idle", 50}}, "XINFO", "CONSUMERS", "s", "g")
	h.expect([]any{"0-0", []any{"2-0"}, []any{}}, "XAUTOCLAIM", "s", "g", "carol", "60", "0", "JUSTID") // 1-0 is 50 ms idle
	h.expect(2, "XACK", "s", "g", "1-0", "2-0")
}

// Groups survive a snapshot whole, and COPY copies them apart from the original.
func TestStreamGroupsSnapshotAndCopy(t *testing.T) {
	a := newHarness(t)
	for i := uint64(1); i <= 20; i++ {
		a.do("XADD", "s", itoa(i)+"-0", "f", itoa(i))
	}
	a.expect(Status("OK"), "XGROUP", "CREATE", "s", "g", "0")
	a.expect(Status("OK"), "XGROUP", "CREATE", "s", "h", "$", "ENTRIESREAD", "20")
	a.do("XREADGROUP", "GROUP", "g", "c1", "COUNT", "5", "STREAMS", "s", ">")
	a.do("XREADGROUP", "GROUP", "g", "c2", "COUNT", "5", "STREAMS", "s", ">")
	a.do("XCLAIM", "s", "g", "c3", "0", "2-0", "7-0")
	a.expect(1, "XDEL", "s", "3-0")
	a.expect(1, "XGROUP", "CREATECONSUMER", "s", "h", "idle")
	b := a.restored()
	checks := [][]string{{"XINFO", "STREAM", "s", "FULL"}, {"XINFO", "GROUPS", "s"}, {"XPENDING", "s", "g"}, {"XINFO", "CONSUMERS", "s", "h"}}
	for _, cmd := range checks {
		if x, y := a.raw(cmd...), b.raw(cmd...); x != y {
			t.Fatalf("%q after restore:\n got %q\nwant %q", cmd, y, x)
		}
	}
	a.expect(1, "COPY", "s", "t")
	before := a.raw("XINFO", "STREAM", "t", "FULL")
	a.expect(3, "XACK", "s", "g", "1-0", "2-0", "4-0")
	a.expect(1, "XGROUP", "DESTROY", "s", "h")
	if after := a.raw("XINFO", "STREAM", "t", "FULL"); after != before {
		t.Fatalf("changing the original changed its copy:\n%q\n%q", before, after)
	}
}
