#pragma once
// Loader-only benchmark (`bert-train bench --loader`): how many sequences per second the training
// data path delivers without a model, to compare with what a training step consumes. It draws
// micro-batches from the same batch source the trainer would use (make_training_source: the HDF5
// loader with the configured workers, prefetch queue, shuffle buffer and dynamic masking),
// `warmup` untimed batches first (the prefetch queue fills while the source starts), then
// `batches` timed ones.
#include <cstdint>
#include <string>

#include "bert/config/fields.h"
#include "bert/config/run_config.h"

namespace bert::train {

struct LoaderBenchResult {
  std::string source;  // the source's describe()
  int64_t micro_batch = 0, seq = 0, num_workers = 0, prefetch = 0;
  int64_t batches = 0, sequences = 0, tokens = 0;  // timed part; tokens: non-padding
  double seconds = 0, seq_per_s = 0, tokens_per_s = 0, ms_per_batch = 0;

  config::json to_json() const;
  std::string to_text() const;
};

LoaderBenchResult run_loader_benchmark(const RunConfig& cfg, int64_t warmup_batches, int64_t timed_batches);

}  // namespace bert::train
