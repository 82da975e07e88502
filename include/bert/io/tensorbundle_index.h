#pragma once
// The contents of a TensorFlow checkpoint (TensorBundle) index, decoded without TensorFlow or
// LibTorch: the empty key holds a BundleHeaderProto (num_shards, endianness, version) and every
// other key names a variable whose value is a BundleEntryProto (dtype, shape, shard id, offset and
// size inside `<prefix>.data-0000S-of-0000N`, masked CRC-32C of the bytes, slices).
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bert::io {

// TensorFlow's DataType enum values that a bundle entry may carry.
enum TfDType : int {
  kTfFloat = 1, kTfDouble = 2, kTfInt32 = 3, kTfUInt8 = 4, kTfInt16 = 5, kTfInt8 = 6, kTfString = 7,
  kTfInt64 = 9, kTfBool = 10, kTfBFloat16 = 14, kTfHalf = 19,
};
// "float32", "int64", ... or "DT_<n>" for enum values we do not know.
std::string tf_dtype_name(int dtype);
// Bytes per element, 0 for types whose tensors cannot be read as a flat array (strings, unknown).
size_t tf_dtype_size(int dtype);

struct BundleHeader {
  int64_t num_shards = 1;
  bool big_endian = false;
  int64_t producer = 0;  // VersionDef.producer
};

struct BundleEntry {
  std::string name;
  int dtype = 0;
  std::vector<int64_t> shape;
  int64_t shard_id = 0;
  int64_t offset = 0;
  int64_t size = 0;
  uint32_t masked_crc = 0;  // as stored: crc32c_mask(crc32c(bytes))
  bool has_crc = false;
  size_t num_slices = 0;  // > 0 for partitioned variables (not readable here)

  int64_t numel() const;
};

struct BundleIndex {
  BundleHeader header;
  std::vector<BundleEntry> entries;  // in key order
};

// Decodes a whole `.index` file. Checks the table (see read_sstable), the header, and each entry:
// non-negative dims, shard id below num_shards, offset/size non-negative and, for fixed-size
// dtypes, size == numel * element size. UserError "<where>: ..." otherwise.
BundleIndex parse_bundle_index(std::string_view index_file, const std::string& where);

// Checks `bytes` (read from e's shard at e.offset) against e.size and e's CRC; returns them.
std::string_view check_bundle_bytes(const BundleEntry& e, std::string_view bytes, const std::string& where);
// UserError unless [offset, offset + size) lies inside a file of `file_size` bytes.
void check_bundle_range(const BundleEntry& e, uint64_t file_size, const std::string& where);

// "<prefix>.data-00000-of-00001"
std::string bundle_data_path(const std::string& prefix, int64_t shard, int64_t num_shards);

// Writing: one variable to store.
struct BundleTensor {
  std::string name;
  int dtype = kTfFloat;
  std::vector<int64_t> shape;
  std::string bytes;  // little-endian element data, numel * element size bytes
};
// A single-shard bundle holding `tensors` (sorted by name here): returns {index file, data file}.
std::pair<std::string, std::string> write_bundle(std::vector<BundleTensor> tensors);

}  // namespace bert::io
