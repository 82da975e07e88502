// Attention paths (explicit vs an independent per-head loop; SDPA vs explicit where LibTorch has
// it; the model.attention_impl switch) and activation checkpointing (gradients equal with and
// without it, dropout included).
#include <gtest/gtest.h>

#include <cmath>

#include "bert/common/error.h"
#include "bert/data/pack.h"
#include "bert/device/compat.h"
#include "bert/model/heads.h"
#include "pack_test_helpers.h"

using namespace bert;

namespace {

// softmax(q k^T / sqrt(d) + mask) v, one (batch, head, query) at a time in double precision.
torch::Tensor naive_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                              const torch::Tensor& mask) {
  auto qd = q.to(torch::kDouble), kd = k.to(torch::kDouble), vd = v.to(torch::kDouble);
  auto md = mask.to(torch::kDouble).expand({q.size(0), q.size(1), q.size(2), k.size(2)});
  auto out = torch::zeros_like(qd);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  for (int64_t b = 0; b < q.size(0); ++b)
    for (int64_t h = 0; h < q.size(1); ++h)
      for (int64_t i = 0; i < q.size(2); ++i) {
        std::vector<double> w(k.size(2));
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j < k.size(2); ++j) {
          w[j] = (qd[b][h][i] * kd[b][h][j]).sum().item<double>() * scale + md[b][h][i][j].item<double>();
          mx = std::max(mx, w[j]);
        }
        for (auto& x : w) sum += (x = std::exp(x - mx));
        for (int64_t j = 0; j < k.size(2); ++j) out[b][h][i] += vd[b][h][j] * (w[j] / sum);
      }
  return out;
}

struct Qkv {
  torch::Tensor q, k, v;
};

Qkv random_qkv() {
  torch::manual_seed(17);
  return {torch::randn({2, 3, 7, 8}), torch::randn({2, 3, 7, 8}), torch::randn({2, 3, 7, 8})};
}

torch::Tensor padding_mask() {
  auto m = torch::ones({2, 7}, torch::kLong);
  m[1].narrow(0, 4, 3).zero_();
  return model::extended_attention_mask(m, torch::kFloat);
}

torch::Tensor packed_mask() {
  auto idx = torch::tensor({1, 1, 1, 2, 2, 3, 0, 1, 1, 2, 2, 2, 2, 0}, torch::kLong).view({2, 7});
  return model::block_diagonal_attention_mask(idx, torch::kFloat);
}

ModelConfig tiny(double dropout) {
  ModelConfig c;
  c.vocab_size = 100;
  c.hidden_size = 32;
  c.num_hidden_layers = 3;
  c.num_attention_heads = 4;
  c.intermediate_size = 64;
  c.max_position_embeddings = 64;
  c.hidden_dropout_prob = dropout;
  c.attention_probs_dropout_prob = dropout;
  return c;
}

// Gradients of every parameter after one forward/backward in training mode (packed batch).
std::vector<torch::Tensor> grads(bool checkpointing, double dropout) {
  auto cfg = tiny(dropout);
  cfg.gradient_checkpointing = checkpointing;
  torch::manual_seed(2);
  model::BertForPreTraining m(cfg);
  m->train();
  auto rows = data::pack_rows(test::random_instances(10, 32, 5, 6), data::PackOptions{}, 0, nullptr);
  auto b = test::to_batch(rows);
  torch::manual_seed(99);  // the dropout masks
  auto out = m->forward(b.input_ids, b.token_type_ids, b.attention_mask, b.masked_lm_positions, b.packed_inputs());
  m->loss(out, b.masked_lm_ids, b.next_sentence_labels).total_loss.backward();
  std::vector<torch::Tensor> g;
  for (auto& p : m->parameters()) g.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  return g;
}

}  // namespace

TEST(ModelAttention, ExplicitPathMatchesNaiveLoopWithPaddingAndPackedMasks) {
  auto [q, k, v] = random_qkv();
  for (const auto& mask : {padding_mask(), packed_mask()}) {
    // Queries that attend to at least one key (a packed row's padding queries attend to none: their
    // output is meaningless, and in fp32 score - 10000 keeps only ~1e-3 of the score).
    auto live = mask.expand({2, 3, 7, 7}).eq(0).any(-1).unsqueeze(-1).to(torch::kDouble);
    auto got = compat::explicit_attention(q, k, v, mask, 0.0).to(torch::kDouble) * live;
    auto want = naive_attention(q, k, v, mask) * live;
    EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-6)) << (got - want).abs().max().item<double>();
  }
  // The dispatcher in eval mode ignores dropout and takes the requested path.
  auto a = compat::scaled_dot_product_attention(q, k, v, packed_mask(), 0.5, /*training=*/false,
                                                compat::AttentionImpl::kExplicit);
  EXPECT_TRUE(torch::allclose(a, compat::explicit_attention(q, k, v, packed_mask(), 0.0)));
}

