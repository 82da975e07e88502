#!/usr/bin/python3
"""Writes the tiny NVIDIA DeepLearningExamples-style checkpoints used by tests/test_io_tf_nvidia.cpp.

Run with Debian's python3-torch (apt-get install -y python3-torch):
    /usr/bin/python3 tests/data/make_nvidia_pt.py tests/data

nvidia_tiny.pt        torch.save({'model': state_dict, 'optimizer': ..., ...}) in the zip format, with
                      DDP's 'module.' prefix, 'dense_act' names and the vocab (15) padded to 16.
                      Every value is (tensor index) + 0.001 * (element index), so tests can check
                      which tensor landed where and that nothing was transposed.
nvidia_tiny_legacy.pt the same dict in torch's pre-1.6 (non-zip) format, which LibTorch cannot read.
"""
import collections
import sys

import torch

HIDDEN, INTER, VOCAB_PADDED, POS, TYPES, LAYERS = 4, 16, 16, 16, 2, 1


def shapes():
    s = [("bert.embeddings.word_embeddings.weight", [VOCAB_PADDED, HIDDEN]),
         ("bert.embeddings.position_embeddings.weight", [POS, HIDDEN]),
         ("bert.embeddings.token_type_embeddings.weight", [TYPES, HIDDEN]),
         ("bert.embeddings.LayerNorm.weight", [HIDDEN]),
         ("bert.embeddings.LayerNorm.bias", [HIDDEN])]
    for i in range(LAYERS):
        p = f"bert.encoder.layer.{i}."
        for n in ("query", "key", "value"):
            s += [(p + f"attention.self.{n}.weight", [HIDDEN, HIDDEN]), (p + f"attention.self.{n}.bias", [HIDDEN])]
        s += [(p + "attention.output.dense.weight", [HIDDEN, HIDDEN]), (p + "attention.output.dense.bias", [HIDDEN]),
              (p + "attention.output.LayerNorm.weight", [HIDDEN]), (p + "attention.output.LayerNorm.bias", [HIDDEN]),
              (p + "intermediate.dense_act.weight", [INTER, HIDDEN]), (p + "intermediate.dense_act.bias", [INTER]),
              (p + "output.dense.weight", [HIDDEN, INTER]), (p + "output.dense.bias", [HIDDEN]),
              (p + "output.LayerNorm.weight", [HIDDEN]), (p + "output.LayerNorm.bias", [HIDDEN])]
    s += [("bert.pooler.dense_act.weight", [HIDDEN, HIDDEN]), ("bert.pooler.dense_act.bias", [HIDDEN]),
          ("cls.predictions.bias", [VOCAB_PADDED]),
          ("cls.predictions.transform.dense_act.weight", [HIDDEN, HIDDEN]),
          ("cls.predictions.transform.dense_act.bias", [HIDDEN]),
          ("cls.predictions.transform.LayerNorm.weight", [HIDDEN]),
          ("cls.predictions.transform.LayerNorm.bias", [HIDDEN]),
          ("cls.seq_relationship.weight", [2, HIDDEN]), ("cls.seq_relationship.bias", [2])]
    return s


def main(out_dir):
    sd = collections.OrderedDict()
    for i, (name, shape) in enumerate(shapes()):
        n = 1
        for d in shape:
            n *= d
        sd["module." + name] = (i + 0.001 * torch.arange(n, dtype=torch.float32)).reshape(shape)
    # the decoder shares the word embedding matrix, as in the real model
    sd["module.cls.predictions.decoder.weight"] = sd["module.bert.embeddings.word_embeddings.weight"]
    sd._metadata = collections.OrderedDict([("", {"version": 1})])
    first = sd["module.bert.embeddings.LayerNorm.weight"]
    ckpt = {"model": sd,
            "optimizer": {"state": {0: {"exp_avg": torch.zeros(4), "step": 3}},
                          "param_groups": [{"lr": 1e-4, "params": [0]}]},
            "master params": [first.clone()],
            "files": [0, "wiki_0.hdf5"],
            "epoch": 1,
            "data_loader": None}
    torch.save(ckpt, f"{out_dir}/nvidia_tiny.pt")
    torch.save(ckpt, f"{out_dir}/nvidia_tiny_legacy.pt", _use_new_zipfile_serialization=False)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
