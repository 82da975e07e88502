// Independent fine-tuning workers (seed 000's mpi_workers_sync_gradients=False) under
// `bert-train launch --nproc-per-node 2`: each rank trains its own replica with seed + rank into
// rank_<r>/, rank 0 gathers the best dev metrics, reports each rank's and points best/ at the
// winner. Without dist.independent_workers a multi-process finetune is refused clearly.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "bert/io/weights.h"
#include "bert/model/heads.h"
#include "test_util.h"

using namespace bert;
using namespace bert::test;
using json = nlohmann::json;

namespace {

// vocab.txt, a random 1-layer checkpoint, and an SST-2-style task: label 1 when "good" occurs.
struct GlueSetup {
  TempDir dir;
  fs::path vocab, ckpt;
  GlueSetup() {
    const std::vector<std::string> words = {"the", "cat", "dog", "sat", "on", "a", "mat", "ran", "good", "red"};
    vocab = dir / "vocab.txt";
    std::string v = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
    for (const auto& w : words) v += w + "\n";
    write_text(vocab, v);
    ModelConfig mc;
    mc.vocab_size = static_cast<int64_t>(5 + words.size());
    mc.hidden_size = 16;
    mc.num_hidden_layers = 1;
    mc.num_attention_heads = 2;
    mc.intermediate_size = 32;
    mc.max_position_embeddings = 64;
    torch::manual_seed(1);
    model::BertForPreTraining m(mc);
    ckpt = dir / "ckpt";
    io::save_model_dir(*m, mc, ckpt);
    for (auto [name, n, seed] : {std::tuple{"train.tsv", 48, 1u}, std::tuple{"dev.tsv", 24, 2u}}) {
      std::mt19937 rng(seed);
      std::ostringstream o;
      o << "sentence\tlabel\n";
      for (int i = 0; i < n; ++i) {
        std::vector<std::string> ws;
        for (int k = 0; k < 4; ++k) ws.push_back(words[rng() % 8]);
        if (i % 2 == 0) ws[rng() % 4] = "good";
        o << ws[0] << " " << ws[1] << " " << ws[2] << " " << ws[3] << "\t" << (i % 2 == 0 ? 1 : 0) << "\n";
      }
      write_text(dir / "glue" / name, o.str());
    }
  }
  std::string args(const fs::path& out) const {
    return "finetune --task sst2 --vocab " + vocab.string() + " --init-checkpoint " + ckpt.string() + " --data-dir " +
           (dir / "glue").string() + " --output-dir " + out.string() +
           " --threads 1 --max-seq-length 32 --epochs 2 --set train.global_batch_size=8 --set train.micro_batch_size=8 " +
           "--set optimizer.learning_rate=5e-3 --set optimizer.warmup_proportion=0 --seed 11";
  }
};

}  // namespace

TEST(DistFinetune, IndependentWorkersKeepTheBest) {
  GlueSetup s;
  fs::path out = s.dir / "out";
  auto r = run_cli("launch --nproc-per-node 2 --master-port 0 --omp-threads 1 -- " + s.args(out) +
                       " --set dist.independent_workers=true",
                   "OMP_WAIT_POLICY=PASSIVE");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::vector<double> best(2);
  for (int k = 0; k < 2; ++k) {
    fs::path d = out / ("rank_" + std::to_string(k));
    ASSERT_TRUE(fs::exists(d / "finetune_summary.json")) << r.err;
    EXPECT_TRUE(fs::exists(d / "best" / "model.safetensors"));
    auto cfg = json::parse(read_text(d / "config.json"));
    EXPECT_EQ(cfg["train"]["seed"].get<int64_t>(), 11 + k);  // seed + rank
    auto sum = json::parse(read_text(d / "finetune_summary.json"));
    EXPECT_EQ(sum["evaluations"].size(), 2u);
    best[k] = sum["best"]["value"].get<double>();
  }
  auto iw = json::parse(read_text(out / "independent_workers.json"));
  EXPECT_EQ(iw["metric"], "acc");
  ASSERT_EQ(iw["workers"].size(), 2u);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(iw["workers"][k]["seed"].get<int64_t>(), 11 + k);
    EXPECT_DOUBLE_EQ(iw["workers"][k]["best_value"].get<double>(), best[k]);
  }
  int winner = best[1] > best[0] ? 1 : 0;
  EXPECT_EQ(iw["best_rank"].get<int>(), winner);
  ASSERT_TRUE(fs::is_symlink(out / "best"));
  EXPECT_EQ(fs::canonical(out / "best"), fs::canonical(out / ("rank_" + std::to_string(winner)) / "best"));
  EXPECT_TRUE(fs::exists(out / "best" / "model.safetensors"));
  EXPECT_NE((r.out + r.err).find("best of 2 independent workers: rank " + std::to_string(winner)), std::string::npos) << r.err;
  for (int k = 0; k < 2; ++k)
    EXPECT_NE((r.out + r.err).find("worker rank " + std::to_string(k) + " (seed " + std::to_string(11 + k) + "): best acc"),
              std::string::npos)
        << r.err;
}

TEST(DistFinetune, SeveralProcessesNeedIndependentWorkers) {
  GlueSetup s;
  auto r = run_cli("launch --nproc-per-node 2 --master-port 0 --omp-threads 1 -- " + s.args(s.dir / "out"),
                   "OMP_WAIT_POLICY=PASSIVE");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("dist.independent_workers=true"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(s.dir / "out" / "config.json"));
}
