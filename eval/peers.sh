#!/usr/bin/env bash
# neardup against the peers users would otherwise pick (datasketch 2.0.0, rensa 0.5.0,
# gaoya 0.2.2, from PyPI), on the same generated corpus, in one run: wall and CPU seconds, peak
# RSS, accuracy and macro-F1 per tool, and neardup's speed ratio to each.
# Usage: eval/peers.sh [DOCS] [TOOLS]     e.g. eval/peers.sh 100000 "rensa gaoya datasketch"
set -euo pipefail
cd "$(dirname "$0")/.."
docs=${1:-100000}
tools=${2:-"rensa gaoya datasketch"}
venv=target/peers-venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q datasketch==2.0.0 rensa==0.5.0 gaoya==0.2.2
fi
cargo build --release --quiet
bin=target/release/neardup
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" gen --docs "$docs" --seed 1 --out "$work/corpus.jsonl" >/dev/null

measure() {
    local name=$1; shift
    /usr/bin/time -f "%e %U %S %M" -o "$work/$name.time" "$@" >/dev/null
    "$bin" eval --truth "$work/corpus.jsonl" --pred "$work/$name" --json "$work/$name.eval.json" >/dev/null
}
measure neardup "$bin" dedup "$work/corpus.jsonl" --method minhash --out "$work/neardup" --quiet
# The peers' banding, for a like-for-like accuracy comparison.
measure neardup-16x8 "$bin" dedup "$work/corpus.jsonl" --method minhash --out "$work/neardup-16x8" --quiet --bands 16 --rows 8
for tool in $tools; do
    measure "$tool" "$venv/bin/python" eval/peers.py "$tool" "$work/corpus.jsonl" "$work/$tool"
done

python3 - "$work" "$docs" neardup neardup-16x8 $tools <<'PY'
import json, sys
work, docs, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows = {}
for n in names:
    wall, user, sys_, rss = open(f"{work}/{n}.time").read().split()
    e = json.load(open(f"{work}/{n}.eval.json"))
    rows[n] = (float(wall), float(user) + float(sys_), int(rss) / 1024, e["accuracy"], e["macro_f1"])
print(f"{docs:,} generated documents, word 1-gram sets, 128 permutations, threshold 0.7")
print("(neardup: its default banding, 9 x 13 at 0.7, and the peers' 16 x 8)\n")
print("| tool | wall s | CPU s | peak RSS MB | accuracy | macro-F1 | neardup faster (wall / CPU) |")
print("|---|---|---|---|---|---|---|")
base = rows["neardup"]
for n in names:
    w, c, r, a, f = rows[n]
    ratio = "" if n.startswith("neardup") else f"{w / base[0]:.1f}x / {c / base[1]:.1f}x"
    print(f"| {n} | {w:.2f} | {c:.2f} | {r:,.0f} | {a:.4f} | {f:.4f} | {ratio} |")
PY
