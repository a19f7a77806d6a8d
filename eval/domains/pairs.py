"""Exact evidence for the candidate pairs of each domain, shared by the rule search (lodo.py).

Candidates are the pairs that share a word used by at most 2% of the domain's records (at
least 50) and whose smaller word set is at least 40% contained in the larger, every labelled
pair, and every pair neardup's two-stage search proposed (its `candidates.jsonl`, where
given): the pairs a real run weighs, so that a rule is also tried on the unrelated neighbours
an embedding finds (records made of the same common tokens), not only on ideal candidates.
Words are neardup's: Rust's Unicode `\\w+` through the `regex` package (Python's own `\\w`
also takes superscripts and other number signs, and splits mojibake differently), lower-cased;
titles lose their bracketed notes; number words are ASCII digits or the roman numerals i-xii.
Results are cached in eval/domains/cache.
"""
import collections
import itertools
import json
import os
import pickle
import re

import regex

from unionfind import roots

# Rust regex's \w, which neardup's tokeniser uses.
WORD = regex.compile(r'[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]+')
NOTE = re.compile(r'\[[^\]]*\]?|\([^)]*\)?|<[^>]*>?')
ROMAN = {'i', 'ii', 'iii', 'iv', 'v', 'vi', 'vii', 'viii', 'ix', 'x', 'xi', 'xii'}


def words(text):
    return [w.lower() for w in WORD.findall(text or '')]


def is_number(w):
    return (w.isascii() and w.isdigit()) or w in ROMAN


class Doc:
    __slots__ = ('id', 'all', 'title', 'title_core', 'body', 'numbers', 'title_numbers', 'dups')

    def __init__(self, r):
        t, a = r.get('processed_title') or '', r.get('processed_abstract') or ''
        self.id = str(r['core_id'])
        self.all = frozenset(words(t + ' ' + a))
        self.title = frozenset(words(t))
        self.title_core = frozenset(words(NOTE.sub(' ', t)))
        self.body = bool(words(a))
        self.numbers = frozenset(w for w in self.all if is_number(w))
        self.title_numbers = frozenset(w for w in self.title if is_number(w))
        self.dups = [str(d) for d in r.get('labelled_duplicates') or []]


def jaccard(a, b):
    u = len(a | b)
    return len(a & b) / u if u else 0.0


def load(path, searched=None):
    """(docs, pairs, labelled): pairs maps (i, j), i < j, to a feature dict. `searched`: a
    neardup run's candidates.jsonl whose pairs are added to the candidates."""
    # Cached in eval/domains/cache, never beside the data (../shared is read-only to us).
    name = os.path.basename(path).rsplit('.', 1)[0]
    cache = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'cache', name + '.pairs.pkl')
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    if os.path.exists(cache) and os.path.getmtime(cache) > os.path.getmtime(path):
        return pickle.load(open(cache, 'rb'))
    docs = [Doc(json.loads(line)) for line in open(path)]
    index = {d.id: i for i, d in enumerate(docs)}
    labelled = {(min(i, index[o]), max(i, index[o])) for i, d in enumerate(docs) for o in d.dups if o in index}
    df = collections.Counter(w for d in docs for w in d.all)
    rare = max(50, len(docs) // 50)
    postings = collections.defaultdict(list)
    for i, d in enumerate(docs):
        for w in d.all:
            if df[w] <= rare:
                postings[w].append(i)
    candidates = set(labelled)
    if searched:
        for line in open(searched):
            c = json.loads(line)
            i, j = index.get(c['id_a']), index.get(c['id_b'])
            if i is not None and j is not None and i != j:
                candidates.add((min(i, j), max(i, j)))
    for members in postings.values():
        for i, j in itertools.combinations(members, 2):
            if (i, j) in candidates:
                continue
            a, b = docs[i].all, docs[j].all
            if len(a & b) >= 0.4 * min(len(a), len(b)):
                candidates.add((i, j))
    pairs = {}
    for i, j in candidates:
        a, b = docs[i], docs[j]
        shared = len(a.all & b.all)
        small, large = sorted((len(a.all), len(b.all)))
        pairs[(i, j)] = dict(
            jaccard=jaccard(a.all, b.all),
            containment=shared / small if small else 0.0,
            smaller=small, larger=large,
            title_jaccard=jaccard(a.title_core, b.title_core) if (a.title_core and b.title_core) else None,
            title_words=min(len(a.title_core), len(b.title_core)),
            both_bodies=a.body and b.body, either_body=a.body or b.body,
            numbers_differ=bool(a.numbers - b.numbers) and bool(b.numbers - a.numbers),
            # A title's number that the other record lacks everywhere (not only in its title).
            title_numbers_differ=bool(a.title_numbers - b.numbers) and bool(b.title_numbers - a.numbers),
            number_share=len(a.numbers ^ b.numbers) / max(1, len(a.numbers | b.numbers)),
        )
    result = (docs, pairs, labelled)
    pickle.dump(result, open(cache, 'wb'))
    return result


def counts(docs, accepted):
    """CORE 2020 class counts of the groups the accepted pairs make: tp fp tn fn correct n."""
    root = roots(len(docs), accepted)
    size = collections.Counter(root)
    index = {d.id: i for i, d in enumerate(docs)}
    c = [0] * 6
    for i, d in enumerate(docs):
        labels = [index[o] for o in d.dups if o in index]
        predicted = size[root[i]] - 1
        hits = sum(1 for j in labels if root[j] == root[i])
        c[4] += hits == len(labels) == predicted
        c[5] += 1
        if predicted and labels and hits == len(labels):
            c[0] += 1
        elif predicted:
            c[1] += 1
        elif labels:
            c[3] += 1
        else:
            c[2] += 1
    return c


def metrics(c):
    tp, fp, tn, fn, correct, n = c
    ratio = lambda a, b: a / b if b else 0.0
    p, r = ratio(tp, tp + fp), ratio(tp, tp + fn)
    p2, r2 = ratio(tn, tn + fn), ratio(tn, tn + fp)
    f1, f2 = ratio(2 * p * r, p + r), ratio(2 * p2 * r2, p2 + r2)
    return dict(accuracy=ratio(correct, n), macro_f1=(f1 + f2) / 2, p=p, r=r)
