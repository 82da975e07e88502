// Instance creation: Google's create_instances_from_document and truncate_seq_pair on ids.
#include "bert/data/instances.h"

#include <algorithm>

namespace bert::data {

void truncate_seq_pair(std::vector<int32_t>& a, std::vector<int32_t>& b, int64_t max_num_tokens, Rng& rng) {
  // Front deletions are counted and applied once at the end (same result, no O(n^2) erase).
  size_t a_front = 0, b_front = 0;
  while (true) {
    size_t la = a.size() - a_front, lb = b.size() - b_front;
    if (static_cast<int64_t>(la + lb) <= max_num_tokens) break;
    bool trunc_a = la > lb;
    if (rng.uniform() < 0.5) {
      (trunc_a ? a_front : b_front) += 1;
    } else {
      (trunc_a ? a : b).pop_back();
    }
  }
  a.erase(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(a_front));
  b.erase(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(b_front));
}

void create_instances_from_document(const std::vector<Document>& all_documents, size_t doc_index,
                                    const InstanceOptions& opts, const MaskingVocab& vocab, Rng& rng,
                                    std::vector<TrainingInstance>& out) {
  const Document& document = all_documents[doc_index];
  const int64_t max_num_tokens = opts.max_seq_length - 3;
  int64_t target_seq_length = max_num_tokens;
  if (rng.uniform() < opts.short_seq_prob) target_seq_length = rng.randint(2, max_num_tokens);

  std::vector<const Sentence*> current_chunk;
  int64_t current_length = 0;
  int64_t i = 0;
  const int64_t n = static_cast<int64_t>(document.size());
  std::vector<int32_t> tokens_a, tokens_b;
  while (i < n) {
    const Sentence& segment = document[i];
    current_chunk.push_back(&segment);
    current_length += static_cast<int64_t>(segment.size());
    if (i == n - 1 || current_length >= target_seq_length) {
      if (!current_chunk.empty()) {
        int64_t chunk = static_cast<int64_t>(current_chunk.size());
        int64_t a_end = 1;
        if (chunk >= 2) a_end = rng.randint(1, chunk - 1);
        tokens_a.clear();
        tokens_b.clear();
        for (int64_t j = 0; j < a_end; ++j) tokens_a.insert(tokens_a.end(), current_chunk[j]->begin(), current_chunk[j]->end());
        bool is_random_next = false;
        if (chunk == 1 || rng.uniform() < 0.5) {
          is_random_next = true;
          int64_t target_b_length = target_seq_length - static_cast<int64_t>(tokens_a.size());
          // Ten tries to find another document (the reference falls back to the last draw).
          int64_t random_document_index = 0;
          for (int t = 0; t < 10; ++t) {
            random_document_index = rng.randint(0, static_cast<int64_t>(all_documents.size()) - 1);
            if (random_document_index != static_cast<int64_t>(doc_index)) break;
          }
          const Document& random_document = all_documents[random_document_index];
          int64_t random_start = rng.randint(0, static_cast<int64_t>(random_document.size()) - 1);
          for (int64_t j = random_start; j < static_cast<int64_t>(random_document.size()); ++j) {
            tokens_b.insert(tokens_b.end(), random_document[j].begin(), random_document[j].end());
            if (static_cast<int64_t>(tokens_b.size()) >= target_b_length) break;
          }
          // Put the unused sentences back.
          i -= chunk - a_end;
        } else {
          for (int64_t j = a_end; j < chunk; ++j)
            tokens_b.insert(tokens_b.end(), current_chunk[j]->begin(), current_chunk[j]->end());
        }
        truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng);
        // The reference asserts both sides are non-empty; empty sentences never reach here
        // (the reader drops them), and truncation keeps at least one token on each side.
        if (!tokens_a.empty() && !tokens_b.empty()) {
          TrainingInstance inst;
          inst.tokens.reserve(tokens_a.size() + tokens_b.size() + 3);
          inst.tokens.push_back(vocab.cls_id);
          inst.tokens.insert(inst.tokens.end(), tokens_a.begin(), tokens_a.end());
          inst.tokens.push_back(vocab.sep_id);
          inst.tokens.insert(inst.tokens.end(), tokens_b.begin(), tokens_b.end());
          inst.tokens.push_back(vocab.sep_id);
          inst.len_a = static_cast<int32_t>(tokens_a.size());
          inst.is_random_next = is_random_next;
          if (opts.masking) inst.lm = create_masked_lm_predictions(inst.tokens, vocab, opts.mask, rng);
          out.push_back(std::move(inst));
        }
      }
      current_chunk.clear();
      current_length = 0;
    }
    ++i;
  }
}

}  // namespace bert::data
