// Dynamic loss scaling: grow after a window of finite steps, back off on overflow.
#include "bert/train/loss_scaler.h"

#include <algorithm>

#include "bert/common/error.h"

namespace bert::train {

LossScaler::LossScaler(bool dynamic, double init_scale, int64_t window, int64_t max_nonfinite)
    : dynamic_(dynamic), scale_(dynamic ? init_scale : 1.0), window_(window), max_nonfinite_(max_nonfinite) {}

bool LossScaler::update(bool finite) {
  if (finite) {
    consecutive_bad_ = 0;
    if (dynamic_ && ++good_steps_ >= window_) {
      scale_ = std::min(scale_ * 2.0, 1.0e30);
      good_steps_ = 0;
    }
    return true;
  }
  ++skipped_;
  ++consecutive_bad_;
  good_steps_ = 0;
  if (dynamic_) scale_ = std::max(scale_ * 0.5, 1.0e-30);
  if (consecutive_bad_ >= max_nonfinite_)
    throw RuntimeError(std::to_string(consecutive_bad_) +
                       " consecutive steps had non-finite gradients (loss scale " + std::to_string(scale_) +
                       "); training diverged: lower optimizer.learning_rate, or use --precision bf16/fp32");
  return false;
}

config::json LossScaler::state() const {
  return config::json{{"dynamic", dynamic_},          {"scale", scale_},
                      {"good_steps", good_steps_},    {"skipped_steps", skipped_},
                      {"consecutive_nonfinite", consecutive_bad_}};
}

void LossScaler::load_state(const config::json& j) {
  if (!j.is_object()) return;
  if (dynamic_ && j.value("dynamic", false)) scale_ = j.value("scale", scale_);
  good_steps_ = j.value("good_steps", int64_t{0});
  skipped_ = j.value("skipped_steps", int64_t{0});
  consecutive_bad_ = j.value("consecutive_nonfinite", int64_t{0});
}

}  // namespace bert::train
