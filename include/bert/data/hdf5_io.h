#pragma once
// Pretraining HDF5 files in NVIDIA's schema (see docs/hdf5_format.md):
//   input_ids int32 [N,L], input_mask int8 [N,L], segment_ids int8 [N,L],
//   masked_lm_positions int32 [N,P], masked_lm_ids int32 [N,P], next_sentence_labels int8 [N].
// The reader accepts any integer width (MLPerf's int16 files included) and converts to int32;
// files written with --no-masking have no masked_lm_* datasets.
// Packed files (`shard --pack`, docs/packing.md) add position_ids, sequence_index and
// cls_positions, store next_sentence_labels as [N,S], and carry the root attribute
// `packed_max_sequences_per_row` = S.
// The Debian HDF5 library is not thread-safe: every call into it takes hdf5_mutex().
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace bert::data {

std::mutex& hdf5_mutex();

// Rows [begin,end) of a pretraining file, row-major, all as int32.
struct PretrainRows {
  int64_t rows = 0;
  int64_t seq_length = 0;       // L
  int64_t max_predictions = 0;  // P (0 when the file has no masking)
  std::vector<int32_t> input_ids, input_mask, segment_ids;      // rows*L
  std::vector<int32_t> masked_lm_positions, masked_lm_ids;      // rows*P
  std::vector<int32_t> next_sentence_labels;                    // rows (packed: rows*S, -1 = no sequence)
  // Packed rows only (max_sequences = S > 0); empty otherwise.
  int64_t max_sequences = 0;
  std::vector<int32_t> position_ids, sequence_index;  // rows*L: 0.. per sequence; 1..k per token, 0 = padding
  std::vector<int32_t> cls_positions;                 // rows*S: [CLS] position of each sequence, 0 when absent

  bool packed() const { return max_sequences > 0; }
  // Zero-filled (S > 0: packed layout, next_sentence_labels filled with -1).
  void resize(int64_t n, int64_t L, int64_t P, int64_t S = 0);
};

// Writes one file; rows may be written in any number of write() calls covering [0,N).
// The file lives under a temporary name until commit(); destroying an uncommitted writer
// removes the temporary.
class Hdf5Writer {
 public:
  // max_sequences > 0 writes the packed schema (masking required).
  Hdf5Writer(const std::filesystem::path& path, int64_t rows, int64_t seq_length, int64_t max_predictions,
             bool masking, bool compress, int64_t max_sequences = 0);
  ~Hdf5Writer();
  Hdf5Writer(const Hdf5Writer&) = delete;
  Hdf5Writer& operator=(const Hdf5Writer&) = delete;
  // Writes `r.rows` rows starting at row `begin`. r's L, P and S must match the file's.
  // With compression, a write of whole chunks (begin a multiple of 4096 rows, 4096 rows or up
  // to the end) of an unpacked file is compressed on the calling thread, outside the HDF5 lock,
  // and stored with H5Dwrite_chunk; other writes go through HDF5's filter pipeline under the lock.
  void write(int64_t begin, const PretrainRows& r);
  void commit();  // close, then rename the temporary to the final path

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class Hdf5Reader {
 public:
  // Opens and validates the schema; UserError naming the file and dataset otherwise.
  explicit Hdf5Reader(const std::filesystem::path& path);
  ~Hdf5Reader();
  Hdf5Reader(const Hdf5Reader&) = delete;
  Hdf5Reader& operator=(const Hdf5Reader&) = delete;

  int64_t size() const;             // N
  int64_t seq_length() const;       // L
  int64_t max_predictions() const;  // P (0 without masking)
  bool has_masking() const;
  int64_t max_sequences() const;    // S of a packed file, 0 for ordinary files
  bool is_packed() const { return max_sequences() > 0; }
  const std::filesystem::path& path() const;
  // Reads rows [begin,end) into `out` (resized). UserError if the range is out of bounds.
  void read(int64_t begin, int64_t end, PretrainRows& out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bert::data
