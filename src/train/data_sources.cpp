// RunConfig -> batch source (see include/bert/train/data_sources.h).
#include "bert/train/data_sources.h"

#include "bert/common/error.h"
#include "bert/data/loader.h"
#include "bert/text/tokenizer.h"

namespace bert::train {

namespace {

// Masked-LM batches hold max_predictions_per_seq positions of a max_seq_length sequence; only
// pretraining reads these keys (fine-tuning may use sequences shorter than the default 20).
// max_seq_length 0 means "as the shards say" (bert-train evaluate --task pretrain).
void check_masking(const RunConfig& cfg) {
  if (cfg.data.max_seq_length > 0 && cfg.data.max_predictions_per_seq > cfg.data.max_seq_length)
    throw UserError("data.max_predictions_per_seq (" + std::to_string(cfg.data.max_predictions_per_seq) +
                    ") must not exceed data.max_seq_length (" + std::to_string(cfg.data.max_seq_length) +
                    "); lower --set data.max_predictions_per_seq");
}

data::LoaderOptions loader_options(const RunConfig& cfg, const std::string& dir) {
  check_masking(cfg);
  data::LoaderOptions o;
  o.files = data::resolve_shards(dir);
  o.expected_seq_length = cfg.data.max_seq_length;
  o.seed = cfg.train.seed;
  o.chunk_rows = cfg.data.shuffle_buffer;
  o.num_workers = cfg.data.num_workers;
  o.prefetch = cfg.data.prefetch;
  o.masking.masked_lm_prob = cfg.data.masked_lm_prob;
  o.masking.max_predictions_per_seq = cfg.data.max_predictions_per_seq;
  o.masking.whole_word_mask = cfg.data.whole_word_mask;
  if (!cfg.data.vocab.empty()) {
    text::Vocab v = text::Vocab::load(cfg.data.vocab);
    if (static_cast<int64_t>(v.size()) > cfg.model.vocab_size)
      throw UserError("data.vocab " + cfg.data.vocab + " has " + std::to_string(v.size()) +
                      " tokens but model.vocab_size is " + std::to_string(cfg.model.vocab_size) +
                      "; set --set model.vocab_size=" + std::to_string(v.size()));
    o.have_masking_vocab = true;
    o.masking_vocab.cls_id = v.cls_id();
    o.masking_vocab.sep_id = v.sep_id();
    o.masking_vocab.mask_id = v.mask_id();
    o.masking_vocab.vocab_size = static_cast<int32_t>(v.size());
    o.masking_vocab.is_continuation.resize(v.size());
    for (size_t i = 0; i < v.size(); ++i) o.masking_vocab.is_continuation[i] = v.is_continuation(static_cast<int32_t>(i));
  }
  return o;
}

}  // namespace

std::unique_ptr<BatchSource> make_training_source(const RunConfig& cfg, int64_t rank, int64_t world, bool pin_memory) {
  check_masking(cfg);
  if (cfg.data.synthetic) return make_synthetic_source(cfg.data, cfg.model, cfg.train.seed + rank);
  if (cfg.data.data_dir.empty())
    throw UserError("no training data: pass --data-dir DIR (HDF5 shards from `bert-train prepare`) or --synthetic-data");
  data::LoaderOptions o = loader_options(cfg, cfg.data.data_dir);
  o.micro_batch = cfg.train.micro_batch_size;
  o.global_batch = cfg.train.global_batch_size;
  o.rank = rank;
  o.world = world;
  o.pin_memory = pin_memory;
  return data::make_hdf5_source(o);
}

std::unique_ptr<BatchSource> make_eval_source(const RunConfig& cfg, const std::string& dir, int64_t rank,
                                              int64_t world) {
  data::LoaderOptions o = loader_options(cfg, dir);
  int64_t b = cfg.eval.batch_size > 0 ? cfg.eval.batch_size : cfg.train.micro_batch_size;
  o.micro_batch = b;
  o.global_batch = b * world;
  o.rank = rank;
  o.world = world;
  o.epochs = 1;
  o.num_workers = std::min<int64_t>(o.num_workers, 1);
  return data::make_hdf5_source(o);
}

}  // namespace bert::train
