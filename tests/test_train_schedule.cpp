// Every learning-rate schedule at chosen steps, and the errors for missing lengths/tables.
#include <gtest/gtest.h>

#include <cmath>

#include "bert/common/error.h"
#include "bert/train/lr_schedule.h"

using namespace bert;
using namespace bert::train;

static OptimizerConfig base(const std::string& kind) {
  OptimizerConfig c;
  c.schedule = kind;
  c.learning_rate = 1.0;
  c.warmup_steps = 10;
  return c;
}

TEST(TrainSchedule, PolyWithWarmup) {
  auto c = base("poly");
  c.power = 0.5;
  LrSchedule s(c, 100);
  EXPECT_DOUBLE_EQ(s(1), 0.1);
  EXPECT_DOUBLE_EQ(s(5), 0.5);
  EXPECT_DOUBLE_EQ(s(10), 1.0);
  EXPECT_NEAR(s(11), std::sqrt(1 - 0.11), 1e-12);
  EXPECT_NEAR(s(75), 0.5, 1e-12);  // sqrt(0.25)
  EXPECT_DOUBLE_EQ(s(100), 0.0);
  EXPECT_DOUBLE_EQ(s(150), 0.0);
  c.end_learning_rate = 0.1;
  c.power = 1.0;
  LrSchedule e(c, 100);
  EXPECT_NEAR(e(50), 0.9 * 0.5 + 0.1, 1e-12);
  EXPECT_NEAR(e(100), 0.1, 1e-12);
}

TEST(TrainSchedule, LinearDecaysFromPeakAfterWarmup) {
  LrSchedule s(base("linear"), 110);
  EXPECT_DOUBLE_EQ(s(10), 1.0);
  EXPECT_DOUBLE_EQ(s(60), 0.5);
  EXPECT_DOUBLE_EQ(s(110), 0.0);
  EXPECT_DOUBLE_EQ(s(200), 0.0);
}

TEST(TrainSchedule, WarmupAsProportion) {
  auto c = base("linear");
  c.warmup_steps = 0;
  c.warmup_proportion = 0.1;
  c.total_steps = 200;
  LrSchedule s(c, 999);  // optimizer.total_steps wins over the default
  EXPECT_EQ(s.total_steps(), 200);
  EXPECT_EQ(s.warmup_steps(), 20);
  EXPECT_DOUBLE_EQ(s(10), 0.5);
  EXPECT_DOUBLE_EQ(s(110), 0.5);
}

TEST(TrainSchedule, ConstantAndExp) {
  LrSchedule k(base("constant"), 0);
  EXPECT_DOUBLE_EQ(k(2), 0.2);
  EXPECT_DOUBLE_EQ(k(10000), 1.0);
  auto c = base("exp");
  c.decay_rate = 0.5;
  c.decay_steps = 100;
  LrSchedule e(c, 0);
  EXPECT_DOUBLE_EQ(e(10), 1.0);
  EXPECT_NEAR(e(110), std::exp(-0.5), 1e-12);
  EXPECT_NEAR(e(210), std::exp(-1.0), 1e-12);
}

TEST(TrainSchedule, TableIsPiecewiseConstant) {
  auto c = base("table");
  c.lr_table = config::json::parse(R"({"0": 0.001, "100": 0.0005, "250": 0.0001})");
  LrSchedule t(c, 0);
  EXPECT_DOUBLE_EQ(t(1), 0.001);
  EXPECT_DOUBLE_EQ(t(99), 0.001);
  EXPECT_DOUBLE_EQ(t(100), 0.0005);
  EXPECT_DOUBLE_EQ(t(249), 0.0005);
  EXPECT_DOUBLE_EQ(t(100000), 0.0001);
}

TEST(TrainSchedule, Errors) {
  EXPECT_THROW(LrSchedule(base("poly"), 0), UserError);
  auto c = base("table");
  EXPECT_THROW(LrSchedule(c, 0), UserError);
  c.lr_table = config::json::parse(R"({"ten": 0.1})");
  EXPECT_THROW(LrSchedule(c, 0), UserError);
  c.lr_table = config::json::parse(R"({"50": 0.1})");
  EXPECT_THROW(LrSchedule(c, 0), UserError);
  EXPECT_THROW(LrSchedule(base("linear"), 10), UserError);  // warmup 10 >= total 10
}
