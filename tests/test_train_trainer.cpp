// End-to-end pretraining runs of a tiny model through the CLI: bf16, exact resume, SIGTERM,
// checkpoint retention and `latest`, --init-checkpoint, bench, and the usage errors (exit 2).
#include <gtest/gtest.h>

#include <cmath>

#include "bert/config/fields.h"
#include "bert/io/safetensors.h"
#include "test_util.h"

using namespace bert::test;
using json = nlohmann::ordered_json;

namespace {

// A 2-layer, hidden-32 BERT on seq-32 synthetic batches: a step takes milliseconds.
std::string tiny_config(const TempDir& dir, int hidden = 32) {
  json cfg = {
      {"model",
       {{"vocab_size", 1200},
        {"hidden_size", hidden},
        {"num_hidden_layers", 2},
        {"num_attention_heads", 2},
        {"intermediate_size", 64},
        {"max_position_embeddings", 64}}},
      {"train", {{"global_batch_size", 8}, {"micro_batch_size", 4}, {"seed", 3}, {"threads", 1}}},
      {"optimizer", {{"name", "lamb"}, {"learning_rate", 0.01}, {"warmup_proportion", 0.1}}},
      {"data", {{"synthetic", true}, {"max_seq_length", 32}, {"max_predictions_per_seq", 5}}},
      {"logging", {{"log_every", 1}}},
  };
  fs::path p = dir / ("tiny_" + std::to_string(hidden) + ".json");
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

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

}  // namespace

TEST(TrainTrainer, Bf16CpuRunFinishesWithFiniteLoss) {
  TempDir t;
  auto r = run_cli("pretrain --config " + tiny_config(t) + " --precision bf16 --max-steps 3 --output-dir " +
                   q(t / "run"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto m = metrics(t / "run" / "metrics.jsonl");
  ASSERT_EQ(m.size(), 3u);
  for (auto& j : m) {
    EXPECT_TRUE(std::isfinite(j["loss"].get<double>()));
    EXPECT_GT(j["loss"].get<double>(), 0);
    for (const char* k : {"step", "samples", "mlm_loss", "nsp_loss", "mlm_acc", "nsp_acc", "lr", "grad_norm",
                          "loss_scale", "seq_per_s", "tokens_per_s", "step_time_ms", "data_wait_ms"})
      EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_EQ(m.back()["samples"].get<int64_t>(), 24);
  EXPECT_NE(r.err.find("2 accumulation steps"), std::string::npos);
  EXPECT_TRUE(fs::exists(t / "run" / "config.json"));
  EXPECT_TRUE(fs::exists(t / "run" / "train.log"));
  EXPECT_TRUE(fs::exists(t / "run" / "checkpoints" / "step_3" / "model.safetensors"));
}

TEST(TrainTrainer, ResumeContinuesExactly) {
  TempDir t;
  std::string cfg = tiny_config(t);
  auto full = run_cli("pretrain --config " + cfg + " --max-steps 40 --output-dir " + q(t / "full"));
  ASSERT_EQ(full.code, 0) << full.err;
  // Same schedule length (40), stopped at 20, then continued from `latest` to 40.
  auto first = run_cli("pretrain --config " + cfg + " --set optimizer.total_steps=40 --max-steps 20 --output-dir " +
                       q(t / "split"));
  ASSERT_EQ(first.code, 0) << first.err;
  auto second = run_cli("pretrain --config " + cfg +
                        " --set optimizer.total_steps=40 --max-steps 40 --resume latest --output-dir " + q(t / "split"));
  ASSERT_EQ(second.code, 0) << second.err;
  auto a = metrics(t / "full" / "metrics.jsonl");
  auto b = metrics(t / "split" / "metrics.jsonl");
  ASSERT_EQ(a.size(), 40u);
  ASSERT_EQ(b.size(), 40u);
  for (size_t i = 0; i < 40; ++i) {
    ASSERT_EQ(b[i]["step"].get<int64_t>(), static_cast<int64_t>(i + 1));
    EXPECT_EQ(a[i]["loss"].get<double>(), b[i]["loss"].get<double>()) << "step " << i + 1;
    EXPECT_EQ(a[i]["lr"].get<double>(), b[i]["lr"].get<double>()) << "step " << i + 1;
    EXPECT_EQ(a[i]["grad_norm"].get<double>(), b[i]["grad_norm"].get<double>()) << "step " << i + 1;
  }
  // the loss moved (the run trained), and the two finals hold identical weights
  EXPECT_NE(a.front()["loss"].get<double>(), a.back()["loss"].get<double>());
  auto wa = bert::io::load_safetensors(t / "full" / "checkpoints" / "step_40" / "model.safetensors");
  auto wb = bert::io::load_safetensors(t / "split" / "checkpoints" / "step_40" / "model.safetensors");
  ASSERT_EQ(wa.tensors.size(), wb.tensors.size());
  for (size_t i = 0; i < wa.tensors.size(); ++i) EXPECT_TRUE(torch::equal(wa.tensors[i].second, wb.tensors[i].second));
}

TEST(TrainTrainer, KeepLastAndLatest) {
  TempDir t;
  auto r = run_cli("pretrain --config " + tiny_config(t) +
                   " --max-steps 10 --set checkpoint.every_steps=2 --set checkpoint.keep_last=2 --output-dir " +
                   q(t / "run"));
  ASSERT_EQ(r.code, 0) << r.err;
  fs::path c = t / "run" / "checkpoints";
  EXPECT_FALSE(fs::exists(c / "step_2"));
  EXPECT_FALSE(fs::exists(c / "step_4"));
  EXPECT_TRUE(fs::exists(c / "step_6"));
  EXPECT_TRUE(fs::exists(c / "step_8"));
  EXPECT_TRUE(fs::exists(c / "step_10"));
  ASSERT_TRUE(fs::is_symlink(c / "latest"));
  EXPECT_EQ(fs::read_symlink(c / "latest").string(), "step_10");
  auto st = json::parse(read_text(c / "step_10" / "trainer_state.json"));
  EXPECT_EQ(st["step"].get<int64_t>(), 10);
  EXPECT_EQ(st["samples"].get<int64_t>(), 80);
  EXPECT_TRUE(st["final"].get<bool>());
  EXPECT_TRUE(st["rng"].contains("torch_cpu"));
  EXPECT_EQ(st["data_cursor"]["batches"].get<int64_t>(), 20);  // 10 steps x 2 micro-batches
  for (const char* f : {"model.safetensors", "config.json", "optimizer.safetensors", "optimizer.json",
                        "run_config.json"})
    EXPECT_TRUE(fs::exists(c / "step_10" / f)) << f;
  auto hf = json::parse(read_text(c / "step_10" / "config.json"));
  EXPECT_EQ(hf["hidden_size"].get<int64_t>(), 32);
  // no stray temporary directories
  for (auto& e : fs::directory_iterator(c)) EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos);
}

TEST(TrainTrainer, SigtermSavesALoadableCheckpoint) {
  TempDir t;
  fs::path run = t / "run";
  // Start a long run, wait until 3 steps are logged, send SIGTERM, and collect the exit status.
  std::string script = std::string(BERT_TRAIN_BIN) + " pretrain --config " + tiny_config(t) +
                       " --set optimizer.schedule=constant --max-steps 1000000 --output-dir " + q(run) + " >" +
                       q(t / "out") + " 2>&1 &\n"
                       "p=$!; n=0\n"
                       "while [ \"$(cat " + q(run / "metrics.jsonl") + " 2>/dev/null | wc -l)\" -lt 3 ] && [ $n -lt 1200 ]; do\n"
                       "  sleep 0.05; n=$((n+1))\n"
                       "done\n"
                       "kill -TERM $p\n"
                       "wait $p\n";
  write_text(t / "sigterm.sh", script);
  int status = std::system(("bash " + q(t / "sigterm.sh")).c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << read_text(t / "out");
  fs::path latest = run / "checkpoints" / "latest";
  ASSERT_TRUE(fs::exists(latest / "trainer_state.json")) << read_text(t / "out");
  auto st = json::parse(read_text(latest / "trainer_state.json"));
  int64_t step = st["step"].get<int64_t>();
  EXPECT_GE(step, 3);
  EXPECT_NE(read_text(t / "out").find("SIGTERM"), std::string::npos);
  auto w = bert::io::load_safetensors(latest / "model.safetensors");
  EXPECT_FALSE(w.tensors.empty());
  auto r = run_cli("pretrain --config " + tiny_config(t) + " --set optimizer.schedule=constant --resume latest" +
                   " --max-steps " + std::to_string(step + 2) + " --output-dir " + q(run));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(run / "checkpoints" / ("step_" + std::to_string(step + 2))));
}

TEST(TrainTrainer, InitCheckpointLoadsWeightsOnly) {
  TempDir t;
  std::string cfg = tiny_config(t);
  ASSERT_EQ(run_cli("pretrain --config " + cfg + " --max-steps 2 --output-dir " + q(t / "a")).code, 0);
  auto r = run_cli("pretrain --config " + cfg + " --max-steps 2 --init-checkpoint " +
                   q(t / "a" / "checkpoints" / "step_2") + " --output-dir " + q(t / "b"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("initialised weights from"), std::string::npos) << r.err;
  auto m = metrics(t / "b" / "metrics.jsonl");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0]["step"].get<int64_t>(), 1);  // a new run: step, optimizer and schedule start over
  // a model of another width: shape mismatch is a user error
  auto bad = run_cli("pretrain --config " + tiny_config(t, 64) + " --max-steps 1 --init-checkpoint " +
                     q(t / "a" / "checkpoints" / "step_2") + " --output-dir " + q(t / "c"));
  EXPECT_EQ(bad.code, 2) << bad.err;
}

TEST(TrainTrainer, UsageErrorsExitTwo) {
  TempDir t;
  std::string cfg = tiny_config(t);
  std::string out = " --output-dir " + q(t / "run");
  struct Case {
    std::string args, needle;
  };
  std::vector<Case> cases = {
      {"pretrain --config " + cfg + " --max-steps 2 --resume latest" + out, "no checkpoint to resume"},
      {"pretrain --config " + cfg + " --max-steps 2 --precision fp16 --device cpu" + out, "fp16"},
      {"pretrain --config " + cfg + " --max-steps 2 --set optimizer.nmae=lamb" + out, "did you mean"},
      {"pretrain --config " + cfg + " --set optimizer.schedule=poly" + out, "needs a length"},
      {"pretrain --config " + cfg + " --max-steps 2 --set data.synthetic=false" + out, "--synthetic-data"},
      {"pretrain --config " + cfg + " --max-steps 2 --resume latest --init-checkpoint x" + out, "exclude each other"},
      {"pretrain --config " + cfg + " --max-steps 2 --set train.micro_batch_size=3" + out, "multiple"},
  };
  for (auto& c : cases) {
    auto r = run_cli(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.args << "\n" << r.err;
  }
}

TEST(TrainBench, ReportsThroughputAndMfu) {
  TempDir t;
  auto r = run_cli("bench --config " + tiny_config(t) + " --warmup-steps 1 --steps 2 --micro-batch-size 4 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = json::parse(r.out);
  EXPECT_GT(j["seq_per_s"].get<double>(), 0);
  EXPECT_GT(j["tokens_per_s"].get<double>(), 0);
  EXPECT_EQ(j["steps"].get<int64_t>(), 2);
  // 6 x non-embedding params x 32 + 12 x 2 layers x 32 hidden x 32^2
  double expect = 6.0 * j["non_embedding_params"].get<double>() * 32 + 12.0 * 2 * 32 * 32 * 32;
  EXPECT_DOUBLE_EQ(j["flops_per_seq"].get<double>(), expect);
  EXPECT_GT(j["mfu"].get<double>(), 0);
}
