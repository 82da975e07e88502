#pragma once
// One entry point for every checkpoint format, and `bert-train convert`.
//
// load_any_checkpoint(path) detects what `path` is and returns the weights under HF names (plus
// the model config when the source has one):
//
//   bert-train   a checkpoint directory written by the trainer (model.safetensors, config.json,
//                trainer_state.json, optimizer state), or a run's output directory
//                (<dir>/checkpoints/latest is used)
//   hf           an HF model directory: config.json + model.safetensors (or a sharded
//                model.safetensors.index.json, or pytorch_model.bin)
//   safetensors  a bare .safetensors file (config.json / bert_config.json next to it if present)
//   tf           a Google TF checkpoint: its prefix, .index or .data-* file, or a directory with
//                bert_model.ckpt.* (+ bert_config.json)
//   nvidia       an NVIDIA DeepLearningExamples .pt file (or any torch.save state dict), or a
//                directory holding exactly one *.pt
//
// convert_checkpoint() loads those weights into one of our model classes (so missing, unexpected
// and mismatched keys are reported; a shape mismatch is an error), then writes the model as an HF
// directory (config.json, model.safetensors, vocab.txt, tokenizer_config.json,
// special_tokens_map.json) or as a Google TF checkpoint (bert_model.ckpt.*, bert_config.json,
// vocab.txt). The output is assembled in a temporary directory next to the target and renamed
// into place, so a failed conversion leaves nothing half written.
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "bert/io/name_map.h"
#include "bert/io/weights.h"
#include "bert/model/model_config.h"

namespace bert::io {

enum class CheckpointFormat { Auto, BertTrain, Hf, Safetensors, Tf, Nvidia };

// "auto", "bert-train", "hf", "safetensors", "tf", "nvidia".
std::string checkpoint_format_name(CheckpointFormat f);
// The inverse; UserError listing the valid names.
CheckpointFormat parse_checkpoint_format(const std::string& name);
// What `path` holds (never Auto). UserError naming what was looked for when it is none of them.
CheckpointFormat detect_checkpoint_format(const std::filesystem::path& path);

struct LoadAnyOptions {
  CheckpointFormat format = CheckpointFormat::Auto;  // Auto: detect_checkpoint_format
  // A bert_config.json / config.json that replaces the one found with the checkpoint.
  std::filesystem::path config_path;
  // For NVIDIA checkpoints without a config: trim vocabulary padding rows down to this size.
  std::optional<int64_t> vocab_size;
};

// What a load found besides the weights.
struct CheckpointSource {
  CheckpointFormat format = CheckpointFormat::Auto;
  std::filesystem::path path;         // what was read: file, directory or TF prefix
  std::filesystem::path config_file;  // the model config that was read; empty when none
  std::vector<std::string> architectures;  // from an HF config.json
  std::vector<std::string> labels;         // id2label of an HF config.json, by id
  int64_t num_labels = 0;                  // num_labels / id2label of an HF config.json; 0 = none
  std::filesystem::path vocab_file;        // vocab.txt next to the checkpoint; empty when none
  std::optional<bool> do_lower_case;       // from tokenizer_config.json next to the checkpoint
};

// Reads any of the formats above (see the top of this file). `source`, when given, receives what
// else was found. UserError (one line) for a path that is none of them or a file that is damaged.
ImportedWeights load_any_checkpoint(const std::filesystem::path& path, const LoadAnyOptions& opts = {},
                                    CheckpointSource* source = nullptr);

// --init-checkpoint: load_any_checkpoint, then load_weights into `model` (shape mismatches throw;
// missing and unexpected keys are logged as warnings). `model_cfg` supplies the vocabulary size
// for trimming NVIDIA padding when the checkpoint has no config of its own.
LoadReport init_from_checkpoint(torch::nn::Module& model, const ModelConfig& model_cfg,
                                const std::filesystem::path& path);

// ---- bert-train convert ---------------------------------------------------------------------------

enum class ConvertTarget { Hf, Tf };
enum class HeadKind { Auto, PreTraining, QuestionAnswering, Classification };

ConvertTarget parse_convert_target(const std::string& name);  // "hf" | "tf"
HeadKind parse_head_kind(const std::string& name);            // "auto" | "pretraining" | "qa" | "classification"
std::string head_architecture(HeadKind h);                    // "BertForPreTraining", ...

struct ConvertOptions {
  std::filesystem::path input;
  std::filesystem::path output_dir;
  CheckpointFormat from = CheckpointFormat::Auto;
  ConvertTarget to = ConvertTarget::Hf;
  std::filesystem::path model_config;  // replaces the config found with the input
  std::filesystem::path vocab;         // default: vocab.txt next to the input
  HeadKind head = HeadKind::Auto;      // Auto: from the source's architectures, else from its tensor names
  int64_t num_labels = 0;              // classification; 0 = from --labels / the source
  std::vector<std::string> labels;     // classification label names, by id
  std::optional<bool> do_lower_case;   // default: tokenizer_config.json of the source, else guessed from the vocab
  bool overwrite = false;              // replace a non-empty output directory
  uint64_t seed = 0;                   // initialises weights the source lacks (reported as missing)
};

struct ConvertResult {
  CheckpointSource source;
  ModelConfig model;
  std::string architecture;        // the head the weights were loaded into
  std::vector<std::string> labels; // classification only
  bool do_lower_case = true;
  std::string do_lower_case_from;  // "--do-lower-case", "tokenizer_config.json", "guessed from the vocab", ...
  size_t tensors_read = 0;
  std::vector<std::string> skipped, unmapped, notes;
  LoadReport load;
  size_t tensors_written = 0;
  std::vector<std::string> files;  // names written into output_dir
  std::filesystem::path output_dir;
};

// Does the whole conversion (see the top of this file). UserError for bad input or options.
ConvertResult convert_checkpoint(const ConvertOptions& opts);
// The report: format, tensors read, skipped (grouped by reason), renamed, missing/unexpected for
// the head, where it wrote.
void log_convert_result(const ConvertResult& r);

}  // namespace bert::io
