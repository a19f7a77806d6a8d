"""Reference vectors for all-MiniLM-L6-v2, computed without candle.

A plain NumPy forward pass of the BERT encoder (read straight from model.safetensors), mean
pooling over the attention mask and L2 normalisation: what sentence-transformers does for this
model. The Rust test `minilm_matches_reference_vectors_when_the_model_is_present` compares
neardup's candle path with the vectors this writes to eval/minilm-reference.json.

Usage: python eval/minilm_reference.py [MODEL_DIR [OUT.json [MAX_TOKENS]]]   (needs numpy, tokenizers)
Defaults: models/all-MiniLM-L6-v2, eval/minilm-reference.json, 128. The tests' tiny model is
written to src/embed/testdata/tiny-bert-reference.json with MAX_TOKENS 32 (see the test
`tiny_bert_matches_its_numpy_reference`).
"""

import json
import math
import struct
import sys
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

TEXTS = [
    "Effect of aspirin on the risk of recurrent stroke: a randomised trial",
    "aspirin and recurrent stroke risk in a randomised controlled trial",
    "Zażółć gęślą jaźń: a Polish pangram with diacritics",
    "",
    # Longer than 128 tokens: checks truncation.
    " ".join(["the association between blood pressure and cognitive decline in older adults"] * 20),
]
MAX_TOKENS = 128


def load_safetensors(path):
    raw = path.read_bytes()
    (header_len,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + header_len])
    data = raw[8 + header_len :]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data[start:end], dtype="<f4").reshape(info["shape"])
    return tensors


def layer_norm(x, weight, bias, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


ERF = np.frompyfunc(math.erf, 1, 1)


def gelu(x):
    return 0.5 * x * (1.0 + ERF(x / math.sqrt(2.0)).astype(np.float64))


def embed(ids, w, config):
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]
    n = len(ids)
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    ).astype(np.float64)
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    hidden = x.shape[1]
    size = hidden // heads
    for layer in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."
        lin = lambda v, name: v @ w[p + name + ".weight"].T + w[p + name + ".bias"]
        q = lin(x, "attention.self.query").reshape(n, heads, size).transpose(1, 0, 2)
        k = lin(x, "attention.self.key").reshape(n, heads, size).transpose(1, 0, 2)
        v = lin(x, "attention.self.value").reshape(n, heads, size).transpose(1, 0, 2)
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(size)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        context = (scores @ v).transpose(1, 0, 2).reshape(n, hidden)
        attended = lin(context, "attention.output.dense")
        x = layer_norm(
            attended + x,
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
            eps,
        )
        inner = gelu(lin(x, "intermediate.dense"))
        x = layer_norm(
            lin(inner, "output.dense") + x,
            w[p + "output.LayerNorm.weight"],
            w[p + "output.LayerNorm.bias"],
            eps,
        )
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def main():
    model = Path(sys.argv[1] if len(sys.argv) > 1 else "models/all-MiniLM-L6-v2")
    target = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).with_name("minilm-reference.json")
    max_tokens = int(sys.argv[3]) if len(sys.argv) > 3 else MAX_TOKENS
    config = json.loads((model / "config.json").read_text())
    weights = load_safetensors(model / "model.safetensors")
    tokenizer = Tokenizer.from_file(str(model / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_tokens)
    out = []
    for text in TEXTS:
        ids = tokenizer.encode(text).ids
        vector = embed(np.array(ids), weights, config)
        out.append({"text": text, "tokens": len(ids), "vector": [round(float(x), 7) for x in vector]})
    target.write_text(json.dumps(out, ensure_ascii=False) + "\n")
    print(f"wrote {len(out)} reference vectors to {target}")


if __name__ == "__main__":
    main()
