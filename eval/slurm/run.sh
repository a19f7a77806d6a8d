#!/usr/bin/env bash
# A split two-stage run on a real scheduler: slurmctld and slurmd on loopback (Debian's
# slurm-wlm and munge, configured in a scratch folder, nothing in /etc), the three-node Qdrant
# cluster of eval/qdrant/run.sh, `neardup index`, a job array of PARTS workers
# (eval/slurm/part.sbatch) and the merge (eval/slurm/merge.sbatch) submitted to start once the
# array has succeeded. Then the same index is searched as one part (1/1) and merged, and the
# two results are compared file by file. Prints the commands it runs and what they answer.
# Usage: eval/slurm/run.sh [DOCS [PARTS]]   (default 20000 4)
# Every part runs --exact-search: graph searches go to either replica of a shard, whose graphs
# are built apart, so only a full scan answers alike from run to run.
# Needs `apt-get install slurm-wlm munge`; NEARDUP names a neardup built with --features qdrant.
set -euo pipefail
cd "$(dirname "$0")/../.."
docs=${1:-20000}
parts=${2:-4}
if [[ -z ${NEARDUP:-} ]]; then
  cargo build --release --quiet --features qdrant
  NEARDUP=target/release/neardup
fi
NEARDUP=$(realpath "$NEARDUP")
export NEARDUP
here=$PWD
cpus=$parts
# shellcheck source=eval/slurm/loopback.sh
source eval/slurm/loopback.sh
stop_more() { bash "$here/eval/qdrant/run.sh" stop > /dev/null 2>&1 || true; }

# The shared index on the cluster.
url=$(bash eval/qdrant/run.sh cluster)
corpus=$work/corpus.jsonl
"$NEARDUP" gen --docs "$docs" --seed 1 --out "$corpus" -q > /dev/null
show "$NEARDUP" index "$corpus" --index "$work/idx" --qdrant-url "$url" --shards 3 --replicas 2 -q

# The parts as a job array, the merge after it.
cd "$work"
array=$(submit --array="1-$parts" "$here/eval/slurm/part.sbatch" \
  "$corpus" "$work/idx" "$url" "$work/parts" --exact-search)
merge=$(submit --dependency="afterok:$array" "$here/eval/slurm/merge.sbatch" \
  "$work/parts/part" "$work/merged")
sleep 2
show squeue
while squeue -h -j "$array,$merge" 2> /dev/null | grep -q .; do sleep 2; done
for log in neardup-part-*.log neardup-merge-*.log; do
  echo "$log: $(wc -c < "$log") bytes of output"
  cat "$log"
done
[[ -f $work/merged/summary.json ]] || { echo "the merge did not finish: see above"; exit 1; }

# One part over the same index, merged, for comparison.
"$NEARDUP" dedup "$corpus" --index "$work/idx" --qdrant-url "$url" --part 1/1 --out "$work/one" \
  --exact-search -q > /dev/null
"$NEARDUP" merge "$work/one" --out "$work/whole" -q > /dev/null
for result in merged whole; do
  scores=$("$NEARDUP" eval --truth "$corpus" --pred "$work/$result" | sed -n 2,3p | awk '{print $1, $2}' | tr '\n' ' ')
  echo "$result: $(wc -l < "$work/$result/pairs.jsonl") pairs, $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["candidates"])' "$work/$result/summary.json") candidates; $scores"
done
same=true
for file in "${run_files[@]}"; do
  if cmp -s "$work/merged/$file" "$work/whole/$file"; then
    echo "$file: byte-equal"
  else
    echo "$file: DIFFERS"
    diff "$work/merged/$file" "$work/whole/$file" | head -6 || true
    same=false
  fi
done
$same
