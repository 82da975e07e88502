#pragma once
// HF transformers' config.json for BERT models: what we write next to model.safetensors so that
// `BertForPreTraining.from_pretrained(dir)` (or the QA / sequence-classification class) loads it,
// and what we read back (also from HF model directories).
//
// Written: architectures, model_type "bert", every ModelConfig field (gelu_tanh is written as HF's
// "gelu_pytorch_tanh"), position_embedding_type "absolute", torch_dtype "float32", and for sequence
// classification id2label / label2id (and problem_type "regression" when num_labels is 1).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "bert/config/fields.h"
#include "bert/model/model_config.h"

namespace bert::io {

struct HfConfigExtras {
  std::string architecture;         // "BertForPreTraining", "BertForQuestionAnswering", ...; "" = none
  std::vector<std::string> labels;  // sequence classification: label names by id (size = num_labels)
};

struct HfModelInfo {
  ModelConfig model;
  std::vector<std::string> architectures;
  std::vector<std::string> labels;  // from id2label, by id; empty when absent
  int64_t num_labels = 0;           // from num_labels or id2label; 0 when neither is present
};

config::json hf_config_json(const ModelConfig& model, const HfConfigExtras& extras = {});
// Atomic write of hf_config_json.
void write_hf_config(const std::filesystem::path& path, const ModelConfig& model, const HfConfigExtras& extras = {});
// ModelConfig via load_model_config (UserError on unknown architecture keys) plus the extras.
HfModelInfo read_hf_config(const std::filesystem::path& path);

}  // namespace bert::io
