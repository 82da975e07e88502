// bert-train evaluate: score a predictions file against a SQuAD JSON or a GLUE dev tsv, printing
// (and writing to <output-dir>/eval_results.json) what the official evaluation prints.
#include <spdlog/spdlog.h>

#include <iostream>

#include "bert/common/fs.h"
#include "bert/common/strings.h"
#include "bert/tasks/evaluate.h"
#include "bert/tasks/glue.h"
#include "command.h"

namespace bert::cli {

namespace {

struct EvaluateOptions {
  tasks::EvaluateRequest req;
  std::string dataset, predictions, na_prob_file, output_dir;
};

}  // namespace

static Action setup_evaluate(CLI::App& app, GlobalOptions& global) {
  auto* sub = app.add_subcommand(
      "evaluate", "score a predictions file: SQuAD EM/F1 as the official scripts compute them, or a GLUE task metric");
  auto o = std::make_shared<EvaluateOptions>();
  std::vector<std::string> tasks_list = tasks::glue_task_names();
  tasks_list.insert(tasks_list.begin(), "squad");
  sub->add_option("--task", o->req.task, "squad or a GLUE task: " + join(tasks_list, ", "))->required();
  sub->add_option("--dataset", o->dataset, "SQuAD dev JSON (dev-v1.1.json, dev-v2.0.json) or GLUE dev tsv")->required();
  sub->add_option("--predictions", o->predictions,
                  "SQuAD predictions.json ({id: answer}) or GLUE tsv (index<TAB>prediction)")
      ->required();
  sub->add_option("--version", o->req.version, "SQuAD version 1.1 or 2.0 (default: from the dataset)")
      ->check(CLI::IsMember({"1.1", "2.0"}));
  sub->add_option("--na-prob-file", o->na_prob_file, "SQuAD v2.0: no-answer probabilities (e.g. null_odds.json)");
  sub->add_option("--na-prob-thresh", o->req.na_prob_thresh, "SQuAD v2.0: predict no answer above this probability")
      ->capture_default_str();
  sub->add_option("--output-dir", o->output_dir, "where eval_results.json goes (default: the predictions' directory)");
  return [o, &global]() {
    apply_globals(global);
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
