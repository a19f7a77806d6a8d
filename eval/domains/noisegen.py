#!/usr/bin/env python3
"""A second generator of labelled near-duplicates, from a different description of real noise
than `neardup gen`: repository records of the same paper as harvesters and scanners leave them.

Base texts are real: the bib-dedupe records with an abstract of 40 words or more, one per
labelled cluster, so no two bases are duplicates. Each base gets, with probability 0.55, one to
three variants, each made by one to three of these edits:

- ocr: character confusions (rn/m, l/1, e/c, o/0, cl/d, li/h) in 3-10% of words, split words
  and hyphenated line breaks ("infor- mation");
- truncate: the abstract cut after 25-75% of its words (a harvester's field limit);
- glue: a section label glued to the first word ("abstractthe", "backgroundwe") or a harvest
  prefix ("peer reviewed", "fulltext .pdf publisher");
- reorder: the abstract's sentences moved (the first to the end, or shuffled);
- boilerplate: a copyright, licence or repository line added, with its year or number;
- stopwords: English stop words removed from title and abstract (CORE's processed_* fields);
- subtitle: the title cut at its colon, or a version note added ("(preprint)", "v2");
- title-only: the abstract dropped.

Hard negatives, labelled as distinct records: an erratum or a comment on a base paper (its title
with "erratum to:" or "comment on:" and a short body of its own).

    python3 eval/domains/noisegen.py --seed 7 --out eval/domains/data/noisegen.jsonl
"""
import argparse
import json
import os
import random
import re

STOP = set('''a about above after again against all am an and any are as at be because been before
being below between both but by could did do does doing down during each few for from further had
has have having he her here hers herself him himself his how i if in into is it its itself just
me more most my myself no nor not now of off on once only or other our ours ourselves out over own
same she should so some such than that the their theirs them themselves then there these they this
those through to too under until up very was we were what when where which while who whom why will
with would you your yours yourself yourselves'''.split())
CONFUSIONS = [('rn', 'm'), ('m', 'rn'), ('l', '1'), ('i', 'l'), ('e', 'c'), ('o', '0'), ('cl', 'd'),
              ('li', 'h'), ('h', 'b'), ('u', 'ii')]
LABELS = ['abstract', 'background', 'summary', 'objective', 'objectives', 'introduction', 'purpose']
PREFIXES = ['peer reviewed', 'fulltext .pdf publisher', 'audience', 'this is the accepted manuscript',
            'publisher version', 'postprint']
BOILERPLATE = ['copyright {y} elsevier ltd. all rights reserved.', '(c) {y} the authors. published by wiley.',
               'this article is protected by copyright. all rights reserved.',
               'available online {d} {m} {y}.', 'doi {n}.{p}/j.{y}.{d}', 'crown copyright {y}.',
               'licensed under cc by {n}.0.', 'supplementary material is available online.',
               'published by oxford university press on behalf of the society, {y}.']
MONTHS = 'january february march april may june july august september october november december'.split()


def words(text):
    return text.split()


def ocr(rng, title, abstract):
    def damage(text):
        out = []
        for w in words(text):
            r = rng.random()
            if r < 0.06:
                for a, b in rng.sample(CONFUSIONS, len(CONFUSIONS)):
                    if a in w:
                        i = w.index(a)
                        w = w[:i] + b + w[i + len(a):]
                        break
            elif r < 0.08 and len(w) > 6:
                cut = rng.randrange(2, len(w) - 2)
                w = w[:cut] + rng.choice(['- ', ' ']) + w[cut:]
            out.append(w)
        return ' '.join(out)
    return damage(title), damage(abstract)


def truncate(rng, title, abstract):
    ws = words(abstract)
    keep = max(5, int(len(ws) * rng.uniform(0.25, 0.75)))
    cut = ' '.join(ws[:keep])
    if rng.random() < 0.3:
        cut = cut[:-rng.randrange(1, 4)]
    return title, cut


def glue(rng, title, abstract):
    if rng.random() < 0.6:
        return title, rng.choice(LABELS) + abstract
    return title, rng.choice(PREFIXES) + ' ' + abstract


