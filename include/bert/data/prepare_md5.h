#pragma once
// MD5 (RFC 1321) for the checksums in prepare's manifest.json.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace bert::data {

class Md5 {
 public:
  Md5();
  void update(const void* data, size_t n);
  std::string hex();  // finishes; call once

 private:
  void block(const uint8_t* p);
  uint32_t a_, b_, c_, d_;
  uint64_t total_ = 0;
  uint8_t buf_[64];
  size_t used_ = 0;
};

std::string md5_hex(std::string_view data);
// MD5 of a file's bytes; UserError if it cannot be read.
std::string md5_file(const std::filesystem::path& path);

}  // namespace bert::data
