// `bert-train bench --loader`: sequences/s of the training data path alone (see
// include/bert/train/loader_bench.h).
#include "bert/train/loader_bench.h"

#include <chrono>
#include <cstdio>
#include <sstream>

#include "bert/common/error.h"
#include "bert/train/data_sources.h"

namespace bert::train {

config::json LoaderBenchResult::to_json() const {
  return config::json{{"mode", "loader"},         {"source", source},
                      {"micro_batch", micro_batch}, {"seq", seq},
                      {"num_workers", num_workers}, {"prefetch", prefetch},
                      {"batches", batches},       {"sequences", sequences},
                      {"tokens", tokens},         {"seconds", seconds},
                      {"seq_per_s", seq_per_s},   {"tokens_per_s", tokens_per_s},
                      {"ms_per_batch", ms_per_batch}};
}

std::string LoaderBenchResult::to_text() const {
  std::ostringstream ss;
  ss << "bench --loader: " << source << "\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "  batches           %lld of %lld sequences, seq %lld, %lld worker(s), prefetch %lld\n",
                static_cast<long long>(batches), static_cast<long long>(micro_batch), static_cast<long long>(seq),
                static_cast<long long>(num_workers), static_cast<long long>(prefetch));
  ss << buf;
  std::snprintf(buf, sizeof buf, "  sequences/s       %.1f\n  tokens/s          %.0f (non-padding)\n", seq_per_s,
                tokens_per_s);
  ss << buf;
  std::snprintf(buf, sizeof buf, "  ms/batch          %.3f (%lld sequences in %.3f s)\n", ms_per_batch,
                static_cast<long long>(sequences), seconds);
  ss << buf;
  return ss.str();
}

LoaderBenchResult run_loader_benchmark(const RunConfig& cfg, int64_t warmup_batches, int64_t timed_batches) {
  if (timed_batches < 1) throw UserError("bench --loader needs at least 1 timed batch (--steps)");
  if (cfg.data.synthetic || cfg.data.data_dir.empty())
    throw UserError("bench --loader measures the HDF5 loader: pass --data-dir DIR (shards from `bert-train prepare`)");
  auto source = make_training_source(cfg);
  LoaderBenchResult r;
  r.source = source->describe();
  r.micro_batch = cfg.train.micro_batch_size;
  r.num_workers = cfg.data.num_workers;
  r.prefetch = cfg.data.prefetch;
  for (int64_t i = 0; i < warmup_batches; ++i)
    if (!source->next(r.micro_batch)) throw RuntimeError("bench --loader: the data ended during the warm-up");
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < timed_batches; ++i) {
    auto b = source->next(r.micro_batch);
    if (!b) break;  // only with an epoch limit; the loader is endless otherwise
    ++r.batches;
    r.sequences += b->size();
    r.seq = b->seq_len();
    r.tokens += b->attention_mask.sum().item<int64_t>();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r.seconds > 0) {
    r.seq_per_s = static_cast<double>(r.sequences) / r.seconds;
    r.tokens_per_s = static_cast<double>(r.tokens) / r.seconds;
  }
  if (r.batches > 0) r.ms_per_batch = 1000.0 * r.seconds / static_cast<double>(r.batches);
  return r;
}

}  // namespace bert::train
