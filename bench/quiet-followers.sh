#!/usr/bin/env bash
# Does a leader survive followers that are held up but alive? Five members under a light
# SET load (redis-benchmark -c 10 -P 1); each trial stops 3 of the 4 followers with
# SIGSTOP for STOP_MS, resumes them, and checks whether the leader changed. This is the
# silence GC marking on shared cores produced (0.3-0.55 s), which check-quorum must
# outlast; a longer silence must still depose the leader.
#
#   bench/quiet-followers.sh                 12 trials of 300 ms
#   TRIALS=6 STOP_MS=700 bench/quiet-followers.sh
#   NANOKV=path/to/nanokv bench/quiet-followers.sh     another build (default: this tree's)
#
# Needs redis-benchmark, redis-cli, python3 and Go. The members listen on loopback ports
# chosen at start and are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
TRIALS=${TRIALS:-12}
STOP_MS=${STOP_MS:-300}
MODE=${MODE:-offload}
bench_pid=
on_exit() { if [ -n "$bench_pid" ]; then kill "$bench_pid" 2>/dev/null || true; fi; }
. bench/lib.sh

need "apt-get install redis-tools python3; Go" redis-benchmark redis-cli python3 go
raft_field() { redis-cli -p "$1" info raft 2>/dev/null | tr -d '\r' | awk -F: -v f="$2" '$1==f{print $2}'; }
find_leader() {
  for _ in $(seq 100); do
    for i in 1 2 3 4 5; do
      if [ "$(raft_field "${redis[$i]}" raft_role)" = leader ]; then leader=$i; return 0; fi
    done
    sleep 0.1
  done
  echo "no leader"; exit 1
}
start_load() {
  if [ -n "$bench_pid" ]; then kill "$bench_pid" 2>/dev/null || true; fi
  redis-benchmark -p "${redis[$leader]}" -t set -c 10 -n 1000000000 -r 100000 -P 1 -q >/dev/null 2>&1 &
  bench_pid=$!
}

if [ -n "${NANOKV:-}" ]; then
  cp "$NANOKV" "$work/nanokv"
else
  go build -o "$work/nanokv" ./cmd/nanokv
fi
declare -A redis member pid
peers=
for i in 1 2 3 4 5; do
  redis[$i]=$(free_port); member[$i]=$(free_port)
  peers+="${peers:+,}$i=127.0.0.1:${member[$i]}"
done
for i in 1 2 3 4 5; do
  "$work/nanokv" --id "$i" --peers "$peers" --mode "$MODE" --redis "127.0.0.1:${redis[$i]}" \
    --zk "" --memcache "" --data-dir "$work/n$i" 2>"$work/log$i" &
  pid[$i]=$!; pids+=($!)
done
find_leader
start_load
sleep 1

changed=0
for t in $(seq "$TRIALS"); do
  term=$(raft_field "${redis[$leader]}" raft_current_term)
  stopped=$(for i in 1 2 3 4 5; do if [ "$i" != "$leader" ]; then echo "$i"; fi; done | shuf -n 3)
  for i in $stopped; do kill -STOP "${pid[$i]}"; done
  sleep "$(python3 -c "print($STOP_MS/1000)")"
  for i in $stopped; do kill -CONT "${pid[$i]}"; done
  sleep 1
  if [ "$(raft_field "${redis[$leader]}" raft_role)" != leader ] ||
     [ "$(raft_field "${redis[$leader]}" raft_current_term)" != "$term" ]; then
    changed=$((changed + 1))
    find_leader
    start_load
    sleep 1
  fi
done
echo "$MODE, 3 of 4 followers stopped for $STOP_MS ms: the leader changed in $changed of $TRIALS trials"