TEST(ModelAttention, PackedMaskKeepsSequencesApart) {
  // Changing the keys/values of sequence 2 of row 0 leaves sequence 1's outputs unchanged.
  auto [q, k, v] = random_qkv();
  auto mask = packed_mask();
  auto before = compat::explicit_attention(q, k, v, mask, 0.0);
  auto k2 = k.clone(), v2 = v.clone();
  k2[0].narrow(1, 3, 2).normal_();
  v2[0].narrow(1, 3, 2).normal_();
  auto after = compat::explicit_attention(q, k2, v2, mask, 0.0);
  EXPECT_TRUE(torch::equal(before[0].narrow(1, 0, 3), after[0].narrow(1, 0, 3)));
  EXPECT_FALSE(torch::equal(before[0].narrow(1, 3, 2), after[0].narrow(1, 3, 2)));
}

TEST(ModelAttention, SdpaMatchesExplicit) {
#if BERT_HAS_SDPA
  auto [q, k, v] = random_qkv();
  for (const auto& mask : {padding_mask(), packed_mask()}) {
    auto a = compat::sdpa_attention(q, k, v, mask, 0.0);
    auto b = compat::explicit_attention(q, k, v, mask, 0.0);
    EXPECT_TRUE(torch::allclose(a, b, 1e-5, 1e-5)) << (a - b).abs().max().item<double>();
  }
  // The whole model through both paths.
  auto cfg = tiny(0.0);
  auto rows = data::pack_rows(test::random_instances(6, 32, 5, 3), data::PackOptions{}, 0, nullptr);
  auto b = test::to_batch(rows);
  std::vector<double> losses;
  for (const char* impl : {"sdpa", "explicit"}) {
    cfg.attention_impl = impl;
    torch::manual_seed(4);
    model::BertForPreTraining m(cfg);
    m->eval();
    torch::NoGradGuard ng;
    auto out = m->forward(b.input_ids, b.token_type_ids, b.attention_mask, b.masked_lm_positions, b.packed_inputs());
    losses.push_back(m->loss(out, b.masked_lm_ids, b.next_sentence_labels).total_loss.item<double>());
  }
  EXPECT_NEAR(losses[0], losses[1], 1e-5);
#else
  GTEST_SKIP() << "LibTorch " << compat::torch_version()
               << " has no scaled_dot_product_attention (needs >= 2.0); only the explicit path exists here";
#endif
}

TEST(ModelAttention, AttentionImplSwitch) {
  EXPECT_EQ(compat::resolve_attention_impl("explicit"), compat::AttentionImpl::kExplicit);
  EXPECT_EQ(compat::resolve_attention_impl("auto"),
            compat::kHasSDPA ? compat::AttentionImpl::kSdpa : compat::AttentionImpl::kExplicit);
  EXPECT_THROW(compat::resolve_attention_impl("flash"), UserError);
  auto cfg = tiny(0.0);
  cfg.attention_impl = "sdpa";
  if (compat::kHasSDPA) {
    EXPECT_NO_THROW(model::BertModel{cfg});
  } else {
    try {
      model::BertModel m(cfg);
      FAIL() << "sdpa accepted on LibTorch " << compat::torch_version();
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(compat::torch_version()), std::string::npos) << e.what();
    }
  }
}

TEST(ModelCheckpointing, GradientsEqualWithoutDropout) {
  auto a = grads(false, 0.0), b = grads(true, 0.0);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-5, 1e-6)) << "parameter " << i;
}

TEST(ModelCheckpointing, GradientsEqualWithDropout) {
  auto a = grads(false, 0.2), b = grads(true, 0.2);
  ASSERT_EQ(a.size(), b.size());
  double total = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-5, 1e-6)) << "parameter " << i;
    total += a[i].abs().sum().item<double>();
  }
  EXPECT_GT(total, 0);
  // Dropout did act: the gradients differ from those without dropout.
  auto c = grads(false, 0.0);
  EXPECT_FALSE(torch::allclose(a[0], c[0], 1e-5, 1e-6));
}
