#!/usr/bin/env bash
# Time and memory of the default two-stage pipeline at scale, on the embedded store and on a
# Qdrant server (one node from eval/qdrant/run.sh, when a Qdrant binary is found):
#   eval/scale.sh [DOCS...]        (default 100000)
# For each size: wall time, neardup's peak RSS, the server's peak RSS, and each stage's time
# (from the run's summary). Generated corpora (`neardup gen --seed 1`) are cached in $WORK.
# NEARDUP names a neardup built with --features qdrant; else one is built.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("${@:-100000}")
WORK=${WORK:-${TMPDIR:-/tmp}/neardup-scale}
mkdir -p "$WORK"
if [[ -z ${NEARDUP:-} ]]; then
  cargo build --release --quiet --features qdrant
  NEARDUP=target/release/neardup
fi
server=false
if bash eval/qdrant/run.sh binary > /dev/null 2>&1; then
  server=true
  trap 'bash eval/qdrant/run.sh stop' EXIT
fi

# run LABEL OUT ARGS...: one dedup, its peak RSS (and the server's), one table row.
run() {
  local label=$1 out=$2
  shift 2
  rm -rf "$out"
  /usr/bin/time -f "%e %M" -o "$WORK/time" "$NEARDUP" dedup "$@" --out "$out" -q > /dev/null 2>&1
  read -r wall rss < "$WORK/time"
  local served=-
  if [[ $label == server* ]]; then
    served=$(awk '/VmHWM/ {printf "%.0f", $2 / 1024}' "/proc/$(cat "${NEARDUP_QDRANT_RUN:-${TMPDIR:-/tmp}/neardup-qdrant}/node/pid")/status")
  fi
  python3 - "$out/summary.json" "$label" "$wall" "$rss" "$served" <<'PY'
import json, sys
summary, label, wall, rss, served = sys.argv[1:]
s = json.load(open(summary))
t = s["seconds"]
stages = " ".join(f"{k} {t[k]:.1f}" for k in ("sketch", "embed", "upsert", "index", "search", "confirm") if k in t)
print(f"| {label} | {s['documents']:,} | {float(wall):.1f} | {int(rss) / 1024:.0f} | {served} | {stages}, write {s['write_seconds']:.1f} |")
PY
}

echo "| store | documents | wall s | neardup peak MB | server peak MB | stage seconds |"
echo "|---|---|---|---|---|---|"
for docs in "${sizes[@]}"; do
  corpus=$WORK/gen-$docs.jsonl
  [[ -f $corpus ]] || "$NEARDUP" gen --docs "$docs" --seed 1 --out "$corpus" -q > /dev/null
  run "edge" "$WORK/edge-$docs" "$corpus"
  if $server; then
    bash eval/qdrant/run.sh stop
    url=$(bash eval/qdrant/run.sh single)
    run "server (1 node)" "$WORK/server-$docs" "$corpus" --qdrant-url "$url"
  fi
done
