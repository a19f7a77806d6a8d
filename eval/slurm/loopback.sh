# Slurm on loopback for the scripts beside this one (sourced, not run): munged, slurmctld and
# slurmd configured in a scratch folder ($work, nothing in /etc), one node of $cpus CPUs, a
# `submit` that prints what it submits, a `show` that prints a command and runs it, a
# `wait_for` that waits for jobs and prints their logs, and a `same_files` that compares two
# runs' files; job scripts see $MEASURE (GNU time) and log each
# task's wall and peak memory.
# Everything stops and $work is removed on exit; a script that starts more sets `stop_more`.
work=$(mktemp -d)
# munged wants the folder of its socket open to all.
chmod 755 "$work"
stop_more() { :; }
stop() {
  for pid in "$work"/slurmctld.pid "$work"/slurmd.pid "$work"/munged.pid; do
    [[ -f $pid ]] && kill "$(cat "$pid")" 2> /dev/null || true
  done
  stop_more
  # slurmd may still be writing its spool as it stops.
  rm -rf "$work" 2> /dev/null || { sleep 2; rm -rf "$work"; }
}
trap stop EXIT
show() { echo "\$ $*"; "$@"; }
# Shows the queue, waits until the jobs given (comma-separated ids) have left it, and prints
# each job's log (its output, then its wall and peak memory).
wait_for() {
  local log
  sleep 2
  show squeue
  while squeue -h -j "$1" 2> /dev/null | grep -q .; do sleep 2; done
  for log in neardup-*.log; do
    echo "$log: $(cat "$log")"
  done
}
# The files a run writes that the scripts compare.
run_files=(pairs.jsonl candidates.parquet groups.jsonl unique.jsonl annotated.jsonl)
# Compares the run files of two run folders by the length and XXH3-64 digest each summary.json
# records ("None" for a file a run did not write); prints each, and fails if any differs.
same_files() {
  local same=true file ours theirs
  for file in "${run_files[@]}"; do
    ours=$(digest "$1" "$file")
    theirs=$(digest "$2" "$file")
    if [[ $ours == "$theirs" ]]; then
      echo "$file: byte-equal ($ours)"
    else
      echo "$file: DIFFERS ($1 $ours, $2 $theirs)"
      same=false
    fi
  done
  $same
}
digest() {
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["files"].get(sys.argv[2]))' \
    "$1/summary.json" "$2"
}
# Prints the length and digest of each run file of the run folder $1.
digests() {
  local file
  for file in "${run_files[@]}"; do
    echo "$file: $(digest "$1" "$file")"
  done
}
submit() {
  echo "\$ sbatch $*" >&2
  local job
  job=$(sbatch --parsable "$@")
  echo "$job" >&2
  echo "$job"
}

mungekey --create --keyfile "$work/munge.key" > /dev/null
munged --key-file "$work/munge.key" --socket "$work/munge.sock" --pid-file "$work/munged.pid" \
  --log-file "$work/munged.log" --seed-file "$work/munge.seed"
mkdir -p "$work/state" "$work/spool"
export SLURM_CONF=$work/slurm.conf
# The job scripts run neardup under $MEASURE when it is set: each task's log then ends with its
# wall and peak memory (this loopback has no accounting database for `sacct`).
if [[ -x /usr/bin/time ]]; then
  export MEASURE="/usr/bin/time -f wall_s=%e,peak_rss_kb=%M"
fi
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
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=8000 State=UNKNOWN
PartitionName=batch Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld -f "$SLURM_CONF" -c
slurmd -f "$SLURM_CONF" -N localhost
for _ in $(seq 60); do
  [[ $(sinfo -h -o %t 2> /dev/null) == idle ]] && break
  sleep 1
done
show sinfo
