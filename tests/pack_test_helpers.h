#pragma once
// Shared by the packing tests: random masked instances in NVIDIA's layout (rows of varied
// length, ascending masked positions, NSP labels), written to HDF5 or turned into a batch.
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <vector>

#include "bert/data/hdf5_io.h"
#include "bert/train/batch_source.h"

namespace bert::test {

// n rows of length L, vocabulary ids in [5, vocab); [CLS] = 1, [SEP] = 2, [MASK] = 3. Lengths are
// uniform in [min_len, L]; up to P masked positions per row (at least 1).
inline data::PretrainRows random_instances(int64_t n, int64_t L, int64_t P, uint32_t seed, int64_t vocab = 100,
                                           int64_t min_len = 6) {
  std::mt19937 g(seed);
  auto uni = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(g); };
  data::PretrainRows r;
  r.resize(n, L, P);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = uni(min_len, L);
    const int64_t a_len = uni(1, len - 4);  // [CLS] A [SEP] B [SEP]
    for (int64_t x = 0; x < len; ++x) {
      r.input_ids[i * L + x] = static_cast<int32_t>(uni(5, vocab - 1));
      r.input_mask[i * L + x] = 1;
      r.segment_ids[i * L + x] = x > a_len + 1 ? 1 : 0;
    }
    r.input_ids[i * L] = 1;
    r.input_ids[i * L + a_len + 1] = 2;
    r.input_ids[i * L + len - 1] = 2;
    std::vector<int64_t> cand;
    for (int64_t x = 1; x < len - 1; ++x)
      if (x != a_len + 1) cand.push_back(x);
    std::shuffle(cand.begin(), cand.end(), g);
    int64_t k = std::min<int64_t>(uni(1, P), static_cast<int64_t>(cand.size()));
    std::sort(cand.begin(), cand.begin() + k);
    for (int64_t j = 0; j < k; ++j) {
      const int64_t p = cand[j];
      r.masked_lm_positions[i * P + j] = static_cast<int32_t>(p);
      r.masked_lm_ids[i * P + j] = r.input_ids[i * L + p];
      r.input_ids[i * L + p] = 3;
    }
    r.next_sentence_labels[i] = static_cast<int32_t>(uni(0, 1));
  }
  return r;
}

inline void write_rows(const std::filesystem::path& p, const data::PretrainRows& r) {
  std::filesystem::create_directories(p.parent_path());
  data::Hdf5Writer w(p, r.rows, r.seq_length, r.max_predictions, true, false, r.max_sequences);
  w.write(0, r);
  w.commit();
}

// All rows as one batch (int64 tensors), packed fields included for packed rows.
inline train::PretrainBatch to_batch(const data::PretrainRows& r) {
  auto t = [&](const std::vector<int32_t>& v, int64_t cols) {
    return torch::tensor(std::vector<int64_t>(v.begin(), v.end()), torch::kLong).view({r.rows, cols});
  };
  const int64_t L = r.seq_length, P = r.max_predictions, S = r.max_sequences;
  train::PretrainBatch b{t(r.input_ids, L), t(r.segment_ids, L), t(r.input_mask, L), t(r.masked_lm_positions, P),
                         t(r.masked_lm_ids, P), S > 0 ? t(r.next_sentence_labels, S) : t(r.next_sentence_labels, 1).view({-1}),
                         {}, {}, {}};
  if (S > 0) {
    b.position_ids = t(r.position_ids, L);
    b.sequence_index = t(r.sequence_index, L);
    b.cls_positions = t(r.cls_positions, S);
  }
  return b;
}

}  // namespace bert::test
