package kvstore

import (
	"testing"
)

// Stream commands against replies taken from redis-server 7.0.15 (RESP2): the same
// sequence, run there on an empty database, with the bytes it answered.
func TestStreamCommandsAsRedis(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"del", "s"}, ":0\r\n"},
		{[]string{"xadd", "s", "1-1", "a", "1"}, "$3\r\n1-1\r\n"},
		{[]string{"xadd", "s", "1-1", "a", "1"}, "-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n"},
		{[]string{"xadd", "s", "0-0", "a", "1"}, "-ERR The ID specified in XADD must be greater than 0-0\r\n"},
		{[]string{"xadd", "s2", "0-0", "a", "1"}, "-ERR The ID specified in XADD must be greater than 0-0\r\n"},
		{[]string{"xadd", "s", "1-*", "b", "2"}, "$3\r\n1-2\r\n"},
		{[]string{"xadd", "s", "1", "c", "3"}, "-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n"},
		{[]string{"xadd", "s", "2", "c"}, "-ERR wrong number of arguments for 'xadd' command\r\n"},
		{[]string{"xadd", "s", "abc", "c", "3"}, "-ERR Invalid stream ID specified as stream command argument\r\n"},
		{[]string{"xadd", "s", "3-abc", "c", "3"}, "-ERR Invalid stream ID specified as stream command argument\r\n"},
		{[]string{"xadd", "s", "nomkstream", "5", "x", "y"}, "$3\r\n5-0\r\n"},
		{[]string{"xadd", "nx", "nomkstream", "5", "x", "y"}, "$-1\r\n"},
		{[]string{"xadd", "s", "maxlen", "-1", "6", "x", "y"}, "-ERR The MAXLEN argument must be >= 0.\r\n"},
		{[]string{"xadd", "s", "maxlen", "2", "minid", "1", "6", "x", "y"}, "-ERR syntax error, MAXLEN and MINID options at the same time are not compatible\r\n"},
		{[]string{"xadd", "s", "maxlen", "2", "limit", "5", "6", "x", "y"}, "-ERR syntax error, LIMIT cannot be used without the special ~ option\r\n"},
		{[]string{"xadd", "s", "maxlen", "~", "2", "limit", "-1", "6", "x", "y"}, "-ERR The LIMIT argument must be >= 0.\r\n"},
		{[]string{"xadd", "s", "maxlen", "=", "2", "7", "x", "y"}, "$3\r\n7-0\r\n"},
		{[]string{"xadd", "s", "limit", "5", "8", "x", "y"}, "-ERR syntax error, LIMIT cannot be used without specifying a trimming strategy\r\n"},
		{[]string{"xadd", "s", "minid", "1", "maxlen", "2", "8", "x", "y"}, "-ERR syntax error, MAXLEN and MINID options at the same time are not compatible\r\n"},
		{[]string{"xadd", "s", "minid", "x", "8", "x", "y"}, "-ERR Invalid stream ID specified as stream command argument\r\n"},
		{[]string{"xadd", "s", "minid", "=", "6", "9", "x", "y"}, "$3\r\n9-0\r\n"},
		{[]string{"xlen", "s"}, ":2\r\n"},
		{[]string{"xrange", "s", "-", "+"}, "*2\r\n*2\r\n$3\r\n7-0\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n*2\r\n$3\r\n9-0\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n"},
		{[]string{"xrange", "s", "-", "+", "count", "0"}, "*-1\r\n"},
		{[]string{"xrange", "nx", "-", "+", "count", "0"}, "*0\r\n"},
		{[]string{"xrange", "s", "-", "+", "count", "-1"}, "*-1\r\n"},
		{[]string{"xrange", "s", "(1", "+"}, "*2\r\n*2\r\n$3\r\n7-0\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n*2\r\n$3\r\n9-0\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n"},
		{[]string{"xrange", "s", "(-", "+"}, "-ERR Invalid stream ID specified as stream command argument\r\n"},
		{[]string{"xrange", "s", "-", "(+"}, "-ERR Invalid stream ID specified as stream command argument\r\n"},
		{[]string{"xrange", "s", "2", "1"}, "*0\r\n"},
		{[]string{"xrange", "s", "x", "+"}, "-ERR Invalid stream ID specified as stream command argument\r\n"},
		{[]string{"xrange", "s", "7", "9", "count", "1"}, "*1\r\n*2\r\n$3\r\n7-0\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n"},
		{[]string{"xrevrange", "s", "+", "-", "count", "1"}, "*1\r\n*2\r\n$3\r\n9-0\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n"},
		{[]string{"xrevrange", "s", "9", "(7"}, "*1\r\n*2\r\n$3\r\n9-0\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n"},
		{[]string{"xrange", "s", "(18446744073709551615-18446744073709551615", "+"}, "-ERR invalid start ID for the interval\r\n"},
		{[]string{"xrange", "s", "-", "(0-0"}, "-ERR invalid end ID for the interval\r\n"},
		{[]string{"xrange", "s", "1", "2", "count"}, "-ERR syntax error\r\n"},
		{[]string{"xrange", "s", "1", "2", "foo", "1"}, "-ERR syntax error\r\n"},
		{[]string{"xdel", "s", "7", "8", "1-1"}, ":1\r\n"},
		{[]string{"xtrim", "s", "maxlen", "0"}, ":1\r\n"},
		{[]string{"xlen", "s"}, ":0\r\n"},
		{[]string{"xinfo", "stream", "s"}, "*20\r\n$6\r\nlength\r\n:0\r\n$15\r\nradix-tree-keys\r\n:0\r\n$16\r\nradix-tree-nodes\r\n:1\r\n$17\r\nlast-generated-id\r\n$3\r\n9-0\r\n$20\r\nmax-deleted-entry-id\r\n$3\r\n7-0\r\n$13\r\nentries-added\r\n:5\r\n$23\r\nrecorded-first-entry-id\r\n$3\r\n0-0\r\n$6\r\ngroups\r\n:0\r\n$11\r\nfirst-entry\r\n$-1\r\n$10\r\nlast-entry\r\n$-1\r\n"},
		{[]string{"xadd", "s", "18446744073709551615-18446744073709551615", "a", "b"}, "$41\r\n18446744073709551615-18446744073709551615\r\n"},
		{[]string{"xadd", "s", "18446744073709551615-*", "a", "b"}, "-ERR The stream has exhausted the last possible ID, unable to add more items\r\n"},
		{[]string{"xsetid", "s", "1-1"}, "-ERR The ID specified in XSETID is smaller than the target stream top item\r\n"},
		{[]string{"xsetid", "s", "99999999999999999999-0"}, "-ERR Invalid stream ID specified as stream command argument\r\n"},
		{[]string{"xsetid", "nx", "1-1"}, "-ERR no such key\r\n"},
		{[]string{"xtrim", "s", "minid", "5"}, ":0\r\n"},
		{[]string{"xtrim", "s", "foo", "5"}, "-ERR syntax error\r\n"},
		{[]string{"type", "s"}, "+stream\r\n"},
		{[]string{"xread", "streams", "s", "0"}, "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$41\r\n18446744073709551615-18446744073709551615\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{[]string{"xread", "count", "1", "streams", "s", "s2", "0", "0"}, "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$41\r\n18446744073709551615-18446744073709551615\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{[]string{"xread", "streams", "s"}, "-ERR wrong number of arguments for 'xread' command\r\n"},
		{[]string{"xread", "streams", "s", "0", "0"}, "-ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.\r\n"},
		{[]string{"xread", "block", "-1", "streams", "s", "0"}, "-ERR timeout is negative\r\n"},
		{[]string{"xread", "streams", "s", "$"}, "*-1\r\n"},
		{[]string{"xread", "count", "x", "streams", "s", "0"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"xread", "block", "x", "streams", "s", "0"}, "-ERR timeout is not an integer or out of range\r\n"},
		{[]string{"xread", "streams", "s", ">"}, "-ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.\r\n"},
		{[]string{"xdel", "s", "-"}, "-ERR Invalid stream ID specified as stream command argument\r\n"},
		{[]string{"xdel", "s", "3", "x"}, "-ERR Invalid stream ID specified as stream command argument\r\n"},
		{[]string{"xdel", "nx", "1"}, ":0\r\n"},
		{[]string{"xadd", "t", "1", "a", "b"}, "$3\r\n1-0\r\n"},
		{[]string{"xadd", "t", "2", "a", "b"}, "$3\r\n2-0\r\n"},
		{[]string{"xadd", "t", "3", "a", "b"}, "$3\r\n3-0\r\n"},
		{[]string{"xtrim", "t", "maxlen", "1"}, ":2\r\n"},
		{[]string{"xinfo", "stream", "t"}, "*20\r\n$6\r\nlength\r\n:1\r\n$15\r\nradix-tree-keys\r\n:1\r\n$16\r\nradix-tree-nodes\r\n:2\r\n$17\r\nlast-generated-id\r\n$3\r\n3-0\r\n$20\r\nmax-deleted-entry-id\r\n$3\r\n0-0\r\n$13\r\nentries-added\r\n:3\r\n$23\r\nrecorded-first-entry-id\r\n$3\r\n3-0\r\n$6\r\ngroups\r\n:0\r\n$11\r\nfirst-entry\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n$10\r\nlast-entry\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{[]string{"xsetid", "t", "3-0", "entriesadded", "0"}, "-ERR The entries_added specified in XSETID is smaller than the target stream length\r\n"},
		{[]string{"xsetid", "t", "3-0", "entriesadded", "-1"}, "-ERR entries_added must be positive\r\n"},
		{[]string{"xsetid", "t", "4-0", "maxdeletedid", "5-0"}, "-ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id\r\n"},
		{[]string{"xsetid", "t", "4-0", "maxdeletedid", "3-5"}, "+OK\r\n"},
		{[]string{"xinfo", "stream", "t"}, "*20\r\n$6\r\nlength\r\n:1\r\n$15\r\nradix-tree-keys\r\n:1\r\n$16\r\nradix-tree-nodes\r\n:2\r\n$17\r\nlast-generated-id\r\n$3\r\n4-0\r\n$20\r\nmax-deleted-entry-id\r\n$3\r\n3-5\r\n$13\r\nentries-added\r\n:3\r\n$23\r\nrecorded-first-entry-id\r\n$3\r\n3-0\r\n$6\r\ngroups\r\n:0\r\n$11\r\nfirst-entry\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n$10\r\nlast-entry\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{[]string{"xsetid", "t", "4-0", "foo"}, "-ERR syntax error\r\n"},
		{[]string{"xtrim", "t", "maxlen", "1", "limit", "1"}, "-ERR syntax error, LIMIT cannot be used without the special ~ option\r\n"},
		{[]string{"xtrim", "t"}, "-ERR wrong number of arguments for 'xtrim' command\r\n"},
		{[]string{"xtrim", "t", "maxlen", "~", "0", "limit", "0"}, ":1\r\n"},
		{[]string{"xadd", "t", "+5", "a", "b"}, "$3\r\n5-0\r\n"},
		{[]string{"xadd", "t", "6-", "a", "b"}, "-ERR Invalid stream ID specified as stream command argument\r\n"},
		{[]string{"xadd", "t", "7-+1", "a", "b"}, "$3\r\n7-1\r\n"},
		{[]string{"xadd", "t", "-1", "a", "b"}, "-ERR Invalid stream ID specified as stream command argument\r\n"},
		{[]string{"xadd", "t", "8--1", "a", "b"}, "-ERR Invalid stream ID specified as stream command argument\r\n"},
		{[]string{"xlen", "t"}, ":2\r\n"},
		{[]string{"xlen", "nx"}, ":0\r\n"},
		{[]string{"set", "str", "x"}, "+OK\r\n"},
		{[]string{"xadd", "str", "1", "a", "b"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"xrange", "str", "-", "+"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"xread", "streams", "str", "0"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"xlen", "str"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"xtrim", "str", "maxlen", "1"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"xdel", "str", "1"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"xsetid", "str", "1"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"xinfo", "stream", "str"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"xinfo", "stream", "nx"}, "-ERR no such key\r\n"},
		{[]string{"xinfo", "foo"}, "-ERR unknown subcommand 'foo'. Try XINFO HELP.\r\n"},
		{[]string{"xinfo", "help"}, "*9\r\n+XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+CONSUMERS <key> <groupname>\r\n+    Show consumers of <groupname>.\r\n+GROUPS <key>\r\n+    Show the stream consumer groups.\r\n+STREAM <key> [FULL [COUNT <count>]\r\n+    Show information about the stream.\r\n+HELP\r\n+    Prints this help.\r\n"},
		{[]string{"xinfo", "groups", "t"}, "*0\r\n"},
		{[]string{"xadd", "u", "5-5", "f1", "v1", "f2", "v2"}, "$3\r\n5-5\r\n"},
		{[]string{"xadd", "u", "5-*", "f", "v"}, "$3\r\n5-6\r\n"},
		{[]string{"xadd", "u", "6-*", "f", "v"}, "$3\r\n6-0\r\n"},
		{[]string{"xread", "count", "2", "streams", "u", "t", "0", "0"}, "*2\r\n*2\r\n$1\r\nu\r\n*2\r\n*2\r\n$3\r\n5-5\r\n*4\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf2\r\n$2\r\nv2\r\n*2\r\n$3\r\n5-6\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n*2\r\n$1\r\nt\r\n*2\r\n*2\r\n$3\r\n5-0\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n*2\r\n$3\r\n7-1\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{[]string{"xinfo", "stream", "u"}, "*20\r\n$6\r\nlength\r\n:3\r\n$15\r\nradix-tree-keys\r\n:1\r\n$16\r\nradix-tree-nodes\r\n:2\r\n$17\r\nlast-generated-id\r\n$3\r\n6-0\r\n$20\r\nmax-deleted-entry-id\r\n$3\r\n0-0\r\n$13\r\nentries-added\r\n:3\r\n$23\r\nrecorded-first-entry-id\r\n$3\r\n5-5\r\n$6\r\ngroups\r\n:0\r\n$11\r\nfirst-entry\r\n*2\r\n$3\r\n5-5\r\n*4\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf2\r\n$2\r\nv2\r\n$10\r\nlast-entry\r\n*2\r\n$3\r\n6-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"},
		{[]string{"xinfo", "stream"}, "-ERR wrong number of arguments for 'xinfo|stream' command\r\n"},
		{[]string{"xinfo", "help", "x"}, "-ERR wrong number of arguments for 'xinfo|help' command\r\n"},
		{[]string{"xinfo", "groups"}, "-ERR wrong number of arguments for 'xinfo|groups' command\r\n"},
		{[]string{"xinfo", "consumers", "t"}, "-ERR wrong number of arguments for 'xinfo|consumers' command\r\n"},
		{[]string{"xinfo", "consumers", "u", "g"}, "-NOGROUP No such consumer group 'g' for key name 'u'\r\n"},
		{[]string{"xinfo", "stream", "u", "full"}, "*18\r\n$6\r\nlength\r\n:3\r\n$15\r\nradix-tree-keys\r\n:1\r\n$16\r\nradix-tree-nodes\r\n:2\r\n$17\r\nlast-generated-id\r\n$3\r\n6-0\r\n$20\r\nmax-deleted-entry-id\r\n$3\r\n0-0\r\n$13\r\nentries-added\r\n:3\r\n$23\r\nrecorded-first-entry-id\r\n$3\r\n5-5\r\n$7\r\nentries\r\n*3\r\n*2\r\n$3\r\n5-5\r\n*4\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf2\r\n$2\r\nv2\r\n*2\r\n$3\r\n5-6\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n*2\r\n$3\r\n6-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n$6\r\ngroups\r\n*0\r\n"},
		{[]string{"xinfo", "stream", "u", "full", "count", "1"}, "*18\r\n$6\r\nlength\r\n:3\r\n$15\r\nradix-tree-keys\r\n:1\r\n$16\r\nradix-tree-nodes\r\n:2\r\n$17\r\nlast-generated-id\r\n$3\r\n6-0\r\n$20\r\nmax-deleted-entry-id\r\n$3\r\n0-0\r\n$13\r\nentries-added\r\n:3\r\n$23\r\nrecorded-first-entry-id\r\n$3\r\n5-5\r\n$7\r\nentries\r\n*1\r\n*2\r\n$3\r\n5-5\r\n*4\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf2\r\n$2\r\nv2\r\n$6\r\ngroups\r\n*0\r\n"},
		{[]string{"xinfo", "stream", "u", "full", "count", "0"}, "*18\r\n$6\r\nlength\r\n:3\r\n$15\r\nradix-tree-keys\r\n:1\r\n$16\r\nradix-tree-nodes\r\n:2\r\n$17\r\nlast-generated-id\r\n$3\r\n6-0\r\n$20\r\nmax-deleted-entry-id\r\n$3\r\n0-0\r\n$13\r\nentries-added\r\n:3\r\n$23\r\nrecorded-first-entry-id\r\n$3\r\n5-5\r\n$7\r\nentries\r\n*3\r\n*2\r\n$3\r\n5-5\r\n*4\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf2\r\n$2\r\nv2\r\n*2\r\n$3\r\n5-6\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n*2\r\n$3\r\n6-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n$6\r\ngroups\r\n*0\r\n"},
		{[]string{"xinfo", "stream", "u", "full", "count", "-1"}, "*18\r\n$6\r\nlength\r\n:3\r\n$15\r\nradix-tree-keys\r\n:1\r\n$16\r\nradix-tree-nodes\r\n:2\r\n$17\r\nlast-generated-id\r\n$3\r\n6-0\r\n$20\r\nmax-deleted-entry-id\r\n$3\r\n0-0\r\n$13\r\nentries-added\r\n:3\r\n$23\r\nrecorded-first-entry-id\r\n$3\r\n5-5\r\n$7\r\nentries\r\n*3\r\n*2\r\n$3\r\n5-5\r\n*4\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf2\r\n$2\r\nv2\r\n*2\r\n$3\r\n5-6\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n*2\r\n$3\r\n6-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n$6\r\ngroups\r\n*0\r\n"},
		{[]string{"xinfo", "stream", "u", "full", "count", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"xinfo", "stream", "u", "full", "x"}, "-ERR unknown subcommand or wrong number of arguments for 'stream'. Try XINFO HELP.\r\n"},
		{[]string{"xinfo", "stream", "u", "full", "count"}, "-ERR unknown subcommand or wrong number of arguments for 'stream'. Try XINFO HELP.\r\n"},
		{[]string{"xinfo", "groups", "u", "x"}, "-ERR wrong number of arguments for 'xinfo|groups' command\r\n"},
		{[]string{"xinfo", "stream", "u"}, "*20\r\n$6\r\nlength\r\n:3\r\n$15\r\nradix-tree-keys\r\n:1\r\n$16\r\nradix-tree-nodes\r\n:2\r\n$17\r\nlast-generated-id\r\n$3\r\n6-0\r\n$20\r\nmax-deleted-entry-id\r\n$3\r\n0-0\r\n$13\r\nentries-added\r\n:3\r\n$23\r\nrecorded-first-entry-id\r\n$3\r\n5-5\r\n$6\r\ngroups\r\n:0\r\n$11\r\nfirst-entry\r\n*2\r\n$3\r\n5-5\r\n*4\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf2\r\n$2\r\nv2\r\n$10\r\nlast-entry\r\n*2\r\n$3\r\n6-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"},
		{[]string{"xadd", "e", "maxlen", "0", "1", "a", "b"}, "$3\r\n1-0\r\n"},
		{[]string{"xlen", "e"}, ":0\r\n"},
		{[]string{"xinfo", "stream", "e"}, "*20\r\n$6\r\nlength\r\n:0\r\n$15\r\nradix-tree-keys\r\n:0\r\n$16\r\nradix-tree-nodes\r\n:1\r\n$17\r\nlast-generated-id\r\n$3\r\n1-0\r\n$20\r\nmax-deleted-entry-id\r\n$3\r\n0-0\r\n$13\r\nentries-added\r\n:1\r\n$23\r\nrecorded-first-entry-id\r\n$3\r\n0-0\r\n$6\r\ngroups\r\n:0\r\n$11\r\nfirst-entry\r\n$-1\r\n$10\r\nlast-entry\r\n$-1\r\n"},
		{[]string{"exists", "e"}, ":1\r\n"},
		{[]string{"xadd", "e", "2", "a", "b"}, "$3\r\n2-0\r\n"},
		{[]string{"xdel", "e", "2"}, ":1\r\n"},
		{[]string{"exists", "e"}, ":1\r\n"},
		{[]string{"xrange", "e", "-", "+"}, "*0\r\n"},
		{[]string{"xrange", "u2", "-", "+"}, "*0\r\n"},
		{[]string{"xlen", "u3"}, ":0\r\n"},
	} {
		if got := h.raw(c.args...); got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.args, got, c.want)
		}
	}
}

