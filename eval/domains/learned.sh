#!/usr/bin/env bash
# The learned rule on the validation suite, each domain left out: for every domain, a model is
# fitted (`neardup train`) on the candidate pairs of the other domains, and the domain is
# deduplicated with it (`--match meaning`) and scored (macro-F1, CORE 2020 metrics). Also
# fits the model on every domain: the one neardup ships (src/confirm/meaning-model.json).
#
#   eval/domains/learned.sh [OUT]        (OUT default: eval/domains/cache/learned)
#
# Environment: NEARDUP (default target/release/neardup), SHARED (default ../shared),
# DOMAINS (default: the suite's eleven), FLAGS (extra dedup and train flags, e.g. --embedder minilm).
set -euo pipefail
cd "$(dirname "$0")/../.."
NEARDUP=${NEARDUP:-target/release/neardup}
SHARED=${SHARED:-../shared}
DATA=eval/domains/data
OUT=${1:-eval/domains/cache/learned}
read -r -a flags <<< "${FLAGS:-}"
default_domains="$SHARED/data/bibdedupe-core.jsonl $DATA/cora-citations.jsonl $DATA/cddb-discs.jsonl
  $DATA/dblp-acm.jsonl $DATA/noisegen.jsonl $DATA/neardup-gen.jsonl $DATA/unspaced.jsonl
  $DATA/mrpc.jsonl $DATA/parade.jsonl $DATA/stsb.jsonl $DATA/twitterppdb.jsonl"
read -r -a domains <<< "$(echo ${DOMAINS:-$default_domains})"
mkdir -p "$OUT/pairs" "$OUT/models" "$OUT/runs"

# Each domain's candidate pairs, searched once.
for file in "${domains[@]}"; do
  name=$(basename "$file")
  [[ -f $OUT/pairs/$name.pairs.json ]] ||
    "$NEARDUP" train -q --truth "$file" --save-pairs "$OUT/pairs" --out "$OUT/models/only-$name.json" "${flags[@]}" > /dev/null
done

# Each domain left out, then every domain together.
printf '%-18s %10s %10s\n' domain accuracy macro-F1
for file in "${domains[@]}"; do
  name=$(basename "$file")
  others=()
  for other in "${domains[@]}"; do
    [[ $other == "$file" ]] || others+=(--pairs "$OUT/pairs/$(basename "$other").pairs.json")
  done
  model="$OUT/models/without-$name.json"
  "$NEARDUP" train -q "${others[@]}" --out "$model" > /dev/null
  run="$OUT/runs/${name%.jsonl}"
  "$NEARDUP" dedup "$file" -q --match meaning --confirm-model "$model" "${flags[@]}" --out "$run" > /dev/null
  "$NEARDUP" eval --truth "$file" --pred "$run" --json "$run.eval.json" > /dev/null
  python3 -c "import json,sys; e=json.load(open(sys.argv[1])); print(f\"{sys.argv[2]:<18} {e['accuracy']:>10.4f} {e['macro_f1']:>10.4f}\")" "$run.eval.json" "${name%.jsonl}"
done
all=()
for file in "${domains[@]}"; do all+=(--pairs "$OUT/pairs/$(basename "$file").pairs.json"); done
"$NEARDUP" train "${all[@]}" --out "$OUT/models/every-domain.json"
