#!/usr/bin/python3
"""Scripted checks with redis-py (Debian's python3-redis): redispy_check.py HOST:PORT.

What a redis-py application does, through the client's own reply parsing: the
connection handshake, pipelines and transactions, WATCH retries, scripts, locks,
pub/sub, scans, streams, and the replies redis-py turns into Python values (INFO, CLIENT
LIST, SLOWLOG, XINFO, COMMAND, ACL GETUSER, geo with coordinates). Every expectation
holds against redis-server 7.0 too; the Go test runs the script against both.

Prints one line per failed check and exits non-zero if any failed. Every key lives under
a fresh prefix so that a rerun against the same server starts clean.
"""
import asyncio
import os
import sys
import threading
import time

import redis
import redis.asyncio
from redis.exceptions import (LockError, LockNotOwnedError, NoScriptError, ResponseError,
                              WatchError)

host, port = sys.argv[1].rsplit(":", 1)
port = int(port)
p = "rp%d:" % os.getpid()
failures = []


def check(name, cond, detail=""):
    if not cond:
        failures.append(name)
        print("FAIL: %s %r" % (name, detail), flush=True)


def raises(name, exc, fn, *args, want=None, **kw):
    """Requires fn to raise exc, and its message to start with want when given."""
    try:
        fn(*args, **kw)
    except exc as e:
        if want is not None:
            check(name, str(e).startswith(want), str(e))
        return
    except Exception as e:  # noqa: BLE001 - report whatever came instead
        check(name, False, "raised %r, want %s" % (e, exc.__name__))
        return
    check(name, False, "did not raise %s" % exc.__name__)


def deadline_poll(fn, secs=5.0):
    """Polls fn until it returns something true or secs pass; returns its last value."""
    end = time.monotonic() + secs
    while True:
        v = fn()
        if v or time.monotonic() > end:
            return v
        time.sleep(0.01)


r = redis.Redis(host=host, port=port, client_name="redispy-check")
rs = redis.Redis(host=host, port=port, decode_responses=True)

# --- the handshake and the server's self-description ---------------------------------------
check("ping", r.ping() is True)
check("client_getname", r.client_getname() in ("redispy-check", b"redispy-check"), r.client_getname())
info = r.info()
check("info parses", isinstance(info, dict) and "redis_version" in info, sorted(info)[:5])
check("info redis_version", str(info.get("redis_version", "")).count(".") == 2, info.get("redis_version"))
check("info tcp_port", info.get("tcp_port") == port, info.get("tcp_port"))
check("info keyspace dict", all(isinstance(v, dict) for k, v in info.items() if k.startswith("db")), info)
for section in ("server", "clients", "memory", "stats", "replication", "cpu", "keyspace", "persistence"):
    s = r.info(section)
    check("info %s parses" % section, isinstance(s, dict), s)
mem = r.info("memory")
check("info used_memory int", isinstance(mem.get("used_memory"), int), mem.get("used_memory"))
clients = r.client_list()
me = [c for c in clients if c.get("name") == "redispy-check"]
check("client_list has me", len(me) == 1, clients)
if me:
    check("client_list fields", me[0].get("cmd") == "client|list" and "addr" in me[0] and "id" in me[0], me[0])
ci = r.client_info()
check("client_info", ci.get("name") == "redispy-check", ci)
check("client_id", isinstance(r.client_id(), int))
t = r.time()
check("time", isinstance(t, tuple) and len(t) == 2 and abs(t[0] - time.time()) < 60, t)
cfg = r.config_get("maxmemory*")
check("config_get", cfg.get("maxmemory") == "0" and "maxmemory-policy" in cfg, cfg)
check("lastsave", r.lastsave() is not None)
cmds = r.command()
check("command parses", "get" in cmds and cmds["get"]["arity"] == 2 and "readonly" in cmds["get"]["flags"],
      cmds.get("get"))
