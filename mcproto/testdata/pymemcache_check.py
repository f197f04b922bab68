#!/usr/bin/python3
"""Scripted checks with pymemcache (Debian's python3-pymemcache 3.5.2): pymemcache_check.py HOST:PORT.

Prints one line per failed check and exits non-zero if any failed. Every key lives under
a fresh pymc-<pid>- prefix so that a rerun against the same server starts clean (but for
flush_all, the last check). Every expectation holds against memcached 1.6.18 (-I 1m).
"""
import os
import re
import sys
import threading
import time

from pymemcache import serde
from pymemcache.client.base import Client, PooledClient
from pymemcache.client.hash import HashClient
from pymemcache.exceptions import (MemcacheClientError, MemcacheIllegalInputError, MemcacheServerError,
                                   MemcacheUnknownCommandError)

host, port = sys.argv[1].rsplit(":", 1)
server = (host, int(port))
prefix = "pymc-%d-" % os.getpid()
failures = []


def check(name, cond, detail=""):
    if not cond:
        failures.append(name)
        print("FAIL: %s %s" % (name, detail), flush=True)


def raises(name, exc, fn, *args, **kw):
    """Checks that fn raises exc (exactly that class) and returns the exception."""
    try:
        fn(*args, **kw)
    except Exception as e:  # noqa: BLE001 - report whatever came instead
        if type(e) is not exc:
            check(name, False, "raised %r, want %s" % (e, exc.__name__))
            return None
        return e
    check(name, False, "did not raise %s" % exc.__name__)
    return None


def k(name):
    return prefix + name


def gone_within(c, key, secs):
    """Polls until key is a miss; False if it is still there after secs."""
    deadline = time.monotonic() + secs
    while c.get(key) is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


class FlagsSerde(object):
    """Stores bytes as given and reads (value, flags): what the server kept as flags."""

    def serialize(self, key, value):
        return value, 0

    def deserialize(self, key, value, flags):
        return value, flags


def client(**kw):
    return Client(server, connect_timeout=5, timeout=10, **kw)


mc = client(default_noreply=False)  # bytes in, bytes out, waiting for every reply
raw = client()  # pymemcache's defaults: noreply=True for storage commands
fl = client(serde=FlagsSerde(), default_noreply=False)
pk = client(serde=serde.pickle_serde, default_noreply=False)
legacy = client(serializer=serde.python_memcache_serializer,
                deserializer=serde.python_memcache_deserializer, default_noreply=False)

# set/get: bytes, str (encoded as ascii by the default serde), binary-safe, empty
check("set bytes", mc.set(k("b"), b"bytes") is True)
check("get bytes", mc.get(k("b")) == b"bytes", mc.get(k("b")))
check("set str", mc.set(k("s"), "text") is True)
check("get str comes back as bytes", mc.get(k("s")) == b"text", mc.get(k("s")))
blob = bytes(range(256)) + b"\r\nEND\r\n"
mc.set(k("blob"), blob)
check("binary-safe value", mc.get(k("blob")) == blob, mc.get(k("blob")))
mc.set(k("empty"), b"")
check("empty value", mc.get(k("empty")) == b"", mc.get(k("empty")))
check("get missing", mc.get(k("missing")) is None)
check("get missing default", mc.get(k("missing"), default=b"dflt") == b"dflt")
check("overwrite", mc.set(k("b"), b"again") and mc.get(k("b")) == b"again", mc.get(k("b")))

