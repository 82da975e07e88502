#pragma once
// Shared by the tests/test_tasks_*.cpp files: a real FullTokenizer over a small hand-made vocab,
// adapted to the tasks' TaskTokenizer.
#include <memory>
#include <string>
#include <vector>

#include "bert/tasks/task_tokenizer.h"
#include "bert/text/tokenizer.h"

namespace bert::test {

struct SmallTokenizer {
  std::unique_ptr<text::FullTokenizer> full;
  tasks::TaskTokenizer tok;

  explicit SmallTokenizer(const std::vector<std::string>& words, bool lower_case = true) {
    std::vector<std::string> vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    vocab.insert(vocab.end(), words.begin(), words.end());
    text::TokenizerOptions opts;
    opts.lower_case = lower_case;
    full = std::make_unique<text::FullTokenizer>(text::Vocab::from_tokens(vocab), opts);
    tok = tasks::make_task_tokenizer(*full);
  }
};

}  // namespace bert::test
