#!/usr/bin/env python3
"""Golden outputs of a tiny BERT for tests/test_model_golden.cpp, computed by an independent,
standard-library-only implementation of the HF/Google BERT forward (float64 math on float32
weights), so the C++ model is checked against a second implementation of the same formulas.

Writes tests/data/tiny_bert.safetensors (random weights, HF names, written by this script's own
safetensors writer) and tests/data/tiny_bert_golden.json (config, inputs, MLM/NSP logits, losses).
Run from the repository root:  python3 scripts/make_tiny_golden.py
"""
import json
import math
import random
import struct

CFG = dict(vocab_size=20, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16,
           hidden_act="gelu", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
           max_position_embeddings=12, type_vocab_size=2, initializer_range=0.02, layer_norm_eps=1e-12,
           pad_token_id=0)
V, H, L, NH, I = (CFG[k] for k in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                    "intermediate_size"))
P, T, D = CFG["max_position_embeddings"], CFG["type_vocab_size"], H // NH

rng = random.Random(20240601)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def tensor(shape, scale=0.5, offset=0.0):
    n = 1
    for s in shape:
        n *= s
    return shape, [f32(offset + rng.gauss(0.0, scale)) for _ in range(n)]


weights = {}  # name -> (shape, flat list)


def add(name, shape, **kw):
    weights[name] = tensor(shape, **kw)


add("bert.embeddings.word_embeddings.weight", [V, H])
add("bert.embeddings.position_embeddings.weight", [P, H])
add("bert.embeddings.token_type_embeddings.weight", [T, H])
add("bert.embeddings.LayerNorm.weight", [H], scale=0.2, offset=1.0)
add("bert.embeddings.LayerNorm.bias", [H], scale=0.2)
for i in range(L):
    p = f"bert.encoder.layer.{i}."
    for n in ("query", "key", "value"):
        add(p + f"attention.self.{n}.weight", [H, H])
        add(p + f"attention.self.{n}.bias", [H], scale=0.2)
    add(p + "attention.output.dense.weight", [H, H])
    add(p + "attention.output.dense.bias", [H], scale=0.2)
    add(p + "attention.output.LayerNorm.weight", [H], scale=0.2, offset=1.0)
    add(p + "attention.output.LayerNorm.bias", [H], scale=0.2)
    add(p + "intermediate.dense.weight", [I, H])
    add(p + "intermediate.dense.bias", [I], scale=0.2)
    add(p + "output.dense.weight", [H, I])
    add(p + "output.dense.bias", [H], scale=0.2)
    add(p + "output.LayerNorm.weight", [H], scale=0.2, offset=1.0)
    add(p + "output.LayerNorm.bias", [H], scale=0.2)
add("bert.pooler.dense.weight", [H, H])
add("bert.pooler.dense.bias", [H], scale=0.2)
add("cls.predictions.bias", [V], scale=0.2)
add("cls.predictions.transform.dense.weight", [H, H])
add("cls.predictions.transform.dense.bias", [H], scale=0.2)
add("cls.predictions.transform.LayerNorm.weight", [H], scale=0.2, offset=1.0)
add("cls.predictions.transform.LayerNorm.bias", [H], scale=0.2)
add("cls.seq_relationship.weight", [2, H])
add("cls.seq_relationship.bias", [2], scale=0.2)


def mat(name):
    (rows, cols), flat = weights[name]
    return [flat[r * cols:(r + 1) * cols] for r in range(rows)]


def vec(name):
    return weights[name][1]


def linear(x, w, b):  # x [n][in], w [out][in]
    return [[sum(xi * wi for xi, wi in zip(row, wr)) + bb for wr, bb in zip(w, b)] for row in x]


def layer_norm(x, g, b):
    out = []
    for row in x:
        mu = sum(row) / len(row)
        var = sum((v - mu) ** 2 for v in row) / len(row)
        inv = 1.0 / math.sqrt(var + CFG["layer_norm_eps"])
        out.append([(v - mu) * inv * gg + bb for v, gg, bb in zip(row, g, b)])
    return out


def gelu(x):
    return [[0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))) for v in row] for row in x]


def add_rows(a, b):
    return [[x + y for x, y in zip(r1, r2)] for r1, r2 in zip(a, b)]


def softmax(row):
    m = max(row)
    e = [math.exp(v - m) for v in row]
    s = sum(e)
    return [v / s for v in e]


