// Decoding (and, for tests and export, encoding) BundleHeaderProto / BundleEntryProto.
#include "bert/io/tensorbundle_index.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "bert/common/error.h"
#include "bert/io/tensorbundle_table.h"
#include "bert/io/tensorbundle_wire.h"

namespace bert::io {

std::string tf_dtype_name(int dtype) {
  switch (dtype) {
    case kTfFloat: return "float32";
    case kTfDouble: return "float64";
    case kTfInt32: return "int32";
    case kTfUInt8: return "uint8";
    case kTfInt16: return "int16";
    case kTfInt8: return "int8";
    case kTfString: return "string";
    case kTfInt64: return "int64";
    case kTfBool: return "bool";
    case kTfBFloat16: return "bfloat16";
    case kTfHalf: return "float16";
    default: return "DT_" + std::to_string(dtype);
  }
}

size_t tf_dtype_size(int dtype) {
  switch (dtype) {
    case kTfFloat: case kTfInt32: return 4;
    case kTfDouble: case kTfInt64: return 8;
    case kTfInt16: case kTfBFloat16: case kTfHalf: return 2;
    case kTfUInt8: case kTfInt8: case kTfBool: return 1;
    default: return 0;
  }
}

int64_t BundleEntry::numel() const {
  uint64_t n = 1;  // unsigned: wraps instead of overflowing on shapes of unreadable dtypes
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return static_cast<int64_t>(n);
}

namespace {

// protobuf int32/int64 fields arrive as (sign-extended) 64-bit varints
int64_t as_int64(uint64_t v) { return static_cast<int64_t>(v); }

BundleHeader decode_header(std::string_view msg, const std::string& where) {
  BundleHeader h;
  ProtoReader r(msg, where + ": bundle header");
  ProtoField f;
  while (r.next(f)) {
    if (f.number == 1 && f.wire_type == 0) h.num_shards = as_int64(f.value);
    else if (f.number == 2 && f.wire_type == 0) h.big_endian = f.value == 1;
    else if (f.number == 3 && f.wire_type == 2) {
      ProtoReader v(f.bytes, where + ": bundle version");
      ProtoField vf;
      while (v.next(vf))
        if (vf.number == 1 && vf.wire_type == 0) h.producer = as_int64(vf.value);
    }
  }
  if (h.num_shards < 1 || h.num_shards > 100000)
    throw UserError(where + ": bundle header has " + std::to_string(h.num_shards) + " shards; the index is corrupt");
  return h;
}

std::vector<int64_t> decode_shape(std::string_view msg, const std::string& where) {
  std::vector<int64_t> dims;
  ProtoReader r(msg, where);
  ProtoField f;
  while (r.next(f)) {
    if (f.number == 3 && f.wire_type == 0 && f.value)
      throw UserError(where + ": shape has unknown rank; the checkpoint is not a plain saved variable");
    if (f.number != 2 || f.wire_type != 2) continue;
    int64_t size = 0;
    ProtoReader d(f.bytes, where);
    ProtoField df;
    while (d.next(df))
      if (df.number == 1 && df.wire_type == 0) size = as_int64(df.value);
    if (size < 0) throw UserError(where + ": negative dimension " + std::to_string(size));
    dims.push_back(size);
  }
  if (dims.size() > 64) throw UserError(where + ": shape has " + std::to_string(dims.size()) + " dimensions");
  return dims;
}

BundleEntry decode_entry(const std::string& name, std::string_view msg, const BundleHeader& h,
                         const std::string& where) {
  std::string w = where + ": entry '" + name + "'";
  BundleEntry e;
  e.name = name;
  ProtoReader r(msg, w);
  ProtoField f;
  while (r.next(f)) {
    switch (f.number) {
      case 1: if (f.wire_type == 0) e.dtype = static_cast<int>(std::min<uint64_t>(f.value, 1u << 30)); break;
      case 2: if (f.wire_type == 2) e.shape = decode_shape(f.bytes, w + " shape"); break;
      case 3: if (f.wire_type == 0) e.shard_id = as_int64(f.value); break;
      case 4: if (f.wire_type == 0) e.offset = as_int64(f.value); break;
      case 5: if (f.wire_type == 0) e.size = as_int64(f.value); break;
      case 6: if (f.wire_type == 5) { e.masked_crc = static_cast<uint32_t>(f.value); e.has_crc = true; } break;
      case 7: if (f.wire_type == 2) ++e.num_slices; break;
      default: break;
    }
  }
  if (e.shard_id < 0 || e.shard_id >= h.num_shards)
    throw UserError(w + " is in shard " + std::to_string(e.shard_id) + " but the bundle has " +
                    std::to_string(h.num_shards) + "; the index is corrupt");
  if (e.offset < 0 || e.size < 0) throw UserError(w + " has a negative offset or size; the index is corrupt");
  size_t elem = tf_dtype_size(e.dtype);
  if (elem && e.num_slices == 0) {
    // numel * elem must equal size; multiply with an overflow guard
    uint64_t bytes = elem;
    for (int64_t d : e.shape) {
      if (d != 0 && bytes > std::numeric_limits<uint64_t>::max() / 4 / static_cast<uint64_t>(d))
        throw UserError(w + " has an impossibly large shape; the index is corrupt");
      bytes *= static_cast<uint64_t>(d);
    }
    if (bytes != static_cast<uint64_t>(e.size))
      throw UserError(w + " (" + tf_dtype_name(e.dtype) + ", " + std::to_string(e.shape.size()) +
                      "-d) should hold " + std::to_string(bytes) + " bytes but records " + std::to_string(e.size) +
                      "; the index is corrupt");
  }
  return e;
}

void put_tag(std::string& out, uint32_t number, uint32_t wire_type) { put_varint(out, (uint64_t(number) << 3) | wire_type); }

}  // namespace

BundleIndex parse_bundle_index(std::string_view index_file, const std::string& where) {
  auto kv = read_sstable(index_file, where);
  BundleIndex idx;
  if (kv.empty() || !kv.front().first.empty())
    throw UserError(where + ": the index has no bundle header (empty key); it is not a TensorFlow V2 checkpoint");
  idx.header = decode_header(kv.front().second, where);
  if (idx.header.big_endian)
    throw UserError(where + ": the checkpoint was written big-endian, which is not supported; re-save it on a "
                    "little-endian machine");
  idx.entries.reserve(kv.size() - 1);
  for (size_t i = 1; i < kv.size(); ++i) idx.entries.push_back(decode_entry(kv[i].first, kv[i].second, idx.header, where));
  return idx;
}

void check_bundle_range(const BundleEntry& e, uint64_t file_size, const std::string& where) {
  auto off = static_cast<uint64_t>(e.offset), size = static_cast<uint64_t>(e.size);
  if (off > file_size || size > file_size - off)
    throw UserError(where + ": tensor '" + e.name + "' (offset " + std::to_string(off) + ", " + std::to_string(size) +
                    " bytes) lies outside the " + std::to_string(file_size) +
                    "-byte data file; the data file is truncated or does not belong to this index");
}

std::string_view check_bundle_bytes(const BundleEntry& e, std::string_view bytes, const std::string& where) {
  if (bytes.size() != static_cast<uint64_t>(e.size))
    throw UserError(where + ": tensor '" + e.name + "' is truncated");
  if (e.has_crc && crc32c_unmask(e.masked_crc) != crc32c(bytes))
    throw UserError(where + ": checksum mismatch for tensor '" + e.name + "'; the data file is corrupt");
  return bytes;
}

std::string bundle_data_path(const std::string& prefix, int64_t shard, int64_t num_shards) {
  char buf[64];
  std::snprintf(buf, sizeof buf, ".data-%05lld-of-%05lld", static_cast<long long>(shard),
                static_cast<long long>(num_shards));
  return prefix + buf;
}

std::pair<std::string, std::string> write_bundle(std::vector<BundleTensor> tensors) {
  std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::vector<std::pair<std::string, std::string>> kv;
  std::string header;  // num_shards = 1, endianness LITTLE (default), version { producer: 1 }
  put_tag(header, 1, 0);
  put_varint(header, 1);
  put_tag(header, 3, 2);
  put_varint(header, 2);
  put_tag(header, 1, 0);
  put_varint(header, 1);
  kv.emplace_back("", header);
  std::string data;
  for (const auto& t : tensors) {
    if (t.name.empty()) throw UserError("write_bundle: a tensor has an empty name");
    if (!kv.empty() && kv.back().first == t.name) throw UserError("write_bundle: duplicate tensor '" + t.name + "'");
    std::string shape;
    for (int64_t d : t.shape) {
      std::string dim;
      put_tag(dim, 1, 0);
      put_varint(dim, static_cast<uint64_t>(d));
      put_tag(shape, 2, 2);
      put_varint(shape, dim.size());
      shape += dim;
    }
    std::string entry;
    put_tag(entry, 1, 0);
    put_varint(entry, static_cast<uint64_t>(t.dtype));
    put_tag(entry, 2, 2);
    put_varint(entry, shape.size());
    entry += shape;
    if (!data.empty()) {
      put_tag(entry, 4, 0);
      put_varint(entry, data.size());
    }
    put_tag(entry, 5, 0);
    put_varint(entry, t.bytes.size());
    put_tag(entry, 6, 5);
    put_fixed32(entry, crc32c_mask(crc32c(t.bytes)));
    data += t.bytes;
    kv.emplace_back(t.name, entry);
  }
  return {write_sstable(kv), data};
}

}  // namespace bert::io
