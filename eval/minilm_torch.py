"""sentence-transformers on PyTorch over the texts benches/minilm.rs wrote, then the table.

Usage: minilm_torch.py OUT MODEL_DIR THREADS
OUT holds SET.texts.jsonl, SET.candle.jsonl and candle.json for SET in abstracts, titles.
Each set is embedded once to warm up and once timed, in batches of 64, max length 128,
normalised, as neardup's candle embedder does; the table sets the two timings side by side
with the cosine between the two vectors of every text.
"""

import json
import resource
import sys
import time

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

SETS = ("abstracts", "titles")


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def main():
    out, model_dir, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    torch.set_num_threads(threads)
    model = SentenceTransformer(model_dir, device="cpu")
    model.max_seq_length = 128
    with open(f"{out}/candle.json", encoding="utf-8") as f:
        candle = json.load(f)
    print(f"torch {torch.__version__}, {threads} threads, batch 64, max length 128")
    print("| texts | PyTorch texts/s (baseline) | candle texts/s | ratio "
          "| PyTorch CPU s | candle CPU s | min cosine | mean cosine |")
    print("|---|---|---|---|---|---|---|---|")
    for name in SETS:
        texts = read_lines(f"{out}/{name}.texts.jsonl")
        theirs = np.array(read_lines(f"{out}/{name}.candle.jsonl"), dtype=np.float64)
        encode = lambda: model.encode(texts, batch_size=64, normalize_embeddings=True,
                                      convert_to_numpy=True)
        encode()
        wall, cpu = time.perf_counter(), cpu_seconds()
        ours = encode().astype(np.float64)
        wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
        cosines = np.sum(ours * theirs, axis=1) / (
            np.linalg.norm(ours, axis=1) * np.linalg.norm(theirs, axis=1))
        torch_rate = len(texts) / wall
        candle_rate = len(texts) / candle[name]["wall"]
        print(f"| {len(texts)} {name} | {torch_rate:.1f} | {candle_rate:.1f} "
              f"| {candle_rate / torch_rate:.2f}x | {cpu:.1f} | {candle[name]['cpu']:.1f} "
              f"| {cosines.min():.6f} | {cosines.mean():.6f} |")


if __name__ == "__main__":
    main()