check("command_count", r.command_count() == len(cmds), (r.command_count(), len(cmds)))
check("dbsize int", isinstance(r.dbsize(), int))

# --- strings --------------------------------------------------------------------------------
k = p + "s"
check("set", r.set(k, "v1") is True)
check("set nx existing", r.set(k, "v2", nx=True) is None)
check("set get", r.set(k, "v2", get=True) == b"v1")
check("get", r.get(k) == b"v2")
check("set xx px", r.set(k, "v3", xx=True, px=100000) is True)
check("pttl", 0 < r.pttl(k) <= 100000, r.pttl(k))
check("persist", r.persist(k) is True and r.ttl(k) == -1)
check("getex", r.getex(k, ex=50) == b"v3" and 0 < r.ttl(k) <= 50)
check("mset", r.mset({p + "a": 1, p + "b": 2.5, p + "c": "x"}) is True)
check("mget", r.mget([p + "a", p + "b", p + "nope", p + "c"]) == [b"1", b"2.5", None, b"x"])
check("msetnx", r.msetnx({p + "a": 9, p + "new": 1}) is False and r.get(p + "a") == b"1")
check("incr", r.incr(p + "a") == 2 and r.incrby(p + "a", 10) == 12)
check("incrbyfloat", r.incrbyfloat(p + "b", 0.25) == 2.75)
raises("incr on a string", ResponseError, r.incr, p + "c", want="value is not an integer or out of range")
check("append strlen", r.append(p + "c", "yz") == 3 and r.strlen(p + "c") == 3)
check("getrange", r.getrange(p + "c", 1, -1) == b"yz")
check("setrange", r.setrange(p + "c", 5, "!") == 6 and r.get(p + "c") == b"xyz\x00\x00!")
check("getdel", r.getdel(p + "c") == b"xyz\x00\x00!" and r.exists(p + "c") == 0)
check("setbit bitcount", r.setbit(p + "bits", 7, 1) == 0 and r.bitcount(p + "bits") == 1)
check("bitfield", r.bitfield(p + "bf").incrby("u8", 0, 200).incrby("u8", 0, 100).execute() == [200, 44])
check("bitpos", r.bitpos(p + "bits", 1) == 7)
check("lcs", r.lcs(p + "nope1", p + "nope2") == b"" if hasattr(r, "lcs") else True)
check("decoded get", rs.get(p + "a") == "12")
check("type", r.type(p + "a") == b"string" and rs.type(p + "missing") == "none")
raises("wrong type", ResponseError, r.lpush, p + "a", "x",
       want="WRONGTYPE Operation against a key holding the wrong kind of value")
raises("unknown command", ResponseError, r.execute_command, "NOSUCHCMD", "a",
       want="unknown command 'NOSUCHCMD', with args beginning with: 'a' ")
raises("wrong arity", ResponseError, r.execute_command, "GET",
       want="wrong number of arguments for 'get' command")
check("object encoding", r.object("encoding", p + "a") == b"int")
check("memory usage", isinstance(r.memory_usage(p + "a"), int))
check("expire flags", r.expire(p + "a", 100, nx=True) is True and r.expire(p + "a", 50, gt=True) is False)
check("expiretime", r.expiretime(p + "a") > time.time())
check("rename", r.rename(p + "a", p + "a2") is True and r.get(p + "a2") == b"12")
check("copy", r.copy(p + "a2", p + "a3") is True and r.get(p + "a3") == b"12")
dumped = r.dump(p + "a3")
check("dump restore", r.restore(p + "a4", 0, dumped) == b"OK" and r.get(p + "a4") == b"12")
raises("restore busy", ResponseError, r.restore, p + "a4", 0, dumped, want="BUSYKEY Target key name already exists.")
check("unlink", r.unlink(p + "a3", p + "a4", p + "nope") == 2)

