#pragma once
// The LevelDB-format sorted string table that TensorFlow uses for a checkpoint's `.index` file.
//
// Layout: data blocks, a metaindex block, an index block, then a 48-byte footer holding the
// metaindex and index block handles (varint offset + size, zero padded to 40 bytes) and the magic
// number 0xdb4775248b80fb57. A block is a run of prefix-compressed entries
// (shared-length, unshared-length, value-length varints, key suffix, value) followed by an array
// of uint32 restart offsets and their count, and is itself followed by a 5-byte trailer: the
// compression type (0 = none) and the masked CRC-32C of block + type byte. The index block maps a
// separator key to the handle of each data block.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bert::io {

constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;

// Every (key, value) of the table, in key order. Checks the footer, every block handle against the
// file size, every block CRC, the restart array, key prefix lengths and key order; UserError
// "<where>: ..." on anything malformed. Compressed blocks (snappy) are rejected with a clear error.
std::vector<std::pair<std::string, std::string>> read_sstable(std::string_view file, const std::string& where);

// An uncompressed table holding `entries` (which must be sorted by key, no duplicates), with one
// data block per `block_entries` entries and a restart point every `restart_interval` entries.
// Used to write checkpoints and by the tests and fuzz seeds.
std::string write_sstable(const std::vector<std::pair<std::string, std::string>>& entries,
                          size_t block_entries = 64, size_t restart_interval = 16);

}  // namespace bert::io
