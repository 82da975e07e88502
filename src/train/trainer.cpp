// The pretraining loop: setup (device, model, optimizer, resume/init), the step, logs, limits,
// checkpoints, signal handling, and data parallelism across ranks (see trainer.h).
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
#include "bert/dist/launch_env.h"
#include "bert/dist/rank_logging.h"
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
  // Data parallel: join the process group (a no-op for a single process).
  const dist::LaunchEnv env = dist::detect_launch_env();
  dist::configure_rank_logging(env.rank, env.world_size);
  comm_ = dist::Communicator::create(env, cfg_.dist, device_->collective_backend());
  const int64_t world = comm_->world_size();
  if (t.global_batch_size % (t.micro_batch_size * world) != 0)
    throw UserError("train.global_batch_size " + std::to_string(t.global_batch_size) +
                    " is not a multiple of train.micro_batch_size " + std::to_string(t.micro_batch_size) + " x " +
                    std::to_string(world) + " worker(s) = " + std::to_string(t.micro_batch_size * world) +
                    "; change one of them");
  accum_ = t.global_batch_size / (t.micro_batch_size * world);
  if (opts_.write_outputs && comm_->is_main()) setup_outputs();

  torch::manual_seed(static_cast<uint64_t>(t.seed));
  model_ = model::BertForPreTraining(cfg_.model);
  model_->to(device_->torch_device());
  model_->train();
  NamedTensors params;
  std::vector<torch::Tensor> trainable;
  for (auto& p : model_->named_parameters(/*recurse=*/true))
    if (p.value().requires_grad()) {
      params.emplace_back(p.key(), p.value());
      trainable.push_back(p.value());
    }
  reducer_ = std::make_unique<dist::GradientReducer>(*comm_, trainable);
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
  broadcast_model();  // rank 0's weights everywhere, after any load
  if (world > 1 && cfg_.checkpoint.resume.empty()) seed_rank_rng(json::object());
  t_start_ = window_start_ = Clock::now();

  if (world > 1) spdlog::info("data parallel: {}, backend {}", env.describe(), comm_->backend());
  spdlog::info("device {} ({}), precision {}", device_->name(), device_->description(), t.precision);
  spdlog::info("model: {} layers, hidden {}, {} parameters ({} without embeddings)", cfg_.model.num_hidden_layers,
               cfg_.model.hidden_size, human_count(static_cast<double>(parameter_count(true))),
               human_count(static_cast<double>(parameter_count(false))));
  spdlog::info("batch: global {} = micro {} x {} accumulation steps x {} worker(s)", t.global_batch_size,
               t.micro_batch_size, accum_, world);
  spdlog::info("optimizer {}; {}", cfg_.optimizer.name, schedule_->describe());
  spdlog::info("{}", source_->describe());
}

Trainer::~Trainer() = default;

// ---- data parallel helpers ----

void Trainer::broadcast_model() {
  if (comm_->world_size() <= 1) return;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> ts;
  for (auto& p : model_->parameters(true)) ts.push_back(p);
  for (auto& b : model_->buffers(true)) ts.push_back(b);
  comm_->broadcast_(ts, 0);
}

// Every rank's CPU RNG state, as hex strings indexed by rank (collective; world > 1 only).
json Trainer::gather_rank_rng() {
  const int64_t world = comm_->world_size(), rank = comm_->rank();
  std::string mine = capture_rng_state()["torch_cpu"].get<std::string>();
  auto len = comm_->allreduce(torch::tensor({static_cast<int64_t>(mine.size())}), dist::Reduce::Max);
  const int64_t n = len.item<int64_t>();
  auto all = torch::zeros({world, n}, torch::kInt32);
  std::vector<int32_t> chars(mine.begin(), mine.end());
  all[rank].narrow(0, 0, static_cast<int64_t>(chars.size()))
      .copy_(torch::from_blob(chars.data(), {static_cast<int64_t>(chars.size())}, torch::kInt32));
  all = comm_->allreduce(all, dist::Reduce::Sum);
  json out = json::array();
  auto acc = all.accessor<int32_t, 2>();
  for (int64_t r = 0; r < world; ++r) {
    std::string h;
    for (int64_t i = 0; i < n && acc[r][i] != 0; ++i) h.push_back(static_cast<char>(acc[r][i]));
    out.push_back(h);
  }
  return out;
}