# --- hashes, lists, sets, sorted sets ---------------------------------------------------------
h = p + "h"
check("hset mapping", r.hset(h, mapping={"f1": "1", "f2": "two"}) == 2)
check("hgetall", rs.hgetall(h) == {"f1": "1", "f2": "two"})
check("hincrby", r.hincrby(h, "f1", 5) == 6)
check("hincrbyfloat", r.hincrbyfloat(h, "f1", 0.5) == 6.5)
check("hmget", r.hmget(h, ["f2", "nope"]) == [b"two", None])
check("hrandfield", set(rs.hrandfield(h, 5)) == {"f1", "f2"})
check("hscan_iter", sorted(rs.hscan_iter(h)) == [("f1", "6.5"), ("f2", "two")])
check("hdel hlen", r.hdel(h, "f1", "nope") == 1 and r.hlen(h) == 1)

lst = p + "l"
check("rpush", r.rpush(lst, 1, 2, 3, 4) == 4)
check("lrange", r.lrange(lst, 0, -1) == [b"1", b"2", b"3", b"4"])
check("lpop count", r.lpop(lst, 2) == [b"1", b"2"])
check("lpos", r.lpos(lst, "4") == 1)
check("linsert", r.linsert(lst, "before", "4", "x") == 3)
check("lmove", r.lmove(lst, p + "l2", "RIGHT", "LEFT") == b"4")
check("blpop", r.blpop([p + "empty", lst], timeout=1) == (lst.encode(), b"3"))
check("blpop timeout", r.blpop([p + "empty"], timeout=0.1) is None)
check("lmpop", r.lmpop(2, p + "empty", lst, direction="LEFT") == [lst.encode(), [b"x"]])

st = p + "set"
check("sadd", r.sadd(st, "a", "b", "c") == 3)
check("smembers", r.smembers(st) == {b"a", b"b", b"c"})
check("smismember", r.smismember(st, ["a", "z"]) == [1, 0])
check("sinter", r.sinter(st, p + "nope") == set())
check("sscan_iter", sorted(r.sscan_iter(st)) == [b"a", b"b", b"c"])
check("spop", r.spop(st) in (b"a", b"b", b"c") and r.scard(st) == 2)

z = p + "z"
check("zadd", r.zadd(z, {"a": 1, "b": 2.5, "c": -1}) == 3)
check("zadd incr", r.zadd(z, {"a": 2}, incr=True) == 3.0)
check("zrange withscores", r.zrange(z, 0, -1, withscores=True) == [(b"c", -1.0), (b"b", 2.5), (b"a", 3.0)])
check("zrange byscore limit", r.zrange(z, "(0", "+inf", byscore=True, offset=1, num=1) == [b"a"])
check("zrevrangebyscore", r.zrevrangebyscore(z, 10, 0, withscores=True) == [(b"a", 3.0), (b"b", 2.5)])
check("zscore", r.zscore(z, "b") == 2.5 and r.zscore(z, "nope") is None)
check("zmscore", r.zmscore(z, ["a", "nope"]) == [3.0, None])
check("zrank", r.zrank(z, "a") == 2 and r.zrevrank(z, "a") == 0)
check("zpopmin", r.zpopmin(z) == [(b"c", -1.0)])
check("bzpopmax", r.bzpopmax([z], timeout=1) == (z.encode(), b"a", 3.0))
check("zscan_iter", list(r.zscan_iter(z)) == [(b"b", 2.5)])
check("zunionstore", r.zunionstore(p + "zu", {z: 2, p + "nope": 1}) == 1 and r.zscore(p + "zu", "b") == 5.0)
check("zrangestore", r.zrangestore(p + "zr", z, 0, -1) == 1)
check("zinter withscores", r.zinter([z, p + "zu"], withscores=True) == [(b"b", 7.5)])

