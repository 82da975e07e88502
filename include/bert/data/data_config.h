#pragma once
// The data section: where training data comes from and how it is shaped.
#include <cstdint>
#include <string>

#include "bert/config/fields.h"

namespace bert {

struct DataConfig {
  std::string data_dir;              // directory or glob of HDF5 shards
  std::string eval_dir;              // held-out HDF5 shards
  std::string vocab;                 // vocab.txt: needed to mask shards written with --no-masking
  bool synthetic = false;            // random batches with the right shapes
  int64_t max_seq_length = 128;
  int64_t max_predictions_per_seq = 20;
  double masked_lm_prob = 0.15;      // for synthetic data and dynamic masking
  bool whole_word_mask = false;      // dynamic masking: mask whole words
  int64_t shuffle_buffer = 10000;
  int64_t num_workers = 2;           // loader threads
  int64_t prefetch = 4;              // batches queued ahead

  void describe(config::FieldList& f) {
    f.add("data_dir", data_dir, "directory or glob of HDF5 shards");
    f.add("eval_dir", eval_dir, "directory or glob of held-out HDF5 shards");
    f.add("vocab", vocab, "vocab.txt for masking --no-masking shards on the fly");
    f.add("synthetic", synthetic, "use random synthetic batches");
    f.add("max_seq_length", max_seq_length, "tokens per sequence").range(8, 1 << 16);
    f.add("max_predictions_per_seq", max_predictions_per_seq, "masked positions per sequence").range(1, 1 << 16);
    f.add("masked_lm_prob", masked_lm_prob, "share of tokens masked").range(0, 1);
    f.add("whole_word_mask", whole_word_mask, "dynamic masking: mask whole words");
    f.add("shuffle_buffer", shuffle_buffer, "samples shuffled together (rows per shuffled chunk)").range(1, 1e9);
    f.add("num_workers", num_workers, "loader threads").range(0, 256);
    f.add("prefetch", prefetch, "batches prepared ahead").range(1, 1024);
  }
};

}  // namespace bert
