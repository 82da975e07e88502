#pragma once
// The resolved settings of a run: every section, loaded from JSON, overridden by
// `--set section.key=value`, then by dedicated flags (precedence: file < --set < flag).
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "bert/common/logging.h"
#include "bert/config/fields.h"
#include "bert/data/data_config.h"
#include "bert/dist/dist_config.h"
#include "bert/model/model_config.h"
#include "bert/tasks/finetune_config.h"
#include "bert/train/eval_config.h"
#include "bert/train/train_config.h"

namespace bert {

struct RunConfig {
  ModelConfig model;
  TrainConfig train;
  OptimizerConfig optimizer;
  DataConfig data;
  CheckpointConfig checkpoint;
  LoggingConfig logging;
  FinetuneConfig finetune;
  EvalConfig eval;
  DistConfig dist;

  // (section name, its fields), in print order.
  std::vector<std::pair<std::string, config::FieldList>> sections();
  config::json to_json();
  // "section.key" -> Field*, UserError with the closest valid key when unknown.
  config::Field& field(const std::string& dotted_key, const std::string& where);
  void validate(const std::string& where = "config");
};

// Where the settings come from.
struct ConfigSources {
  std::string config_file;                 // --config
  std::string model_config_file;           // --model-config (a bert_config.json / HF config.json)
  std::vector<std::string> sets;           // --set section.key=value, in order
  std::vector<std::pair<std::string, std::string>> flags;  // dedicated flags: (section.key, value)
};

RunConfig resolve_config(const ConfigSources& src);

// Read a plain Google/HF bert_config.json into a ModelConfig. Keys HF or Google add that do not
// describe the architecture (architectures, model_type, transformers_version, ...) are ignored;
// any other unknown key is an error.
ModelConfig load_model_config(const std::filesystem::path& path);

// Apply the "model" member of a run config: an object, or a path (relative to the config file)
// to a bert_config.json.
void apply_model_section(ModelConfig& m, const config::json& value, const std::filesystem::path& base_dir,
                         const std::string& where);

// Two-column table of every resolved setting, for the start of each run.
std::string config_table(RunConfig& cfg);
// Markdown reference of every section and key (type, default, range/choices, help);
// docs/config.md embeds it and a test keeps the two equal.
std::string config_reference_markdown();

// Save resolved settings as JSON (atomically) to dir/name.
void save_config(RunConfig& cfg, const std::filesystem::path& dir, const std::string& name = "config.json");

}  // namespace bert
