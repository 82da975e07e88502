#pragma once
// Evaluation of a pretraining model on held-out data: masked-LM accuracy counted over every
// masked token (token-weighted, as MLPerf counts it), NSP accuracy, and the two losses (means
// over tokens and sequences). Runs in eval mode (no dropout) without gradients, under the
// run's autocast, and leaves the model in the mode it found it.
#include <cstdint>
#include <string>

#include "bert/config/fields.h"
#include "bert/device/device.h"
#include "bert/model/heads.h"
#include "bert/train/batch_source.h"

namespace bert::train {

struct PretrainEvalResult {
  int64_t sequences = 0;
  int64_t masked_tokens = 0;
  double mlm_accuracy = 0, nsp_accuracy = 0;
  double mlm_loss = 0, nsp_loss = 0;
  double seconds = 0;
  config::json to_json() const;
  std::string summary() const;  // one line
};

// Consumes up to `max_sequences` sequences (0 = until the source ends) in batches of `batch`.
PretrainEvalResult evaluate_pretraining(model::BertForPreTraining& model, BatchSource& source, int64_t batch,
                                        int64_t max_sequences, const Device& device, const std::string& precision);

}  // namespace bert::train
