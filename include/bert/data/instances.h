#pragma once
// Training instances from tokenized documents: Google's create_instances_from_document on
// token ids. A document is a list of sentences, each a list of token ids.
//   - max_num_tokens = max_seq_length - 3; with probability short_seq_prob the target length is
//     randint(2, max_num_tokens) instead
//   - sentences accumulate into a chunk until the target is reached (or the document ends); A is
//     the first a_end = randint(1, len(chunk)-1) sentences
//   - B is the rest of the chunk, or (always for one-sentence chunks, else with probability 0.5)
//     text from a random other document, in which case the unused sentences are put back
//   - the pair is truncated to max_num_tokens, one token at a time from the longer side, from
//     the front or the back at random; then [CLS] A [SEP] B [SEP] and masked-LM predictions.
#include <cstdint>
#include <vector>

#include "bert/data/instances_rng.h"
#include "bert/data/masking.h"

namespace bert::data {

using Sentence = std::vector<int32_t>;
using Document = std::vector<Sentence>;

struct InstanceOptions {
  int64_t max_seq_length = 128;
  double short_seq_prob = 0.1;
  bool masking = true;  // false: --no-masking, sequences left intact
  MaskingOptions mask;
};

struct TrainingInstance {
  std::vector<int32_t> tokens;  // [CLS] A [SEP] B [SEP] (masked), unpadded
  int32_t len_a = 0;            // tokens of A (segment 0 is 1 + len_a + 1 tokens)
  bool is_random_next = false;
  MaskedLm lm;
};

// Appends the instances of all_documents[doc_index] to `out`.
void create_instances_from_document(const std::vector<Document>& all_documents, size_t doc_index,
                                    const InstanceOptions& opts, const MaskingVocab& vocab, Rng& rng,
                                    std::vector<TrainingInstance>& out);

// Google's truncate_seq_pair.
void truncate_seq_pair(std::vector<int32_t>& a, std::vector<int32_t>& b, int64_t max_num_tokens, Rng& rng);

}  // namespace bert::data
