#!/usr/bin/env bash
# Side by side, command by command: one nanokv node (WAL with --fsync everysec) against
# redis-server (no persistence), with redis-benchmark -c 50 -P 1, on the bitmap, geo,
# HyperLogLog, scripting, stream, pub/sub and blocking commands and on cases that show
# their costs (a BITFIELD on a 1 MB string copies it; a PFCOUNT of one key goes through
# the log; a script holds the whole store; XREAD takes every shard's lock; PUBLISH goes
# through the log).
#
#   bench/commands-sidebyside.sh          about two minutes
#   N=20000 bench/commands-sidebyside.sh  quicker, noisier
#
# Each row runs once per server, redis-server first: on a shared machine read ratios of
# several runs, not one. Needs redis-server, redis-benchmark, redis-cli and Go; the
# servers listen on loopback ports chosen at start and are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-100000}
. bench/lib.sh

need "apt-get install redis-server redis-tools; Go" redis-server redis-benchmark redis-cli go python3

go build -o "$work/nanokv" ./cmd/nanokv
rport=$(free_port); nport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >/dev/null &
pids+=($!)
"$work/nanokv" --redis "127.0.0.1:$nport" --memcache '' --zk '' --data-dir "$work/nanokv-data" 2>"$work/nanokv.log" &
pids+=($!)
wait_ping "$rport"; wait_ping "$nport"

# 200 points on a 20 x 10 grid, 0.01 degree apart, for the searches
for port in "$rport" "$nport"; do
  for i in $(seq 0 199); do
    awk -v i="$i" 'BEGIN { printf "GEOADD grid %.2f %.2f p%d\n", 13 + (i % 20) * 0.01, 38 + int(i / 20) * 0.01, i }'
  done | redis-cli -p "$port" >/dev/null
done

rps() { # port n r args...: requests per second
  local port=$1 n=$2 r=$3; shift 3
  redis-benchmark -p "$port" -c 50 -n "$n" -r "$r" -q "$@" 2>/dev/null | tr '\r' '\n' |
    grep -o '[0-9.]* requests per second' | tail -1 | cut -d' ' -f1
}
row() { # label n r args...
  local label=$1 n=$2 r=$3; shift 3
  local a b
  a=$(rps "$rport" "$n" "$r" "$@"); b=$(rps "$nport" "$n" "$r" "$@")
  awk -v l="$label" -v a="$a" -v b="$b" 'BEGIN { printf "| `%s` | %s | %s | %.2f |\n", l, a, b, b / a }'
}

echo "| command | redis-server ops/s | nanokv ops/s | ratio |"
echo "|---|---|---|---|"
row "SETBIT bm:__rand_int__ 100 1" "$N" 100000 SETBIT bm:__rand_int__ 100 1
row "GETBIT bm:__rand_int__ 100" "$N" 100000 GETBIT bm:__rand_int__ 100
row "BITFIELD bf INCRBY u8 8000 1 (1 KB string)" "$N" 1 BITFIELD bf INCRBY u8 8000 1
row "BITCOUNT bf (1 KB)" "$N" 1 BITCOUNT bf
row "BITFIELD big INCRBY u8 8000000 1 (1 MB string)" $((N / 5)) 1 BITFIELD big INCRBY u8 8000000 1
row "BITCOUNT big (1 MB)" $((N / 5)) 1 BITCOUNT big
row "GEOADD g 13.361389 38.115556 m__rand_int__" "$N" 100000 GEOADD g 13.361389 38.115556 m__rand_int__
row "GEOSEARCH grid FROMLONLAT 13.1 38.05 BYRADIUS 5 km COUNT 10 ASC" "$N" 1 GEOSEARCH grid FROMLONLAT 13.1 38.05 BYRADIUS 5 km COUNT 10 ASC
row "GEORADIUS grid 13.1 38.05 3 km WITHDIST" "$N" 1 GEORADIUS grid 13.1 38.05 3 km WITHDIST
row "GEOPOS grid p1 p7 p100" "$N" 1 GEOPOS grid p1 p7 p100
row "GEODIST grid p1 p150 km" "$N" 1 GEODIST grid p1 p150 km
row "PFADD hll e:__rand_int__ (turns dense)" "$N" 100000000 PFADD hll e:__rand_int__
row "PFADD hll e:__rand_int__ (again, on a larger set)" "$N" 100000000 PFADD hll e:__rand_int__
row "PFADD small e:__rand_int__ (stays sparse)" "$N" 300 PFADD small e:__rand_int__
row "PFCOUNT hll (cached count)" "$N" 1 PFCOUNT hll
row "PFCOUNT hll small (merged, read path)" "$N" 1 PFCOUNT hll small
row "PFMERGE dst hll small" $((N / 5)) 1 PFMERGE dst hll small

set_script="return redis.call('set', KEYS[1], ARGV[1])"
sha=$(redis-cli -p "$rport" SCRIPT LOAD "$set_script")
[ "$(redis-cli -p "$nport" SCRIPT LOAD "$set_script")" = "$sha" ]
row "EVAL (SET through redis.call)" "$N" 100000 EVAL "$set_script" 1 key:__rand_int__ v
row "EVALSHA (the same, loaded)" "$N" 100000 EVALSHA "$sha" 1 key:__rand_int__ v
row "EVAL_RO (GET through redis.call)" "$N" 100000 EVAL_RO "return redis.call('get', KEYS[1])" 1 key:__rand_int__

row "XADD stream * f v (one stream)" "$N" 1 XADD stream '*' f v
row "XADD s:__rand_int__ * f v (many streams)" "$N" 100000 XADD s:__rand_int__ '*' f v
row "XLEN stream" "$N" 1 XLEN stream
row "XRANGE stream - + COUNT 10" "$N" 1 XRANGE stream - + COUNT 10
row "XREAD COUNT 10 STREAMS stream 0" "$N" 1 XREAD COUNT 10 STREAMS stream 0
row "PUBLISH news hello (no subscriber)" "$N" 1 PUBLISH news hello
row "RPUSH jobs x" "$N" 1 RPUSH jobs x
row "BLPOP jobs 1 (the list holds elements)" "$N" 1 BLPOP jobs 1
