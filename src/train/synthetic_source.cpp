// Synthetic pretraining batches: seeded, full-length, with masked positions and NSP labels.
#include <algorithm>
#include <numeric>
#include <random>

#include "bert/common/error.h"
#include "bert/train/batch_source.h"

namespace bert::train {

PretrainBatch PretrainBatch::to(const torch::Device& d) const {
  if (input_ids.device() == d) return *this;
  auto mv = [&](const torch::Tensor& t) { return t.defined() ? t.to(d, /*non_blocking=*/true) : t; };
  return {mv(input_ids),      mv(token_type_ids), mv(attention_mask), mv(masked_lm_positions), mv(masked_lm_ids),
          mv(next_sentence_labels), mv(position_ids), mv(sequence_index), mv(cls_positions)};
}

int64_t PretrainBatch::sequences() const {
  if (!packed()) return size();
  return sequence_index.amax(1).sum().item<int64_t>();
}

PretrainBatch PretrainBatch::narrow(int64_t rows) const {
  auto n = [&](const torch::Tensor& t) { return t.defined() ? t.narrow(0, 0, rows) : t; };
  return {n(input_ids),            n(token_type_ids), n(attention_mask), n(masked_lm_positions), n(masked_lm_ids),
          n(next_sentence_labels), n(position_ids),   n(sequence_index), n(cls_positions)};
}

namespace {

class SyntheticSource final : public BatchSource {
 public:
  SyntheticSource(const DataConfig& data, const ModelConfig& model, int64_t seed)
      : seq_(data.max_seq_length), max_pred_(data.max_predictions_per_seq), vocab_(model.vocab_size),
        types_(model.type_vocab_size), seed_(static_cast<uint64_t>(seed)) {
    if (vocab_ < 8) throw UserError("synthetic data needs model.vocab_size >= 8 (got " + std::to_string(vocab_) + ")");
    if (seq_ < 8) throw UserError("synthetic data needs data.max_seq_length >= 8");
    bool bert_vocab = vocab_ > 1000;
    cls_ = bert_vocab ? 101 : 1;
    sep_ = bert_vocab ? 102 : 2;
    mask_ = bert_vocab ? 103 : 3;
    lo_ = bert_vocab ? 999 : 4;  // first "ordinary" word id
    n_mask_ = std::clamp<int64_t>(static_cast<int64_t>(std::llround(seq_ * data.masked_lm_prob)), 1, max_pred_);
  }

  std::optional<PretrainBatch> next(int64_t b) override {
    std::mt19937_64 rng(seed_ * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(index_) + 1);
    ++index_;
    std::uniform_int_distribution<int64_t> word(lo_, vocab_ - 1);
    auto ids = torch::empty({b, seq_}, torch::kLong), tt = torch::zeros({b, seq_}, torch::kLong);
    auto pos = torch::zeros({b, max_pred_}, torch::kLong), lab = torch::zeros({b, max_pred_}, torch::kLong);
    auto nsp = torch::empty({b}, torch::kLong);
    auto* pi = ids.data_ptr<int64_t>();
    auto* pt = tt.data_ptr<int64_t>();
    auto* pp = pos.data_ptr<int64_t>();
    auto* pl = lab.data_ptr<int64_t>();
    auto* pn = nsp.data_ptr<int64_t>();
    std::vector<int64_t> candidates;
    for (int64_t r = 0; r < b; ++r) {
      int64_t* row = pi + r * seq_;
      // [CLS] A [SEP] B [SEP], A taking 1/4..3/4 of the sequence
      std::uniform_int_distribution<int64_t> split_d(seq_ / 4, (3 * seq_) / 4);
      int64_t split = std::max<int64_t>(2, split_d(rng));
      row[0] = cls_;
      for (int64_t i = 1; i < seq_; ++i) row[i] = word(rng);
      row[split] = sep_;
      row[seq_ - 1] = sep_;
      if (types_ > 1)
        for (int64_t i = split + 1; i < seq_; ++i) pt[r * seq_ + i] = 1;
      candidates.clear();
      for (int64_t i = 1; i < seq_ - 1; ++i)
        if (i != split) candidates.push_back(i);
      for (int64_t k = 0; k < n_mask_; ++k) {  // partial Fisher-Yates: n_mask_ distinct positions
        std::uniform_int_distribution<size_t> pick(static_cast<size_t>(k), candidates.size() - 1);
        std::swap(candidates[static_cast<size_t>(k)], candidates[pick(rng)]);
      }
      std::sort(candidates.begin(), candidates.begin() + n_mask_);
      for (int64_t k = 0; k < n_mask_; ++k) {
        int64_t p = candidates[static_cast<size_t>(k)];
        pp[r * max_pred_ + k] = p;
        pl[r * max_pred_ + k] = row[p];
        row[p] = mask_;
      }
      pn[r] = static_cast<int64_t>(rng() & 1);
    }
    return PretrainBatch{ids, tt, torch::ones({b, seq_}, torch::kLong), pos, lab, nsp, {}, {}, {}};
  }

  config::json cursor() const override { return {{"source", "synthetic"}, {"batches", index_}}; }

  void restore(const config::json& c) override {
    if (!c.is_object() || c.value("source", "") != "synthetic")
      throw UserError("the checkpoint's data cursor is not from synthetic data; resume with the data it was trained on");
    index_ = c.value("batches", int64_t{0});
  }

  std::string describe() const override {
    return "synthetic data: seq " + std::to_string(seq_) + ", " + std::to_string(n_mask_) +
           " masked positions per sequence, vocab " + std::to_string(vocab_);
  }

 private:
  int64_t seq_, max_pred_, vocab_, types_;
  uint64_t seed_;
  int64_t cls_, sep_, mask_, lo_, n_mask_;
  int64_t index_ = 0;
};

}  // namespace

std::unique_ptr<BatchSource> make_synthetic_source(const DataConfig& data, const ModelConfig& model, int64_t seed) {
  return std::make_unique<SyntheticSource>(data, model, seed);
}

}  // namespace bert::train
