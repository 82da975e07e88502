// The standalone evaluator: picks the SQuAD or GLUE scorer and formats the result as the
// official scripts print it.
#include "bert/tasks/evaluate.h"

#include "bert/common/error.h"
#include "bert/common/strings.h"
#include "bert/tasks/glue.h"
#include "bert/tasks/glue_io.h"
#include "bert/tasks/pytext.h"
#include "bert/tasks/squad_metrics.h"

namespace bert::tasks {

namespace {

EvaluateResult evaluate_squad(const EvaluateRequest& req) {
  SquadEvalInput in;
  in.dataset = load_json_file(req.dataset, "SQuAD dataset");
  in.predictions = load_json_file(req.predictions, "predictions file");
  in.na_prob_thresh = req.na_prob_thresh;
  std::string version = req.version;
  if (version.empty()) {
    std::string v = in.dataset.is_object() && in.dataset.contains("version") && in.dataset["version"].is_string()
                        ? in.dataset["version"].get<std::string>()
                        : "";
    version = (v == "v2.0" || v == "2.0") ? "2.0" : "1.1";
  }
  if (version != "1.1" && version != "2.0")
    throw UserError("unknown SQuAD version '" + version + "'; use --version 1.1 or 2.0");
  if (!req.na_prob_file.empty()) {
    if (version != "2.0") throw UserError("--na-prob-file is for SQuAD v2.0; add --version 2.0");
    in.na_probs = load_json_file(req.na_prob_file, "no-answer probability file");
  }
  SquadEvalReport rep;
  try {
    rep = version == "2.0" ? evaluate_squad_v2(in) : evaluate_squad_v1(in);
  } catch (const nlohmann::json::exception& e) {
    throw UserError("SQuAD dataset " + req.dataset.string() + " does not have the SQuAD layout (" + e.what() +
                    "); pass a SQuAD train/dev JSON file");
  }
  EvaluateResult r;
  r.metrics = rep.metrics;
  r.warnings = rep.warnings;
  for (const auto& q : rep.missing) r.warnings.push_back("Unanswered question " + q + " will receive score 0.");
  r.missing = rep.missing.size();
  r.version = version;
  r.printed = version == "2.0" ? py_json_dumps(rep.metrics, 2) : py_json_dumps(rep.metrics);
  return r;
}

EvaluateResult evaluate_glue(const EvaluateRequest& req) {
  const GlueTaskSpec& task = glue_task(req.task);
  auto examples = read_glue_tsv(task, req.dataset);
  auto preds = read_glue_predictions(req.predictions, task, examples.size());
  EvaluateResult r;
  r.metrics["task"] = task.name;
  r.metrics["examples"] = examples.size();
  const nlohmann::ordered_json scores = score_glue(task, examples, preds);
  for (auto it = scores.begin(); it != scores.end(); ++it) r.metrics[it.key()] = it.value();
  r.examples = examples.size();
  r.printed = py_json_dumps(r.metrics, 2);
  return r;
}

}  // namespace

EvaluateResult evaluate_predictions(const EvaluateRequest& req) {
  std::string t = to_lower_ascii(req.task);
  if (t == "squad" || t == "squad1" || t == "squad2") return evaluate_squad(req);
  if (is_glue_task(t)) return evaluate_glue(req);
  std::vector<std::string> names = glue_task_names();
  names.insert(names.begin(), "squad");
  throw UserError("unknown task '" + req.task + "'" + did_you_mean(t, names) + "; choose one of " + join(names, ", "));
}

}  // namespace bert::tasks
