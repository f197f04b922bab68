#!/usr/bin/env bash
# Scripted checks with ZooKeeper's own CLI: zkcli_check.sh HOST:PORT. Each zkCli.sh run is
# one JVM and one session; commands are piped to its stdin so that a session sees its own
# ephemerals and watches. Prints one line per failed check; exits non-zero if any failed.
set -uo pipefail
server=${1:?usage: zkcli_check.sh HOST:PORT}
zkcli=${ZKCLI:-/usr/share/zookeeper/bin/zkCli.sh}
failed=0

cli() { "$zkcli" -server "$server" 2>&1 | grep -v '^SLF4J'; }

expect() { # expect NAME OUTPUT FIXED-STRING
  if ! grep -qF -- "$3" <<<"$2"; then
    echo "FAIL: $1: output lacks '$3'"
    failed=$((failed + 1))
  fi
}
reject() { # reject NAME OUTPUT FIXED-STRING
  if grep -qF -- "$3" <<<"$2"; then
    echo "FAIL: $1: output has '$3'"
    failed=$((failed + 1))
  fi
}

# Session 1: create -e/-s/-c, get -s, ls -w, addWatch -m. The sync before quit lets the
# watch events arrive before the session ends.
out=$(cli <<'CMDS'
create /zc hello
create -e /zc/eph e
create -s /zc/s- x
create -c /zc-cont
create /zc-cont/kid
get -s /zc
get -s /zc/eph
ls -w /zc
create /zc/k
addWatch -m PERSISTENT_RECURSIVE /zc
set /zc/k v
sync /zc
create /zc/k/deep
sync /zc
quit
CMDS
)
expect "create" "$out" "Created /zc"
expect "create -e" "$out" "Created /zc/eph"
expect "create -s" "$out" "Created /zc/s-0000000001"
expect "create -c" "$out" "Created /zc-cont"
expect "get -s data" "$out" "hello"
expect "get -s dataLength" "$out" "dataLength = 5"
expect "get -s numChildren" "$out" "numChildren = 2"
expect "get -s cversion" "$out" "cversion = 2"
expect "get -s dataVersion" "$out" "dataVersion = 0"
expect "ls -w" "$out" "[eph, s-0000000001]"
expect "ls -w event" "$out" "type:NodeChildrenChanged path:/zc"
expect "addWatch -m data event" "$out" "type:NodeDataChanged path:/zc/k"
expect "addWatch -m created event" "$out" "type:NodeCreated path:/zc/k/deep"
reject "get -s of an ephemeral" "$(grep -A9 '^e$' <<<"$out")" "ephemeralOwner = 0x0"
if [ $failed -gt 0 ]; then
  echo "--- session 1 output:"
  echo "$out"
fi

# Session 2: the ephemeral went with session 1; deleteall.
out=$(cli <<'CMDS'
ls /zc
deleteall /zc
ls /
get /zc
delete /zc-cont/kid
quit
CMDS
)
expect "ephemeral removed on close" "$out" "[k, s-0000000001]"
expect "deleteall" "$out" "Node does not exist: /zc"
reject "deleteall" "$(grep '^\[' <<<"$out" | tail -n 1)" "zc,"
if [ $failed -gt 0 ]; then
  echo "--- session 2 output:"
  echo "$out"
  exit 1
fi
echo "zkcli checks passed"
