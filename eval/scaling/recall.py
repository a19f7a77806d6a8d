#!/usr/bin/env python3
"""Candidate recall of a two-stage run: the share of the labelled pairs, and of the pairs an
exact search confirms, that reach its candidates (the pairs its search proposed).

    recall.py TRUTH.jsonl RUN [EXACT_RUN]

TRUTH is a CORE-layout file (`core_id`, `labelled_duplicates`); RUN and EXACT_RUN are
`neardup dedup` output folders written with `--candidates jsonl` (candidates.jsonl,
pairs.jsonl), EXACT_RUN one made with
--exact-search on the same input. Prints one JSON object.
"""
import json
import sys


def pairs(path, a="id_a", b="id_b"):
    with open(path) as f:
        return {tuple(sorted((r[a], r[b]))) for r in map(json.loads, f)}


def labelled(path):
    found = set()
    with open(path) as f:
        for record in map(json.loads, f):
            for other in record.get("labelled_duplicates") or []:
                found.add(tuple(sorted((record["core_id"], other))))
    return found


def main():
    truth, run = sys.argv[1], sys.argv[2]
    candidates = pairs(f"{run}/candidates.jsonl")
    labels = labelled(truth)
    out = {
        "candidates": len(candidates),
        "labelled_pairs": len(labels),
        "labelled_recall": round(len(labels & candidates) / max(len(labels), 1), 4),
    }
    if len(sys.argv) > 3:
        exact = pairs(f"{sys.argv[3]}/pairs.jsonl")
        out["exact_confirmed"] = len(exact)
        out["exact_confirmed_recall"] = round(len(exact & candidates) / max(len(exact), 1), 4)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
