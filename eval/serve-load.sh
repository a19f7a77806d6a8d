#!/usr/bin/env bash
# Load test of `neardup serve` on loopback: builds an index of DOCS generated documents (static
# embedder, embedded Qdrant), and drives POST /similar and POST /documents with wrk (Debian
# package `wrk`), printing throughput and the latency distribution.
#
# Every row starts a server on its own copy of the freshly built index, so that rows differ in
# their connections only: a write is searched against the documents written before it, and
# those sit in a segment with no graph that each search scans, so a row that followed another
# would pay for its writes too. Writes run with 1 connection (each waits for a sync of its own)
# and then more, whose writes share syncs. The last part writes with 8 connections for WINDOWS
# windows in a row on one server, to show the rate as written documents pile up.
# Usage: eval/serve-load.sh [DOCS] [SECONDS] [WINDOWS]
#   (NEARDUP names a neardup binary; else one is built)
set -euo pipefail
cd "$(dirname "$0")/.."
docs=${1:-100000}
seconds=${2:-20}
windows=${3:-6}
if [[ -z ${NEARDUP:-} ]]; then
    cargo build --release --quiet
    NEARDUP=target/release/neardup
fi
bin=$NEARDUP
work=$(mktemp -d)
server=
stop() {
    if [[ -n $server ]]; then
        kill "$server" 2>/dev/null && wait "$server" || true
        server=
    fi
}
trap 'stop; rm -rf "$work"' EXIT
"$bin" gen --docs "$docs" --seed 1 --out "$work/corpus.jsonl" >/dev/null
"$bin" index "$work/corpus.jsonl" --index "$work/built" --quiet
# start: a server on a fresh copy of the built index.
start() {
    stop
    rm -rf "$work/idx" "$work/serve.out"
    cp -r "$work/built" "$work/idx"
    # Enough permits for every connection: a busy server's 503s would count as requests.
    "$bin" serve --index "$work/idx" --addr 127.0.0.1:18088 --max-concurrent 64 \
        > "$work/serve.out" 2>/dev/null &
    server=$!
    until grep -q listening "$work/serve.out" 2>/dev/null; do
        kill -0 "$server" 2>/dev/null || { echo "serve did not start" >&2; exit 1; }
        sleep 0.2
    done
}
# load ROUTE CONNECTIONS: one wrk run (2 threads, or 1 for one connection).
load() {
    wrk -t"$(($2 < 2 ? 1 : 2))" -c"$2" -d"${seconds}s" --latency -s "eval/serve/$1.lua" http://127.0.0.1:18088 |
        grep -E "Requests/sec|Latency  |50%|99%|Non-2xx|Socket errors"
}
documents() {
    curl -s http://127.0.0.1:18088/stats | grep -o '"documents":[0-9]*' | cut -d: -f2
}
start
echo "== POST /similar, $docs documents indexed, 8 connections, ${seconds}s"
load similar 8
for connections in 1 2 8 32; do
    start
    echo "== POST /documents, $docs documents indexed, $connections connections, ${seconds}s"
    load documents "$connections"
done
start
for window in $(seq "$windows"); do
    echo "== POST /documents, 8 connections, window $window of ${seconds}s, $(documents) documents at its start"
    load documents 8
done
stop
