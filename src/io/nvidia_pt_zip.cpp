// Reading the (uncompressed) zip archives that torch.save writes.
#include "bert/io/nvidia_pt_zip.h"

#include <array>
#include <vector>

#include "bert/common/error.h"
#include "bert/io/tensorbundle_wire.h"

namespace bert::io {

namespace {

constexpr uint32_t kEocdSig = 0x06054b50, kZip64LocatorSig = 0x07064b50, kZip64EocdSig = 0x06064b50,
                   kCentralSig = 0x02014b50, kLocalSig = 0x04034b50;

uint16_t u16(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint16_t>(u[0] | (u[1] << 8));
}

}  // namespace

uint32_t crc32_ieee(uint32_t crc, const void* data, size_t n) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : (c >> 1);
      t[i] = c;
    }
    return t;
  }();
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return ~c;
}

ZipArchive::ZipArchive(std::string_view file, std::string where) : file_(file), where_(std::move(where)) {
  auto fail = [&](const std::string& what) -> void { throw UserError(where_ + ": " + what); };
  if (file.size() < 22) fail("file is too short to be a zip archive (truncated?)");
  // end of central directory: the last 22 bytes, or earlier when followed by a comment
  size_t eocd = std::string::npos;
  size_t lowest = file.size() >= 22 + 65535 ? file.size() - 22 - 65535 : 0;
  for (size_t p = file.size() - 22 + 1; p-- > lowest;)
    if (decode_fixed32(file.data() + p) == kEocdSig) {
      eocd = p;
      break;
    }
  if (eocd == std::string::npos) fail("no zip end-of-directory record (truncated, or not a torch.save file)");
  const char* e = file.data() + eocd;
  uint64_t count = u16(e + 10), cd_size = decode_fixed32(e + 12), cd_offset = decode_fixed32(e + 16);
  if (count == 0xffff || cd_size == 0xffffffffu || cd_offset == 0xffffffffu) {
    if (eocd < 20 || decode_fixed32(file.data() + eocd - 20) != kZip64LocatorSig) fail("ZIP64 locator missing");
    uint64_t z = decode_fixed64(file.data() + eocd - 20 + 8);
    if (z > file.size() || file.size() - z < 56 || decode_fixed32(file.data() + z) != kZip64EocdSig)
      fail("ZIP64 end-of-directory record missing or out of range");
    const char* z64 = file.data() + z;
    count = decode_fixed64(z64 + 32);
    cd_size = decode_fixed64(z64 + 40);
    cd_offset = decode_fixed64(z64 + 48);
  }
  if (cd_offset > file.size() || cd_size > file.size() - cd_offset)
    fail("central directory lies outside the file (truncated?)");
  ByteReader cd(file.substr(static_cast<size_t>(cd_offset), static_cast<size_t>(cd_size)), where_ + ": zip directory");
  for (uint64_t i = 0; i < count; ++i) {
    if (cd.fixed32("entry signature") != kCentralSig) fail("corrupt zip central directory entry");
    std::string_view h = cd.bytes(42, "directory entry");
    uint16_t flags = u16(h.data() + 4), method = u16(h.data() + 6);
    uint32_t crc = decode_fixed32(h.data() + 12);
    uint64_t csize = decode_fixed32(h.data() + 16), usize = decode_fixed32(h.data() + 20);
    uint16_t name_len = u16(h.data() + 24), extra_len = u16(h.data() + 26), comment_len = u16(h.data() + 28);
    uint64_t local = decode_fixed32(h.data() + 38);
    std::string name(cd.bytes(name_len, "entry name"));
    std::string_view extra = cd.bytes(extra_len, "entry extra field");
    cd.bytes(comment_len, "entry comment");
    if (usize == 0xffffffffu || csize == 0xffffffffu || local == 0xffffffffu) {
      // ZIP64: extra field 0x0001 holds, in order, the 64-bit values that are 0xffffffff above
      ByteReader x(extra, where_ + ": zip extra field of '" + name + "'");
      bool found = false;
      while (!found && x.remaining() >= 4) {
        std::string_view hdr = x.bytes(4, "extra header");
        uint16_t id = u16(hdr.data()), len = u16(hdr.data() + 2);
        ByteReader body(x.bytes(len, "extra field"), x.where());
        if (id != 1) continue;
        found = true;
        if (usize == 0xffffffffu) usize = body.fixed64("ZIP64 size");
        if (csize == 0xffffffffu) csize = body.fixed64("ZIP64 compressed size");
        if (local == 0xffffffffu) local = body.fixed64("ZIP64 offset");
      }
      if (!found) fail("entry '" + name + "' needs a ZIP64 extra field but has none");
    }
    if (method != 0)
      fail("entry '" + name + "' is compressed (method " + std::to_string(method) +
           "); torch.save archives are stored uncompressed - re-save the file with torch.save");
    if (flags & 1) fail("entry '" + name + "' is encrypted");
    if (csize != usize) fail("entry '" + name + "' has different stored and unpacked sizes");
    entries_[name] = Entry{local, usize, crc};
  }
  // resolve local headers to data offsets
  for (auto& [name, ent] : entries_) {
    uint64_t local = ent.offset;
    if (local > file.size() || file.size() - local < 30 || decode_fixed32(file.data() + local) != kLocalSig)
      fail("local header of entry '" + name + "' is missing (truncated?)");
    uint64_t data = local + 30 + u16(file.data() + local + 26) + u16(file.data() + local + 28);
    if (data > file.size() || ent.size > file.size() - data)
      fail("entry '" + name + "' (" + std::to_string(ent.size) + " bytes) runs past the end of the file (truncated?)");
    ent.offset = data;
  }
}

std::string_view ZipArchive::read(const std::string& name, bool verify) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw UserError(where_ + ": archive has no entry '" + name + "'");
  std::string_view bytes = file_.substr(static_cast<size_t>(it->second.offset), static_cast<size_t>(it->second.size));
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  verify = false;  // fuzz builds skip the check so that mutated pickles reach the pickle machine
#endif
  if (verify && crc32_ieee(0, bytes.data(), bytes.size()) != it->second.crc)
    throw UserError(where_ + ": checksum mismatch in entry '" + name + "'; the file is corrupt");
  return bytes;
}

std::vector<std::string> ZipArchive::names() const {
  std::vector<std::string> out;
  for (const auto& [n, e] : entries_) out.push_back(n);
  return out;
}

}  // namespace bert::io
