package server

import (
	"testing"

	"github.com/nanokv/nanokv/internal/testtool"
)

// TestRedisPy runs testdata/redispy_check.py, scripted checks with redis-py (Debian's
// python3-redis), against redis-server, so that every expectation in it is Redis's, and
// then against a single node and a three-member cluster's leader; and
// testdata/rediscluster_check.py, redis-py's cluster client, against members with
// sharding (sharding.go).
func TestRedisPy(t *testing.T) {
	testtool.RequirePython(t, "redis", "python3-redis")
	t.Run("redis-server", func(t *testing.T) {
		runRedisPy(t, "redispy_check.py", startRedisServer(t))
	})
	t.Run("single node", func(t *testing.T) {
		runRedisPy(t, "redispy_check.py", startServer(t, Config{MemoryOnly: true}).RedisAddr())
	})
	t.Run("cluster leader", func(t *testing.T) {
		_, leader := leaderOf(t, startCluster(t, 3), 0)
		runRedisPy(t, "redispy_check.py", leader.RedisAddr())
	})
	// redis-py's RedisCluster, given a follower of members with sharding, through a
	// leadership transfer
	t.Run("RedisCluster", func(t *testing.T) {
		servers, leadID, _ := startShardedCluster(t)
		runRedisPy(t, "rediscluster_check.py", followerOf(servers, leadID).RedisAddr())
	})
}

func runRedisPy(t *testing.T, script, addr string) {
	t.Helper()
	testtool.Run(t, testtool.SystemPython, "testdata/"+script, addr)
}
