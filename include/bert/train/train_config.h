#pragma once
// Sections owned by the training engine: train, optimizer, checkpoint.
#include <cstdint>
#include <string>

#include "bert/config/fields.h"

namespace bert {

struct TrainConfig {
  int64_t phase = 1;                 // 1 = seq 128, 2 = seq 512 (NVIDIA's two-phase recipe)
  int64_t seed = 42;
  int64_t global_batch_size = 256;   // sequences per optimizer step across all workers
  int64_t micro_batch_size = 32;     // sequences per forward/backward on one worker
  int64_t max_steps = 0;             // 0: no step limit
  int64_t max_samples = 0;           // 0: no sample limit
  double max_time = 0;               // seconds, 0: no time limit
  int64_t epochs = 0;                // 0: no epoch limit
  std::string precision = "fp32";
  std::string device = "auto";
  int64_t threads = 0;               // 0: LibTorch's default (all cores)
  std::string output_dir = "runs/pretrain";
  double loss_scale = 65536;         // fp16: initial dynamic loss scale
  int64_t loss_scale_window = 2000;  // fp16: finite steps before the scale doubles
  int64_t max_nonfinite_steps = 50;  // abort after this many consecutive non-finite steps

  void describe(config::FieldList& f) {
    f.add("phase", phase, "pretraining phase shown in logs (1: seq 128, 2: seq 512)").range(1, 2);
    f.add("seed", seed, "random seed").range(0, 9e15);
    f.add("global_batch_size", global_batch_size, "sequences per optimizer step, all workers").range(1, 1e9);
    f.add("micro_batch_size", micro_batch_size, "sequences per forward/backward pass").range(1, 1e7);
    f.add("max_steps", max_steps, "stop after this many optimizer steps (0 = no limit)").min(0);
    f.add("max_samples", max_samples, "stop after this many sequences (0 = no limit)").min(0);
    f.add("max_time", max_time, "stop after this many seconds (0 = no limit)").min(0);
    f.add("epochs", epochs, "stop after this many passes over the data (0 = no limit)").min(0);
    f.add("precision", precision, "numeric precision").one_of({"fp32", "bf16", "fp16"});
    f.add("device", device, "device backend").one_of({"auto", "cpu", "cuda", "hpu", "ipu"});
    f.add("threads", threads, "CPU threads (0 = all cores)").range(0, 4096);
    f.add("output_dir", output_dir, "where logs, metrics and checkpoints go");
    f.add("loss_scale", loss_scale, "fp16: initial dynamic loss scale").range(1, 1e30);
    f.add("loss_scale_window", loss_scale_window, "fp16: finite steps before the loss scale doubles").range(1, 1e9);
    f.add("max_nonfinite_steps", max_nonfinite_steps, "abort after this many consecutive non-finite steps")
        .range(1, 1e9);
  }
};

struct OptimizerConfig {
  std::string name = "lamb";
  double learning_rate = 6e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-6;
  double weight_decay = 0.01;
  double max_grad_norm = 1.0;        // global gradient-norm clipping (0 = off)
  std::string schedule = "poly";
  double warmup_proportion = 0.01;   // of the total steps
  int64_t warmup_steps = 0;          // > 0 overrides warmup_proportion
  double power = 0.5;                // polynomial decay power (NVIDIA uses 0.5 with LAMB)
  double end_learning_rate = 0.0;
  double decay_rate = 0.1;           // natural exponential schedule: lr * exp(-decay_rate * step / decay_steps)
  int64_t decay_steps = 1000;
  int64_t total_steps = 0;           // 0: train.max_steps
  config::json lr_table = config::json::object();  // {"step": lr, ...} for schedule "table"
  bool nvlamb = false;               // LAMB trust ratio on every tensor (apex use_nvlamb); default: decayed only

  void describe(config::FieldList& f) {
    f.add("name", name, "optimizer").one_of({"lamb", "adamw"});
    f.add("learning_rate", learning_rate, "peak learning rate").range(0, 1e3);
    f.add("beta1", beta1, "first-moment decay").range(0, 1);
    f.add("beta2", beta2, "second-moment decay").range(0, 1);
    f.add("epsilon", epsilon, "denominator epsilon").range(0, 1);
    f.add("weight_decay", weight_decay, "decoupled weight decay (not on biases/LayerNorm)").range(0, 10);
    f.add("max_grad_norm", max_grad_norm, "global gradient-norm clip (0 = off)").range(0, 1e9);
    f.add("schedule", schedule, "learning-rate schedule")
        .one_of({"poly", "linear", "constant", "exp", "table"});
    f.add("warmup_proportion", warmup_proportion, "warmup as a share of total steps").range(0, 1);
    f.add("warmup_steps", warmup_steps, "warmup steps (overrides warmup_proportion when > 0)").min(0);
    f.add("power", power, "polynomial decay power").range(0, 100);
    f.add("end_learning_rate", end_learning_rate, "learning rate at the last step (poly)").range(0, 1e3);
    f.add("decay_rate", decay_rate, "natural-exponential decay rate").range(0, 1e3);
    f.add("decay_steps", decay_steps, "natural-exponential decay period").range(1, 9e15);
    f.add("total_steps", total_steps, "schedule length (0 = train.max_steps)").min(0);
    f.add("lr_table", lr_table, "step -> learning rate table for schedule 'table'");
    f.add("nvlamb", nvlamb, "LAMB: apply the trust ratio to biases/LayerNorm too (apex use_nvlamb)");
  }
};

struct CheckpointConfig {
  int64_t every_steps = 0;           // 0: off
  int64_t every_samples = 0;         // Intel's num_samples_per_checkpoint (0: off)
  int64_t min_samples_to_start = 0;  // Intel's min_samples_to_start_checkpoints
  int64_t keep_last = 3;             // plus the final one
  bool save_on_signal = true;        // SIGINT/SIGTERM: save, then exit cleanly
  bool save_final = true;
  std::string init_checkpoint;       // weights only
  std::string resume;                // "", "latest" or a checkpoint directory

  void describe(config::FieldList& f) {
    f.add("every_steps", every_steps, "save every N optimizer steps (0 = off)").min(0);
    f.add("every_samples", every_samples, "save every N sequences (0 = off)").min(0);
    f.add("min_samples_to_start", min_samples_to_start, "no periodic saves before this many sequences").min(0);
    f.add("keep_last", keep_last, "periodic checkpoints kept (the final one is always kept)").range(1, 1e6);
    f.add("save_on_signal", save_on_signal, "save a checkpoint on SIGINT/SIGTERM, then exit");
    f.add("save_final", save_final, "save a checkpoint when training ends");
    f.add("init_checkpoint", init_checkpoint, "load weights only from this checkpoint");
    f.add("resume", resume, "continue a run: 'latest' or a checkpoint directory");
  }
};

}  // namespace bert
