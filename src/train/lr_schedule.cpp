// The learning-rate schedules of include/bert/train/lr_schedule.h.
#include "bert/train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "bert/common/error.h"

namespace bert::train {

LrSchedule::LrSchedule(const OptimizerConfig& cfg, int64_t default_total_steps)
    : kind_(cfg.schedule),
      peak_(cfg.learning_rate),
      end_(cfg.end_learning_rate),
      power_(cfg.power),
      decay_rate_(cfg.decay_rate),
      decay_steps_(cfg.decay_steps) {
  total_ = cfg.total_steps > 0 ? cfg.total_steps : default_total_steps;
  if ((kind_ == "poly" || kind_ == "linear") && total_ <= 0)
    throw UserError("schedule '" + kind_ +
                    "' needs a length: set optimizer.total_steps or train.max_steps (--max-steps)");
  if (kind_ == "table") {
    if (!cfg.lr_table.is_object() || cfg.lr_table.empty())
      throw UserError("schedule 'table' needs optimizer.lr_table, e.g. {\"0\": 1e-4, \"1000\": 5e-5}");
    for (auto it = cfg.lr_table.begin(); it != cfg.lr_table.end(); ++it) {
      int64_t step = -1;
      size_t used = 0;
      try {
        step = std::stoll(it.key(), &used);
      } catch (...) {
        used = 0;
      }
      if (used != it.key().size() || step < 0)
        throw UserError("optimizer.lr_table key '" + it.key() + "' is not a step number");
      if (!it.value().is_number())
        throw UserError("optimizer.lr_table[\"" + it.key() + "\"] must be a number (a learning rate)");
      table_[step] = it.value().get<double>();
    }
    if (table_.begin()->first > 1)
      throw UserError("optimizer.lr_table must start at step 0 or 1 (its first key is " +
                      std::to_string(table_.begin()->first) + ")");
    return;
  }
  if (cfg.warmup_steps > 0)
    warmup_ = cfg.warmup_steps;
  else if (total_ > 0)
    warmup_ = static_cast<int64_t>(std::llround(cfg.warmup_proportion * static_cast<double>(total_)));
  if (kind_ == "linear" && warmup_ >= total_)
    throw UserError("linear schedule: warmup (" + std::to_string(warmup_) + " steps) must be shorter than " +
                    std::to_string(total_) + " total steps");
}

double LrSchedule::operator()(int64_t step) const {
  if (kind_ == "table") {
    auto it = table_.upper_bound(step);
    if (it == table_.begin()) return it->second;
    return std::prev(it)->second;
  }
  if (step < 1) step = 1;
  if (warmup_ > 0 && step <= warmup_) return peak_ * static_cast<double>(step) / static_cast<double>(warmup_);
  if (kind_ == "constant") return peak_;
  if (kind_ == "exp")
    return peak_ * std::exp(-decay_rate_ * static_cast<double>(step - warmup_) / static_cast<double>(decay_steps_));
  int64_t s = std::min(step, total_);
  if (kind_ == "poly") {
    double left = 1.0 - static_cast<double>(s) / static_cast<double>(total_);
    return (peak_ - end_) * std::pow(left, power_) + end_;
  }
  // linear
  return peak_ * std::max(0.0, static_cast<double>(total_ - s) / static_cast<double>(total_ - warmup_));
}

std::string LrSchedule::describe() const {
  std::ostringstream ss;
  if (kind_ == "table") {
    ss << "lr schedule table with " << table_.size() << " entries";
    return ss.str();
  }
  ss << "lr schedule " << kind_ << ": peak " << peak_ << ", warmup " << warmup_ << " steps";
  if (kind_ == "poly") ss << ", power " << power_ << " to " << end_ << " over " << total_ << " steps";
  if (kind_ == "linear") ss << ", to 0 at step " << total_;
  if (kind_ == "exp") ss << ", decay_rate " << decay_rate_ << " per " << decay_steps_ << " steps";
  return ss.str();
}

}  // namespace bert::train
