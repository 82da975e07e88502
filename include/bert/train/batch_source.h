#pragma once
// Where the trainer's micro-batches come from. The trainer only sees this interface: the
// synthetic source here, the HDF5 shard loader later. A source can report and restore its
// position (the data cursor stored in trainer_state.json) so that --resume continues with the
// very next sample.
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "bert/config/fields.h"
#include "bert/data/data_config.h"
#include "bert/model/heads.h"
#include "bert/model/model_config.h"

namespace bert::train {

// One micro-batch in NVIDIA's HDF5 layout (all int64, on the CPU):
//   input_ids, token_type_ids, attention_mask   [batch, seq]
//   masked_lm_positions, masked_lm_ids          [batch, max_pred], zero padded after the last slot
//   next_sentence_labels                        [batch] (0: B follows A, 1: B is random)
// Packed batches (docs/packing.md) hold up to S sequences per row and add
//   position_ids, sequence_index                [batch, seq] (0.. per sequence; 1..k per token, 0 = padding)
//   cls_positions                               [batch, S] ([CLS] of each sequence, 0 when absent)
// with next_sentence_labels [batch, S] (-1 where a row holds fewer than S sequences), masked
// positions relative to the row, and attention_mask still 1 on every real token.
struct PretrainBatch {
  torch::Tensor input_ids, token_type_ids, attention_mask;
  torch::Tensor masked_lm_positions, masked_lm_ids;
  torch::Tensor next_sentence_labels;
  torch::Tensor position_ids, sequence_index, cls_positions;  // packed batches only

  bool packed() const { return sequence_index.defined(); }
  int64_t size() const { return input_ids.size(0); }  // rows
  int64_t seq_len() const { return input_ids.size(1); }
  // Real sequences: rows, or for packed rows the sequences they hold (reads the CPU tensor).
  int64_t sequences() const;
  model::PackedInputs packed_inputs() const { return {position_ids, sequence_index, cls_positions}; }
  PretrainBatch narrow(int64_t rows) const;  // the first `rows` rows
  PretrainBatch to(const torch::Device& d) const;
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // The next micro-batch of `batch_size` sequences; nullopt when the data is exhausted
  // (a finite source ends each epoch this way only when `epochs` is reached).
  virtual std::optional<PretrainBatch> next(int64_t batch_size) = 0;
  // Completed passes over the data (0 for an endless source).
  virtual int64_t epoch() const { return 0; }
  // Position to resume from, and restoring it. UserError when the cursor does not fit this source.
  virtual config::json cursor() const = 0;
  virtual void restore(const config::json& cursor) = 0;
  virtual std::string describe() const = 0;
};

// Random batches with the right shapes: every sequence is full length ([CLS] A [SEP] B [SEP]),
// round(seq * masked_lm_prob) positions (at least 1, at most max_predictions_per_seq) masked
// with [MASK], random NSP labels. Batch i depends only on (seed, i), so the cursor is i.
std::unique_ptr<BatchSource> make_synthetic_source(const DataConfig& data, const ModelConfig& model, int64_t seed);

}  // namespace bert::train
