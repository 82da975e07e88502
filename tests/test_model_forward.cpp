// Forward shapes of every head, the padding mask, the masked-LM label convention, losses,
// over-fitting one batch, and a bf16 autocast forward on the CPU.
#include <torch/torch.h>

#include "bert/common/error.h"
#include "bert/device/compat.h"
#include "bert/model/heads.h"
#include "test_util.h"

namespace {

using namespace bert;

ModelConfig tiny(double dropout = 0.0) {
  ModelConfig c;
  c.vocab_size = 64;
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.intermediate_size = 64;
  c.max_position_embeddings = 32;
  c.hidden_dropout_prob = dropout;
  c.attention_probs_dropout_prob = dropout;
  return c;
}

struct Batch {
  torch::Tensor ids, types, mask, positions, labels, nsp;
};

// 4 sequences of 16 tokens; sequence 3 has 6 padding tokens. Masked slots: 3, 2, 3, 1 valid.
Batch make_batch() {
  torch::manual_seed(123);
  Batch b;
  b.ids = torch::randint(5, 64, {4, 16}, torch::kLong);
  b.ids.select(1, 0).fill_(2);  // [CLS]
  b.types = torch::zeros({4, 16}, torch::kLong);
  b.types.narrow(1, 8, 8).fill_(1);
  b.mask = torch::ones({4, 16}, torch::kLong);
  b.mask[3].narrow(0, 10, 6).fill_(0);
  b.ids[3].narrow(0, 10, 6).fill_(0);
  b.types[3].narrow(0, 10, 6).fill_(0);
  b.positions = torch::tensor({{1, 4, 9}, {2, 7, 0}, {3, 5, 15}, {6, 0, 0}}, torch::kLong);
  b.labels = torch::tensor({{10, 11, 12}, {13, 14, 0}, {15, 16, 17}, {18, 0, 0}}, torch::kLong);
  b.nsp = torch::tensor({0, 1, 0, 1}, torch::kLong);
  return b;
}

TEST(ModelForward, PreTrainingShapesAndGatherAtValidSlotsOnly) {
  torch::manual_seed(0);
  model::BertForPreTraining m(tiny());
  auto b = make_batch();
  auto out = m->forward(b.ids, b.types, b.mask, b.positions);
  EXPECT_EQ(out.mlm_logits.sizes(), (std::vector<int64_t>{9, 64}));
  EXPECT_EQ(out.nsp_logits.sizes(), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(out.mlm_valid.sum().item<int64_t>(), 9);
  auto loss = m->loss(out, b.labels, b.nsp);
  EXPECT_EQ(loss.mlm_count.item<int64_t>(), 9);
  EXPECT_EQ(loss.nsp_count.item<int64_t>(), 4);
  EXPECT_EQ(loss.total_loss.scalar_type(), torch::kFloat);
  EXPECT_NEAR(loss.total_loss.item<float>(), loss.mlm_loss.item<float>() + loss.nsp_loss.item<float>(), 1e-5);
  // Near-uniform predictions at init: MLM loss ~ ln(64), NSP ~ ln(2).
  EXPECT_NEAR(loss.mlm_loss.item<float>(), std::log(64.0), 0.5);
  EXPECT_NEAR(loss.nsp_loss.item<float>(), std::log(2.0), 0.3);

  // Row k of mlm_logits is the full-sequence head at the k-th valid slot.
  m->eval();
  out = m->forward(b.ids, b.types, b.mask, b.positions);
  auto seq = m->bert(b.ids, b.types, b.mask).sequence_output;
  auto full = m->cls->predictions(seq, m->bert->embeddings->word_embeddings->weight);  // [4, 16, 64]
  EXPECT_TRUE(torch::allclose(out.mlm_logits[3], full[1][2], 1e-5, 1e-5));   // batch 1, position 2
  EXPECT_TRUE(torch::allclose(out.mlm_logits[8], full[3][6], 1e-5, 1e-5));   // batch 3, position 6
}

TEST(ModelForward, MaskedSlotConventionFirstZeroEndsTheList) {
  auto pos = torch::tensor({{3, 0, 5}, {0, 2, 4}, {1, 2, 3}}, torch::kLong);
  auto v = model::valid_masked_slots(pos);
  auto want = torch::tensor({{true, false, false}, {false, false, false}, {true, true, true}});
  EXPECT_TRUE(torch::equal(v, want));
}

TEST(ModelForward, NegativeLabelsAreIgnoredAndEmptyIsZeroLoss) {
  model::BertForPreTraining m(tiny());
  auto b = make_batch();
  auto out = m->forward(b.ids, b.types, b.mask, b.positions);
  auto labels = b.labels.clone();
  labels[0][1] = -1;
  labels[2][0] = -100;
  auto nsp = torch::tensor({0, -1, 0, 1}, torch::kLong);
  auto l = m->loss(out, labels, nsp);
  EXPECT_EQ(l.mlm_count.item<int64_t>(), 7);
  EXPECT_EQ(l.nsp_count.item<int64_t>(), 3);
  EXPECT_TRUE(std::isfinite(l.total_loss.item<float>()));

  auto none = torch::zeros({4, 3}, torch::kLong);
  auto out0 = m->forward(b.ids, b.types, b.mask, none);
  EXPECT_EQ(out0.mlm_logits.size(0), 0);
  auto l0 = m->loss(out0, none, b.nsp);
  EXPECT_EQ(l0.mlm_loss.item<float>(), 0.0f);
  EXPECT_EQ(l0.mlm_count.item<int64_t>(), 0);
}

TEST(ModelForward, PaddingDoesNotChangeUnpaddedOutputs) {
  torch::manual_seed(1);
  model::BertModel m(tiny());
  m->eval();
  auto b = make_batch();
  auto padded = m(b.ids, b.types, b.mask).sequence_output[3].narrow(0, 0, 10);
  // The same sequence with different garbage in the padding...
  auto ids2 = b.ids.clone();
  ids2[3].narrow(0, 10, 6).fill_(33);
  auto garbage = m(ids2, b.types, b.mask).sequence_output[3].narrow(0, 0, 10);
  EXPECT_TRUE(torch::allclose(padded, garbage, 1e-5, 1e-5));
  // ...and without any padding at all.
  auto alone = m(b.ids[3].narrow(0, 0, 10).unsqueeze(0), b.types[3].narrow(0, 0, 10).unsqueeze(0),
                 torch::ones({1, 10}, torch::kLong))
                   .sequence_output[0];
  EXPECT_TRUE(torch::allclose(padded, alone, 1e-5, 1e-5));
  // Without the mask the padding does leak in (so the comparison above means something).
  auto unmasked = m->forward(b.ids, b.types, torch::Tensor()).sequence_output[3].narrow(0, 0, 10);
  EXPECT_FALSE(torch::allclose(padded, unmasked, 1e-3, 1e-3));
}

TEST(ModelForward, SelfAttentionMatchesPerHeadMath) {
  torch::manual_seed(9);
  ModelConfig c = tiny();
  c.hidden_size = 8;
  c.num_attention_heads = 2;
  model::BertSelfAttention att(c);
  att->eval();
  auto x = torch::randn({2, 5, 8});
  auto keep = torch::tensor({{1, 1, 1, 1, 1}, {1, 1, 1, 0, 0}}, torch::kLong);
  auto got = att->forward(x, model::extended_attention_mask(keep, torch::kFloat));
  for (int64_t b = 0; b < 2; ++b) {
    const int64_t n = keep[b].sum().item<int64_t>();
    for (int64_t h = 0; h < 2; ++h) {
      auto cols = torch::arange(h * 4, h * 4 + 4);
      auto proj = [&](torch::nn::Linear& l) {
        return torch::matmul(x[b], l->weight.index_select(0, cols).t()) + l->bias.index_select(0, cols);
      };
      auto q = proj(att->query), k = proj(att->key).narrow(0, 0, n), v = proj(att->value).narrow(0, 0, n);
      auto p = torch::softmax(torch::matmul(q, k.t()) / 2.0, -1);  // sqrt(head_dim 4) = 2; padded keys dropped
      auto want = torch::matmul(p, v);                                // [5, 4]
      EXPECT_TRUE(torch::allclose(got[b].narrow(1, h * 4, 4), want, 1e-5, 1e-6)) << "batch " << b << " head " << h;
    }
  }
}

TEST(ModelForward, QuestionAnsweringShapesAndLoss) {
  model::BertForQuestionAnswering m(tiny());
  auto b = make_batch();
  auto out = m->forward(b.ids, b.types, b.mask);
  EXPECT_EQ(out.start_logits.sizes(), (std::vector<int64_t>{4, 16}));
  EXPECT_EQ(out.end_logits.sizes(), (std::vector<int64_t>{4, 16}));
  auto loss = m->loss(out, torch::tensor({1, 2, 3, 40}), torch::tensor({2, 3, 4, 40}));
  EXPECT_TRUE(std::isfinite(loss.item<float>()));
  EXPECT_NEAR(loss.item<float>(), std::log(16.0), 0.5);
}

TEST(ModelForward, SequenceClassificationAndRegression) {
  auto b = make_batch();
  model::BertForSequenceClassification cls(tiny(), 3);
  auto logits = cls->forward(b.ids, b.types, b.mask);
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{4, 3}));
  auto ce = cls->loss(logits, torch::tensor({0, 1, 2, 1}));
  EXPECT_NEAR(ce.item<float>(), std::log(3.0), 0.3);

