#!/usr/bin/env bash
# Runs every method with two neardup binaries on the same corpora and compares what they write,
# byte for byte: for a change that must not change behaviour (a refactoring). Also a run split
# into 4 parts and merged (minhash, two-stage), and a batch checked against a kept index (the
# corpus's second half against an index of its first half).
#
#   [METHODS="minhash jaccard"] bash eval/same-outputs.sh BEFORE_BIN AFTER_BIN [CORPUS...]
#
# Corpora default to ../shared/data/bibdedupe-core.jsonl and `gen --docs 100000 --seed 2`
# (made with AFTER_BIN). Prints one line per method and corpus, "same" or the first file that
# differs, and exits 1 if any differs. Compared: pairs.jsonl, groups.jsonl, unique.* and
# annotated.*, and summary.json without its timings, run id and candidates' format. The
# candidates are left out:
# a graph or a scan may keep either of two neighbours tied at the k-th place, run to run.
# The graph (two-stage-graph) can differ in its pairs too: two runs of one build at 100,000
# documents wrote different pair files (2026-11-28), so a difference there is no verdict.
set -euo pipefail
cd "$(dirname "$0")/.."
before=$(realpath "$1")
after=$(realpath "$2")
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
corpora=("$@")
if [ ${#corpora[@]} -eq 0 ]; then
    "$after" gen --docs 100000 --seed 2 --out "$work/gen-100k.jsonl" -q
    corpora=(../shared/data/bibdedupe-core.jsonl "$work/gen-100k.jsonl")
fi
methods=(
    "minhash|--method minhash"
    "two-stage|--method two-stage"
    "two-stage-graph|--method two-stage --cells 0"
    "two-stage-cells|--method two-stage --cells 625"
    "two-stage-exact|--method two-stage --exact-search"
    "jaccard|--method jaccard"
    "resemblance|--method resemblance"
    "simhash|--method simhash"
)
# METHODS="minhash jaccard" runs only those (the labels above).
if [ -n "${METHODS:-}" ]; then
    chosen=()
    for entry in "${methods[@]}"; do
        for wanted in $METHODS; do
            [ "${entry%%|*}" = "$wanted" ] && chosen+=("$entry")
        done
    done
    methods=("${chosen[@]}")
fi
methods+=(
    "minhash-4-parts|parts --method minhash"
    "two-stage-4-parts|parts --method two-stage"
    "two-stage-against|against"
)
# Runs `flags` with `bin` over `corpus` into `out`: a plain run, or (first word `parts`) four
# parts merged, or (`against`) the corpus's second half against an index of its first.
run_with() {
    local bin=$1 corpus=$2 out=$3 kind=$4
    shift 4
    case $kind in
        parts)
            local dirs=()
            for i in 1 2 3 4; do
                "$bin" dedup "$corpus" "$@" --part "$i/4" --out "$work/part$i" -q >/dev/null
                dirs+=("$work/part$i")
            done
            "$bin" merge "${dirs[@]}" --out "$out" -q >/dev/null
            rm -rf "${dirs[@]}"
            ;;
        against)
            local half=$(( $(wc -l < "$corpus") / 2 ))
            head -n "$half" "$corpus" > "$work/first.jsonl"
            tail -n "+$((half + 1))" "$corpus" > "$work/second.jsonl"
            "$bin" index "$work/first.jsonl" --index "$work/idx" -q >/dev/null
            "$bin" dedup "$work/second.jsonl" --against "$work/idx" --out "$out" -q >/dev/null
            rm -rf "$work/idx"
            ;;
        *) "$bin" dedup "$corpus" "$kind" "$@" --out "$out" -q >/dev/null ;;
    esac
}
# summary.json without what differs run to run: its id, timings and the candidates' digest.
settings() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); [s.pop(k,None) for k in ("run","seconds","write_seconds")]; [s["files"].pop(f,None) for f in ("candidates.jsonl","candidates.parquet")]; s["settings"].get("output",{}).pop("candidates",None); print(json.dumps(s,sort_keys=True))' "$1"; }
different=0
for corpus in "${corpora[@]}"; do
    name=$(basename "$corpus" .jsonl)
    for entry in "${methods[@]}"; do
        label=${entry%%|*}
        flags=${entry#*|}
        for side in before after; do
            bin=$before
            [ "$side" = after ] && bin=$after
            # One folder for both, which summary.json records.
            # shellcheck disable=SC2086
            run_with "$bin" "$corpus" "$work/out" $flags
            mv "$work/out" "$work/$side"
        done
        verdict=same
        for file in pairs.jsonl groups.jsonl unique.jsonl annotated.jsonl; do
            [ -e "$work/before/$file" ] || [ -e "$work/after/$file" ] || continue
            if ! cmp -s "$work/before/$file" "$work/after/$file"; then
                verdict="differs: $file"
                different=1
                break
            fi
        done
        if [ "$verdict" = same ] && [ "$(settings "$work/before/summary.json")" != "$(settings "$work/after/summary.json")" ]; then
            verdict="differs: summary.json (beyond timings)"
            different=1
        fi
        printf '%-14s %-16s %s\n' "$name" "$label" "$verdict"
        rm -rf "$work/before" "$work/after"
    done
done
exit $different
