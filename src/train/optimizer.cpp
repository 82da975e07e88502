// LAMB and AdamW on multi-tensor ops (see include/bert/train/optimizer.h for the math).
#include "bert/train/optimizer.h"

#include <cmath>

#include "bert/common/error.h"
#include "bert/common/strings.h"
#include "bert/model/layers.h"

namespace bert::train {

// One rule for the whole tree: the model's (Google/NVIDIA: biases and LayerNorm parameters).
bool excluded_from_weight_decay(const std::string& name) { return model::excluded_from_weight_decay(name); }

Optimizer::Optimizer(NamedTensors params, const OptimizerConfig& cfg) : cfg_(cfg), params_(std::move(params)) {
  if (cfg_.name != "lamb" && cfg_.name != "adamw")
    throw UserError("unknown optimizer '" + cfg_.name + "'; use lamb or adamw");
  if (params_.empty()) throw RuntimeError("optimizer given no parameters");
  for (auto& [name, p] : params_) {
    decay_.push_back(!excluded_from_weight_decay(name));
    exp_avg_.push_back(torch::zeros_like(p, torch::MemoryFormat::Contiguous).to(torch::kFloat));
    exp_avg_sq_.push_back(torch::zeros_like(p, torch::MemoryFormat::Contiguous).to(torch::kFloat));
  }
}

static std::vector<torch::Tensor> grads_of(const NamedTensors& params) {
  std::vector<torch::Tensor> g;
  g.reserve(params.size());
  for (const auto& [n, p] : params) {
    const auto& gr = p.grad();
    g.push_back(gr.defined() ? gr : torch::zeros_like(p));
  }
  return g;
}

torch::Tensor Optimizer::global_grad_norm(double loss_scale) const {
  torch::NoGradGuard ng;
  auto grads = grads_of(params_);
  std::vector<torch::Tensor> fp32;
  fp32.reserve(grads.size());
  for (auto& g : grads) fp32.push_back(g.scalar_type() == torch::kFloat ? g : g.to(torch::kFloat));
  auto norms = at::_foreach_norm(fp32, 2);
  return torch::stack(norms).norm(2) / loss_scale;
}

void Optimizer::step(double lr, const torch::Tensor& grad_norm, double loss_scale) {
  torch::NoGradGuard ng;
  ++step_;
  auto grads = grads_of(params_);
  std::vector<torch::Tensor> g;
  g.reserve(grads.size());
  for (auto& t : grads) g.push_back(t.to(torch::kFloat));
  if (cfg_.max_grad_norm > 0) {
    // coef = min(1, max_norm / norm) / scale, a 0-dim device tensor broadcast over every gradient
    auto n = grad_norm.to(torch::kFloat);
    auto coef = torch::where(n > cfg_.max_grad_norm, cfg_.max_grad_norm / n, torch::ones_like(n)) / loss_scale;
    std::vector<torch::Tensor> coefs(g.size(), coef);
    g = at::_foreach_mul(g, coefs);
  } else if (loss_scale != 1.0) {
    g = at::_foreach_div(g, loss_scale);
  }
  if (cfg_.name == "lamb")
    lamb_step(lr, g);
  else
    adamw_step(lr, g);
}

// Adam's moments, shared by LAMB and AdamW: m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2.
void Optimizer::update_moments(const std::vector<torch::Tensor>& g) {
  at::_foreach_mul_(exp_avg_, cfg_.beta1);
  at::_foreach_add_(exp_avg_, g, 1.0 - cfg_.beta1);
  at::_foreach_mul_(exp_avg_sq_, cfg_.beta2);
  at::_foreach_addcmul_(exp_avg_sq_, g, g, 1.0 - cfg_.beta2);
}

void Optimizer::lamb_step(double lr, const std::vector<torch::Tensor>& g) {
  update_moments(g);
  const double bc1 = 1.0 - std::pow(cfg_.beta1, static_cast<double>(step_));
  const double bc2 = 1.0 - std::pow(cfg_.beta2, static_cast<double>(step_));
  auto denom = at::_foreach_div(exp_avg_sq_, bc2);
  at::_foreach_sqrt_(denom);
  at::_foreach_add_(denom, cfg_.epsilon);
  auto update = at::_foreach_div(exp_avg_, bc1);
  at::_foreach_div_(update, denom);

  std::vector<torch::Tensor> w;
  for (auto& [n, p] : params_) w.push_back(p);
  std::vector<torch::Tensor> u_decay, w_decay;
  for (size_t i = 0; i < w.size(); ++i)
    if (decay_[i]) {
      u_decay.push_back(update[i]);
      w_decay.push_back(w[i].to(torch::kFloat));
    }
  if (cfg_.weight_decay != 0 && !u_decay.empty()) at::_foreach_add_(u_decay, w_decay, cfg_.weight_decay);

  // Trust ratios, all on the device: r_i = ||w_i|| / ||u_i||, 1 when either norm is 0.
  std::vector<torch::Tensor> w32;
  for (auto& t : w) w32.push_back(t.to(torch::kFloat));
  auto wn = torch::stack(at::_foreach_norm(w32, 2));
  auto un = torch::stack(at::_foreach_norm(update, 2));
  auto ratio = torch::where((wn > 0) & (un > 0), wn / un, torch::ones_like(wn));
  // Which tensors take their trust ratio: fixed for the optimizer's life, so it is copied to the
  // device once (a host->device copy every step would be a synchronisation on CUDA).
  if (!trust_mask_.defined() || trust_mask_.device() != wn.device()) {
    std::vector<uint8_t> apply(w.size());
    for (size_t i = 0; i < w.size(); ++i) apply[i] = cfg_.nvlamb || (decay_[i] && cfg_.weight_decay != 0);
    trust_mask_ = torch::from_blob(apply.data(), {static_cast<int64_t>(apply.size())}, torch::kUInt8)
                      .to(torch::kBool)
                      .to(wn.device());
  }
  ratio = torch::where(trust_mask_, ratio, torch::ones_like(ratio)) * (-lr);
  auto scales = ratio.unbind(0);
  at::_foreach_mul_(update, scales);
  bool all_fp32 = true;
  for (auto& t : w) all_fp32 = all_fp32 && t.scalar_type() == torch::kFloat;
  if (all_fp32) {
    at::_foreach_add_(w, update);
  } else {
    for (size_t i = 0; i < w.size(); ++i) w[i].add_(update[i].to(w[i].scalar_type()));
  }
}

void Optimizer::adamw_step(double lr, const std::vector<torch::Tensor>& g) {
  update_moments(g);
  const double bc1 = 1.0 - std::pow(cfg_.beta1, static_cast<double>(step_));
  const double bc2 = 1.0 - std::pow(cfg_.beta2, static_cast<double>(step_));
  const double step_size = lr * std::sqrt(bc2) / bc1;
  auto denom = at::_foreach_sqrt(exp_avg_sq_);
  at::_foreach_add_(denom, cfg_.epsilon);
  std::vector<torch::Tensor> w, w_decay;
  for (size_t i = 0; i < params_.size(); ++i) {
    w.push_back(params_[i].second);
    if (decay_[i]) w_decay.push_back(params_[i].second);
  }
  at::_foreach_addcdiv_(w, exp_avg_, denom, -step_size);
  // HF applies the decoupled decay after the Adam update: w -= lr * wd * w
  if (cfg_.weight_decay != 0 && !w_decay.empty()) at::_foreach_mul_(w_decay, 1.0 - lr * cfg_.weight_decay);
}

void Optimizer::zero_grad() {
  for (auto& [n, p] : params_) {
    auto& g = p.mutable_grad();
    if (g.defined()) g = torch::Tensor();  // set_to_none, as torch does by default
  }
}

NamedTensors Optimizer::state_tensors() const {
  NamedTensors out;
  for (size_t i = 0; i < params_.size(); ++i) {
    out.emplace_back("exp_avg." + params_[i].first, exp_avg_[i].detach().to(torch::kCPU).contiguous());
    out.emplace_back("exp_avg_sq." + params_[i].first, exp_avg_sq_[i].detach().to(torch::kCPU).contiguous());
  }
  return out;
}

config::json Optimizer::state_meta() const {
  config::json j = config::json::object();
  j["optimizer"] = cfg_.name;
  j["step"] = step_;
  j["beta1"] = cfg_.beta1;
  j["beta2"] = cfg_.beta2;
  j["epsilon"] = cfg_.epsilon;
  j["weight_decay"] = cfg_.weight_decay;
  j["max_grad_norm"] = cfg_.max_grad_norm;
  config::json names = config::json::array();
  for (auto& [n, p] : params_) names.push_back(n);
  j["params"] = names;
  return j;
}

void Optimizer::load_state(const std::map<std::string, torch::Tensor>& tensors, const config::json& meta,
                           const std::string& where) {
  if (!meta.is_object() || !meta.contains("optimizer") || !meta.contains("step"))
    throw UserError(where + ": optimizer state has no 'optimizer'/'step' entries; the checkpoint is damaged");
  std::string kind = meta["optimizer"].get<std::string>();
  if (kind != cfg_.name)
    throw UserError(where + ": optimizer state is for " + kind + " but this run uses " + cfg_.name +
                    "; set optimizer.name=" + kind + " or use --init-checkpoint to start a new optimizer");
  torch::NoGradGuard ng;
  std::vector<torch::Tensor> m(params_.size()), v(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& name = params_[i].first;
    auto a = tensors.find("exp_avg." + name), b = tensors.find("exp_avg_sq." + name);
    if (a == tensors.end() || b == tensors.end())
      throw UserError(where + ": optimizer state has no moments for parameter " + name +
                      "; use --init-checkpoint to load the weights with a fresh optimizer");
    if (a->second.sizes() != params_[i].second.sizes() || b->second.sizes() != params_[i].second.sizes())
      throw UserError(where + ": optimizer state for " + name + " has shape " + c10::str(a->second.sizes()) +
                      " but the parameter has " + c10::str(params_[i].second.sizes()));
    m[i] = a->second.to(exp_avg_[i].device(), torch::kFloat).contiguous().clone();
    v[i] = b->second.to(exp_avg_sq_[i].device(), torch::kFloat).contiguous().clone();
  }
  exp_avg_ = std::move(m);
  exp_avg_sq_ = std::move(v);
  step_ = meta["step"].get<int64_t>();
}

}  // namespace bert::train