  model::BertForSequenceClassification reg(tiny(), 1);
  auto pred = reg->forward(b.ids, b.types, b.mask);
  EXPECT_EQ(pred.sizes(), (std::vector<int64_t>{4, 1}));
  auto target = torch::tensor({1.0f, 2.0f, 3.0f, 4.0f});
  auto mse = reg->loss(pred, target);
  EXPECT_NEAR(mse.item<float>(), (pred.view({-1}) - target).pow(2).mean().item<float>(), 1e-5);
  EXPECT_THROW(model::BertForSequenceClassification(tiny(), 0), UserError);
}

TEST(ModelForward, ActivationsAndConfigChecks) {
  auto x = torch::tensor({-1.0f, 0.5f, 2.0f});
  EXPECT_TRUE(torch::allclose(model::activation("gelu", x), 0.5 * x * (1 + torch::erf(x / std::sqrt(2.0)))));
  auto tanh_form = 0.5 * x * (1 + torch::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x.pow(3))));
  EXPECT_TRUE(torch::allclose(model::activation("gelu_new", x), tanh_form, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(model::activation("gelu_tanh", x), tanh_form, 1e-5, 1e-6));
  EXPECT_TRUE(torch::equal(model::activation("relu", x), torch::relu(x)));
  EXPECT_TRUE(torch::equal(model::activation("tanh", x), torch::tanh(x)));
  EXPECT_THROW(model::activation("swishy", x), UserError);
  auto bad = tiny();
  bad.num_attention_heads = 5;
  EXPECT_THROW(model::BertModel{bad}, UserError);
  for (const char* act : {"gelu_new", "relu", "tanh"}) {
    auto c = tiny();
    c.hidden_act = act;
    model::BertForPreTraining m(c);
    auto b = make_batch();
    auto l = m->loss(m->forward(b.ids, b.types, b.mask, b.positions), b.labels, b.nsp);
    EXPECT_TRUE(std::isfinite(l.total_loss.item<float>())) << act;
  }
}

