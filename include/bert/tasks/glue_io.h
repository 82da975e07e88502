#pragma once
// GLUE prediction files. Dev predictions are written per example as
//   index<TAB>prediction<TAB>label        (label = the gold label)
// and test predictions in the GLUE submission format
//   index<TAB>prediction                  (label strings; STS-B scores with 3 decimals).
// read_glue_predictions reads either back (header optional; columns found by name).
#include <cstdint>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "bert/tasks/glue.h"

namespace bert::tasks {

// One of the two is filled: label ids (classification) or scores (STS-B).
struct GluePredictions {
  std::vector<int32_t> label_ids;
  std::vector<double> scores;
  size_t size() const { return label_ids.empty() ? scores.size() : label_ids.size(); }
};

void write_glue_dev_predictions(const std::filesystem::path& path, const GlueTaskSpec& task,
                                const std::vector<GlueExample>& examples, const GluePredictions& preds);
void write_glue_submission(const std::filesystem::path& path, const GlueTaskSpec& task, const GluePredictions& preds);

// Predictions for `num_examples` rows, indexed 0..n-1 in dataset order. A prediction is a label
// string of the task (or its id), or a number for STS-B. UserError "<file>:<line>: ..." for bad
// lines, duplicate or out-of-range indexes, and missing rows.
GluePredictions read_glue_predictions(const std::filesystem::path& path, const GlueTaskSpec& task, size_t num_examples);

// Metrics of `preds` against the labelled examples (UserError when the examples have no labels).
nlohmann::ordered_json score_glue(const GlueTaskSpec& task, const std::vector<GlueExample>& examples,
                                  const GluePredictions& preds);

}  // namespace bert::tasks