def reorder(rng, title, abstract):
    sentences = [s.strip() for s in re.split(r'(?<=\.) ', abstract) if s.strip()]
    if len(sentences) < 2:
        return title, abstract
    if rng.random() < 0.5:
        sentences = sentences[1:] + sentences[:1]
    else:
        rng.shuffle(sentences)
    return title, ' '.join(sentences)


def boilerplate(rng, title, abstract):
    line = rng.choice(BOILERPLATE).format(y=rng.randrange(1995, 2024), d=rng.randrange(1, 29),
                                          m=rng.choice(MONTHS), n=rng.randrange(1, 10), p=rng.randrange(1000, 1100))
    return title, (abstract + ' ' + line) if rng.random() < 0.8 else (line + ' ' + abstract)


def stopwords(rng, title, abstract):
    strip = lambda t: ' '.join(w for w in words(t) if w.strip('.,;:()') not in STOP)
    return strip(title), strip(abstract)


def subtitle(rng, title, abstract):
    if ':' in title and rng.random() < 0.7:
        return title.split(':')[0].strip(), abstract
    return title + ' ' + rng.choice(['(preprint)', 'v2', '[version 2]', '(author manuscript)']), abstract


def title_only(rng, title, abstract):
    return title, ''


EDITS = [ocr, truncate, glue, reorder, boilerplate, stopwords, subtitle, title_only]
WEIGHTS = [3, 3, 3, 2, 3, 2, 2, 1]


def variant(rng, title, abstract):
    for edit in rng.choices(EDITS, WEIGHTS, k=rng.randint(1, 3)):
        title, abstract = edit(rng, title, abstract)
    return title, abstract


def hard_negative(rng, title):
    kind = rng.choice(['erratum to: ', 'corrigendum to: ', 'comment on: ', 'reply to comment on: '])
    body = rng.choice(['the authors regret that an error appeared in table {n} of the original article.',
                       'in the original publication the affiliation of the {o} author was incorrect.',
                       'we read with interest the recent article and would like to raise {n} points.'])
    return kind + title, body.format(n=rng.randrange(1, 6), o=rng.choice(['first', 'second', 'last']))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--base', default=os.path.join(os.path.dirname(__file__), '../../../shared/data/bibdedupe-core.jsonl'))
    parser.add_argument('--seed', type=int, default=7)
    parser.add_argument('--out', required=True)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    bases, seen = [], set()
    for line in open(args.base):
        r = json.loads(line)
        if r['core_id'] in seen or len(words(r['processed_abstract'] or '')) < 40:
            continue
        seen.update(r['labelled_duplicates'])
        bases.append((r['processed_title'], r['processed_abstract']))
    clusters = []
    for title, abstract in bases:
        members = [(title, abstract)]
        if rng.random() < 0.55:
            members += [variant(rng, title, abstract) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
        clusters.append(members)
        if rng.random() < 0.05:
            clusters.append([hard_negative(rng, title)])
    records = [(c, t, a) for c, members in enumerate(clusters) for t, a in members]
    rng.shuffle(records)
    ids = [f'noisegen/{n:06d}' for n in range(len(records))]
    by_cluster = {}
    for rid, (c, _, _) in zip(ids, records):
        by_cluster.setdefault(c, []).append(rid)
    tmp = args.out + '.tmp'
    pairs = 0
    with open(tmp, 'w') as f:
        for rid, (c, title, abstract) in zip(ids, records):
            mates = [m for m in by_cluster[c] if m != rid]
            pairs += len(mates)
            text = title + ' ' + abstract
            exact = any(records[ids.index(m)][1] + ' ' + records[ids.index(m)][2] == text for m in mates)
            f.write(json.dumps({'core_id': rid, 'processed_title': title, 'processed_abstract': abstract,
                                'cat': 'non_dup' if not mates else 'exact_dup' if exact else 'near_dup',
                                'labelled_duplicates': mates}) + '\n')
    os.replace(tmp, args.out)
    print(f'noisegen: {len(records)} records, {pairs // 2} labelled pairs -> {args.out}')


if __name__ == '__main__':
    main()
