// safetensors reader/writer; every check the reader makes is listed in include/bert/io/safetensors.h.
#include "bert/io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "bert/common/error.h"
#include "bert/common/fs.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors I/O assumes a little-endian host");

namespace bert::io {

using json = nlohmann::ordered_json;

namespace {

constexpr uint64_t kMaxHeader = 100'000'000;  // the reference implementation's limit

struct DtypeInfo {
  const char* name;
  torch::ScalarType type;
  size_t size;
};

const DtypeInfo kDtypes[] = {
    {"F64", torch::kFloat64, 8}, {"F32", torch::kFloat32, 4}, {"F16", torch::kFloat16, 2},
    {"BF16", torch::kBFloat16, 2}, {"I64", torch::kInt64, 8}, {"I32", torch::kInt32, 4},
    {"I16", torch::kInt16, 2},   {"I8", torch::kInt8, 1},     {"U8", torch::kUInt8, 1},
    {"BOOL", torch::kBool, 1},
};

const DtypeInfo* find_dtype(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

std::string known_dtypes() {
  std::string s;
  for (const auto& d : kDtypes) s += (s.empty() ? "" : " ") + std::string(d.name);
  return s;
}

uint64_t read_u64_le(const char* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, 8);
  return v;
}

[[noreturn]] void bad(const std::string& what, const std::string& problem) {
  throw UserError(what + " is not a valid safetensors file: " + problem);
}

// Parse and validate the JSON header against a data section of `data_size` bytes.
SafetensorsHeader parse_header(std::string_view text, uint64_t data_start, uint64_t data_size,
                               const std::string& what) {
  std::set<std::string> seen;
  std::string duplicate;
  json::parser_callback_t cb = [&](int depth, json::parse_event_t ev, json& parsed) {
    if (depth == 1 && ev == json::parse_event_t::key) {
      auto k = parsed.get<std::string>();
      if (!seen.insert(k).second && duplicate.empty()) duplicate = k;
    }
    return true;
  };
  json j;
  try {
    j = json::parse(text.begin(), text.end(), cb);
  } catch (const json::parse_error& e) {
    bad(what, "the header is not valid JSON (error at header byte " + std::to_string(e.byte) + ")");
  } catch (const json::exception& e) {
    bad(what, "the header is not valid JSON");
  }
  if (!j.is_object()) bad(what, "the header is not a JSON object");
  if (!duplicate.empty()) bad(what, "tensor '" + duplicate + "' appears twice in the header");

  SafetensorsHeader h;
  h.data_start = data_start;
  h.data_size = data_size;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) bad(what, "__metadata__ must be an object of strings");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) bad(what, "__metadata__ value '" + m.key() + "' is not a string");
        h.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string t = "tensor '" + name + "'";
    if (name.empty()) bad(what, "a tensor has an empty name");
    if (!v.is_object()) bad(what, t + " is not an object");
    for (auto f = v.begin(); f != v.end(); ++f)
      if (f.key() != "dtype" && f.key() != "shape" && f.key() != "data_offsets")
        bad(what, t + " has unknown field '" + f.key() + "'");
    if (!v.contains("dtype") || !v["dtype"].is_string()) bad(what, t + " has no string 'dtype'");
    if (!v.contains("shape") || !v["shape"].is_array()) bad(what, t + " has no array 'shape'");
    if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
      bad(what, t + " has no 'data_offsets' pair");
    SafetensorsEntry e;
    e.name = name;
    e.dtype = v["dtype"].get<std::string>();
    const DtypeInfo* d = find_dtype(e.dtype);
    if (!d) bad(what, t + " has unsupported dtype '" + e.dtype + "' (supported: " + known_dtypes() + ")");
    uint64_t numel = 1;
    for (const auto& s : v["shape"]) {
      if (!s.is_number_unsigned()) bad(what, t + " has a shape entry that is not a non-negative integer");
      uint64_t n = s.get<uint64_t>();
      if (n > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(numel, n, &numel))
        bad(what, t + " has a shape too large to address");
      e.shape.push_back(static_cast<int64_t>(n));
    }
    for (const auto& o : v["data_offsets"])
      if (!o.is_number_unsigned()) bad(what, t + " has a data offset that is not a non-negative integer");
    e.begin = v["data_offsets"][0].get<uint64_t>();
    e.end = v["data_offsets"][1].get<uint64_t>();
    if (e.end < e.begin) bad(what, t + " has data_offsets with end before begin");
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(d->size), &bytes) || bytes != e.end - e.begin)
      bad(what, t + " has " + std::to_string(e.end - e.begin) + " data bytes but its shape and dtype " + e.dtype +
                    " need " + (bytes ? std::to_string(bytes) : std::string("an impossible number of")));
    if (e.end > data_size)
      bad(what, t + " data range [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                    ") lies outside the data section of " + std::to_string(data_size) + " bytes (truncated file?)");
    h.entries.push_back(std::move(e));
  }
  std::stable_sort(h.entries.begin(), h.entries.end(), [](const auto& a, const auto& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t pos = 0;
  for (size_t i = 0; i < h.entries.size(); ++i) {
    const auto& e = h.entries[i];
    if (e.begin < pos)
      bad(what, "tensors '" + h.entries[i - 1].name + "' and '" + e.name + "' have overlapping data ranges");
    if (e.begin > pos) bad(what, "the data section has a hole before tensor '" + e.name + "'");
    pos = e.end;
  }
  if (pos != data_size)
    bad(what, "the data section has " + std::to_string(data_size - pos) + " bytes after the last tensor");
  return h;
}

void check_bool(const torch::Tensor& t, const SafetensorsEntry& e, const std::string& what) {
  if (e.dtype != "BOOL" || t.numel() == 0) return;
  const auto* p = static_cast<const uint8_t*>(t.data_ptr());
  for (int64_t i = 0; i < t.numel(); ++i)
    if (p[i] > 1) bad(what, "BOOL tensor '" + e.name + "' holds a byte other than 0 or 1");
}

torch::Tensor empty_for(const SafetensorsEntry& e, const std::string& what) {
  try {
    return torch::empty(e.shape, torch::TensorOptions().dtype(find_dtype(e.dtype)->type));
  } catch (const c10::Error&) {
    bad(what, "tensor '" + e.name + "' has a shape that cannot be allocated");
  }
}

// ---- writing ------------------------------------------------------------------------------------

struct Prepared {
  std::string header;  // 8-byte length + padded JSON
  std::vector<torch::Tensor> data;  // CPU contiguous, in write order
};

Prepared prepare(const NamedTensors& tensors, const Metadata& metadata) {
  json j = json::object();
  if (!metadata.empty()) {
    json m = json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    j["__metadata__"] = m;
  }
  Prepared p;
  std::set<std::string> names;
  std::set<const void*> storages;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name.empty() || name == "__metadata__")
      throw UserError("cannot save a tensor named '" + name + "' in safetensors");
    if (!names.insert(name).second) throw UserError("tensor '" + name + "' given twice to save_safetensors");
    if (!tensor.defined()) throw UserError("tensor '" + name + "' is undefined; cannot save it");
    if (tensor.numel() > 0 && tensor.has_storage()) {
      const void* base = tensor.storage().data();
      if (!storages.insert(base).second)
        throw UserError("tensor '" + name + "' shares storage with another saved tensor; save one name per storage");
    }
    auto t = tensor.detach().to(torch::kCPU).contiguous();
    uint64_t bytes = static_cast<uint64_t>(t.numel()) * t.element_size();
    json e = json::object();
    e["dtype"] = safetensors_dtype_name(t.scalar_type());
    e["shape"] = t.sizes().vec();
    e["data_offsets"] = {offset, offset + bytes};
    j[name] = e;
    offset += bytes;
    p.data.push_back(t);
  }
  std::string text = j.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t n = text.size();
  p.header.resize(8);
  std::memcpy(p.header.data(), &n, 8);
  p.header += text;
  return p;
}

}  // namespace

