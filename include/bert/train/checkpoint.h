#pragma once
// Training checkpoints: one directory per save,
//
//   <output>/checkpoints/step_<N>/
//       model.safetensors     weights by HF name (loadable by transformers' from_pretrained)
//       config.json           HF-style model config (architectures: BertForPreTraining)
//       optimizer.safetensors exp_avg.<param> / exp_avg_sq.<param>
//       optimizer.json        optimizer kind, its step count, hyper-parameters, parameter order
//       trainer_state.json    step, samples, phase, scheduler, loss scaler, RNG states, data cursor
//       run_config.json       the resolved run settings
//   <output>/checkpoints/latest -> step_<N>   (symlink, replaced atomically)
//
// A save writes everything into a hidden temporary directory and renames it into place, then
// moves `latest`; a crash mid-save never leaves a half checkpoint under a step_<N> name.
// Retention keeps the newest `keep_last` periodic checkpoints; final ones (trainer_state.json
// "final": true) are never deleted. Cadence: every `every_steps` steps and/or whenever the sample
// count crosses a multiple of `every_samples`, and neither before `min_samples_to_start` samples
// (Intel's num_samples_per_checkpoint / min_samples_to_start_checkpoints).
#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <vector>

#include "bert/config/fields.h"
#include "bert/model/model_config.h"
#include "bert/train/optimizer.h"
#include "bert/train/train_config.h"

namespace bert::train {

namespace fs = std::filesystem;

struct CheckpointContents {
  fs::path dir;
  config::json trainer_state;
  config::json optimizer_meta;
  std::map<std::string, torch::Tensor> optimizer_tensors;
};

class CheckpointManager {
 public:
  CheckpointManager(fs::path output_dir, CheckpointConfig cfg);

  fs::path root() const { return root_; }
  // A periodic save is due after the step that took the sample count from prev_samples to samples.
  bool due(int64_t step, int64_t prev_samples, int64_t samples) const;

  // Write step_<step> (see above), move `latest`, prune old periodic checkpoints.
  fs::path save(int64_t step, const torch::nn::Module& model, const ModelConfig& model_cfg, const Optimizer& opt,
                config::json trainer_state, const config::json& run_config, bool final);

  // Directories step_<N> that hold a complete checkpoint, oldest first.
  std::vector<fs::path> list() const;

 private:
  void prune();
  fs::path output_dir_, root_;
  CheckpointConfig cfg_;
};

// "latest" (in output_dir/checkpoints), a checkpoint directory, or a run directory holding
// checkpoints/latest -> the checkpoint directory. UserError when there is none.
fs::path resolve_checkpoint(const std::string& spec, const fs::path& output_dir);

// Everything but the weights, for --resume (UserError naming the missing/damaged file).
CheckpointContents read_checkpoint(const fs::path& dir);

// The model file inside a checkpoint directory, or the file itself when `spec` is a .safetensors file.
fs::path checkpoint_weights_file(const fs::path& spec);

// Torch's global RNG states (CPU, and CUDA when present) as JSON, and back.
config::json capture_rng_state();
void restore_rng_state(const config::json& j, const std::string& where);

}  // namespace bert::train
