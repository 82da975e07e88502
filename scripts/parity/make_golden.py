#!/usr/bin/python3
"""Golden outputs for bert-train's parity test, computed by NVIDIA's PyTorch BERT.

Runs NVIDIA DeepLearningExamples' modeling.py (PyTorch/LanguageModeling/BERT, not part of this
repository: point --nvidia-dir at a checkout) with Debian's python3-torch on a tiny BERT with
random weights, and writes, in safetensors files named with HF transformers' keys:

  model.safetensors   the weights (LayerNorms and biases randomised too, so no mix-up hides)
  inputs.safetensors  a batch with padding, two segments, zero-padded masked positions
  golden.safetensors  masked-LM logits at the masked positions, NSP logits, the losses, and the
                      gradient of the total loss for every parameter ("grad." + name)

tests/test_model_parity.cpp loads the same weights and inputs into bert-train's model and
compares: logits and losses within 1e-5, gradients within 1e-4 relative.

  /usr/bin/python3 scripts/parity/make_golden.py --nvidia-dir <DLE>/PyTorch/LanguageModeling/BERT \
      --out tests/data/parity_tiny
"""
import argparse
import json
import os
import sys
import types

import numpy as np
import torch
import torch.nn.functional as F

DTYPES = {torch.float32: ("F32", np.float32), torch.int64: ("I64", np.int64)}


def save_safetensors(path, tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        code, npt = DTYPES[t.dtype]
        data = t.numpy().astype(npt).tobytes()
        header[name] = {"dtype": code, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def load_nvidia(nvidia_dir):
    # modeling.py imports file_utils (boto3, requests) only for downloads: give it a stand-in.
    sys.modules["file_utils"] = types.SimpleNamespace(cached_path=None)
    sys.path.insert(0, nvidia_dir)
    import modeling  # noqa: E402

    # NVIDIA maps "gelu" to the tanh approximation; Google's and HF's "gelu" is the erf form.
    modeling.ACT2FN["gelu"] = F.gelu
    return modeling


def hf_name(nvidia_name):
    return nvidia_name.replace(".dense_act.", ".dense.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nvidia-dir", default=os.environ.get("NVIDIA_BERT_DIR"), required=False)
    ap.add_argument("--out", default="tests/data/parity_tiny")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    if not args.nvidia_dir or not os.path.exists(os.path.join(args.nvidia_dir, "modeling.py")):
        sys.exit("make_golden.py: --nvidia-dir must hold NVIDIA's PyTorch/LanguageModeling/BERT/modeling.py")
    modeling = load_nvidia(args.nvidia_dir)
    torch.manual_seed(args.seed)
    cfg = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
               hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
               max_position_embeddings=64, type_vocab_size=2, initializer_range=0.02)
    config = modeling.BertConfig(cfg["vocab_size"], **{k: v for k, v in cfg.items() if k != "vocab_size"})
    model = modeling.BertForPreTraining(config, sequence_output_is_dense=True)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm.weight" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.05 * torch.randn_like(p))
            else:
                p.copy_(0.05 * torch.randn_like(p))
    model.eval()  # dropout off: parity is about the math

    B, L, P = 3, 16, 4
    lengths = [16, 11, 7]
    input_ids = torch.zeros(B, L, dtype=torch.int64)
    token_type_ids = torch.zeros(B, L, dtype=torch.int64)
    attention_mask = torch.zeros(B, L, dtype=torch.int64)
    positions = torch.zeros(B, P, dtype=torch.int64)
    labels = torch.zeros(B, P, dtype=torch.int64)
    g = torch.Generator().manual_seed(args.seed)
    for b, n in enumerate(lengths):
        ids = torch.randint(5, cfg["vocab_size"], (n,), generator=g)
        ids[0], ids[n // 2], ids[n - 1] = 2, 3, 3
        input_ids[b, :n] = ids
        attention_mask[b, :n] = 1
        token_type_ids[b, n // 2 + 1:n] = 1
        cand = [i for i in range(1, n - 1) if i != n // 2]
        k = [4, 3, 2][b]
        chosen = sorted(cand[i] for i in torch.randperm(len(cand), generator=g)[:k].tolist())
        for j, pos in enumerate(chosen):
            positions[b, j] = pos
            labels[b, j] = input_ids[b, pos]
            input_ids[b, pos] = 4  # [MASK]
    nsp_labels = torch.tensor([0, 1, 1], dtype=torch.int64)

    # NVIDIA's head takes dense labels [B, L] with -1 = ignore and gathers those rows in order.
    dense_labels = torch.full((B, L), -1, dtype=torch.int64)
    for b in range(B):
        for j in range(P):
            if positions[b, j] != 0:
                dense_labels[b, positions[b, j]] = labels[b, j]
    mlm_logits, nsp_logits = model(input_ids, token_type_ids, attention_mask, dense_labels)
    flat_labels = dense_labels.view(-1)
    flat_labels = flat_labels[flat_labels != -1]
    mlm_loss = F.cross_entropy(mlm_logits.float(), flat_labels)
    nsp_loss = F.cross_entropy(nsp_logits.float(), nsp_labels)
    total = mlm_loss + nsp_loss
    total.backward()

    os.makedirs(args.out, exist_ok=True)
    weights, golden = {}, {}
    for name, p in model.named_parameters():
        n = hf_name(name)
        if n == "cls.predictions.decoder.weight":
            continue  # tied to bert.embeddings.word_embeddings.weight (HF omits it too)
        weights[n] = p.detach().clone()
        golden["grad." + n] = p.grad.detach().clone()
    golden["mlm_logits"] = mlm_logits.detach()
    golden["nsp_logits"] = nsp_logits.detach()
    golden["mlm_loss"] = mlm_loss.detach().reshape(1)
    golden["nsp_loss"] = nsp_loss.detach().reshape(1)
    golden["total_loss"] = total.detach().reshape(1)
    meta = {"reference": "NVIDIA DeepLearningExamples PyTorch/LanguageModeling/BERT modeling.py (gelu = erf)",
            "torch": torch.__version__, "config": json.dumps(cfg)}
    save_safetensors(os.path.join(args.out, "model.safetensors"), weights, meta)
    save_safetensors(os.path.join(args.out, "inputs.safetensors"),
                     {"input_ids": input_ids, "token_type_ids": token_type_ids, "attention_mask": attention_mask,
                      "masked_lm_positions": positions, "masked_lm_ids": labels,
                      "next_sentence_labels": nsp_labels})
    save_safetensors(os.path.join(args.out, "golden.safetensors"), golden, meta)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(dict(cfg, layer_norm_eps=1e-12, model_type="bert", architectures=["BertForPreTraining"]), f, indent=2)
        f.write("\n")
    print(f"make_golden: total loss {total.item():.6f} (mlm {mlm_loss.item():.6f}, nsp {nsp_loss.item():.6f}); "
          f"{len(weights)} tensors -> {args.out}")


if __name__ == "__main__":
    main()
