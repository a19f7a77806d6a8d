#!/usr/bin/env bash
# neardup's own leave-one-record-set-out scores: for each of bib-dedupe's record sets, run
# neardup on that set alone with the settings loso.py chose on the other five (chosen.json),
# and score it. Run loso.py first (see README.md).
#
#   eval/confirm-rules/held-out.sh [--method two-stage|minhash] [extra dedup flags...]
#
# Environment: NEARDUP (default target/release/neardup), DATA (default
# ../shared/data/bibdedupe-core.jsonl), CHOSEN (default eval/confirm-rules/chosen.json).
set -euo pipefail
cd "$(dirname "$0")/../.."
NEARDUP=${NEARDUP:-target/release/neardup}
DATA=${DATA:-../shared/data/bibdedupe-core.jsonl}
CHOSEN=${CHOSEN:-eval/confirm-rules/chosen.json}
[[ -x $NEARDUP ]] || { echo "error: $NEARDUP is missing: cargo build --release" >&2; exit 1; }
[[ -f $CHOSEN ]] || { echo "error: $CHOSEN is missing: run load.py, feat.py and loso.py first" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# One file per record set (the part of core_id before the slash), and each set's flags.
python3 - "$DATA" "$CHOSEN" "$work" <<'PY'
import json, sys
data, chosen, work = sys.argv[1:]
chosen = json.load(open(chosen))
files = {}
with open(data) as f:
    for n, line in enumerate(f, 1):
        record = json.loads(line)
        name = str(record['core_id']).split('/')[0]
        files.setdefault(name, []).append(line)
for name, lines in files.items():
    open(f'{work}/{name}.jsonl', 'w').writelines(lines)
    c = chosen.get(name)
    if c is None:
        sys.exit(f'error: {name} is not in the chosen settings')
    # neardup's evidence rule always has the number guard; it has no containment rule (too
    # noisy to estimate from signatures, README "Results"), so a choice of one is dropped.
    if not c['number_guard'] or c['title_threshold'] is None:
        sys.exit(f'error: the choice for {name} ({c}) is not one neardup flags can express')
    if c['containment'] is not None:
        print(f'note: {name}: the containment rule chosen for it is not in neardup', file=sys.stderr)
    flags = ['--threshold', str(c['threshold']), '--min-shingles', str(c['min_shingles']),
             '--title-threshold', str(c['title_threshold'])]
    open(f'{work}/{name}.flags', 'w').write(' '.join(flags))
PY

printf '%-20s %9s %9s %9s %7s %7s  %s\n' "held-out set" documents accuracy macro-F1 "P dup" "R dup" flags
for file in "$work"/*.jsonl; do
  name=$(basename "$file" .jsonl)
  read -r -a flags < "$work/$name.flags"
  "$NEARDUP" dedup "$file" --out "$work/$name" -q "${flags[@]}" "$@"
  "$NEARDUP" eval --truth "$file" --pred "$work/$name" --json "$work/$name.eval.json" > /dev/null
  python3 - "$work/$name.eval.json" "$name" "${flags[*]}" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]:<20} {e['documents']:>9} {e['accuracy']:>9.4f} {e['macro_f1']:>9.4f} "
      f"{e['dup']['precision']:>7.3f} {e['dup']['recall']:>7.3f}  {sys.argv[3]}")
PY
done
