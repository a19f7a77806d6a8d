#!/usr/bin/env bash
# A split MinHash run on a real scheduler (Slurm on loopback, eval/slurm/loopback.sh): a job
# array signs the corpus in PARTS shares (minhash-sign.sbatch); once it has succeeded, a second
# array bands the keys routed to each part, then a third confirms the candidates routed to
# each (stage.sbatch); a last job joins them (merge.sbatch). The result is compared
# file by file with one `neardup dedup --method minhash` over the same corpus, by the length
# and XXH3-64 digest each run's summary.json records: the stage folders and the joined files
# are removed before the one run, so that a large corpus needs room for one set of outputs.
# Usage: eval/slurm/minhash.sh [DOCS [PARTS [FLAGS...]]]   (default 100000 4; FLAGS go to
# signing and to the one run, e.g. --no-annotate). SEED picks the generated corpus (default 1);
# CORPUS names one to read instead.
# Needs `apt-get install slurm-wlm munge`; NEARDUP names a neardup binary.
# shellcheck source=eval/slurm/generated.sh
source "$(dirname "$0")/generated.sh"
sign=$(submit --array="1-$parts" "$here/eval/slurm/minhash-sign.sbatch" "$corpus" "$work" "$@")
band=$(submit --array="1-$parts" --dependency="afterok:$sign" \
  "$here/eval/slurm/stage.sbatch" "$work/signed" "$work/banded")
confirm=$(submit --array="1-$parts" --dependency="afterok:$band" \
  "$here/eval/slurm/stage.sbatch" "$work/banded" "$work/confirmed")
join=$(submit --dependency="afterok:$confirm" "$here/eval/slurm/merge.sbatch" \
  "$work/confirmed" "$work/joined")
wait_for "$sign,$band,$confirm,$join"
[[ -f $work/joined/summary.json ]] || { echo "the join did not finish: see above"; exit 1; }

du -sh "$work"/signed1 "$work"/banded1 "$work"/confirmed1 "$work"/joined
rm -rf "$work"/signed* "$work"/banded* "$work"/confirmed*
find "$work/joined" -type f ! -name summary.json -delete
# shellcheck disable=SC2086 # $MEASURE is a command and its flags, or nothing.
$MEASURE "$NEARDUP" dedup "$corpus" --method minhash --out "$work/whole" -q "$@" > /dev/null
same_files "$work/joined" "$work/whole"
