// `bert-train bench`: warm-up, then timed optimizer steps of the real trainer on synthetic data.
#include "bert/train/bench.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <sstream>

#include "bert/common/error.h"
#include "bert/common/strings.h"
#include "bert/train/trainer.h"

namespace bert::train {

config::json BenchResult::to_json() const {
  return config::json{{"device", device},
                      {"precision", precision},
                      {"layers", layers},
                      {"hidden", hidden},
                      {"seq", seq},
                      {"micro_batch", micro_batch},
                      {"global_batch", global_batch},
                      {"steps", steps},
                      {"params", params},
                      {"non_embedding_params", non_embedding_params},
                      {"median_ms_per_step", median_ms_per_step},
                      {"mean_ms_per_step", mean_ms_per_step},
                      {"seq_per_s", seq_per_s},
                      {"tokens_per_s", tokens_per_s},
                      {"flops_per_seq", flops_per_seq},
                      {"achieved_flops", achieved_flops},
                      {"peak_flops", peak_flops},
                      {"mfu", mfu},
                      {"final_loss", final_loss}};
}

std::string BenchResult::to_text() const {
  std::ostringstream ss;
  ss << "bench: " << layers << " layers, hidden " << hidden << ", seq " << seq << ", batch " << global_batch
     << " (micro " << micro_batch << "), " << precision << " on " << device << "\n";
  ss << "  parameters        " << human_count(static_cast<double>(params)) << " ("
     << human_count(static_cast<double>(non_embedding_params)) << " without embeddings)\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "  sequences/s       %.2f\n  tokens/s          %.0f\n", seq_per_s, tokens_per_s);
  ss << buf;
  std::snprintf(buf, sizeof buf, "  ms/step           %.1f median, %.1f mean over %lld steps\n", median_ms_per_step,
                mean_ms_per_step, static_cast<long long>(steps));
  ss << buf;
  std::snprintf(buf, sizeof buf, "  model FLOP/s      %sFLOP/s (%.3g GFLOP per sequence)\n",
                human_count(achieved_flops).c_str(), flops_per_seq / 1e9);
  ss << buf;
  if (peak_flops > 0)
    std::snprintf(buf, sizeof buf, "  MFU               %.1f%% of %sFLOP/s peak\n", 100.0 * mfu,
                  human_count(peak_flops).c_str());
  else
    std::snprintf(buf, sizeof buf, "  MFU               unknown (no peak FLOP/s for this device)\n");
  ss << buf;
  return ss.str();
}

BenchResult run_benchmark(RunConfig cfg, int64_t warmup_steps, int64_t timed_steps) {
  if (timed_steps < 1) throw UserError("bench needs at least 1 timed step (--steps)");
  cfg.data.synthetic = true;
  cfg.train.max_steps = warmup_steps + timed_steps;
  cfg.checkpoint.resume.clear();
  TrainerOptions opts;
  opts.write_outputs = false;
  opts.handle_signals = false;
  Trainer trainer(cfg, make_synthetic_source(cfg.data, cfg.model, cfg.train.seed), opts);
  const auto& dev = trainer.device();
  for (int64_t i = 0; i < warmup_steps; ++i) trainer.train_step();
  dev.synchronize();
  std::vector<double> ms;
  int64_t seqs = 0, tokens = 0;
  double total = 0, loss = 0;
  for (int64_t i = 0; i < timed_steps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto s = trainer.train_step();
    dev.synchronize();
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ms.push_back(1000.0 * dt);
    total += dt;
    seqs += s.sequences;
    tokens += s.tokens;
    loss = s.loss;
  }
  BenchResult r;
  r.device = dev.name() + " (" + dev.description() + ")";
  r.precision = cfg.train.precision;
  r.layers = cfg.model.num_hidden_layers;
  r.hidden = cfg.model.hidden_size;
  r.seq = cfg.data.max_seq_length;
  r.micro_batch = cfg.train.micro_batch_size;
  r.global_batch = cfg.train.global_batch_size;
  r.steps = timed_steps;
  r.params = trainer.parameter_count(true);
  r.non_embedding_params = trainer.parameter_count(false);
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  r.median_ms_per_step = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  r.mean_ms_per_step = 1000.0 * total / static_cast<double>(n);
  r.seq_per_s = static_cast<double>(seqs) / total;
  r.tokens_per_s = static_cast<double>(tokens) / total;
  r.flops_per_seq = trainer.flops_per_sequence();
  r.achieved_flops = r.flops_per_seq * r.seq_per_s;
  r.peak_flops = dev.peak_flops(cfg.train.precision);
  r.mfu = r.peak_flops > 0 ? r.achieved_flops / r.peak_flops : 0;
  r.final_loss = loss;
  if (!std::isfinite(loss)) throw RuntimeError("bench: the loss became non-finite; check the model config");
  return r;
}

}  // namespace bert::train
