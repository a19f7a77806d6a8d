#!/usr/bin/env bash
# neardup against the peers users would otherwise pick (datasketch 2.0.0, rensa 0.5.0,
# gaoya 0.2.2, from PyPI), on the same generated corpus, in one run: wall and CPU seconds, peak
# RSS, accuracy and macro-F1 per tool, and neardup's speed ratio to each; then the stricter
# ratio, each peer's compute alone (tokenising to verified pairs, its JSON load left out)
# against neardup's whole run.
# rensa-matrix and rensa-matrix-rho are rensa's bulk matrix path, which flags records and
# finds no pairs or groups: every tool is also scored on flags alone (a record is flagged when
# it is in a group; right when it has labelled duplicates).
# neardup-python, named among the tools, is neardup's MinHash through its Python API
# (`neardup.dedup(path).write(out)`), the package built from this checkout into the venv.
# Usage: eval/peers.sh [DOCS] [TOOLS] [ABSTRACT_WORDS]
#   e.g. eval/peers.sh 100000 "rensa rensa-matrix rensa-matrix-rho" 250   (250: CORE-like, ~3 KB a record)
set -euo pipefail
cd "$(dirname "$0")/.."
docs=${1:-100000}
tools=${2:-"rensa gaoya datasketch"}
abstract_words=${3:-250}
venv=target/peers-venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q datasketch==2.0.0 rensa==0.5.0 gaoya==0.2.2
fi
cargo build --release --quiet
bin=target/release/neardup
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" gen --docs "$docs" --seed 1 --abstract-words "$abstract_words" --out "$work/corpus.jsonl" >/dev/null
# The same start for every tool: the corpus on disk and read into the page cache (neardup
# writes large files past the cache, so the first tool would otherwise read it from disk).
sync
cat "$work/corpus.jsonl" > /dev/null

measure() {
    local name=$1; shift
    /usr/bin/time -f "%e %U %S %M" -o "$work/$name.time" "$@" >/dev/null
    local pred=(--pred "$work/$name")
    [[ $name == neardup* ]] || pred=(--pred-groups "$work/$name/groups.jsonl")
    [[ -f $work/$name/flags.json ]] && return
    "$bin" eval --truth "$work/corpus.jsonl" "${pred[@]}" --json "$work/$name.eval.json" >/dev/null
}
# One untimed run first (as hyperfine's --warmup): the first process to read a new file here
# took 0.3 s longer at 100,000 records, even with the file cached.
"$bin" dedup "$work/corpus.jsonl" --method minhash --out "$work/warmup" --quiet >/dev/null
rm -rf "$work/warmup"
measure neardup "$bin" dedup "$work/corpus.jsonl" --method minhash --out "$work/neardup" --quiet
measure neardup-oph "$bin" dedup "$work/corpus.jsonl" --method minhash --out "$work/neardup-oph" --quiet --hashing one-permutation
# The peers' banding, for a like-for-like accuracy comparison.
measure neardup-16x8 "$bin" dedup "$work/corpus.jsonl" --method minhash --out "$work/neardup-16x8" --quiet --bands 16 --rows 8
for tool in $tools; do
    if [[ $tool == neardup-python ]]; then
        # Through the Python API (issue 49): the package built from this checkout, in release.
        "$venv/bin/pip" install -q .
        measure neardup-python "$venv/bin/python" -c \
            "import sys, neardup; neardup.dedup(sys.argv[1], method='minhash', quiet=True).write(sys.argv[2])" \
            "$work/corpus.jsonl" "$work/neardup-python"
        continue
    fi
    measure "$tool" "$venv/bin/python" eval/peers.py "$tool" "$work/corpus.jsonl" "$work/$tool"
done

python3 - "$work" "$docs" "$(wc -c < "$work/corpus.jsonl")" neardup neardup-oph neardup-16x8 $tools <<'PY'
import json, os, sys
work, docs, size, names = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
labelled = set()
with open(f"{work}/corpus.jsonl", encoding="utf8") as f:
    for line in f:
        d = json.loads(line)
        if d.get("labelled_duplicates"):
            labelled.add(d["core_id"])


def flagged(n):
    """The ids a tool flags as duplicates: its flags, or the members of its groups."""
    flags = f"{work}/{n}/flags.json"
    if os.path.exists(flags):
        return set(json.load(open(flags)))
    return {m for line in open(f"{work}/{n}/groups.jsonl") for m in json.loads(line)["members"]}


def flag_scores(flags):
    """Accuracy and macro-F1 of flags against "has labelled duplicates", per record."""
    tp = len(flags & labelled)
    fp, fn = len(flags - labelled), len(labelled - flags)
    tn = docs - tp - fp - fn
    f1 = lambda tp, fp, fn: 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    return (tp + tn) / docs, (f1(tp, fp, fn) + f1(tn, fn, fp)) / 2


rows = {}
for n in names:
    wall, user, sys_, rss = open(f"{work}/{n}.time").read().split()
    e = json.load(open(f"{work}/{n}.eval.json")) if os.path.exists(f"{work}/{n}.eval.json") else None
    scores = (e["accuracy"], e["macro_f1"]) if e else (None, None)
    rows[n] = (float(wall), float(user) + float(sys_), int(rss) / 1024, *scores, *flag_scores(flagged(n)))
print(f"{docs:,} generated documents ({size / docs / 1000:.1f} KB a record), word 1-gram sets,"
      " 128 slots; the peers confirm an estimated Jaccard >= 0.7")
print("(neardup: its defaults, the evidence rule at 0.8 banded 14 x 9, and the peers' 16 x 8;"
      " neardup-oph: --hashing one-permutation)\n")
print("| tool | returns | wall s | CPU s | peak RSS MB | accuracy | macro-F1 | flag accuracy | flag macro-F1 | neardup faster (wall / CPU) |")
print("|---|---|---|---|---|---|---|---|---|---|")
base = rows["neardup"]
for n in names:
    w, c, r, a, f, fa, ff = rows[n]
    returns = "flags" if a is None else "pairs, groups"
    a, f = ("n/a", "n/a") if a is None else (f"{a:.4f}", f"{f:.4f}")
    ratio = "" if n.startswith("neardup") else f"{w / base[0]:.1f}x / {c / base[1]:.1f}x"
    print(f"| {n} | {returns} | {w:.2f} | {c:.2f} | {r:,.0f} | {a} | {f} | {fa:.4f} | {ff:.4f} | {ratio} |")

peers = [n for n in names if not n.startswith("neardup")]
print("\nEach peer's compute (tokenising to verified pairs, JSON load excluded) against")
print("neardup's whole run (read, sketch, LSH, confirm, group, write every output), from the")
print("command line, with one-permutation hashing, and through Python (where it ran):\n")
ours = [n for n in ("neardup", "neardup-oph", "neardup-python") if n in rows]
print("| peer | JSON load s | compute s (of it tokenising in Python) | "
      + " | ".join(f"{n} wall s | ratio" for n in ours) + " |")
print("|---|---|---" + "|---|---" * len(ours) + "|")
for n in peers:
    t = json.load(open(f"{work}/{n}/timing.json"))
    ratios = " | ".join(f"{rows[o][0]:.2f} | {t['compute_s'] / rows[o][0]:.1f}x" for o in ours)
    print(f"| {n} | {t['load_s']:.2f} | {t['compute_s']:.2f} ({t['tokenise_s']:.2f}) | {ratios} |")
PY
