"""The Python call against the command line on the same file, in one sitting.

    python eval/python-speed.py CORPUS.jsonl [NEARDUP_BINARY] [--method minhash] [--repeat 2]

Times, interleaved: `neardup dedup CORPUS --out DIR` (a subprocess); `neardup.dedup(path)`
then `.write(DIR)` (the same work, in process); and `neardup.dedup(DataFrame)` then `.unique`
(the DataFrame read beforehand, not timed). Needs the package installed (release build).
"""

import argparse
import shutil
import subprocess
import tempfile
import time

import pandas as pd

import neardup

parser = argparse.ArgumentParser()
parser.add_argument("corpus")
parser.add_argument("binary", nargs="?", default="target/release/neardup")
parser.add_argument("--method", default="minhash")
parser.add_argument("--repeat", type=int, default=2)
args = parser.parse_args()

frame = pd.read_json(args.corpus, lines=True, dtype={"core_id": str})
work = tempfile.mkdtemp()


def cli():
    subprocess.run(
        [args.binary, "dedup", args.corpus, "--method", args.method, "--out", f"{work}/cli", "-q"],
        check=True, stdout=subprocess.DEVNULL,
    )


def python_path():
    neardup.dedup(args.corpus, method=args.method, quiet=True).write(f"{work}/py")


def python_frame():
    result = neardup.dedup(frame, method=args.method, quiet=True)
    return len(result.unique)


for round in range(args.repeat):
    for name, call in [("cli", cli), ("python, path + write", python_path),
                       ("python, DataFrame + unique", python_frame)]:
        started = time.perf_counter()
        call()
        print(f"round {round + 1}  {name:28} {time.perf_counter() - started:7.2f} s", flush=True)
same = all(
    open(f"{work}/cli/{f}", "rb").read() == open(f"{work}/py/{f}", "rb").read()
    for f in ["pairs.jsonl", "groups.jsonl", "unique.jsonl", "annotated.jsonl"]
)
print("path + write: files byte-equal to the command line's:", same)
shutil.rmtree(work)