g = p + "geo"
check("geoadd", r.geoadd(g, [13.361389, 38.115556, "Palermo", 15.087269, 37.502669, "Catania"]) == 2)
d = r.geodist(g, "Palermo", "Catania", unit="km")
check("geodist", d is not None and abs(d - 166.2742) < 0.01, d)
res = r.geosearch(g, longitude=15, latitude=37, radius=200, unit="km", withdist=True, withcoord=True, sort="ASC")
check("geosearch parses", len(res) == 2 and res[0][0] == b"Catania" and isinstance(res[0][1], float)
      and isinstance(res[0][2], tuple), res)
check("geopos", abs(r.geopos(g, "Palermo")[0][0] - 13.361389) < 1e-5)
check("pfadd pfcount", r.pfadd(p + "hll", "a", "b", "c") == 1 and r.pfcount(p + "hll") == 3)

# --- scans ---------------------------------------------------------------------------------------
for i in range(30):
    r.set("%sscan:%d" % (p, i), i)
found = set(rs.scan_iter(match=p + "scan:*", count=7))
check("scan_iter", len(found) == 30, len(found))
check("scan_iter type", set(rs.scan_iter(match=p + "*", _type="zset")) >= {p + "z", p + "zu", p + "zr"})
check("keys", len(r.keys(p + "scan:1*")) == 11)
check("sort", r.sort(lst + "nope") == [] and r.sort(p + "l2") == [b"4"])

# --- pipelines, transactions, WATCH ----------------------------------------------------------
pipe = r.pipeline(transaction=False)
for i in range(100):
    pipe.incr(p + "pipe")
pipe.get(p + "pipe")
out = pipe.execute()
check("pipeline", out[:3] == [1, 2, 3] and out[-1] == b"100", out[-3:])
pipe = r.pipeline()  # MULTI/EXEC
pipe.set(p + "tx", "1").incr(p + "tx").lpush(p + "tx", "x").get(p + "tx")
out = pipe.execute(raise_on_error=False)
check("transaction result", out[0] is True and out[1] == 2 and isinstance(out[2], ResponseError)
      and out[3] == b"2", out)
pipe = r.pipeline()
pipe.set(p + "tx2", "1").execute_command("NOSUCHCMD")
try:
    pipe.execute()
    check("transaction queued error", False, "EXEC ran")
except ResponseError as e:
    check("transaction queued error", "EXECABORT" in str(e) or "unknown command" in str(e), str(e))
check("transaction discarded", r.exists(p + "tx2") == 0)


def double(pipe):
    v = int(pipe.get(p + "w") or 0)
    pipe.multi()
    pipe.set(p + "w", v * 2 + 1)


check("transaction helper", r.transaction(double, p + "w") == [True] and r.get(p + "w") == b"1")
with r.pipeline() as pipe:
    pipe.watch(p + "w")
    r.set(p + "w", "changed")  # another client, as far as the watch is concerned
    pipe.multi()
    pipe.set(p + "w", "mine")
    raises("watch conflict", WatchError, pipe.execute)
check("watch kept other's write", r.get(p + "w") == b"changed")

# --- scripts and locks ----------------------------------------------------------------------------
r.script_flush()
add = r.register_script("return redis.call('INCRBY', KEYS[1], ARGV[1])")
check("script via EVALSHA fallback", add(keys=[p + "lua"], args=[5]) == 5 and add(keys=[p + "lua"], args=[2]) == 7)
check("script_exists", r.script_exists(add.sha) == [True])
raises("evalsha missing", NoScriptError, r.evalsha, "0" * 40, 0)
check("eval table", r.eval("return {1, 'two', {3}}", 0) == [1, b"two", [3]])
raises("eval error", ResponseError, r.eval, "return redis.call('INCR', KEYS[1])", 1, p + "h")
check("eval_ro", r.eval_ro("return redis.call('GET', KEYS[1])", 1, p + "lua") == b"7")
lib = "#!lua name=%s\nredis.register_function('echo%d', function(keys, args) return args[1] end)" % (
    "lib" + str(os.getpid()), os.getpid())
check("function_load", r.function_load(lib, replace=True) == ("lib" + str(os.getpid())).encode())
check("fcall", r.fcall("echo%d" % os.getpid(), 0, "hi") == b"hi")

