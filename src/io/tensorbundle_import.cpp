// Google TF checkpoint -> tensors under HF names (see tf_names.h for the table).
#include "bert/io/tensorbundle_import.h"

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/config/run_config.h"
#include "bert/io/tensorbundle.h"
#include "bert/io/tf_names.h"

namespace bert::io {

ImportedWeights import_tf_checkpoint(const fs::path& path, const TfImportOptions& opts) {
  TensorBundle bundle(path);
  ImportedWeights out;
  fs::path config = opts.config_path;
  if (config.empty() && fs::exists(bundle.prefix().parent_path() / "bert_config.json"))
    config = bundle.prefix().parent_path() / "bert_config.json";
  if (!config.empty()) out.config = load_model_config(config);

  int64_t transposed = 0;
  for (const auto& e : bundle.entries()) {
    TfVarInfo info = classify_tf_variable(e.name);
    if (info.kind == TfVarKind::OptimizerSlot || info.kind == TfVarKind::TrainingState) {
      out.skipped.push_back(e.name + " (" + info.why + ")");
      continue;
    }
    if (info.kind == TfVarKind::Unknown) {
      out.unmapped.push_back(e.name);
      continue;
    }
    torch::Tensor t = bundle.read(e);
    if (info.transpose) {
      if (t.dim() != 2)
        throw UserError("variable '" + e.name + "' of " + bundle.prefix().string() + " should be a 2-D kernel but has " +
                        std::to_string(t.dim()) + " dimensions");
      t = t.t().contiguous();
      ++transposed;
    }
    out.tensors.emplace_back(info.hf_name, t);
  }
  if (transposed) out.notes.push_back("transposed " + std::to_string(transposed) + " dense kernels from [in, out] to [out, in]");
  return out;
}

}  // namespace bert::io
