// Loss scaler rules, synthetic batches (shapes, determinism, cursor) and checkpoint cadence.
#include <gtest/gtest.h>

#include "bert/common/error.h"
#include "bert/train/batch_source.h"
#include "bert/train/checkpoint.h"
#include "bert/train/loss_scaler.h"

using namespace bert;
using namespace bert::train;

TEST(TrainLossScaler, GrowsBacksOffAndAborts) {
  LossScaler s(true, 1024, 3, 4);
  EXPECT_TRUE(s.update(true));
  EXPECT_TRUE(s.update(true));
  EXPECT_DOUBLE_EQ(s.scale(), 1024);
  EXPECT_TRUE(s.update(true));
  EXPECT_DOUBLE_EQ(s.scale(), 2048);  // window of 3 finite steps
  EXPECT_FALSE(s.update(false));
  EXPECT_DOUBLE_EQ(s.scale(), 1024);
  EXPECT_EQ(s.skipped_steps(), 1);
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.consecutive_nonfinite(), 0);
  EXPECT_FALSE(s.update(false));
  EXPECT_FALSE(s.update(false));
  EXPECT_FALSE(s.update(false));
  EXPECT_THROW(s.update(false), RuntimeError);  // 4th consecutive non-finite step

  LossScaler restored(true, 65536, 3, 4);
  LossScaler a(true, 512, 3, 4);
  a.update(false);
  restored.load_state(a.state());
  EXPECT_DOUBLE_EQ(restored.scale(), 256);
  EXPECT_EQ(restored.skipped_steps(), 1);
}

TEST(TrainLossScaler, StaticScaleStaysOne) {
  LossScaler s(false, 65536, 2, 2);
  EXPECT_DOUBLE_EQ(s.scale(), 1.0);
  EXPECT_FALSE(s.update(false));
  EXPECT_DOUBLE_EQ(s.scale(), 1.0);
  EXPECT_THROW(s.update(false), RuntimeError);
}

TEST(TrainSynthetic, ShapesMaskingAndDeterminism) {
  DataConfig d;
  d.max_seq_length = 32;
  d.max_predictions_per_seq = 6;
  d.masked_lm_prob = 0.15;  // round(32 * 0.15) = 5 masked
  ModelConfig m;
  auto a = make_synthetic_source(d, m, 7);
  auto b = a->next(4).value();
  EXPECT_EQ(b.input_ids.sizes(), (std::vector<int64_t>{4, 32}));
  EXPECT_EQ(b.masked_lm_positions.sizes(), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(b.next_sentence_labels.sizes(), (std::vector<int64_t>{4}));
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(b.input_ids[r][0].item<int64_t>(), 101);
    EXPECT_EQ(b.input_ids[r][31].item<int64_t>(), 102);
    EXPECT_EQ(b.masked_lm_positions[r][5].item<int64_t>(), 0);  // padding after 5 slots
    for (int64_t k = 0; k < 5; ++k) {
      int64_t p = b.masked_lm_positions[r][k].item<int64_t>();
      EXPECT_GT(p, 0);
      EXPECT_EQ(b.input_ids[r][p].item<int64_t>(), 103);
      EXPECT_GE(b.masked_lm_ids[r][k].item<int64_t>(), 999);
      if (k > 0) EXPECT_GT(p, b.masked_lm_positions[r][k - 1].item<int64_t>());
    }
  }
  auto second = a->next(4).value();
  auto cursor = a->cursor();
  auto third = a->next(4).value();
  EXPECT_FALSE(torch::equal(b.input_ids, second.input_ids));

  auto c = make_synthetic_source(d, m, 7);
  EXPECT_TRUE(torch::equal(c->next(4).value().input_ids, b.input_ids));  // same seed, same data
  c->restore(cursor);
  EXPECT_TRUE(torch::equal(c->next(4).value().masked_lm_positions, third.masked_lm_positions));
  EXPECT_THROW(c->restore(config::json{{"source", "hdf5"}}), UserError);
}

TEST(TrainCheckpointCadence, StepsSamplesAndMinimum) {
  CheckpointConfig c;
  c.every_steps = 5;
  CheckpointManager by_steps("/nonexistent", c);
  EXPECT_FALSE(by_steps.due(4, 96, 128));
  EXPECT_TRUE(by_steps.due(5, 128, 160));

  CheckpointConfig s;
  s.every_samples = 100;
  s.min_samples_to_start = 250;
  CheckpointManager by_samples("/nonexistent", s);
  EXPECT_FALSE(by_samples.due(1, 64, 128));   // crosses 100, but before the minimum
  EXPECT_FALSE(by_samples.due(2, 260, 290));  // past the minimum, no multiple of 100 crossed
  EXPECT_TRUE(by_samples.due(3, 256, 320));   // crosses 300
  EXPECT_FALSE(by_samples.due(4, 320, 384));
}
