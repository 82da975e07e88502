#pragma once
// Learning-rate schedules as pure functions of the optimizer step.
//
// `step` is the 1-based number of the update about to be applied (the first update is step 1).
// W = warmup steps, T = total steps, peak = optimizer.learning_rate:
//   warmup (all but "table"): step <= W  ->  peak * step / W
//   poly     (NVIDIA/Google):  (peak - end) * (1 - step / T)^power + end    (decays over all of T)
//   linear   (HF):             peak * max(0, (T - step) / (T - W))
//   constant:                  peak
//   exp      (natural exp):    peak * exp(-decay_rate * (step - W) / decay_steps)
//   table    (Graphcore lr_schedule_by_step): value of the largest key <= step (keys are steps)
// Steps past T keep the value at T (poly: end_learning_rate, linear: 0).
#include <cstdint>
#include <map>
#include <string>

#include "bert/train/train_config.h"

namespace bert::train {

class LrSchedule {
 public:
  // `default_total_steps` is used when optimizer.total_steps is 0 (usually train.max_steps).
  // UserError when a decaying schedule has no total, or the table is malformed.
  LrSchedule(const OptimizerConfig& cfg, int64_t default_total_steps);

  double operator()(int64_t step) const;
  int64_t warmup_steps() const { return warmup_; }
  int64_t total_steps() const { return total_; }
  std::string describe() const;  // one line for the log

 private:
  std::string kind_;
  double peak_, end_, power_, decay_rate_;
  int64_t decay_steps_, warmup_ = 0, total_ = 0;
  std::map<int64_t, double> table_;
};

}  // namespace bert::train
