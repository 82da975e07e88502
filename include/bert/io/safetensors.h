#pragma once
// The safetensors format (HF's model.safetensors), read and written by our own code:
//
//   [8 bytes]  N, unsigned little-endian: length of the JSON header
//   [N bytes]  JSON object {"<name>": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//              "__metadata__": {"key": "string value", ...}}  (padded with spaces to a multiple of 8)
//   [rest]     the data section: each tensor's raw little-endian bytes, row-major, at
//              [begin, end) relative to the start of the data section.
//
// Dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL.
//
// The reader treats every file as untrusted and checks, before touching any data: the file is at
// least 8 bytes; N <= 100 MB and fits in the file; the header is valid JSON, an object, with no
// duplicate names; each entry has exactly dtype/shape/data_offsets of the right types; the dtype is
// known; numel x itemsize == end - begin (no overflow); every range lies inside the data section;
// ranges neither overlap nor leave holes and cover the data section exactly (as the reference
// implementation requires); BOOL bytes are 0 or 1. Any failure is a bert::UserError of one line
// naming the file and the problem.
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bert::io {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;
using Metadata = std::map<std::string, std::string>;

struct SafetensorsFile {
  NamedTensors tensors;  // in data-offset order (= write order for files we wrote)
  Metadata metadata;     // "__metadata__", empty when absent
};

// One header entry, as described by the file.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // "F32", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // relative to the data section
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  // sorted by begin
  Metadata metadata;
  uint64_t data_start = 0;  // absolute file offset of the data section (8 + N)
  uint64_t data_size = 0;
};

// Write `tensors` (any device, any of the supported dtypes; made contiguous on CPU) atomically:
// a temporary file in the same directory, flushed, then renamed over `path`. Names must be unique
// and non-empty and may not be "__metadata__"; tensors may not share storage (UserError otherwise:
// save one name per storage, see io::named_state / save_weights).
void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors, const Metadata& metadata = {});
// The same bytes in memory (what save_safetensors writes).
std::string serialize_safetensors(const NamedTensors& tensors, const Metadata& metadata = {});

// Read and validate the whole file; tensors come back on the CPU in the file's dtypes.
SafetensorsFile load_safetensors(const std::filesystem::path& path);
// Validate and decode an in-memory file (`what` names it in error messages; used by fuzzing too).
SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& what = "safetensors data");

// Header only (names, dtypes, shapes) without reading the data section.
SafetensorsHeader read_safetensors_header(const std::filesystem::path& path);

// "F32" <-> torch dtype; UserError for a dtype this reader does not support.
torch::ScalarType safetensors_dtype(const std::string& name, const std::string& what);
std::string safetensors_dtype_name(torch::ScalarType t);  // UserError for unsupported
size_t safetensors_dtype_size(const std::string& name);   // 0 when unknown

}  // namespace bert::io
