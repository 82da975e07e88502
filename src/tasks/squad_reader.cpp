// Reads SQuAD v1.1 / v2.0 JSON into examples, following Google's read_squad_examples.
#include <spdlog/spdlog.h>

#include "bert/common/error.h"
#include "bert/common/strings.h"
#include "bert/tasks/pytext.h"
#include "bert/tasks/squad.h"
#include "bert/tasks/squad_metrics.h"

namespace bert::tasks {

bool squad_is_whitespace(char32_t c) { return c == U' ' || c == U'\t' || c == U'\r' || c == U'\n' || c == 0x202F; }

void squad_split_context(const std::string& context, std::vector<std::string>& doc_tokens,
                         std::vector<int64_t>& char_to_word_offset) {
  doc_tokens.clear();
  char_to_word_offset.clear();
  bool prev_is_whitespace = true;
  for (char32_t c : utf8_decode(context)) {
    if (squad_is_whitespace(c)) {
      prev_is_whitespace = true;
    } else {
      if (prev_is_whitespace)
        doc_tokens.push_back(utf8_encode(c));
      else
        doc_tokens.back() += utf8_encode(c);
      prev_is_whitespace = false;
    }
    char_to_word_offset.push_back(static_cast<int64_t>(doc_tokens.size()) - 1);
  }
}

namespace {

const ordered_json& member(const ordered_json& obj, const char* key, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key))
    throw UserError(where + " has no \"" + key + "\" field; is this a SQuAD JSON file?");
  return obj[key];
}

std::string string_member(const ordered_json& obj, const char* key, const std::string& where) {
  const auto& v = member(obj, key, where);
  if (!v.is_string()) throw UserError(where + ": \"" + key + "\" is not a string");
  return v.get<std::string>();
}

}  // namespace

std::vector<SquadExample> read_squad_examples(const std::filesystem::path& path, const SquadReadOptions& opts,
                                              SquadReadStats* stats) {
  const std::string file = path.string();
  ordered_json root = load_json_file(path, "SQuAD file");
  SquadReadStats st;
  if (root.is_object() && root.contains("version"))
    st.version = root["version"].is_string() ? root["version"].get<std::string>() : root["version"].dump();
  const auto& data = member(root, "data", file);
  if (!data.is_array()) throw UserError(file + ": \"data\" is not a list; is this a SQuAD JSON file?");

  std::vector<SquadExample> examples;
  std::vector<std::string> doc_tokens;
  std::vector<int64_t> char_to_word;
  for (size_t a = 0; a < data.size(); ++a) {
    std::string where_a = file + " data[" + std::to_string(a) + "]";
    for (const auto& paragraph : member(data[a], "paragraphs", where_a)) {
      std::string context = string_member(paragraph, "context", where_a + " paragraph");
      squad_split_context(context, doc_tokens, char_to_word);
      for (const auto& qa : member(paragraph, "qas", where_a + " paragraph")) {
        SquadExample ex;
        ex.qas_id = string_member(qa, "id", where_a + " question");
        std::string where_q = file + " question " + ex.qas_id;
        ex.question_text = string_member(qa, "question", where_q);
        ex.context = context;
        ex.doc_tokens = doc_tokens;
        ++st.questions;
        if (qa.contains("answers")) {
          for (const auto& ans : qa["answers"]) {
            SquadAnswer sa;
            sa.text = string_member(ans, "text", where_q + " answer");
            const auto& start = member(ans, "answer_start", where_q + " answer");
            if (!start.is_number_integer()) throw UserError(where_q + ": answer_start is not an integer");
            sa.answer_start = start.get<int64_t>();
            ex.answers.push_back(std::move(sa));
          }
        }
        if (opts.version_2) {
          if (qa.contains("is_impossible")) {
            if (!qa["is_impossible"].is_boolean()) throw UserError(where_q + ": is_impossible is not true/false");
            ex.is_impossible = qa["is_impossible"].get<bool>();
          } else {
            ex.is_impossible = ex.answers.empty();
          }
        }
        if (opts.is_training) {
          if (!ex.is_impossible) {
            if (ex.answers.size() != 1)
              throw UserError(where_q + " has " + std::to_string(ex.answers.size()) +
                              " answers; for training each question needs exactly one (use a SQuAD train file)");
            const auto& ans = ex.answers[0];
            int64_t length = static_cast<int64_t>(utf8_decode(ans.text).size());
            int64_t first = ans.answer_start, last = ans.answer_start + length - 1;
            if (length == 0 || first < 0 || last >= static_cast<int64_t>(char_to_word.size()) ||
                char_to_word[static_cast<size_t>(first)] < 0) {
              spdlog::warn("Could not find answer for question {}: offset {} is outside the context", ex.qas_id,
                           ans.answer_start);
              ++st.skipped_bad_answer;
              continue;
            }
            ex.orig_answer_text = ans.text;
            ex.start_position = char_to_word[static_cast<size_t>(first)];
            ex.end_position = char_to_word[static_cast<size_t>(last)];
            std::vector<std::string> span(doc_tokens.begin() + ex.start_position,
                                          doc_tokens.begin() + ex.end_position + 1);
            std::string actual = join(span, " ");
            std::string cleaned = join(py_split(std::string_view(ans.text)), " ");
            if (actual.find(cleaned) == std::string::npos) {
              spdlog::warn("Could not find answer: '{}' vs. '{}'", actual, cleaned);
              ++st.skipped_bad_answer;
              continue;
            }
          } else {
            ex.start_position = -1;
            ex.end_position = -1;
            ex.orig_answer_text.clear();
          }
        }
        examples.push_back(std::move(ex));
      }
    }
  }
  if (stats) *stats = st;
  return examples;
}

}  // namespace bert::tasks
