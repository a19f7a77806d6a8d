#!/usr/bin/env bash
# Load test of `neardup serve` on loopback: builds an index of DOCS generated documents (static
# embedder, embedded Qdrant), starts the server, and drives POST /similar and POST /documents
# with wrk (Debian package `wrk`), printing throughput and the latency distribution.
# Usage: eval/serve-load.sh [DOCS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
docs=${1:-100000}
seconds=${2:-20}
cargo build --release --quiet
bin=target/release/neardup
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
"$bin" gen --docs "$docs" --seed 1 --out "$work/corpus.jsonl" >/dev/null
"$bin" index "$work/corpus.jsonl" --index "$work/idx" --quiet
"$bin" serve --index "$work/idx" --addr 127.0.0.1:18088 > "$work/serve.out" 2>/dev/null &
server=$!
until grep -q listening "$work/serve.out" 2>/dev/null; do sleep 0.2; done
for route in similar documents; do
    echo "== POST /$route, $docs documents indexed, 2 threads, 8 connections, ${seconds}s"
    wrk -t2 -c8 -d"${seconds}s" --latency -s "eval/serve/$route.lua" http://127.0.0.1:18088 |
        grep -E "Requests/sec|Latency  |50%|99%|Non-2xx|Socket errors"
done
curl -s http://127.0.0.1:18088/stats; echo
