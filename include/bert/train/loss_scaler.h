#pragma once
// Dynamic loss scaling for fp16 (torch.cuda.amp.GradScaler's rule): multiply the loss by
// `scale` before backward; a step whose gradients are non-finite is skipped and the scale is
// halved; after `window` finite steps in a row the scale doubles. The run aborts after
// `max_nonfinite` consecutive non-finite steps instead of training on NaN. With scaling off
// (fp32/bf16) the scale stays 1 but non-finite steps are still skipped, counted and bounded.
#include <cstdint>
#include <string>

#include "bert/config/fields.h"

namespace bert::train {

class LossScaler {
 public:
  LossScaler(bool dynamic, double init_scale, int64_t window, int64_t max_nonfinite);

  double scale() const { return scale_; }
  // Record whether this step's gradients were finite. Returns true when the optimizer should
  // apply the step. RuntimeError after max_nonfinite consecutive non-finite steps.
  bool update(bool finite);

  int64_t skipped_steps() const { return skipped_; }
  int64_t consecutive_nonfinite() const { return consecutive_bad_; }

  config::json state() const;
  void load_state(const config::json& j);

 private:
  bool dynamic_;
  double scale_;
  int64_t window_, max_nonfinite_;
  int64_t good_steps_ = 0, skipped_ = 0, consecutive_bad_ = 0;
};

}  // namespace bert::train
