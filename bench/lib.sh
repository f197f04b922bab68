# Shared by the bench/*.sh scripts; source it after `set -euo pipefail`.
#
#   work       a temporary directory, removed on exit
#   pids       processes to stop on exit (append with pids+=($!)); stopped ones (SIGSTOP)
#              are continued first, so that they can exit
#   need HINT TOOL...   exit with HINT unless every TOOL is on PATH
#   free_port  a loopback port nobody listens on now
#   wait_ping PORT      wait up to 10 s for a Redis-protocol server on PORT
# A script that must stop more on exit defines on_exit before it sources this.

work=$(mktemp -d)
pids=()
cleanup() {
  if declare -F on_exit >/dev/null; then on_exit; fi
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

need() {
  local hint=$1 tool
  shift
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "missing $tool ($hint)"; exit 1; }
  done
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

wait_ping() {
  for _ in $(seq 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "server on $1 did not start"
  exit 1
}
