# The set-up of a run in stages on generated data, for the scripts beside this one (sourced, not
# run, before anything else): DOCS and PARTS taken from the arguments (default 100000 4; the
# rest are left as the FLAGS), a neardup binary ($NEARDUP, or a release build), Slurm on
# loopback (loopback.sh, one CPU a part), and the corpus ($corpus: `neardup gen --docs DOCS
# --seed $SEED`, default seed 1, or $CORPUS where given). Leaves the script in $work, with the
# checkout in $here.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
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