# flags: explicit, and as the serdes set them
fl.set(k("f"), b"v", flags=42)
check("explicit flags", fl.get(k("f")) == (b"v", 42), fl.get(k("f")))
fl.set(k("fmax"), b"v", flags=4294967295)
check("flags 2^32-1", fl.get(k("fmax")) == (b"v", 4294967295), fl.get(k("fmax")))
check("default serde stores flags 0", fl.get(k("b")) == (b"again", 0), fl.get(k("b")))
pk.set(k("int"), 42)
check("pickle_serde int", pk.get(k("int")) == 42 and type(pk.get(k("int"))) is int, pk.get(k("int")))
check("int flags", fl.get(k("int")) == (b"42", serde.FLAG_INTEGER), fl.get(k("int")))
obj = {"a": [1, 2, 3], "b": ("t", None), "c": 1.5}
pk.set(k("dict"), obj)
check("pickle_serde dict", pk.get(k("dict")) == obj, pk.get(k("dict")))
check("pickle flags", fl.get(k("dict"))[1] == serde.FLAG_PICKLE, fl.get(k("dict")))
pk.set(k("text"), "h\u00e9llo \u2603")
check("pickle_serde text", pk.get(k("text")) == "h\u00e9llo \u2603", pk.get(k("text")))
check("text flags", fl.get(k("text")) == ("h\u00e9llo \u2603".encode("utf8"), serde.FLAG_TEXT), fl.get(k("text")))
pk.set(k("pbytes"), b"raw")
check("pickle_serde bytes", pk.get(k("pbytes")) == b"raw", pk.get(k("pbytes")))
check("legacy serializer reads pickle_serde's values", legacy.get(k("dict")) == obj and legacy.get(k("int")) == 42,
      (legacy.get(k("dict")), legacy.get(k("int"))))
legacy.set(k("legacy"), [1, "two"])
check("pickle_serde reads legacy serializer's values", pk.get(k("legacy")) == [1, "two"], pk.get(k("legacy")))

# get_many / get_multi / gets_many
mc.set(k("m1"), b"one")
mc.set(k("m2"), b"two")
got = mc.get_many([k("m1"), k("m2"), k("missing")])
check("get_many", got == {k("m1"): b"one", k("m2"): b"two"}, got)
got = mc.get_multi([k("m2"), k("m1"), k("m1")])
check("get_multi", got == {k("m1"): b"one", k("m2"): b"two"}, got)
check("get_many of nothing", mc.get_many([]) == {})
check("get_many all missing", mc.get_many([k("missing"), k("missing2")]) == {})
got = pk.get_many([k("int"), k("dict"), k("missing")])
check("get_many with serde", got == {k("int"): 42, k("dict"): obj}, got)
got = mc.gets_many([k("m1"), k("m2"), k("missing")])
check("gets_many", sorted(got) == [k("m1"), k("m2")] and got[k("m1")][0] == b"one"
      and all(v[1].isdigit() for v in got.values()), got)

# set_many: a list of the keys that failed
failed = mc.set_many({k("sm1"): b"a", k("sm2"): "b", k("sm3"): b"c" * 1000})
check("set_many", failed == [], failed)
got = mc.get_many([k("sm1"), k("sm2"), k("sm3")])
check("set_many stored", got == {k("sm1"): b"a", k("sm2"): b"b", k("sm3"): b"c" * 1000}, got)
check("set_multi", mc.set_multi({k("sm1"): b"x", k("sm4"): b"y"}) == [] and mc.get(k("sm4")) == b"y")
failed = pk.set_many({k("psm1"): 7, k("psm2"): {"x": 1}})
check("set_many with serde", failed == [] and pk.get(k("psm1")) == 7 and pk.get(k("psm2")) == {"x": 1}, failed)

# add / replace
check("add new", mc.add(k("add"), b"first") is True)
check("add existing", mc.add(k("add"), b"second") is False)
check("add kept the value", mc.get(k("add")) == b"first", mc.get(k("add")))
check("replace missing", mc.replace(k("rep"), b"x") is False)
check("replace did not create", mc.get(k("rep")) is None)
check("replace existing", mc.replace(k("add"), b"replaced") is True)
check("replace stored", mc.get(k("add")) == b"replaced", mc.get(k("add")))

# append / prepend: the flags given are ignored, the item keeps its own
fl.set(k("ap"), b"mid", flags=5)
check("append", mc.append(k("ap"), b"-end") is True)
check("prepend", mc.prepend(k("ap"), b"start-") is True)
check("append/prepend value and flags", fl.get(k("ap")) == (b"start-mid-end", 5), fl.get(k("ap")))
fl.append(k("ap"), b"!", flags=9)
check("append keeps flags", fl.get(k("ap")) == (b"start-mid-end!", 5), fl.get(k("ap")))
check("append missing", mc.append(k("apm"), b"x") is False)
check("prepend missing", mc.prepend(k("apm"), b"x") is False)
check("append/prepend did not create", mc.get(k("apm")) is None)

