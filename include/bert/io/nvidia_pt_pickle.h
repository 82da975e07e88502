#pragma once
// What a torch.save checkpoint holds, read without Python and without LibTorch's unpickler
// (LibTorch 1.13's cannot rebuild collections.OrderedDict, i.e. any state_dict()).
//
// A torch.save file is a zip archive: "<name>/data.pkl" is a pickle (protocol 2) of the saved
// object in which each tensor is torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)
// and each storage a persistent id ('storage', torch.FloatStorage, key, location, numel) whose bytes
// are the record "<name>/data/<key>". This reader runs the pickle on a small stack machine that
// knows containers, scalars, strings and those tensor constructors; any other Python object is
// kept as an opaque placeholder, so a checkpoint that also pickles e.g. a data loader still reads.
// Every tensor view is checked against its storage record. No LibTorch here (fuzzable).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bert/io/nvidia_pt_zip.h"

namespace bert::io {

enum class PtElem { Float32, Float64, Float16, BFloat16, Int64, Int32, Int16, Int8, UInt8, Bool };
size_t pt_elem_size(PtElem e);
std::string pt_elem_name(PtElem e);

struct PtTensor {
  std::string storage_record;  // zip entry holding the storage bytes
  PtElem elem = PtElem::Float32;
  int64_t storage_numel = 0;
  int64_t offset = 0;  // in elements
  std::vector<int64_t> sizes, strides;
};

// Elements from `offset` to the last element the view reaches, inclusive (0 for an empty tensor).
// Only meaningful for tensors parse_torch_checkpoint returned (their views are validated).
int64_t pt_view_span(const PtTensor& t);

struct PtCheckpoint {
  bool nested = false;  // true when the tensors came from the 'model' entry of the top dict
  std::vector<std::pair<std::string, PtTensor>> tensors;  // state-dict order
  std::vector<std::string> other_keys;   // top-level keys besides 'model' (when nested)
  std::vector<std::string> non_tensors;  // state-dict keys whose value is not a tensor
};

// Parses the archive's pickle and validates every tensor against its storage record (size and
// view bounds; CRCs are checked when the bytes are read). UserError naming `zip.where()` on
// anything malformed or unsupported.
PtCheckpoint parse_torch_checkpoint(const ZipArchive& zip);

}  // namespace bert::io
