#!/usr/bin/python3
"""Scripted checks with kazoo (Debian's python3-kazoo): kazoo_check.py HOST:PORT.

Prints one line per failed check and exits non-zero if any failed. Every node lives under
a fresh /kazoo-<pid> so that a rerun against the same server starts clean.
"""
import os
import sys
import threading

from kazoo.client import KazooClient
from kazoo.exceptions import (BadVersionError, NodeExistsError, NoNodeError, RuntimeInconsistency,
                              NotEmptyError, NoAuthError, RolledBackError)
from kazoo.security import make_digest_acl, OPEN_ACL_UNSAFE

hosts = sys.argv[1]
root = "/kazoo-%d" % os.getpid()
failures = []


def check(name, cond, detail=""):
    if not cond:
        failures.append(name)
        print("FAIL: %s %s" % (name, detail), flush=True)


def raises(name, exc, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except exc:
        return
    except Exception as e:  # noqa: BLE001 - report whatever came instead
        check(name, False, "raised %r, want %s" % (e, exc.__name__))
        return
    check(name, False, "did not raise %s" % exc.__name__)


def client():
    c = KazooClient(hosts=hosts, timeout=10)
    c.start(timeout=15)
    return c


def waiter():
    got = []
    ev = threading.Event()

    def fn(event):
        got.append(event)
        ev.set()
    return fn, got, ev


zk = client()
other = client()

# create/get/set/delete
check("create", zk.create(root, b"top") == root)
data, st = zk.get(root)
check("get", data == b"top" and st.version == 0 and st.data_length == 3, (data, st))
st = zk.set(root, b"two", version=0)
check("set", st.version == 1 and st.data_length == 3, st)
raises("BadVersion on set", BadVersionError, zk.set, root, b"x", version=0)
raises("NodeExists", NodeExistsError, zk.create, root, b"")
raises("NoNode on get", NoNodeError, zk.get, root + "/missing")
zk.create(root + "/d")
raises("BadVersion on delete", BadVersionError, zk.delete, root + "/d", version=5)
zk.delete(root + "/d", version=0)
check("delete", zk.exists(root + "/d") is None)
zk.create(root + "/ne/child", makepath=True)
raises("NotEmpty", NotEmptyError, zk.delete, root + "/ne")
zk.delete(root + "/ne", recursive=True)
check("recursive delete", zk.exists(root + "/ne") is None)

# sequential names: the parent's cversion counts every child ever created
names = [zk.create(root + "/seq/n-", b"", sequence=True, makepath=True) for _ in range(3)]
check("sequential names", names == [root + "/seq/n-%010d" % i for i in range(3)], names)

# include_data (create2)
path, st = zk.create(root + "/inc", b"abc", include_data=True)
check("include_data", path == root + "/inc" and st.data_length == 3 and st.version == 0
      and st.czxid == st.mzxid, (path, st))

# watches: data, child, exists on a missing node; each fires once
fn, got, ev = waiter()
zk.get(root + "/inc", watch=fn)
other.set(root + "/inc", b"changed")
check("data watch", ev.wait(10) and got[0].type == "CHANGED" and got[0].path == root + "/inc", got)
ev.clear()
other.set(root + "/inc", b"again")
zk.sync(root)
zk.exists(root)  # a round trip after the change: a stale watch would have fired by now
check("data watch fires once", len(got) == 1, got)

fn, got, ev = waiter()
zk.get_children(root + "/seq", watch=fn)
other.create(root + "/seq/extra")
check("child watch", ev.wait(10) and got[0].type == "CHILD" and got[0].path == root + "/seq", got)

fn, got, ev = waiter()
check("exists on missing", zk.exists(root + "/later", watch=fn) is None)
other.create(root + "/later")
check("exists watch", ev.wait(10) and got[0].type == "CREATED" and got[0].path == root + "/later", got)

fn, got, ev = waiter()
zk.exists(root + "/later", watch=fn)
other.delete(root + "/later")
check("delete watch", ev.wait(10) and got[0].type == "DELETED", got)

# multi: commit, and atomic rollback
t = zk.transaction()
t.create(root + "/tx1", b"1")
t.create(root + "/tx2", b"2")
t.set_data(root + "/tx1", b"11")
t.check(root + "/tx1", 1)
res = t.commit()
check("multi commit", res[:2] == [root + "/tx1", root + "/tx2"] and res[2].version == 1 and res[3] is True, res)
t = zk.transaction()
t.create(root + "/tx3")
t.delete(root + "/tx2", version=7)
t.set_data(root + "/tx1", b"x")
res = t.commit()
check("multi rollback results", len(res) == 3 and isinstance(res[0], RolledBackError)
      and isinstance(res[1], BadVersionError) and isinstance(res[2], RuntimeInconsistency), res)
check("multi rollback is atomic", zk.exists(root + "/tx3") is None and zk.get(root + "/tx1")[0] == b"11")

# sync
check("sync", zk.sync(root) == root)

# ephemerals go with their session
tmp = client()
tmp.create(root + "/eph", b"", ephemeral=True)
check("ephemeral owner", zk.exists(root + "/eph").ephemeralOwner == tmp.client_id[0])
tmp.stop()
tmp.close()
check("ephemeral removed on close", zk.exists(root + "/eph") is None)

# ACLs with digest auth
acl = make_digest_acl("alice", "secret", all=True)
zk.create(root + "/private", b"p", acl=[acl])
raises("NoAuth without auth", NoAuthError, other.get, root + "/private")
authed = client()
authed.add_auth("digest", "alice:secret")
check("get with auth", authed.get(root + "/private")[0] == b"p")
acls, st = authed.get_acls(root + "/private")
check("get_acls", len(acls) == 1 and acls[0].id.scheme == "digest" and acls[0].id.id == acl.id.id, acls)
authed.set_acls(root + "/private", OPEN_ACL_UNSAFE)
check("set_acls", other.get(root + "/private")[0] == b"p")
authed.stop()

zk.delete(root, recursive=True)
for c in (zk, other):
    c.stop()
    c.close()
if failures:
    print("%d kazoo checks failed" % len(failures))
    sys.exit(1)
print("kazoo checks passed")
