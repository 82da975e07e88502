// bert-train finetune: SQuAD / GLUE fine-tuning from a checkpoint (or from scratch), with an
// evaluation every epoch, the best model kept, and a summary JSON. Without --config the HF/Google
// recipe defaults of tasks::finetune_defaults apply to every key not set on the command line.
#include <iostream>
#include <set>

#include "bert/tasks/finetune.h"
#include "bert/tasks/finetune_independent.h"
#include "command.h"

namespace bert::cli {

static Action setup_finetune(CLI::App& app, GlobalOptions& global) {
  auto* sub = app.add_subcommand("finetune", "fine-tune on SQuAD or a GLUE task; evaluate every epoch, keep the best");
  auto flags = std::make_shared<ConfigFlags>();
  flags->add_config_options(sub);
  flags->add_mapped(sub, "--task", "finetune.task", "squad, mrpc, rte, cola, sst2, stsb, qqp, qnli, mnli or wnli");
  flags->add_mapped(sub, "--data-dir", "data.data_dir",
                    "directory with the task's files (SQuAD train-v1.1.json/dev-v1.1.json; GLUE train.tsv/dev.tsv)");
  flags->add_mapped(sub, "--vocab", "finetune.vocab", "WordPiece vocab.txt (default: vocab.txt next to the checkpoint)");
  flags->add_mapped(sub, "--init-checkpoint", "checkpoint.init_checkpoint",
                    "start from these weights (the task head is initialised): our checkpoint or run dir, HF dir, "
                    ".safetensors, Google TF checkpoint or NVIDIA .pt");
  flags->add_mapped(sub, "--output-dir", "train.output_dir", "config, logs, metrics, predictions and best/ go here");
  flags->add_mapped(sub, "--seed", "train.seed", "random seed (initialisation, shuffling, dropout)");
  flags->add_mapped(sub, "--epochs", "train.epochs", "passes over the training set");
  flags->add_mapped(sub, "--max-steps", "train.max_steps", "stop after this many optimizer steps");
  flags->add_mapped(sub, "--max-seq-length", "data.max_seq_length", "tokens per sequence");
  flags->add_mapped_flag(sub, "--do-lower-case", "finetune.do_lower_case",
                         "uncased model: lower-case and strip accents (cased: --set finetune.do_lower_case=false)");
  return [flags, sub, &global]() {
    RunConfig cfg = flags->resolve(global);
    if (sub->get_option("--config")->count() == 0) {
      // Keys the user named with --set or a dedicated flag keep their value.
      std::set<std::string> given;
      for (const auto& s : sub->get_option("--set")->results())
        given.insert(s.substr(0, s.find('=')));
      for (const auto& [flag, key] : std::vector<std::pair<std::string, std::string>>{
               {"--epochs", "train.epochs"},
               {"--max-seq-length", "data.max_seq_length"},
               {"--output-dir", "train.output_dir"}})
        if (sub->get_option(flag)->count()) given.insert(key);
      if (global.precision_opt && global.precision_opt->count()) given.insert("train.precision");
      for (const auto& [key, value] : tasks::finetune_defaults(cfg.finetune.task))
        if (!given.count(key)) config::set_from_string(cfg.field(key, "finetune defaults"), value, "finetune defaults");
      cfg.validate("finetune");
    }
    if (flags->print_config) {
      std::cout << cfg.to_json().dump(2) << "\n";
      return 0;
    }
    tasks::run_finetune_workers(std::move(cfg));  // one process, or independent workers under a launcher
    return 0;
  };
}

BERT_COMMAND(finetune, 50, setup_finetune);

}  // namespace bert::cli
