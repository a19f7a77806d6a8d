"""One peer deduplicates a CORE-layout corpus the way neardup's MinHash method does.

Usage: python eval/peers.py rensa|rensa-matrix|rensa-matrix-rho|gaoya|datasketch CORPUS.jsonl OUT_DIR

Same features as neardup (word 1-gram sets of processed_title + " " + processed_abstract,
words = lower-cased \\w+), 128 permutations, 16 bands of 8 rows, pairs confirmed at an estimated
Jaccard >= 0.7, connected groups written as OUT_DIR/groups.jsonl for `neardup eval`.
rensa-matrix and rensa-matrix-rho are rensa's bulk path, which returns a duplicate flag for each
record and no pairs: the ids it flags are written as OUT_DIR/flags.json.
Everything a user would pay for is inside the timed process: reading, tokenising, hashing, LSH,
confirming, grouping, writing. The process also times its compute alone, from tokenising to
verified pairs (the JSON load, grouping and writing left out), into OUT_DIR/timing.json, with
the tokenising in Python alone beside it.
"""

import json
import os
import re
import sys
import time

THRESHOLD, NUM_PERM, BANDS, ROWS = 0.7, 128, 16, 8
WORD = re.compile(r"\w+")


def read(corpus):
    ids, texts = [], []
    with open(corpus, encoding="utf8") as f:
        for line in f:
            d = json.loads(line)
            ids.append(d["core_id"])
            texts.append((d["processed_title"] or "") + " " + (d["processed_abstract"] or ""))
    return ids, texts


def word_sets(texts):
    # Lists of distinct words, unsorted: the least a user does in Python before hashing
    # (sorting took a fifth of the tokenising; sets held a third more memory than lists, 20 GB
    # at a million, and slowed everything on a 24 GB machine).
    return [list(set(WORD.findall(text.lower()))) for text in texts]


def pairs_through_lsh(sets, lsh, sign):
    """Signs every set, indexes the non-empty ones, and confirms each LSH candidate."""
    hashes = []
    for i, words in enumerate(sets):
        m = sign(words)
        hashes.append(m)
        if words:
            lsh.insert(i, m)
    for i, m in enumerate(hashes):
        if not sets[i]:
            continue
        for j in lsh.query(m):
            if j > i and m.jaccard(hashes[j]) >= THRESHOLD:
                yield i, j


def pairs_rensa(sets):
    """Through rensa's batch API, as its README shows: every sketch in one call
    (`RMinHash.from_token_sets`), the index filled and queried in one call each."""
    from rensa import RMinHash, RMinHashLSH

    hashes = RMinHash.from_token_sets(sets, num_perm=NUM_PERM, seed=1)
    kept = [i for i, words in enumerate(sets) if words]
    lsh = RMinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM, num_bands=BANDS)
    lsh.insert_pairs((i, hashes[i]) for i in kept)
    for i, found in zip(kept, lsh.query_all([hashes[i] for i in kept])):
        for j in found:
            if j > i and hashes[i].jaccard(hashes[j]) >= THRESHOLD:
                yield i, j


def flags_rensa_matrix(sets, rho=False):
    """Through rensa's bulk matrix API, its fastest documented path: every sketch into one
    row-major matrix (`digest_matrix_from_token_sets`, or the `_rho` sketch), then one call
    that flags each row sharing a band with another (`query_duplicate_flags_matrix_one_shot`,
    which verifies nothing for plain MinHash and returns flags, not pairs)."""
    from rensa import RMinHash, RMinHashLSH

    digest = RMinHash.digest_matrix_from_token_sets_rho if rho else RMinHash.digest_matrix_from_token_sets
    matrix = digest(sets, num_perm=NUM_PERM, seed=1)
    lsh = RMinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM, num_bands=BANDS)
    return lsh.query_duplicate_flags_matrix_one_shot(matrix)


def pairs_datasketch(sets):
    from datasketch import MinHash, MinHashLSH

    def sign(words):
        m = MinHash(num_perm=NUM_PERM, seed=1)
        m.update_batch([w.encode("utf8") for w in words])
        return m

    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM, params=(BANDS, ROWS))
    return pairs_through_lsh(sets, lsh, sign)


def pairs_gaoya(sets):
    from gaoya.minhash import MinHashStringIndex

    index = MinHashStringIndex(hash_size=32, jaccard_threshold=THRESHOLD, num_bands=BANDS,
                               band_size=ROWS, analyzer="word", lowercase=False)
    docs = [" ".join(words) for words in sets]
    kept = [i for i, words in enumerate(sets) if words]
    index.par_bulk_insert_docs(kept, [docs[i] for i in kept])
    for i, found in zip(kept, index.par_bulk_query([docs[i] for i in kept])):
        for j in found:
            if j > i:
                yield i, j


def groups(n, pairs):
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in pairs:
        a, b = find(i), find(j)
        if a != b:
            parent[max(a, b)] = min(a, b)
    members = {}
    for i in range(n):
        members.setdefault(find(i), []).append(i)
    return [m for m in members.values() if len(m) > 1]


def main():
    tool, corpus, out = sys.argv[1:]
    clock = time.perf_counter()
    ids, texts = read(corpus)
    load_s = time.perf_counter() - clock
    clock = time.perf_counter()
    sets = word_sets(texts)
    tokenise_s = time.perf_counter() - clock
    os.makedirs(out, exist_ok=True)
    if tool.startswith("rensa-matrix"):
        flags = flags_rensa_matrix(sets, rho=tool.endswith("rho"))
        found = os.path.join(out, "flags.json")
        rows = [i for i, flagged in zip(ids, flags) if flagged]
    else:
        find = {"rensa": pairs_rensa, "gaoya": pairs_gaoya, "datasketch": pairs_datasketch}[tool]
        pairs = list(find(sets))
    compute_s = time.perf_counter() - clock
    with open(os.path.join(out, "timing.json"), "w", encoding="utf8") as f:
        json.dump({"load_s": load_s, "tokenise_s": tokenise_s, "compute_s": compute_s}, f)
    if tool.startswith("rensa-matrix"):
        with open(found, "w", encoding="utf8") as f:
            json.dump(rows, f)
        return
    with open(os.path.join(out, "groups.jsonl"), "w", encoding="utf8") as f:
        for g in groups(len(ids), pairs):
            f.write(json.dumps({"members": sorted(ids[i] for i in g)}) + "\n")


if __name__ == "__main__":
    main()
