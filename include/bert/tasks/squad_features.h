#pragma once
// SQuAD examples -> model inputs, as Google's convert_examples_to_features: WordPiece over each
// whitespace word (tok_to_orig / orig_to_tok maps), the improved answer span, sliding windows
// ("doc spans") of the document with `doc_stride`, [CLS] query [SEP] window [SEP] with segment ids
// and mask, token_is_max_context for every window token, and the training target per window.
#include <cstdint>
#include <string>
#include <vector>

#include "bert/tasks/squad.h"
#include "bert/tasks/task_tokenizer.h"

namespace bert::tasks {

struct SquadFeatureOptions {
  int64_t max_seq_length = 384;
  int64_t doc_stride = 128;
  int64_t max_query_length = 64;
  bool is_training = false;
  bool version_2 = false;
  // v1.1 training windows that do not contain the answer are dropped; Google's code instead
  // trains them on [CLS] (0, 0) — set this to do that. v2.0 always trains them on [CLS].
  bool keep_out_of_span_v1 = false;
};

struct SquadFeature {
  int64_t unique_id = 0;      // 1000000000, 1000000001, ... as in the reference
  int64_t example_index = 0;  // index into the examples
  int64_t doc_span_index = 0;
  std::vector<std::string> tokens;             // unpadded
  std::vector<int64_t> token_to_orig_map;      // per token: doc word index, -1 outside the window
  std::vector<uint8_t> token_is_max_context;   // per token: 1 when this window is its best context
  std::vector<int32_t> input_ids, input_mask, segment_ids;  // padded to max_seq_length
  int64_t start_position = 0, end_position = 0;             // training target (0, 0 = [CLS])
  bool is_impossible = false;                               // target is [CLS]
};

struct SquadFeatureStats {
  int64_t features = 0;
  int64_t dropped_out_of_span = 0;  // v1.1 training windows without the answer
};

struct DocSpan {
  int64_t start = 0, length = 0;
};

// Windows over `num_tokens` document tokens, at most `max_tokens` long, moving by `stride`.
std::vector<DocSpan> make_doc_spans(int64_t num_tokens, int64_t max_tokens, int64_t stride);
// Whether `cur` is the window where `position` has the most context (min of left/right context,
// plus 0.01 * window length; the first best wins).
bool check_is_max_context(const std::vector<DocSpan>& spans, size_t cur, int64_t position);
// Google's _improve_answer_span: the sub-span of [start, end] whose tokens join to the tokenised answer.
std::pair<int64_t, int64_t> improve_answer_span(const std::vector<std::string>& doc_tokens, int64_t start,
                                                int64_t end, const TaskTokenizer& tok,
                                                const std::string& orig_answer_text);

// UserError when the options leave no room for the document (max_seq_length too small).
std::vector<SquadFeature> convert_squad_examples(const std::vector<SquadExample>& examples,
                                                 const TaskTokenizer& tok, const SquadFeatureOptions& opts,
                                                 SquadFeatureStats* stats = nullptr);

}  // namespace bert::tasks