def encoder(ids, types, mask):
    S = len(ids)
    word, pos, typ = (mat(f"bert.embeddings.{n}.weight") for n in
                      ("word_embeddings", "position_embeddings", "token_type_embeddings"))
    x = [[word[ids[s]][h] + pos[s][h] + typ[types[s]][h] for h in range(H)] for s in range(S)]
    x = layer_norm(x, vec("bert.embeddings.LayerNorm.weight"), vec("bert.embeddings.LayerNorm.bias"))
    add_mask = [(1.0 - m) * -10000.0 for m in mask]
    for i in range(L):
        p = f"bert.encoder.layer.{i}."
        q, k, v = (linear(x, mat(p + f"attention.self.{n}.weight"), vec(p + f"attention.self.{n}.bias"))
                   for n in ("query", "key", "value"))
        ctx = [[0.0] * H for _ in range(S)]
        for h in range(NH):
            cols = range(h * D, (h + 1) * D)
            for s in range(S):
                scores = [sum(q[s][c] * k[t][c] for c in cols) / math.sqrt(D) + add_mask[t] for t in range(S)]
                probs = softmax(scores)
                for c in cols:
                    ctx[s][c] = sum(probs[t] * v[t][c] for t in range(S))
        attn = linear(ctx, mat(p + "attention.output.dense.weight"), vec(p + "attention.output.dense.bias"))
        attn = layer_norm(add_rows(attn, x), vec(p + "attention.output.LayerNorm.weight"),
                          vec(p + "attention.output.LayerNorm.bias"))
        inter = gelu(linear(attn, mat(p + "intermediate.dense.weight"), vec(p + "intermediate.dense.bias")))
        out = linear(inter, mat(p + "output.dense.weight"), vec(p + "output.dense.bias"))
        x = layer_norm(add_rows(out, attn), vec(p + "output.LayerNorm.weight"), vec(p + "output.LayerNorm.bias"))
    return x


def cross_entropy(logits, label):
    m = max(logits)
    lse = m + math.log(sum(math.exp(v - m) for v in logits))
    return lse - logits[label]


# Inputs: row 1 has two padding tokens; masked slots end at the first 0 position.
input_ids = [[2, 7, 11, 4, 15, 3], [2, 9, 5, 3, 0, 0]]
token_type_ids = [[0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 0, 0]]
attention_mask = [[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]]
masked_lm_positions = [[1, 4, 0], [2, 0, 3]]
masked_lm_ids = [[8, 13, 0], [6, 0, 0]]
next_sentence_labels = [1, 0]

mlm_logits, nsp_logits, mlm_losses, nsp_losses = [], [], [], []
E = mat("bert.embeddings.word_embeddings.weight")
for b in range(len(input_ids)):
    seq = encoder(input_ids[b], token_type_ids[b], attention_mask[b])
    pooled = [[math.tanh(v) for v in linear([seq[0]], mat("bert.pooler.dense.weight"),
                                             vec("bert.pooler.dense.bias"))[0]]]
    nsp = linear(pooled, mat("cls.seq_relationship.weight"), vec("cls.seq_relationship.bias"))[0]
    nsp_logits.append(nsp)
    nsp_losses.append(cross_entropy(nsp, next_sentence_labels[b]))
    for slot, pos in enumerate(masked_lm_positions[b]):
        if pos == 0:
            break
        t = gelu(linear([seq[pos]], mat("cls.predictions.transform.dense.weight"),
                        vec("cls.predictions.transform.dense.bias")))
        t = layer_norm(t, vec("cls.predictions.transform.LayerNorm.weight"),
                       vec("cls.predictions.transform.LayerNorm.bias"))
        logits = linear(t, E, vec("cls.predictions.bias"))[0]
        mlm_logits.append(logits)
        mlm_losses.append(cross_entropy(logits, masked_lm_ids[b][slot]))

golden = dict(
    comment="made by scripts/make_tiny_golden.py (independent pure-Python BERT forward); do not edit",
    config=CFG, input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
    masked_lm_positions=masked_lm_positions, masked_lm_ids=masked_lm_ids,
    next_sentence_labels=next_sentence_labels, mlm_logits=mlm_logits, nsp_logits=nsp_logits,
    mlm_loss=sum(mlm_losses) / len(mlm_losses), nsp_loss=sum(nsp_losses) / len(nsp_losses))

# safetensors, written independently of the C++ writer
header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
for name, (shape, flat) in weights.items():
    blob = struct.pack("<%df" % len(flat), *flat)
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(blob)]}
    blobs.append(blob)
    offset += len(blob)
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * ((8 - len(text) % 8) % 8)
with open("tests/data/tiny_bert.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
with open("tests/data/tiny_bert_golden.json", "w") as f:
    json.dump(golden, f, indent=1)
    f.write("\n")
print("mlm_loss %.6f nsp_loss %.6f, %d masked rows" % (golden["mlm_loss"], golden["nsp_loss"], len(mlm_logits)))