# cas via gets
mc.set(k("cas"), b"v1")
value, token = mc.gets(k("cas"))
check("gets", value == b"v1" and isinstance(token, bytes) and token.isdigit(), (value, token))
check("cas", mc.cas(k("cas"), b"v2", token) is True)
check("cas stored", mc.get(k("cas")) == b"v2", mc.get(k("cas")))
check("stale cas", mc.cas(k("cas"), b"v3", token) is False)
check("stale cas kept the value", mc.get(k("cas")) == b"v2", mc.get(k("cas")))
_, token2 = mc.gets(k("cas"))
check("cas unique changed", token2 != token, (token, token2))
mc.set(k("cas"), b"v4")
_, token3 = mc.gets(k("cas"))
check("set changes the cas unique", token3 != token2 and mc.cas(k("cas"), b"v5", token2) is False, (token2, token3))
check("cas as int", mc.cas(k("cas"), b"v6", int(token3)) is True and mc.get(k("cas")) == b"v6")
check("cas missing", mc.cas(k("casm"), b"x", token) is None)
check("cas did not create", mc.get(k("casm")) is None)
check("gets missing", mc.gets(k("casm")) == (None, None), mc.gets(k("casm")))
_, token = pk.gets(k("int"))
check("cas with serde", pk.cas(k("int"), {"n": 43}, token) is True and pk.get(k("int")) == {"n": 43}, pk.get(k("int")))
raises("cas token must be digits", MemcacheIllegalInputError, mc.cas, k("cas"), b"x", "12a")

# incr / decr
mc.set(k("n"), b"10")
check("incr", mc.incr(k("n"), 5) == 15)
check("get after incr", mc.get(k("n")) == b"15", mc.get(k("n")))
check("decr", mc.decr(k("n"), 3) == 12)
check("decr below 0 stays 0", mc.decr(k("n"), 100) == 0)
# memcached pads a number that got shorter with spaces (README: nanokv does not); int()
# reads either, as a pymemcache user would
check("get after decr to 0", int(mc.get(k("n"))) == 0, mc.get(k("n")))
check("incr grows a digit", mc.set(k("n9"), b"99") and mc.incr(k("n9"), 1) == 100 and mc.get(k("n9")) == b"100",
      mc.get(k("n9")))
mc.set(k("nmax"), b"18446744073709551615")
check("incr wraps at 2^64", mc.incr(k("nmax"), 1) == 0)
check("incr by 0", mc.incr(k("n9"), 0) == 100)
check("incr missing", mc.incr(k("nm"), 1) is None)
check("decr missing", mc.decr(k("nm"), 1) is None)
check("incr did not create", mc.get(k("nm")) is None)
e = raises("incr non-numeric", MemcacheClientError, mc.incr, k("b"), 1)
check("incr non-numeric message", e is None or b"non-numeric" in e.args[0], e)
e = raises("decr non-numeric", MemcacheClientError, mc.decr, k("b"), 1)
check("decr non-numeric message", e is None or b"non-numeric" in e.args[0], e)
check("non-numeric value kept", mc.get(k("b")) == b"again", mc.get(k("b")))
e = raises("incr negative delta", MemcacheClientError, mc.incr, k("n9"), -1)
check("negative delta message", e is None or b"invalid numeric delta" in e.args[0], e)
e = raises("incr delta 2^64", MemcacheClientError, mc.incr, k("n9"), 2 ** 64)
check("delta 2^64 message", e is None or b"invalid numeric delta" in e.args[0], e)
raises("incr delta not an int", MemcacheIllegalInputError, mc.incr, k("n9"), "1")
check("incr noreply", mc.incr(k("n9"), 5, noreply=True) is None)
check("incr noreply applied", mc.get(k("n9")) == b"105", mc.get(k("n9")))
check("pickle_serde counter", pk.set(k("pn"), 5) and pk.incr(k("pn"), 2) == 7 and pk.get(k("pn")) == 7,
      pk.get(k("pn")))
