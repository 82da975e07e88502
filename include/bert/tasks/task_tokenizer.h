#pragma once
// What the fine-tuning tasks need from a tokenizer, as plain functions: full WordPiece
// tokenization, the BasicTokenizer pass alone (SQuAD's final-text alignment), and token -> id.
// make_task_tokenizer() adapts bert::text::FullTokenizer; tests can plug in small hand-made ones.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace bert::text {
class FullTokenizer;
}

namespace bert::tasks {

struct TaskTokenizer {
  std::function<std::vector<std::string>(std::string_view)> tokenize;        // WordPiece tokens
  std::function<std::vector<std::string>(std::string_view)> basic_tokenize;  // BasicTokenizer tokens
  std::function<int32_t(const std::string&)> token_id;                       // -1 when not in the vocab
  int32_t cls_id = -1, sep_id = -1, pad_id = 0, unk_id = -1;
  bool lower_case = true;

  int32_t id_or_unk(const std::string& token) const {
    int32_t id = token_id(token);
    return id < 0 ? unk_id : id;
  }
};

// Adapts a FullTokenizer (which must outlive the result). basic_tokenize is a BasicTokenizer with
// the same casing and no never-split tokens, as Google's get_final_text builds it.
TaskTokenizer make_task_tokenizer(const text::FullTokenizer& tok);

}  // namespace bert::tasks
