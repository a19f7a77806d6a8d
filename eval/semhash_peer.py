"""semhash beside neardup, both called from Python, on one CORE-layout corpus.

Usage: python eval/semhash_peer.py CORPUS.jsonl OUT_DIR [SEMHASH_THRESHOLD ...]

semhash (0.5.0, from PyPI) fetches its models from a hub these machines cannot reach: it is
given neardup's own static model instead (the token vectors and IDF weights of
`neardup models`' static-all-MiniLM-L6-v2, through model2vec's StaticModel, normalised), the
embedding family neardup's two-stage method uses by default. Each tool gets the same records,
in memory: semhash their title and abstract joined with a space (one text column), neardup the
two fields (it weighs a title apart). Each is timed from its records to its groups: semhash's
`from_records` (which embeds and indexes) and `self_deduplicate`; `neardup.dedup` with its
defaults. Writes OUT_DIR/NAME/groups.jsonl for `neardup eval
--pred-groups`, and OUT_DIR/timing.json.
"""

import json
import os
import sys
import time
from pathlib import Path

import neardup
from model2vec import StaticModel
from safetensors.numpy import load_file
from semhash import SemHash
from tokenizers import Tokenizer

MODEL = Path(os.environ.get("NEARDUP_MODELS", Path.home() / ".cache/neardup/models"))
MODEL = MODEL / "static-all-MiniLM-L6-v2"


def read(corpus):
    with open(corpus, encoding="utf8") as f:
        return [json.loads(line) for line in f]


def text(record):
    return (record["processed_title"] or "") + " " + (record["processed_abstract"] or "")


def static_model():
    tensors = load_file(str(MODEL / "static.safetensors"))
    tokenizer = Tokenizer.from_file(str(MODEL / "tokenizer.json"))
    return StaticModel(
        vectors=tensors["vectors"], tokenizer=tokenizer, weights=tensors["weights"], normalize=True
    )


def write_groups(path, groups):
    path.mkdir(parents=True, exist_ok=True)
    with open(path / "groups.jsonl", "w", encoding="utf8") as f:
        for members in groups:
            f.write(json.dumps({"members": sorted(members)}) + "\n")


def semhash_groups(corpus, model, threshold):
    records = [{"id": r["core_id"], "text": text(r)} for r in corpus]
    start = time.monotonic()
    index = SemHash.from_records(records, columns=["text"], model=model)
    result = index.self_deduplicate(threshold=threshold)
    seconds = time.monotonic() - start
    # Each removed record names the kept one it duplicates: a group is a kept record and those.
    groups = {}
    for removed in result.filtered:
        kept = removed.duplicate_of["id"]
        groups.setdefault(kept, {kept}).add(removed.record["id"])
    return seconds, list(groups.values())


def neardup_groups(corpus):
    # The records as read: neardup weighs a title apart from its abstract.
    records = [
        {k: r[k] for k in ("core_id", "processed_title", "processed_abstract")} for r in corpus
    ]
    start = time.monotonic()
    result = neardup.dedup(records, quiet=True)
    groups = result.groups
    seconds = time.monotonic() - start
    return seconds, [group["members"] for group in groups]


def main():
    corpus, out = sys.argv[1], Path(sys.argv[2])
    thresholds = [float(t) for t in sys.argv[3:]] or [0.9]
    records = read(corpus)
    timing = {"documents": len(records)}
    seconds, groups = neardup_groups(records)
    write_groups(out / "neardup", groups)
    timing["neardup"] = seconds
    model = static_model()
    for threshold in thresholds:
        seconds, groups = semhash_groups(records, model, threshold)
        write_groups(out / f"semhash-{threshold}", groups)
        timing[f"semhash-{threshold}"] = seconds
    with open(out / "timing.json", "w", encoding="utf8") as f:
        json.dump(timing, f)


if __name__ == "__main__":
    main()
