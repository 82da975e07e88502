#pragma once
// The zip container of PyTorch's torch.save format, read without zlib: PyTorch stores every
// record uncompressed ("stored"), so an entry is just a byte range of the file. Handles ZIP64
// (checkpoints over 4 GB). Every offset and size is checked against the file; CRC-32 of an entry
// is verified on request. Malformed archives throw UserError naming `where`.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace bert::io {

// CRC-32 (IEEE 802.3, as used by zip), continuing from `crc` (0 to start).
uint32_t crc32_ieee(uint32_t crc, const void* data, size_t n);

class ZipArchive {
 public:
  ZipArchive(std::string_view file, std::string where);

  bool has(const std::string& name) const { return entries_.count(name) > 0; }
  // The bytes of entry `name` (UserError if absent); CRC-checked when `verify` is true.
  std::string_view read(const std::string& name, bool verify = true) const;
  // Entry names, sorted.
  std::vector<std::string> names() const;
  const std::string& where() const { return where_; }

 private:
  struct Entry {
    uint64_t offset = 0;  // of the data
    uint64_t size = 0;
    uint32_t crc = 0;
  };
  std::string_view file_;
  std::string where_;
  std::map<std::string, Entry> entries_;
};

}  // namespace bert::io
