// libFuzzer target: the torch.save zip reader and pickle machine used for NVIDIA .pt checkpoints.
// Input: the whole .pt file. Every tensor that parses is also read back (CRC-checked).
// Any exception other than bert::UserError (and any crash or sanitizer report) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
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
      // the record in an allocation of its own, so that AddressSanitizer sees any read past it
      std::string record(zip.read(t.storage_record));
      int64_t span = bert::io::pt_view_span(t);
      if (span > 0) {
        // the first and last bytes the import copies for this view (validated by the parser)
        size_t elem = bert::io::pt_elem_size(t.elem);
        volatile char first = record.data()[static_cast<size_t>(t.offset) * elem];
        volatile char last = record.data()[static_cast<size_t>(t.offset + span) * elem - 1];
        (void)first;
        (void)last;
      }
    }
  } catch (const bert::UserError&) {
  }
  return 0;
}
