// libFuzzer target: the torch.save zip reader and pickle machine used for NVIDIA .pt checkpoints.
// Input: the whole .pt file. Every tensor that parses is also read back (CRC-checked).
// Any exception other than bert::UserError (and any crash or sanitizer report) is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "bert/common/error.h"
#include "bert/io/nvidia_pt_pickle.h"
#include "bert/io/nvidia_pt_zip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  try {
    bert::io::ZipArchive zip(in, "fuzz.pt");
    bert::io::PtCheckpoint ckpt = bert::io::parse_torch_checkpoint(zip);
    for (const auto& [name, t] : ckpt.tensors) {
      std::string_view bytes = zip.read(t.storage_record);
      // the view was validated against the record: touch its first and last bytes
      if (!bytes.empty()) {
        volatile char first = bytes.front(), last = bytes.back();
        (void)first;
        (void)last;
      }
    }
  } catch (const bert::UserError&) {
  }
  return 0;
}
