#pragma once
// SQuAD post-processing, as Google's write_predictions: for each example, the n best start/end
// logits of every window give candidate spans (in the window's max-context part, end >= start,
// at most max_answer_length tokens); candidates are ranked by start+end logit, mapped back to the
// original context text with get_final_text, de-duplicated, and softmaxed into the n-best list.
// For v2.0 the null ([CLS]) score of the best window competes, and the answer is "" when
// null_score - best_non_null_score > null_score_diff_threshold.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bert/tasks/squad.h"
#include "bert/tasks/squad_features.h"

namespace bert::tasks {

struct SquadRawResult {
  int64_t unique_id = 0;  // SquadFeature::unique_id
  std::vector<float> start_logits, end_logits;  // one per input position (padding included)
};

struct SquadPredictOptions {
  int64_t n_best_size = 20;
  int64_t max_answer_length = 30;
  bool version_2 = false;
  double null_score_diff_threshold = 0.0;
};

struct NbestEntry {
  std::string text;
  double probability = 0, start_logit = 0, end_logit = 0;
};

struct SquadPrediction {
  std::string qas_id;
  std::string text;                // the answer ("" = no answer, v2.0)
  std::vector<NbestEntry> nbest;
  double null_score_diff = 0;      // v2.0 only
};

using BasicTokenizeFn = std::function<std::vector<std::string>(std::string_view)>;

// Google's get_final_text: project the tokenised prediction `pred_text` back onto `orig_text` by
// re-running BasicTokenizer on orig_text and aligning the two with spaces removed; returns
// orig_text unchanged when the alignment fails.
std::string get_final_text(const std::string& pred_text, const std::string& orig_text,
                           const BasicTokenizeFn& basic_tokenize);
// Indexes of the n largest logits, largest first (ties: lower index first).
std::vector<int64_t> best_indexes(const std::vector<float>& logits, int64_t n);
std::vector<double> softmax(const std::vector<double>& scores);

// One prediction per example, in example order. RuntimeError if a feature has no result.
std::vector<SquadPrediction> compute_squad_predictions(const std::vector<SquadExample>& examples,
                                                       const std::vector<SquadFeature>& features,
                                                       const std::vector<SquadRawResult>& results,
                                                       const SquadPredictOptions& opts,
                                                       const BasicTokenizeFn& basic_tokenize);

// The official-format JSON objects: {id: text}, {id: [{text, probability, start_logit, end_logit}]},
// {id: null_score_diff}.
nlohmann::ordered_json predictions_json(const std::vector<SquadPrediction>& preds);
nlohmann::ordered_json nbest_json(const std::vector<SquadPrediction>& preds);
nlohmann::ordered_json null_odds_json(const std::vector<SquadPrediction>& preds);
// Writes predictions.json, nbest_predictions.json and (v2.0) null_odds.json into `dir`, atomically.
void write_squad_predictions(const std::vector<SquadPrediction>& preds, const std::filesystem::path& dir,
                             bool version_2);

}  // namespace bert::tasks