check("incr keeps the int flag", fl.get(k("pn")) == (b"7", serde.FLAG_INTEGER), fl.get(k("pn")))

# delete / delete_many
check("delete", mc.delete(k("m1")) is True)
check("delete missing", mc.delete(k("m1")) is False)
check("deleted", mc.get(k("m1")) is None)
check("delete noreply default", raw.delete(k("m2")) is True and raw.get(k("m2")) is None)
check("delete_many", mc.delete_many([k("sm1"), k("sm2"), k("missing")]) is True)
check("delete_many deleted", mc.get_many([k("sm1"), k("sm2"), k("sm3")]) == {k("sm3"): b"c" * 1000})
check("delete_multi noreply", raw.delete_multi([k("sm3"), k("sm4")]) is True
      and raw.get_many([k("sm3"), k("sm4")]) == {})
check("delete_many of nothing", mc.delete_many([]) is True)

# touch
mc.set(k("t"), b"v")
check("touch", mc.touch(k("t"), 100) is True)
check("touch missing", mc.touch(k("tm"), 100) is False)
check("touch did not create", mc.get(k("tm")) is None)
check("touch kept the value", mc.get(k("t")) == b"v")
check("touch noreply default", raw.touch(k("tm"), 1) is True)

# expiry: bounded polling, never a fixed sleep
mc.set(k("e1"), b"v", expire=1)
check("expire=1 expires", gone_within(mc, k("e1"), 10))
mc.set(k("e2"), b"v", expire=2)
check("expire=2 there at first", mc.get(k("e2")) == b"v")  # two clock ticks away: at least 1 s
check("expire=2 expires", gone_within(mc, k("e2"), 10))
mc.set(k("et"), b"v")
check("touch to 1 s", mc.touch(k("et"), 1) is True)
check("touched item expires", gone_within(mc, k("et"), 10))
mc.set(k("et0"), b"v", expire=1)
check("touch to 0 keeps it", mc.touch(k("et0"), 0) is True)
time.sleep(2.5)  # past the first TTL: the item must still be there (a fixed sleep for a presence)
check("touched to no expiry", mc.get(k("et0")) == b"v", mc.get(k("et0")))
check("negative expire", mc.set(k("eneg"), b"v", expire=-1) is True and mc.get(k("eneg")) is None)
check("add over an expired item", mc.add(k("e1"), b"new") is True and mc.get(k("e1")) == b"new")

# pymemcache's default noreply=True: set returns True without waiting, and the set is
# there for the next request on the connection and then for another connection
check("noreply set", raw.set(k("nr"), b"quiet") is True)
check("noreply set readable", raw.get(k("nr")) == b"quiet", raw.get(k("nr")))
check("noreply set readable elsewhere", mc.get(k("nr")) == b"quiet", mc.get(k("nr")))
check("noreply add existing says True", raw.add(k("nr"), b"other") is True)
check("noreply replace missing says True", raw.replace(k("nrm"), b"other") is True)
check("noreply add/replace did nothing", raw.get_many([k("nr"), k("nrm")]) == {k("nr"): b"quiet"},
      raw.get_many([k("nr"), k("nrm")]))
check("noreply set_many", raw.set_many({k("nr1"): b"1", k("nr2"): b"2"}) == []
      and raw.get_many([k("nr1"), k("nr2")]) == {k("nr1"): b"1", k("nr2"): b"2"})
check("noreply append", raw.append(k("nr"), b"!") is True and raw.get(k("nr")) == b"quiet!")
raw[k("item")] = b"dict-style"
check("dict-style set/get", raw[k("item")] == b"dict-style")
del raw[k("item")]
try:
    raw[k("item")]
    check("dict-style del", False, "still there")
except KeyError:
    pass

