package kvstore

import (
	"strings"
	"testing"
)

// eventLog is a Publisher that records keyspace events as "event(key)@db", from the
// keyevent channel, and with twins checks that each came with its keyspace twin.
type eventLog struct {
	t      *testing.T
	twins  bool
	events []string
	space  []string // "__keyspace@db__:key event", in order
}

func (l *eventLog) Publish(shard bool, channel, message []byte) int {
	ch := string(channel)
	switch {
	case strings.HasPrefix(ch, "__keyspace@"):
		l.space = append(l.space, ch+" "+string(message))
	case strings.HasPrefix(ch, "__keyevent@"):
		db, event, _ := strings.Cut(strings.TrimPrefix(ch, "__keyevent@"), "__:")
		l.events = append(l.events, event+"("+string(message)+")@"+db)
		want := "__keyspace@" + db + "__:" + string(message) + " " + event
		if n := len(l.space); l.twins && (n == 0 || l.space[n-1] != want) {
			l.t.Errorf("keyevent %s without its keyspace event %q (have %q)", ch, want, l.space)
		}
	default:
		l.t.Errorf("published on %q", ch)
	}
	return 0
}

func (l *eventLog) take() string {
	s := strings.Join(l.events, " ")
	l.events, l.space = nil, nil
	return s
}

