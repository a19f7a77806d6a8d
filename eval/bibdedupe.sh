#!/usr/bin/env bash
# Scores neardup's methods on the shared bib-dedupe data (13,722 labelled records, CORE 2020
# layout) and prints one line per run: method, settings, accuracy, macro-F1, docs/s.
# Usage: eval/bibdedupe.sh [path/to/bibdedupe-core.jsonl]
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:-../shared/data/bibdedupe-core.jsonl}
cargo build --release --quiet
bin=target/release/neardup
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() {
    local name=$1; shift
    "$bin" dedup "$data" --out "$out/$name" --quiet "$@" >/dev/null
    "$bin" eval --truth "$data" --pred "$out/$name" --json "$out/$name/eval.json" >/dev/null
    python3 - "$name" "$*" "$out/$name" <<'PY'
import json, sys
name, settings, d = sys.argv[1:]
e = json.load(open(f"{d}/eval.json")); s = json.load(open(f"{d}/summary.json"))
# upsert, index and search are the parts of a two-stage run's "candidates" time.
t = sum(v for k, v in s["seconds"].items() if k not in ("upsert", "index", "search")) + s["write_seconds"]
method = s["settings"]["method"]["name"]
print(f"| {method} | {settings or 'defaults'} | {e['accuracy']:.4f} | {e['macro_f1']:.4f} | "
      f"{e['dup']['precision']:.3f} | {e['dup']['recall']:.3f} | {s['documents'] / t:,.0f} |")
PY
}

echo "| method | settings | accuracy | macro-F1 | P dup | R dup | docs/s |"
echo "|---|---|---|---|---|---|---|"
run two-stage
run two-stage-short --min-shingles 1
run two-stage-minilm --embedder minilm
run two-stage-minilm-short --embedder minilm --min-shingles 1
run minhash --method minhash
run minhash-band --method minhash --confirm band
run minhash-2gram --method minhash --ngram 2 --threshold 0.5
run minhash-char5 --method minhash --char-ngram 5 --threshold 0.6
run jaccard --method jaccard
run jaccard-0.8 --method jaccard --threshold 0.8
run jaccard-complete --method jaccard --linkage complete
run resemblance --method resemblance
run resemblance-3gram --method resemblance --ngram 3 --threshold 0.5
run simhash --method simhash
run simhash-d6 --method simhash --max-distance 6
run simhash-probes --method simhash --probes 100