# values near and over the item size limit (-I 1m: item header, key and value together)
big = b"x" * (1024 * 1024 - 1024)
check("near 1 MiB stored", mc.set(k("big"), big) is True)
check("near 1 MiB read", mc.get(k("big")) == big, len(mc.get(k("big")) or b""))
e = raises("over the limit refused", MemcacheServerError, mc.set, k("big"), b"y" * (1024 * 1024 + 1))
check("over the limit message", e is None or e.args[0] == b"object too large for cache", e)
check("refused set dropped the old value", mc.get(k("big")) is None)
raises("exactly 1 MiB refused", MemcacheServerError, mc.set, k("big1"), b"y" * (1024 * 1024))
check("connection usable after refusal", mc.get(k("b")) == b"again")
raises("set_many with one too large", MemcacheServerError, mc.set_many, {k("sbig"): b"z" * (2 * 1024 * 1024)})
# a refused noreply set says nothing (memcached 1.6.18 -I 1m): the next reply is the get's
check("noreply set over the limit", raw.set(k("nrbig"), b"z" * (1024 * 1024 + 1)) is True)
try:
    got = raw.get(k("nr"))
    check("noreply refusal sends nothing", got == b"quiet!", got)
except Exception as e:  # noqa: BLE001
    check("noreply refusal sends nothing", False, "next get raised %r" % e)
check("noreply refused set not stored", mc.get(k("nrbig")) is None)

# keys: refused by pymemcache before anything is sent
for name, key in [("space", "a b"), ("tab", "a\tb"), ("newline", "a\nb"), ("carriage return", "a\rb"),
                  ("nul", "a\x00b"), ("non-ascii", "cl\u00e9"), ("too long", "k" * 251),
                  ("too long with prefix", prefix + "k" * (251 - len(prefix)))]:
    raises("key with %s refused" % name, MemcacheIllegalInputError, mc.set, key, b"v")
    raises("get of key with %s refused" % name, MemcacheIllegalInputError, mc.get, key)
# an empty key passes pymemcache's checks: "set  0 0 1" is memcached's ERROR
raises("empty key", MemcacheUnknownCommandError, mc.set, "", b"v")
longest = prefix + "L" * (250 - len(prefix))
check("250-byte key", mc.set(longest, b"v") and mc.get(longest) == b"v")
ctl = prefix + "ctl\x01\x7f\xff"
raises("non-ascii bytes in a str key refused", MemcacheIllegalInputError, mc.set, ctl, b"v")
ctl = k("ctl\x01\x7f~")
check("control bytes in a key", mc.set(ctl, b"v") and mc.get(ctl) == b"v")
bkey = k("bytes-key").encode()
check("bytes key", mc.set(bkey, b"v") and mc.get(bkey) == b"v" and mc.get_many([bkey]) == {bkey: b"v"})
uc = client(default_noreply=False, allow_unicode_keys=True)
ukey = k("\u043a\u043b\u044e\u0447")
check("allow_unicode_keys", uc.set(ukey, b"uni") and uc.get(ukey) == b"uni"
      and mc.get(ukey.encode("utf8")) == b"uni", uc.get(ukey))
pc = client(default_noreply=False, key_prefix=k("ns:").encode())
check("key_prefix", pc.set("x", b"pfx") and pc.get("x") == b"pfx" and mc.get(k("ns:x")) == b"pfx"
      and pc.get_many(["x", "y"]) == {"x": b"pfx"}, pc.get_many(["x", "y"]))

# stats and version
st = mc.stats()
for name in (b"pid", b"uptime", b"time", b"pointer_size", b"curr_connections", b"total_connections",
             b"cmd_get", b"cmd_set", b"cmd_flush", b"cmd_touch", b"get_hits", b"get_misses", b"delete_hits",
             b"delete_misses", b"incr_hits", b"incr_misses", b"decr_hits", b"decr_misses", b"cas_hits",
             b"cas_misses", b"cas_badval", b"touch_hits", b"touch_misses", b"bytes_read", b"bytes_written",
             b"limit_maxbytes", b"threads", b"bytes", b"curr_items", b"total_items", b"evictions"):
    check("stats %s" % name.decode(), type(st.get(name)) is int, st.get(name))
