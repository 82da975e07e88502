// libFuzzer target: the safetensors reader (bert::io::parse_safetensors). Input: the whole file.
// Any exception other than bert::UserError (and any crash or sanitizer report) is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "bert/common/error.h"
#include "bert/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  try {
    bert::io::SafetensorsFile f = bert::io::parse_safetensors(in, "fuzz.safetensors");
    for (const auto& [name, t] : f.tensors) (void)t.numel();
  } catch (const bert::UserError&) {
  }
  return 0;
}
