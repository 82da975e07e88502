#pragma once
// Masked-LM predictions, Google's create_masked_lm_predictions: candidates are every token but
// [CLS]/[SEP] (with whole-word masking, a word and its ## continuations form one candidate),
// shuffled; num_to_predict = min(max_predictions, max(1, round(len * masked_lm_prob)));
// candidates are taken while they fit; each chosen candidate becomes [MASK] 80%, stays 10%,
// becomes a random vocab id 10%. With whole-word masking that choice is made once per word
// (the random replacement is drawn per token). Positions come out sorted.
#include <cstdint>
#include <vector>

#include "bert/data/instances_rng.h"

namespace bert::data {

struct MaskingVocab {
  int32_t cls_id = -1, sep_id = -1, mask_id = -1;
  int32_t vocab_size = 0;
  std::vector<uint8_t> is_continuation;  // per id: token starts with "##"
};

struct MaskingOptions {
  double masked_lm_prob = 0.15;
  int64_t max_predictions_per_seq = 20;
  bool whole_word_mask = false;
};

struct MaskedLm {
  std::vector<int32_t> positions;  // sorted
  std::vector<int32_t> labels;     // original ids at those positions
};

// Masks `tokens` ([CLS] A [SEP] B [SEP], ids) in place and returns the predictions.
MaskedLm create_masked_lm_predictions(std::vector<int32_t>& tokens, const MaskingVocab& vocab,
                                      const MaskingOptions& opts, Rng& rng);

}  // namespace bert::data
