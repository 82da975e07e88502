// The model on packed rows: the block-diagonal mask, packed vs unpacked losses and accuracies
// (through the model and through `evaluate --task pretrain`), pretraining and exact resume on
// packed shards.
#include <gtest/gtest.h>

#include <cmath>

#include "bert/config/fields.h"
#include "bert/data/pack.h"
#include "bert/io/safetensors.h"
#include "bert/model/heads.h"
#include "pack_test_helpers.h"
#include "test_util.h"

using namespace bert;
using namespace bert::test;
using json = nlohmann::ordered_json;

namespace {

ModelConfig tiny_model() {
  ModelConfig c;
  c.vocab_size = 100;
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.intermediate_size = 64;
  c.max_position_embeddings = 64;
  return c;
}

model::PreTrainingLoss run(model::BertForPreTraining& m, const train::PretrainBatch& b) {
  auto out = m->forward(b.input_ids, b.token_type_ids, b.attention_mask, b.masked_lm_positions, b.packed_inputs());
  return m->loss(out, b.masked_lm_ids, b.next_sentence_labels);
}

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

std::string pack_config(const TempDir& t, const fs::path& data) {
  json cfg = {
      {"model",
       {{"vocab_size", 100},
        {"hidden_size", 32},
        {"num_hidden_layers", 2},
        {"num_attention_heads", 2},
        {"intermediate_size", 64},
        {"max_position_embeddings", 64}}},
      {"train", {{"global_batch_size", 8}, {"micro_batch_size", 4}, {"seed", 3}, {"threads", 1}}},
      {"optimizer", {{"name", "lamb"}, {"learning_rate", 0.01}, {"warmup_proportion", 0.1}}},
      {"data", {{"data_dir", data.string()}, {"max_seq_length", 32}, {"num_workers", 1}}},
      {"logging", {{"log_every", 1}}},
  };
  fs::path p = t / "pack_cfg.json";
  write_text(p, cfg.dump(2));
  return p.string();
}

std::vector<json> metrics(const fs::path& file) {
  std::vector<json> out;
  std::istringstream in(read_text(file));
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

}  // namespace

TEST(ModelPack, BlockDiagonalMask) {
  auto idx = torch::tensor({1, 1, 2, 2, 2, 0}, torch::kLong).view({1, 6});
  auto m = model::block_diagonal_attention_mask(idx, torch::kFloat);
  ASSERT_EQ(m.sizes(), (std::vector<int64_t>{1, 1, 6, 6}));
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) {
      int64_t a = idx[0][i].item<int64_t>(), b = idx[0][j].item<int64_t>();
      float want = (a == b && b != 0) ? 0.f : -10000.f;
      EXPECT_EQ(m[0][0][i][j].item<float>(), want) << i << "," << j;
    }
}

TEST(ModelPack, PackedLossesAndAccuraciesEqualUnpacked) {
  auto in = random_instances(40, 32, 5, 21);
  auto packed = data::pack_rows(in, data::PackOptions{}, 0, nullptr);
  ASSERT_LT(packed.rows, 30);
  torch::manual_seed(5);
  model::BertForPreTraining m(tiny_model());
  m->eval();
  torch::NoGradGuard ng;
  auto a = run(m, to_batch(in));
  auto b = run(m, to_batch(packed));
  EXPECT_EQ(a.mlm_count.item<int64_t>(), b.mlm_count.item<int64_t>());
  EXPECT_EQ(a.nsp_count.item<int64_t>(), 40);
  EXPECT_EQ(b.nsp_count.item<int64_t>(), 40);
  EXPECT_EQ(a.mlm_correct.item<int64_t>(), b.mlm_correct.item<int64_t>());
  EXPECT_EQ(a.nsp_correct.item<int64_t>(), b.nsp_correct.item<int64_t>());
  EXPECT_NEAR(a.mlm_loss.item<double>(), b.mlm_loss.item<double>(), 1e-5);
  EXPECT_NEAR(a.nsp_loss.item<double>(), b.nsp_loss.item<double>(), 1e-5);
  // A model that has learnt something gives non-trivial accuracies: nudge the output bias toward
  // the labels so that the correct counts are not all zero, then compare again.
  {
    auto bias = m->cls->predictions->bias;
    auto ids = to_batch(in).masked_lm_ids;
    for (int64_t i = 0; i < ids.size(0); i += 3) bias[ids[i][0].item<int64_t>()] += 5.0;
  }
  a = run(m, to_batch(in));
  b = run(m, to_batch(packed));
  EXPECT_GT(a.mlm_correct.item<int64_t>(), 0);
  EXPECT_EQ(a.mlm_correct.item<int64_t>(), b.mlm_correct.item<int64_t>());
  EXPECT_NEAR(a.mlm_loss.item<double>(), b.mlm_loss.item<double>(), 1e-5);
  EXPECT_NEAR(a.nsp_loss.item<double>(), b.nsp_loss.item<double>(), 1e-5);
}