lock = r.lock(p + "lock", timeout=5, blocking_timeout=0.2)
check("lock acquire", lock.acquire() is True)
check("lock owned", lock.owned() and lock.locked())
other = r.lock(p + "lock", blocking_timeout=0.1)
check("lock contended", other.acquire() is False)
check("lock extend", lock.extend(5) is True and r.pttl(p + "lock") > 5000)
check("lock reacquire", lock.reacquire() is True)
lock.release()
check("lock released", not lock.locked())
raises("lock release twice", LockError, lock.release)
stolen = r.lock(p + "lock2", timeout=5)
stolen.acquire()
r.set(p + "lock2", "someone else")
raises("lock not owned", LockNotOwnedError, stolen.release)

# --- pub/sub ---------------------------------------------------------------------------------------
ps = r.pubsub()
ps.subscribe(p + "ch")
ps.psubscribe(p + "pat*")
got = [deadline_poll(lambda: ps.get_message(timeout=0.1)) for _ in range(2)]
check("subscribe confirmations", [m["type"] for m in got] == ["subscribe", "psubscribe"], got)
check("publish", r.publish(p + "ch", "hello") == 1 and r.publish(p + "pattern", "x") == 1)
m1 = deadline_poll(lambda: ps.get_message(timeout=0.1))
m2 = deadline_poll(lambda: ps.get_message(timeout=0.1))
check("message", m1 and m1["type"] == "message" and m1["data"] == b"hello", m1)
check("pmessage", m2 and m2["type"] == "pmessage" and m2["pattern"] == (p + "pat*").encode(), m2)
check("pubsub_numsub", r.pubsub_numsub(p + "ch") == [((p + "ch").encode(), 1)])
check("pubsub_channels", (p + "ch").encode() in r.pubsub_channels(p + "*"))
ps.close()
heard = []
ps = r.pubsub(ignore_subscribe_messages=True)
ps.subscribe(**{p + "cb": lambda m: heard.append(m["data"])})
thread = ps.run_in_thread(sleep_time=0.01)
deadline_poll(lambda: r.pubsub_numsub(p + "cb")[0][1] == 1)
r.publish(p + "cb", "via thread")
deadline_poll(lambda: heard)
thread.stop()
thread.join(5)
check("run_in_thread", heard == [b"via thread"], heard)
ps.close()

# --- streams ---------------------------------------------------------------------------------------
x = p + "x"
id1 = r.xadd(x, {"f": "1"})
id2 = r.xadd(x, {"f": "2"}, maxlen=10, approximate=False)
check("xlen", r.xlen(x) == 2)
check("xrange", r.xrange(x) == [(id1, {b"f": b"1"}), (id2, {b"f": b"2"})])
check("xread", r.xread({x: "0"}, count=1) == [[x.encode(), [(id1, {b"f": b"1"})]]])
check("xgroup_create", r.xgroup_create(x, "g", id="0") is True)
raises("xgroup busy", ResponseError, r.xgroup_create, x, "g", want="BUSYGROUP Consumer Group name already exists")
rd = r.xreadgroup("g", "c1", {x: ">"}, count=5)
check("xreadgroup", len(rd) == 1 and len(rd[0][1]) == 2, rd)
pend = r.xpending(x, "g")
check("xpending summary", pend["pending"] == 2 and pend["consumers"] == [{"name": b"c1", "pending": 2}], pend)
rng = r.xpending_range(x, "g", min="-", max="+", count=10)
check("xpending_range", len(rng) == 2 and rng[0]["consumer"] == b"c1" and rng[0]["times_delivered"] == 1, rng)
check("xack", r.xack(x, "g", id1) == 1)
claimed = r.xautoclaim(x, "g", "c2", min_idle_time=0, start_id="0-0")
check("xautoclaim", len(claimed) >= 2 and [e[0] for e in claimed[1]] == [id2], claimed)
xi = r.xinfo_stream(x)
check("xinfo_stream", xi["length"] == 2 and xi["groups"] == 1 and xi["first-entry"][0] == id1
      and xi["last-entry"][0] == id2, xi)
