#pragma once
// Pretraining throughput benchmark: the trainer's real step on synthetic data, `warmup` untimed
// steps, then `steps` timed ones (device synchronised around each). Reports sequences/s,
// tokens/s, ms/step (median) and model FLOP utilisation against Device::peak_flops.
#include <cstdint>
#include <string>

#include "bert/config/fields.h"
#include "bert/config/run_config.h"

namespace bert::train {

struct BenchResult {
  std::string device, precision;
  int64_t layers = 0, hidden = 0, seq = 0, micro_batch = 0, global_batch = 0, steps = 0;
  int64_t params = 0, non_embedding_params = 0;
  double median_ms_per_step = 0, mean_ms_per_step = 0;
  double seq_per_s = 0, tokens_per_s = 0;
  double flops_per_seq = 0, achieved_flops = 0, peak_flops = 0, mfu = 0;  // mfu in [0,1], 0 when peak unknown
  double final_loss = 0;

  config::json to_json() const;
  std::string to_text() const;
};

BenchResult run_benchmark(RunConfig cfg, int64_t warmup_steps, int64_t timed_steps);

}  // namespace bert::train
