#!/usr/bin/env bash
# CPU per committed write of each member of a 3-member cluster, offload against raft
# mode: redis-benchmark -t set -c 50 -P $P -d 3 at the leader, $WARM SETs, then $N whose
# CPU (user + system, from /proc/<pid>/stat) is divided by $N for the leader, each
# follower and the client. The modes take turns, a fresh cluster every run, $ROUNDS
# rounds; each run is one line. The mode redis-server runs the same load against a
# standalone redis-server without persistence, the anchor; the mode single against one
# nanokv node with no peers (its WAL written as a member's), which splits the gap to
# the anchor into the server's own cost and replication's. With R set, the keys are
# drawn from R (-r R): new keys grow the tables, as in `nanokv bench`'s runs. With
# DOWN=1 a follower is killed (-9) before the warm-up: the leader and the other
# follower carry the load (in offload mode the engine's terms leave the dead one out).
#
#   bench/cluster-cpu.sh                       -P 1, 2 rounds of offload and raft
#   P=16 N=2000000 bench/cluster-cpu.sh
#   P=16 N=2000000 MODES="redis-server single offload" bench/cluster-cpu.sh
#   P=16 N=1500000 WARM=0 R=1000000 MODES="redis-server offload raft" bench/cluster-cpu.sh
#   MODES=offload MEMBER_FLAGS="--offload-inflight 0" bench/cluster-cpu.sh
#   DOWN=1 P=16 N=2000000 bench/cluster-cpu.sh  a member down
#   NANOKV=path/to/nanokv bench/cluster-cpu.sh  another build (default: this tree's)
#
# The client's CPU per SET is the same work against any server, so the members' figures
# over the client's compare runs on a machine whose speed drifts: servers/client is the
# CPU of all the servers (the members, or redis-server) over the client's. Needs redis-benchmark,
# redis-cli, python3, bc and Go (and redis-server for its mode). The servers listen on
# loopback ports chosen at start and are stopped after each run.
set -euo pipefail
cd "$(dirname "$0")/.."
P=${P:-1}
N=${N:-500000}
WARM=${WARM:-200000}
ROUNDS=${ROUNDS:-2}
R=${R:-}
MODES=${MODES:-offload raft}
MEMBER_FLAGS=${MEMBER_FLAGS:-}
DOWN=${DOWN:-}
. bench/lib.sh

need "apt-get install redis-tools python3 bc; Go" redis-benchmark redis-cli python3 bc go
case " $MODES " in *" redis-server "*) need "apt-get install redis-server" redis-server ;; esac
if [ -n "${NANOKV:-}" ]; then
  cp "$NANOKV" "$work/nanokv"
else
  go build -o "$work/nanokv" ./cmd/nanokv
fi
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
raft_field() { redis-cli -p "$1" info raft 2>/dev/null | tr -d '\r' | awk -F: -v f="$2" '$1==f{print $2}'; }
per_set() { printf "%.2f" "$(echo "scale=3; ($2 - $1) * 1000000 / $(getconf CLK_TCK) / $N" | bc)"; }
load() { # load PORT N [OPTIONS]: N SETs at the server on PORT
  local port=$1 n=$2
  shift 2
  [ "$n" -gt 0 ] || return 0
  redis-benchmark -p "$port" -t set -c 50 -n "$n" -P "$P" -d 3 ${R:+-r "$R"} "$@"
}

# measure PORT KEY...: $N SETs at PORT; appends to the caller's line their rate, p50 and
# the CPU per SET of each process ${pid[KEY]} (named ${name[KEY]}: the caller's arrays)
# and of the client.
measure() {
  local port=$1 i usr sys_
  shift
  declare -A t0
  for i in "$@"; do t0[$i]=$(cpu_ticks "${pid[$i]}"); done
  { TIMEFORMAT='%U %S'; time load "$port" "$N" >"$work/rb.out" 2>&1; } 2>"$work/rb.time"
  line+=": $(awk '/throughput summary/{print $3}' "$work/rb.out") ops/s"
  line+=", p50 $(awk '/latency summary/{getline; getline; print $3}' "$work/rb.out") ms; CPU µs per SET:"
  local c servers=0 client
  for i in "$@"; do
    c=$(per_set "${t0[$i]}" "$(cpu_ticks "${pid[$i]}")")
    line+=" ${name[$i]} $c"
    servers=$(echo "$servers + $c" | bc)
  done
  read -r usr sys_ <"$work/rb.time"
  client=$(printf "%.2f" "$(echo "scale=3; ($usr + $sys_) * 1000000 / $N" | bc)")
  line+=" client $client; servers/client $(printf "%.2f" "$(echo "scale=3; $servers / $client" | bc)")"
}

