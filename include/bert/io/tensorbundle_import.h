#pragma once
// Importing a Google BERT TensorFlow checkpoint: read the bundle, keep the model weights under HF
// names (dense kernels transposed to [out, in]), skip optimizer slots and training state, and read
// the bert_config.json that sits next to it.
#include <filesystem>

#include "bert/io/name_map.h"

namespace bert::io {

struct TfImportOptions {
  // bert_config.json to read; empty = "bert_config.json" next to the checkpoint if present.
  std::filesystem::path config_path;
};

// `path`: checkpoint prefix, its .index file, or its directory (see resolve_tf_checkpoint_prefix).
ImportedWeights import_tf_checkpoint(const std::filesystem::path& path, const TfImportOptions& opts = {});

}  // namespace bert::io
