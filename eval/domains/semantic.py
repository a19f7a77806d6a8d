#!/usr/bin/env python3
"""Builds the suite's semantic domains from the paraphrase sets in ../shared/data/semantic/:
duplicates written in other words, which MinHash cannot see.

Each distinct text (lower-cased, whitespace collapsed, as the other domains' text) is one
record, its text in `processed_abstract` with no title; a positive pair links its two records
(labelled duplicates are the transitive closure, as in build.py), and a negative pair leaves
them apart: a hard non-duplicate, often with many words in common. Every split of a set goes
into its domain.

    python3 eval/domains/semantic.py [--shared ../shared] [--out eval/domains/data]

Domains: mrpc, parade, stsb (a pair is positive where its score is 4 or more of 5) and
twitterppdb.
"""
import argparse
import gzip
import json
import os

from build import clean, write_domain

SETS = ['mrpc', 'parade', 'stsb', 'twitterppdb']


def domain(shared, name):
    """The records and labelled pairs of the set `name`."""
    ids, records, pairs = {}, [], []
    path = os.path.join(shared, 'data', 'semantic', f'{name}.jsonl.gz')

    def record(text):
        key = clean(text)
        if key not in ids:
            ids[key] = f'{len(ids):06d}'
            records.append((ids[key], '', text))
        return ids[key]

    with gzip.open(path, 'rt', encoding='utf-8') as f:
        for line in f:
            pair = json.loads(line)
            a, b = record(pair['a']), record(pair['b'])
            if pair['label'] == 1 and a != b:
                pairs.append((a, b))
    return records, pairs


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--shared', default=os.path.join(here, '..', '..', '..', 'shared'))
    parser.add_argument('--out', default=os.path.join(here, 'data'))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in SETS:
        records, pairs = domain(args.shared, name)
        write_domain(args.out, name, records, pairs)


if __name__ == '__main__':
    main()