check("stats version", isinstance(st.get(b"version"), bytes), st.get(b"version"))
check("stats rusage_user", isinstance(st.get(b"rusage_user"), float), st.get(b"rusage_user"))
check("stats counts", st.get(b"curr_items", 0) >= 10 and st.get(b"get_hits", 0) > 0
      and st.get(b"cmd_set", 0) > 0 and st.get(b"cas_badval", 0) > 0 and st.get(b"incr_misses", 0) > 0, st)
mc.get(k("b"))
st2 = mc.stats()
check("get_hits counts", st2.get(b"get_hits", 0) == st.get(b"get_hits", 0) + 1,
      (st.get(b"get_hits"), st2.get(b"get_hits")))
settings = mc.stats("settings")
check("stats settings item_size_max", settings.get(b"item_size_max") == 1024 * 1024, settings.get(b"item_size_max"))
check("stats settings maxbytes", type(settings.get(b"maxbytes")) is int, settings.get(b"maxbytes"))
# pymemcache reads cas_enabled as an int; memcached says yes, which it leaves as bytes
check("stats settings cas_enabled", settings.get(b"cas_enabled") == b"yes", settings.get(b"cas_enabled"))
version = mc.version()
check("version", re.match(rb"^\d+\.\d+\.\d+", version) is not None, version)
check("version as stats", version == st.get(b"version"), (version, st.get(b"version")))

# PooledClient: threads sharing a pool
pool = PooledClient(server, connect_timeout=5, timeout=10, max_pool_size=4, default_noreply=False)
check("pooled set/get", pool.set(k("pool"), b"0") and pool.get(k("pool")) == b"0")
errors = []


def bump():
    try:
        for _ in range(50):
            pool.incr(k("pool"), 1)
    except Exception as e:  # noqa: BLE001
        errors.append(e)


threads = [threading.Thread(target=bump) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
check("pooled concurrent incr", not errors and pool.get(k("pool")) == b"200", (errors, pool.get(k("pool"))))
check("pooled get_many", pool.get_many([k("pool"), k("missing")]) == {k("pool"): b"200"})
check("pooled delete", pool.delete(k("pool")) is True and pool.get(k("pool")) is None)
pool.close()

# HashClient over one server, with pickle_serde
hc = HashClient([server], serde=serde.pickle_serde, connect_timeout=5, timeout=10, default_noreply=False)
check("hash set/get", hc.set(k("h1"), {"h": 1}) and hc.get(k("h1")) == {"h": 1}, hc.get(k("h1")))
check("hash set_many", hc.set_many({k("h2"): 2, k("h3"): "three"}) == [])
got = hc.get_many([k("h1"), k("h2"), k("h3"), k("missing")])
check("hash get_many", got == {k("h1"): {"h": 1}, k("h2"): 2, k("h3"): "three"}, got)
check("hash incr", hc.incr(k("h2"), 3) == 5 and hc.get(k("h2")) == 5)
check("hash add existing", hc.add(k("h2"), 9) is False)
value, token = hc.gets(k("h3"))
check("hash cas", hc.cas(k("h3"), "four", token) is True and hc.get(k("h3")) == "four")
check("hash touch", hc.touch(k("h3"), 100) is True)
check("hash delete", hc.delete(k("h1")) is True and hc.get(k("h1")) is None)
check("hash delete_many", hc.delete_many([k("h2"), k("h3")]) is True and hc.get_many([k("h2"), k("h3")]) == {})
hc.close()

# flush_all empties the cache (other keys of this run included): the last check
check("flush_all", mc.flush_all() is True)
got = mc.get_many([k("b"), k("s"), k("dict"), k("nr"), longest])
check("flush_all emptied", got == {}, got)
check("set after flush_all", mc.set(k("after"), b"v") and mc.get(k("after")) == b"v")
check("flush_all noreply", raw.flush_all() is True and raw.get(k("after")) is None)

for c in (mc, raw, fl, pk, legacy, uc, pc):
    c.quit()
if failures:
    print("%d pymemcache checks failed" % len(failures))
    sys.exit(1)
print("pymemcache checks passed")
