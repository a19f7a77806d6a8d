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
work=$(mktemp -d)
# munged wants the folder of its socket open to all.
chmod 755 "$work"
stop() {
  for pid in "$work"/slurmctld.pid "$work"/slurmd.pid "$work"/munged.pid; do
    [[ -f $pid ]] && kill "$(cat "$pid")" 2> /dev/null || true
  done
  bash "$here/eval/qdrant/run.sh" stop > /dev/null 2>&1 || true
  rm -rf "$work"
}
trap stop EXIT
show() { echo "\$ $*"; "$@"; }

# Munge and Slurm on loopback, everything under $work.
mungekey --create --keyfile "$work/munge.key" > /dev/null
munged --key-file "$work/munge.key" --socket "$work/munge.sock" --pid-file "$work/munged.pid" \
  --log-file "$work/munged.log" --seed-file "$work/munge.seed"
mkdir -p "$work/state" "$work/spool"
export SLURM_CONF=$work/slurm.conf
cat > "$SLURM_CONF" <<CONF
ClusterName=neardup
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge.sock
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$parts RealMemory=8000 State=UNKNOWN
PartitionName=batch Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld -f "$SLURM_CONF" -c
slurmd -f "$SLURM_CONF" -N localhost
for _ in $(seq 60); do
  [[ $(sinfo -h -o %t 2> /dev/null) == idle ]] && break
  sleep 1
done
show sinfo

# The shared index on the cluster.
url=$(bash eval/qdrant/run.sh cluster)
corpus=$work/corpus.jsonl
"$NEARDUP" gen --docs "$docs" --seed 1 --out "$corpus" -q > /dev/null
show "$NEARDUP" index "$corpus" --index "$work/idx" --qdrant-url "$url" --shards 3 --replicas 2 -q

# The parts as a job array, the merge after it.
cd "$work"
submit() {
  echo "\$ sbatch $*" >&2
  local job
  job=$(sbatch --parsable "$@")
  echo "$job" >&2
  echo "$job"
}
array=$(submit --array="1-$parts" "$here/eval/slurm/part.sbatch" \
  "$corpus" "$work/idx" "$url" "$work/parts" --exact-search)
merge=$(submit --dependency="afterok:$array" "$here/eval/slurm/merge.sbatch" \
  "$work/parts" "$work/merged")
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
  echo "$result: $(wc -l < "$work/$result/pairs.jsonl") pairs, $(wc -l < "$work/$result/candidates.jsonl") candidates; $scores"
done
same=true
for file in pairs.jsonl candidates.jsonl groups.jsonl unique.jsonl annotated.jsonl; do
  if cmp -s "$work/merged/$file" "$work/whole/$file"; then
    echo "$file: byte-equal"
  else
    echo "$file: DIFFERS"
    diff "$work/merged/$file" "$work/whole/$file" | head -6 || true
    same=false
  fi
done
$same
