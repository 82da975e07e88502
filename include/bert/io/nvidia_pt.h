#pragma once
// Importing NVIDIA DeepLearningExamples BERT checkpoints: files written by
// torch.save({'model': state_dict, 'optimizer': ..., ...}) in PyTorch's zip format, read by our own
// zip and pickle readers (nvidia_pt_zip.h, nvidia_pt_pickle.h): LibTorch 1.13's torch::pickle_load
// cannot rebuild the collections.OrderedDict that every state_dict() is. A plain state dict
// (e.g. HF's pytorch_model.bin) works too.
//
// NVIDIA's names differ from HF's in small ways, undone here: DDP's "module." prefix, "dense_act"
// for the fused Linear+activation modules, LayerNorm "gamma"/"beta" in old checkpoints, and a
// vocabulary padded to a multiple of 8 (trimmed back to the config's vocab_size, noted).
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bert/io/name_map.h"

namespace bert::io {

struct NvidiaImportOptions {
  // bert_config.json; empty = "bert_config.json" next to the checkpoint if present. Its vocab_size
  // decides how many padded vocabulary rows to drop.
  std::filesystem::path config_path;
};

// NVIDIA (or HF) state-dict key -> HF name: strips "module.", "dense_act" -> "dense", LayerNorm
// gamma/beta -> weight/bias, adds "bert." to bare BertModel keys.
std::string nvidia_to_hf_name(const std::string& key);
// True for the HF names a BERT checkpoint may hold (encoder, heads, tied decoder).
bool is_known_hf_bert_name(const std::string& hf_name);

// Renames a state dict and trims padded vocabulary rows to `vocab_size` (when given).
ImportedWeights map_nvidia_state_dict(std::vector<std::pair<std::string, torch::Tensor>> state_dict,
                                      std::optional<int64_t> vocab_size);

// True when the file starts like a torch.save zip archive (or a legacy pickle), for format detection.
bool is_torch_checkpoint_file(const std::filesystem::path& path);

// Reads the file, takes its 'model' entry (or the whole dict when it is a plain state dict), and
// maps it. UserError with the reason when the file cannot be read (the pre-1.6 non-zip format,
// compressed records, a pickle opcode outside protocol 2-5, a truncated or corrupt archive).
ImportedWeights import_nvidia_checkpoint(const std::filesystem::path& path, const NvidiaImportOptions& opts = {});

}  // namespace bert::io