torch::ScalarType safetensors_dtype(const std::string& name, const std::string& what) {
  const DtypeInfo* d = find_dtype(name);
  if (!d) throw UserError(what + ": unsupported safetensors dtype '" + name + "' (supported: " + known_dtypes() + ")");
  return d->type;
}

std::string safetensors_dtype_name(torch::ScalarType t) {
  for (const auto& d : kDtypes)
    if (d.type == t) return d.name;
  throw UserError(std::string("cannot save dtype ") + c10::toString(t) + " in safetensors; convert it first");
}

size_t safetensors_dtype_size(const std::string& name) {
  const DtypeInfo* d = find_dtype(name);
  return d ? d->size : 0;
}

std::string serialize_safetensors(const NamedTensors& tensors, const Metadata& metadata) {
  Prepared p = prepare(tensors, metadata);
  std::string out = std::move(p.header);
  for (const auto& t : p.data) out.append(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
  return out;
}

void save_safetensors(const fs::path& path, const NamedTensors& tensors, const Metadata& metadata) {
  Prepared p = prepare(tensors, metadata);
  if (path.has_parent_path()) ensure_writable_dir(path.parent_path());
  fs::path tmp = temp_path_for(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw UserError("cannot write " + tmp.string() + ": " + std::strerror(errno));
    out.write(p.header.data(), static_cast<std::streamsize>(p.header.size()));
    for (const auto& t : p.data)
      out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.numel() * t.element_size()));
    out.flush();
    if (!out) {
      out.close();
      std::error_code ec;
      fs::remove(tmp, ec);
      throw RuntimeError("write failed for " + path.string() + " (disk full?)");
    }
  }
  commit_temp(tmp, path);
}

