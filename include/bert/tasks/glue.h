#pragma once
// GLUE tasks: which columns of the tsv files (as the GLUE download script writes them) hold the
// sentences and the label, the label list of each task (STS-B is a regression), and the reader.
// The files are plain tab-separated text: no CSV quoting (quotes are literal), an optional UTF-8
// BOM, CoLA's train/dev without a header, test files without a label column.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bert::tasks {

struct GlueTaskSpec {
  std::string name;                 // "mrpc", "sst-2", "mnli", ...
  std::vector<std::string> labels;  // label strings, id = position; empty for regression
  bool regression = false;
  bool single_sentence = false;
  std::string text_a_column, text_b_column, label_column;  // header names in train/dev files
  bool headerless_train_dev = false;                       // CoLA: no header in train/dev
  int headerless_text_col = -1, headerless_label_col = -1; // columns when there is no header
  std::string primary_metric;                              // metric used to pick the best checkpoint
  int num_labels() const { return regression ? 1 : static_cast<int>(labels.size()); }
};

// Canonical names: cola sst-2 mrpc sts-b qqp mnli mnli-mm qnli rte wnli (case-insensitive;
// "sst2", "stsb" and the GLUE directory names "SST-2", "STS-B" are accepted).
// UserError with the closest name when unknown.
const GlueTaskSpec& glue_task(std::string_view name);
std::vector<std::string> glue_task_names();
bool is_glue_task(std::string_view name);

struct GlueExample {
  int64_t line = 0;          // 1-based line in the file
  std::string guid;          // "<file>-<row>"
  std::string text_a, text_b;
  bool has_label = false;
  int32_t label_id = -1;     // classification
  double score = 0;          // regression (STS-B)
};

struct GlueReadOptions {
  bool skip_malformed = false;  // warn and skip lines with too few columns instead of failing
};

struct GlueReadStats {
  int64_t skipped_malformed = 0;
  bool labeled = false;
};

// Reads a train/dev/test tsv. Test files (no label column) give examples without labels.
// Bad lines: UserError "<file>:<line>: ..." naming the fix.
std::vector<GlueExample> read_glue_tsv(const GlueTaskSpec& task, const std::filesystem::path& path,
                                       const GlueReadOptions& opts = {}, GlueReadStats* stats = nullptr);

// Label string -> id (UserError naming the task's labels when unknown).
int32_t glue_label_id(const GlueTaskSpec& task, std::string_view label);

}  // namespace bert::tasks
