// Masked-LM prediction choice: Google's create_masked_lm_predictions on token ids.
#include "bert/data/masking.h"

#include <algorithm>
#include <cmath>

namespace bert::data {

MaskedLm create_masked_lm_predictions(std::vector<int32_t>& tokens, const MaskingVocab& vocab,
                                      const MaskingOptions& opts, Rng& rng) {
  // Candidates: [start, end) index ranges (one token each, or one whole word).
  std::vector<std::pair<int32_t, int32_t>> cand;
  cand.reserve(tokens.size());
  for (int32_t i = 0; i < static_cast<int32_t>(tokens.size()); ++i) {
    int32_t t = tokens[i];
    if (t == vocab.cls_id || t == vocab.sep_id) continue;
    bool cont = opts.whole_word_mask && t >= 0 && t < static_cast<int32_t>(vocab.is_continuation.size()) &&
                vocab.is_continuation[t];
    // A continuation joins the previous candidate only if it directly follows it (Google's code
    // joins to the last candidate; [SEP] between them cannot happen for a real ## token after
    // a [SEP], but keep words from spanning a separator).
    if (cont && !cand.empty() && cand.back().second == i)
      cand.back().second = i + 1;
    else
      cand.emplace_back(i, i + 1);
  }
  rng.shuffle(cand);

  const std::vector<int32_t> original = tokens;
  int64_t num_to_predict = std::min<int64_t>(
      opts.max_predictions_per_seq,
      std::max<int64_t>(1, static_cast<int64_t>(std::nearbyint(static_cast<double>(tokens.size()) * opts.masked_lm_prob))));
  // nearbyint rounds half to even, like Python's round()
  MaskedLm out;
  std::vector<uint8_t> covered(tokens.size(), 0);
  int64_t count = 0;
  for (const auto& [b, e] : cand) {
    if (count >= num_to_predict) break;
    if (count + (e - b) > num_to_predict) continue;
    bool any = false;
    for (int32_t i = b; i < e; ++i) any = any || covered[i];
    if (any) continue;
    // 80% [MASK], 10% keep, 10% random; one choice for the whole candidate.
    int mode;  // 0 mask, 1 keep, 2 random
    if (rng.uniform() < 0.8)
      mode = 0;
    else
      mode = rng.uniform() < 0.5 ? 1 : 2;
    for (int32_t i = b; i < e; ++i) {
      covered[i] = 1;
      if (mode == 0)
        tokens[i] = vocab.mask_id;
      else if (mode == 2)
        tokens[i] = static_cast<int32_t>(rng.randint(0, vocab.vocab_size - 1));
      out.positions.push_back(i);
      ++count;
    }
  }
  std::sort(out.positions.begin(), out.positions.end());
  out.labels.reserve(out.positions.size());
  for (int32_t p : out.positions) out.labels.push_back(original[p]);
  return out;
}

}  // namespace bert::data
