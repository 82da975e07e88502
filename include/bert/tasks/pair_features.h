#pragma once
// Sentence(-pair) classification inputs, as Google's convert_single_example:
//   [CLS] a [SEP] b [SEP]   segment ids 0 ... 0 1 ... 1, mask 1 over real tokens, 0-padded,
// the pair truncated longest-first (ties trim b) to fit max_seq_length; single sentences get
// [CLS] a [SEP].
#include <cstdint>
#include <string>
#include <vector>

#include "bert/tasks/glue.h"
#include "bert/tasks/task_tokenizer.h"

namespace bert::tasks {

struct PairFeature {
  std::vector<std::string> tokens;  // unpadded
  std::vector<int32_t> input_ids, input_mask, segment_ids;  // padded to max_seq_length
  int32_t label_id = -1;  // classification target (-1 = none)
  float score = 0;        // regression target
};

// Pop tokens from the longer list until a.size() + b.size() <= max_length.
void truncate_seq_pair(std::vector<std::string>& a, std::vector<std::string>& b, size_t max_length);

// `b_text` empty and single_sentence: no second segment. UserError if max_seq_length < 3 (2 single).
PairFeature make_pair_feature(const TaskTokenizer& tok, const std::string& a_text, const std::string& b_text,
                              bool single_sentence, int64_t max_seq_length);

std::vector<PairFeature> convert_glue_examples(const GlueTaskSpec& task, const std::vector<GlueExample>& examples,
                                               const TaskTokenizer& tok, int64_t max_seq_length);

}  // namespace bert::tasks