// Rank r > 0 gets its own dropout stream: the state it saved in the checkpoint when the world
// size is unchanged, otherwise a fresh one seeded with train.seed + r (+ world x step after a resume).
void Trainer::seed_rank_rng(const json& st) {
  const int rank = comm_->rank(), world = comm_->world_size();
  if (rank == 0) return;  // rank 0 continues the single-process stream (or the restored one)
  if (st.value("world_size", int64_t{1}) == world && st.contains("rank_rng") &&
      static_cast<int>(st["rank_rng"].size()) == world) {
    restore_rng_state(json{{"torch_cpu", st["rank_rng"][static_cast<size_t>(rank)]}}, "checkpoint rank RNG");
    return;
  }
  torch::manual_seed(static_cast<uint64_t>(cfg_.train.seed + rank + static_cast<int64_t>(world) * step_));
}

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
  if (comm_->world_size() > 1) seed_rank_rng(st);
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
  j["world_size"] = comm_->world_size();
  return j;
}

// Collective when world > 1: every rank's RNG state is gathered, rank 0 writes, and nobody
// continues before the checkpoint is complete.
void Trainer::save_checkpoint(bool final) {
  if (!ckpt_) return;
  json rank_rng = comm_->world_size() > 1 ? gather_rank_rng() : json();
  if (comm_->is_main()) {
    json st = trainer_state();
    if (!rank_rng.is_null()) st["rank_rng"] = rank_rng;
    last_checkpoint_ = ckpt_->save(step_, *model_, cfg_.model, *opt_, st, cfg_.to_json(), final);
  }
  comm_->barrier();
}

StepStats Trainer::train_step() {
  StepStats s;
  auto t0 = Clock::now();
  comm_->take_stats();  // count this step's communication only
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
    // the last micro-batch's backward starts the gradient all-reduce as buckets fill
    if (a == accum_ - 1) reducer_->arm_overlap();
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
  reducer_->reduce();  // average across ranks once (finishes the overlapped all-reduce), before the global
                       // norm: identical updates everywhere
  auto norm = opt_->global_grad_norm(scale);
  // The one host synchronisation of the step: was every gradient finite?
  bool finite = torch::isfinite(norm).item<bool>();
  s.applied = scaler_->update(finite);
  s.lr = (*schedule_)(step_ + 1);
  if (s.applied) opt_->step(s.lr, norm, scale);
  opt_->zero_grad();
  ++step_;
  s.ok = true;
  s.loss_scale = scale;
  // Read back the step's numbers (already computed; this does not wait on anything new).
  // With several ranks one small all-reduce sums them, plus the stop votes.
  const int local_signal = g_signal.load();
  const bool local_time_up = cfg_.train.max_time > 0 && seconds_since(t_start_) >= cfg_.train.max_time;
  auto vals = torch::stack({loss_sum.to(torch::kDouble) / accum_, mlm_sum.to(torch::kDouble) / accum_,
                            nsp_sum.to(torch::kDouble) / accum_, mlm_ok.to(torch::kDouble),
                            mlm_n.to(torch::kDouble), nsp_ok.to(torch::kDouble), nsp_n.to(torch::kDouble),
                            norm.to(torch::kDouble)})
                  .to(torch::kCPU);
  s.grad_norm = vals[7].item<double>();  // identical on every rank: taken after the reduction
  vals = torch::cat({vals.narrow(0, 0, 7), torch::tensor({static_cast<double>(s.sequences), static_cast<double>(s.tokens),
                                          local_signal ? 1.0 : 0.0, local_time_up ? 1.0 : 0.0},
                                         torch::kDouble)});
  if (comm_->world_size() > 1) vals = comm_->allreduce(vals, dist::Reduce::Sum);
  const double world = static_cast<double>(comm_->world_size());
  auto* v = vals.data_ptr<double>();
  s.loss = v[0] / world;
  s.mlm_loss = v[1] / world;
  s.nsp_loss = v[2] / world;
  s.mlm_acc = v[4] > 0 ? v[3] / v[4] : 0;  // token-weighted over all ranks
  s.nsp_acc = v[6] > 0 ? v[5] / v[6] : 0;
  s.sequences = static_cast<int64_t>(v[7]);  // all ranks
  s.tokens = static_cast<int64_t>(v[8]);
  if (v[9] > 0) s.stop_signal = local_signal ? local_signal : -1;
  s.time_up = v[10] > 0;
  samples_ += s.sequences;
  auto cs = comm_->take_stats();
  s.comm_seconds = cs.seconds;
  s.comm_total_seconds = cs.total_seconds;
  s.step_seconds = seconds_since(t0);
  return s;
}

