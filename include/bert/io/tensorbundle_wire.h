#pragma once
// Byte-level building blocks of TensorFlow's checkpoint format, with no TensorFlow and no
// LibTorch: CRC-32C (Castagnoli) with LevelDB's masking, little-endian fixed-width integers,
// varints, and a small reader for the protobuf wire format (enough for BundleHeaderProto and
// BundleEntryProto). Every read is bounds-checked; malformed bytes throw bert::UserError naming
// `where` (the file) and what was wrong.
#include <cstdint>
#include <string>
#include <string_view>

namespace bert::io {

// CRC-32C of `data`, continuing from `crc` (0 to start).
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n);
inline uint32_t crc32c(std::string_view s) { return crc32c_extend(0, s.data(), s.size()); }
// LevelDB/TensorFlow store CRCs "masked" so that a CRC of data containing CRCs stays well mixed.
uint32_t crc32c_mask(uint32_t crc);
uint32_t crc32c_unmask(uint32_t masked);

uint32_t decode_fixed32(const char* p);  // little-endian
uint64_t decode_fixed64(const char* p);
void put_fixed32(std::string& out, uint32_t v);
void put_fixed64(std::string& out, uint64_t v);
void put_varint(std::string& out, uint64_t v);

// A cursor over a byte range. Reading past the end, or a varint longer than 10 bytes, throws
// UserError("<where>: <what>").
class ByteReader {
 public:
  ByteReader(std::string_view data, std::string where) : data_(data), where_(std::move(where)) {}
  bool done() const { return pos_ >= data_.size(); }
  size_t pos() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }
  uint64_t varint64(const char* what);
  uint32_t varint32(const char* what);  // also rejects values above 2^32-1
  uint32_t fixed32(const char* what);
  uint64_t fixed64(const char* what);
  std::string_view bytes(uint64_t n, const char* what);
  [[noreturn]] void fail(const std::string& what) const;
  const std::string& where() const { return where_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  std::string where_;
};

// One field of a protobuf message as it appears on the wire.
struct ProtoField {
  uint32_t number = 0;
  uint32_t wire_type = 0;  // 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32
  uint64_t value = 0;      // for wire types 0, 1, 5
  std::string_view bytes;  // for wire type 2
};

// Iterates over the fields of one serialized message. Groups (wire types 3/4) and unknown wire
// types are rejected; unknown field numbers are returned and the caller skips them.
class ProtoReader {
 public:
  ProtoReader(std::string_view msg, std::string where) : in_(msg, std::move(where)) {}
  bool next(ProtoField& f);
  [[noreturn]] void fail(const std::string& what) const { in_.fail(what); }

 private:
  ByteReader in_;
};

}  // namespace bert::io
