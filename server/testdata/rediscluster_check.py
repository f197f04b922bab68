#!/usr/bin/python3
"""redis-py's RedisCluster against a nanokv cluster with sharding:
rediscluster_check.py HOST:PORT (any member).

The client finds the leader through CLUSTER SLOTS, then follows a leadership transfer
by the -MOVED replies it gets: every increment must count once, and the client must end
with the new leader as the master of every slot. A client that reads from replicas
(read_from_replicas: READONLY on each connection) must have some of its reads served by
the followers, each seeing the write acknowledged just before it. Prints a line per failed check and
exits non-zero if any failed.
"""
import sys
import time

import redis
from redis.cluster import RedisCluster

host, port = sys.argv[1].rsplit(":", 1)
failures = []


def check(name, cond, detail=""):
    if not cond:
        failures.append(name)
        print("FAIL: %s %r" % (name, detail), flush=True)


rc = RedisCluster(host=host, port=int(port))
keys = ["k%d" % i for i in range(20)]  # keys in many slots
for k in keys:
    rc.incr(k)
primaries = rc.get_primaries()
check("one master", len(primaries) == 1, primaries)
check("replicas", len(rc.get_replicas()) == 2, rc.get_replicas())
old = primaries[0]
others = [n for n in rc.get_nodes() if n.name != old.name]
target_id = int(redis.Redis(host=others[0].host, port=others[0].port).info("raft")["raft_node_id"])
check("transfer", redis.Redis(host=old.host, port=old.port).execute_command("RAFT.TRANSFER_LEADER", target_id) == b"OK")

deadline = time.monotonic() + 20
for k in keys:
    while True:
        try:
            rc.incr(k)
            break
        except redis.exceptions.ClusterDownError:
            # no leader for a moment: RedisCluster gives up after its own retries
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)
new = rc.get_primaries()
check("follows the new leader", [n.name for n in new] == [others[0].name], (new, others[0]))
check("each increment once", [rc.get(k) for k in keys] == [b"2"] * len(keys), [rc.get(k) for k in keys])
check("hash tags", rc.mset_nonatomic({"{u}a": 1, "{u}b": 2}) and rc.mget("{u}a", "{u}b") == [b"1", b"2"])
try:
    rc.execute_command("MSET", "a", "1", "b", "2", target_nodes=rc.get_primaries()[0])
    check("crossslot", False, "MSET of two slots ran")
except redis.exceptions.ResponseError as e:
    check("crossslot", str(e) == "Keys in request don't hash to the same slot", str(e))


def gets_served(node):
    stats = redis.Redis(host=node.host, port=node.port).info("commandstats")
    return stats.get("cmdstat_get", {}).get("calls", 0)


before = {n.name: gets_served(n) for n in rc.get_replicas()}
rr = RedisCluster(host=host, port=int(port), read_from_replicas=True)
stale = []
for i in range(60):
    rr.set("r%d" % (i % 7), i)
    got = rr.get("r%d" % (i % 7))
    if got != str(i).encode():
        stale.append((i, got))
check("replica reads see the last write", not stale, stale)
by_replicas = sum(gets_served(n) - before[n.name] for n in rc.get_replicas())
check("replicas serve reads", by_replicas > 0, by_replicas)
rr.close()

if failures:
    print("%d failed: %s" % (len(failures), ", ".join(failures)))
    sys.exit(1)
print("all RedisCluster checks passed")