// ---- reading ------------------------------------------------------------------------------------

SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& what) {
  if (bytes.size() < 8) bad(what, "it is shorter than the 8-byte header length");
  uint64_t n = read_u64_le(bytes.data());
  if (n > kMaxHeader) bad(what, "header length " + std::to_string(n) + " exceeds the 100 MB limit");
  if (n > bytes.size() - 8)
    bad(what, "header length " + std::to_string(n) + " is beyond the end of the " + std::to_string(bytes.size()) +
                  "-byte file (truncated?)");
  auto h = parse_header(bytes.substr(8, n), 8 + n, bytes.size() - 8 - n, what);
  SafetensorsFile f;
  f.metadata = h.metadata;
  for (const auto& e : h.entries) {
    auto t = empty_for(e, what);
    if (e.end > e.begin) std::memcpy(t.data_ptr(), bytes.data() + h.data_start + e.begin, e.end - e.begin);
    check_bool(t, e, what);
    f.tensors.emplace_back(e.name, t);
  }
  return f;
}

namespace {

struct Opened {
  std::ifstream in;
  SafetensorsHeader header;
};

void open_and_parse(const fs::path& path, Opened& o) {
  require_file(path, "safetensors file");
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec) throw UserError("cannot read " + path.string() + ": " + ec.message());
  const std::string what = path.string();
  o.in.open(path, std::ios::binary);
  if (!o.in) throw UserError("cannot read " + what + ": " + std::strerror(errno));
  if (size < 8) bad(what, "it is shorter than the 8-byte header length");
  char len[8];
  o.in.read(len, 8);
  uint64_t n = read_u64_le(len);
  if (n > kMaxHeader) bad(what, "header length " + std::to_string(n) + " exceeds the 100 MB limit");
  if (n > size - 8)
    bad(what, "header length " + std::to_string(n) + " is beyond the end of the " + std::to_string(size) +
                  "-byte file (truncated?)");
  std::string text(n, '\0');
  o.in.read(text.data(), static_cast<std::streamsize>(n));
  if (!o.in) throw UserError("cannot read the header of " + what);
  o.header = parse_header(text, 8 + n, size - 8 - n, what);
}

}  // namespace

SafetensorsHeader read_safetensors_header(const fs::path& path) {
  Opened o;
  open_and_parse(path, o);
  return o.header;
}

SafetensorsFile load_safetensors(const fs::path& path) {
  Opened o;
  open_and_parse(path, o);
  SafetensorsFile f;
  f.metadata = o.header.metadata;
  for (const auto& e : o.header.entries) {
    auto t = empty_for(e, path.string());
    if (e.end > e.begin) {
      o.in.seekg(static_cast<std::streamoff>(o.header.data_start + e.begin));
      o.in.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(e.end - e.begin));
      if (!o.in) throw UserError("cannot read tensor '" + e.name + "' from " + path.string() + " (file changed?)");
    }
    check_bool(t, e, path.string());
    f.tensors.emplace_back(e.name, t);
  }
  return f;
}

}  // namespace bert::io