// XADD with an automatic ID takes the entry's clock, and a clock that went back (or an
// ID set ahead with XSETID) continues the sequence: the IDs every replica generates are
// the same, and grow.
func TestStreamAutoIDsFromTheEntryClock(t *testing.T) {
	h := newHarness(t)
	h.now = 1000
	h.expect("1000-0", "XADD", "s", "*", "f", "v")
	h.expect("1000-1", "XADD", "s", "*", "f", "v")
	h.now = 999
	h.expect("1000-2", "XADD", "s", "*", "f", "v")
	h.now = 2000
	h.expect("2000-0", "XADD", "s", "*", "f", "v")
	h.expect("2000-1", "XADD", "s", "2000-*", "f", "v")
	h.expect("2001-0", "XADD", "s", "2001-*", "f", "v")
	h.expect(Status("OK"), "XSETID", "s", "5000-7")
	h.expect("5000-8", "XADD", "s", "*", "f", "v")
}

// A stream survives a snapshot whole: entries, and the counters XINFO reports.
func TestStreamSnapshotRoundTrip(t *testing.T) {
	a := newHarness(t)
	for i := uint64(1); i <= 250; i++ {
		a.do("RPUSH", "l", "x")
		a.do("XADD", "s", "MAXLEN", "200", itoa(i)+"-*", "f", itoa(i), "g", "")
	}
	a.expect(2, "XDEL", "s", "100-0", "249-0")
	a.expect(Status("OK"), "XSETID", "s", "300-1", "ENTRIESADDED", "400")
	a.expect("1-1", "XADD", "empty", "1-1", "f", "v")
	a.expect(1, "XDEL", "empty", "1-1")
	b := a.restored()
	for _, cmd := range [][]string{{"XINFO", "STREAM", "s"}, {"XRANGE", "s", "-", "+"}, {"XINFO", "STREAM", "empty"}, {"TYPE", "empty"}} {
		if x, y := a.raw(cmd...), b.raw(cmd...); x != y {
			t.Fatalf("%q after restore:\n got %q\nwant %q", cmd, y, x)
		}
	}
}