groups = r.xinfo_groups(x)
check("xinfo_groups", len(groups) == 1 and groups[0]["name"] == b"g" and groups[0]["pending"] == 1, groups)
cons = r.xinfo_consumers(x, "g")
check("xinfo_consumers", sorted(c["name"] for c in cons) == [b"c1", b"c2"], cons)
check("xtrim", r.xtrim(x, maxlen=1, approximate=False) == 1)
bl = []


def blocked_read():
    bl.append(redis.Redis(host=host, port=port).xread({p + "xb": "$"}, block=5000))


th = threading.Thread(target=blocked_read)
th.start()
deadline_poll(lambda: any(c.get("cmd") == "xread" for c in r.client_list()))
r.xadd(p + "xb", {"k": "v"})
th.join(10)
check("xread block", bl and bl[0] and bl[0][0][1][0][1] == {b"k": b"v"}, bl)

# --- ACL, slowlog ----------------------------------------------------------------------------------
user = "rp%d" % os.getpid()
check("acl_setuser", r.acl_setuser(user, enabled=True, passwords=["+pw"], commands=["+get", "+ping"],
                                   keys=[p + "*"]) is True)
u = r.acl_getuser(user)
check("acl_getuser", u and u["enabled"] is True and isinstance(u["flags"], list) and len(u["passwords"]) == 1, u)
ru = redis.Redis(host=host, port=port, username=user, password="pw")
check("acl user ping", ru.ping() is True)
raises("acl user set refused", redis.exceptions.NoPermissionError, ru.set, p + "k", "v")
raises("acl bad password", ResponseError, redis.Redis(host=host, port=port, username=user, password="bad").ping,
       want="WRONGPASS invalid username-password pair or user is disabled.")
check("acl_deluser", r.acl_deluser(user) == 1)
check("acl_whoami", r.acl_whoami() in ("default", b"default"), r.acl_whoami())
r.slowlog_reset()
r.config_set("slowlog-log-slower-than", 0)
r.get(p + "slow")
entries = r.slowlog_get(10)
r.config_set("slowlog-log-slower-than", 10000)
check("slowlog_get parses", any(e["command"] == ("GET %sslow" % p).encode() for e in entries), entries)
if entries:
    check("slowlog fields", {"id", "start_time", "duration", "command"} <= set(entries[0]), entries[0])

# --- asyncio client -----------------------------------------------------------------------------


async def with_asyncio():
    ar = redis.asyncio.Redis(host=host, port=port)
    await ar.set(p + "async", "1")
    async with ar.pipeline(transaction=True) as tx:
        res = await tx.incr(p + "async").get(p + "async").execute()
    await ar.close()
    return res


check("asyncio pipeline", asyncio.run(with_asyncio()) == [2, b"2"])

# --- a connection pool under threads -----------------------------------------------------------
pool = redis.ConnectionPool(host=host, port=port, max_connections=8)
pr = redis.Redis(connection_pool=pool)


def hammer():
    for _ in range(200):
        pr.incr(p + "threads")


threads = [threading.Thread(target=hammer) for _ in range(8)]
for th in threads:
    th.start()
for th in threads:
    th.join(60)
check("pool under threads", r.get(p + "threads") == b"1600", r.get(p + "threads"))

# Leaves nothing behind.
keys = list(r.scan_iter(match=p + "*", count=1000))
if keys:
    r.delete(*keys)
check("cleanup", not list(r.scan_iter(match=p + "*")))
r.script_flush()
r.function_delete("lib" + str(os.getpid()))

if failures:
    print("%d failed: %s" % (len(failures), ", ".join(failures)))
    sys.exit(1)
print("all redis-py checks passed")
