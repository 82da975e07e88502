// bert-train bench: pretraining throughput (sequences/s, tokens/s, ms/step, MFU) on synthetic data,
// or with --loader the sequences/s the HDF5 loader alone delivers from --data-dir.
#include <iostream>

#include "bert/common/error.h"
#include "bert/train/bench.h"
#include "bert/train/loader_bench.h"
#include "command.h"

namespace bert::cli {

static Action setup_bench(CLI::App& app, GlobalOptions& global) {
  auto* sub = app.add_subcommand(
      "bench", "time pretraining steps on synthetic data (seq/s, tokens/s, ms/step, MFU), or the data loader alone");
  auto flags = std::make_shared<ConfigFlags>();
  flags->add_config_options(sub);
  flags->add_mapped(sub, "--seed", "train.seed", "random seed");
  flags->add_mapped(sub, "--max-seq-length", "data.max_seq_length", "tokens per sequence");
  flags->add_mapped(sub, "--micro-batch-size", "train.micro_batch_size", "sequences per forward/backward");
  flags->add_mapped(sub, "--data-dir", "data.data_dir", "--loader: HDF5 shards (directory or glob)");
  flags->add_mapped(sub, "--vocab", "data.vocab", "--loader: vocab.txt, to mask --no-masking shards on the fly");
  flags->add_mapped(sub, "--num-workers", "data.num_workers", "--loader: loader threads");
  struct Opts {
    int64_t warmup = 3, steps = 10, accumulation = 1;
    bool json = false, loader = false;
  };
  auto o = std::make_shared<Opts>();
  sub->add_flag("--loader", o->loader,
                "time the data loader alone: micro-batches from --data-dir with the configured workers, no model");
  sub->add_option("--warmup-steps", o->warmup, "untimed steps first (--loader: micro-batches)")
      ->check(CLI::Range(0, 1000000));
  auto* steps = sub->add_option("--steps", o->steps, "timed optimizer steps (--loader: micro-batches, default 1000)")
                    ->check(CLI::Range(1, 100000000));
  sub->add_option("--accumulation", o->accumulation, "micro-batches per optimizer step")
      ->check(CLI::Range(1, 1000000));
  sub->add_flag("--json", o->json, "print the result as JSON");
  return [flags, o, steps, &global]() {
    RunConfig cfg = flags->resolve(global);
    cfg.train.global_batch_size = cfg.train.micro_batch_size * o->accumulation;
    if (flags->print_config) {
      std::cout << cfg.to_json().dump(2) << "\n";
      return 0;
    }
    if (o->loader) {
      auto r = train::run_loader_benchmark(cfg, o->warmup, steps->count() ? o->steps : 1000);
      std::cout << (o->json ? r.to_json().dump() + "\n" : r.to_text());
      return 0;
    }
    if (!cfg.data.data_dir.empty())
      throw UserError("bench times the model on synthetic data; add --loader to time the loader on --data-dir");
    auto r = train::run_benchmark(cfg, o->warmup, o->steps);
    std::cout << (o->json ? r.to_json().dump() + "\n" : r.to_text());
    return 0;
  };
}

BERT_COMMAND(bench, 45, setup_bench);

}  // namespace bert::cli