# standalone MODE: one server under the same load; redis-server, or (single) one nanokv
# node with no peers, its WAL as the members' (what replication adds is the rest).
standalone() {
  local port line="$1 P=$P"
  declare -A pid name=([0]=server)
  port=$(free_port)
  if [ "$1" = single ]; then
    rm -rf "$work/single"
    # shellcheck disable=SC2086 # MEMBER_FLAGS is a list of flags
    "$work/nanokv" --redis "127.0.0.1:$port" --zk "" --memcache "" --data-dir "$work/single" \
      $MEMBER_FLAGS 2>"$work/single.log" &
  else
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >"$work/redis.log" 2>&1 &
  fi
  pid[0]=$!
  pids+=("${pid[0]}")
  wait_ping "$port"
  load "$port" "$WARM" -q >/dev/null 2>&1
  measure "$port" 0
  echo "$line"
  kill "${pid[0]}"
  wait "${pid[0]}" 2>/dev/null || true
}

# accelerated PORT: in offload mode, wait up to 10 s for the leader at PORT to have its
# engine's term open (a moment after an election, or after a member is found down).
accelerated() {
  [ "$mode" = offload ] || return 0
  for _ in $(seq 100); do
    [ "$(raft_field "$1" raft_offload_accelerated)" = yes ] && return 0
    sleep 0.1
  done
  echo "$mode: the leader on $1 opened no accelerated term"
  exit 1
}

run() {
  local mode=$1 i leader= peers= b0 h0 fol=0
  case $mode in redis-server | single) standalone "$mode"; return ;; esac
  declare -A redis member pid name
  for i in 1 2 3; do
    redis[$i]=$(free_port); member[$i]=$(free_port)
    peers+="${peers:+,}$i=127.0.0.1:${member[$i]}"
  done
  rm -rf "$work"/n?
  for i in 1 2 3; do
    # shellcheck disable=SC2086 # MEMBER_FLAGS is a list of flags
    "$work/nanokv" --id "$i" --peers "$peers" --mode "$mode" --redis "127.0.0.1:${redis[$i]}" \
      --zk "" --memcache "" --data-dir "$work/n$i" $MEMBER_FLAGS 2>"$work/log$i" &
    pid[$i]=$!
    pids+=("${pid[$i]}")
  done
  for _ in $(seq 100); do
    for i in 1 2 3; do [ "$(raft_field "${redis[$i]}" raft_role)" = leader ] && leader=$i; done
    [ -n "$leader" ] && break
    sleep 0.1
  done
  [ -n "$leader" ] || { echo "no leader"; exit 1; }
  accelerated "${redis[$leader]}"
  local port=${redis[$leader]} line="$mode P=$P" up=()
  for i in 1 2 3; do
    if [ "$i" = "$leader" ]; then name[$i]=leader; else fol=$((fol + 1)); name[$i]=follower$fol; fi
    if [ -n "$DOWN" ] && [ "${name[$i]}" = follower1 ]; then
      kill -9 "${pid[$i]}"
      wait "${pid[$i]}" 2>/dev/null || true
      line+=" (follower1 killed)"
    else
      up+=("$i")
    fi
  done
  load "$port" "$WARM" -q >/dev/null 2>&1
  accelerated "$port"
  b0=$(raft_field "$port" raft_offload_batches); h0=$(raft_field "$port" raft_offload_held)
  measure "$port" "${up[@]}"
  if [ "$mode" = offload ]; then
    line+="; batches $(($(raft_field "$port" raft_offload_batches) - b0)), held proposals $(($(raft_field "$port" raft_offload_held) - h0))"
  fi
  echo "$line"
  for i in "${up[@]}"; do kill "${pid[$i]}"; done
  wait "${pid[@]}" 2>/dev/null || true
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ)  $(nproc) cores; 3 members${DOWN:+, one killed}; redis-benchmark -t set -c 50 -P $P -d 3${R:+ -r $R}, $N SETs after $WARM${MEMBER_FLAGS:+; members: $MEMBER_FLAGS}"
for _ in $(seq "$ROUNDS"); do
  for mode in $MODES; do run "$mode"; done
done
