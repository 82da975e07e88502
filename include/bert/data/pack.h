#pragma once
// Sequence packing (`shard --pack`, `prepare --pack`; docs/packing.md): already-masked instances
// in NVIDIA's HDF5 schema -> packed rows of up to S sequences each (S = 3 by default).
//
// Algorithm: shortest-pack-first histogram packing (SPFHP, Krell et al. 2021). Sequences are taken
// longest first; each goes into the open pack with the least room left that still fits it (tokens
// and masked predictions), or opens a new pack. A pack closes when it holds S sequences. The
// packs of one output shard are then shuffled with a seeded generator, so the loader's chunked
// shuffle does not see long-first clusters.
//
// A packed row holds its sequences back to back ([CLS] A [SEP] B [SEP] [CLS] A' [SEP] B' [SEP] ...
// then padding), with position ids restarting at 0 for each sequence, a per-token sequence index
// (1..k, 0 = padding; the model builds a block-diagonal attention mask from it), the masked
// positions shifted to the row and concatenated, and per-sequence NSP labels and [CLS] positions.
#include <cstdint>
#include <string>
#include <vector>

#include "bert/config/fields.h"
#include "bert/data/hdf5_io.h"

namespace bert::data {

struct PackOptions {
  int64_t max_sequences_per_row = 3;
  int64_t max_predictions = 0;  // masked slots per packed row; 0 = max_sequences_per_row x the input's P
  uint64_t seed = 42;           // order of the packed rows inside each output file
};

// SPFHP over sequence lengths (and masked-prediction counts, which must also fit `max_predictions`
// per pack; pass an empty `predictions` for no such limit). Returns the packs as indices into
// `lengths`, each pack in placement order. UserError if a sequence alone does not fit a row.
std::vector<std::vector<int64_t>> pack_sequences(const std::vector<int64_t>& lengths,
                                                 const std::vector<int64_t>& predictions, int64_t row_length,
                                                 int64_t max_predictions, int64_t max_per_row);

// The packing factor of one or more packing passes.
struct PackStats {
  int64_t sequences = 0, rows_in = 0, rows_out = 0;
  int64_t tokens = 0;          // real (unpadded) tokens
  int64_t masked_tokens = 0;
  int64_t seq_length = 0;      // L
  std::vector<int64_t> rows_holding;  // [k] = packed rows holding k sequences

  double sequences_per_row() const { return rows_out > 0 ? static_cast<double>(sequences) / rows_out : 0; }
  double padding_before() const;  // share of padding tokens in the unpacked rows
  double padding_after() const;   // ... in the packed rows
  void add(const PackStats& o);
  config::json to_json() const;
  std::string summary() const;  // one line
};

// Unpacked, masked rows -> packed rows (row order shuffled with `stream` mixed into opts.seed).
// UserError for rows without masking, already packed rows, or an empty row.
PretrainRows pack_rows(const PretrainRows& in, const PackOptions& opts, uint64_t stream, PackStats* stats);

// The HDF5 -> HDF5 pass: inputs rebalanced into `num_shards` outputs as `bert-train shard` does
// (0 = as many outputs as inputs), each output packed on its own (it is held in memory while it is
// packed), written as <prefix>_NNNNN.hdf5, plus manifest.json with the packing factor.
struct PackConfig {
  std::vector<std::string> inputs;  // files or globs
  std::string output_dir;
  int64_t num_shards = 0;
  bool compress = false;
  std::string prefix = "packed";
  PackOptions pack;
};

struct PackResult {
  std::vector<std::string> files;
  std::vector<int64_t> rows;
  PackStats stats;
};

PackResult run_pack(const PackConfig& cfg);

}  // namespace bert::data