void Trainer::log_step(const StepStats& s) {
  double win = seconds_since(window_start_);
  double seq_s = win > 0 ? static_cast<double>(window_seqs_) / win : 0;
  double tok_s = win > 0 ? static_cast<double>(window_tokens_) / win : 0;
  double step_ms = window_steps_ > 0 ? 1000.0 * win / static_cast<double>(window_steps_) : 0;
  double wait_ms = window_steps_ > 0 ? 1000.0 * window_wait_ / static_cast<double>(window_steps_) : 0;
  double comm_ms = window_steps_ > 0 ? 1000.0 * window_comm_ / static_cast<double>(window_steps_) : 0;
  double comm_share = step_ms > 0 ? comm_ms / step_ms : 0;
  double comm_total_ms =
      window_steps_ > 0 ? 1000.0 * window_comm_total_ / static_cast<double>(window_steps_) : 0;
  auto reset_window = [&] {
    window_start_ = Clock::now();
    window_steps_ = window_seqs_ = window_tokens_ = 0;
    window_wait_ = window_comm_ = window_comm_total_ = 0;
  };
  if (!comm_->is_main()) return reset_window();  // rank 0 alone prints and writes metrics
  std::string comm_part;
  // comm: the exposed time (waiting on collectives); "in flight": their whole span, overlapped or not
  if (comm_->world_size() > 1)
    comm_part = fmt::format(", comm {:.1f} ms = {:.0f}%, {:.1f} ms in flight", comm_ms, 100.0 * comm_share,
                            comm_total_ms);
  std::string eta;
  int64_t max_steps = cfg_.train.max_steps;
  if (max_steps > 0 && step_ < max_steps && step_ms > 0)
    eta = ", eta " + human_duration(static_cast<double>(max_steps - step_) * step_ms / 1000.0);
  std::string of = max_steps > 0 ? "/" + std::to_string(max_steps) : "";
  spdlog::info(
      "phase {} step {}{} | samples {} | loss {:.4f} (mlm {:.4f}, nsp {:.4f}) | mlm acc {:.3f} nsp acc {:.3f} | lr {:.3e} | "
      "grad norm {:.3f} | scale {:g} | {:.1f} seq/s {:.0f} tok/s | {:.0f} ms/step (data {:.1f} ms{}){}{}",
      cfg_.train.phase, step_, of, samples_, s.loss, s.mlm_loss, s.nsp_loss, s.mlm_acc, s.nsp_acc, s.lr, s.grad_norm, s.loss_scale,
      seq_s, tok_s, step_ms, wait_ms, comm_part, s.applied ? "" : " | SKIPPED (non-finite gradients)", eta);
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
    j["comm_s"] = comm_ms / 1000.0;
    j["comm_share"] = comm_share;
    j["comm_total_s"] = comm_total_ms / 1000.0;
    j["world_size"] = comm_->world_size();
    j["elapsed_s"] = elapsed_before_ + seconds_since(t_start_);
    metrics_ << j.dump() << "\n";
    metrics_.flush();
  }
  reset_window();
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
  // Each rank evaluates its share of the held-out data (the eval source is split by rank);
  // the sums are reduced so that accuracy is token-weighted over all ranks.
  const int64_t world = comm_->world_size(), rank = comm_->rank();
  int64_t limit = cfg_.eval.num_examples;
  if (limit > 0 && world > 1) limit = limit / world + (rank < limit % world ? 1 : 0);
  PretrainEvalResult r;
  if (!(cfg_.eval.num_examples > 0 && limit == 0))  // 0 would mean "everything"
    r = evaluate_pretraining(model_, *eval_source_, batch, limit, *device_, cfg_.train.precision);
  if (world > 1) {
    const double masked = static_cast<double>(r.masked_tokens), seqs = static_cast<double>(r.sequences);
    auto sums = comm_->allreduce(torch::tensor({seqs, masked, r.mlm_accuracy * masked, r.nsp_accuracy * seqs,
                                                r.mlm_loss * masked, r.nsp_loss * seqs},
                                               torch::kDouble),
                                 dist::Reduce::Sum);
    auto secs = comm_->allreduce(torch::tensor({r.seconds}, torch::kDouble), dist::Reduce::Max);
    auto h = sums.accessor<double, 1>();
    r.sequences = static_cast<int64_t>(std::llround(h[0]));
    r.masked_tokens = static_cast<int64_t>(std::llround(h[1]));
    r.mlm_accuracy = h[1] > 0 ? std::round(h[2]) / h[1] : 0;
    r.nsp_accuracy = h[0] > 0 ? std::round(h[3]) / h[0] : 0;
    r.mlm_loss = h[1] > 0 ? h[4] / h[1] : 0;
    r.nsp_loss = h[0] > 0 ? h[5] / h[0] : 0;
    r.seconds = secs.item<double>();
  }
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
  const bool multi = comm_->world_size() > 1;
  if (t.max_steps == 0 && t.max_samples == 0 && t.max_time == 0 && t.epochs == 0)
    spdlog::warn("no limit set (--max-steps, --max-samples, --max-time, --epochs): training until interrupted");
  bool time_up = false;  // with several ranks: the step's reduced vote, so all stop together
  auto limit_reached = [&]() -> std::string {
    if (t.max_steps > 0 && step_ >= t.max_steps) return "reached max_steps " + std::to_string(t.max_steps);
    if (t.max_samples > 0 && samples_ >= t.max_samples) return "reached max_samples " + std::to_string(t.max_samples);
    if (t.max_time > 0 && (multi ? time_up : seconds_since(t_start_) >= t.max_time)) return "reached max_time " + human_duration(t.max_time);
    if (t.epochs > 0 && source_->epoch() >= t.epochs) return "completed " + std::to_string(t.epochs) + " epochs";
    return "";
  };
  std::string reason = limit_reached();
  if (eval_source_ && cfg_.eval.at_start) {
    sum.eval = evaluate();
    sum.evaluated = true;
  }
  StepStats last;
  auto signal_reason = [](int sig) {
    return sig < 0 ? std::string("a signal on another rank")
                   : std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM");
  };
  while (reason.empty()) {
    if (int sig = multi ? 0 : g_signal.load()) {  // several ranks: decided by the step's vote
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
    time_up = s.time_up;
    window_comm_ += s.comm_seconds;
    window_comm_total_ += s.comm_total_seconds;
    ++window_steps_;
    window_seqs_ += s.sequences;
    window_tokens_ += s.tokens;
    window_wait_ += s.data_wait_seconds;
    if (step_ % cfg_.logging.log_every == 0) log_step(s);
    reason = limit_reached();
    int sig = multi ? s.stop_signal : g_signal.load();
    if (sig && reason.empty()) {
      reason = signal_reason(sig);
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
