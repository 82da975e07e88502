// bert-train evaluate: score a predictions file against a SQuAD JSON or a GLUE dev tsv, printing
// (and writing to <output-dir>/eval_results.json) what the official evaluation prints.
#include <spdlog/spdlog.h>

#include <iostream>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/common/strings.h"
#include "bert/tasks/evaluate.h"
#include "bert/config/run_config.h"
#include "bert/device/device.h"
#include "bert/io/weights.h"
#include "bert/model/heads.h"
#include "bert/tasks/glue.h"
#include "bert/train/checkpoint.h"
#include "bert/train/data_sources.h"
#include "bert/train/pretrain_eval.h"
#include "command.h"

namespace bert::cli {

namespace {

struct EvaluateOptions {
  tasks::EvaluateRequest req;
  std::string dataset, predictions, na_prob_file, output_dir;
  // --task pretrain
  std::string checkpoint, data_dir, vocab;
  int64_t num_examples = 0, batch_size = 32, seed = 42;
};

// Masked-LM / NSP accuracy of a saved model on held-out HDF5 shards.
int evaluate_pretrain(const EvaluateOptions& o, const GlobalOptions& global) {
  if (o.checkpoint.empty() || o.data_dir.empty())
    throw UserError("--task pretrain needs --checkpoint DIR and --data-dir DIR (held-out HDF5 shards)");
  fs::path dir = o.checkpoint;
  std::error_code ec;
  if (fs::exists(dir / "checkpoints" / "latest", ec)) dir = train::resolve_checkpoint("latest", dir);
  fs::path weights = train::checkpoint_weights_file(dir);
  fs::path config_file = (fs::is_directory(dir) ? dir : dir.parent_path()) / "config.json";
  require_file(config_file, "model config (config.json next to the weights)");
  RunConfig cfg;
  cfg.model = load_model_config(config_file);
  cfg.data.vocab = o.vocab;
  cfg.data.max_seq_length = 0;  // any length the shards have
  cfg.data.num_workers = 1;
  cfg.eval.batch_size = o.batch_size;
  cfg.train.seed = o.seed;
  configure_threads(global.threads);
  auto device = select_device(global.device, global.precision);
  torch::manual_seed(static_cast<uint64_t>(o.seed));
  model::BertForPreTraining m(cfg.model);
  auto report = io::load_weights_file(*m, weights);
  report.log();
  if (!report.missing.empty())
    throw UserError(weights.string() + " lacks " + std::to_string(report.missing.size()) +
                    " pretraining weights (e.g. " + report.missing.front() + "); it is not a pretraining checkpoint");
  m->to(device->torch_device());
  auto src = train::make_eval_source(cfg, o.data_dir);
  spdlog::info("eval data: {}", src->describe());
  auto r = train::evaluate_pretraining(m, *src, o.batch_size, o.num_examples, *device, global.precision);
  std::cout << r.summary() << std::endl;
  if (!o.output_dir.empty()) {
    ensure_writable_dir(o.output_dir);
    config::json j = r.to_json();
    j["checkpoint"] = fs::absolute(weights).string();
    j["data_dir"] = o.data_dir;
    write_file_atomic(fs::path(o.output_dir) / "eval_results.json", j.dump(2) + "\n");
    spdlog::info("wrote {}", (fs::path(o.output_dir) / "eval_results.json").string());
  }
  return 0;
}

}  // namespace

static Action setup_evaluate(CLI::App& app, GlobalOptions& global) {
  auto* sub = app.add_subcommand(
      "evaluate", "pretraining MLM/NSP accuracy of a checkpoint on held-out shards; SQuAD EM/F1 as the official scripts compute them; a GLUE task metric");
  auto o = std::make_shared<EvaluateOptions>();
  std::vector<std::string> tasks_list = tasks::glue_task_names();
  tasks_list.insert(tasks_list.begin(), "squad");
  tasks_list.insert(tasks_list.begin(), "pretrain");
  sub->add_option("--task", o->req.task, "pretrain, squad or a GLUE task: " + join(tasks_list, ", "))->required();
  sub->add_option("--dataset", o->dataset, "SQuAD dev JSON (dev-v1.1.json, dev-v2.0.json) or GLUE dev tsv");
  sub->add_option("--predictions", o->predictions,
                  "SQuAD predictions.json ({id: answer}) or GLUE tsv (index<TAB>prediction)");
  sub->add_option("--checkpoint", o->checkpoint, "pretrain: checkpoint or model directory (or a run's output dir)");
  sub->add_option("--data-dir", o->data_dir, "pretrain: held-out HDF5 shards (directory or glob)");
  sub->add_option("--vocab", o->vocab, "pretrain: vocab.txt, to mask shards written with --no-masking");
  sub->add_option("--num-eval-examples", o->num_examples, "pretrain: sequences to evaluate (0 = all)");
  sub->add_option("--batch-size", o->batch_size, "pretrain: sequences per batch")->check(CLI::Range(1, 1 << 20));
  sub->add_option("--seed", o->seed, "pretrain: seed of the eval order and dynamic masking");
  sub->add_option("--version", o->req.version, "SQuAD version 1.1 or 2.0 (default: from the dataset)")
      ->check(CLI::IsMember({"1.1", "2.0"}));
  sub->add_option("--na-prob-file", o->na_prob_file, "SQuAD v2.0: no-answer probabilities (e.g. null_odds.json)");
  sub->add_option("--na-prob-thresh", o->req.na_prob_thresh, "SQuAD v2.0: predict no answer above this probability")
      ->capture_default_str();
  sub->add_option("--output-dir", o->output_dir, "where eval_results.json goes (default: the predictions' directory)");
  return [o, &global]() {
    apply_globals(global);
    if (o->req.task == "pretrain") return evaluate_pretrain(*o, global);
    if (o->dataset.empty() || o->predictions.empty())
      throw UserError("--task " + o->req.task + " needs --dataset and --predictions");
    o->req.dataset = o->dataset;
    o->req.predictions = o->predictions;
    o->req.na_prob_file = o->na_prob_file;
    tasks::EvaluateResult r = tasks::evaluate_predictions(o->req);
    size_t shown = 0;
    for (const auto& w : r.warnings) {
      if (shown++ < 10) spdlog::warn("{}", w);
    }
    if (r.warnings.size() > 10) spdlog::warn("... {} notices in all", r.warnings.size());
    if (r.missing) spdlog::warn("{} question(s) have no prediction and score 0", r.missing);
    std::cout << r.printed << std::endl;
    fs::path dir = o->output_dir.empty() ? fs::absolute(o->req.predictions).parent_path() : fs::path(o->output_dir);
    ensure_writable_dir(dir);
    write_file_atomic(dir / "eval_results.json", r.printed + "\n");
    spdlog::info("wrote {}", (dir / "eval_results.json").string());
    return 0;
  };
}

BERT_COMMAND(evaluate, 60, setup_evaluate);

}  // namespace bert::cli
