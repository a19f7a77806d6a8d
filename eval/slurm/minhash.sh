#!/usr/bin/env bash
# A split MinHash run on a real scheduler (Slurm on loopback, eval/slurm/loopback.sh): a job
# array signs the corpus in PARTS shares (minhash-sign.sbatch); once it has succeeded, a second
# array bands the keys routed to each part, then a third confirms the candidates routed to
# each (minhash-stage.sbatch); a last job joins them (merge.sbatch). The result is compared
# file by file with one `neardup dedup --method minhash` over the same corpus, by the length
# and XXH3-64 digest each run's summary.json records: the stage folders and the joined files
# are removed before the one run, so that a large corpus needs room for one set of outputs.
# Usage: eval/slurm/minhash.sh [DOCS [PARTS [FLAGS...]]]   (default 100000 4; FLAGS go to
# signing and to the one run, e.g. --no-annotate). SEED picks the generated corpus (default 1);
# CORPUS names one to read instead.
# Needs `apt-get install slurm-wlm munge`; NEARDUP names a neardup binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
docs=${1:-100000}
parts=${2:-4}
shift $(($# < 2 ? $# : 2))
if [[ -z ${NEARDUP:-} ]]; then
  cargo build --release --quiet
  NEARDUP=target/release/neardup
fi
NEARDUP=$(realpath "$NEARDUP")
export NEARDUP
here=$PWD
cpus=$parts
# shellcheck source=eval/slurm/loopback.sh
source eval/slurm/loopback.sh

corpus=${CORPUS:-$work/corpus.jsonl}
[[ -n ${CORPUS:-} ]] || "$NEARDUP" gen --docs "$docs" --seed "${SEED:-1}" --out "$corpus" -q > /dev/null
cd "$work"
sign=$(submit --array="1-$parts" "$here/eval/slurm/minhash-sign.sbatch" "$corpus" "$work" "$@")
band=$(submit --array="1-$parts" --dependency="afterok:$sign" \
  "$here/eval/slurm/minhash-stage.sbatch" "$work/signed" "$work/banded")
confirm=$(submit --array="1-$parts" --dependency="afterok:$band" \
  "$here/eval/slurm/minhash-stage.sbatch" "$work/banded" "$work/confirmed")
join=$(submit --dependency="afterok:$confirm" "$here/eval/slurm/merge.sbatch" \
  "$work/confirmed" "$work/joined")
sleep 2
show squeue
while squeue -h -j "$sign,$band,$confirm,$join" 2> /dev/null | grep -q .; do sleep 2; done
for log in neardup-*.log; do
  echo "$log: $(cat "$log")"
done
[[ -f $work/joined/summary.json ]] || { echo "the join did not finish: see above"; exit 1; }

du -sh "$work"/signed1 "$work"/banded1 "$work"/confirmed1 "$work"/joined
rm -rf "$work"/signed* "$work"/banded* "$work"/confirmed*
find "$work/joined" -type f ! -name summary.json -delete
# shellcheck disable=SC2086 # $MEASURE is a command and its flags, or nothing.
$MEASURE "$NEARDUP" dedup "$corpus" --method minhash --out "$work/whole" -q "$@" > /dev/null
# A file's length and digest as a run's summary records it ("None" if the run wrote none).
digest() {
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["files"].get(sys.argv[2]))' \
    "$1/summary.json" "$2"
}
same=true
for file in pairs.jsonl candidates.jsonl groups.jsonl unique.jsonl annotated.jsonl; do
  joined=$(digest "$work/joined" "$file")
  whole=$(digest "$work/whole" "$file")
  if [[ $joined == "$whole" ]]; then
    echo "$file: byte-equal ($joined)"
  else
    echo "$file: DIFFERS (joined $joined, one run $whole)"
    same=false
  fi
done
$same
