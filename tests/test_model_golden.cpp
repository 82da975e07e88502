// Parity with an independent implementation: tests/data/tiny_bert_golden.json holds the MLM/NSP
// logits and losses that scripts/make_tiny_golden.py (a pure-Python HF/Google BERT forward in
// float64) computes for the weights in tests/data/tiny_bert.safetensors (written by that script's
// own safetensors writer). Our model must reproduce them in fp32.
#include <torch/torch.h>

#include "bert/config/fields.h"
#include "bert/io/weights.h"
#include "bert/model/heads.h"
#include "test_util.h"

namespace {

using namespace bert;
using config::json;

torch::Tensor tensor_of(const json& j, torch::ScalarType t) {
  std::vector<double> flat;
  int64_t rows = static_cast<int64_t>(j.size()), cols = 0;
  for (const auto& r : j) {
    cols = static_cast<int64_t>(r.size());
    for (const auto& v : r) flat.push_back(v.get<double>());
  }
  return torch::tensor(flat, torch::kFloat64).view({rows, cols}).to(t);
}

TEST(ModelGolden, MatchesIndependentReferenceInFp32) {
  auto dir = test::source_dir() / "tests" / "data";
  json g = json::parse(test::read_text(dir / "tiny_bert_golden.json"));
  ModelConfig cfg;
  config::FieldList f;
  cfg.describe(f);
  config::read_json(f, g["config"], "golden config");

  model::BertForPreTraining m(cfg);
  auto report = io::load_weights_file(*m, dir / "tiny_bert.safetensors");
  ASSERT_TRUE(report.complete()) << report.summary();
  m->eval();

  auto out = m->forward(tensor_of(g["input_ids"], torch::kLong), tensor_of(g["token_type_ids"], torch::kLong),
                        tensor_of(g["attention_mask"], torch::kLong),
                        tensor_of(g["masked_lm_positions"], torch::kLong));
  auto want_mlm = tensor_of(g["mlm_logits"], torch::kFloat);
  auto want_nsp = tensor_of(g["nsp_logits"], torch::kFloat);
  ASSERT_EQ(out.mlm_logits.sizes(), want_mlm.sizes());
  EXPECT_LT((out.mlm_logits - want_mlm).abs().max().item<float>(), 2e-5);
  EXPECT_LT((out.nsp_logits - want_nsp).abs().max().item<float>(), 2e-5);

  auto nsp_labels = torch::tensor(g["next_sentence_labels"].get<std::vector<int64_t>>());
  auto loss = m->loss(out, tensor_of(g["masked_lm_ids"], torch::kLong), nsp_labels);
  EXPECT_NEAR(loss.mlm_loss.item<float>(), g["mlm_loss"].get<double>(), 2e-5);
  EXPECT_NEAR(loss.nsp_loss.item<float>(), g["nsp_loss"].get<double>(), 2e-5);
  EXPECT_EQ(loss.mlm_count.item<int64_t>(), 3);
}

}  // namespace
