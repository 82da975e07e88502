// The pretraining loader (see include/bert/data/loader.h for the ordering and cursor rules).
#include "bert/data/loader.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <fnmatch.h>
#include <glob.h>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include "bert/common/error.h"
#include "bert/common/strings.h"
#include "bert/data/hdf5_io.h"
#include "bert/data/instances_rng.h"

namespace bert::data {

namespace fs = std::filesystem;
using config::json;

std::vector<fs::path> resolve_shards(const std::string& arg) {
  std::vector<fs::path> out;
  std::error_code ec;
  auto is_shard = [](const fs::path& p) {
    auto e = p.extension().string();
    return e == ".hdf5" || e == ".h5" || e == ".hdf";
  };
  if (fs::is_directory(arg, ec)) {
    for (const auto& entry : fs::directory_iterator(arg, ec))
      if (entry.is_regular_file() && is_shard(entry.path()) && entry.path().string().find(".tmp.") == std::string::npos)
        out.push_back(entry.path());
    if (out.empty()) throw UserError("no HDF5 shards (*.hdf5, *.h5) in directory " + arg + "; run `bert-train prepare` first");
  } else if (fs::is_regular_file(arg, ec)) {
    out.push_back(arg);
  } else {
    glob_t g{};
    if (::glob(arg.c_str(), 0, nullptr, &g) == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i)
        if (fs::is_regular_file(g.gl_pathv[i], ec)) out.emplace_back(g.gl_pathv[i]);
    globfree(&g);
    if (out.empty()) throw UserError("no HDF5 shards match " + arg + " (give a directory, a glob or a file)");
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

struct Chunk {
  int32_t file;
  int64_t begin, end;
};

struct EpochOrder {
  int64_t epoch = -1;
  std::vector<int32_t> chunk_order;  // chunk ids in this epoch's order
  std::vector<int64_t> prefix;       // prefix[c] = samples before position c; size chunks+1
};

constexpr uint64_t kOrderStream = 0x6f72646572ULL;  // "order"
constexpr uint64_t kRowStream = 0x726f7773ULL;      // "rows"
constexpr uint64_t kMaskStream = 0x6d61736bULL;     // "mask"

class Hdf5Loader final : public train::BatchSource {
 public:
  explicit Hdf5Loader(LoaderOptions o) : o_(std::move(o)) {
    if (o_.files.empty()) throw UserError("no HDF5 shards given");
    if (o_.world < 1 || o_.rank < 0 || o_.rank >= o_.world) throw UserError("loader: bad rank/world");
    if (o_.global_batch % o_.world != 0)
      throw UserError("train.global_batch_size (" + std::to_string(o_.global_batch) +
                      ") must be a multiple of the number of ranks (" + std::to_string(o_.world) + ")");
    per_rank_step_ = o_.global_batch / o_.world;
    if (per_rank_step_ % o_.micro_batch != 0)
      throw UserError("per-rank share of the global batch (" + std::to_string(per_rank_step_) +
                      ") must be a multiple of train.micro_batch_size (" + std::to_string(o_.micro_batch) + ")");
    if (o_.chunk_rows < 1) o_.chunk_rows = 1;
    for (size_t f = 0; f < o_.files.size(); ++f) {
      auto r = std::make_unique<Hdf5Reader>(o_.files[f]);
      if (f == 0) {
        L_ = r->seq_length();
        S_ = r->max_sequences();
        file_masked_ = r->has_masking();
        P_ = file_masked_ ? r->max_predictions() : o_.masking.max_predictions_per_seq;
      } else {
        if (r->seq_length() != L_)
          throw UserError(o_.files[f].string() + ": input_ids has sequence length " + std::to_string(r->seq_length()) +
                          " but " + o_.files[0].string() + " has " + std::to_string(L_) + "; use shards of one length");
        if (r->max_sequences() != S_)
          throw UserError(o_.files[f].string() + (r->is_packed() ? " is packed (" + std::to_string(r->max_sequences()) +
                                                                       " sequences per row)"
                                                                 : " is not packed") +
                          " unlike " + o_.files[0].string() + "; do not mix packed and unpacked shards");
        if (r->has_masking() != file_masked_)
          throw UserError(o_.files[f].string() + (r->has_masking() ? " is masked" : " is unmasked (--no-masking)") +
                          " unlike " + o_.files[0].string() + "; do not mix masked and unmasked shards");
        if (file_masked_ && r->max_predictions() != P_)
          throw UserError(o_.files[f].string() + ": masked_lm_positions has " + std::to_string(r->max_predictions()) +
                          " columns but " + o_.files[0].string() + " has " + std::to_string(P_));
      }
      for (int64_t b = 0; b < r->size(); b += o_.chunk_rows)
        chunks_.push_back({static_cast<int32_t>(f), b, std::min(r->size(), b + o_.chunk_rows)});
      total_rows_ += r->size();
      readers_.push_back(std::move(r));
    }
    if (o_.expected_seq_length > 0 && L_ != o_.expected_seq_length)
      throw UserError(o_.files[0].string() + " holds sequences of " + std::to_string(L_) +
                      " tokens but data.max_seq_length is " + std::to_string(o_.expected_seq_length) +
                      "; use --max-seq-length " + std::to_string(L_) + " or prepare data with --max-seq-length " +
                      std::to_string(o_.expected_seq_length));
    if (!file_masked_ && !o_.have_masking_vocab)
      throw UserError(o_.files[0].string() +
                      " was written with --no-masking; pass the vocabulary (--vocab / data.vocab) so the loader can "
                      "mask on the fly");
    steps_per_epoch_ = total_rows_ / o_.global_batch;
    if (steps_per_epoch_ == 0)
      throw UserError("the shards hold " + std::to_string(total_rows_) + " sequences, fewer than one global batch (" +
                      std::to_string(o_.global_batch) +
                      "); lower the batch size (train.global_batch_size when training, --batch-size when "
                      "evaluating) or add data");
    micro_per_epoch_ = steps_per_epoch_ * (per_rank_step_ / o_.micro_batch);
    start();
  }

  ~Hdf5Loader() override { stop(); }

  std::optional<train::PretrainBatch> next(int64_t batch_size) override {
    if (batch_size != o_.micro_batch)
      throw RuntimeError("loader built for micro-batches of " + std::to_string(o_.micro_batch) + ", asked for " +
                         std::to_string(batch_size));
    if (o_.num_workers == 0) {
      auto b = assemble(consumed_k_);
      if (b) ++consumed_k_;
      return b;
    }
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return ready_.count(consumed_k_) > 0; });
    Slot slot = std::move(ready_[consumed_k_]);
    ready_.erase(consumed_k_);
    if (slot.error) std::rethrow_exception(slot.error);
    if (slot.batch) ++consumed_k_;
    cv_.notify_all();
    return std::move(slot.batch);
  }

  int64_t epoch() const override { return consumed_k_ / micro_per_epoch_; }

  json cursor() const override {
    int64_t k = consumed_k_;
    int64_t e = k / micro_per_epoch_;
    int64_t local = (k % micro_per_epoch_) * o_.micro_batch;
    int64_t steps = local / per_rank_step_;
    return json{{"source", "hdf5"},
                {"epoch", e},
                {"samples_in_epoch", steps * o_.global_batch},
                {"seed", o_.seed},
                {"total_samples", total_rows_},
                {"files", static_cast<int64_t>(o_.files.size())},
                {"chunk_rows", o_.chunk_rows},
                {"global_batch", o_.global_batch}};
  }

  void restore(const json& c) override {
    auto get = [&](const char* key) -> int64_t {
      if (!c.is_object() || !c.contains(key) || !c[key].is_number_integer())
        throw UserError(std::string("checkpoint data cursor has no '") + key + "'; it was not written by the HDF5 loader");
      return c[key].get<int64_t>();
    };
    if (c.value("source", std::string()) != "hdf5")
      throw UserError("checkpoint data cursor is for '" + c.value("source", std::string("?")) +
                      "' data, not HDF5 shards; use --init-checkpoint to start on new data");
    if (get("total_samples") != total_rows_ || get("files") != static_cast<int64_t>(o_.files.size()))
      throw UserError("checkpoint was trained on " + std::to_string(get("total_samples")) + " samples in " +
                      std::to_string(get("files")) + " shards, --data-dir has " + std::to_string(total_rows_) + " in " +
                      std::to_string(o_.files.size()) + "; resume on the same data or use --init-checkpoint");
    if (get("seed") != o_.seed || get("chunk_rows") != o_.chunk_rows)
      throw UserError("checkpoint data order used seed " + std::to_string(get("seed")) + " and shuffle buffer " +
                      std::to_string(get("chunk_rows")) + "; resume with the same train.seed and data.shuffle_buffer");
    int64_t e = get("epoch"), samples = get("samples_in_epoch");
    if (get("global_batch") != o_.global_batch)
      spdlog::warn("resuming with global batch {} instead of {}: the data order continues from the nearest step boundary",
                   o_.global_batch, get("global_batch"));
    int64_t steps = std::min(samples / o_.global_batch, steps_per_epoch_);
    stop();
    ready_.clear();
    consumed_k_ = e * micro_per_epoch_ + steps * (per_rank_step_ / o_.micro_batch);
    start();
  }

  std::string describe() const override {
    return std::to_string(o_.files.size()) + " HDF5 shard(s), " + std::to_string(total_rows_) + " sequences of " +
           std::to_string(L_) + " tokens, " + (file_masked_ ? "static" : "dynamic") + " masking (" +
           std::to_string(P_) + " predictions), " +
           (S_ > 0 ? "packed (up to " + std::to_string(S_) + " sequences per row), " : std::string()) +
           std::to_string(steps_per_epoch_) + " steps/epoch" +
           (o_.world > 1 ? ", rank " + std::to_string(o_.rank) + "/" + std::to_string(o_.world) : "");
  }

  int64_t steps_per_epoch() const { return steps_per_epoch_; }

 private:
  struct Slot {
    std::optional<train::PretrainBatch> batch;
    std::exception_ptr error;
  };

  // ---- ordering ----
  std::shared_ptr<const EpochOrder> order_for(int64_t epoch) {
    std::lock_guard<std::mutex> lk(order_mu_);
    if (order_ && order_->epoch == epoch) return order_;
    auto o = std::make_shared<EpochOrder>();
    o->epoch = epoch;
    o->chunk_order.resize(chunks_.size());
    for (size_t i = 0; i < chunks_.size(); ++i) o->chunk_order[i] = static_cast<int32_t>(i);
    Rng rng = Rng::for_stream(static_cast<uint64_t>(o_.seed) ^ kOrderStream, static_cast<uint64_t>(epoch));
    rng.shuffle(o->chunk_order);
    o->prefix.resize(chunks_.size() + 1, 0);
    for (size_t c = 0; c < chunks_.size(); ++c) {
      const Chunk& ch = chunks_[o->chunk_order[c]];
      o->prefix[c + 1] = o->prefix[c] + (ch.end - ch.begin);
    }
    order_ = o;
    return o;
  }

  std::vector<int64_t> row_permutation(int64_t epoch, int32_t chunk_id) const {
    const Chunk& ch = chunks_[chunk_id];
    std::vector<int64_t> perm(ch.end - ch.begin);
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
    Rng rng = Rng::for_stream(static_cast<uint64_t>(o_.seed) ^ kRowStream,
                              (static_cast<uint64_t>(epoch) << 32) ^ static_cast<uint64_t>(chunk_id));
    rng.shuffle(perm);
    return perm;
  }

  // ---- chunk cache ----
  std::shared_ptr<const PretrainRows> chunk_data(int32_t chunk_id) {
    {
      std::lock_guard<std::mutex> lk(cache_mu_);
      for (auto it = cache_.begin(); it != cache_.end(); ++it) {
        if (it->first == chunk_id) {
          cache_.splice(cache_.begin(), cache_, it);
          return cache_.front().second;
        }
      }
    }
    auto rows = std::make_shared<PretrainRows>();
    const Chunk& ch = chunks_[chunk_id];
    readers_[ch.file]->read(ch.begin, ch.end, *rows);
    std::lock_guard<std::mutex> lk(cache_mu_);
    cache_.emplace_front(chunk_id, rows);
    size_t cap = static_cast<size_t>(std::max<int64_t>(4, o_.num_workers * 2 + 2));
    while (cache_.size() > cap) cache_.pop_back();
    return rows;
  }

  // ---- assembling micro-batch k (this rank's k-th, counted across epochs) ----
  std::optional<train::PretrainBatch> assemble(int64_t k) {
    int64_t e = k / micro_per_epoch_;
    if (o_.epochs > 0 && e >= o_.epochs) return std::nullopt;
    auto order = order_for(e);
    const int64_t B = o_.micro_batch;
    auto opt = torch::TensorOptions().dtype(torch::kInt64);
    torch::Tensor ids = torch::zeros({B, L_}, opt), seg = torch::zeros({B, L_}, opt), mask = torch::zeros({B, L_}, opt);
    torch::Tensor pos = torch::zeros({B, P_}, opt), lab = torch::zeros({B, P_}, opt), nsp = torch::zeros({B}, opt);
    auto ids_a = ids.accessor<int64_t, 2>(), seg_a = seg.accessor<int64_t, 2>(), mask_a = mask.accessor<int64_t, 2>();
    auto pos_a = pos.accessor<int64_t, 2>(), lab_a = lab.accessor<int64_t, 2>();
    // Packed rows: per-sequence NSP labels [B,S], position ids, sequence index, [CLS] positions.
    torch::Tensor nsp2, pid, sidx, clsp;
    if (S_ > 0) {
      nsp2 = torch::full({B, S_}, -1, opt);
      pid = torch::zeros({B, L_}, opt);
      sidx = torch::zeros({B, L_}, opt);
      clsp = torch::zeros({B, S_}, opt);
    }
    auto nsp_a = nsp.accessor<int64_t, 1>();

    int32_t cached_chunk = -1;
    std::vector<int64_t> perm;
    std::shared_ptr<const PretrainRows> rows;
    std::vector<int32_t> tokens;
    int64_t local0 = (k % micro_per_epoch_) * B;
    for (int64_t t = 0; t < B; ++t) {
      int64_t j = local0 + t;
      int64_t step = j / per_rank_step_, off = j % per_rank_step_;
      int64_t i = step * o_.global_batch + o_.rank * per_rank_step_ + off;  // global index in the epoch
      size_t c = static_cast<size_t>(std::upper_bound(order->prefix.begin(), order->prefix.end(), i) -
                                     order->prefix.begin()) - 1;
      int32_t chunk_id = order->chunk_order[c];
      if (chunk_id != cached_chunk) {
        perm = row_permutation(e, chunk_id);
        rows = chunk_data(chunk_id);
        cached_chunk = chunk_id;
      }
      int64_t r = perm[i - order->prefix[c]];
      const int64_t Lf = rows->seq_length, Pf = rows->max_predictions;
      for (int64_t x = 0; x < L_; ++x) {
        ids_a[t][x] = rows->input_ids[r * Lf + x];
        seg_a[t][x] = rows->segment_ids[r * Lf + x];
        mask_a[t][x] = rows->input_mask[r * Lf + x];
      }
      if (S_ > 0) {
        auto nsp2_a = nsp2.accessor<int64_t, 2>(), cls_a = clsp.accessor<int64_t, 2>();
        auto pid_a = pid.accessor<int64_t, 2>(), sidx_a = sidx.accessor<int64_t, 2>();
        for (int64_t x = 0; x < L_; ++x) {
          pid_a[t][x] = rows->position_ids[r * Lf + x];
          sidx_a[t][x] = rows->sequence_index[r * Lf + x];
        }
        for (int64_t x = 0; x < S_; ++x) {
          nsp2_a[t][x] = rows->next_sentence_labels[r * S_ + x];
          cls_a[t][x] = rows->cls_positions[r * S_ + x];
        }
      } else {
        nsp_a[t] = rows->next_sentence_labels[r];
      }
      if (file_masked_) {
        for (int64_t x = 0; x < Pf; ++x) {
          int32_t p = rows->masked_lm_positions[r * Pf + x];
          if (p == 0) break;  // the first 0 position ends the list
          pos_a[t][x] = p;
          lab_a[t][x] = rows->masked_lm_ids[r * Pf + x];
        }
      } else {
        int64_t len = 0;
        while (len < L_ && rows->input_mask[r * Lf + len] != 0) ++len;
        tokens.assign(rows->input_ids.begin() + r * Lf, rows->input_ids.begin() + r * Lf + len);
        const Chunk& ch = chunks_[chunk_id];
        uint64_t sample_key = (static_cast<uint64_t>(ch.file) << 40) ^ static_cast<uint64_t>(ch.begin + r);
        Rng rng = Rng::for_stream(static_cast<uint64_t>(o_.seed) ^ kMaskStream ^ (static_cast<uint64_t>(e) << 48),
                                  sample_key);
        MaskedLm m = create_masked_lm_predictions(tokens, o_.masking_vocab, o_.masking, rng);
        for (int64_t x = 0; x < len; ++x) ids_a[t][x] = tokens[x];
        for (size_t x = 0; x < m.positions.size() && static_cast<int64_t>(x) < P_; ++x) {
          pos_a[t][x] = m.positions[x];
          lab_a[t][x] = m.labels[x];
        }
      }
    }
    // pid, sidx, clsp stay undefined for unpacked files
    train::PretrainBatch b{ids, seg, mask, pos, lab, S_ > 0 ? nsp2 : nsp, pid, sidx, clsp};
    if (o_.pin_memory) {
      for (torch::Tensor* t : {&b.input_ids, &b.token_type_ids, &b.attention_mask, &b.masked_lm_positions,
                               &b.masked_lm_ids, &b.next_sentence_labels, &b.position_ids, &b.sequence_index,
                               &b.cls_positions})
        if (t->defined()) *t = t->pin_memory();
    }
    return b;
  }

  // ---- prefetch workers ----
  void start() {
    if (o_.num_workers == 0) return;
    stop_ = false;
    next_k_ = consumed_k_;
    for (int64_t w = 0; w < o_.num_workers; ++w) workers_.emplace_back([this] { work(); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  void work() {
    for (;;) {
      int64_t k;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || next_k_ < consumed_k_ + o_.prefetch; });
        if (stop_) return;
        k = next_k_++;
      }
      Slot slot;
      try {
        slot.batch = assemble(k);
      } catch (...) {
        slot.error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lk(mu_);
        ready_[k] = std::move(slot);
      }
      cv_.notify_all();
    }
  }

  LoaderOptions o_;
  std::vector<std::unique_ptr<Hdf5Reader>> readers_;
  std::vector<Chunk> chunks_;
  int64_t total_rows_ = 0, L_ = 0, P_ = 0, S_ = 0;  // S_ > 0: packed files
  bool file_masked_ = true;
  int64_t per_rank_step_ = 0, steps_per_epoch_ = 0, micro_per_epoch_ = 0;

  std::mutex order_mu_;
  std::shared_ptr<const EpochOrder> order_;
  std::mutex cache_mu_;
  std::list<std::pair<int32_t, std::shared_ptr<const PretrainRows>>> cache_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int64_t, Slot> ready_;
  std::vector<std::thread> workers_;
  bool stop_ = false;
  int64_t next_k_ = 0;
  int64_t consumed_k_ = 0;
};

}  // namespace

std::unique_ptr<train::BatchSource> make_hdf5_source(const LoaderOptions& opts) {
  return std::make_unique<Hdf5Loader>(opts);
}

}  // namespace bert::data
