#!/usr/bin/env bash
# Load test of `neardup serve` on loopback: builds an index of DOCS generated documents (static
# embedder, embedded Qdrant), starts the server, and drives POST /similar and POST /documents
# with wrk (Debian package `wrk`), printing throughput and the latency distribution. Writes
# run with 1 connection (the baseline: each waits for a flush of its own) and then more.
# Usage: eval/serve-load.sh [DOCS] [SECONDS]   (NEARDUP names a neardup binary; else one is built)
set -euo pipefail
cd "$(dirname "$0")/.."
docs=${1:-100000}
seconds=${2:-20}
if [[ -z ${NEARDUP:-} ]]; then
    cargo build --release --quiet
    NEARDUP=target/release/neardup
fi
bin=$NEARDUP
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null && wait "$server"; rm -rf "$work"' EXIT
"$bin" gen --docs "$docs" --seed 1 --out "$work/corpus.jsonl" >/dev/null
"$bin" index "$work/corpus.jsonl" --index "$work/idx" --quiet
# Enough permits for every connection: a busy server's 503s would count as requests.
"$bin" serve --index "$work/idx" --addr 127.0.0.1:18088 --max-concurrent 64 > "$work/serve.out" 2>/dev/null &
server=$!
until grep -q listening "$work/serve.out" 2>/dev/null; do sleep 0.2; done
# load ROUTE CONNECTIONS: one wrk run (2 threads, or 1 for one connection).
load() {
    echo "== POST /$1, $docs documents indexed, $2 connections, ${seconds}s"
    wrk -t"$(($2 < 2 ? 1 : 2))" -c"$2" -d"${seconds}s" --latency -s "eval/serve/$1.lua" http://127.0.0.1:18088 |
        grep -E "Requests/sec|Latency  |50%|99%|Non-2xx|Socket errors"
}
load similar 8
# With more connections, the writes that arrive during a flush share the next one.
for connections in 1 2 8 32; do
    load documents "$connections"
done
curl -s http://127.0.0.1:18088/stats; echo
