#!/usr/bin/python3
"""kazoo's recipes (Debian's python3-kazoo) against a ZooKeeper: kazoo_recipes_check.py HOSTS.

HOSTS is a comma-separated host list. With several (a cluster's members), client i is
given the list starting at member i, so that the clients' sessions land on different
members and every recipe runs across them. As in ZooKeeper, a member may serve a session
a read before it has applied another session's write: where a check reads what another
client wrote, it syncs first (or polls). Prints one line per failed check and exits
non-zero if any failed. Every node lives under a fresh /recipes-<pid>.
"""
import os
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout
from kazoo.recipe.cache import TreeCache, TreeEvent

hosts = sys.argv[1].split(",")
root = "/recipes-%d" % os.getpid()
failures = []
WAIT = 15  # seconds any one step may take


def check(name, cond, detail=""):
    if not cond:
        failures.append(name)
        print("FAIL: %s %s" % (name, detail), flush=True)


def client(i):
    order = hosts[i % len(hosts):] + hosts[:i % len(hosts)]
    c = KazooClient(hosts=",".join(order), timeout=10, randomize_hosts=False)
    c.start(timeout=WAIT)
    return c


def until(cond):
    """Polls cond until it holds or WAIT seconds pass; returns its last value."""
    deadline = time.monotonic() + WAIT
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.01)
    return cond()


def in_threads(fns):
    ts = [threading.Thread(target=fn, daemon=True) for fn in fns]
    for t in ts:
        t.start()
    for t in ts:
        t.join(4 * WAIT)
    return not any(t.is_alive() for t in ts)


zks = [client(i) for i in range(3)]
a, b, c = zks
a.ensure_path(root)

# Lock: one holder at a time; a waiter gets it once the holder releases.
la, lb = a.Lock(root + "/lock", "a"), b.Lock(root + "/lock", "b")
check("lock acquire", la.acquire(timeout=WAIT))
check("lock refuses a second holder", lb.acquire(blocking=False) is False)
try:
    lb.acquire(timeout=0.3)
    check("lock times out", False, "acquired while held")
except LockTimeout:
    pass
got = []
waiter = threading.Thread(target=lambda: got.append(lb.acquire(timeout=WAIT)), daemon=True)
waiter.start()
check("lock contenders", until(lambda: lb.contenders() == ["a", "b"]), lb.contenders())
la.release()
waiter.join(WAIT)
check("lock passes to the waiter", got == [True] and lb.is_acquired, got)
lb.release()
check("lock released", until(lambda: la.contenders() == []), la.contenders())

# Mutual exclusion under contention: two threads on each client, ten rounds each.
guard = threading.Lock()
inside, most, rounds = [0], [0], [0]


def lock_worker(zk, ident):
    lock = zk.Lock(root + "/mutex", ident)
    for _ in range(10):
        with lock:
            with guard:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.002)
            with guard:
                inside[0] -= 1
                rounds[0] += 1


ok = in_threads([lambda zk=zk, i=i, j=j: lock_worker(zk, "w%d-%d" % (i, j)) for i, zk in enumerate(zks) for j in range(2)])
check("mutex rounds", ok and rounds[0] == 60, rounds)
check("mutex excludes", most[0] == 1, most)

# Read and write locks: readers share, a writer waits for them.
ra, rb, wc = a.ReadLock(root + "/rw", "ra"), b.ReadLock(root + "/rw", "rb"), c.WriteLock(root + "/rw", "wc")
check("read locks share", ra.acquire(timeout=WAIT) and rb.acquire(timeout=WAIT))
check("write lock waits for readers", wc.acquire(blocking=False) is False)
ra.release()
rb.release()
check("write lock after readers", wc.acquire(timeout=WAIT))
check("read lock waits for the writer", ra.acquire(blocking=False) is False)
wc.release()

# Counter: optimistic increments (a versioned setData, retried on BadVersion) from
# three sessions at once count every one.


def count_worker(zk):
    counter = zk.Counter(root + "/counter")
    for _ in range(25):
        counter += 1


