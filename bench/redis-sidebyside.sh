#!/usr/bin/env bash
# Side by side: nanokv (one node, WAL with --fsync everysec) against redis-server (no
# persistence at all: its best case), on this machine, with redis-benchmark.
#
#   bench/redis-sidebyside.sh            throughput table + memory (takes ~10 minutes)
#   N=200000 REPS=1 bench/redis-sidebyside.sh     a quicker, noisier look
#
# Throughput: redis-benchmark -t set,get -c 50 -n $N -r 1000000 -P 1 and -P 16, each
# configuration $REPS times, alternating the two servers so that drift on a shared
# machine hits both alike; the median is reported with every run. With it, the CPU each
# request cost the client (redis-benchmark, from bash's time) and the server (/proc).
# Memory: 1M distinct keys with 32-byte values piped into each server, then RSS.
# Needs redis-server, redis-benchmark, redis-cli and Go. The servers listen on loopback
# ports chosen at start and are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000000}
REPS=${REPS:-3}
. bench/lib.sh

need "apt-get install redis-server redis-tools; Go" redis-server redis-benchmark redis-cli go python3


start_servers() {
  rport=$(free_port); nport=$(free_port)
  redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >/dev/null &
  pids+=($!); rpid=$!
  rm -rf "$work/nanokv-data"
  "$work/nanokv" --redis "127.0.0.1:$nport" --data-dir "$work/nanokv-data" 2>"$work/nanokv.log" &
  pids+=($!); npid=$!
  wait_ping "$rport"; wait_ping "$nport"
}
stop_servers() { kill "$rpid" "$npid"; wait "$rpid" "$npid" 2>/dev/null || true; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; } # user + system, in clock ticks

go build -o "$work/nanokv" ./cmd/nanokv
echo "# $(date -u +%Y-%m-%dT%H:%MZ)  $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -r)"
echo "# $(redis-server --version | cut -d' ' -f3)  nanokv $("$work/nanokv" --version | cut -d' ' -f2)  $(go version | cut -d' ' -f3)"
echo "# redis-benchmark -t set,get -c 50 -n $N -r 1000000 -P {1,16}; median of $REPS alternating runs"

start_servers
declare -A runs
for rep in $(seq "$REPS"); do
  for P in 1 16; do
    for sys in redis nanokv; do
      port=$rport; pid=$rpid; [ "$sys" = nanokv ] && port=$nport pid=$npid
      s0=$(cpu_ticks "$pid")
      { TIMEFORMAT='%R %U %S'; time redis-benchmark -p "$port" -t set,get -c 50 -n "$N" -r 1000000 -P "$P" -q >"$work/rb.out" 2>&1; } 2>"$work/rb.time"
      s1=$(cpu_ticks "$pid")
      out=$(tr '\r' '\n' <"$work/rb.out" | grep -a "per second" | grep -v "rps=")
      # CPU per request (µs) of the client and of the server, and the client's share of
      # its core: over the SET and GET runs together, 2N requests
      read -r real usr sys_ <"$work/rb.time"
      runs[$P,$sys,cli]+="$(echo "($usr + $sys_) * 1000000 / (2 * $N)" | bc -l) "
      runs[$P,$sys,busy]+="$(echo "($usr + $sys_) / $real" | bc -l) "
      runs[$P,$sys,srv]+="$(echo "($s1 - $s0) * 1000000 / $(getconf CLK_TCK) / (2 * $N)" | bc -l) "
      for t in SET GET; do
        line=$(echo "$out" | grep -a "^$t:")
        runs[$P,$sys,$t]+="$(echo "$line" | awk '{print $2}') "
        runs[$P,$sys,${t}p50]+="$(echo "$line" | sed 's/.*p50=\([0-9.]*\).*/\1/') "
      done
    done
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo
echo "| test | redis-server ops/s | nanokv ops/s | ratio | p50 ms redis / nanokv | runs redis ; nanokv |"
echo "|---|---|---|---|---|---|"
for P in 1 16; do for t in SET GET; do
  r=$(echo "${runs[$P,redis,$t]}" | median); n=$(echo "${runs[$P,nanokv,$t]}" | median)
  rp=$(echo "${runs[$P,redis,${t}p50]}" | median); np=$(echo "${runs[$P,nanokv,${t}p50]}" | median)
  printf "| %s -P %s | %.0f | %.0f | %.2f | %s / %s | %s; %s |\n" "$t" "$P" "$r" "$n" "$(echo "$n / $r" | bc -l)" "$rp" "$np" "${runs[$P,redis,$t]}" "${runs[$P,nanokv,$t]}"
done; done
echo
echo "CPU per request in µs (user+system, over the SET and GET runs together) and the share"
echo "of a core the client kept busy (near 1: the single-threaded client, not the server,"
echo "set the pace); medians:"
echo
echo "| -P | client µs/request redis / nanokv | client's core busy redis / nanokv | server µs/request redis / nanokv |"
echo "|---|---|---|---|"
for P in 1 16; do
  printf "| %s | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f |\n" "$P" \
    "$(echo "${runs[$P,redis,cli]}" | median)" "$(echo "${runs[$P,nanokv,cli]}" | median)" \
    "$(echo "${runs[$P,redis,busy]}" | median)" "$(echo "${runs[$P,nanokv,busy]}" | median)" \
    "$(echo "${runs[$P,redis,srv]}" | median)" "$(echo "${runs[$P,nanokv,srv]}" | median)"
done
stop_servers

# memory: the same 1M keys into fresh servers
start_servers
python3 - "$work/1m.resp" <<'EOF'
import sys
v = b"x" * 32
with open(sys.argv[1], "wb") as f:
    for i in range(1000000):
        k = b"key:%010d" % i
        f.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$32\r\n%s\r\n" % (len(k), k, v))
EOF
for port in "$rport" "$nport"; do redis-cli -p "$port" --pipe < "$work/1m.resp" >/dev/null; done
sleep 3
rss() { awk '/VmRSS/{print $2}' "/proc/$1/status"; }
r=$(rss "$rpid"); n=$(rss "$npid")
echo
echo "| 1M keys, 32-byte values | redis-server | nanokv | ratio |"
echo "|---|---|---|---|"
printf "| RSS | %.1f MiB | %.1f MiB | %.2f |\n" "$(echo "$r/1024" | bc -l)" "$(echo "$n/1024" | bc -l)" "$(echo "$n / $r" | bc -l)"
stop_servers
