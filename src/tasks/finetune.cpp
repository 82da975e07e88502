// The fine-tuning loop (see include/bert/tasks/finetune.h): a task runner per task family (SQuAD,
// GLUE) turns the files into tensors, runs the head, and predicts + scores the dev set; the loop
// around it is shared: AdamW + schedule, accumulation, precision, step log, metrics.jsonl,
// evaluations, best checkpoint, summary.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <random>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/common/logging.h"
#include "bert/common/strings.h"
#include "bert/device/device.h"
#include "bert/model/heads.h"
#include "bert/tasks/evaluate.h"
#include "bert/tasks/finetune.h"
#include "bert/tasks/glue.h"
#include "bert/tasks/glue_io.h"
#include "bert/tasks/pair_features.h"
#include "bert/tasks/squad.h"
#include "bert/tasks/squad_features.h"
#include "bert/tasks/squad_predict.h"
#include "bert/tasks/task_options.h"
#include "bert/text/tokenizer.h"
#include "bert/train/loss_scaler.h"
#include "bert/train/lr_schedule.h"
#include "bert/train/optimizer.h"

namespace bert::tasks {

namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Model inputs of a whole split, on the CPU; y1/y2 are the targets (SQuAD: start/end positions;
// GLUE: labels (int64) or scores (float), y2 undefined).
struct Inputs {
  torch::Tensor ids, types, mask, y1, y2;
  int64_t size() const { return ids.defined() ? ids.size(0) : 0; }
  Inputs select(const torch::Tensor& idx) const {
    Inputs b;
    b.ids = ids.index_select(0, idx);
    b.types = types.index_select(0, idx);
    b.mask = mask.index_select(0, idx);
    if (y1.defined()) b.y1 = y1.index_select(0, idx);
    if (y2.defined()) b.y2 = y2.index_select(0, idx);
    return b;
  }
  Inputs to(const torch::Device& d) const {
    Inputs b;
    b.ids = ids.to(d);
    b.types = types.to(d);
    b.mask = mask.to(d);
    if (y1.defined()) b.y1 = y1.to(d);
    if (y2.defined()) b.y2 = y2.to(d);
    return b;
  }
};

template <class Feature>
Inputs stack_inputs(const std::vector<Feature>& feats, int64_t seq) {
  const auto n = static_cast<int64_t>(feats.size());
  Inputs in;
  in.ids = torch::zeros({n, seq}, torch::kInt64);
  in.types = torch::zeros({n, seq}, torch::kInt64);
  in.mask = torch::zeros({n, seq}, torch::kInt64);
  auto a = in.ids.accessor<int64_t, 2>();
  auto t = in.types.accessor<int64_t, 2>();
  auto m = in.mask.accessor<int64_t, 2>();
  for (int64_t i = 0; i < n; ++i) {
    const auto& f = feats[static_cast<size_t>(i)];
    for (int64_t j = 0; j < seq; ++j) {
      a[i][j] = f.input_ids[static_cast<size_t>(j)];
      t[i][j] = f.segment_ids[static_cast<size_t>(j)];
      m[i][j] = f.input_mask[static_cast<size_t>(j)];
    }
  }
  return in;
}

torch::Tensor range_index(int64_t begin, int64_t end) { return torch::arange(begin, end, torch::kInt64); }

// ---- task runners -----------------------------------------------------------------------------------

class TaskRunner {
 public:
  virtual ~TaskRunner() = default;
  virtual torch::nn::Module& module() = 0;
  // Mean loss of a batch already on the device (forward under the caller's autocast).
  virtual torch::Tensor loss(const Inputs& b) = 0;
  // Predict the dev set into `dir` and score it with the evaluator; returns the metrics.
  virtual json evaluate(const fs::path& dir) = 0;
  virtual std::string primary_metric() const = 0;
  virtual void save(const fs::path& dir) = 0;
  // Predict finetune.test_file with the current model into the output directory `out`; returns
  // what was written (and, for SQuAD with answers, the scores) for the summary.
  virtual json predict_test(const fs::path& /*out*/) { return nullptr; }
  virtual bool has_test() const { return false; }
  Inputs train;
  int64_t train_examples = 0, dev_examples = 0, dev_features = 0;
  json data_stats = json::object();  // what reading the files skipped or dropped, for the summary
};

// Runs `fn(batch_on_device, begin)` over `in` in eval batches, eval mode, no grad.
template <class Fn>
void for_each_eval_batch(torch::nn::Module& m, const Inputs& in, int64_t batch, const Device& dev,
                         const std::string& precision, Fn fn) {
  m.eval();
  torch::NoGradGuard ng;
  for (int64_t s = 0; s < in.size(); s += batch) {
    auto b = in.select(range_index(s, std::min(in.size(), s + batch))).to(dev.torch_device());
    AutocastScope ac(dev, precision);
    fn(b, s);
  }
  m.train();
}

class SquadRunner : public TaskRunner {
 public:
  SquadRunner(const RunConfig& cfg, const TaskTokenizer& tok, const Device& dev)
      : cfg_(cfg), tok_(tok), device_(dev) {
    const auto& f = cfg.finetune;
    const int64_t seq = cfg.data.max_seq_length;
    SquadReadStats rs;
    auto train_ex = read_squad_examples(f.train_file, squad_read_options(f, true), &rs);
    if (rs.skipped_bad_answer)
      spdlog::warn("{}: {} question(s) skipped: the answer text is not in the context at its answer_start",
                   f.train_file, rs.skipped_bad_answer);
    SquadFeatureStats fs_stats;
    auto train_feats = convert_squad_examples(train_ex, tok, squad_feature_options(f, seq, true), &fs_stats);
    if (train_feats.empty())
      throw UserError("no training features from " + f.train_file + ": no question has an answer inside a window");
    train = stack_inputs(train_feats, seq);
    train.y1 = torch::empty({train.size()}, torch::kInt64);
    train.y2 = torch::empty({train.size()}, torch::kInt64);
    for (size_t i = 0; i < train_feats.size(); ++i) {
      train.y1[static_cast<int64_t>(i)] = train_feats[i].start_position;
      train.y2[static_cast<int64_t>(i)] = train_feats[i].end_position;
    }
    train_examples = static_cast<int64_t>(train_ex.size());
    data_stats["train_questions"] = rs.questions;
    data_stats["skipped_bad_answers"] = rs.skipped_bad_answer;
    data_stats["windows_dropped_without_answer"] = fs_stats.dropped_out_of_span;
    spdlog::info("SQuAD train {}: {} questions -> {} windows ({} without the answer dropped)", f.train_file,
                 train_ex.size(), train_feats.size(), fs_stats.dropped_out_of_span);

    dev_.examples = read_squad_examples(f.dev_file, squad_read_options(f, false));
    dev_.features = convert_squad_examples(dev_.examples, tok, squad_feature_options(f, seq, false));
    dev_.inputs = stack_inputs(dev_.features, seq);
    dev_examples = static_cast<int64_t>(dev_.examples.size());
    dev_features = static_cast<int64_t>(dev_.features.size());
    spdlog::info("SQuAD dev {}: {} questions -> {} windows", f.dev_file, dev_.examples.size(), dev_.features.size());
    if (!f.test_file.empty()) {
      test_.examples = read_squad_examples(f.test_file, squad_read_options(f, false));
      test_.features = convert_squad_examples(test_.examples, tok, squad_feature_options(f, seq, false));
      test_.inputs = stack_inputs(test_.features, seq);
      spdlog::info("SQuAD test {}: {} questions -> {} windows", f.test_file, test_.examples.size(),
                   test_.features.size());
    }
    model_ = model::BertForQuestionAnswering(cfg.model);
  }

  torch::nn::Module& module() override { return *model_; }
  torch::Tensor loss(const Inputs& b) override {
    auto out = model_->forward(b.ids, b.types, b.mask);
    return model_->loss(out, b.y1, b.y2);
  }
  json evaluate(const fs::path& dir) override { return predict_split(dev_, cfg_.finetune.dev_file, dir); }
  std::string primary_metric() const override { return "f1"; }
  void save(const fs::path& dir) override { io::save_model_dir(*model_, cfg_.model, dir); }
  bool has_test() const override { return !test_.examples.empty(); }
  json predict_test(const fs::path& out) override {
    const fs::path dir = out / "test";
    json r = json::object();
    r["file"] = cfg_.finetune.test_file;
    r["predictions"] = (dir / "predictions.json").string();
    bool answered = false;
    for (const auto& e : test_.examples) answered = answered || !e.answers.empty();
    json m = predict_split(test_, cfg_.finetune.test_file, dir, answered);
    if (answered) r["metrics"] = m;
    return r;
  }

 private:
  // One evaluation split: examples, their windows, and the windows' model inputs.
  struct Split {
    std::vector<SquadExample> examples;
    std::vector<SquadFeature> features;
    Inputs inputs;
  };

  // Predicts `split` into `dir` (predictions.json, nbest_predictions.json, null_odds.json for
  // v2.0) and, when `score`, returns the official metrics against `dataset`.
  json predict_split(const Split& split, const std::string& dataset, const fs::path& dir, bool score = true) {
    const auto& feats = split.features;
    std::vector<SquadRawResult> results;
    results.reserve(feats.size());
    for_each_eval_batch(*model_, split.inputs, cfg_.train.micro_batch_size, device_, cfg_.train.precision,
                        [&](const Inputs& b, int64_t begin) {
                          auto out = model_->forward(b.ids, b.types, b.mask);
                          auto st = out.start_logits.to(torch::kFloat).to(torch::kCPU).contiguous();
                          auto en = out.end_logits.to(torch::kFloat).to(torch::kCPU).contiguous();
                          for (int64_t i = 0; i < st.size(0); ++i) {
                            SquadRawResult r;
                            r.unique_id = feats[static_cast<size_t>(begin + i)].unique_id;
                            const float* ps = st[i].data_ptr<float>();
                            const float* pe = en[i].data_ptr<float>();
                            r.start_logits.assign(ps, ps + st.size(1));
                            r.end_logits.assign(pe, pe + en.size(1));
                            results.push_back(std::move(r));
                          }
                        });
    const auto& f = cfg_.finetune;
    auto preds =
        compute_squad_predictions(split.examples, feats, results, squad_predict_options(f), tok_.basic_tokenize);
    ensure_writable_dir(dir);
    write_squad_predictions(preds, dir, f.version_2_with_negative);
    if (!score) return json::object();
    EvaluateRequest req;
    req.task = "squad";
    req.dataset = dataset;
    req.predictions = dir / "predictions.json";
    req.version = f.version_2_with_negative ? "2.0" : "1.1";
    if (f.version_2_with_negative) req.na_prob_file = dir / "null_odds.json";
    return evaluate_predictions(req).metrics;
  }

  const RunConfig& cfg_;
  const TaskTokenizer& tok_;
  const Device& device_;
  Split dev_, test_;
  model::BertForQuestionAnswering model_{nullptr};
};

class GlueRunner : public TaskRunner {
 public:
  GlueRunner(const RunConfig& cfg, const TaskTokenizer& tok, const Device& dev)
      : cfg_(cfg), tok_(tok), device_(dev), spec_(glue_task(cfg.finetune.task)) {
    const auto& f = cfg.finetune;
    auto train_ex = read_glue_tsv(spec_, f.train_file);
    for (const auto& e : train_ex)
      if (!e.has_label)
        throw UserError(f.train_file + ": line " + std::to_string(e.line) + " has no label; pass a labelled train.tsv");
    train = inputs_of(train_ex);
    train_examples = static_cast<int64_t>(train_ex.size());
    if (train_examples == 0) throw UserError("no training examples in " + f.train_file);
    dev_ex_ = read_glue_tsv(spec_, f.dev_file);
    dev_ = inputs_of(dev_ex_);
    dev_examples = dev_features = static_cast<int64_t>(dev_ex_.size());
    if (!f.test_file.empty()) {
      test_ex_ = read_glue_tsv(spec_, f.test_file);
      test_ = inputs_of(test_ex_);
    }
    spdlog::info("GLUE {}: train {} ({} examples), dev {} ({} examples){}", spec_.name, f.train_file,
                 train_examples, f.dev_file, dev_examples,
                 f.test_file.empty() ? "" : ", test " + f.test_file + " (" + std::to_string(test_ex_.size()) + ")");
    model_ = model::BertForSequenceClassification(cfg.model, spec_.num_labels());
  }

  torch::nn::Module& module() override { return *model_; }
  torch::Tensor loss(const Inputs& b) override { return model_->loss(model_->forward(b.ids, b.types, b.mask), b.y1); }
  json evaluate(const fs::path& dir) override {
    ensure_writable_dir(dir);
    fs::path file = dir / "dev_predictions.tsv";
    write_glue_dev_predictions(file, spec_, dev_ex_, predict(dev_));
    EvaluateRequest req;
    req.task = spec_.name;
    req.dataset = cfg_.finetune.dev_file;
    req.predictions = file;
    return evaluate_predictions(req).metrics;
  }
  std::string primary_metric() const override { return spec_.primary_metric; }
  void save(const fs::path& dir) override {
    io::save_model_dir(*model_, cfg_.model, dir, spec_.regression ? std::vector<std::string>{} : spec_.labels);
  }
  bool has_test() const override { return !test_ex_.empty(); }
  json predict_test(const fs::path& out) override {
    const fs::path path = out / "test_predictions.tsv";
    write_glue_submission(path, spec_, predict(test_));
    json r = json::object();
    r["file"] = cfg_.finetune.test_file;
    r["predictions"] = path.string();
    return r;
  }

 private:
  Inputs inputs_of(const std::vector<GlueExample>& ex) const {
    auto feats = convert_glue_examples(spec_, ex, tok_, cfg_.data.max_seq_length);
    Inputs in = stack_inputs(feats, cfg_.data.max_seq_length);
    const auto n = static_cast<int64_t>(feats.size());
    if (spec_.regression) {
      in.y1 = torch::empty({n}, torch::kFloat);
      for (int64_t i = 0; i < n; ++i) in.y1[i] = feats[static_cast<size_t>(i)].score;
    } else {
      in.y1 = torch::empty({n}, torch::kInt64);
      for (int64_t i = 0; i < n; ++i) in.y1[i] = static_cast<int64_t>(feats[static_cast<size_t>(i)].label_id);
    }
    return in;
  }
  GluePredictions predict(const Inputs& in) {
    GluePredictions p;
    for_each_eval_batch(*model_, in, cfg_.train.micro_batch_size, device_, cfg_.train.precision,
                        [&](const Inputs& b, int64_t) {
                          auto logits = model_->forward(b.ids, b.types, b.mask).to(torch::kFloat).to(torch::kCPU);
                          if (spec_.regression) {
                            auto s = logits.reshape({-1}).to(torch::kDouble).contiguous();
                            p.scores.insert(p.scores.end(), s.data_ptr<double>(), s.data_ptr<double>() + s.numel());
                          } else {
                            auto a = logits.argmax(1).to(torch::kInt32).contiguous();
                            p.label_ids.insert(p.label_ids.end(), a.data_ptr<int32_t>(),
                                               a.data_ptr<int32_t>() + a.numel());
                          }
                        });
    return p;
  }

  const RunConfig& cfg_;
  const TaskTokenizer& tok_;
  const Device& device_;
  const GlueTaskSpec& spec_;
  std::vector<GlueExample> dev_ex_, test_ex_;
  Inputs dev_, test_;
  model::BertForSequenceClassification model_{nullptr};
};

// ---- the loop -------------------------------------------------------------------------------------

double metric_value(const json& metrics, const std::string& key) {
  if (metrics.contains(key) && metrics[key].is_number()) return metrics[key].get<double>();
  for (auto it = metrics.begin(); it != metrics.end(); ++it)
    if (it.value().is_number()) return it.value().get<double>();
  return 0;
}

// Save `runner`'s model into `dir` through a temporary directory renamed into place.
void save_dir_atomic(TaskRunner& runner, const fs::path& dir) {
  fs::path tmp = dir.parent_path() / ("." + dir.filename().string() + ".tmp." + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(tmp, ec);
  ensure_writable_dir(tmp);
  runner.save(tmp);
  fs::remove_all(dir, ec);
  commit_temp(tmp, dir);
}

}  // namespace

FinetuneResult run_finetune(RunConfig cfg) {
  const auto t_start = Clock::now();
  auto& t = cfg.train;
  auto& f = cfg.finetune;
  if (t.global_batch_size % t.micro_batch_size != 0)
    throw UserError("train.global_batch_size " + std::to_string(t.global_batch_size) +
                    " is not a multiple of train.micro_batch_size " + std::to_string(t.micro_batch_size) +
                    "; make it one (accumulation = global / micro)");
  if (t.epochs <= 0 && t.max_steps <= 0)
    throw UserError("fine-tuning needs --epochs N (train.epochs) or --max-steps N");
  if (cfg.optimizer.name != "adamw")
    spdlog::warn("fine-tuning with optimizer '{}'; the reference recipes use adamw", cfg.optimizer.name);
  resolve_finetune_files(cfg);

  // Tokenizer.
  fs::path vocab = f.vocab;
  if (vocab.empty() && !cfg.checkpoint.init_checkpoint.empty()) {
    fs::path ck = cfg.checkpoint.init_checkpoint;
    fs::path cand = (fs::is_directory(ck) ? ck : ck.parent_path()) / "vocab.txt";
    if (fs::exists(cand)) vocab = cand;
  }
  if (vocab.empty()) throw UserError("no vocab given: pass --vocab vocab.txt (finetune.vocab)");
  require_file(vocab, "vocab file");
  f.vocab = vocab.string();
  text::TokenizerOptions topts;
  topts.lower_case = f.do_lower_case;
  text::FullTokenizer full(text::Vocab::load(vocab.string()), topts);
  TaskTokenizer tok = make_task_tokenizer(full);

  // Model config: the checkpoint's config.json wins over the model section.
  if (!cfg.checkpoint.init_checkpoint.empty()) {
    if (auto mc = init_checkpoint_model_config(cfg.checkpoint.init_checkpoint)) {
      cfg.model = load_model_config(*mc);
      spdlog::info("model config from {}", mc->string());
    }
  }
  if (static_cast<int64_t>(full.vocab().size()) > cfg.model.vocab_size)
    throw UserError("vocab " + vocab.string() + " has " + std::to_string(full.vocab().size()) +
                    " tokens but the model's vocab_size is " + std::to_string(cfg.model.vocab_size) +
                    "; use the checkpoint's vocab or a matching model config");
  if (cfg.data.max_seq_length > cfg.model.max_position_embeddings)
    throw UserError("--max-seq-length " + std::to_string(cfg.data.max_seq_length) + " exceeds the model's " +
                    "max_position_embeddings " + std::to_string(cfg.model.max_position_embeddings));

  configure_threads(t.threads);
  auto device = select_device(t.device, t.precision);
  const fs::path out = t.output_dir;
  ensure_writable_dir(out);
  if (!cfg.logging.log_file.empty()) add_log_file(out / cfg.logging.log_file);
  spdlog::info("resolved config:\n{}", config_table(cfg));
  save_config(cfg, out);
  std::ofstream metrics;
  if (!cfg.logging.metrics_file.empty()) {
    metrics.open(out / cfg.logging.metrics_file, std::ios::app);
    if (!metrics) throw UserError("cannot open metrics file " + (out / cfg.logging.metrics_file).string());
  }

  torch::manual_seed(static_cast<uint64_t>(t.seed));
  std::unique_ptr<TaskRunner> runner;
  if (f.task == "squad")
    runner = std::make_unique<SquadRunner>(cfg, tok, *device);
  else
    runner = std::make_unique<GlueRunner>(cfg, tok, *device);
  torch::nn::Module& model = runner->module();

  json load_json = json::object();
  if (!cfg.checkpoint.init_checkpoint.empty()) {
    auto report = load_init_checkpoint(model, cfg.model, cfg.checkpoint.init_checkpoint);
    // The load report above lists the keys; this says what they mean for fine-tuning.
    spdlog::info("{}: {} tensor(s) loaded, {} initialised randomly (the {} head), {} of the checkpoint unused "
                 "(e.g. the pretraining heads cls.*)",
                 report.source, report.loaded.size(), report.missing.size(), f.task, report.unexpected.size());
    load_json["source"] = report.source;
    load_json["loaded"] = report.loaded.size();
    load_json["initialised"] = report.missing;
    load_json["unexpected"] = report.unexpected;
  } else {
    spdlog::warn("no --init-checkpoint: training from a random initialisation");
    load_json["source"] = nullptr;
  }
  model.to(device->torch_device());
  model.train();
  train::NamedTensors params;
  for (auto& p : model.named_parameters(true))
    if (p.value().requires_grad()) params.emplace_back(p.key(), p.value());
  train::Optimizer opt(params, cfg.optimizer);
  train::LossScaler scaler(t.precision == "fp16", t.loss_scale, t.loss_scale_window, t.max_nonfinite_steps);

  const int64_t n = runner->train.size();
  const int64_t accum = t.global_batch_size / t.micro_batch_size;
  const int64_t steps_per_epoch = (n + t.global_batch_size - 1) / t.global_batch_size;
  int64_t total = t.epochs > 0 ? t.epochs * steps_per_epoch : t.max_steps;
  if (t.max_steps > 0) total = std::min(total, t.max_steps);
  train::LrSchedule schedule(cfg.optimizer, total);
  spdlog::info("device {} ({}), precision {}", device->name(), device->description(), t.precision);
  spdlog::info("training: {} sequences, {} steps per epoch (global batch {} = micro {} x {}), {} steps in all",
               n, steps_per_epoch, t.global_batch_size, t.micro_batch_size, accum, total);
  spdlog::info("optimizer {}; {}", cfg.optimizer.name, schedule.describe());

  json evaluations = json::array();
  json best = nullptr;
  const fs::path best_dir = out / "best";
  const std::string key = runner->primary_metric();
  auto run_eval = [&](int64_t step, int64_t epoch) {
    auto te = Clock::now();
    json m = runner->evaluate(out / "eval" / ("step_" + std::to_string(step)));
    double v = metric_value(m, key);
    json e = json::object();
    e["step"] = step;
    e["epoch"] = epoch;
    e["metrics"] = m;
    e["eval_seconds"] = seconds_since(te);
    evaluations.push_back(e);
    spdlog::info("eval step {} (epoch {}): {} ({:.1f} s)", step, epoch, m.dump(), seconds_since(te));
    if (metrics.is_open()) {
      json line = json::object();
      line["step"] = step;
      line["epoch"] = epoch;
      line["eval"] = m;
      metrics << line.dump() << "\n";
      metrics.flush();
    }
    if (best.is_null() || v > best["value"].get<double>()) {
      save_dir_atomic(*runner, best_dir);
      best = json::object();
      best["step"] = step;
      best["epoch"] = epoch;
      best["metric"] = key;
      best["value"] = v;
      best["metrics"] = m;
      best["dir"] = best_dir.string();
      spdlog::info("new best {} {:.4f}: saved {}", key, v, best_dir.string());
    }
  };

  const auto dev = device->torch_device();
  int64_t step = 0, samples = 0, last_eval_step = -1;
  auto window_start = Clock::now();
  int64_t window_steps = 0, window_seqs = 0;
  double window_loss = 0;
  int64_t epoch = 0;
  for (epoch = 1; step < total; ++epoch) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    std::mt19937_64 rng(static_cast<uint64_t>(t.seed) * 1000003ULL + static_cast<uint64_t>(epoch));
    std::shuffle(order.begin(), order.end(), rng);
    auto perm = torch::tensor(order, torch::kInt64);
    for (int64_t s0 = 0; s0 < n && step < total; s0 += t.global_batch_size) {
      const int64_t s1 = std::min(n, s0 + t.global_batch_size);
      const double scale = scaler.scale();
      torch::Tensor loss_sum;
      for (int64_t m0 = s0; m0 < s1; m0 += t.micro_batch_size) {
        const int64_t m1 = std::min(s1, m0 + t.micro_batch_size);
        auto b = runner->train.select(perm.slice(0, m0, m1)).to(dev);
        torch::Tensor l;
        {
          AutocastScope ac(*device, t.precision);
          l = runner->loss(b);
        }
        const double w = static_cast<double>(m1 - m0) / static_cast<double>(s1 - s0);
        (l * (scale * w)).backward();
        loss_sum = loss_sum.defined() ? loss_sum + l.detach() * w : l.detach() * w;
      }
      auto norm = opt.global_grad_norm(scale);
      const bool applied = scaler.update(torch::isfinite(norm).item<bool>());
      const double lr = schedule(step + 1);
      if (applied) opt.step(lr, norm, scale);
      opt.zero_grad();
      ++step;
      samples += s1 - s0;
      const double loss = loss_sum.item<double>();
      window_loss += loss;
      ++window_steps;
      window_seqs += s1 - s0;
      if (step % cfg.logging.log_every == 0 || step == total) {
        const double win = seconds_since(window_start);
        const double seq_s = win > 0 ? static_cast<double>(window_seqs) / win : 0;
        const double step_s = win / static_cast<double>(window_steps);
        const double gn = norm.item<double>();
        spdlog::info("step {}/{} | epoch {} | loss {:.4f} | lr {:.3e} | grad norm {:.3f} | {:.1f} seq/s | eta {}{}",
                     step, total, epoch, window_loss / static_cast<double>(window_steps), lr, gn, seq_s,
                     human_duration(static_cast<double>(total - step) * step_s),
                     applied ? "" : " | SKIPPED (non-finite gradients)");
        if (metrics.is_open()) {
          json j = json::object();
          j["step"] = step;
          j["samples"] = samples;
          j["epoch"] = epoch;
          j["loss"] = window_loss / static_cast<double>(window_steps);
          j["lr"] = lr;
          j["grad_norm"] = std::isfinite(gn) ? json(gn) : json(nullptr);
          j["loss_scale"] = scale;
          j["skipped_steps"] = scaler.skipped_steps();
          j["seq_per_s"] = seq_s;
          j["elapsed_s"] = seconds_since(t_start);
          metrics << j.dump() << "\n";
          metrics.flush();
        }
        window_start = Clock::now();
        window_steps = window_seqs = 0;
        window_loss = 0;
      }
      if (f.eval_every_steps > 0 && step % f.eval_every_steps == 0) {
        run_eval(step, epoch);
        last_eval_step = step;
      }
    }
    if (f.eval_every_steps == 0 && last_eval_step != step) {
      run_eval(step, epoch);
      last_eval_step = step;
    }
  }
  const int64_t epochs_run = epoch - 1;
  if (last_eval_step != step) run_eval(step, epochs_run);

  json test = nullptr;
  if (runner->has_test()) {
    load_init_checkpoint(model, cfg.model, best_dir);
    model.to(dev);
    test = runner->predict_test(out);
    spdlog::info("test set {}: wrote {} (best model, step {}){}", f.test_file, test["predictions"].get<std::string>(),
                 best["step"].dump(), test.contains("metrics") ? " " + test["metrics"].dump() : "");
  }

  json summary = json::object();
  summary["task"] = f.task;
  summary["train_file"] = f.train_file;
  summary["dev_file"] = f.dev_file;
  summary["init_checkpoint"] = load_json;
  summary["train_examples"] = runner->train_examples;
  summary["train_features"] = n;
  summary["dev_examples"] = runner->dev_examples;
  summary["dev_features"] = runner->dev_features;
  summary["data"] = runner->data_stats;
  summary["steps"] = step;
  summary["epochs"] = epochs_run;
  summary["samples"] = samples;
  summary["skipped_steps"] = scaler.skipped_steps();
  summary["elapsed_s"] = seconds_since(t_start);
  summary["evaluations"] = evaluations;
  summary["best"] = best;
  summary["test"] = test;
  write_file_atomic(out / "finetune_summary.json", summary.dump(2) + "\n");
  spdlog::info("done: {} steps, {} epochs in {}; best {} {:.4f} at step {} -> {}; summary {}", step, epochs_run,
               human_duration(seconds_since(t_start)), key, best["value"].get<double>(), best["step"].get<int64_t>(),
               best_dir.string(), (out / "finetune_summary.json").string());
  return {summary, out, best_dir};
}

}  // namespace bert::tasks
