#pragma once
// Google BERT (TensorFlow) variable names <-> HF transformers parameter names.
//
//   bert/encoder/layer_3/attention/self/query/kernel  <->  bert.encoder.layer.3.attention.self.query.weight
//
// Dense kernels are stored [in, out] by TensorFlow and [out, in] by PyTorch, so rules for
// ".../kernel" carry transpose = true. cls/seq_relationship/output_weights and the fine-tuning
// heads (output_weights) are already [out, in] and are not transposed. One table serves both
// directions.
#include <optional>
#include <string>
#include <vector>

#include "bert/io/name_map.h"

namespace bert::io {

// Google name -> HF name (with {N} for the layer number).
const std::vector<NameRule>& tf_to_hf_rules();
// HF name -> Google name: the same table reversed.
const std::vector<NameRule>& hf_to_tf_rules();

enum class TfVarKind {
  Weight,         // a model weight with an HF name
  OptimizerSlot,  // adam_m / adam_v and friends
  TrainingState,  // global_step, loss scale, ...
  Unknown,        // not a known BERT variable
};

struct TfVarInfo {
  TfVarKind kind = TfVarKind::Unknown;
  std::string hf_name;     // for Weight
  bool transpose = false;  // for Weight
  std::string why;         // for skipped kinds: "optimizer slot", "training state"
};

TfVarInfo classify_tf_variable(const std::string& tf_name);
// The Google name for an HF parameter name, nullopt for names with no Google counterpart.
std::optional<NameMatch> hf_to_tf_name(const std::string& hf_name);

}  // namespace bert::io
