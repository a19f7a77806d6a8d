#!/usr/bin/env bash
# A three-node Qdrant cluster (eval/qdrant/run.sh cluster) losing a node, twice:
#   1. `neardup dedup` of DOCS generated documents into a collection of 3 shards x 2 replicas,
#      once undisturbed and once with node 3 killed (kill -9) while the search stage runs;
#      prints how the faulted run ended and whether its pairs and groups equal the calm run's.
#   2. `neardup serve` on a cluster-held index: 4 writers POST documents, node 2 is killed
#      mid-way; every acknowledged document must still be found afterwards.
# Usage: eval/qdrant/cluster-fault.sh [DOCS [DEDUP FLAGS...]]   (default 100000; needs a Qdrant
# binary, see eval/qdrant/build.sh; NEARDUP names a neardup built with --features qdrant, else
# one is built). With --exact-search the runs are deterministic, so the files must be equal.
set -euo pipefail
cd "$(dirname "$0")/../.."
docs=${1:-100000}
shift $(($# > 0 ? 1 : 0))
if [[ -z ${NEARDUP:-} ]]; then
  cargo build --release --quiet --features qdrant
  NEARDUP=target/release/neardup
fi
run=eval/qdrant/run.sh
work=$(mktemp -d)
trap 'kill "${server:-0}" 2> /dev/null || true; bash "$run" stop; rm -rf "$work"' EXIT

"$NEARDUP" gen --docs "$docs" --seed 1 --out "$work/corpus.jsonl" -q > /dev/null
url=$(bash "$run" cluster)
store=(--qdrant-url "$url" --shards 3 --replicas 2 "$@")

echo "== 1. dedup of $docs documents, 3 shards x 2 replicas on 3 nodes"
# Two undisturbed runs first: HNSW graphs are built concurrently and differ from build to
# build, so two calm runs differ a little too; the fault is judged against that.
for calm in calm1 calm2; do
  "$NEARDUP" dedup "$work/corpus.jsonl" "${store[@]}" --collection "$calm" --out "$work/$calm" -q \
    > "$work/$calm.log" 2>&1 || { cat "$work/$calm.log"; exit 1; }
done
"$NEARDUP" dedup "$work/corpus.jsonl" "${store[@]}" --collection fault --out "$work/fault" -v \
  > "$work/fault.log" 2>&1 &
pid=$!
started=$SECONDS
until grep -q "index ready" "$work/fault.log" 2> /dev/null; do
  kill -0 "$pid" 2> /dev/null || break
  sleep 0.2
done
sleep 2
echo "-- kill -9 node 3 two seconds into the search stage ($((SECONDS - started)) s into the run)"
bash "$run" kill-node 3
status=0
wait "$pid" || status=$?
echo "-- the faulted run exited with $status"
# pairs only differing from calm1's: the ids of each pair, one per line.
pair_ids() { cut -d, -f1,2 "$work/$1/pairs.jsonl" | sort; }
for result in calm1 calm2 fault; do
  [[ -f $work/$result/pairs.jsonl ]] || { grep -v INFO "$work/$result.log" | tail -n 3; continue; }
  scores=$("$NEARDUP" eval --truth "$work/corpus.jsonl" --pred "$work/$result" | sed -n 2,3p | awk '{print $1, $2}' | tr '\n' ' ')
  differ=$(comm -3 <(pair_ids calm1) <(pair_ids "$result") | wc -l)
  same=$(for file in pairs.jsonl groups.jsonl unique.jsonl; do
    cmp -s "$work/calm1/$file" "$work/$result/$file" && printf ' %s' "$file"
  done)
  search=$(python3 -c 'import json, sys; print(round(json.load(open(sys.argv[1]))["seconds"]["search"], 1))' "$work/$result/summary.json")
  echo "   $result: search $search s, $(wc -l < "$work/$result/pairs.jsonl") pairs, $differ not in calm1's; $scores; byte-equal to calm1's:${same:- none}"
done

echo "== 2. serve on a cluster-held index: 4 writers, node 2 killed mid-way"
bash "$run" stop
url=$(bash "$run" cluster)
"$NEARDUP" serve --index "$work/served" --qdrant-url "$url" --collection served --shards 3 \
  --replicas 2 --addr 127.0.0.1:18089 > "$work/serve.out" 2> "$work/serve.err" &
server=$!
until grep -q listening "$work/serve.out" 2> /dev/null; do sleep 0.2; done
python3 - "$work/corpus.jsonl" "$run" <<'PY'
import json, subprocess, sys, threading, urllib.request, urllib.error
corpus, run = sys.argv[1:]
texts = [json.loads(l)["processed_abstract"] for _, l in zip(range(4000), open(corpus))]
base = "http://127.0.0.1:18089"
acknowledged, failed, lock = [], [], threading.Lock()
def post(i):
    body = json.dumps({"id": f"w{i}", "text": texts[i]}).encode()
    req = urllib.request.Request(f"{base}/documents", body, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            ok = r.status == 201
    except (urllib.error.URLError, OSError):
        ok = False
    with lock:
        (acknowledged if ok else failed).append(i)
def writer(k):
    for i in range(k, len(texts), 4):
        post(i)
        if k == 0 and i == 2000:
            subprocess.run(["bash", run, "kill-node", "2"], check=True)
            print("-- kill -9 node 2 after about 2,000 writes", flush=True)
threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
for t in threads: t.start()
for t in threads: t.join()
lost = []
for i in acknowledged:
    try:
        with urllib.request.urlopen(f"{base}/documents/w{i}/duplicates", timeout=60) as r:
            if r.status != 200: lost.append(i)
    except urllib.error.HTTPError:
        lost.append(i)
print(f"   {len(acknowledged)} writes acknowledged, {len(failed)} refused; "
      f"{len(acknowledged) - len(lost)} of the acknowledged found afterwards, {len(lost)} lost")
sys.exit(1 if lost else 0)
PY
