#!/usr/bin/env bash
# Starts and stops Qdrant servers on loopback, with temporary storage, for tests and benchmarks.
#
#   eval/qdrant/run.sh single       one node: REST 6333, gRPC 6334 (docker-compose.yml's `qdrant`)
#   eval/qdrant/run.sh cluster      three nodes in one cluster; node1's gRPC is 6344, as the
#                                   compose file's cluster profile publishes it (node2: 6354,
#                                   node3: 6364; REST and p2p are the ports just below and above)
#   eval/qdrant/run.sh kill-node N  kill -9 node N of the cluster (a fault, for the fault test)
#   eval/qdrant/run.sh stop         stop exactly the processes this script started; drop storage
#   eval/qdrant/run.sh binary       print the server binary that would run (exit 1 if none)
#
# Each start waits until every node answers (and, for the cluster, until all three are peers),
# then prints the gRPC URL to give neardup: `--qdrant-url $(eval/qdrant/run.sh single)`.
#
# Environment:
#   QDRANT_BIN         the server binary (default: what eval/qdrant/build.sh cached)
#   NEARDUP_QDRANT_RUN where pids, logs and storage live (default ${TMPDIR:-/tmp}/neardup-qdrant)
set -euo pipefail

CACHE=${NEARDUP_QDRANT_CACHE:-$HOME/.cache/neardup/qdrant}
RUN=${NEARDUP_QDRANT_RUN:-${TMPDIR:-/tmp}/neardup-qdrant}

binary() {
  local bin=${QDRANT_BIN:-}
  if [[ -z $bin ]]; then
    for candidate in "$CACHE"/bin/qdrant-*-perf "$CACHE"/bin/qdrant-*-ci; do
      [[ -x $candidate ]] && { bin=$candidate; break; }
    done
  fi
  if [[ -z $bin || ! -x $bin ]]; then
    echo "error: no Qdrant binary: set QDRANT_BIN or run eval/qdrant/build.sh" >&2
    exit 1
  fi
  echo "$bin"
}

# start NAME HTTP_PORT [qdrant args...]: one node in the background, its pid in $RUN/NAME/pid.
start() {
  local name=$1 http=$2 dir=$RUN/$1
  shift 2
  mkdir -p "$dir/storage" "$dir/snapshots"
  (
    cd "$dir"
    QDRANT__SERVICE__HOST=127.0.0.1 \
      QDRANT__SERVICE__HTTP_PORT=$http \
      QDRANT__SERVICE__GRPC_PORT=$((http + 1)) \
      QDRANT__CLUSTER__P2P__PORT=$((http + 2)) \
      QDRANT__STORAGE__STORAGE_PATH=$dir/storage \
      QDRANT__STORAGE__SNAPSHOTS_PATH=$dir/snapshots \
      QDRANT__TELEMETRY_DISABLED=true \
      setsid "$BIN" "$@" > "$dir/log" 2>&1 < /dev/null &
    echo $! > "$dir/pid"
  )
  echo "$http" > "$dir/http"
}

# wait_ready NAME: until the node's REST readiness probe answers (60 s at most).
wait_ready() {
  local dir=$RUN/$1 http
  http=$(cat "$dir/http")
  for _ in $(seq 600); do
    curl -fs "http://127.0.0.1:$http/readyz" > /dev/null 2>&1 && return 0
    if ! kill -0 "$(cat "$dir/pid")" 2> /dev/null; then
      echo "error: $1 exited; its log:" >&2
      tail -n 20 "$dir/log" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "error: $1 did not answer on port $http within 60 s (log: $dir/log)" >&2
  exit 1
}

running() {
  local pidfile
  for pidfile in "$RUN"/*/pid; do
    [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2> /dev/null && return 0
  done
  return 1
}

stop() {
  local pidfile pid
  for pidfile in "$RUN"/*/pid; do
    [[ -f $pidfile ]] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2> /dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2> /dev/null || true
  done
  rm -rf "$RUN"
}

case ${1:-} in
  single)
    BIN=$(binary)
    if running; then echo "error: servers from $RUN are running; run '$0 stop' first" >&2; exit 1; fi
    rm -rf "$RUN"
    start node 6333
    wait_ready node
    echo "http://127.0.0.1:6334"
    ;;
  cluster)
    BIN=$(binary)
    if running; then echo "error: servers from $RUN are running; run '$0 stop' first" >&2; exit 1; fi
    rm -rf "$RUN"
    export QDRANT__CLUSTER__ENABLED=true
    start node1 6343 --uri http://127.0.0.1:6345
    wait_ready node1
    start node2 6353 --bootstrap http://127.0.0.1:6345 --uri http://127.0.0.1:6355
    start node3 6363 --bootstrap http://127.0.0.1:6345 --uri http://127.0.0.1:6365
    wait_ready node2
    wait_ready node3
    for _ in $(seq 600); do
      peers=$(curl -fs http://127.0.0.1:6343/cluster | grep -o '"uri"' | wc -l)
      [[ $peers -ge 3 ]] && break
      sleep 0.1
    done
    [[ $peers -ge 3 ]] || { echo "error: the cluster has $peers of 3 peers after 60 s (logs in $RUN)" >&2; exit 1; }
    echo "http://127.0.0.1:6344"
    ;;
  kill-node)
    pidfile=$RUN/node${2:?which node: 1, 2 or 3}/pid
    [[ -f $pidfile ]] || { echo "error: no node$2 started from $RUN" >&2; exit 1; }
    kill -9 "$(cat "$pidfile")"
    ;;
  stop) stop ;;
  binary) binary ;;
  *)
    sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
