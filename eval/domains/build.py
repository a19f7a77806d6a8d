#!/usr/bin/env python3
"""Builds the labelled domains of the validation suite in the CORE 2020 JSONL layout.

Every source is pinned: a repository and commit (or a local file the suite already has) and the
sha256 of each file read. Files are downloaded once into eval/domains/cache/ (or read from a
local git mirror given as PYJEDAI_GIT=/path/to/repo.git) and refused if their checksum differs.

    python3 eval/domains/build.py [--out eval/domains/data]

Each domain becomes DOMAIN.jsonl: core_id, processed_title, processed_abstract, cat,
labelled_duplicates (the other members of the record's labelled cluster: the transitive closure
of the source's labelled pairs), and original_* fields with the source text.
"""
import argparse
import csv
import io
import json
import os
import re
import subprocess
import sys
import urllib.request

from pinned import pinned
from unionfind import roots

HERE = os.path.dirname(os.path.abspath(__file__))

# pyJedAI's copies of three classic entity-resolution benchmarks (Apache-2.0 repository; the
# data sets keep their original owners' terms: Cora from the CMU/UMass citation-matching work,
# CDDB from freedb, DBLP-ACM from the Leipzig benchmark collection).
PYJEDAI = dict(repo='AI-team-UoA/pyJedAI', commit='619b00eb18fd536ad51af8b6757d0a1c7955334b')
FILES = {
    'data/der/cora/cora.csv': '587c8ce5a1d4c2b4c6db1185f5eed7cda89ce0750edf217f2345c9ac6fb056a1',
    'data/der/cora/cora_gt.csv': 'a51bfcd6c2a7cc829177bc38e466516e195def5996c50b81b83b3e0080bbc453',
    'data/der/cddb/cddb.csv': '706c4222c070ab5db3bbba29c0fa52750aac36fe15df974e3462f190cc6fde56',
    'data/der/cddb/gt.csv': '35a91cbba01accd392e078c23a02d8543a9cc49b6c547fb3b8dd46f608da7005',
    'data/ccer/D4/acm.csv': '5f2777c1e1cbd237e22470ebd721e538a9c50d7ef107e453a935b3937d119f23',
    'data/ccer/D4/dblp.csv': 'd084731c78a87d4716b79a9c949004ced7218e369a7e1b89dad1869a64421bc0',
    'data/ccer/D4/gt.csv': 'cb5f6eece53506e989196767b66232b0343d8a49d0639eccd8ffd3c5552b7851',
}


def fetch(path):
    """The text of one pinned file, checked against its sha256."""
    def download():
        mirror = os.environ.get('PYJEDAI_GIT')
        if mirror:
            return subprocess.run(['git', '--git-dir', mirror, 'show', f"{PYJEDAI['commit']}:{path}"],
                                  check=True, capture_output=True).stdout
        url = f"https://raw.githubusercontent.com/{PYJEDAI['repo']}/{PYJEDAI['commit']}/{path}"
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.read()
    cache = os.path.join(HERE, 'cache', PYJEDAI['commit'][:12], path.replace('/', '_'))
    return pinned(cache, FILES[path], download, path).decode('utf-8')


def rows(path, delimiter=','):
    return list(csv.DictReader(io.StringIO(fetch(path)), delimiter=delimiter))


def clean(text):
    """Lower-cased, whitespace collapsed: the processing of the bib-dedupe sample."""
    return re.sub(r'\s+', ' ', (text or '').lower()).strip()


def write_domain(out, name, records, pairs):
    """records: [(id, title, abstract)]; pairs: labelled duplicate id pairs (any order)."""
    ids = [r[0] for r in records]
    index = {i: n for n, i in enumerate(ids)}
    if len(index) != len(ids):
        sys.exit(f'error: {name}: duplicate record ids')
    known = [(index[a], index[b]) for a, b in pairs if a in index and b in index]
    dropped = len(pairs) - len(known)
    if dropped:
        print(f'{name}: {dropped} labelled pairs name records the source lacks (left out)', file=sys.stderr)
    root = roots(len(ids), known)
    clusters = {}
    for n in range(len(ids)):
        clusters.setdefault(root[n], []).append(n)
    path = os.path.join(out, f'{name}.jsonl')
    tmp = path + '.tmp'
    labelled = 0
    with open(tmp, 'w') as f:
        for n, (rid, title, abstract) in enumerate(records):
            mates = [m for m in clusters[root[n]] if m != n]
            labelled += len(mates)
            text = clean(title) + ' ' + clean(abstract)
            exact = any(clean(records[m][1]) + ' ' + clean(records[m][2]) == text for m in mates)
            cat = 'non_dup' if not mates else 'exact_dup' if exact else 'near_dup'
            f.write(json.dumps({
                'core_id': f'{name}/{rid}', 'original_title': title, 'original_abstract': abstract,
                'processed_title': clean(title), 'processed_abstract': clean(abstract), 'cat': cat,
                'labelled_duplicates': [f'{name}/{ids[m]}' for m in mates]}) + '\n')
    os.replace(tmp, path)
    print(f'{name}: {len(records)} records, {labelled // 2} labelled pairs -> {path}')


def join(*parts):
    return ' '.join(p.strip() for p in parts if p and p.strip())


def cora(out):
    # Citation strings as authors wrote them in reference lists, segmented into fields.
    records = [(r['Entity Id'], r['title'],
                join(r['author'], r['editor'], r['venue'], r['address'], r['publisher'],
                     r['institution'], r['volume'], r['pages'], r['month'], r['year'], r['note']))
               for r in rows('data/der/cora/cora.csv', '|')]
    gt = list(csv.reader(io.StringIO(fetch('data/der/cora/cora_gt.csv')), delimiter='|'))
    write_domain(out, 'cora-citations', records, [(a, b) for a, b in gt])


def cddb(out):
    # freedb CD entries submitted by different people for the same disc: artist, title, tracks.
    records = [(r['id'], join(r['artist'], r['title']), join(r['tracks'], r['year']))
               for r in rows('data/der/cddb/cddb.csv')]
    gt = rows('data/der/cddb/gt.csv')
    write_domain(out, 'cddb-discs', records, [(r['id1'], r['id2']) for r in gt])


def dblp_acm(out):
    # Bibliographic records of the same papers in two digital libraries.
    records = []
    for source in ('dblp', 'acm'):
        for r in rows(f'data/ccer/D4/{source}.csv', '%'):
            records.append((f"{source}-{r['id']}", r['title'], join(r['authors'], r['venue'], r['year'])))
    gt = rows('data/ccer/D4/gt.csv', '%')
    # gt's D1 is the DBLP table and D2 the ACM table (checked: the titles agree).
    write_domain(out, 'dblp-acm', records, [(f"dblp-{r['D1']}", f"acm-{r['D2']}") for r in gt])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--out', default=os.path.join(HERE, 'data'))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for build in (cora, cddb, dblp_acm):
        build(args.out)


if __name__ == '__main__':
    main()
