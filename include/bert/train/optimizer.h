#pragma once
// Optimizers over a list of named parameters: LAMB (NVIDIA's FusedLAMB semantics) and AdamW
// (HF/Google semantics). Both run on multi-tensor `_foreach_*` ops; the global gradient norm,
// the finite check, the clip factor and LAMB's per-tensor trust ratios (and the mask of tensors
// that take one, copied to the device once) stay on the device, so step() reads nothing back to
// the host: the clip coefficient is a 0-dim device tensor; bias corrections and the learning rate
// are host doubles known in advance. The trainer's one blocking read per step is
// isfinite(global_grad_norm) (the loss scaler must know whether to skip the step).
//
// One step, given gradients g (already summed over micro-batches, still multiplied by the
// loss scale s when fp16 loss scaling is on):
//   norm  = ||g / s||_2 over every parameter          (global_grad_norm)
//   g'    = g / s * min(1, max_grad_norm / norm)       (clipping before the update; off when 0)
//   m     = b1 m + (1 - b1) g'      v = b2 v + (1 - b2) g'^2
//   LAMB:  u = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + wd * w
//          r = ||w|| / ||u||  (1 when either is 0; only on decayed tensors unless nvlamb)
//          w -= lr * r * u
//   AdamW: w -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps);  w -= lr * wd * w
// Weight decay is skipped for biases and LayerNorm weights, decided by the HF parameter name.
#include <torch/torch.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bert/config/fields.h"
#include "bert/train/train_config.h"

namespace bert::train {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// True for HF names that get no weight decay: "*.bias", "*LayerNorm.weight", "*LayerNorm.bias"
// (bert::model::excluded_from_weight_decay, the Google/NVIDIA rule).
bool excluded_from_weight_decay(const std::string& name);

class Optimizer {
 public:
  // `params` must require grad; their order is the order of the state.
  Optimizer(NamedTensors params, const OptimizerConfig& cfg);

  // ||grad / loss_scale||_2 over all parameters, as a 0-dim fp32 tensor on the parameters'
  // device (missing gradients count as zero). Non-finite when any gradient is.
  torch::Tensor global_grad_norm(double loss_scale = 1.0) const;

  // One update with learning rate `lr`. `grad_norm` is the value global_grad_norm(loss_scale)
  // returned for the current gradients (used for clipping). Increments step().
  void step(double lr, const torch::Tensor& grad_norm, double loss_scale = 1.0);

  void zero_grad();
  int64_t step_count() const { return step_; }
  const std::string& name() const { return cfg_.name; }
  const NamedTensors& params() const { return params_; }

  // State as tensors "exp_avg.<param>" / "exp_avg_sq.<param>" (on CPU) plus a JSON header
  // (optimizer name, step, hyper-parameters, parameter names).
  NamedTensors state_tensors() const;
  config::json state_meta() const;
  // Restore; UserError when the names, shapes or optimizer kind do not match.
  void load_state(const std::map<std::string, torch::Tensor>& tensors, const config::json& meta,
                  const std::string& where);

 private:
  void update_moments(const std::vector<torch::Tensor>& g);
  void lamb_step(double lr, const std::vector<torch::Tensor>& grads);
  void adamw_step(double lr, const std::vector<torch::Tensor>& grads);

  OptimizerConfig cfg_;
  NamedTensors params_;
  std::vector<bool> decay_;
  std::vector<torch::Tensor> exp_avg_, exp_avg_sq_;
  torch::Tensor trust_mask_;  // LAMB: [num params] bool on the device, built on the first step
  int64_t step_ = 0;
};

}  // namespace bert::train
