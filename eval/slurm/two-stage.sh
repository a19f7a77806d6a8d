#!/usr/bin/env bash
# A two-stage run in stages on a real scheduler (Slurm on loopback, eval/slurm/loopback.sh): a
# job array signs and embeds the corpus in PARTS shares (two-stage-embed.sbatch); once it has
# succeeded, one job learns the cells (merge.sbatch --learn-cells), a second array searches the
# cells each part owns and bands MinHash's keys (stage.sbatch), a third finds and confirms the
# candidates of each part's share (stage.sbatch), and a last job joins and writes
# (merge.sbatch).
# The result is compared file by file with one `neardup dedup` over the same corpus, by the
# length and XXH3-64 digest each run's summary.json records: the stages' folders and the joined
# files are removed before the one run, so that a large corpus needs room for one set of
# outputs.
# Usage: eval/slurm/two-stage.sh [DOCS [PARTS [FLAGS...]]]   (default 100000 4; FLAGS go to
# the parts and to the one run, e.g. --no-annotate). SEED picks the generated corpus (default
# 1); CORPUS names one to read instead. LEAN=1 removes what the join does not read (the
# searched parts, the embedded parts' queries and band keys) before it, for a disk that holds
# the stages' folders and the outputs only just; SPLIT_ONLY=1 ends after the join and prints
# its files' digests, for a corpus one process cannot hold (ten million here).
# Needs `apt-get install slurm-wlm munge`; NEARDUP names a neardup binary; the default model
# (static) is fetched first, so that the parts do not each fetch it. Every task must read that
# one models folder: on machines that do not share the home folder, set NEARDUP_MODELS to a
# folder on shared storage (each machine would derive the static model with its own bits, and
# the stages refuse parts embedded with different models).
# shellcheck source=eval/slurm/generated.sh
source "$(dirname "$0")/generated.sh"
"$NEARDUP" models fetch static -q > /dev/null
embed=$(submit --array="1-$parts" "$here/eval/slurm/two-stage-embed.sbatch" "$corpus" "$work" "$@")
learn=$(submit --dependency="afterok:$embed" "$here/eval/slurm/merge.sbatch" \
  "$work/embedded" "$work/cells" --learn-cells)
search=$(submit --array="1-$parts" --dependency="afterok:$learn" \
  "$here/eval/slurm/stage.sbatch" "$work/cells" "$work/searched")
confirm=$(submit --array="1-$parts" --dependency="afterok:$search" \
  "$here/eval/slurm/stage.sbatch" "$work/searched" "$work/confirmed")
if [[ ${LEAN:-0} == 1 ]]; then
  wait_for "$embed,$learn,$search,$confirm"
  du -sh "$work"/searched1
  # The join reads the confirmed parts and the embedded parts' sketches only.
  rm -rf "$work"/searched* "$work"/embedded*/queries.bin "$work"/embedded*/keys-*.bin
  join=$(submit "$here/eval/slurm/merge.sbatch" "$work/confirmed" "$work/joined")
  wait_for "$join"
else
  join=$(submit --dependency="afterok:$confirm" "$here/eval/slurm/merge.sbatch" \
    "$work/confirmed" "$work/joined")
  wait_for "$embed,$learn,$search,$confirm,$join"
  du -sh "$work"/searched1
fi
[[ -f $work/joined/summary.json ]] || { echo "the join did not finish: see above"; exit 1; }

du -sh "$work"/embedded1 "$work"/cells "$work"/confirmed1 "$work"/joined
scores=$("$NEARDUP" eval --truth "$corpus" --pred "$work/joined" | sed -n 2,3p | awk '{print $1, $2}' | tr '\n' ' ')
echo "joined: $scores"
if [[ ${SPLIT_ONLY:-0} == 1 ]]; then
  digests "$work/joined"
  exit 0
fi
rm -rf "$work"/embedded* "$work"/cells "$work"/searched* "$work"/confirmed*
find "$work/joined" -type f ! -name summary.json -delete
# shellcheck disable=SC2086 # $MEASURE is a command and its flags, or nothing.
$MEASURE "$NEARDUP" dedup "$corpus" --out "$work/whole" -q "$@" > /dev/null
same_files "$work/joined" "$work/whole"
