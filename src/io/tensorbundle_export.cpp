// HF-named tensors -> a TensorFlow checkpoint that Google's BERT scripts can restore.
#include "bert/io/tensorbundle_export.h"

#include <algorithm>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/io/tensorbundle_index.h"
#include "bert/io/tf_names.h"

namespace bert::io {

namespace {

int tf_dtype_for(const torch::Tensor& t, const std::string& name) {
  switch (t.scalar_type()) {
    case torch::kFloat32: return kTfFloat;
    case torch::kFloat64: return kTfDouble;
    case torch::kFloat16: return kTfHalf;
    case torch::kBFloat16: return kTfBFloat16;
    case torch::kInt32: return kTfInt32;
    case torch::kInt64: return kTfInt64;
    default: throw UserError("cannot write tensor '" + name + "' to a TensorFlow checkpoint: unsupported dtype " +
                             std::string(c10::toString(t.scalar_type())));
  }
}

}  // namespace

TfExportResult export_tf_checkpoint(const std::vector<std::pair<std::string, torch::Tensor>>& hf_tensors,
                                    const fs::path& prefix) {
  TfExportResult out;
  std::vector<BundleTensor> tensors;
  for (const auto& [name, tensor] : hf_tensors) {
    if (name == "cls.predictions.decoder.weight" || name == "cls.predictions.decoder.bias") {
      out.skipped.push_back(name + " (tied to another weight)");
      continue;
    }
    auto m = hf_to_tf_name(name);
    if (!m) {
      out.skipped.push_back(name + " (no Google name)");
      continue;
    }
    torch::Tensor t = tensor.detach().to(torch::kCPU);
    if (m->transpose) {
      if (t.dim() != 2) throw UserError("tensor '" + name + "' should be 2-D but has " + std::to_string(t.dim()) + " dimensions");
      t = t.t();
    }
    t = t.contiguous();
    BundleTensor b;
    b.name = m->name;
    b.dtype = tf_dtype_for(t, name);
    b.shape = t.sizes().vec();
    b.bytes.assign(static_cast<const char*>(t.data_ptr()), static_cast<size_t>(t.numel()) * t.element_size());
    tensors.push_back(std::move(b));
  }
  for (size_t i = 0; i < tensors.size(); ++i)
    for (size_t j = i + 1; j < tensors.size(); ++j)
      if (tensors[i].name == tensors[j].name)
        throw UserError("two tensors map to the Google name '" + tensors[i].name + "'");
  for (const auto& t : tensors) out.written.push_back(t.name);
  std::sort(out.written.begin(), out.written.end());
  auto [index, data] = write_bundle(std::move(tensors));
  // data first: an index never names a data file that is not complete
  write_file_atomic(bundle_data_path(prefix.string(), 0, 1), data);
  write_file_atomic(fs::path(prefix.string() + ".index"), index);
  return out;
}

}  // namespace bert::io
