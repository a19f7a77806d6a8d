#!/usr/bin/env bash
# neardup's own leave-one-record-set-out scores: for each of bib-dedupe's record sets, run
# neardup on that set alone with the settings loso.py chose on the other five (chosen.json),
# and score it. Run loso.py first (see README.md).
#
#   eval/confirm-rules/held-out.sh [--method two-stage|minhash] [extra dedup flags...]
#
# Environment: NEARDUP (default target/release/neardup), DATA (default
# ../shared/data/bibdedupe-core.jsonl), CHOSEN (default eval/confirm-rules/chosen.json; `-`
# runs every set with neardup's defaults, chosen on the domains of eval/domains/).
set -euo pipefail
cd "$(dirname "$0")/../.."
NEARDUP=${NEARDUP:-target/release/neardup}
DATA=${DATA:-../shared/data/bibdedupe-core.jsonl}
CHOSEN=${CHOSEN:-eval/confirm-rules/chosen.json}
[[ -x $NEARDUP ]] || { echo "error: $NEARDUP is missing: cargo build --release" >&2; exit 1; }
[[ $CHOSEN == - || -f $CHOSEN ]] || { echo "error: $CHOSEN is missing: run load.py, feat.py and loso.py first" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# One file per record set (the part of core_id before the slash), and each set's flags.
python3 - "$DATA" "$CHOSEN" "$work" <<'PY'
import json, sys
data, chosen, work = sys.argv[1:]
chosen = None if chosen == '-' else json.load(open(chosen))
files = {}
with open(data) as f:
    for n, line in enumerate(f, 1):
        record = json.loads(line)
        name = str(record['core_id']).split('/')[0]
        files.setdefault(name, []).append(line)
for name, lines in files.items():
    open(f'{work}/{name}.jsonl', 'w').writelines(lines)
    if chosen is None:
        open(f'{work}/{name}.flags', 'w').write('\n')
        continue
    c = chosen.get(name)
    if c is None:
        sys.exit(f'error: {name} is not in the chosen settings')
    # neardup's evidence rule always has the number guard; it has no containment rule (too
    # noisy to estimate from signatures, docs/evaluation.md), so a choice of one is dropped.
    if not c['number_guard'] or c['title_threshold'] is None:
        sys.exit(f'error: the choice for {name} ({c}) is not one neardup flags can express')
    if c['containment'] is not None:
        print(f'note: {name}: the containment rule chosen for it is not in neardup', file=sys.stderr)
    flags = ['--threshold', str(c['threshold']), '--min-shingles', str(c['min_shingles']),
             '--title-threshold', str(c['title_threshold'])]
    open(f'{work}/{name}.flags', 'w').write(' '.join(flags) + '\n')
PY

for file in "$work"/*.jsonl; do
  name=$(basename "$file" .jsonl)
  read -r -a flags < "$work/$name.flags"
  "$NEARDUP" dedup "$file" --out "$work/$name" -q "${flags[@]}" "$@" > "$work/$name.log" 2>&1 ||
    { cat "$work/$name.log" >&2; exit 1; }
  "$NEARDUP" eval --truth "$file" --pred "$work/$name" --json "$work/$name.eval.json" > /dev/null
done
# One row per held-out set, then all six pooled (from the class counts, not a mean of means).
python3 - "$work" <<'PY'
import glob, json, os, sys
work = sys.argv[1]
print(f"{'held-out set':<20} {'documents':>9} {'accuracy':>9} {'macro-F1':>9} {'P dup':>7} {'R dup':>7}  flags")
total = dict(documents=0, correct=0, tp=0, fp=0, tn=0, fn=0)
for path in sorted(glob.glob(f'{work}/*.eval.json')):
    name = os.path.basename(path)[:-len('.eval.json')]
    e = json.load(open(path))
    flags = open(f'{work}/{name}.flags').read().strip()
    print(f"{name:<20} {e['documents']:>9} {e['accuracy']:>9.4f} {e['macro_f1']:>9.4f} "
          f"{e['dup']['precision']:>7.3f} {e['dup']['recall']:>7.3f}  {flags}")
    total['documents'] += e['documents']
    total['correct'] += round(e['accuracy'] * e['documents'])
    for k in ('tp', 'fp', 'tn', 'fn'):
        total[k] += e['dup'][k]
ratio = lambda a, b: a / b if b else 0.0
f1 = lambda p, r: ratio(2 * p * r, p + r)
t = total
p, r = ratio(t['tp'], t['tp'] + t['fp']), ratio(t['tp'], t['tp'] + t['fn'])
p2, r2 = ratio(t['tn'], t['tn'] + t['fn']), ratio(t['tn'], t['tn'] + t['fp'])
print(f"{'pooled':<20} {t['documents']:>9} {ratio(t['correct'], t['documents']):>9.4f} "
      f"{(f1(p, r) + f1(p2, r2)) / 2:>9.4f} {p:>7.3f} {r:>7.3f}")
PY
