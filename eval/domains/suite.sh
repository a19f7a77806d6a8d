#!/usr/bin/env bash
# The validation suite: every labelled domain, deduplicated by neardup under each confirm rule,
# one table of accuracy / macro-F1 (CORE 2020 metrics) per domain, the pooled figure (from the
# class counts of all domains) and the worst domain of each column.
#
#   eval/domains/suite.sh [--method two-stage|minhash] [extra dedup flags...]
#
# Columns: the design card's plain rule, the evidence rule as it was before the suite (0.8,
# whole-text number guard, title 0.9, no containment), today's default, and any candidate
# given as CANDIDATES="name=flags;name=flags". Domains: built by build.py (pinned sources),
# noisegen.py, unspaced.py (Chinese, Japanese and Thai), `neardup gen`, bib-dedupe from
# ../shared/data, and semantic.py (paraphrase sets from ../shared/data/semantic: duplicates in
# other words). A cell marked `<` is below
# the plain rule on that domain.
#
# Environment: NEARDUP (default target/release/neardup), SHARED (default ../shared).
set -euo pipefail
cd "$(dirname "$0")/../.."
NEARDUP=${NEARDUP:-target/release/neardup}
SHARED=${SHARED:-../shared}
DATA=eval/domains/data
[[ -x $NEARDUP ]] || { echo "error: $NEARDUP is missing: cargo build --release" >&2; exit 1; }

mkdir -p "$DATA"
[[ -f $DATA/dblp-acm.jsonl ]] || python3 eval/domains/build.py --out "$DATA"
[[ -f $DATA/noisegen.jsonl ]] || python3 eval/domains/noisegen.py --seed 7 --out "$DATA/noisegen.jsonl"
[[ -f $DATA/neardup-gen.jsonl ]] || "$NEARDUP" gen --docs 20000 --seed 11 --out "$DATA/neardup-gen.jsonl" -q
[[ -f $DATA/unspaced.jsonl ]] || python3 eval/domains/unspaced.py --seed 5 --out "$DATA/unspaced.jsonl"
[[ -f $DATA/twitterppdb.jsonl ]] || python3 eval/domains/semantic.py --shared "$SHARED" --out "$DATA"
domains=("$SHARED/data/bibdedupe-core.jsonl" "$DATA/cora-citations.jsonl" "$DATA/cddb-discs.jsonl"
         "$DATA/dblp-acm.jsonl" "$DATA/noisegen.jsonl" "$DATA/neardup-gen.jsonl"
         "$DATA/unspaced.jsonl" "$DATA/mrpc.jsonl" "$DATA/parade.jsonl" "$DATA/stsb.jsonl"
         "$DATA/twitterppdb.jsonl")

columns=("plain=--confirm estimate --threshold 0.7"
         "before=--threshold 0.8 --containment 0 --number-guard text --title-threshold 0.9"
         "default=")
IFS=';' read -r -a extra <<< "${CANDIDATES:-}"
columns+=("${extra[@]}")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for file in "${domains[@]}"; do
  domain=$(basename "$file" .jsonl)
  for column in "${columns[@]}"; do
    name=${column%%=*}
    read -r -a flags <<< "${column#*=}"
    out="$work/$domain.$name"
    "$NEARDUP" dedup "$file" --out "$out" -q "${flags[@]}" "$@" > "$out.log" 2>&1 ||
      { cat "$out.log" >&2; exit 1; }
    "$NEARDUP" eval --truth "$file" --pred "$out" --json "$out.eval.json" > /dev/null
  done
done

python3 - "$work" "${columns[@]%%=*}" <<'PY'
import glob, json, os, sys
work, names = sys.argv[1], sys.argv[2:]
ratio = lambda a, b: a / b if b else 0.0
f1 = lambda p, r: ratio(2 * p * r, p + r)
def score(e):
    return e['accuracy'], e['macro_f1']
domains = sorted({os.path.basename(p).split('.')[0] for p in glob.glob(f'{work}/*.eval.json')})
print(f"{'domain':<18}" + ''.join(f"{n:>20}" for n in names))
pooled = {n: dict(documents=0, correct=0, tp=0, fp=0, tn=0, fn=0) for n in names}
worst = {n: None for n in names}
for d in domains:
    row, plain = f"{d:<18}", None
    for n in names:
        e = json.load(open(f'{work}/{d}.{n}.eval.json'))
        acc, mf1 = score(e)
        plain = mf1 if n == 'plain' else plain
        mark = '<' if plain is not None and n != 'plain' and mf1 < plain - 1e-9 else ' '
        row += f"{acc:>10.4f} / {mf1:.4f}{mark}"
        t = pooled[n]
        t['documents'] += e['documents']
        t['correct'] += round(e['accuracy'] * e['documents'])
        for k in ('tp', 'fp', 'tn', 'fn'):
            t[k] += e['dup'][k]
        if worst[n] is None or mf1 < worst[n][1]:
            worst[n] = (d, mf1)
    print(row)
row = f"{'pooled':<18}"
for n in names:
    t = pooled[n]
    p, r = ratio(t['tp'], t['tp'] + t['fp']), ratio(t['tp'], t['tp'] + t['fn'])
    p2, r2 = ratio(t['tn'], t['tn'] + t['fn']), ratio(t['tn'], t['tn'] + t['fp'])
    row += f"{ratio(t['correct'], t['documents']):>10.4f} / {(f1(p, r) + f1(p2, r2)) / 2:.4f} "
print(row)
print(f"{'worst (macro-F1)':<18}" + ''.join(f"{worst[n][0][:12]:>13} {worst[n][1]:.4f}" for n in names))
print('cells: accuracy / macro-F1; < marks a cell below the plain rule on that domain')
PY
