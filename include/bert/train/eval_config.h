#pragma once
// The eval section: held-out masked-LM / NSP evaluation during pretraining (data.eval_dir).
#include <cstdint>

#include "bert/config/fields.h"

namespace bert {

struct EvalConfig {
  int64_t every_samples = 0;         // 0: only when training ends
  int64_t num_examples = 0;          // 0: the whole eval set
  double target_mlm_accuracy = 0;    // stop once reached (MLPerf: 0.720 for BERT-large); 0 = never
  int64_t batch_size = 0;            // 0: train.micro_batch_size
  bool at_start = false;             // also evaluate before the first step (the untrained baseline)

  void describe(config::FieldList& f) {
    f.add("every_samples", every_samples, "evaluate every N training sequences (0 = at the end)").min(0);
    f.add("num_examples", num_examples, "held-out sequences per evaluation (0 = all)").min(0);
    f.add("target_mlm_accuracy", target_mlm_accuracy, "stop when eval MLM accuracy reaches this (0 = never)")
        .range(0, 1);
    f.add("batch_size", batch_size, "eval batch size (0 = train.micro_batch_size)").min(0);
    f.add("at_start", at_start, "also evaluate before the first step of a run");
  }
};

}  // namespace bert
