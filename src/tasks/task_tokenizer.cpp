// TaskTokenizer over bert::text::FullTokenizer.
#include "bert/tasks/task_tokenizer.h"

#include <memory>

#include "bert/text/tokenizer.h"

namespace bert::tasks {

TaskTokenizer make_task_tokenizer(const text::FullTokenizer& tok) {
  TaskTokenizer t;
  const text::FullTokenizer* p = &tok;
  auto basic = std::make_shared<text::BasicTokenizer>(tok.options().lower_case, std::vector<std::string>{});
  t.tokenize = [p](std::string_view s) { return p->tokenize(s); };
  t.basic_tokenize = [basic](std::string_view s) { return basic->tokenize(s); };
  t.token_id = [p](const std::string& s) { return p->vocab().id(s); };
  t.cls_id = tok.vocab().cls_id();
  t.sep_id = tok.vocab().sep_id();
  t.pad_id = tok.vocab().pad_id();
  t.unk_id = tok.vocab().unk_id();
  t.lower_case = tok.options().lower_case;
  return t;
}

}  // namespace bert::tasks
