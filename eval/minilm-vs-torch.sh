#!/usr/bin/env bash
# MiniLM through candle (neardup) against sentence-transformers on PyTorch, on the same
# bib-dedupe texts (1,000 title + abstract, 1,000 titles), 2 threads each, max length 128:
# texts/s of both from one run, and the cosine between their vectors for every text.
# Usage: eval/minilm-vs-torch.sh [THREADS]
# Installs torch and sentence-transformers from PyPI into target/minilm-venv (PyPI's torch is
# the CUDA build, several GB with its CUDA libraries; it runs on the CPU here). The model comes
# from neardup's models folder (`neardup models fetch minilm`).
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}
venv=target/minilm-venv
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c "import sentence_transformers" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q sentence-transformers==5.1.2
fi
out=target/minilm-vs-torch
models=${NEARDUP_MODELS:-${XDG_CACHE_HOME:-$HOME/.cache}/neardup/models}
RAYON_NUM_THREADS=$threads NEARDUP_MINILM_OUT=$PWD/$out cargo bench --quiet --bench minilm
OMP_NUM_THREADS=$threads "$venv/bin/python" eval/minilm_torch.py "$out" "$models/all-MiniLM-L6-v2" "$threads"