ok = in_threads([lambda zk=zk: count_worker(zk) for zk in zks for _ in range(2)])
a.sync(root + "/counter")
check("counter", ok and a.Counter(root + "/counter").value == 150, a.Counter(root + "/counter").value)
fc = b.Counter(root + "/fcounter", default=0.0)
fc += 2.5
fc -= 1.0
c.sync(root + "/fcounter")
check("float counter", c.Counter(root + "/fcounter", default=0.0).value == 1.5)

# Election: the first contender leads until its function returns, then the next.
led, release_a = [], threading.Event()
ea, eb = a.Election(root + "/election", "a"), b.Election(root + "/election", "b")
ta = threading.Thread(target=ea.run, args=(lambda: (led.append("a"), release_a.wait(WAIT)),), daemon=True)
ta.start()
check("election first leader", until(lambda: led == ["a"]), led)
tb = threading.Thread(target=eb.run, args=(lambda: led.append("b"),), daemon=True)
tb.start()
check("election contenders", until(lambda: eb.contenders() == ["a", "b"]), eb.contenders())
check("election holds the second", led == ["a"], led)
release_a.set()
check("election next leader", until(lambda: led == ["a", "b"]), led)
ta.join(WAIT)
tb.join(WAIT)

# Semaphore: two leases; a third waits for one to be released.
sa, sb, sc = (zk.Semaphore(root + "/sem", ident, max_leases=2) for zk, ident in ((a, "a"), (b, "b"), (c, "c")))
check("semaphore leases", sa.acquire(timeout=WAIT) and sb.acquire(timeout=WAIT))
check("semaphore full", sc.acquire(blocking=False) is False)
check("semaphore holders", sorted(sc.lease_holders()) == ["a", "b"], sc.lease_holders())
sa.release()
check("semaphore freed lease", sc.acquire(timeout=WAIT))
sb.release()
sc.release()

# Barrier: waiters block while it stands and go once it is removed.
bar = a.Barrier(root + "/barrier")
bar.create()
b.sync(root + "/barrier")
check("barrier holds", b.Barrier(root + "/barrier").wait(timeout=0.3) is False)
passed = []
tw = threading.Thread(target=lambda: passed.append(c.Barrier(root + "/barrier").wait(timeout=WAIT)), daemon=True)
tw.start()
time.sleep(0.1)  # let the waiter set its watch; it passes either way
bar.remove()
tw.join(WAIT)
check("barrier released", passed == [True], passed)

# DoubleBarrier: nobody passes enter() before all three have come; then all leave.
entered, left = [], []


def double_worker(zk, ident):
    db = zk.DoubleBarrier(root + "/double", 3, ident)
    db.enter()
    entered.append((ident, time.monotonic()))
    db.leave()
    left.append(ident)


starts = {}


def delayed(zk, ident, delay):
    time.sleep(delay)
    starts[ident] = time.monotonic()
    double_worker(zk, ident)


ok = in_threads([lambda: delayed(a, "a", 0), lambda: delayed(b, "b", 0.2), lambda: delayed(c, "c", 0.4)])
check("double barrier all pass", ok and sorted(i for i, _ in entered) == ["a", "b", "c"] and sorted(left) == ["a", "b", "c"],
      (entered, left))
check("double barrier waits for the last", all(t >= starts.get("c", 1e18) for _, t in entered), (entered, starts))

# Queue: items come out by priority, then in the order they were put.
qa, qb = a.Queue(root + "/queue"), b.Queue(root + "/queue")
for value, prio in ((b"low", 200), (b"first", 100), (b"second", 100), (b"urgent", 1)):
    qa.put(value, priority=prio)
b.sync(root + "/queue")
check("queue length", len(qb) == 4, len(qb))
out = [qb.get() for _ in range(4)]
check("queue order", out == [b"urgent", b"first", b"second", b"low"], out)
check("queue empty", qb.get() is None)

