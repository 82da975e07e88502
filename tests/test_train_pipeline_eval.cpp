// Held-out pretraining evaluation on a hand-built HDF5 file: the numbers evaluate_pretraining
// reports (token-weighted masked-LM accuracy, NSP accuracy, mean losses) equal the ones computed
// here sequence by sequence from the model's logits, whatever the batching.
#include <gtest/gtest.h>

#include "bert/data/hdf5_io.h"
#include "bert/data/loader.h"
#include "bert/device/device.h"
#include "bert/model/heads.h"
#include "bert/train/pretrain_eval.h"
#include "test_util.h"

using namespace bert;
using bert::test::TempDir;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kRows = 6, kL = 12, kP = 4, kVocab = 40;
const int64_t kMasked[kRows] = {1, 4, 2, 3, 1, 4};  // uneven: token- and sequence-weighted means differ

data::PretrainRows hand_built_rows() {
  data::PretrainRows r;
  r.resize(kRows, kL, kP);
  for (int64_t i = 0; i < kRows; ++i) {
    int64_t len = 8 + i % 4;
    for (int64_t x = 0; x < len; ++x) {
      int32_t tok = static_cast<int32_t>(5 + (i * 11 + x * 7) % (kVocab - 5));
      if (x == 0) tok = 2;
      if (x == 4 || x == len - 1) tok = 3;
      r.input_ids[i * kL + x] = tok;
      r.input_mask[i * kL + x] = 1;
      r.segment_ids[i * kL + x] = x > 4 ? 1 : 0;
    }
    const int32_t pos[kP] = {1, 2, 5, 6};
    for (int64_t k = 0; k < kMasked[i]; ++k) {
      r.masked_lm_positions[i * kP + k] = pos[k];
      r.masked_lm_ids[i * kP + k] = r.input_ids[i * kL + pos[k]];
      if (k % 2 == 0) r.input_ids[i * kL + pos[k]] = 4;  // [MASK]; odd slots keep the token
    }
    r.next_sentence_labels[i] = static_cast<int32_t>(i % 3 == 0);
  }
  return r;
}

torch::Tensor row(const std::vector<int32_t>& v, int64_t i, int64_t n) {
  return torch::tensor(std::vector<int64_t>(v.begin() + i * n, v.begin() + (i + 1) * n)).unsqueeze(0);
}

}  // namespace

TEST(TrainPipelineEval, HandBuiltFileGivesTheNumbersComputedByHand) {
  TempDir t;
  auto rows = hand_built_rows();
  {
    data::Hdf5Writer w(t / "eval.hdf5", kRows, kL, kP, true, false);
    w.write(0, rows);
    w.commit();
  }
  ModelConfig cfg;
  cfg.vocab_size = kVocab;
  cfg.hidden_size = 16;
  cfg.num_hidden_layers = 1;
  cfg.num_attention_heads = 2;
  cfg.intermediate_size = 32;
  cfg.max_position_embeddings = 16;
  torch::manual_seed(1);
  model::BertForPreTraining m(cfg);
  m->eval();
  // Expected, one sequence at a time: correct/total over all masked tokens, mean CE per token.
  double correct = 0, tokens = 0, ce = 0, nsp_correct = 0, nsp_ce = 0, seq_weighted = 0;
  {
    torch::NoGradGuard g;
    for (int64_t i = 0; i < kRows; ++i) {
      auto out = m->forward(row(rows.input_ids, i, kL), row(rows.segment_ids, i, kL), row(rows.input_mask, i, kL),
                            row(rows.masked_lm_positions, i, kP));
      ASSERT_EQ(out.mlm_logits.size(0), kMasked[i]);
      auto logp = torch::log_softmax(out.mlm_logits.to(torch::kDouble), -1);
      double row_correct = 0;
      for (int64_t k = 0; k < kMasked[i]; ++k) {
        int64_t label = rows.masked_lm_ids[i * kP + k];
        row_correct += logp[k].argmax().item<int64_t>() == label;
        ce -= logp[k][label].item<double>();
      }
      correct += row_correct;
      tokens += static_cast<double>(kMasked[i]);
      seq_weighted += row_correct / static_cast<double>(kMasked[i]) / kRows;
      auto nsp = torch::log_softmax(out.nsp_logits[0].to(torch::kDouble), -1);
      int64_t y = rows.next_sentence_labels[i];
      nsp_correct += nsp.argmax().item<int64_t>() == y;
      nsp_ce -= nsp[y].item<double>();
    }
  }
  m->train();  // evaluate_pretraining must switch to eval mode (no dropout) and back

  auto device = make_cpu_device();
  for (int64_t batch : {1, 2, 3, 6}) {
    data::LoaderOptions o;
    o.files = {t / "eval.hdf5"};
    o.micro_batch = o.global_batch = batch;
    o.epochs = 1;
    o.num_workers = 0;
    auto src = data::make_hdf5_source(o);
    auto r = train::evaluate_pretraining(m, *src, batch, 0, *device, "fp32");
    EXPECT_EQ(r.sequences, kRows) << "batch " << batch;
    EXPECT_EQ(r.masked_tokens, 15) << "batch " << batch;
    EXPECT_DOUBLE_EQ(r.mlm_accuracy, correct / tokens) << "batch " << batch;
    EXPECT_NEAR(r.mlm_loss, ce / tokens, 1e-5) << "batch " << batch;
    EXPECT_DOUBLE_EQ(r.nsp_accuracy, nsp_correct / kRows) << "batch " << batch;
    EXPECT_NEAR(r.nsp_loss, nsp_ce / kRows, 1e-5) << "batch " << batch;
    EXPECT_TRUE(m->is_training());
  }
  // the untrained model gets some tokens right and some wrong, so the weighting matters here
  EXPECT_GT(correct, 0);
  EXPECT_LT(correct, tokens);
  EXPECT_NE(correct / tokens, seq_weighted) << "pick other rows: token- and sequence-weighted accuracy coincide";

  // --num-eval-examples: a limit inside a batch counts only the sequences it takes
  data::LoaderOptions o;
  o.files = {t / "eval.hdf5"};
  o.micro_batch = o.global_batch = 4;
  o.epochs = 1;
  o.num_workers = 0;
  auto src = data::make_hdf5_source(o);
  auto r = train::evaluate_pretraining(m, *src, 4, 2, *device, "fp32");
  EXPECT_EQ(r.sequences, 2);
  EXPECT_GE(r.masked_tokens, 2);
  EXPECT_LE(r.masked_tokens, 8);
}
