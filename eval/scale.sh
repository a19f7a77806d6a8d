#!/usr/bin/env bash
# Time, memory and quality of the two-stage pipeline at scale against MinHash, in one sitting,
# on the embedded store and on a Qdrant server (one node from eval/qdrant/run.sh, when a Qdrant
# binary is found):
#   eval/scale.sh [DOCS...]        (default 100000)
# For each size: `--method minhash`, then two-stage searching k-means cells (`--cells` one per
# 160 documents, `--cell-probes 3`, the default centring and cosine floor;
# CELL_FLAGS replaces these, e.g. adding `--min-cosine 0.5`);
# for each run its wall time and the ratio to MinHash's, neardup's peak RSS (and the server's),
# accuracy, the share of labelled pairs among its candidates (eval/scaling/recall.py) and each
# stage's time. Generated corpora (`neardup gen --seed $SEED`, default 2) are cached in $WORK.
# NEARDUP names a neardup built with --features qdrant; else one is built.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("${@:-100000}")
SEED=${SEED:-2}
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

# run LABEL CORPUS OUT ARGS...: one dedup, its peak RSS (and the server's), one table row.
run() {
  local label=$1 corpus=$2 out=$3
  shift 3
  rm -rf "$out"
  /usr/bin/time -f "%e %M" -o "$WORK/time" "$NEARDUP" dedup "$corpus" "$@" --out "$out" -q > /dev/null 2>&1
  read -r wall rss < "$WORK/time"
  [[ $label == minhash ]] && minhash_wall=$wall
  local served=-
  if [[ $label == server* ]]; then
    served=$(awk '/VmHWM/ {printf "%.0f", $2 / 1024}' "/proc/$(cat "${NEARDUP_QDRANT_RUN:-${TMPDIR:-/tmp}/neardup-qdrant}/node/pid")/status")
  fi
  "$NEARDUP" eval --truth "$corpus" --pred "$out" --json "$out/eval.json" > /dev/null
  python3 eval/scaling/recall.py "$corpus" "$out" > "$out/recall.json"
  python3 - "$out" "$label" "$wall" "$minhash_wall" "$rss" "$served" <<'PY'
import json, sys
out, label, wall, minhash, rss, served = sys.argv[1:]
s = json.load(open(f"{out}/summary.json"))
accuracy = json.load(open(f"{out}/eval.json"))["accuracy"]
recall = json.load(open(f"{out}/recall.json"))["labelled_recall"]
t = s["seconds"]
stages = " ".join(f"{k} {t[k]:.1f}" for k in ("sketch", "embed", "upsert", "index", "search", "confirm") if k in t)
ratio = float(wall) / float(minhash)
print(f"| {label} | {s['documents']:,} | {float(wall):.1f} | {ratio:.1f}x | {int(rss) / 1024:,.0f} | {served} "
      f"| {accuracy:.4f} | {recall:.4f} | {stages}, write {s['write_seconds']:.1f} |")
PY
}

echo "| run | documents | wall s | / MinHash | neardup peak MB | server peak MB | accuracy | labelled recall | stage seconds |"
echo "|---|---|---|---|---|---|---|---|---|"
for docs in "${sizes[@]}"; do
  corpus=$WORK/gen-$docs-seed$SEED.jsonl
  [[ -f $corpus ]] || "$NEARDUP" gen --docs "$docs" --seed "$SEED" --out "$corpus" -q > /dev/null
  read -r -a cells <<< "${CELL_FLAGS:-"--cells $((docs > 160 ? docs / 160 : 1)) --cell-probes 3"}"
  run minhash "$corpus" "$WORK/minhash-$docs" --method minhash
  run "edge, cells" "$corpus" "$WORK/edge-$docs" "${cells[@]}"
  if $server; then
    bash eval/qdrant/run.sh stop
    url=$(bash eval/qdrant/run.sh single)
    run "server (1 node), cells" "$corpus" "$WORK/server-$docs" "${cells[@]}" --qdrant-url "$url"
  fi
done
