// libFuzzer target: the TensorBundle index reader and the per-tensor range/CRC checks.
// Input: 4-byte little-endian length L, then L bytes of `.index` file, then the data shard.
// Any exception other than bert::UserError (and any crash or sanitizer report) is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "bert/common/error.h"
#include "bert/io/tensorbundle_index.h"
#include "bert/io/tensorbundle_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (in.size() < 4) return 0;
  size_t len = bert::io::decode_fixed32(in.data());
  in.remove_prefix(4);
  if (len > in.size()) len = in.size();
  std::string_view index = in.substr(0, len), shard = in.substr(len);
  try {
    bert::io::BundleIndex idx = bert::io::parse_bundle_index(index, "fuzz.index");
    for (const auto& e : idx.entries) {
      if (bert::io::tf_dtype_size(e.dtype) == 0 || e.num_slices > 0 || e.shard_id != 0) continue;
      try {
        bert::io::check_bundle_range(e, shard.size(), "fuzz.data");
        bert::io::check_bundle_bytes(e, shard.substr(static_cast<size_t>(e.offset), static_cast<size_t>(e.size)),
                                     "fuzz.data");
      } catch (const bert::UserError&) {
      }
    }
  } catch (const bert::UserError&) {
  }
  return 0;
}
