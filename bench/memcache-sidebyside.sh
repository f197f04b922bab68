#!/usr/bin/env bash
# Side by side: nanokv (one node, WAL with --fsync everysec) against memcached -t 1, on this
# machine, with memcaslap (Debian's memaslap).
#
#   bench/memcache-sidebyside.sh                 one run of each test (~1 minute)
#   REPS=3 TIME=10s bench/memcache-sidebyside.sh  median of 3 alternating runs
#
# memcaslap -T 1 -c 50 -t $TIME with 16-byte keys and 32-byte values (its -F config), set
# only and 9:1 get:set; the two servers alternate so that drift on a shared machine hits
# both alike. Needs memcached, memcaslap (libmemcached-tools) and Go; installs the Debian
# packages when they are missing. The servers listen on loopback ports chosen at start and
# are stopped on exit.
#
# Each run starts both servers empty (FRESH=0: the same two servers serve every run). Every
# set-only run of memcaslap writes about 1.2M new keys, some 120 MB. nanokv keeps every
# key; memcached gets MC_MEM MB (-m, default 1024) so that it keeps them too, and both
# serve the same data. With memcached's default of 64 MB it evicts most of them, and
# while its memory first fills it now and then answers "SERVER_ERROR out of memory
# storing object", and this script stops on any error a client reports. With FRESH=0 each of
# nanokv's runs works on a keyspace a million keys larger than the last: a different
# experiment from the first run, and from memcached's.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-1}
TIME=${TIME:-10s}
FRESH=${FRESH:-1}
MC_MEM=${MC_MEM:-1024}
. bench/lib.sh

if ! command -v memcached >/dev/null || ! command -v memcaslap >/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get install -y memcached libmemcached-tools >/dev/null
fi
need "apt-get install memcached libmemcached-tools; Go" memcached memcaslap go python3

wait_port() {
  for _ in $(seq 100); do
    python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$1),0.2)" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "server on $1 did not start"; exit 1
}

start_servers() {
  mport=$(free_port); nport=$(free_port); rport=$(free_port)
  user=(); [ "$(id -u)" -eq 0 ] && user=(-u root)
  memcached -l 127.0.0.1 -p "$mport" -U 0 -t 1 -m "$MC_MEM" "${user[@]}" &
  pids+=($!); mpid=$!
  rm -rf "$work/nanokv-data"
  "$work/nanokv" --redis "127.0.0.1:$rport" --memcache "127.0.0.1:$nport" --data-dir "$work/nanokv-data" 2>"$work/nanokv.log" &
  pids+=($!); npid=$!
  wait_port "$mport"; wait_port "$nport"
}
stop_servers() { kill "$mpid" "$npid"; wait "$mpid" "$npid" 2>/dev/null || true; }

go build -o "$work/nanokv" ./cmd/nanokv
printf 'key\n16 16 1\nvalue\n32 32 1\ncmd\n0 1\n1 0\n' >"$work/set.cnf"
printf 'key\n16 16 1\nvalue\n32 32 1\ncmd\n0 0.1\n1 0.9\n' >"$work/get9set1.cnf"
echo "# $(date -u +%Y-%m-%dT%H:%MZ)  $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -r)"
echo "# memcached $(memcached -V | cut -d' ' -f2) -t 1 -m $MC_MEM  nanokv $("$work/nanokv" --version | cut -d' ' -f2) (one node, --fsync everysec)  $(go version | cut -d' ' -f3)"
servers="fresh servers for every run"; [ "$FRESH" = 1 ] || servers="the same two servers for every run"
echo "# memcaslap -T 1 -c 50 -t $TIME, 16-byte keys, 32-byte values; median of $REPS alternating runs, $servers"

declare -A runs
if [ "$FRESH" != 1 ]; then start_servers; fi
for rep in $(seq "$REPS"); do
  for test in set get9set1; do
    if [ "$FRESH" = 1 ]; then start_servers; fi
    for sys in memcached nanokv; do
      port=$mport; [ "$sys" = nanokv ] && port=$nport
      out=$(memcaslap -s "127.0.0.1:$port" -T 1 -c 50 -t "$TIME" -F "$work/$test.cnf" 2>&1)
      if echo "$out" | grep -qiE 'error|fail'; then echo "$sys $test reported errors:"; echo "$out"; exit 1; fi
      tps=$(echo "$out" | sed -n 's/.*TPS: \([0-9]*\).*/\1/p' | tail -1)
      runs[$test,$sys]+="$tps "
    done
    if [ "$FRESH" = 1 ]; then stop_servers; fi
  done
done
if [ "$FRESH" != 1 ]; then stop_servers; fi
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo
echo "| test | memcached TPS | nanokv TPS | ratio | runs memcached ; nanokv |"
echo "|---|---|---|---|---|"
for test in set get9set1; do
  m=$(echo "${runs[$test,memcached]}" | median); n=$(echo "${runs[$test,nanokv]}" | median)
  name="set only"; [ "$test" = get9set1 ] && name="9:1 get:set"
  printf "| %s | %s | %s | %.2f | %s; %s |\n" "$name" "$m" "$n" "$(echo "$n / $m" | bc -l)" "${runs[$test,memcached]}" "${runs[$test,nanokv]}"
done
