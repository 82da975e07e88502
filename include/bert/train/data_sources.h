#pragma once
// Batch sources for pretraining built from a RunConfig: the HDF5 loader over data.data_dir
// (training) or data.eval_dir (evaluation), or synthetic batches.
#include <memory>
#include <string>

#include "bert/config/run_config.h"
#include "bert/train/batch_source.h"

namespace bert::train {

// Training batches: data.synthetic -> synthetic, otherwise the HDF5 loader over data.data_dir,
// split by (rank, world) (see bert/data/loader.h). Synthetic batches of rank r use train.seed + r.
// UserError when neither is given.
std::unique_ptr<BatchSource> make_training_source(const RunConfig& cfg, int64_t rank = 0, int64_t world = 1,
                                                  bool pin_memory = false);

// Held-out batches over `dir` (one pass, batches of eval.batch_size or train.micro_batch_size).
// With world > 1 rank r reads its slice of every group of world batches (the trainer reduces
// the metrics); the last incomplete group is dropped.
std::unique_ptr<BatchSource> make_eval_source(const RunConfig& cfg, const std::string& dir, int64_t rank = 0,
                                              int64_t world = 1);

}  // namespace bert::train
