#pragma once
// `bert-train prepare`: text corpus -> HDF5 pretraining shards (NVIDIA's schema) with Google's
// create_pretraining_data algorithm. See docs/prepare.md.
//
// The corpus is scanned once and cut into shards at document boundaries (plan_shards); shard s
// is then built alone from its own documents with Rng::for_stream(random_seed, s): documents
// shuffled, dupe_factor passes of create_instances_from_document, instances shuffled, written.
// Workers take whole shards, so the output is byte-identical for any --num-workers.
// manifest.json records settings, per-shard counts and md5; a re-run with the same settings
// keeps every shard whose file still has the recorded md5.
#include <cstdint>
#include <string>
#include <vector>

#include "bert/config/fields.h"
#include "bert/data/prepare_input.h"

namespace bert::data {

struct PrepareConfig {
  std::vector<std::string> inputs;  // files or globs
  std::string vocab;
  std::string output_dir;
  bool lower_case = true;
  int64_t max_seq_length = 128;
  int64_t max_predictions_per_seq = 20;
  double masked_lm_prob = 0.15;
  int64_t dupe_factor = 5;
  double short_seq_prob = 0.1;
  int64_t random_seed = 12345;
  bool whole_word_mask = false;
  bool no_masking = false;
  std::string input_format = "lines";
  int64_t num_workers = 0;    // 0 = all cores
  int64_t num_shards = 0;     // 0 = from shard_size_mb
  double shard_size_mb = 32;  // MB (10^6 bytes) of input text per shard when num_shards is 0
  bool compress = false;
  int64_t max_line_bytes = 1 << 20;

  void describe(config::FieldList& f) {
    f.add("inputs", inputs, "input text files or globs");
    f.add("vocab", vocab, "WordPiece vocab.txt");
    f.add("output_dir", output_dir, "directory for the shards and manifest.json");
    f.add("lower_case", lower_case, "lower-case and strip accents (uncased vocab)");
    f.add("max_seq_length", max_seq_length, "tokens per instance, [CLS] and [SEP]s included").range(8, 1 << 16);
    f.add("max_predictions_per_seq", max_predictions_per_seq, "masked positions per instance").range(1, 1 << 16);
    f.add("masked_lm_prob", masked_lm_prob, "share of tokens masked").range(0, 1);
    f.add("dupe_factor", dupe_factor, "passes over the corpus with different masks").range(1, 1000);
    f.add("short_seq_prob", short_seq_prob, "probability of a shorter target length").range(0, 1);
    f.add("random_seed", random_seed, "seed of every random choice").range(0, 9.2e18);
    f.add("whole_word_mask", whole_word_mask, "mask whole words (all ## pieces together)");
    f.add("no_masking", no_masking, "write unmasked sequences (no masked_lm_* datasets)");
    f.add("input_format", input_format, "lines: sentence per line; paragraphs: paragraph per line")
        .one_of({"lines", "paragraphs"});
    f.add("num_workers", num_workers, "worker threads (0 = all cores)").range(0, 1024);
    f.add("num_shards", num_shards, "number of output shards (0 = from shard_size_mb)").range(0, 1e6);
    f.add("shard_size_mb", shard_size_mb, "MB of input text per shard when num_shards is 0").range(0.000001, 1e6);
    f.add("compress", compress, "gzip the HDF5 datasets");
    f.add("max_line_bytes", max_line_bytes, "longest input line accepted").range(1, 1LL << 34);
  }
};

// What prepare needs from the tokenizer (kept abstract so the builder can be tested with tiny vocabs).
struct PrepareTokenizer {
  EncodeFn encode;                        // must be safe to call from several threads
  std::vector<std::string> vocab_tokens;  // id -> token
  int32_t cls_id = -1, sep_id = -1, mask_id = -1;
};

struct ShardStats {
  int64_t index = 0;
  std::string file;
  std::string md5;
  uint64_t file_bytes = 0, input_bytes = 0;
  uint64_t documents = 0, sentences = 0, instances = 0, tokens = 0, padding = 0, masked = 0, random_next = 0,
           invalid_utf8_bytes = 0;
};

struct PrepareSummary {
  std::vector<ShardStats> shards;  // by index
  int64_t reused = 0;              // shards kept from an earlier run
  ShardStats totals;
  double seconds = 0;
};

std::string shard_file_name(int64_t index);  // "shard_00000.hdf5"

PrepareSummary run_prepare(const PrepareConfig& cfg, const PrepareTokenizer& tok);

}  // namespace bert::data
