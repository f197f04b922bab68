#!/usr/bin/python3
"""kazoo across the loss of the member its session is on: kazoo_failover_check.py HOSTS.

HOSTS is a cluster's members, the one to be stopped first. Client a's session starts
there, takes a lock and an ephemeral node, and counts; the script prints READY and
waits for a line on stdin, which the test sends once it has stopped that member. Then
a must be connected elsewhere with the same session, still holding its lock and its
ephemeral node, and both clients go on. Prints one line per failed check and exits
non-zero if any failed.
"""
import os
import sys
import time

from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

hosts = sys.argv[1].split(",")
root = "/failover-%d" % os.getpid()
failures = []
WAIT = 20


def check(name, cond, detail=""):
    if not cond:
        failures.append(name)
        print("FAIL: %s %s" % (name, detail), flush=True)


def until(cond):
    deadline = time.monotonic() + WAIT
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.01)
    return cond()


a = KazooClient(hosts=",".join(hosts), timeout=10, randomize_hosts=False)
a.start(timeout=WAIT)
b = KazooClient(hosts=",".join(hosts[1:]), timeout=10, randomize_hosts=False)
b.start(timeout=WAIT)
states = []
a.add_listener(states.append)
session = a.client_id

a.ensure_path(root)
lock = a.Lock(root + "/lock", "a")
check("lock before", lock.acquire(timeout=WAIT))
a.create(root + "/eph", b"mine", ephemeral=True)
counter = a.Counter(root + "/counter")
for _ in range(10):
    counter += 1

print("READY", flush=True)
sys.stdin.readline()  # the member a's session was on has stopped

# kazoo suspends the session, finds another member and resumes it there.
check("session resumed", until(lambda: a.state == KazooState.CONNECTED and KazooState.SUSPENDED in states), (a.state, states))
check("same session", a.client_id == session, (a.client_id, session))
check("not lost", KazooState.LOST not in states, states)
check("ephemeral kept", a.exists(root + "/eph") is not None and b.exists(root + "/eph") is not None)
check("lock kept", lock.is_acquired and b.Lock(root + "/lock", "b").contenders() == ["a"])
check("lock still exclusive", b.Lock(root + "/lock", "b2").acquire(blocking=False) is False)
for _ in range(10):
    counter += 1
other = b.Counter(root + "/counter")
for _ in range(5):
    other += 1
a.sync(root + "/counter")
check("counter", a.Counter(root + "/counter").value == 25, a.Counter(root + "/counter").value)
lock.release()
check("lock passes on", b.Lock(root + "/lock", "b").acquire(timeout=WAIT))
a.stop()
a.close()
check("ephemeral gone with the session", until(lambda: b.exists(root + "/eph") is None))
b.delete(root, recursive=True)
b.stop()
b.close()
if failures:
    sys.exit(1)
print("kazoo failover: all checks passed")
