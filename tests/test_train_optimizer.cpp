// LAMB and AdamW: two steps on small tensors against a scalar re-derivation of the update rules,
// plus the weight-decay exclusion by HF name and the state round trip.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "bert/common/error.h"
#include "bert/train/optimizer.h"

using namespace bert;
using namespace bert::train;

namespace {

struct P {
  std::string name;
  std::vector<double> w;
};

// The update rules written out element by element in double precision.
struct Reference {
  OptimizerConfig cfg;
  std::vector<P> params;
  std::vector<std::vector<double>> m, v;
  int t = 0;

  void step(double lr, const std::vector<std::vector<double>>& grads) {
    ++t;
    double sq = 0;
    for (auto& g : grads)
      for (double x : g) sq += x * x;
    double norm = std::sqrt(sq);
    double coef = (cfg.max_grad_norm > 0 && norm > cfg.max_grad_norm) ? cfg.max_grad_norm / norm : 1.0;
    if (m.empty())
      for (auto& p : params) {
        m.emplace_back(p.w.size(), 0.0);
        v.emplace_back(p.w.size(), 0.0);
      }
    double bc1 = 1 - std::pow(cfg.beta1, t), bc2 = 1 - std::pow(cfg.beta2, t);
    for (size_t i = 0; i < params.size(); ++i) {
      auto& w = params[i].w;
      bool decay = !excluded_from_weight_decay(params[i].name);
      std::vector<double> u(w.size());
      for (size_t k = 0; k < w.size(); ++k) {
        double g = grads[i][k] * coef;
        m[i][k] = cfg.beta1 * m[i][k] + (1 - cfg.beta1) * g;
        v[i][k] = cfg.beta2 * v[i][k] + (1 - cfg.beta2) * g * g;
      }
      if (cfg.name == "lamb") {
        double wn = 0, un = 0;
        for (size_t k = 0; k < w.size(); ++k) {
          u[k] = (m[i][k] / bc1) / (std::sqrt(v[i][k] / bc2) + cfg.epsilon) + (decay ? cfg.weight_decay * w[k] : 0);
          wn += w[k] * w[k];
          un += u[k] * u[k];
        }
        wn = std::sqrt(wn);
        un = std::sqrt(un);
        double r = (wn > 0 && un > 0) ? wn / un : 1.0;
        if (!(cfg.nvlamb || decay)) r = 1.0;
        for (size_t k = 0; k < w.size(); ++k) w[k] -= lr * r * u[k];
      } else {
        double step_size = lr * std::sqrt(bc2) / bc1;
        for (size_t k = 0; k < w.size(); ++k) {
          w[k] -= step_size * m[i][k] / (std::sqrt(v[i][k]) + cfg.epsilon);
          if (decay) w[k] -= lr * cfg.weight_decay * w[k];
        }
      }
    }
  }
};

torch::Tensor vec(const std::vector<double>& x) {
  return torch::tensor(std::vector<float>(x.begin(), x.end()), torch::kFloat);
}

void run_and_compare(OptimizerConfig cfg, double loss_scale) {
  std::vector<P> init = {{"bert.encoder.layer.0.attention.self.query.weight", {1.0, -2.0, 0.5, 0.25}},
                         {"bert.encoder.layer.0.attention.self.query.bias", {0.5, -0.1}},
                         {"bert.embeddings.LayerNorm.weight", {1.0, 1.0}},
                         {"cls.predictions.bias", {0.0, 0.0}}};
  std::vector<std::vector<std::vector<double>>> grads = {
      {{0.5, 1.0, -0.2, 0.1}, {2.0, -0.3}, {0.05, -0.02}, {0.3, 0.7}},
      {{-0.1, 0.4, 0.3, -0.6}, {0.2, 0.1}, {-0.01, 0.04}, {-0.2, 0.1}}};
  NamedTensors params;
  for (auto& p : init) params.emplace_back(p.name, vec(p.w).requires_grad_(true));
  Optimizer opt(params, cfg);
  Reference ref{cfg, init, {}, {}, 0};
  const double lrs[2] = {0.1, 0.05};
  for (int s = 0; s < 2; ++s) {
    for (size_t i = 0; i < params.size(); ++i) params[i].second.mutable_grad() = vec(grads[s][i]) * loss_scale;
    auto norm = opt.global_grad_norm(loss_scale);
    double expect_norm = 0;
    for (auto& g : grads[s])
      for (double x : g) expect_norm += x * x;
    EXPECT_NEAR(norm.item<double>(), std::sqrt(expect_norm), 1e-5);
    opt.step(lrs[s], norm, loss_scale);
    opt.zero_grad();
    ref.step(lrs[s], grads[s]);
    for (size_t i = 0; i < params.size(); ++i) {
      auto got = params[i].second.detach();
      for (size_t k = 0; k < ref.params[i].w.size(); ++k)
        EXPECT_NEAR(got[k].item<double>(), ref.params[i].w[k], 2e-6)
            << cfg.name << " step " << s + 1 << " " << params[i].first << "[" << k << "]";
    }
  }
  EXPECT_EQ(opt.step_count(), 2);
}

}  // namespace

TEST(TrainOptimizer, WeightDecayExclusionByHfName) {
  EXPECT_TRUE(excluded_from_weight_decay("bert.encoder.layer.3.output.dense.bias"));
  EXPECT_TRUE(excluded_from_weight_decay("bert.encoder.layer.3.output.LayerNorm.weight"));
  EXPECT_TRUE(excluded_from_weight_decay("bert.embeddings.LayerNorm.bias"));
  EXPECT_TRUE(excluded_from_weight_decay("cls.predictions.bias"));
  EXPECT_FALSE(excluded_from_weight_decay("bert.encoder.layer.3.output.dense.weight"));
  EXPECT_FALSE(excluded_from_weight_decay("bert.embeddings.word_embeddings.weight"));
}

