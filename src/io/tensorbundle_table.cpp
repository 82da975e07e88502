// Reading and writing LevelDB-format tables (the `.index` file of a TensorFlow checkpoint).
#include "bert/io/tensorbundle_table.h"

#include "bert/common/error.h"
#include "bert/io/tensorbundle_wire.h"

namespace bert::io {

namespace {

constexpr size_t kFooterSize = 48;
constexpr size_t kTrailerSize = 5;  // compression type + masked crc32c
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
constexpr bool kCheckCrc = false;  // fuzz builds: mutated blocks reach the decoder behind the check
#else
constexpr bool kCheckCrc = true;
#endif

struct BlockHandle {
  uint64_t offset = 0, size = 0;
};

BlockHandle read_handle(ByteReader& in, const char* what) {
  BlockHandle h;
  h.offset = in.varint64(what);
  h.size = in.varint64(what);
  return h;
}

// The verified contents of the block at `h` (without its trailer).
std::string_view block_at(std::string_view file, const BlockHandle& h, const std::string& where, const char* what) {
  // offset + size + trailer must lie inside the file (before the footer); checked without overflow
  uint64_t limit = file.size() - kFooterSize;
  if (h.offset > limit || h.size > limit - h.offset || kTrailerSize > limit - h.offset - h.size)
    throw UserError(where + ": " + what + " (offset " + std::to_string(h.offset) + ", size " +
                    std::to_string(h.size) + ") lies outside the " + std::to_string(file.size()) +
                    "-byte file; the index file is truncated or corrupt");
  std::string_view block = file.substr(static_cast<size_t>(h.offset), static_cast<size_t>(h.size));
  const char* trailer = block.data() + block.size();
  auto type = static_cast<unsigned char>(trailer[0]);
  uint32_t stored = crc32c_unmask(decode_fixed32(trailer + 1));
  uint32_t actual = crc32c_extend(crc32c(block), trailer, 1);
  if (kCheckCrc && stored != actual)
    throw UserError(where + ": checksum mismatch in " + what + " at offset " + std::to_string(h.offset) +
                    "; the index file is corrupt");
  if (type == 1)
    throw UserError(where + ": " + what + " is snappy-compressed, which is not supported; re-save the checkpoint "
                    "without compression (TensorFlow's default)");
  if (type != 0) throw UserError(where + ": " + what + " has unknown compression type " + std::to_string(type));
  return block;
}

// Appends every entry of one block to `out`, checking key order against the previous key.
void decode_block(std::string_view block, const std::string& where, const char* what,
                  std::vector<std::pair<std::string, std::string>>& out) {
  if (block.size() < 4) throw UserError(where + ": " + what + " is shorter than its restart count");
  uint32_t num_restarts = decode_fixed32(block.data() + block.size() - 4);
  uint64_t max_restarts = (block.size() - 4) / 4;
  if (num_restarts > max_restarts)
    throw UserError(where + ": " + what + " claims " + std::to_string(num_restarts) + " restart points, more than fit");
  size_t data_end = block.size() - 4 - 4 * size_t(num_restarts);
  for (uint32_t i = 0; i < num_restarts; ++i) {
    uint32_t r = decode_fixed32(block.data() + data_end + 4 * size_t(i));
    if (r >= data_end && !(data_end == 0 && r == 0))
      throw UserError(where + ": " + what + " has a restart point past its entries");
  }
  ByteReader in(block.substr(0, data_end), where + ": " + what);
  std::string key;
  bool first = true;
  while (!in.done()) {
    uint32_t shared = in.varint32("key prefix length");
    uint32_t unshared = in.varint32("key suffix length");
    uint32_t value_len = in.varint32("value length");
    if (shared > key.size()) in.fail("entry shares " + std::to_string(shared) + " bytes with a shorter key");
    if (first && shared != 0) in.fail("first entry of a block shares a prefix");
    std::string_view suffix = in.bytes(unshared, "key");
    std::string_view value = in.bytes(value_len, "value");
    std::string next = key.substr(0, shared);
    next.append(suffix);
    if (!out.empty() && !(out.back().first < next))
      in.fail("keys out of order ('" + out.back().first + "' then '" + next + "')");
    key = next;
    out.emplace_back(key, std::string(value));
    first = false;
  }
}

void put_handle(std::string& out, uint64_t offset, uint64_t size) {
  put_varint(out, offset);
  put_varint(out, size);
}

// Appends a block (entries + restarts + trailer) to `file`; returns its handle.
std::pair<uint64_t, uint64_t> append_block(std::string& file,
                                           const std::vector<std::pair<std::string, std::string>>& entries,
                                           size_t begin, size_t end, size_t restart_interval) {
  std::string block;
  std::vector<uint32_t> restarts;
  std::string prev;
  for (size_t i = begin; i < end; ++i) {
    const auto& [k, v] = entries[i];
    size_t shared = 0;
    if ((i - begin) % restart_interval == 0) {
      restarts.push_back(static_cast<uint32_t>(block.size()));
    } else {
      while (shared < prev.size() && shared < k.size() && prev[shared] == k[shared]) ++shared;
    }
    put_varint(block, shared);
    put_varint(block, k.size() - shared);
    put_varint(block, v.size());
    block.append(k, shared, std::string::npos);
    block.append(v);
    prev = k;
  }
  if (restarts.empty()) restarts.push_back(0);
  for (uint32_t r : restarts) put_fixed32(block, r);
  put_fixed32(block, static_cast<uint32_t>(restarts.size()));
  uint64_t offset = file.size();
  file.append(block);
  char type = 0;
  uint32_t crc = crc32c_extend(crc32c(block), &type, 1);
  file.push_back(type);
  put_fixed32(file, crc32c_mask(crc));
  return {offset, block.size()};
}

}  // namespace

std::vector<std::pair<std::string, std::string>> read_sstable(std::string_view file, const std::string& where) {
  if (file.size() < kFooterSize)
    throw UserError(where + ": file is " + std::to_string(file.size()) +
                    " bytes, too short for a checkpoint index (truncated?)");
  std::string_view footer = file.substr(file.size() - kFooterSize);
  if (decode_fixed64(footer.data() + 40) != kTableMagic)
    throw UserError(where + ": not a TensorFlow checkpoint index (bad magic number; truncated or a different file)");
  ByteReader fin(footer.substr(0, 40), where + ": footer");
  BlockHandle meta = read_handle(fin, "metaindex handle");
  BlockHandle index = read_handle(fin, "index handle");
  std::vector<std::pair<std::string, std::string>> index_entries;
  // checkpoints keep nothing in the metaindex, but it is checked like every other block
  decode_block(block_at(file, meta, where, "metaindex block"), where, "metaindex block", index_entries);
  index_entries.clear();
  decode_block(block_at(file, index, where, "index block"), where, "index block", index_entries);
  std::vector<std::pair<std::string, std::string>> out;
  uint64_t next_block = 0;  // data blocks follow each other: no block is decoded twice
  for (const auto& [sep, handle_bytes] : index_entries) {
    ByteReader hin(handle_bytes, where + ": index entry");
    BlockHandle h = read_handle(hin, "data block handle");
    if (h.offset < next_block)
      throw UserError(where + ": data blocks overlap or are out of order; the index file is corrupt");
    decode_block(block_at(file, h, where, "data block"), where, "data block", out);
    next_block = h.offset + h.size + kTrailerSize;  // in range: block_at checked it
    if (!out.empty() && sep < out.back().first)
      throw UserError(where + ": index separator '" + sep + "' sorts before its block's last key");
  }
  return out;
}

std::string write_sstable(const std::vector<std::pair<std::string, std::string>>& entries, size_t block_entries,
                          size_t restart_interval) {
  if (block_entries == 0) block_entries = 1;
  if (restart_interval == 0) restart_interval = 1;
  std::string file;
  std::vector<std::pair<std::string, std::string>> index;
  for (size_t b = 0; b < entries.size(); b += block_entries) {
    size_t e = std::min(entries.size(), b + block_entries);
    auto [off, size] = append_block(file, entries, b, e, restart_interval);
    std::string handle;
    put_handle(handle, off, size);
    index.emplace_back(entries[e - 1].first, handle);  // the last key is a valid separator
  }
  auto meta = append_block(file, {}, 0, 0, restart_interval);
  auto idx = append_block(file, index, 0, index.size(), 1);
  std::string footer;
  put_handle(footer, meta.first, meta.second);
  put_handle(footer, idx.first, idx.second);
  footer.resize(40, '\0');
  put_fixed64(footer, kTableMagic);
  file.append(footer);
  return file;
}

}  // namespace bert::io
