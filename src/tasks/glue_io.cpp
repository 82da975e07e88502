// GLUE prediction files: writers for dev predictions and the submission format, the reader, scoring.
#include "bert/tasks/glue_io.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/common/strings.h"
#include "bert/tasks/glue_metrics.h"

namespace bert::tasks {

namespace {

std::string format_prediction(const GlueTaskSpec& task, const GluePredictions& preds, size_t i) {
  if (task.regression) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", preds.scores.at(i));
    return buf;
  }
  int32_t id = preds.label_ids.at(i);
  if (id < 0 || id >= task.num_labels())
    throw RuntimeError("prediction " + std::to_string(id) + " is not a " + task.name + " label id");
  return task.labels[static_cast<size_t>(id)];
}

void check_kind(const GlueTaskSpec& task, const GluePredictions& preds) {
  if (task.regression ? !preds.label_ids.empty() : !preds.scores.empty())
    throw RuntimeError(task.name + (task.regression ? " needs scores, not label ids" : " needs label ids, not scores"));
}

}  // namespace

void write_glue_dev_predictions(const std::filesystem::path& path, const GlueTaskSpec& task,
                                const std::vector<GlueExample>& examples, const GluePredictions& preds) {
  check_kind(task, preds);
  if (preds.size() != examples.size())
    throw RuntimeError("got " + std::to_string(preds.size()) + " predictions for " + std::to_string(examples.size()) + " examples");
  std::string out = "index\tprediction\tlabel\n";
  for (size_t i = 0; i < examples.size(); ++i) {
    out += std::to_string(i) + "\t" + format_prediction(task, preds, i) + "\t";
    const auto& ex = examples[i];
    if (ex.has_label) {
      if (task.regression) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.3f", ex.score);
        out += buf;
      } else {
        out += task.labels[static_cast<size_t>(ex.label_id)];
      }
    }
    out += "\n";
  }
  write_file_atomic(path, out);
}

void write_glue_submission(const std::filesystem::path& path, const GlueTaskSpec& task, const GluePredictions& preds) {
  check_kind(task, preds);
  std::string out = "index\tprediction\n";
  for (size_t i = 0; i < preds.size(); ++i) out += std::to_string(i) + "\t" + format_prediction(task, preds, i) + "\n";
  write_file_atomic(path, out);
}

GluePredictions read_glue_predictions(const std::filesystem::path& path, const GlueTaskSpec& task, size_t num_examples) {
  require_file(path, "predictions file");
  std::ifstream in(path, std::ios::binary);
  const std::string file = path.string();
  GluePredictions preds;
  std::vector<bool> seen(num_examples, false);
  if (task.regression)
    preds.scores.assign(num_examples, 0.0);
  else
    preds.label_ids.assign(num_examples, -1);
  int col_index = 0, col_pred = 1;
  std::string line;
  int64_t lineno = 0;
  bool first = true;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (lineno == 1 && starts_with(line, "\xEF\xBB\xBF")) line.erase(0, 3);
    if (line.empty()) continue;
    auto fields = split(line, '\t');
    auto where = [&] { return file + ":" + std::to_string(lineno) + ": "; };
    if (first) {
      first = false;
      if (to_lower_ascii(fields[0]) == "index") {
        col_pred = -1;
        for (size_t i = 0; i < fields.size(); ++i)
          if (to_lower_ascii(fields[i]) == "prediction") col_pred = static_cast<int>(i);
        if (col_pred < 0) throw UserError(where() + "header has no 'prediction' column; expected index<TAB>prediction");
        continue;
      }
    }
    if (static_cast<int>(fields.size()) <= std::max(col_index, col_pred))
      throw UserError(where() + "expected index<TAB>prediction, found " + std::to_string(fields.size()) + " column(s)");
    char* end = nullptr;
    const std::string& idx_s = fields[static_cast<size_t>(col_index)];
    long long idx = std::strtoll(idx_s.c_str(), &end, 10);
    if (idx_s.empty() || *end != '\0') throw UserError(where() + "index '" + idx_s + "' is not an integer");
    if (idx < 0 || static_cast<size_t>(idx) >= num_examples)
      throw UserError(where() + "index " + idx_s + " is outside the dataset's " + std::to_string(num_examples) + " rows");
    if (seen[static_cast<size_t>(idx)]) throw UserError(where() + "index " + idx_s + " appears twice");
    seen[static_cast<size_t>(idx)] = true;
    const std::string p = trim(fields[static_cast<size_t>(col_pred)]);
    if (task.regression) {
      double v = std::strtod(p.c_str(), &end);
      if (p.empty() || *end != '\0') throw UserError(where() + "prediction '" + p + "' is not a number");
      preds.scores[static_cast<size_t>(idx)] = v;
    } else {
      int32_t id = -1;
      for (size_t k = 0; k < task.labels.size(); ++k)
        if (task.labels[k] == p) id = static_cast<int32_t>(k);
      if (id < 0) {
        long v = std::strtol(p.c_str(), &end, 10);
        if (!p.empty() && *end == '\0' && v >= 0 && v < task.num_labels()) id = static_cast<int32_t>(v);
      }
      if (id < 0)
        throw UserError(where() + "prediction '" + p + "' is not a " + task.name + " label (" + join(task.labels, ", ") + ")");
      preds.label_ids[static_cast<size_t>(idx)] = id;
    }
  }
  for (size_t i = 0; i < num_examples; ++i)
    if (!seen[i])
      throw UserError(file + " has no prediction for row " + std::to_string(i) + " of the dataset (" +
                      std::to_string(num_examples) + " rows); predict every row");
  return preds;
}

nlohmann::ordered_json score_glue(const GlueTaskSpec& task, const std::vector<GlueExample>& examples,
                                  const GluePredictions& preds) {
  check_kind(task, preds);
  for (const auto& ex : examples)
    if (!ex.has_label)
      throw UserError("the " + task.name + " dataset has no labels (a test file?); evaluate on the dev file");
  if (task.regression) {
    std::vector<double> gold;
    for (const auto& ex : examples) gold.push_back(ex.score);
    return glue_metrics_regression(task, preds.scores, gold);
  }
  std::vector<int32_t> gold;
  for (const auto& ex : examples) gold.push_back(ex.label_id);
  return glue_metrics(task, preds.label_ids, gold);
}

}  // namespace bert::tasks
