// bert-train pretrain: masked-LM + NSP pretraining driven by a run config (configs/*.json).
#include <iostream>

#include "bert/common/error.h"
#include "bert/dist/launch_env.h"
#include "bert/train/data_sources.h"
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
  flags.add_mapped(sub, "--data-dir", "data.data_dir", "HDF5 shards from `bert-train prepare` (directory or glob)");
  flags.add_mapped(sub, "--vocab", "data.vocab", "vocab.txt, to mask shards written with --no-masking on the fly");
}

static Action setup_pretrain(CLI::App& app, GlobalOptions& global) {
  auto* sub = app.add_subcommand("pretrain", "pretrain BERT (masked LM + next sentence) with LAMB or AdamW");
  auto flags = std::make_shared<ConfigFlags>();
  add_training_flags(*flags, sub);
  flags->add_mapped(sub, "--resume", "checkpoint.resume",
                    "continue a run exactly: 'latest' (in --output-dir) or a checkpoint directory");
  flags->add_mapped(sub, "--init-checkpoint", "checkpoint.init_checkpoint",
                    "start from these weights with a new optimizer: our checkpoint, HF dir, .safetensors, Google TF checkpoint or NVIDIA .pt");
  flags->add_mapped(sub, "--eval-dir", "data.eval_dir", "held-out HDF5 shards evaluated during and after training");
  flags->add_mapped(sub, "--eval-every-samples", "eval.every_samples", "evaluate every N training sequences");
  flags->add_mapped(sub, "--num-eval-examples", "eval.num_examples", "held-out sequences per evaluation (0 = all)");
  flags->add_mapped(sub, "--target-mlm-accuracy", "eval.target_mlm_accuracy",
                    "stop once the eval MLM accuracy reaches this (MLPerf: 0.720)");
  return [flags, &global]() {
    RunConfig cfg = flags->resolve(global);
    if (flags->print_config) {
      std::cout << cfg.to_json().dump(2) << "\n";
      return 0;
    }
    // Under a launcher (torchrun variables, mpirun, srun) each rank reads its slice of the data;
    // the trainer joins the process group.
    const auto env = dist::detect_launch_env();
    auto source = train::make_training_source(cfg, env.rank, env.world_size);
    std::unique_ptr<train::BatchSource> eval_source;
    if (!cfg.data.eval_dir.empty())
      eval_source = train::make_eval_source(cfg, cfg.data.eval_dir, env.rank, env.world_size);
    train::Trainer trainer(cfg, std::move(source));
    if (eval_source) trainer.set_eval_source(std::move(eval_source));
    auto summary = trainer.run();
    if (summary.evaluated && env.rank == 0) std::cout << "final " << summary.eval.summary() << std::endl;
    return 0;
  };
}

BERT_COMMAND(pretrain, 40, setup_pretrain);

}  // namespace bert::cli