TEST(TrainOptimizer, LambOneStepByHand) {
  // w = [3, 4] (||w|| = 5), g = [0.6, 0.8] (||g|| = 1, no clipping), lr 0.1, wd 0.01, first step:
  // m_hat = g, v_hat = g^2, so u = g / (|g| + eps) + wd * w = [1 + 0.03, 1 + 0.04] (eps -> 0)
  // ||u|| = sqrt(1.03^2 + 1.04^2) = 1.46372, r = 5 / 1.46372 = 3.41595
  // w' = w - 0.1 * r * u = [3 - 0.351843, 4 - 0.355259] = [2.648157, 3.644741]
  OptimizerConfig cfg;
  cfg.name = "lamb";
  cfg.epsilon = 1e-12;
  NamedTensors params = {{"dense.weight", torch::tensor({3.0f, 4.0f}).requires_grad_(true)}};
  params[0].second.mutable_grad() = torch::tensor({0.6f, 0.8f});
  Optimizer opt(params, cfg);
  auto n = opt.global_grad_norm();
  opt.step(0.1, n);
  auto w = params[0].second.detach();
  EXPECT_NEAR(w[0].item<double>(), 2.648157, 1e-5);
  EXPECT_NEAR(w[1].item<double>(), 3.644741, 1e-5);
}

TEST(TrainOptimizer, AdamWOneStepByHand) {
  // First step: m_hat / sqrt(v_hat) = sign(g); step_size = lr * sqrt(1 - b2) / (1 - b1) applies to
  // m / (sqrt(v) + eps) = 0.1 g / (0.0316228 |g|) -> exactly lr * sign(g). Then w -= lr * wd * w.
  // w = [1, -2], g = [0.5, -0.25], lr 0.01, wd 0.01:
  // after Adam: [0.99, -1.99]; after decay: [0.99 * 0.9999, -1.99 * 0.9999] = [0.989901, -1.989801]
  OptimizerConfig cfg;
  cfg.name = "adamw";
  cfg.epsilon = 1e-12;
  NamedTensors params = {{"classifier.weight", torch::tensor({1.0f, -2.0f}).requires_grad_(true)}};
  params[0].second.mutable_grad() = torch::tensor({0.5f, -0.25f});
  Optimizer opt(params, cfg);
  opt.step(0.01, opt.global_grad_norm());
  auto w = params[0].second.detach();
  EXPECT_NEAR(w[0].item<double>(), 0.989901, 1e-6);
  EXPECT_NEAR(w[1].item<double>(), -1.989801, 1e-6);
}

TEST(TrainOptimizer, LambTwoStepsMatchReference) {
  OptimizerConfig cfg;
  cfg.name = "lamb";
  run_and_compare(cfg, 1.0);
}

TEST(TrainOptimizer, LambNvlambAndLossScaleMatchReference) {
  OptimizerConfig cfg;
  cfg.name = "lamb";
  cfg.nvlamb = true;
  cfg.max_grad_norm = 0;  // no clipping: the loss scale alone must be divided out
  run_and_compare(cfg, 1024.0);
}

TEST(TrainOptimizer, AdamWTwoStepsMatchReference) {
  OptimizerConfig cfg;
  cfg.name = "adamw";
  cfg.weight_decay = 0.1;
  run_and_compare(cfg, 8.0);
}

TEST(TrainOptimizer, NonFiniteGradientGivesNonFiniteNorm) {
  OptimizerConfig cfg;
  NamedTensors params = {{"a.weight", torch::ones({3}).requires_grad_(true)},
                         {"b.weight", torch::ones({2}).requires_grad_(true)}};
  params[0].second.mutable_grad() = torch::tensor({1.0f, std::nanf(""), 0.0f});
  params[1].second.mutable_grad() = torch::ones({2});
  Optimizer opt(params, cfg);
  EXPECT_FALSE(std::isfinite(opt.global_grad_norm().item<double>()));
}

TEST(TrainOptimizer, StateRoundTrip) {
  OptimizerConfig cfg;
  NamedTensors params = {{"x.weight", torch::tensor({1.0f, 2.0f}).requires_grad_(true)}};
  params[0].second.mutable_grad() = torch::tensor({0.1f, -0.2f});
  Optimizer a(params, cfg);
  a.step(0.01, a.global_grad_norm());
  std::map<std::string, torch::Tensor> st;
  for (auto& [k, v] : a.state_tensors()) st[k] = v;
  NamedTensors params2 = {{"x.weight", params[0].second.detach().clone().requires_grad_(true)}};
  Optimizer b(params2, cfg);
  b.load_state(st, a.state_meta(), "test");
  EXPECT_EQ(b.step_count(), 1);
  params[0].second.mutable_grad() = torch::tensor({0.3f, 0.1f});
  params2[0].second.mutable_grad() = torch::tensor({0.3f, 0.1f});
  a.step(0.01, a.global_grad_norm());
  b.step(0.01, b.global_grad_norm());
  EXPECT_TRUE(torch::equal(params[0].second, params2[0].second));

  OptimizerConfig other = cfg;
  other.name = "adamw";
  Optimizer c(params2, other);
  EXPECT_THROW(c.load_state(st, a.state_meta(), "test"), UserError);
}
