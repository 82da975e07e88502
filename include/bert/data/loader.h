#pragma once
// The pretraining loader: HDF5 shards (NVIDIA's schema, MLPerf's int16 variant) -> micro-batches.
//
// Order. An epoch's sample order depends only on (seed, epoch): every shard is cut into chunks
// of `chunk_rows` rows, the chunks of all shards are shuffled together, and the rows inside each
// chunk are shuffled (a bounded shuffle buffer of chunk_rows samples). Optimizer step s consumes
// global samples [s*G, (s+1)*G) of that order (G = global batch); rank r of W takes the
// contiguous slice [s*G + r*G/W, s*G + (r+1)*G/W). So no two ranks read the same sample in an
// epoch, and because the order does not depend on W, a checkpoint resumes exactly with any
// number of ranks. The last partial global batch of an epoch is dropped.
//
// Cursor. (epoch, global samples consumed in the epoch) at a step boundary, plus fingerprints of
// the data; restore() refuses a cursor from different data.
//
// Prefetch. Worker threads assemble micro-batches ahead of the trainer into a bounded queue
// (pinned memory when training on CUDA); HDF5 reads are serialised (the library is not
// thread-safe) and cached per chunk.
//
// Dynamic masking. Files written with `prepare --no-masking` are masked on the fly with
// Google's 80/10/10 rules; the generator for a sample is seeded from (seed, epoch, file, row),
// so a resumed run masks exactly as the uninterrupted one would.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bert/data/masking.h"
#include "bert/train/batch_source.h"

namespace bert::data {

// A directory (every *.hdf5 / *.h5 / *.hdf inside), a glob, or a single file -> sorted paths.
// UserError naming the argument when nothing matches.
std::vector<std::filesystem::path> resolve_shards(const std::string& dir_or_glob);

struct LoaderOptions {
  std::vector<std::filesystem::path> files;
  int64_t seed = 42;
  int64_t micro_batch = 32;
  int64_t global_batch = 256;      // all ranks, one optimizer step
  int64_t rank = 0, world = 1;
  int64_t chunk_rows = 1024;       // shuffle buffer
  int64_t num_workers = 2;         // 0: assemble in the caller's thread
  int64_t prefetch = 4;            // micro-batches queued ahead
  int64_t epochs = 0;              // 0: endless
  bool pin_memory = false;
  int64_t expected_seq_length = 0;  // > 0: the shards must have this length (data.max_seq_length)
  // For files without masked_lm_* datasets (dynamic masking); ignored otherwise.
  bool have_masking_vocab = false;
  MaskingVocab masking_vocab;
  MaskingOptions masking;
};


// Validates every file (datasets, dtypes, shapes; the same seq length and prediction count in
// all of them) and starts the prefetch workers.
std::unique_ptr<train::BatchSource> make_hdf5_source(const LoaderOptions& opts);

}  // namespace bert::data
