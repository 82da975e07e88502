#pragma once
// Model weights by HF name: the state-dict view of a model, loading a set of named tensors into
// it with a report, and saving to model.safetensors.
//
// Typical use (the trainer's --init-checkpoint):
//   auto report = io::load_weights_file(*model, dir / "model.safetensors");
//   report.log();                      // missing / unexpected keys are warnings
// Shape mismatches are a UserError listing every mismatched key; nothing is copied in that case.
//
// Tied entries (see include/bert/model/heads.h): named_state() lists HF's alias keys
// cls.predictions.decoder.weight / .bias as extra entries sharing storage with their targets;
// save_weights() drops them (HF does the same, and safetensors cannot hold shared tensors);
// load_weights() accepts a file with or without them: an alias fills its target when the target
// itself is absent, and is otherwise only checked for shape. Absent aliases are never "missing".
#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <vector>

#include "bert/io/safetensors.h"
#include "bert/model/model_config.h"

namespace bert::io {

// Parameters and buffers of `model` with their full dotted names, in PyTorch state_dict order
// (each module's own parameters, then its buffers, then its children, depth first) — for the
// models in bert/model this is exactly HF's key list and order. With include_aliases, the tied
// aliases of model::tied_aliases() are inserted where HF lists them. Without aliases the order is
// that of model.parameters() (the models here have no buffers), so optimizer state can be keyed
// by these names.
NamedTensors named_state(const torch::nn::Module& model, bool include_aliases = true);

struct LoadReport {
  std::string source;                    // file or description, for messages
  std::vector<std::string> loaded;       // model keys that received a tensor
  std::vector<std::string> missing;      // model keys the source did not provide (kept as initialised)
  std::vector<std::string> unexpected;   // source keys the model does not have (not used)
  std::vector<std::string> ignored;      // source keys deliberately skipped (tied aliases, old position_ids)
  std::vector<std::string> renamed;      // "old -> new" (LayerNorm gamma/beta, "bert." prefix added/removed)
  bool complete() const { return missing.empty() && unexpected.empty(); }
  std::string summary() const;  // one line: counts
  void log() const;             // summary at info, missing/unexpected keys at warn
};

// Copy `tensors` into `model` (converting dtype and device). Renames handled: "LayerNorm.gamma/beta"
// -> ".weight/.bias" (old Google-converted files), and a missing or extra "bert." prefix (a bare
// BertModel file into a head model or back). UserError listing the keys when shapes differ.
LoadReport load_weights(torch::nn::Module& model, const NamedTensors& tensors, const std::string& source = "tensors");
// load_safetensors(path) then load_weights.
LoadReport load_weights_file(torch::nn::Module& model, const std::filesystem::path& path);

// named_state(model, /*include_aliases=*/false) as safetensors (atomically), with "format": "pt"
// in the metadata as transformers expects, plus `metadata`.
void save_weights(const torch::nn::Module& model, const std::filesystem::path& path, Metadata metadata = {});

// A model directory as HF's save_pretrained writes it: config.json (architecture from the model's
// class; for BertForSequenceClassification id2label from `labels`, default LABEL_0..LABEL_<n-1>)
// and model.safetensors, each written atomically.
void save_model_dir(const torch::nn::Module& model, const ModelConfig& cfg, const std::filesystem::path& dir,
                    std::vector<std::string> labels = {});
// Weights from dir/model.safetensors (UserError naming the directory when it is absent).
LoadReport load_model_dir(torch::nn::Module& model, const std::filesystem::path& dir);

}  // namespace bert::io
