// bert-train pretrain: masked-LM + NSP pretraining driven by a run config (configs/*.json).
#include <iostream>

#include "bert/common/error.h"
#include "bert/train/trainer.h"
#include "command.h"

namespace bert::cli {

void add_training_flags(ConfigFlags& flags, CLI::App* sub) {
  flags.add_config_options(sub);
  flags.add_mapped(sub, "--output-dir", "train.output_dir", "logs, metrics, config.json and checkpoints go here");
  flags.add_mapped(sub, "--seed", "train.seed", "random seed");
  flags.add_mapped(sub, "--max-steps", "train.max_steps", "stop after this many optimizer steps");
  flags.add_mapped(sub, "--max-samples", "train.max_samples", "stop after this many sequences");
  flags.add_mapped(sub, "--max-time", "train.max_time", "stop after this many seconds");
  flags.add_mapped(sub, "--epochs", "train.epochs", "stop after this many passes over the data");
  flags.add_mapped(sub, "--max-seq-length", "data.max_seq_length", "tokens per sequence");
  flags.add_mapped_flag(sub, "--synthetic-data", "data.synthetic", "train on random batches of the right shape");
}

static Action setup_pretrain(CLI::App& app, GlobalOptions& global) {
  auto* sub = app.add_subcommand("pretrain", "pretrain BERT (masked LM + next sentence) with LAMB or AdamW");
  auto flags = std::make_shared<ConfigFlags>();
  add_training_flags(*flags, sub);
  flags->add_mapped(sub, "--resume", "checkpoint.resume",
                    "continue a run exactly: 'latest' (in --output-dir) or a checkpoint directory");
  flags->add_mapped(sub, "--init-checkpoint", "checkpoint.init_checkpoint",
                    "start from these weights (checkpoint dir or .safetensors) with a new optimizer");
  return [flags, &global]() {
    RunConfig cfg = flags->resolve(global);
    if (flags->print_config) {
      std::cout << cfg.to_json().dump(2) << "\n";
      return 0;
    }
    if (!cfg.data.synthetic)
      throw UserError("no training data given: pass --synthetic-data (data.synthetic=true)");
    auto source = train::make_synthetic_source(cfg.data, cfg.model, cfg.train.seed);
    train::Trainer trainer(cfg, std::move(source));
    trainer.run();
    return 0;
  };
}

BERT_COMMAND(pretrain, 40, setup_pretrain);

}  // namespace bert::cli
