#pragma once
// Fine-tuning on SQuAD and GLUE (`bert-train finetune`): a RunConfig's finetune section picks the
// task and its files, the model comes from --init-checkpoint (its config.json, else the model
// section), and training is AdamW with the configured schedule over epochs x steps per epoch,
// gradient accumulation (train.global_batch_size / train.micro_batch_size), bf16/fp16 through the
// device layer, a new shuffle every epoch from the run seed, and dropout on.
//
// After every epoch (or every finetune.eval_every_steps) the dev set is predicted and scored:
//   SQuAD  eval/step_N/predictions.json, nbest_predictions.json (+ null_odds.json for v2.0), EM/F1
//   GLUE   eval/step_N/dev_predictions.tsv, the task's metrics
// and the best model by the task's main metric (SQuAD: f1; GLUE: GlueTaskSpec::primary_metric) is
// kept in <output>/best (model.safetensors + config.json, an HF model directory). The run ends with
// <output>/finetune_summary.json (every evaluation, the best one). With finetune.test_file the best
// model predicts it: GLUE <output>/test_predictions.tsv in the submission format; SQuAD
// <output>/test/predictions.json, nbest_predictions.json (+ null_odds.json for v2.0), as
// --do_predict in NVIDIA's run_squad.py (scored too when the file has answers).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "bert/config/run_config.h"
#include "bert/io/weights.h"

namespace bert::tasks {

// Loads an --init-checkpoint in any format io::load_any_checkpoint reads (our checkpoint or run
// directory, an HF model directory, a .safetensors file, a Google TF checkpoint, an NVIDIA .pt).
// `model_cfg` supplies the vocabulary size for trimming NVIDIA padding rows.
io::LoadReport load_init_checkpoint(torch::nn::Module& model, const ModelConfig& model_cfg,
                                    const std::filesystem::path& spec);
// The checkpoint's model config, when there is one: config.json (or Google's bert_config.json) next
// to its weights; for a pretraining run directory (<dir>/checkpoints/latest) the checkpoint's own.
std::optional<std::filesystem::path> init_checkpoint_model_config(const std::filesystem::path& spec);

// The fine-tuning defaults (HF/Google recipes) used when no --config is given, as
// "section.key" -> value: AdamW, eps 1e-6, weight decay 0.01, linear schedule with 10% warmup,
// batch 32, and per task the seed recipes' learning rate, epochs and sequence length
// (SQuAD: 3e-5, 2 epochs, 384; GLUE: 2e-5, 3 epochs, 128).
std::vector<std::pair<std::string, std::string>> finetune_defaults(const std::string& task);

// Fills finetune.train_file / dev_file / test_file left empty from data.data_dir and the task's
// usual file names (SQuAD: train-v1.1.json / dev-v1.1.json or the v2.0 names; GLUE: train.tsv,
// dev.tsv (MNLI: dev_matched.tsv), test.tsv, also under <data_dir>/<GLUE task directory>).
// UserError naming the file and the flag to set when the train or dev file is missing.
void resolve_finetune_files(RunConfig& cfg);

struct FinetuneResult {
  nlohmann::ordered_json summary;  // what finetune_summary.json holds
  std::filesystem::path output_dir, best_dir;
};

// Runs the whole fine-tuning: setup, training with evaluations, best checkpoint, summary.
FinetuneResult run_finetune(RunConfig cfg);

}  // namespace bert::tasks
