// GLUE task table and tsv reader.
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <fstream>
#include <map>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/common/strings.h"
#include "bert/tasks/glue.h"

namespace bert::tasks {

namespace {

std::vector<GlueTaskSpec> make_tasks() {
  std::vector<GlueTaskSpec> t;
  auto add = [&](std::string name, std::vector<std::string> labels, std::string a, std::string b, std::string label,
                 std::string metric) {
    GlueTaskSpec s;
    s.name = std::move(name);
    s.labels = std::move(labels);
    s.regression = s.labels.empty();
    s.text_a_column = std::move(a);
    s.text_b_column = std::move(b);
    s.single_sentence = s.text_b_column.empty();
    s.label_column = std::move(label);
    s.primary_metric = std::move(metric);
    t.push_back(std::move(s));
    return &t.back();
  };
  auto* cola = add("cola", {"0", "1"}, "sentence", "", "label", "mcc");
  cola->headerless_train_dev = true;
  cola->headerless_text_col = 3;
  cola->headerless_label_col = 1;
  add("sst-2", {"0", "1"}, "sentence", "", "label", "acc");
  add("mrpc", {"0", "1"}, "#1 String", "#2 String", "Quality", "f1");
  add("sts-b", {}, "sentence1", "sentence2", "score", "corr");
  add("qqp", {"0", "1"}, "question1", "question2", "is_duplicate", "f1");
  add("mnli", {"contradiction", "entailment", "neutral"}, "sentence1", "sentence2", "gold_label", "acc");
  add("mnli-mm", {"contradiction", "entailment", "neutral"}, "sentence1", "sentence2", "gold_label", "acc");
  add("qnli", {"entailment", "not_entailment"}, "question", "sentence", "label", "acc");
  add("rte", {"entailment", "not_entailment"}, "sentence1", "sentence2", "label", "acc");
  add("wnli", {"0", "1"}, "sentence1", "sentence2", "label", "acc");
  return t;
}

const std::vector<GlueTaskSpec>& tasks() {
  static const std::vector<GlueTaskSpec> t = make_tasks();
  return t;
}

std::string canonical(std::string_view name) {
  std::string n = to_lower_ascii(name);
  static const std::map<std::string, std::string> aliases = {
      {"sst2", "sst-2"}, {"stsb", "sts-b"}, {"mnli-m", "mnli"}, {"mnli_mm", "mnli-mm"}, {"mnlimm", "mnli-mm"},
      {"sst_2", "sst-2"}, {"sts_b", "sts-b"}};
  auto it = aliases.find(n);
  return it == aliases.end() ? n : it->second;
}

}  // namespace

std::vector<std::string> glue_task_names() {
  std::vector<std::string> names;
  for (const auto& t : tasks()) names.push_back(t.name);
  return names;
}

bool is_glue_task(std::string_view name) {
  std::string n = canonical(name);
  for (const auto& t : tasks())
    if (t.name == n) return true;
  return false;
}

const GlueTaskSpec& glue_task(std::string_view name) {
  std::string n = canonical(name);
  for (const auto& t : tasks())
    if (t.name == n) return t;
  throw UserError("unknown GLUE task '" + std::string(name) + "'" + did_you_mean(n, glue_task_names()) +
                  "; choose one of " + join(glue_task_names(), ", "));
}

int32_t glue_label_id(const GlueTaskSpec& task, std::string_view label) {
  for (size_t i = 0; i < task.labels.size(); ++i)
    if (task.labels[i] == label) return static_cast<int32_t>(i);
  throw UserError("label '" + std::string(label) + "' is not a " + task.name + " label (" + join(task.labels, ", ") + ")");
}

std::vector<GlueExample> read_glue_tsv(const GlueTaskSpec& task, const std::filesystem::path& path,
                                       const GlueReadOptions& opts, GlueReadStats* stats) {
  require_file(path, task.name + " tsv file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot read " + path.string() + "; check its permissions");
  const std::string file = path.string();
  GlueReadStats st;
  std::vector<GlueExample> out;

  std::string line;
  int64_t lineno = 0;
  bool header_seen = false;
  int col_a = -1, col_b = -1, col_label = -1;
  bool label_is_last = false;
  size_t needed = 0;
  int64_t row = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (lineno == 1 && starts_with(line, "\xEF\xBB\xBF")) line.erase(0, 3);
    if (line.empty()) continue;
    std::vector<std::string> fields = split(line, '\t');

    if (!header_seen) {
      header_seen = true;
      bool headerless = task.headerless_train_dev && fields[0] != "index" && fields[0] != "id";
      if (headerless) {
        col_a = task.headerless_text_col;
        col_label = task.headerless_label_col;
      } else {
        auto find = [&](const std::string& name) -> int {
          for (size_t i = 0; i < fields.size(); ++i)
            if (fields[i] == name) return static_cast<int>(i);
          return -1;
        };
        col_a = find(task.text_a_column);
        col_b = task.single_sentence ? -1 : find(task.text_b_column);
        col_label = find(task.label_column);
        if (col_a < 0 || (!task.single_sentence && col_b < 0))
          throw UserError(file + ":1: header lacks the '" + (col_a < 0 ? task.text_a_column : task.text_b_column) +
                          "' column; is this a " + task.name + " tsv from the GLUE download script?");
        label_is_last = col_label >= 0 && col_label == static_cast<int>(fields.size()) - 1;
      }
      st.labeled = col_label >= 0;
      needed = static_cast<size_t>(std::max({col_a, col_b, col_label})) + 1;
      if (!headerless) continue;
    }

    if (fields.size() < needed) {
      std::string msg = file + ":" + std::to_string(lineno) + ": expected at least " + std::to_string(needed) +
                        " tab-separated columns, found " + std::to_string(fields.size());
      if (opts.skip_malformed) {
        spdlog::warn("{}; skipped", msg);
        ++st.skipped_malformed;
        continue;
      }
      throw UserError(msg + "; fix the line or re-download the task");
    }
    GlueExample ex;
    ex.line = lineno;
    ex.guid = path.filename().string() + "-" + std::to_string(row++);
    ex.text_a = fields[static_cast<size_t>(col_a)];
    if (col_b >= 0) ex.text_b = fields[static_cast<size_t>(col_b)];
    if (col_label >= 0) {
      const std::string& label = label_is_last ? fields.back() : fields[static_cast<size_t>(col_label)];
      ex.has_label = true;
      if (task.regression) {
        char* end = nullptr;
        ex.score = std::strtod(label.c_str(), &end);
        if (label.empty() || end != label.c_str() + label.size())
          throw UserError(file + ":" + std::to_string(lineno) + ": score '" + label + "' is not a number");
      } else {
        try {
          ex.label_id = glue_label_id(task, label);
        } catch (const UserError& e) {
          throw UserError(file + ":" + std::to_string(lineno) + ": " + e.what());
        }
      }
    }
    out.push_back(std::move(ex));
  }
  if (!header_seen) throw UserError(file + " is empty; expected a " + task.name + " tsv file");
  if (stats) *stats = st;
  return out;
}

}  // namespace bert::tasks
