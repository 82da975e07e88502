// CRC-32C, fixed/varint integers and the protobuf wire format, all bounds-checked.
#include "bert/io/tensorbundle_wire.h"

#include <array>

#include "bert/common/error.h"

namespace bert::io {

namespace {

// Table for the reflected Castagnoli polynomial 0x82F63B78, built once.
const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : (c >> 1);
      t[i] = c;
    }
    return t;
  }();
  return table;
}

constexpr uint32_t kMaskDelta = 0xa282ead8u;

}  // namespace

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n) {
  const auto& t = crc_table();
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  for (size_t i = 0; i < n; ++i) c = t[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return ~c;
}

uint32_t crc32c_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }

uint32_t crc32c_unmask(uint32_t masked) {
  uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

uint32_t decode_fixed32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t(u[0]) | (uint32_t(u[1]) << 8) | (uint32_t(u[2]) << 16) | (uint32_t(u[3]) << 24);
}

uint64_t decode_fixed64(const char* p) {
  return uint64_t(decode_fixed32(p)) | (uint64_t(decode_fixed32(p + 4)) << 32);
}

void put_fixed32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_fixed64(std::string& out, uint64_t v) {
  put_fixed32(out, static_cast<uint32_t>(v));
  put_fixed32(out, static_cast<uint32_t>(v >> 32));
}

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void ByteReader::fail(const std::string& what) const { throw UserError(where_ + ": " + what); }

uint64_t ByteReader::varint64(const char* what) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos_ >= data_.size()) fail(std::string("truncated varint (") + what + ")");
    auto b = static_cast<unsigned char>(data_[pos_++]);
    if (shift == 63 && (b & 0x7e)) fail(std::string("varint overflows 64 bits (") + what + ")");
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  fail(std::string("varint longer than 10 bytes (") + what + ")");
}

uint32_t ByteReader::varint32(const char* what) {
  uint64_t v = varint64(what);
  if (v > 0xffffffffull) fail(std::string("value too large (") + what + ")");
  return static_cast<uint32_t>(v);
}

uint32_t ByteReader::fixed32(const char* what) {
  if (remaining() < 4) fail(std::string("truncated 32-bit value (") + what + ")");
  uint32_t v = decode_fixed32(data_.data() + pos_);
  pos_ += 4;
  return v;
}

uint64_t ByteReader::fixed64(const char* what) {
  if (remaining() < 8) fail(std::string("truncated 64-bit value (") + what + ")");
  uint64_t v = decode_fixed64(data_.data() + pos_);
  pos_ += 8;
  return v;
}

std::string_view ByteReader::bytes(uint64_t n, const char* what) {
  if (n > remaining())
    fail(std::string(what) + " needs " + std::to_string(n) + " bytes but only " + std::to_string(remaining()) +
         " remain");
  std::string_view s = data_.substr(pos_, static_cast<size_t>(n));
  pos_ += static_cast<size_t>(n);
  return s;
}

bool ProtoReader::next(ProtoField& f) {
  if (in_.done()) return false;
  uint64_t key = in_.varint64("protobuf field key");
  f = ProtoField{};
  f.wire_type = static_cast<uint32_t>(key & 7);
  uint64_t number = key >> 3;
  if (number == 0 || number > 0x1fffffff) in_.fail("bad protobuf field number " + std::to_string(number));
  f.number = static_cast<uint32_t>(number);
  switch (f.wire_type) {
    case 0: f.value = in_.varint64("protobuf varint field"); break;
    case 1: f.value = in_.fixed64("protobuf fixed64 field"); break;
    case 2: f.bytes = in_.bytes(in_.varint64("protobuf length"), "protobuf length-delimited field"); break;
    case 5: f.value = in_.fixed32("protobuf fixed32 field"); break;
    default: in_.fail("unsupported protobuf wire type " + std::to_string(f.wire_type));
  }
  return true;
}

}  // namespace bert::io
