#pragma once
// Writing weights under HF names as a Google BERT TensorFlow checkpoint (the reverse of
// tensorbundle_import.h): names through hf_to_tf_rules(), dense weights transposed back to
// [in, out] kernels, one shard, uncompressed, with CRCs, written atomically.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace bert::io {

struct TfExportResult {
  std::vector<std::string> written;  // Google names, sorted
  std::vector<std::string> skipped;  // HF names with no Google counterpart ("name (why)")
};

// Writes `<prefix>.index` and `<prefix>.data-00000-of-00001`. Tied aliases
// (cls.predictions.decoder.*) are skipped; other unknown names too, and listed. Tensors may live on
// any device; float32/float64/float16/bfloat16/int32/int64 are supported (UserError otherwise).
TfExportResult export_tf_checkpoint(const std::vector<std::pair<std::string, torch::Tensor>>& hf_tensors,
                                    const std::filesystem::path& prefix);

}  // namespace bert::io
