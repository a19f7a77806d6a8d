#!/usr/bin/env bash
# The cases of issue 35, run against a neardup binary: each line prints the case, the exit
# code, the first line of the answer and, for the long-record cases, the peak RSS in KB.
#
#   NEARDUP=target/release/neardup bash eval/robustness.sh
#
# Needs ../shared/data (bib-dedupe), python3 and GNU time. Works in a temporary folder.
set -uo pipefail
cd "$(dirname "$0")/.."
N=$(realpath "${NEARDUP:-target/release/neardup}")
DATA=$(realpath ../shared/data/bibdedupe-core.jsonl)
WORK=$(mktemp -d)
trap 'pkill -f "serve --index $WORK" 2>/dev/null; rm -rf "$WORK"' EXIT
cd "$WORK"

case_() { # NAME COMMAND...: runs it, prints rc, the first line of output and peak RSS
    local name=$1
    shift
    /usr/bin/time -f "%M" -o rss "$@" >out 2>&1
    local rc=$?
    printf '%-46s rc %-3s %6s KB  %s\n' "$name" "$rc" "$(tail -1 rss)" \
        "$(grep -v '^Command exited' out | head -1 | cut -c1-170)"
}

"$N" index "$DATA" --index idx -q >/dev/null
ID=cytology_screening/id_0000001
fresh() { rm -rf c && cp -r idx c; SEG=$(ls -d c/edge/segments/*/ | head -1); }
edit() { python3 -c "import json,sys; p='c/neardup-index.json'; m=json.load(open(p)); m[sys.argv[1]]=json.loads(sys.argv[2]); json.dump(m,open(p,'w'))" "$1" "$2"; }
fill() { python3 -c "import os,sys; p=sys.argv[1]; n=os.path.getsize(p); open(p,'r+b').write(bytes([int(sys.argv[2])])*n if sys.argv[2]!='r' else os.urandom(n))" "$1" "$2"; }

echo "== paths that are not UTF-8"
case_ "index --index idx\\xff" "$N" index "$DATA" --index "$(printf 'idx\xff')"
case_ "dedup --out out\\xff" "$N" dedup "$DATA" --method minhash --out "$(printf 'out\xff')"
case_ "dedup --stoplist s\\xff" "$N" dedup "$DATA" --out o --stoplist "$(printf 's\xff')"
case_ "serve --index idx\\xff" "$N" serve --index "$(printf 'idx\xff')"

echo "== a manifest edited by hand"
for kv in 'seed 2' 'ngram 2' 'hashing "one-permutation"' 'stopwords ["of","in","human"]' 'documents -1'; do
    fresh
    edit ${kv%% *} "${kv#* }"
    case_ "manifest ${kv}: query --text" "$N" query --index c --text "comparison of human papillomavirus distribution"
done

echo "== a damaged vector store"
fresh; fill "$SEG/vector_storage/vectors/chunk_0.mmap" 0
case_ "vectors zeroed: query --id" "$N" query --index c --id $ID
fresh; fill "$SEG/vector_storage/vectors/chunk_0.mmap" r
case_ "vectors random: query --id" "$N" query --index c --id $ID
fresh; fill "$SEG/vector_storage/deleted/flags_a.dat" 255
case_ "deleted flags all 0xFF: query --id" "$N" query --index c --id $ID
fresh; truncate -s 100 "$SEG/mutable_id_tracker.mappings"
case_ "id mappings cut to 100 bytes: query --id" "$N" query --index c --id $ID
fresh; rm -rf "$SEG/payload_storage"
case_ "payload_storage removed: serve" timeout 20 "$N" serve --index c --addr 127.0.0.1:0
fresh; fill "$SEG/payload_storage/page_0.dat" r
case_ "payload pages garbled: query --id" "$N" query --index c --id $ID
fresh; fill "$SEG/payload_storage/bitmask.dat" r
case_ "payload free-space map garbled (unread): query" "$N" query --index c --id $ID

echo "== an index whose documents were all deleted"
head -5 "$DATA" >five.jsonl
"$N" index five.jsonl --index i5 -q >/dev/null
"$N" serve --index i5 --addr 127.0.0.1:18099 >/dev/null 2>&1 &
sleep 2
for id in $(python3 -c "import json; [print(json.loads(l)['core_id']) for l in open('five.jsonl')]"); do
    curl -s -o /dev/null -X DELETE "http://127.0.0.1:18099/documents/$(python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$id")"
done
pkill -TERM -f "serve --index i5"
sleep 1
case_ "all 5 deleted, SIGTERM, query --text" "$N" query --index i5 --text "a new text"

echo "== long records (--max-doc-bytes 16 MiB)"
python3 - <<'EOF'
import json, os, zipfile
with zipfile.ZipFile('big.zip', 'w', zipfile.ZIP_DEFLATED) as z:
    with z.open('big.txt', 'w', force_zip64=True) as f:
        for _ in range(1024):
            f.write(b'a' * (1 << 20))
    z.writestr('small.txt', 'a small text of a few words')
small = json.dumps({"core_id": "2", "processed_title": "a small record", "processed_abstract": "with a few words"})
with open('long.jsonl', 'w') as f:
    f.write(json.dumps({"core_id": "1", "processed_title": "t", "processed_abstract": "x" * 200_000_000}) + "\n" + small + "\n")
with open('tiny.jsonl', 'w') as f:
    f.write(small + "\n")
os.makedirs('folder')
with open('folder/big.bin', 'wb') as f:
    for _ in range(800):
        f.write(os.urandom(1 << 20))
with open('folder/small.txt', 'w') as f:
    f.write('a small text of a few words')
EOF
case_ "baseline: dedup tiny.jsonl" "$N" dedup tiny.jsonl --out m0 -q
case_ "1 GB zip entry: dedup" "$N" dedup big.zip --out m1 -q
case_ "1 GB zip entry: dedup --skip-invalid" "$N" dedup big.zip --skip-invalid --out m2 -q
case_ "200 MB JSONL line: dedup --skip-invalid" "$N" dedup long.jsonl --skip-invalid --out m3 -q
case_ "800 MB file in a folder: --skip-invalid" "$N" dedup folder --skip-invalid --out m4 -q
case_ "baseline: --method minhash tiny.jsonl" "$N" dedup tiny.jsonl --method minhash --out m5 -q
case_ "200 MB JSONL line: minhash --skip-invalid" "$N" dedup long.jsonl --method minhash --skip-invalid --out m6 -q

echo "== inputs, outputs, bounds"
printf 'id,id,title\n1,2,a title\n' >dup.csv
case_ "CSV header id,id,title" "$N" dedup dup.csv --id-field id --text-field title --out o1
case_ "gen --out /dev/full" "$N" gen --docs 100 --out /dev/full
mkfifo fifo
(cat fifo >fifo.txt &)
case_ "gen --out FIFO (read by cat)" "$N" gen --docs 100 --out fifo
sleep 1
printf '%-46s %s\n' "  ... the FIFO is still a FIFO" "$(stat -c %F fifo), cat read $(wc -l <fifo.txt) lines"
touch real.jsonl && ln -s real.jsonl link.jsonl
case_ "gen --out a symlink" "$N" gen --docs 100 --out link.jsonl
printf '%-46s %s\n' "  ... the link stays, its target written" "$(stat -c %F link.jsonl), real.jsonl $(wc -l <real.jsonl) lines"
case_ "gen --docs 100000000000" "$N" gen --docs 100000000000 --out g.jsonl
case_ "gen --abstract-words 2^64-1" "$N" gen --docs 2 --abstract-words 18446744073709551615 --out g.jsonl
case_ "dedup --threshold NaN" "$N" dedup tiny.jsonl --threshold NaN --out o2
case_ "dedup --threshold=-inf" "$N" dedup tiny.jsonl --threshold=-inf --out o2
case_ "dedup --min-cosine NaN" "$N" dedup tiny.jsonl --min-cosine NaN --out o2
case_ "index --threshold inf" "$N" index tiny.jsonl --index i9 --threshold inf
"$N" dedup "$DATA" --out shared-out -q >/dev/null 2>&1 &
sleep 1
case_ "a second dedup into the same --out" "$N" dedup "$DATA" --out shared-out
wait
