#!/usr/bin/env python3
"""Chooses the confirm rule by leaving one domain out, on exact evidence and ideal candidates.

For every combination in GRID and every domain, the CORE 2020 scores of the groups its
accepted pairs make (pairs.py). Then, for each domain, the combination best on the others
(objective: the mean over those domains of accuracy + macro-F1, each domain weighing the same)
is scored on it. Prints the leave-one-domain-out table, the worst domain and the pooled
figure, and the combinations best on all domains together.

    python3 eval/domains/lodo.py DOMAIN.jsonl... [FILE.jsonl@sets]

`FILE.jsonl@sets` splits a file into one domain per record set (the part of core_id before
the first slash), each deduplicated alone: bib-dedupe's six systematic-review searches, so
that each is held out from the choice in turn. Each domain's candidates include those of a
default two-stage run of neardup (NEARDUP, default target/release/neardup), made once and kept
in eval/domains/cache.
"""
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import pairs as P

GRID = dict(
    threshold=[0.75, 0.8, 0.85],
    min_shingles=[4],
    guard=['none', 'text', 'title'],
    containment=[None, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9],
    containment_words=[5, 10, 20, 30],
    containment_scope=['bodies', 'bodies+title'],
    title=[0.8, 0.9],
)
PLAIN = dict(threshold=0.7, min_shingles=1, guard='none', containment=None, containment_words=10,
             containment_scope='any', title=None)
BEFORE = dict(threshold=0.8, min_shingles=4, guard='text', containment=None, containment_words=10,
              containment_scope='bodies', title=0.9)
# neardup's default since the suite: the combination best on all domains together among those
# at or above the plain rule on each (what this script prints after the table).
DEFAULT = dict(threshold=0.8, min_shingles=4, guard='title', containment=0.7, containment_words=10,
               containment_scope='bodies+title', title=0.8)


def arrays(feats):
    # Only pairs some rule of the grid could accept matter to the scores.
    keys = [k for k, f in feats.items()
            if f['jaccard'] >= min(GRID['threshold'] + [PLAIN['threshold']])
            or (f['containment'] >= min(c for c in GRID['containment'] if c)
                and f['smaller'] >= min(GRID['containment_words']))
            or (f['title_jaccard'] or 0) >= 0.8]
    col = lambda name, default=0.0: np.array([default if feats[k][name] is None else feats[k][name] for k in keys])
    return keys, dict(
        jaccard=col('jaccard'), containment=col('containment'), smaller=col('smaller'),
        title_jaccard=col('title_jaccard', -1.0), title_words=col('title_words'),
        both_bodies=col('both_bodies').astype(bool), numbers=col('numbers_differ').astype(bool),
        title_numbers=col('title_numbers_differ').astype(bool))


def accept(a, s):
    guard = {'none': np.zeros_like(a['numbers']), 'text': a['numbers'],
             'title': a['title_numbers'] | (a['numbers'] & (a['title_jaccard'] < 0)),
             'short': a['numbers'] & (a['smaller'] < 20)}[s['guard']]
    ok = (a['smaller'] >= s['min_shingles']) & ~guard
    yes = a['jaccard'] >= s['threshold']
    if s['containment'] is not None:
        scope = {'any': True, 'bodies': a['both_bodies'],
                 'bodies+title': a['both_bodies'] & (a['title_jaccard'] != 0) & ((a['title_jaccard'] < 0) | (a['title_jaccard'] >= 0.5))}
        yes |= (a['containment'] >= s['containment']) & (a['smaller'] >= s['containment_words']) & scope[s['containment_scope']]
    if s['title'] is not None:
        yes |= ~a['both_bodies'] & (a['title_words'] >= 4) & (a['title_jaccard'] >= s['title'])
    return ok & yes


CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'cache')


def searched(path):
    """The candidates.jsonl of a default two-stage run of neardup on `path`, made once."""
    name = os.path.basename(path).rsplit('.', 1)[0]
    kept = os.path.join(CACHE, f'{name}.candidates.jsonl')
    if not os.path.exists(kept):
        neardup = os.environ.get('NEARDUP', 'target/release/neardup')
        with tempfile.TemporaryDirectory() as out:
            subprocess.run([neardup, 'dedup', path, '--out', out, '-q', '--candidates', 'jsonl'],
                           check=True)
            shutil.copy(os.path.join(out, 'candidates.jsonl'), kept)
    return kept


