// The pretraining loop: setup (device, model, optimizer, resume/init), the step, logs, limits,
// checkpoints and signal handling.
#include "bert/train/trainer.h"

#include "bert/io/convert.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <cmath>
#include <csignal>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/common/logging.h"
#include "bert/common/strings.h"
#include "bert/io/weights.h"

namespace bert::train {

using config::json;
using Clock = std::chrono::steady_clock;

namespace {

std::atomic<int> g_signal{0};
extern "C" void on_signal(int sig) { g_signal.store(sig); }

// Installs the SIGINT/SIGTERM handlers for the trainer's lifetime; restores the old ones after.
struct SignalGuard {
  struct sigaction old_int {}, old_term {};
  bool active = false;
  explicit SignalGuard(bool on) : active(on) {
    if (!active) return;
    g_signal.store(0);
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
  }
  ~SignalGuard() {
    if (!active) return;
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
  }
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

Trainer::Trainer(RunConfig cfg, std::unique_ptr<BatchSource> source, TrainerOptions opts)
    : cfg_(std::move(cfg)), source_(std::move(source)), opts_(opts) {
  const auto& t = cfg_.train;
  configure_threads(t.threads);
  device_ = select_device(t.device, t.precision);
  accum_ = t.global_batch_size / t.micro_batch_size;
  if (opts_.write_outputs) setup_outputs();

  torch::manual_seed(static_cast<uint64_t>(t.seed));
  model_ = model::BertForPreTraining(cfg_.model);
  model_->to(device_->torch_device());
  model_->train();
  NamedTensors params;
  for (auto& p : model_->named_parameters(/*recurse=*/true))
    if (p.value().requires_grad()) params.emplace_back(p.key(), p.value());
  opt_ = std::make_unique<Optimizer>(params, cfg_.optimizer);
  schedule_ = std::make_unique<LrSchedule>(cfg_.optimizer, t.max_steps);
  scaler_ = std::make_unique<LossScaler>(t.precision == "fp16", t.loss_scale, t.loss_scale_window,
                                         t.max_nonfinite_steps);
  if (opts_.write_outputs) ckpt_ = std::make_unique<CheckpointManager>(out_dir_, cfg_.checkpoint);

  if (!cfg_.checkpoint.resume.empty() && !cfg_.checkpoint.init_checkpoint.empty())
    throw UserError("--resume and --init-checkpoint exclude each other: resume continues a run (weights, "
                    "optimizer, schedule, data position); init-checkpoint loads weights only");
  if (!cfg_.checkpoint.resume.empty()) resume_from(cfg_.checkpoint.resume);
  if (!cfg_.checkpoint.init_checkpoint.empty()) init_from(cfg_.checkpoint.init_checkpoint);

  spdlog::info("device {} ({}), precision {}", device_->name(), device_->description(), t.precision);
  spdlog::info("model: {} layers, hidden {}, {} parameters ({} without embeddings)", cfg_.model.num_hidden_layers,
               cfg_.model.hidden_size, human_count(static_cast<double>(parameter_count(true))),
               human_count(static_cast<double>(parameter_count(false))));
  spdlog::info("batch: global {} = micro {} x {} accumulation steps (1 worker)", t.global_batch_size,
               t.micro_batch_size, accum_);
  spdlog::info("optimizer {}; {}", cfg_.optimizer.name, schedule_->describe());
  spdlog::info("{}", source_->describe());
}

Trainer::~Trainer() = default;

void Trainer::setup_outputs() {
  out_dir_ = cfg_.train.output_dir;
  ensure_writable_dir(out_dir_);
  if (!cfg_.logging.log_file.empty()) add_log_file(out_dir_ / cfg_.logging.log_file);
  if (!opts_.quiet_setup) spdlog::info("resolved config:\n{}", config_table(cfg_));
  save_config(cfg_, out_dir_);
  if (!cfg_.logging.metrics_file.empty()) {
    metrics_.open(out_dir_ / cfg_.logging.metrics_file, std::ios::app);
    if (!metrics_) throw UserError("cannot open metrics file " + (out_dir_ / cfg_.logging.metrics_file).string());
  }
}

int64_t Trainer::parameter_count(bool include_embeddings) const {
  int64_t n = 0;
  for (auto& p : model_->named_parameters(true)) {
    if (!include_embeddings && p.key().find("embeddings.") != std::string::npos &&
        ends_with(p.key(), "_embeddings.weight"))
      continue;
    n += p.value().numel();
  }
  return n;
}

double Trainer::flops_per_sequence() const {
  double seq = static_cast<double>(cfg_.data.max_seq_length);
  return 6.0 * static_cast<double>(parameter_count(false)) * seq +
         12.0 * static_cast<double>(cfg_.model.num_hidden_layers) * static_cast<double>(cfg_.model.hidden_size) *
             seq * seq;
}

void Trainer::resume_from(const std::string& spec) {
  fs::path dir = resolve_checkpoint(spec, cfg_.train.output_dir);
  auto c = read_checkpoint(dir);
  auto report = io::load_weights_file(*model_, dir / "model.safetensors");
  if (!report.missing.empty() || !report.unexpected.empty())
    throw UserError("checkpoint " + dir.string() + " does not match this model (" +
                    std::to_string(report.missing.size()) + " missing, " + std::to_string(report.unexpected.size()) +
                    " unexpected keys); use --init-checkpoint to load what fits");
  opt_->load_state(c.optimizer_tensors, c.optimizer_meta, dir.string());
  const json& st = c.trainer_state;
  step_ = start_step_ = st.value("step", int64_t{0});
  samples_ = st.value("samples", int64_t{0});
  elapsed_before_ = st.value("elapsed_s", 0.0);
  if (st.value("global_batch_size", cfg_.train.global_batch_size) != cfg_.train.global_batch_size)
    spdlog::warn("resuming with train.global_batch_size {} (the checkpoint used {}): the continuation is not exact",
                 cfg_.train.global_batch_size, st.value("global_batch_size", int64_t{0}));
  if (st.contains("loss_scaler")) scaler_->load_state(st["loss_scaler"]);
  if (st.contains("data_cursor")) source_->restore(st["data_cursor"]);
  restore_rng_state(st.value("rng", json::object()), dir.string());
  spdlog::info("resumed from {}: step {}, {} samples", dir.string(), step_, samples_);
}

void Trainer::init_from(const std::string& spec) {
  // any format: our checkpoints, HF directories, Google TF checkpoints, NVIDIA .pt files
  io::init_from_checkpoint(*model_, cfg_.model, spec);  // logs the report; shape mismatches throw
  spdlog::info("initialised weights from {} (new optimizer and schedule)", spec);
}

json Trainer::trainer_state() const {
  json j = json::object();
  j["format"] = "bert-train trainer state v1";
  j["step"] = step_;
  j["samples"] = samples_;
  j["phase"] = cfg_.train.phase;
  j["epoch"] = source_->epoch();
  j["global_batch_size"] = cfg_.train.global_batch_size;
  j["micro_batch_size"] = cfg_.train.micro_batch_size;
  j["seed"] = cfg_.train.seed;
  j["optimizer_steps"] = opt_->step_count();
  j["scheduler"] = {{"schedule", cfg_.optimizer.schedule},
                    {"step", step_},
                    {"lr", (*schedule_)(std::max<int64_t>(step_, 1))},
                    {"warmup_steps", schedule_->warmup_steps()},
                    {"total_steps", schedule_->total_steps()}};
  j["loss_scaler"] = scaler_->state();
  j["rng"] = capture_rng_state();
  j["data_cursor"] = source_->cursor();
  j["elapsed_s"] = elapsed_before_ + seconds_since(t_start_);
  return j;
}

void Trainer::save_checkpoint(bool final) {
  if (!ckpt_) return;
  last_checkpoint_ = ckpt_->save(step_, *model_, cfg_.model, *opt_, trainer_state(), cfg_.to_json(), final);
}

StepStats Trainer::train_step() {
  StepStats s;
  auto t0 = Clock::now();
  const auto dev = device_->torch_device();
  const double scale = scaler_->scale();
  const std::string& precision = cfg_.train.precision;
  torch::Tensor loss_sum, mlm_sum, nsp_sum, mlm_ok, mlm_n, nsp_ok, nsp_n;
  for (int64_t a = 0; a < accum_; ++a) {
    auto tw = Clock::now();
    auto batch = source_->next(cfg_.train.micro_batch_size);
    s.data_wait_seconds += seconds_since(tw);
    if (!batch) {
      opt_->zero_grad();
      return s;  // ok = false
    }
    s.sequences += batch->sequences();  // packed rows: the real sequences they hold
    s.tokens += batch->attention_mask.sum().item<int64_t>();
    auto b = batch->to(dev);
    model::PreTrainingOutput out;
    {
      AutocastScope autocast(*device_, precision);
      out = model_->forward(b.input_ids, b.token_type_ids, b.attention_mask, b.masked_lm_positions, b.packed_inputs());
    }
    auto l = model_->loss(out, b.masked_lm_ids, b.next_sentence_labels);
    (l.total_loss * (scale / static_cast<double>(accum_))).backward();
    auto add = [](torch::Tensor& acc, const torch::Tensor& v) {
      acc = acc.defined() ? acc + v.detach() : v.detach().clone();
    };
    add(loss_sum, l.total_loss);
    add(mlm_sum, l.mlm_loss);
    add(nsp_sum, l.nsp_loss);
    add(mlm_ok, l.mlm_correct);
    add(mlm_n, l.mlm_count);
    add(nsp_ok, l.nsp_correct);
    add(nsp_n, l.nsp_count);
  }
  auto norm = opt_->global_grad_norm(scale);
  // The one host synchronisation of the step: was every gradient finite?
  bool finite = torch::isfinite(norm).item<bool>();
  s.applied = scaler_->update(finite);
  s.lr = (*schedule_)(step_ + 1);
  if (s.applied) opt_->step(s.lr, norm, scale);
  opt_->zero_grad();
  ++step_;
  samples_ += s.sequences;
  s.ok = true;
  s.loss_scale = scale;
  // Read back the step's numbers (already computed; this does not wait on anything new).
  auto vals = torch::stack({loss_sum.to(torch::kDouble) / accum_, mlm_sum.to(torch::kDouble) / accum_,
                            nsp_sum.to(torch::kDouble) / accum_, mlm_ok.to(torch::kDouble),
                            mlm_n.to(torch::kDouble), nsp_ok.to(torch::kDouble), nsp_n.to(torch::kDouble),
                            norm.to(torch::kDouble)})
                  .to(torch::kCPU);
  auto* v = vals.data_ptr<double>();
  s.loss = v[0];
  s.mlm_loss = v[1];
  s.nsp_loss = v[2];
  s.mlm_acc = v[4] > 0 ? v[3] / v[4] : 0;
  s.nsp_acc = v[6] > 0 ? v[5] / v[6] : 0;
  s.grad_norm = v[7];
  s.step_seconds = seconds_since(t0);
  return s;
}

void Trainer::log_step(const StepStats& s) {
  double win = seconds_since(window_start_);
  double seq_s = win > 0 ? static_cast<double>(window_seqs_) / win : 0;
  double tok_s = win > 0 ? static_cast<double>(window_tokens_) / win : 0;
  double step_ms = window_steps_ > 0 ? 1000.0 * win / static_cast<double>(window_steps_) : 0;
  double wait_ms = window_steps_ > 0 ? 1000.0 * window_wait_ / static_cast<double>(window_steps_) : 0;
  std::string eta;
  int64_t max_steps = cfg_.train.max_steps;
  if (max_steps > 0 && step_ < max_steps && step_ms > 0)
    eta = ", eta " + human_duration(static_cast<double>(max_steps - step_) * step_ms / 1000.0);
  std::string of = max_steps > 0 ? "/" + std::to_string(max_steps) : "";
  spdlog::info(
      "phase {} step {}{} | samples {} | loss {:.4f} (mlm {:.4f}, nsp {:.4f}) | mlm acc {:.3f} nsp acc {:.3f} | lr {:.3e} | "
      "grad norm {:.3f} | scale {:g} | {:.1f} seq/s {:.0f} tok/s | {:.0f} ms/step (data {:.1f} ms){}{}",
      cfg_.train.phase, step_, of, samples_, s.loss, s.mlm_loss, s.nsp_loss, s.mlm_acc, s.nsp_acc, s.lr, s.grad_norm, s.loss_scale,
      seq_s, tok_s, step_ms, wait_ms, s.applied ? "" : " | SKIPPED (non-finite gradients)", eta);
  if (metrics_.is_open()) {
    json j = json::object();
    j["step"] = step_;
    j["phase"] = cfg_.train.phase;
    j["samples"] = samples_;
    j["epoch"] = source_->epoch();
    j["loss"] = s.loss;
    j["mlm_loss"] = s.mlm_loss;
    j["nsp_loss"] = s.nsp_loss;
    j["mlm_acc"] = s.mlm_acc;
    j["nsp_acc"] = s.nsp_acc;
    j["lr"] = s.lr;
    j["grad_norm"] = std::isfinite(s.grad_norm) ? json(s.grad_norm) : json(nullptr);
    j["loss_scale"] = s.loss_scale;
    j["skipped_steps"] = scaler_->skipped_steps();
    j["seq_per_s"] = seq_s;
    j["tokens_per_s"] = tok_s;
    j["step_time_ms"] = step_ms;
    j["data_wait_ms"] = wait_ms;
    j["elapsed_s"] = elapsed_before_ + seconds_since(t_start_);
    metrics_ << j.dump() << "\n";
    metrics_.flush();
  }
  window_start_ = Clock::now();
  window_steps_ = window_seqs_ = window_tokens_ = 0;
  window_wait_ = 0;
}

void Trainer::set_eval_source(std::unique_ptr<BatchSource> source) {
  eval_source_ = std::move(source);
  eval_start_ = eval_source_->cursor();
  spdlog::info("eval data: {}", eval_source_->describe());
}

PretrainEvalResult Trainer::evaluate() {
  if (!eval_source_) throw RuntimeError("no eval data set (data.eval_dir)");
  eval_source_->restore(eval_start_);
  int64_t batch = cfg_.eval.batch_size > 0 ? cfg_.eval.batch_size : cfg_.train.micro_batch_size;
  PretrainEvalResult r = evaluate_pretraining(model_, *eval_source_, batch, cfg_.eval.num_examples, *device_,
                                              cfg_.train.precision);
  last_eval_samples_ = samples_;
  spdlog::info("phase {} step {} | {}", cfg_.train.phase, step_, r.summary());
  if (metrics_.is_open()) {
    json j = r.to_json();
    j["step"] = step_;
    j["samples"] = samples_;
    j["phase"] = cfg_.train.phase;
    metrics_ << j.dump() << "\n";
    metrics_.flush();
  }
  return r;
}

TrainSummary Trainer::run() {
  const auto& t = cfg_.train;
  SignalGuard guard(opts_.handle_signals && cfg_.checkpoint.save_on_signal);
  TrainSummary sum;
  sum.start_step = step_;
  const int64_t start_samples = samples_;
  t_start_ = window_start_ = Clock::now();
  if (t.max_steps == 0 && t.max_samples == 0 && t.max_time == 0 && t.epochs == 0)
    spdlog::warn("no limit set (--max-steps, --max-samples, --max-time, --epochs): training until interrupted");
  auto limit_reached = [&]() -> std::string {
    if (t.max_steps > 0 && step_ >= t.max_steps) return "reached max_steps " + std::to_string(t.max_steps);
    if (t.max_samples > 0 && samples_ >= t.max_samples) return "reached max_samples " + std::to_string(t.max_samples);
    if (t.max_time > 0 && seconds_since(t_start_) >= t.max_time) return "reached max_time " + human_duration(t.max_time);
    if (t.epochs > 0 && source_->epoch() >= t.epochs) return "completed " + std::to_string(t.epochs) + " epochs";
    return "";
  };
  std::string reason = limit_reached();
  if (eval_source_ && cfg_.eval.at_start) {
    sum.eval = evaluate();
    sum.evaluated = true;
  }
  StepStats last;
  while (reason.empty()) {
    if (int sig = g_signal.load()) {
      reason = std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM");
      sum.interrupted = true;
      break;
    }
    int64_t prev_samples = samples_;
    StepStats s = train_step();
    if (!s.ok) {
      reason = "the data ran out";
      break;
    }
    last = s;
    ++window_steps_;
    window_seqs_ += s.sequences;
    window_tokens_ += s.tokens;
    window_wait_ += s.data_wait_seconds;
    if (step_ % cfg_.logging.log_every == 0) log_step(s);
    reason = limit_reached();
    if (g_signal.load() && reason.empty()) {
      reason = std::string("received ") + (g_signal.load() == SIGINT ? "SIGINT" : "SIGTERM");
      sum.interrupted = true;
    }
    if (reason.empty() && ckpt_ && ckpt_->due(step_, prev_samples, samples_)) save_checkpoint(false);
    const int64_t every = cfg_.eval.every_samples;
    if (eval_source_ && every > 0 && samples_ / every > prev_samples / every) {
      sum.eval = evaluate();
      sum.evaluated = true;
      if (reason.empty() && cfg_.eval.target_mlm_accuracy > 0 && sum.eval.mlm_accuracy >= cfg_.eval.target_mlm_accuracy)
        reason = "reached target MLM accuracy " + std::to_string(cfg_.eval.target_mlm_accuracy);
    }
  }
  if (window_steps_ > 0) log_step(last);
  double elapsed = seconds_since(t_start_);
  bool trained = step_ > sum.start_step;
  if (eval_source_ && last_eval_samples_ != samples_) {
    sum.eval = evaluate();
    sum.evaluated = true;
  }
  if (ckpt_ && ((sum.interrupted && cfg_.checkpoint.save_on_signal) || (cfg_.checkpoint.save_final && trained)))
    save_checkpoint(true);
  sum.step = step_;
  sum.samples = samples_;
  sum.skipped_steps = scaler_->skipped_steps();
  sum.last_loss = last.loss;
  sum.elapsed_s = elapsed;
  sum.seq_per_s = elapsed > 0 ? static_cast<double>(samples_ - start_samples) / elapsed : 0;
  sum.stop_reason = reason;
  sum.last_checkpoint = last_checkpoint_;
  int64_t steps_run = step_ - sum.start_step;
  spdlog::info("done: {}; {} steps this run (step {} of the run), {} samples, {} skipped, last loss {:.4f}, {} "
               "({:.1f} steps/s){}",
               reason, steps_run, step_, samples_, sum.skipped_steps, last.loss, human_duration(elapsed),
               elapsed > 0 ? static_cast<double>(steps_run) / elapsed : 0.0,
               last_checkpoint_.empty() ? "" : ", checkpoint " + last_checkpoint_.string());
  return sum;
}

}  // namespace bert::train
