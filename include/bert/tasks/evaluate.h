#pragma once
// The standalone evaluator behind `bert-train evaluate`: scores a predictions file against a
// SQuAD JSON (official v1.1 / v2.0 numbers) or a GLUE dev tsv (the task's metrics).
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace bert::tasks {

struct EvaluateRequest {
  std::string task;                    // "squad" or a GLUE task name
  std::filesystem::path dataset;       // dev-v1.1.json / dev.tsv
  std::filesystem::path predictions;   // predictions.json / preds.tsv
  std::string version;                 // SQuAD: "1.1", "2.0" or "" = from the dataset's version field
  std::filesystem::path na_prob_file;  // SQuAD v2.0: null_odds.json / na_prob.json (optional)
  double na_prob_thresh = 1.0;
};

struct EvaluateResult {
  nlohmann::ordered_json metrics;
  std::string printed;                 // what the official script prints (SQuAD) / the metrics JSON
  std::vector<std::string> warnings;   // notices the official scripts print to stderr
  size_t missing = 0;                  // questions without a prediction (SQuAD v1.1)
  std::string version;                 // SQuAD version used
  size_t examples = 0;
};

EvaluateResult evaluate_predictions(const EvaluateRequest& req);

}  // namespace bert::tasks