def expand(args):
    """(domain file, its searched candidates): each `FILE@sets` split by record set."""
    for arg in args:
        if not arg.endswith('@sets'):
            yield arg, searched(arg)
            continue
        path = arg[:-len('@sets')]
        sets = {}
        for line in open(path):
            sets.setdefault(str(json.loads(line)['core_id']).split('/')[0], []).append(line)
        base = os.path.basename(path).rsplit('.', 1)[0]
        for name, lines in sorted(sets.items()):
            part = os.path.join(CACHE, f'{base}-{name}.jsonl')
            if not os.path.exists(part):
                open(part, 'w').writelines(lines)
            yield part, searched(path)


def main():
    domains = {}
    for path, candidates in expand(sys.argv[1:]):
        name = os.path.basename(path).split('.')[0]
        docs, feats, _ = P.load(path, candidates)
        keys, a = arrays(feats)
        domains[name] = (docs, keys, a)
        print(f'{name}: {len(docs)} records, {len(keys)} candidate pairs', file=sys.stderr)
    combos = [dict(zip(GRID, values)) for values in itertools.product(*GRID.values())
              if values[3] is not None or (values[4] == 10 and values[5] == 'bodies')]
    combos = [c for c in combos if c['containment'] is not None or c['containment_words'] == 10]
    combos += [PLAIN, BEFORE, DEFAULT]
    scores = {}
    for n, s in enumerate(combos):
        key = tuple(s.values())
        if key in scores:
            continue
        scores[key] = {}
        for name, (docs, keys, a) in domains.items():
            mask = accept(a, s)
            scores[key][name] = P.counts(docs, [keys[i] for i in np.flatnonzero(mask)])
        if n % 200 == 0:
            print(f'{n}/{len(combos)}', file=sys.stderr)
    names = list(domains)
    objective = lambda key, on: np.mean([sum(P.metrics(scores[key][d])[m] for m in ('accuracy', 'macro_f1')) for d in on])
    fmt = lambda m: f"{m['accuracy']:.4f} / {m['macro_f1']:.4f}"
    plain, before, default = (tuple(x.values()) for x in (PLAIN, BEFORE, DEFAULT))
    print(f"{'held-out domain':<18} {'plain':>17} {'before':>17} {'default':>17} {'chosen on the others':>21}  chosen")
    pooled = [0] * 6
    worst = None
    for d in names:
        others = [o for o in names if o != d]
        # A default never below the plain rule: only combinations at or above it on every
        # training domain compete (all of them, if none is).
        floor = [k for k in scores if all(P.metrics(scores[k][o])['macro_f1'] >= P.metrics(scores[plain][o])['macro_f1'] for o in others)]
        best = max(floor or scores, key=lambda k: objective(k, others))
        m = P.metrics(scores[best][d])
        pooled = [x + y for x, y in zip(pooled, scores[best][d])]
        if worst is None or m['macro_f1'] < worst[1]:
            worst = (d, m['macro_f1'])
        print(f"{d:<18} {fmt(P.metrics(scores[plain][d])):>17} {fmt(P.metrics(scores[before][d])):>17} "
              f"{fmt(P.metrics(scores[default][d])):>17} "
              f"{fmt(m):>21}  {dict(zip(GRID, best))}")
    print(f"pooled held-out {fmt(P.metrics(pooled))}; worst domain {worst[0]} (macro-F1 {worst[1]:.4f})")
    print('best on every domain together (mean of accuracy + macro-F1), at or above the plain rule on each:')
    above = [k for k in scores if all(P.metrics(scores[k][d])['macro_f1'] >= P.metrics(scores[plain][d])['macro_f1'] for d in names)]
    for k in sorted(above, key=lambda k: -objective(k, names))[:5]:
        floor = min(P.metrics(scores[k][d])['macro_f1'] - P.metrics(scores[plain][d])['macro_f1'] for d in names)
        print(f"  {objective(k, names) / 2:.4f} above plain by >= {floor:+.4f} {dict(zip(GRID, k))}")
    print('best on every domain together, whatever the floor:')
    for k in sorted(scores, key=lambda k: -objective(k, names))[:5]:
        floor = min(P.metrics(scores[k][d])['macro_f1'] - P.metrics(scores[plain][d])['macro_f1'] for d in names)
        print(f"  {objective(k, names) / 2:.4f} above plain by >= {floor:+.4f} {dict(zip(GRID, k))}")


if __name__ == '__main__':
    main()
