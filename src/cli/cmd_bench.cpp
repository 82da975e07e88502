// bert-train bench: pretraining throughput (sequences/s, tokens/s, ms/step, MFU) on synthetic data.
#include <iostream>

#include "bert/train/bench.h"
#include "command.h"

namespace bert::cli {

void add_training_flags(ConfigFlags& flags, CLI::App* sub);  // cmd_pretrain.cpp

static Action setup_bench(CLI::App& app, GlobalOptions& global) {
  auto* sub = app.add_subcommand("bench", "time pretraining steps on synthetic data: seq/s, tokens/s, ms/step, MFU");
  auto flags = std::make_shared<ConfigFlags>();
  flags->add_config_options(sub);
  flags->add_mapped(sub, "--seed", "train.seed", "random seed");
  flags->add_mapped(sub, "--max-seq-length", "data.max_seq_length", "tokens per sequence");
  flags->add_mapped(sub, "--micro-batch-size", "train.micro_batch_size", "sequences per forward/backward");
  struct Opts {
    int64_t warmup = 3, steps = 10, accumulation = 1;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("--warmup-steps", o->warmup, "untimed steps first")->check(CLI::Range(0, 1000000));
  sub->add_option("--steps", o->steps, "timed optimizer steps")->check(CLI::Range(1, 1000000));
  sub->add_option("--accumulation", o->accumulation, "micro-batches per optimizer step")
      ->check(CLI::Range(1, 1000000));
  sub->add_flag("--json", o->json, "print the result as JSON");
  return [flags, o, &global]() {
    RunConfig cfg = flags->resolve(global);
    cfg.train.global_batch_size = cfg.train.micro_batch_size * o->accumulation;
    if (flags->print_config) {
      std::cout << cfg.to_json().dump(2) << "\n";
      return 0;
    }
    auto r = train::run_benchmark(cfg, o->warmup, o->steps);
    if (o->json)
      std::cout << r.to_json().dump() << "\n";
    else
      std::cout << r.to_text();
    return 0;
  };
}

BERT_COMMAND(bench, 45, setup_bench);

}  // namespace bert::cli
