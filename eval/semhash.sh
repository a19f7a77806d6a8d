#!/usr/bin/env bash
# neardup against semhash 0.5.0 (from PyPI), both through their Python APIs, on the same
# records (eval/semhash_peer.py says how semhash gets a model here): the seconds each takes from
# records in memory to groups, and accuracy / macro-F1 of the groups by `neardup eval`.
# Usage: eval/semhash.sh CORPUS.jsonl [SEMHASH_THRESHOLD ...]   (default thresholds: 0.9 0.95)
#   e.g. eval/semhash.sh ../shared/data/bibdedupe-core.jsonl
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=$1; shift
thresholds=("$@")
if [ ${#thresholds[@]} -eq 0 ]; then thresholds=(0.9 0.95); fi
venv=$PWD/target/peers-venv
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check "maturin>=1.9,<2" semhash==0.5.0
VIRTUAL_ENV=$venv PATH=$venv/bin:$PATH maturin develop --release -q
cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$venv/bin/python" eval/semhash_peer.py "$corpus" "$work" "${thresholds[@]}"
for tool in neardup "${thresholds[@]/#/semhash-}"; do
    target/release/neardup eval --truth "$corpus" --pred-groups "$work/$tool/groups.jsonl" \
        --json "$work/$tool.eval.json" >/dev/null
    "$venv/bin/python" - "$work" "$tool" <<'EOF'
import json, sys
work, tool = sys.argv[1], sys.argv[2]
seconds = json.load(open(f"{work}/timing.json"))[tool]
scores = json.load(open(f"{work}/{tool}.eval.json"))
print(f"{tool:16} {seconds:8.2f} s  accuracy {scores['accuracy']:.4f}  macro-F1 {scores['macro_f1']:.4f}")
EOF
done
