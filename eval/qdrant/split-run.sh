#!/usr/bin/env bash
# One two-stage run split over workers that share a three-node Qdrant cluster
# (eval/qdrant/run.sh cluster), as a batch scheduler would run it:
#   `neardup index` of DOCS generated documents into 3 shards x 2 replicas, then PARTS workers
#   at once, each `neardup dedup --part I/PARTS`, then `neardup merge`; then the same index
#   searched as one part (1/1) and merged, for comparison. Prints each step's time, the scores,
#   and which output files are byte-equal.
# Usage: eval/qdrant/split-run.sh [DOCS [PARTS [FLAGS...]]]   (default 20000 4; FLAGS go to
# every part, e.g. --exact-search; NEARDUP names a neardup built with --features qdrant).
# Searches through HNSW graphs go to either replica of a shard, and the replicas' graphs are
# built apart, so only --exact-search (or one replica) makes the parts' candidates repeatable.
set -euo pipefail
cd "$(dirname "$0")/../.."
docs=${1:-20000}
parts=${2:-4}
shift $(($# > 1 ? 2 : $#))
if [[ -z ${NEARDUP:-} ]]; then
  cargo build --release --quiet --features qdrant
  NEARDUP=target/release/neardup
fi
run=eval/qdrant/run.sh
work=$(mktemp -d)
trap 'bash "$run" stop; rm -rf "$work"' EXIT

"$NEARDUP" gen --docs "$docs" --seed 1 --out "$work/corpus.jsonl" -q > /dev/null
url=$(bash "$run" cluster)
corpus=$work/corpus.jsonl
index=(--index "$work/idx" --qdrant-url "$url")
seconds() { python3 -c 'import time; print(f"{time.time():.3f}")'; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(seconds)"; }

t=$(seconds)
"$NEARDUP" index "$corpus" "${index[@]}" --shards 3 --replicas 2 -q > /dev/null
echo "index: $docs documents, 3 shards x 2 replicas on 3 nodes: $(elapsed "$t") s"

t=$(seconds)
pids=()
for i in $(seq 1 "$parts"); do
  "$NEARDUP" dedup "$corpus" "${index[@]}" --part "$i/$parts" --out "$work/part$i" -q "$@" \
    > "$work/part$i.log" 2>&1 &
  pids+=($!)
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { cat "$work/part$((i + 1)).log"; exit 1; }
done
echo "$parts parts at once: $(elapsed "$t") s"
t=$(seconds)
"$NEARDUP" merge $(for i in $(seq 1 "$parts"); do echo "$work/part$i"; done) --out "$work/merged" -q > /dev/null
echo "merge: $(elapsed "$t") s"

t=$(seconds)
"$NEARDUP" dedup "$corpus" "${index[@]}" --part 1/1 --out "$work/one" -q "$@" > /dev/null
"$NEARDUP" merge "$work/one" --out "$work/whole" -q > /dev/null
echo "one part (1/1) + merge: $(elapsed "$t") s"

for result in merged whole; do
  scores=$("$NEARDUP" eval --truth "$corpus" --pred "$work/$result" | sed -n 2,3p | awk '{print $1, $2}' | tr '\n' ' ')
  echo "   $result: $(wc -l < "$work/$result/pairs.jsonl") pairs, $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["candidates"])' "$work/$result/summary.json") candidates; $scores"
done
for file in pairs.jsonl candidates.parquet groups.jsonl unique.jsonl; do
  if cmp -s "$work/merged/$file" "$work/whole/$file"; then
    echo "   $file: byte-equal"
  elif [[ $file == groups.jsonl || $file == unique.jsonl ]]; then
    echo "   $file: differs"
  else
    echo "   $file: differs: $(python3 - "$work/merged/$file" "$work/whole/$file" <<'PY'
import json, sys
def pairs(path):
    return {(r["id_a"], r["id_b"]): r.get("cosine") for r in map(json.loads, open(path))}
merged, whole = pairs(sys.argv[1]), pairs(sys.argv[2])
only = [p for p in merged if p not in whole]
# A tie: the other run paired one of the two documents with another at the same cosine.
by_end = {(end, c) for (a, b), c in whole.items() if (a, b) not in merged for end in (a, b)}
ties = sum(1 for (a, b) in only if (a, merged[a, b]) in by_end or (b, merged[a, b]) in by_end)
print(f"{len(only)} lines of the merge not in the single part's, {ties} of them ties at the same cosine")
PY
)"
  fi
done