func TestNotifyFlagsAsRedis(t *testing.T) {
	// CONFIG SET notify-keyspace-events v, then CONFIG GET, on redis-server 7.0
	for _, c := range []struct{ set, get string }{
		{"KEA", "AKE"}, {"A", "A"}, {"AKE", "AKE"}, {"Kg", "gK"}, {"gK", "gK"}, {"xeK", "xeK"},
		{"g$lshzxetdKE", "AKE"}, {"nK", "nK"}, {"mK", "Km"}, {"KEAmn", "AKEm"}, {"", ""}, {"Ez", "zE"},
	} {
		flags, ok := ParseNotifyFlags(c.set)
		if got := FormatNotifyFlags(flags); !ok || got != c.get {
			t.Errorf("%q: %q (ok %v), redis says %q", c.set, got, ok, c.get)
		}
	}
	for _, bad := range []string{"Q", "KEa", "K E"} {
		if _, ok := ParseNotifyFlags(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The events of each write, in order, as redis-server 7.0.15 published them with
// notify-keyspace-events KEAn for the same sequence of commands.
func TestKeyspaceEventsAsRedis(t *testing.T) {
	h := newHarness(t)
	log := &eventLog{t: t, twins: true}
	h.s.SetPublisher(log)
	flags, _ := ParseNotifyFlags("KEAn")
	h.s.SetNotifyFlags(flags)
	for _, c := range keyspaceEventCases {
		h.do(c.args...)
		if got := log.take(); got != c.events {
			t.Errorf("%q:\n got  %s\n want %s", c.args, got, c.events)
		}
	}
}

// A key whose TTL passed is deleted, with an "expired" event, by the next write that
// finds it or by the leader's expiry entry; reads change nothing.
func TestExpiredEvents(t *testing.T) {
	h := newHarness(t)
	log := &eventLog{t: t}
	h.s.SetPublisher(log)
	flags, _ := ParseNotifyFlags("Ex")
	h.s.SetNotifyFlags(flags)
	for _, k := range []string{"a", "b", "c"} {
		h.do("set", k, "v", "px", "50")
	}
	if got := log.take(); got != "" {
		t.Fatalf("class x only: %s", got)
	}
	h.now += 100
	h.do("get", "a")
	if got := log.take(); got != "" {
		t.Fatalf("a read published %s", got)
	}
	h.do("set", "a", "w")
	h.do("del", "b")
	if got := log.take(); got != "expired(a)@0 expired(b)@0" {
		t.Fatalf("writes over expired keys: %s", got)
	}
	h.index++
	if err := h.s.Apply(Entry{Index: h.index, Term: 1, Time: h.now, Data: AppendExpire(nil, 0, []string{"c", "a"})}, &tree{}); err != nil {
		t.Fatal(err)
	}
	if len(log.space) != 0 {
		t.Fatalf("keyspace events without K: %q", log.space)
	}
	if got := log.take(); got != "expired(c)@0" {
		t.Fatalf("expiry entry: %s", got)
	}
	h.s.SetNotifyFlags(0)
	h.do("set", "d", "v")
	if got := log.take(); got != "" {
		t.Fatalf("notifications off: %s", got)
	}
}

var keyspaceEventCases = []struct {
	args   []string
	events string
}{
	{[]string{"flushall"}, ""},
	{[]string{"set", "a", "1"}, "new(a)@0 set(a)@0"},
	{[]string{"set", "a", "2", "ex", "100"}, "set(a)@0 expire(a)@0"},
	{[]string{"set", "a", "3", "keepttl"}, "set(a)@0"},
	{[]string{"set", "a", "4", "nx"}, ""},
	{[]string{"set", "a", "5", "xx", "get"}, "set(a)@0"},
	{[]string{"set", "b", "1", "px", "100000", "get"}, "new(b)@0 set(b)@0 expire(b)@0"},
	{[]string{"setnx", "a", "1"}, ""},
	{[]string{"setnx", "c", "1"}, "new(c)@0 set(c)@0"},
	{[]string{"setex", "d", "100", "v"}, "new(d)@0 set(d)@0 expire(d)@0"},
	{[]string{"psetex", "e", "100000", "v"}, "new(e)@0 set(e)@0 expire(e)@0"},
	{[]string{"mset", "a", "1", "f", "2"}, "set(a)@0 new(f)@0 set(f)@0"},
	{[]string{"msetnx", "a", "1", "g", "2"}, ""},
	{[]string{"msetnx", "g", "1", "h", "2"}, "new(g)@0 set(g)@0 new(h)@0 set(h)@0"},
	{[]string{"getset", "a", "9"}, "set(a)@0"},
	{[]string{"getset", "i", "9"}, "new(i)@0 set(i)@0"},
	{[]string{"append", "a", "x"}, "append(a)@0"},
	{[]string{"append", "j", "x"}, "new(j)@0 append(j)@0"},
	{[]string{"setrange", "a", "0", "zz"}, "setrange(a)@0"},
	{[]string{"setrange", "k", "0", ""}, ""},
	{[]string{"setrange", "a", "0", ""}, ""},
	{[]string{"setrange", "k2", "3", "q"}, "new(k2)@0 setrange(k2)@0"},
	{[]string{"incr", "n"}, "new(n)@0 incrby(n)@0"},
	{[]string{"incrby", "n", "5"}, "incrby(n)@0"},
	{[]string{"decr", "n"}, "incrby(n)@0"},
	{[]string{"decrby", "n", "2"}, "incrby(n)@0"},
	{[]string{"incrbyfloat", "nf", "1.5"}, "new(nf)@0 incrbyfloat(nf)@0"},
	{[]string{"getdel", "a"}, "del(a)@0"},
	{[]string{"getdel", "nosuch"}, ""},
	{[]string{"getex", "d", "ex", "200"}, "expire(d)@0"},
	{[]string{"getex", "d", "persist"}, "persist(d)@0"},
	{[]string{"getex", "d", "persist"}, ""},
	{[]string{"getex", "d", "exat", "1"}, "del(d)@0"},
	{[]string{"getex", "nosuch", "ex", "10"}, ""},
	{[]string{"setbit", "bits", "7", "1"}, "new(bits)@0 setbit(bits)@0"},
	{[]string{"setbit", "bits", "7", "1"}, ""},
	{[]string{"bitop", "and", "dest", "bits", "bits"}, "new(dest)@0 set(dest)@0"},
	{[]string{"bitop", "and", "dest", "nosuch", "nosuch2"}, "del(dest)@0"},
	{[]string{"bitfield", "bf", "set", "u8", "0", "255", "get", "u8", "0"}, "new(bf)@0 setbit(bf)@0"},
	{[]string{"bitfield", "bf", "get", "u8", "0"}, ""},
	{[]string{"bitfield", "bf2", "incrby", "u8", "0", "10"}, "new(bf2)@0 setbit(bf2)@0"},
	{[]string{"pfadd", "hll", "a", "b", "c"}, "new(hll)@0 pfadd(hll)@0"},
	{[]string{"pfadd", "hll", "a"}, ""},
	{[]string{"pfadd", "hll2"}, "new(hll2)@0 pfadd(hll2)@0"},
	{[]string{"pfmerge", "hll3", "hll", "hll2"}, "new(hll3)@0 pfadd(hll3)@0"},
	{[]string{"pfcount", "hll", "hll3"}, ""},
	{[]string{"del", "c", "e", "f", "nosuch"}, "del(c)@0 del(e)@0 del(f)@0"},
	{[]string{"unlink", "g", "h"}, "del(g)@0 del(h)@0"},
	{[]string{"expire", "b", "100"}, "expire(b)@0"},
	{[]string{"expire", "b", "100", "nx"}, ""},
	{[]string{"expire", "nosuch", "100"}, ""},
	{[]string{"pexpire", "b", "200000"}, "expire(b)@0"},
	{[]string{"expireat", "b", "1"}, "del(b)@0"},
	{[]string{"set", "b", "1"}, "new(b)@0 set(b)@0"},
	{[]string{"pexpireat", "b", "1"}, "del(b)@0"},
	{[]string{"set", "b", "1"}, "new(b)@0 set(b)@0"},
	{[]string{"expire", "b", "-1"}, "del(b)@0"},
	{[]string{"set", "b", "1"}, "new(b)@0 set(b)@0"},
	{[]string{"expire", "b", "100"}, "expire(b)@0"},
	{[]string{"persist", "b"}, "persist(b)@0"},
	{[]string{"persist", "b"}, ""},
	{[]string{"set", "r1", "1"}, "new(r1)@0 set(r1)@0"},
	{[]string{"rename", "r1", "r2"}, "new(r2)@0 rename_from(r1)@0 rename_to(r2)@0"},
	{[]string{"set", "r3", "1"}, "new(r3)@0 set(r3)@0"},
	{[]string{"rename", "r2", "r3"}, "new(r3)@0 rename_from(r2)@0 rename_to(r3)@0"},
	{[]string{"renamenx", "r3", "r4"}, "new(r4)@0 rename_from(r3)@0 rename_to(r4)@0"},
	{[]string{"set", "r5", "1"}, "new(r5)@0 set(r5)@0"},
	{[]string{"renamenx", "r4", "r5"}, ""},
	{[]string{"rename", "r5", "r5"}, ""},
	{[]string{"set", "x", "1"}, "new(x)@0 set(x)@0"},
	{[]string{"set", "x", "2"}, "set(x)@0"},
	{[]string{"copy", "r4", "r6"}, "new(r6)@0 copy_to(r6)@0"},
	{[]string{"copy", "r4", "r6"}, ""},
	{[]string{"copy", "r4", "r6", "replace"}, "new(r6)@0 copy_to(r6)@0"},
	{[]string{"copy", "r4", "r7", "db", "1"}, "new(r7)@1 copy_to(r7)@1"},
	{[]string{"flushdb"}, ""},
	{[]string{"lpush", "l", "a", "b", "c"}, "new(l)@0 lpush(l)@0"},
	{[]string{"rpush", "l", "d"}, "rpush(l)@0"},
	{[]string{"lpushx", "l", "e"}, "lpush(l)@0"},
	{[]string{"lpushx", "nol", "e"}, ""},
	{[]string{"rpushx", "l", "f"}, "rpush(l)@0"},
	{[]string{"linsert", "l", "before", "a", "z"}, "linsert(l)@0"},
	{[]string{"linsert", "l", "before", "nothere", "z"}, ""},
	{[]string{"lset", "l", "0", "q"}, "lset(l)@0"},
	{[]string{"lpop", "l"}, "lpop(l)@0"},
	{[]string{"rpop", "l", "2"}, "rpop(l)@0"},
	{[]string{"lrem", "l", "1", "z"}, "lrem(l)@0"},
	{[]string{"lrem", "l", "0", "nothere"}, ""},
	{[]string{"ltrim", "l", "0", "0"}, "ltrim(l)@0"},
	{[]string{"ltrim", "l", "1", "0"}, "ltrim(l)@0 del(l)@0"},
	{[]string{"rpush", "l", "a", "b"}, "new(l)@0 rpush(l)@0"},
	{[]string{"lmove", "l", "l", "left", "right"}, "rpush(l)@0 lpop(l)@0"},
	{[]string{"lmove", "l", "l2", "left", "right"}, "new(l2)@0 rpush(l2)@0 lpop(l)@0"},
	{[]string{"lmove", "l", "l2", "left", "left"}, "lpush(l2)@0 lpop(l)@0 del(l)@0"},
	{[]string{"rpoplpush", "nol", "l2"}, ""},
	{[]string{"lmpop", "1", "l2", "left", "count", "1"}, "lpop(l2)@0"},
	{[]string{"lmpop", "2", "nol", "l2", "right", "count", "5"}, "rpop(l2)@0 del(l2)@0"},
	{[]string{"rpush", "bl", "a", "b"}, "new(bl)@0 rpush(bl)@0"},
	{[]string{"blpop", "bl", "1"}, "lpop(bl)@0"},
	{[]string{"brpop", "bl", "1"}, "rpop(bl)@0 del(bl)@0"},
	{[]string{"rpush", "bl", "a", "b"}, "new(bl)@0 rpush(bl)@0"},
	{[]string{"brpoplpush", "bl", "bl2", "1"}, "new(bl2)@0 lpush(bl2)@0 rpop(bl)@0"},
	{[]string{"blmove", "bl", "bl2", "left", "left", "1"}, "lpush(bl2)@0 lpop(bl)@0 del(bl)@0"},
	{[]string{"blmpop", "1", "1", "bl2", "left"}, "lpop(bl2)@0"},
	{[]string{"del", "bl2"}, "del(bl2)@0"},
	{[]string{"hset", "h", "a", "1", "b", "2"}, "new(h)@0 hset(h)@0"},
	{[]string{"hset", "h", "a", "1"}, "hset(h)@0"},
	{[]string{"hmset", "h", "c", "3"}, "hset(h)@0"},
	{[]string{"hsetnx", "h", "a", "1"}, ""},
	{[]string{"hsetnx", "h", "d", "1"}, "hset(h)@0"},
	{[]string{"hincrby", "h", "n", "1"}, "hincrby(h)@0"},
	{[]string{"hincrbyfloat", "h", "f", "1.5"}, "hincrbyfloat(h)@0"},
	{[]string{"hdel", "h", "a", "b", "nothere"}, "hdel(h)@0"},
	{[]string{"hdel", "h", "nothere"}, ""},
	{[]string{"hdel", "h", "c", "d", "n", "f"}, "hdel(h)@0 del(h)@0"},
	{[]string{"sadd", "s", "a", "b", "c"}, "new(s)@0 sadd(s)@0"},
	{[]string{"sadd", "s", "a"}, ""},
	{[]string{"srem", "s", "a", "x"}, "srem(s)@0"},
	{[]string{"srem", "s", "x"}, ""},
	{[]string{"smove", "s", "s2", "b"}, "srem(s)@0 new(s2)@0 sadd(s2)@0"},
	{[]string{"smove", "s", "s2", "x"}, ""},
	{[]string{"smove", "s2", "s2", "b"}, ""},
	{[]string{"smove", "s", "s2", "c"}, "srem(s)@0 del(s)@0 sadd(s2)@0"},
	{[]string{"sadd", "s", "a", "b", "c", "d"}, "new(s)@0 sadd(s)@0"},
	{[]string{"sadd", "s1", "a", "b"}, "new(s1)@0 sadd(s1)@0"},
	{[]string{"sadd", "s2", "b", "c"}, ""},
	{[]string{"sinterstore", "s3", "s1", "s2"}, "new(s3)@0 sinterstore(s3)@0"},
	{[]string{"sinterstore", "s3", "s1", "nos"}, "del(s3)@0"},
	{[]string{"sunionstore", "s3", "s1", "s2"}, "new(s3)@0 sunionstore(s3)@0"},
	{[]string{"sdiffstore", "s3", "s1", "s2"}, "sdiffstore(s3)@0"},
	{[]string{"sdiffstore", "s3", "s1", "s1"}, "del(s3)@0"},
	{[]string{"sdiffstore", "s3", "s1", "s1"}, ""},
	{[]string{"zadd", "z", "1", "a", "2", "b", "3", "c"}, "new(z)@0 zadd(z)@0"},
	{[]string{"zadd", "z", "1", "a"}, ""},
	{[]string{"zadd", "z", "5", "a"}, "zadd(z)@0"},
	{[]string{"zadd", "z", "incr", "1", "a"}, "zincr(z)@0"},
	{[]string{"zadd", "z", "nx", "1", "a"}, ""},
	{[]string{"zadd", "z", "xx", "ch", "9", "a"}, "zadd(z)@0"},
	{[]string{"zincrby", "z", "1", "b"}, "zincr(z)@0"},
	{[]string{"zrem", "z", "c", "x"}, "zrem(z)@0"},
	{[]string{"zrem", "z", "x"}, ""},
	{[]string{"zadd", "z", "1", "c", "2", "d", "3", "e"}, "zadd(z)@0"},
	{[]string{"zremrangebyscore", "z", "0", "1"}, "zremrangebyscore(z)@0"},
	{[]string{"zremrangebyrank", "z", "0", "0"}, "zremrangebyrank(z)@0"},
	{[]string{"zremrangebylex", "z", "-", "+"}, "zremrangebylex(z)@0 del(z)@0"},
	{[]string{"zremrangebyscore", "z", "100", "200"}, ""},
	{[]string{"zadd", "z", "1", "a", "2", "b", "3", "c"}, "new(z)@0 zadd(z)@0"},
	{[]string{"zpopmin", "z"}, "zpopmin(z)@0"},
	{[]string{"zpopmax", "z", "5"}, "zpopmax(z)@0 del(z)@0"},
	{[]string{"zpopmin", "z"}, ""},
	{[]string{"zadd", "z", "1", "a", "2", "b", "3", "c"}, "new(z)@0 zadd(z)@0"},
	{[]string{"bzpopmin", "z", "1"}, "zpopmin(z)@0"},
	{[]string{"bzpopmax", "z", "1"}, "zpopmax(z)@0"},
	{[]string{"zmpop", "1", "z", "min"}, "zpopmin(z)@0 del(z)@0"},
	{[]string{"bzmpop", "1", "1", "z", "max", "count", "2"}, ""},
	{[]string{"zadd", "z1", "1", "a", "2", "b"}, "new(z1)@0 zadd(z1)@0"},
	{[]string{"zadd", "z2", "1", "b", "2", "c"}, "new(z2)@0 zadd(z2)@0"},
	{[]string{"zunionstore", "z3", "2", "z1", "z2"}, "new(z3)@0 zunionstore(z3)@0"},
	{[]string{"zinterstore", "z3", "2", "z1", "z2"}, "zinterstore(z3)@0"},
	{[]string{"zdiffstore", "z3", "2", "z1", "z2"}, "zdiffstore(z3)@0"},
	{[]string{"zdiffstore", "z3", "2", "z1", "z1"}, "del(z3)@0"},
	{[]string{"zrangestore", "z4", "z1", "0", "-1"}, "new(z4)@0 zrangestore(z4)@0"},
	{[]string{"zrangestore", "z4", "z1", "5", "6"}, "del(z4)@0"},
	{[]string{"zrangestore", "z4", "z1", "5", "6"}, ""},
	{[]string{"geoadd", "g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"}, "new(g)@0 zadd(g)@0"},
	{[]string{"geoadd", "g", "13.361389", "38.115556", "Palermo"}, ""},
	{[]string{"georadius", "g", "15", "37", "200", "km", "store", "gs"}, "new(gs)@0 georadiusstore(gs)@0"},
	{[]string{"georadius", "g", "15", "37", "200", "km", "storedist", "gs2"}, "new(gs2)@0 georadiusstore(gs2)@0"},
	{[]string{"georadius", "g", "15", "37", "1", "km", "store", "gs"}, "del(gs)@0"},
	{[]string{"geosearchstore", "gs3", "g", "fromlonlat", "15", "37", "byradius", "200", "km"}, "new(gs3)@0 geosearchstore(gs3)@0"},
	{[]string{"geosearchstore", "gs3", "g", "fromlonlat", "15", "37", "byradius", "1", "km"}, "del(gs3)@0"},
	{[]string{"geosearchstore", "gs3", "g", "fromlonlat", "15", "37", "byradius", "1", "km"}, ""},
	{[]string{"rpush", "srt", "3", "1", "2"}, "new(srt)@0 rpush(srt)@0"},
	{[]string{"sort", "srt", "store", "srt2"}, "new(srt2)@0 sortstore(srt2)@0"},
	{[]string{"sort", "nosuch", "store", "srt2"}, "del(srt2)@0"},
	{[]string{"sort", "nosuch", "store", "srt2"}, ""},
	{[]string{"xadd", "st", "1-1", "f", "v"}, "new(st)@0 xadd(st)@0"},
	{[]string{"xadd", "st", "maxlen", "1", "2-1", "f", "v"}, "xadd(st)@0 xtrim(st)@0"},
	{[]string{"xadd", "st", "maxlen", "5", "3-1", "f", "v"}, "xadd(st)@0"},
	{[]string{"xadd", "st", "nomkstream", "4-1", "f", "v"}, "xadd(st)@0"},
	{[]string{"xadd", "nost", "nomkstream", "4-1", "f", "v"}, ""},
	{[]string{"xdel", "st", "3-1", "9-9"}, "xdel(st)@0"},
	{[]string{"xdel", "st", "9-9"}, ""},
	{[]string{"xtrim", "st", "maxlen", "0"}, "xtrim(st)@0"},
	{[]string{"xtrim", "st", "maxlen", "0"}, ""},
	{[]string{"xadd", "st", "5-1", "f", "v"}, "xadd(st)@0"},
	{[]string{"xsetid", "st", "6-1"}, "xsetid(st)@0"},
	{[]string{"xgroup", "create", "st", "g1", "0"}, "xgroup-create(st)@0"},
	{[]string{"xgroup", "create", "st2", "g1", "$", "mkstream"}, "new(st2)@0 xgroup-create(st2)@0"},
	{[]string{"xgroup", "setid", "st", "g1", "0"}, "xgroup-setid(st)@0"},
	{[]string{"xgroup", "createconsumer", "st", "g1", "c1"}, "xgroup-createconsumer(st)@0"},
	{[]string{"xgroup", "createconsumer", "st", "g1", "c1"}, ""},
	{[]string{"xreadgroup", "group", "g1", "c2", "count", "1", "streams", "st", ">"}, "xgroup-createconsumer(st)@0"},
	{[]string{"xack", "st", "g1", "5-1"}, ""},
	{[]string{"xclaim", "st", "g1", "c3", "0", "5-1"}, ""},
	{[]string{"xautoclaim", "st", "g1", "c4", "0", "0"}, ""},
	{[]string{"xgroup", "delconsumer", "st", "g1", "c1"}, "xgroup-delconsumer(st)@0"},
	{[]string{"xgroup", "destroy", "st", "g1"}, "xgroup-destroy(st)@0"},
	{[]string{"xgroup", "destroy", "st", "g1"}, ""},
	{[]string{"swapdb", "0", "1"}, ""},
	{[]string{"swapdb", "0", "1"}, ""},
	{[]string{"eval", "redis.call('set','lua1','x'); redis.call('lpush','lua2','y')", "0"}, "new(lua1)@0 set(lua1)@0 new(lua2)@0 lpush(lua2)@0"},
	{[]string{"flushall"}, ""},
	{[]string{"flushall"}, ""},
	{[]string{"rpush", "l", "a", "b", "c"}, "new(l)@0 rpush(l)@0"},
	{[]string{"lpop", "l", "0"}, ""},
	{[]string{"rpop", "l", "0"}, ""},
	{[]string{"lpop", "nol", "0"}, ""},
	{[]string{"linsert", "l", "after", "c", "z"}, "linsert(l)@0"},
	{[]string{"lpos", "l", "z"}, ""},
	{[]string{"lset", "l", "10", "x"}, ""},
	{[]string{"lpushx", "l"}, ""},
	{[]string{"rpush", "l"}, ""},
	{[]string{"zadd", "z", "gt", "1", "a"}, "new(z)@0 zadd(z)@0"},
	{[]string{"zadd", "z", "gt", "0", "a"}, ""},
	{[]string{"zadd", "z", "lt", "0", "a"}, "zadd(z)@0"},
	{[]string{"zadd", "z", "incr", "nan", "a"}, ""},
	{[]string{"zadd", "z", "incr", "1", "b"}, "zincr(z)@0"},
	{[]string{"zadd", "z", "xx", "incr", "1", "nosuch"}, ""},
	{[]string{"zadd", "z", "ch", "0", "a", "5", "b"}, "zadd(z)@0"},
	{[]string{"geoadd", "g", "13.361389", "38.115556", "Palermo"}, "new(g)@0 zadd(g)@0"},
	{[]string{"geoadd", "g", "13.361389", "38.5", "Palermo"}, "zadd(g)@0"},
	{[]string{"geoadd", "g", "xx", "13.361389", "38.5", "Palermo"}, ""},
	{[]string{"geoadd", "g", "nx", "13.361389", "38.1", "Palermo"}, ""},
	{[]string{"setrange", "s", "5", "x"}, "new(s)@0 setrange(s)@0"},
	{[]string{"getex", "nosuch", "ex", "10"}, ""},
	{[]string{"getex", "l", "ex", "10"}, ""},
	{[]string{"set", "k", "v", "ex", "100"}, "new(k)@0 set(k)@0 expire(k)@0"},
	{[]string{"rename", "k", "k2"}, "new(k2)@0 rename_from(k)@0 rename_to(k2)@0"},
	{[]string{"ttl", "k2"}, ""},
	{[]string{"mset", "a", "1", "a", "2"}, "new(a)@0 set(a)@0 set(a)@0"},
	{[]string{"set", "l", "v", "get"}, ""},
	{[]string{"set", "a", "v", "get"}, "set(a)@0"},
	{[]string{"bitop", "not", "nd", "a"}, "new(nd)@0 set(nd)@0"},
	{[]string{"bitop", "or", "nd", "nosuch"}, "del(nd)@0"},
	{[]string{"hincrbyfloat", "nh", "f", "1.5"}, "new(nh)@0 hincrbyfloat(nh)@0"},
	{[]string{"hincrby", "h2", "n", "notint"}, ""},
	{[]string{"hset", "h3", "f"}, ""},
	{[]string{"sadd", "s1", "a"}, "new(s1)@0 sadd(s1)@0"},
	{[]string{"smove", "s1", "l", "a"}, ""},
	{[]string{"smove", "s1", "nos", "a"}, "srem(s1)@0 del(s1)@0 new(nos)@0 sadd(nos)@0"},
	{[]string{"sadd", "s1", "a"}, "new(s1)@0 sadd(s1)@0"},
	{[]string{"set", "str", "x"}, "new(str)@0 set(str)@0"},
	{[]string{"smove", "s1", "str", "a"}, ""},
	{[]string{"xadd", "st", "1-1", "f", "v"}, "new(st)@0 xadd(st)@0"},
	{[]string{"xadd", "st", "2-1", "f", "v"}, "xadd(st)@0"},
	{[]string{"xadd", "st", "minid", "2", "3-1", "f", "v"}, "xadd(st)@0 xtrim(st)@0"},
	{[]string{"xtrim", "st", "minid", "0"}, ""},
	{[]string{"xtrim", "st", "minid", "10"}, "xtrim(st)@0"},
	{[]string{"xadd", "st", "4-1", "f", "v"}, "xadd(st)@0"},
	{[]string{"xgroup", "create", "st", "g", "0"}, "xgroup-create(st)@0"},
	{[]string{"xreadgroup", "group", "g", "c1", "streams", "st", ">"}, "xgroup-createconsumer(st)@0"},
	{[]string{"xclaim", "st", "g", "c2", "0", "3-1"}, ""},
	{[]string{"xautoclaim", "st", "g", "c3", "0", "0"}, "xgroup-createconsumer(st)@0"},
	{[]string{"xinfo", "consumers", "st", "g"}, ""},
	{[]string{"xreadgroup", "group", "g", "c4", "streams", "st", "0"}, "xgroup-createconsumer(st)@0"},
	{[]string{"eval", "redis.call('set','ea','1'); redis.call('lpush','ea','x')", "0"}, "new(ea)@0 set(ea)@0"},
	{[]string{"eval", "redis.call('set','eb','1'); return redis.pcall('lpush','eb','x')", "0"}, "new(eb)@0 set(eb)@0"},
	{[]string{"sort", "l", "store", "l2"}, ""},
	{[]string{"rpush", "srt", "1"}, "new(srt)@0 rpush(srt)@0"},
	{[]string{"sort", "srt", "by", "nosort", "store", "srt"}, "sortstore(srt)@0"},
	{[]string{"sort", "srt", "limit", "5", "5", "store", "srt"}, "del(srt)@0"},
	{[]string{"swapdb", "0", "1"}, ""},
	{[]string{"flushdb"}, ""},
	{[]string{"flushall"}, ""},
	{[]string{"set", "z1", "1"}, "new(z1)@0 set(z1)@0"},
	{[]string{"zunionstore", "z3", "1", "z1"}, ""},
	{[]string{"zadd", "z1", "1", "a"}, ""},
	{[]string{"zinterstore", "z3", "2", "z1", "nosuch"}, ""},
	{[]string{"zrangestore", "z4", "z1", "0", "-1", "byscore"}, ""},
	{[]string{"zrangestore", "z4", "z1", "0", "10", "byscore"}, ""},
	{[]string{"copy", "z4", "z4"}, ""},
	{[]string{"copy", "z4", "z5", "db", "0"}, ""},
	{[]string{"persist", "z5"}, ""},
	{[]string{"expire", "z5", "100", "gt"}, ""},
	{[]string{"expire", "z5", "200", "gt"}, ""},
	{[]string{"expire", "z5", "100", "lt"}, ""},
	{[]string{"pexpireat", "z5", "99999999999999"}, ""},
	{[]string{"incrbyfloat", "fl", "1e400"}, "new(fl)@0 incrbyfloat(fl)@0"},
	{[]string{"incrby", "ov", "9223372036854775807"}, "new(ov)@0 incrby(ov)@0"},
	{[]string{"incrby", "ov", "1"}, ""},
	{[]string{"append", "big", ""}, "new(big)@0 append(big)@0"},
	{[]string{"setbit", "bb", "0", "0"}, "new(bb)@0 setbit(bb)@0"},
	{[]string{"setbit", "bb2", "7", "0"}, "new(bb2)@0 setbit(bb2)@0"},
	{[]string{"hsetnx", "hh", "f", "v"}, "new(hh)@0 hset(hh)@0"},
	{[]string{"hsetnx", "hh", "f", "v"}, ""},
	{[]string{"srem", "nos", "a"}, ""},
	{[]string{"sinterstore", "d1", "nos", "nos2"}, ""},
	{[]string{"sunionstore", "d1", "nos"}, ""},
	{[]string{"flushall"}, ""},
	{[]string{"set", "s", "a"}, "new(s)@0 set(s)@0"},
	{[]string{"bitfield", "s", "set", "u8", "100", "0"}, "setbit(s)@0"},
	{[]string{"set", "t", "a"}, "new(t)@0 set(t)@0"},
	{[]string{"bitfield", "t", "overflow", "fail", "incrby", "u8", "100", "300"}, ""},
	{[]string{"bitfield", "t", "set", "i3", "7", "100"}, ""},
	{[]string{"bitfield", "t", "set", "i3", "7", "100"}, ""},
	{[]string{"set", "k0", "m1"}, "new(k0)@0 set(k0)@0"},
	{[]string{"bitfield", "k0", "SET", "i3", "7", "100", "OVERFLOW", "WRAP", "OVERFLOW", "FAIL"}, ""},
	{[]string{"bitfield", "n1", "set", "u1", "#1", "-9223372036854775808"}, "new(n1)@0 setbit(n1)@0"},
	{[]string{"bitfield", "n2", "incrby", "u1", "#1", "-300"}, "new(n2)@0 setbit(n2)@0"},
	{[]string{"bitfield", "n3", "overflow", "fail", "incrby", "u8", "0", "300"}, "new(n3)@0"},
	{[]string{"bitfield", "n4", "set", "i64", "0", "-1"}, "new(n4)@0 setbit(n4)@0"},
	{[]string{"bitfield", "n4", "set", "i64", "0", "-1"}, ""},
	{[]string{"bitfield", "n4", "set", "u63", "0", "-1"}, ""},
}

// memcached writes are Redis string writes, and publish as such: set (and expire for an
// exptime), append and prepend, incrby, del, expire for a touch.
func TestMemcacheKeyspaceEvents(t *testing.T) {
	h := newHarness(t)
	log := &eventLog{t: t, twins: true}
	h.s.SetPublisher(log)
	flags, _ := ParseNotifyFlags("KEA")
	h.s.SetNotifyFlags(flags)
	for _, c := range []struct {
		entry []byte
		want  string
	}{
		{set("k", "1", 0, 0), "set(k)@0"},
		{set("t", "1", 0, 100), "set(t)@0 expire(t)@0"},
		{AppendMCStore(nil, MCAppend, []byte("k"), []byte("0"), 0, 0, MCNoValue, MCNoValue), "append(k)@0"},
		{AppendMCStore(nil, MCPrepend, []byte("k"), []byte("2"), 0, 0, MCNoValue, MCNoValue), "prepend(k)@0"},
		{AppendMCStore(nil, MCAdd, []byte("k"), []byte("x"), 0, 0, MCNoValue, MCNoValue), ""},
		{AppendMCIncr(nil, []byte("k"), false, 5, MCNoValue, MCNoValue, 0, MCNoValue), "incrby(k)@0"},
		{AppendMCTouch(nil, []byte("k"), 100), "expire(k)@0"},
		{AppendMCTouch(nil, []byte("k"), 0), "persist(k)@0"},
		{AppendMCDelete(nil, []byte("k"), MCNoValue), "del(k)@0"},
		{AppendMCDelete(nil, []byte("k"), MCNoValue), ""},
	} {
		h.mc(c.entry)
		if got := log.take(); got != c.want {
			t.Errorf("%q: %s, want %s", c.entry, got, c.want)
		}
	}
}

// Key misses ("m"), as redis-server 7.0.15 published them for the same commands on
// missing keys: a read's lookups, and a write's lookups of keys it reads (lookupKeyRead),
// publish keymiss; a write's lookup of the key it writes, and OBJECT's, do not. Reads are
// also run through Apply (inside MULTI or a script they are), with the same events.
func TestKeyMissEventsAsRedis(t *testing.T) {
	h := newHarness(t)
	log := &eventLog{t: t, twins: true}
	h.s.SetPublisher(log)
	flags, _ := ParseNotifyFlags("KEm")
	h.s.SetNotifyFlags(flags)
	h.do("set", "str", "v")
	for _, c := range []struct {
		args   []string
		events string
	}{
		{[]string{"get", "nk"}, "keymiss(nk)@0"},
		{[]string{"get", "str"}, ""},
		{[]string{"mget", "str", "a", "b"}, "keymiss(a)@0 keymiss(b)@0"},
		{[]string{"exists", "nk"}, "keymiss(nk)@0"},
		{[]string{"zlexcount", "nk", "[a", "[b"}, "keymiss(nk)@0"},
		{[]string{"zrangestore", "d", "nk", "0", "1"}, "keymiss(nk)@0"},
		{[]string{"sunionstore", "d", "nk", "str2"}, "keymiss(nk)@0 keymiss(str2)@0"},
		{[]string{"object", "encoding", "nk"}, ""},
		{[]string{"pfdebug", "encoding", "nk"}, ""},
		{[]string{"bitfield", "nk", "get", "u8", "0"}, "keymiss(nk)@0"},
		{[]string{"bitfield", "nk2", "set", "u8", "0", "1"}, ""},
		{[]string{"set", "nk3", "v", "get"}, "keymiss(nk3)@0"},
		{[]string{"getdel", "nk4"}, "keymiss(nk4)@0"},
		{[]string{"del", "nk5"}, ""},
		{[]string{"incr", "nk6"}, ""},
		{[]string{"lmove", "nk7", "d", "left", "left"}, ""},
		{[]string{"smove", "nk7", "d", "m"}, ""},
		{[]string{"xack", "nk7", "g", "1-1"}, "keymiss(nk7)@0"},
		{[]string{"xautoclaim", "nk7", "g", "c", "x", "0"}, "keymiss(nk7)@0"}, // before its error
	} {
		h.do(c.args...)
		if got := log.take(); got != c.events {
			t.Errorf("%q: got %q, want %q", c.args, got, c.events)
		}
		if spec := Lookup([]byte(c.args[0])); spec.Flags&FlagWrite == 0 {
			h.applied(c.args...)
			if got := log.take(); got != c.events {
				t.Errorf("%q applied: got %q, want %q", c.args, got, c.events)
			}
		}
	}
}
