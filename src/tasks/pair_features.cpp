// [CLS] a [SEP] b [SEP] features for GLUE-style classification and regression.
#include "bert/tasks/pair_features.h"

#include "bert/common/error.h"

namespace bert::tasks {

void truncate_seq_pair(std::vector<std::string>& a, std::vector<std::string>& b, size_t max_length) {
  while (a.size() + b.size() > max_length) {
    if (a.size() > b.size())
      a.pop_back();
    else
      b.pop_back();
  }
}

PairFeature make_pair_feature(const TaskTokenizer& tok, const std::string& a_text, const std::string& b_text,
                              bool single_sentence, int64_t max_seq_length) {
  const int64_t specials = single_sentence ? 2 : 3;
  if (max_seq_length < specials + 1)
    throw UserError("max_seq_length " + std::to_string(max_seq_length) + " is too small for [CLS]/[SEP]; use at least " +
                    std::to_string(specials + 1));
  auto a = tok.tokenize(a_text);
  std::vector<std::string> b;
  if (!single_sentence) {
    b = tok.tokenize(b_text);
    truncate_seq_pair(a, b, static_cast<size_t>(max_seq_length - 3));
  } else if (static_cast<int64_t>(a.size()) > max_seq_length - 2) {
    a.resize(static_cast<size_t>(max_seq_length - 2));
  }
  PairFeature f;
  f.tokens.push_back("[CLS]");
  f.input_ids.push_back(tok.cls_id);
  f.segment_ids.push_back(0);
  for (const auto& t : a) {
    f.tokens.push_back(t);
    f.input_ids.push_back(tok.id_or_unk(t));
    f.segment_ids.push_back(0);
  }
  f.tokens.push_back("[SEP]");
  f.input_ids.push_back(tok.sep_id);
  f.segment_ids.push_back(0);
  if (!single_sentence) {
    for (const auto& t : b) {
      f.tokens.push_back(t);
      f.input_ids.push_back(tok.id_or_unk(t));
      f.segment_ids.push_back(1);
    }
    f.tokens.push_back("[SEP]");
    f.input_ids.push_back(tok.sep_id);
    f.segment_ids.push_back(1);
  }
  f.input_mask.assign(f.input_ids.size(), 1);
  const size_t n = static_cast<size_t>(max_seq_length);
  f.input_ids.resize(n, tok.pad_id);
  f.input_mask.resize(n, 0);
  f.segment_ids.resize(n, 0);
  return f;
}

std::vector<PairFeature> convert_glue_examples(const GlueTaskSpec& task, const std::vector<GlueExample>& examples,
                                               const TaskTokenizer& tok, int64_t max_seq_length) {
  std::vector<PairFeature> out;
  out.reserve(examples.size());
  for (const auto& ex : examples) {
    PairFeature f = make_pair_feature(tok, ex.text_a, ex.text_b, task.single_sentence, max_seq_length);
    if (ex.has_label) {
      f.label_id = task.regression ? -1 : ex.label_id;
      f.score = static_cast<float>(ex.score);
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace bert::tasks
