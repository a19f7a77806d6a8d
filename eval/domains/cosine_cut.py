#!/usr/bin/env python3
"""Scores a plain cosine cut on a two-stage run's own candidates (a run written with
`--candidates jsonl`): the pairs whose cosine reaches each threshold, grouped (single linkage), scored by `neardup eval --pred-groups` against the
labels. What the confirm stage would find if it weighed the embedding alone.

    python3 eval/domains/cosine_cut.py TRUTH.jsonl RUN_FOLDER [--thresholds 0.7 0.8 0.9]
        [--neardup target/release/neardup]

Prints one line a threshold: accuracy / macro-F1.
"""
import argparse
import json
import os
import subprocess
import tempfile

from unionfind import roots


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('truth')
    parser.add_argument('run')
    parser.add_argument('--thresholds', type=float, nargs='+', default=[0.7, 0.8, 0.9])
    parser.add_argument('--neardup', default='target/release/neardup')
    args = parser.parse_args()
    ids = [json.loads(line)['core_id'] for line in open(args.truth)]
    number = {doc: n for n, doc in enumerate(ids)}
    candidates = []
    with open(os.path.join(args.run, 'candidates.jsonl')) as f:
        for line in f:
            pair = json.loads(line)
            if pair['id_a'] in number and pair['id_b'] in number:
                candidates.append((number[pair['id_a']], number[pair['id_b']], pair['cosine']))
    with tempfile.TemporaryDirectory() as work:
        for threshold in args.thresholds:
            root = roots(len(ids), [(a, b) for a, b, cosine in candidates if cosine >= threshold])
            groups = {}
            for doc, r in enumerate(root):
                groups.setdefault(r, []).append(ids[doc])
            path = os.path.join(work, 'groups.jsonl')
            with open(path, 'w') as out:
                for members in groups.values():
                    if len(members) > 1:
                        out.write(json.dumps({'members': members}) + '\n')
            scores = os.path.join(work, 'eval.json')
            subprocess.run([args.neardup, 'eval', '--truth', args.truth, '--pred-groups', path,
                            '--json', scores, '-q'], check=True, stdout=subprocess.DEVNULL)
            e = json.load(open(scores))
            print(f"cosine >= {threshold}: {e['accuracy']:.4f} / {e['macro_f1']:.4f}")


if __name__ == '__main__':
    main()
