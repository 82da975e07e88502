#pragma once
// The pretraining loop. A RunConfig drives everything: device and precision, the model, the
// optimizer and its schedule, gradient accumulation (train.global_batch_size /
// train.micro_batch_size), loss scaling, step logs and the metrics file, limits, checkpoints,
// --resume (exact continuation) and --init-checkpoint (weights only).
//
// One optimizer step: `accumulation` micro-batches forward (under autocast for bf16/fp16) and
// backward with the loss divided by the accumulation count (and multiplied by the fp16 loss
// scale); then the global gradient norm and its finite check on the device, one host read of
// that flag, the loss scaler's decision, and the optimizer update with lr = schedule(step).
//
// Data parallel (a launcher's environment with world size > 1, see bert/dist/launch_env.h):
// the trainer joins the process group (Gloo on CPU), broadcasts rank 0's parameters and
// buffers at start and after --resume/--init-checkpoint, and averages the gradients across
// ranks once per optimizer step after the last micro-batch and before the global gradient
// norm, so every rank applies the identical update. train.global_batch_size counts sequences
// of all ranks: accumulation = global / (micro x world). One small all-reduce per step carries
// the step's metrics (averaged over ranks) and the stop votes (a signal on any rank, the time
// limit), so every rank stops at the same step. Rank 0 alone prints the step log and writes
// config.json, metrics and checkpoints; the others wait at a barrier while a checkpoint is
// saved. Dropout RNG: rank r > 0 is seeded with train.seed + r (masking is keyed by sample, not
// rank). With world size 1 every collective is a no-op.
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "bert/config/run_config.h"
#include "bert/device/device.h"
#include "bert/dist/communicator.h"
#include "bert/dist/grad_reducer.h"
#include "bert/model/heads.h"
#include "bert/train/batch_source.h"
#include "bert/train/checkpoint.h"
#include "bert/train/loss_scaler.h"
#include "bert/train/lr_schedule.h"
#include "bert/train/optimizer.h"
#include "bert/train/pretrain_eval.h"

namespace bert::train {

struct TrainerOptions {
  bool write_outputs = true;    // false (bench): no output dir, config, metrics, logs or checkpoints
  bool handle_signals = true;   // SIGINT/SIGTERM finish the step, save, and stop
  bool quiet_setup = false;     // skip the resolved-config table
};

// What one optimizer step produced (values read back from the device).
struct StepStats {
  bool ok = false;           // false: the data ran out before the step completed
  bool applied = false;      // false: skipped for non-finite gradients
  double loss = 0, mlm_loss = 0, nsp_loss = 0, mlm_acc = 0, nsp_acc = 0;
  double lr = 0, grad_norm = 0, loss_scale = 1;
  int64_t sequences = 0, tokens = 0;
  double step_seconds = 0, data_wait_seconds = 0;
  double comm_seconds = 0;   // waiting on collectives (gradient all-reduce, metrics): the exposed part
  double comm_total_seconds = 0;  // collectives in flight, including what overlapped with backward
  int stop_signal = 0;       // a signal arrived on some rank during the step (its number, or -1 if on another rank)
  bool time_up = false;      // train.max_time reached (on any rank)
};

struct TrainSummary {
  int64_t start_step = 0, step = 0, samples = 0, skipped_steps = 0;
  double last_loss = 0, elapsed_s = 0, seq_per_s = 0;
  std::string stop_reason;
  bool interrupted = false;
  std::filesystem::path last_checkpoint;
  bool evaluated = false;
  PretrainEvalResult eval;  // the last evaluation, when evaluated
};

class Trainer {
 public:
  Trainer(RunConfig cfg, std::unique_ptr<BatchSource> source, TrainerOptions opts = {});
  ~Trainer();

  // Train until a limit, the end of the data, or a signal. Saves the final checkpoint.
  TrainSummary run();
  // One optimizer step (used by run() and the benchmark).
  StepStats train_step();
  // Held-out evaluation (data.eval_dir): every eval.every_samples sequences and when training
  // ends; eval.target_mlm_accuracy stops training once reached.
  void set_eval_source(std::unique_ptr<BatchSource> source);
  PretrainEvalResult evaluate();

  int64_t step() const { return step_; }
  int64_t samples() const { return samples_; }
  int64_t accumulation_steps() const { return accum_; }
  int rank() const { return comm_->rank(); }
  int world_size() const { return comm_->world_size(); }
  const Device& device() const { return *device_; }
  model::BertForPreTraining& model() { return model_; }
  const RunConfig& config() const { return cfg_; }
  // Model FLOPs for one sequence, forward + backward:
  //   6 x non-embedding parameters x seq + 12 x layers x hidden x seq^2
  double flops_per_sequence() const;
  int64_t parameter_count(bool include_embeddings) const;

 private:
  void setup_outputs();
  void resume_from(const std::string& spec);
  void init_from(const std::string& spec);
  config::json trainer_state() const;
  void save_checkpoint(bool final);
  void log_step(const StepStats& s);
  // data parallel
  void broadcast_model();
  config::json gather_rank_rng();
  void seed_rank_rng(const config::json& trainer_state);

  RunConfig cfg_;
  std::unique_ptr<BatchSource> source_;
  TrainerOptions opts_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<dist::Communicator> comm_;
  std::unique_ptr<dist::GradientReducer> reducer_;
  model::BertForPreTraining model_{nullptr};
  std::unique_ptr<Optimizer> opt_;
  std::unique_ptr<LrSchedule> schedule_;
  std::unique_ptr<LossScaler> scaler_;
  std::unique_ptr<CheckpointManager> ckpt_;
  std::filesystem::path out_dir_;
  std::ofstream metrics_;
  int64_t accum_ = 1, step_ = 0, samples_ = 0, start_step_ = 0;
  double elapsed_before_ = 0;  // training seconds of earlier runs (resume)
  std::chrono::steady_clock::time_point t_start_;
  // window of the step log
  std::chrono::steady_clock::time_point window_start_;
  int64_t window_steps_ = 0, window_seqs_ = 0, window_tokens_ = 0;
  double window_wait_ = 0, window_comm_ = 0, window_comm_total_ = 0;
  std::filesystem::path last_checkpoint_;
  std::unique_ptr<BatchSource> eval_source_;
  config::json eval_start_;
  int64_t last_eval_samples_ = -1;
};

}  // namespace bert::train
