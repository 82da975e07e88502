// Fine-tuning setup: loading the initial weights, the recipe defaults, and finding the task's files.
#include <spdlog/spdlog.h>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/io/convert.h"
#include "bert/tasks/finetune.h"
#include "bert/tasks/glue.h"

namespace bert::tasks {

namespace {

// GLUE directory names as the download script writes them.
std::string glue_dir_name(const std::string& canonical) {
  if (canonical == "cola") return "CoLA";
  if (canonical == "sst-2") return "SST-2";
  if (canonical == "sts-b") return "STS-B";
  std::string s = canonical;
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

io::LoadReport load_init_checkpoint(torch::nn::Module& model, const ModelConfig& model_cfg, const fs::path& spec) {
  if (!fs::exists(spec) && !fs::exists(spec.string() + ".index"))
    throw UserError("init checkpoint not found: " + spec.string() +
                    "; pass a checkpoint directory, an HF model directory, a .safetensors file, a TF checkpoint "
                    "or an NVIDIA .pt file");
  return io::init_from_checkpoint(model, model_cfg, spec);
}

std::optional<fs::path> init_checkpoint_model_config(const fs::path& spec) {
  fs::path dir = fs::is_directory(spec) ? spec : spec.parent_path();
  // A pretraining run directory: its config.json is the run's settings, the model's is the
  // latest checkpoint's.
  if (fs::is_directory(spec) && !fs::exists(spec / "trainer_state.json") &&
      fs::exists(spec / "checkpoints" / "latest")) {
    std::error_code ec;
    fs::path latest = fs::canonical(spec / "checkpoints" / "latest", ec);
    if (!ec) dir = latest;
  }
  for (const char* name : {"config.json", "bert_config.json"})
    if (fs::exists(dir / name)) return dir / name;
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> finetune_defaults(const std::string& task) {
  const bool squad = task == "squad";
  return {
      {"optimizer.name", "adamw"},
      {"optimizer.learning_rate", squad ? "3e-5" : "2e-5"},
      {"optimizer.epsilon", "1e-6"},
      {"optimizer.weight_decay", "0.01"},
      {"optimizer.max_grad_norm", "1.0"},
      {"optimizer.schedule", "linear"},
      {"optimizer.warmup_proportion", "0.1"},
      {"train.epochs", squad ? "2" : "3"},
      {"train.global_batch_size", "32"},
      {"train.micro_batch_size", "32"},
      {"train.output_dir", "runs/finetune_" + task},
      {"data.max_seq_length", squad ? "384" : "128"},
  };
}

void resolve_finetune_files(RunConfig& cfg) {
  auto& f = cfg.finetune;
  const fs::path data_dir = cfg.data.data_dir;
  auto pick = [&](std::string& slot, const std::vector<std::string>& names, bool required, const char* key) {
    if (!slot.empty()) {
      if (required) require_file(slot, std::string("finetune.") + key);
      return;
    }
    if (!data_dir.empty()) {
      for (const auto& n : names) {
        if (fs::exists(data_dir / n)) {
          slot = (data_dir / n).string();
          return;
        }
      }
    }
    if (required)
      throw UserError(std::string("no ") + key + " for task " + f.task + ": pass --data-dir DIR holding " +
                      names.front() + " or --set finetune." + key + "=FILE");
  };
  if (f.task == "squad") {
    const std::string v = f.version_2_with_negative ? "v2.0" : "v1.1";
    pick(f.train_file, {"train-" + v + ".json"}, true, "train_file");
    pick(f.dev_file, {"dev-" + v + ".json"}, true, "dev_file");
    if (!f.test_file.empty()) require_file(f.test_file, "finetune.test_file");
    return;
  }
  const GlueTaskSpec& spec = glue_task(f.task);
  const std::string sub = glue_dir_name(spec.name);
  const std::string dev = spec.name == "mnli" ? "dev_matched.tsv" : "dev.tsv";
  const std::string test = spec.name == "mnli" ? "test_matched.tsv" : "test.tsv";
  pick(f.train_file, {"train.tsv", sub + "/train.tsv"}, true, "train_file");
  pick(f.dev_file, {dev, sub + "/" + dev}, true, "dev_file");
  if (!f.test_file.empty()) require_file(f.test_file, "finetune.test_file");
}

}  // namespace bert::tasks