TEST(ModelPack, PackedTrainingStepBackpropagates) {
  auto packed = data::pack_rows(random_instances(12, 32, 5, 4), data::PackOptions{}, 0, nullptr);
  torch::manual_seed(1);
  model::BertForPreTraining m(tiny_model());
  m->train();
  auto l = run(m, to_batch(packed));
  l.total_loss.backward();
  EXPECT_TRUE(std::isfinite(l.total_loss.item<double>()));
  EXPECT_GT(m->cls->seq_relationship->weight.grad().abs().sum().item<double>(), 0);
  EXPECT_GT(m->bert->embeddings->position_embeddings->weight.grad().abs().sum().item<double>(), 0);
}

TEST(ModelPack, EvaluatePretrainPackedEqualsUnpacked) {
  TempDir t;
  auto in = random_instances(36, 32, 5, 8);
  write_rows(t / "plain" / "a.hdf5", in);
  auto s = run_cli("shard --input " + q(t / "plain" / "a.hdf5") + " --output-dir " + q(t / "packed") +
                   " --num-shards 1 --pack");
  ASSERT_EQ(s.code, 0) << s.err;
  auto cfg = pack_config(t, t / "plain");
  auto tr = run_cli("pretrain --config " + cfg + " --max-steps 3 --output-dir " + q(t / "run"));
  ASSERT_EQ(tr.code, 0) << tr.err;
  auto ev = [&](const fs::path& data, const fs::path& out) {
    auto r = run_cli("evaluate --task pretrain --checkpoint " + q(t / "run") + " --data-dir " + q(data) +
                     " --batch-size 1 --output-dir " + q(out));
    EXPECT_EQ(r.code, 0) << r.err;
    return json::parse(read_text(out / "eval_results.json"));
  };
  auto a = ev(t / "plain", t / "ev_plain");
  auto b = ev(t / "packed", t / "ev_packed");
  EXPECT_EQ(a["eval_sequences"].get<int64_t>(), 36);
  EXPECT_EQ(b["eval_sequences"].get<int64_t>(), 36);
  EXPECT_EQ(a["eval_masked_tokens"].get<int64_t>(), b["eval_masked_tokens"].get<int64_t>());
  for (const char* k : {"eval_mlm_accuracy", "eval_nsp_accuracy", "eval_mlm_loss", "eval_nsp_loss"})
    EXPECT_NEAR(a[k].get<double>(), b[k].get<double>(), 1e-5) << k;
}

TEST(ModelPack, PretrainOnPackedShardsResumesExactly) {
  TempDir t;
  write_rows(t / "plain" / "a.hdf5", random_instances(120, 32, 5, 9));
  auto s = run_cli("shard --input " + q(t / "plain" / "a.hdf5") + " --output-dir " + q(t / "packed") +
                   " --num-shards 1 --pack");
  ASSERT_EQ(s.code, 0) << s.err;
  auto cfg = pack_config(t, t / "packed");
  auto full = run_cli("pretrain --config " + cfg + " --max-steps 8 --output-dir " + q(t / "full"));
  ASSERT_EQ(full.code, 0) << full.err;
  EXPECT_NE(full.err.find("packed (up to 3 sequences per row)"), std::string::npos) << full.err;
  auto first = run_cli("pretrain --config " + cfg + " --set optimizer.total_steps=8 --max-steps 4 --output-dir " +
                       q(t / "split"));
  ASSERT_EQ(first.code, 0) << first.err;
  auto second = run_cli("pretrain --config " + cfg +
                        " --set optimizer.total_steps=8 --max-steps 8 --resume latest --output-dir " + q(t / "split"));
  ASSERT_EQ(second.code, 0) << second.err;
  auto a = metrics(t / "full" / "metrics.jsonl");
  auto b = metrics(t / "split" / "metrics.jsonl");
  ASSERT_EQ(a.size(), 8u);
  ASSERT_EQ(b.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_TRUE(std::isfinite(a[i]["loss"].get<double>()));
    EXPECT_EQ(a[i]["loss"].get<double>(), b[i]["loss"].get<double>()) << "step " << i + 1;
    EXPECT_EQ(a[i]["samples"].get<int64_t>(), b[i]["samples"].get<int64_t>());
  }
  // Packed rows count their real sequences: more than 8 per 8-row step.
  EXPECT_GT(a.back()["samples"].get<int64_t>(), 8 * 8);
  auto wa = io::load_safetensors(t / "full" / "checkpoints" / "step_8" / "model.safetensors");
  auto wb = io::load_safetensors(t / "split" / "checkpoints" / "step_8" / "model.safetensors");
  ASSERT_EQ(wa.tensors.size(), wb.tensors.size());
  for (size_t i = 0; i < wa.tensors.size(); ++i) EXPECT_TRUE(torch::equal(wa.tensors[i].second, wb.tensors[i].second));
}