TEST(ModelForward, InitFollowsGoogle) {
  torch::manual_seed(5);
  ModelConfig c = tiny();
  c.initializer_range = 0.05;
  model::BertForPreTraining m(c);
  auto& q = m->bert->encoder->layer->at<model::BertLayerImpl>(1).attention->self->query;
  EXPECT_NEAR(q->weight.std().item<float>(), 0.05, 0.01);
  EXPECT_EQ(q->bias.abs().sum().item<float>(), 0.0f);
  EXPECT_TRUE(torch::equal(m->bert->embeddings->LayerNorm->weight, torch::ones({32})));
  EXPECT_EQ(m->bert->embeddings->word_embeddings->weight[0].abs().sum().item<float>(), 0.0f);  // [PAD] row
  EXPECT_EQ(m->cls->predictions->bias.abs().sum().item<float>(), 0.0f);
}

// Tiny matrices: one intra-op thread is fastest and avoids OpenMP spin-waits on a busy machine.
struct OneThread {
  int prev = torch::get_num_threads();
  OneThread() { torch::set_num_threads(1); }
  ~OneThread() { torch::set_num_threads(prev); }
};

TEST(ModelForward, OverfitsOneBatch) {
  OneThread one;
  torch::manual_seed(7);
  model::BertForPreTraining m(tiny());
  auto b = make_batch();
  torch::optim::Adam opt(m->parameters(), torch::optim::AdamOptions(3e-3));
  float first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    auto l = m->loss(m->forward(b.ids, b.types, b.mask, b.positions), b.labels, b.nsp);
    l.total_loss.backward();
    opt.step();
    if (step == 0) first = l.total_loss.item<float>();
    last = l.total_loss.item<float>();
  }
  EXPECT_LT(last, 0.25f * first) << "first " << first << " last " << last;
  m->eval();
  auto l = m->loss(m->forward(b.ids, b.types, b.mask, b.positions), b.labels, b.nsp);
  EXPECT_EQ(l.mlm_correct.item<int64_t>(), 9);
  EXPECT_EQ(l.nsp_correct.item<int64_t>(), 4);
}

struct CpuAutocast {
  CpuAutocast() { compat::set_autocast(c10::DeviceType::CPU, true, torch::kBFloat16); }
  ~CpuAutocast() { compat::set_autocast(c10::DeviceType::CPU, false, torch::kBFloat16); }
};

TEST(ModelForward, Bf16AutocastForwardIsFiniteAndClose) {
  torch::manual_seed(3);
  model::BertForPreTraining m(tiny(0.1));
  auto b = make_batch();
  m->eval();
  auto ref = m->loss(m->forward(b.ids, b.types, b.mask, b.positions), b.labels, b.nsp);
  m->train();
  model::PreTrainingLoss l;
  {
    CpuAutocast ac;
    auto out = m->forward(b.ids, b.types, b.mask, b.positions);
    EXPECT_EQ(out.mlm_logits.scalar_type(), torch::kBFloat16);  // autocast really ran the decoder in bf16
    l = m->loss(out, b.labels, b.nsp);
  }
  EXPECT_EQ(l.total_loss.scalar_type(), torch::kFloat);
  EXPECT_TRUE(std::isfinite(l.total_loss.item<float>()));
  l.total_loss.backward();
  for (auto& p : m->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_TRUE(torch::isfinite(p.value().grad()).all().item<bool>()) << p.key();
  }
  // Eval-mode bf16 loss is close to the fp32 one.
  m->eval();
  CpuAutocast ac;
  auto lb = m->loss(m->forward(b.ids, b.types, b.mask, b.positions), b.labels, b.nsp);
  EXPECT_NEAR(lb.total_loss.item<float>(), ref.total_loss.item<float>(), 0.1);
}

}  // namespace
