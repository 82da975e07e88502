#pragma once
// SQuAD metrics computed exactly as the official evaluate-v1.1.py and evaluate-v2.0.py do:
// normalize_answer (lower-case, drop string.punctuation, drop the words a/an/the, collapse
// whitespace), exact match and bag-of-tokens F1, max over the ground truths, totals as
// percentages; for v2.0 the HasAns/NoAns split and, with a no-answer probability file, the best
// thresholds. Results are JSON objects with the official keys in the official order.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace bert::tasks {

using ordered_json = nlohmann::ordered_json;

std::string normalize_answer(std::string_view s);
bool squad_exact_match(std::string_view prediction, std::string_view ground_truth);
// evaluate-v1.1.py's f1_score (0 when nothing overlaps, including empty strings).
double squad_f1_v1(std::string_view prediction, std::string_view ground_truth);
// evaluate-v2.0.py's compute_f1 (1 when both normalise to nothing).
double squad_f1_v2(std::string_view gold, std::string_view prediction);

struct SquadEvalInput {
  ordered_json dataset;      // the whole dataset file ({"version", "data"})
  ordered_json predictions;  // {qid: answer text}
  ordered_json na_probs;     // {qid: probability}; null when absent (v2.0 only)
  double na_prob_thresh = 1.0;
};

struct SquadEvalReport {
  ordered_json metrics;               // what the official script prints
  std::vector<std::string> missing;   // question ids without a prediction
  std::vector<std::string> warnings;  // e.g. the dataset-version notice
};

// evaluate-v1.1.py: {"exact_match", "f1"}; unanswered questions score 0.
SquadEvalReport evaluate_squad_v1(const SquadEvalInput& in);
// evaluate-v2.0.py: {"exact", "f1", "total", "HasAns_*", "NoAns_*" [, "best_*"]}.
// The official script cannot score a file that lacks some question ids (it fails with a
// KeyError), so neither do we: UserError naming the first missing id.
SquadEvalReport evaluate_squad_v2(const SquadEvalInput& in);

// Load a JSON file; UserError naming the file (and line) when it is missing or malformed.
ordered_json load_json_file(const std::filesystem::path& path, std::string_view what);

}  // namespace bert::tasks
