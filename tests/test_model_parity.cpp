// Numerical parity with NVIDIA's PyTorch BERT (the llm.c test_gpt2 idea): the same weights and
// inputs must give the same masked-LM logits, NSP logits and losses (1e-5) and the same gradient
// for every parameter (1e-4 relative). The golden files come from scripts/parity/make_golden.py,
// which runs NVIDIA DeepLearningExamples' modeling.py with Debian's python3-torch.
#include <gtest/gtest.h>

#include "bert/config/run_config.h"
#include "bert/io/safetensors.h"
#include "bert/io/weights.h"
#include "bert/model/heads.h"
#include "test_util.h"

using namespace bert;

namespace {

std::map<std::string, torch::Tensor> as_map(const io::NamedTensors& v) {
  std::map<std::string, torch::Tensor> m;
  for (const auto& [k, t] : v) m[k] = t;
  return m;
}

// max |a-b| / max(|b|, floor) over the tensor
double rel_error(const torch::Tensor& a, const torch::Tensor& b, double floor) {
  auto diff = (a.to(torch::kDouble) - b.to(torch::kDouble)).abs();
  auto scale = b.to(torch::kDouble).abs().clamp_min(floor);
  return (diff / scale).max().item<double>();
}

}  // namespace

TEST(ModelParity, MatchesNvidiaReferenceLogitsLossesAndGradients) {
  const auto dir = bert::test::source_dir() / "tests/data/parity_tiny";
  ModelConfig cfg = load_model_config(dir / "config.json");
  torch::manual_seed(0);
  model::BertForPreTraining m(cfg);
  auto report = io::load_weights_file(*m, dir / "model.safetensors");
  EXPECT_TRUE(report.complete()) << report.summary();
  m->eval();

  auto in = as_map(io::load_safetensors(dir / "inputs.safetensors").tensors);
  auto golden = as_map(io::load_safetensors(dir / "golden.safetensors").tensors);

  auto out = m->forward(in["input_ids"], in["token_type_ids"], in["attention_mask"], in["masked_lm_positions"]);
  auto loss = m->loss(out, in["masked_lm_ids"], in["next_sentence_labels"]);

  ASSERT_EQ(out.mlm_logits.sizes(), golden["mlm_logits"].sizes());
  EXPECT_LT((out.mlm_logits - golden["mlm_logits"]).abs().max().item<double>(), 1e-5);
  EXPECT_LT((out.nsp_logits - golden["nsp_logits"]).abs().max().item<double>(), 1e-5);
  EXPECT_NEAR(loss.mlm_loss.item<double>(), golden["mlm_loss"].item<double>(), 1e-5);
  EXPECT_NEAR(loss.nsp_loss.item<double>(), golden["nsp_loss"].item<double>(), 1e-5);
  EXPECT_NEAR(loss.total_loss.item<double>(), golden["total_loss"].item<double>(), 1e-5);

  loss.total_loss.backward();
  int checked = 0;
  for (const auto& [name, p] : io::named_state(*m, /*include_aliases=*/false)) {
    if (!p.requires_grad()) continue;
    auto it = golden.find("grad." + name);
    ASSERT_NE(it, golden.end()) << "no golden gradient for " << name;
    ASSERT_TRUE(p.grad().defined()) << name;
    // relative to the gradient's own scale (elements near zero compared against 1% of its max);
    // an absolute floor of 1e-6 covers gradients that are zero in exact arithmetic (the key
    // bias: softmax ignores a per-query constant) and so hold only rounding noise.
    double floor = std::max(1e-6, 0.01 * it->second.abs().max().item<double>());
    EXPECT_LT(rel_error(p.grad(), it->second, floor), 1e-4) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 46);  // every parameter of the tiny model (the decoder weight is the tied word embedding)
}