# LockingQueue: an item is held by its taker until consumed; another takes the next.
lqa, lqb = a.LockingQueue(root + "/lqueue"), b.LockingQueue(root + "/lqueue")
lqa.put_all([b"x", b"y"])
check("locking queue get", lqa.get(timeout=WAIT) == b"x")
check("locking queue next item", lqb.get(timeout=WAIT) == b"y")
check("locking queue consume", lqa.consume() and lqb.consume())
a.sync(root + "/lqueue")
check("locking queue empty", len(lqa) == 0, len(lqa))

# Party and ShallowParty: who has joined.
for kind in ("Party", "ShallowParty"):
    pa, pb = getattr(a, kind)(root + "/" + kind, "a"), getattr(b, kind)(root + "/" + kind, "b")
    pa.join()
    pb.join()
    view = getattr(c, kind)(root + "/" + kind)
    check(kind + " members", until(lambda: sorted(view) == ["a", "b"]) and len(view) == 2, list(view))
    pa.leave()
    check(kind + " leave", until(lambda: list(view) == ["b"]), list(view))
    pb.leave()

# DataWatch and ChildrenWatch: the last state is always seen, and what is seen comes in
# the order it happened (watches are one-shot, so quick changes may fold together).
a.create(root + "/watched", b"0")
seen, kids = [], []
c.DataWatch(root + "/watched")(lambda data, stat: seen.append(data))
c.ChildrenWatch(root + "/watched")(lambda children: kids.append(sorted(children)))
for i in range(1, 6):
    a.set(root + "/watched", b"%d" % i)
check("data watch sees the last", until(lambda: seen and seen[-1] == b"5"), seen)
# c's member may not have applied the create when the watch first reads: None, then data
data = [d for d in seen if d is not None]
check("data watch in order", seen[:len(seen) - len(data)] == [None] * (len(seen) - len(data)) and data == sorted(data), seen)
for name in ("k1", "k2", "k3"):
    b.create(root + "/watched/" + name)
check("children watch", until(lambda: kids and kids[-1] == ["k1", "k2", "k3"]), kids)
check("children watch grows", all(len(x) <= len(y) for x, y in zip(kids, kids[1:])), kids)

# TreeCache: a view of a subtree kept up to date by watches.
a.create(root + "/tree/x", b"1", makepath=True)
events = []
c.sync(root + "/tree")
cache = TreeCache(c, root + "/tree")
cache.listen(lambda ev: events.append((ev.event_type, ev.event_data.path if ev.event_data else None)))
cache.start()
check("tree cache initialized", until(lambda: (TreeEvent.INITIALIZED, None) in events), events)
check("tree cache data", cache.get_data(root + "/tree/x").data == b"1")
a.create(root + "/tree/y/z", b"2", makepath=True)
check("tree cache added", until(lambda: (TreeEvent.NODE_ADDED, root + "/tree/y/z") in events), events)
a.set(root + "/tree/x", b"3")
check("tree cache updated", until(lambda: (TreeEvent.NODE_UPDATED, root + "/tree/x") in events), events)
check("tree cache new data", until(lambda: cache.get_data(root + "/tree/x").data == b"3"))
a.delete(root + "/tree/y", recursive=True)
check("tree cache removed", until(lambda: (TreeEvent.NODE_REMOVED, root + "/tree/y") in events), events)
check("tree cache children", until(lambda: cache.get_children(root + "/tree") == frozenset(["x"])),
      cache.get_children(root + "/tree"))
cache.close()

# An ephemeral lock node goes with its session: a holder that disappears frees the lock.
holder = client(3)
hl = holder.Lock(root + "/lost", "gone")
check("lost holder acquires", hl.acquire(timeout=WAIT))
holder.stop()
holder.close()
check("lock freed by the session's end", a.Lock(root + "/lost", "a").acquire(timeout=WAIT))

a.delete(root, recursive=True)
for zk in zks:
    zk.stop()
    zk.close()
if failures:
    sys.exit(1)
print("kazoo recipes: all checks passed against", ",".join(hosts))
