// NVIDIA DeepLearningExamples .pt checkpoints -> tensors under HF names.
#include "bert/io/nvidia_pt.h"

#include <torch/serialize.h>

#include <fstream>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/common/strings.h"
#include "bert/config/run_config.h"
#include "bert/io/tf_names.h"

namespace bert::io {

namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

// The names whose first dimension is the vocabulary.
bool is_vocab_tensor(const std::string& hf_name) {
  return hf_name == "bert.embeddings.word_embeddings.weight" || hf_name == "cls.predictions.decoder.weight" ||
         hf_name == "cls.predictions.bias" || hf_name == "cls.predictions.decoder.bias";
}

std::string first_line(const std::string& s) {
  auto nl = s.find('\n');
  return trim(nl == std::string::npos ? s : s.substr(0, nl));
}

}  // namespace

std::string nvidia_to_hf_name(const std::string& key) {
  std::string k = key;
  while (starts_with(k, "module.")) k = k.substr(7);
  replace_all(k, ".dense_act.", ".dense.");
  if (ends_with(k, "LayerNorm.gamma")) k = k.substr(0, k.size() - 5) + "weight";
  if (ends_with(k, "LayerNorm.beta")) k = k.substr(0, k.size() - 4) + "bias";
  if (starts_with(k, "embeddings.") || starts_with(k, "encoder.") || starts_with(k, "pooler.")) k = "bert." + k;
  return k;
}

bool is_known_hf_bert_name(const std::string& hf_name) {
  return hf_name == "cls.predictions.decoder.weight" || hf_name == "cls.predictions.decoder.bias" ||
         hf_to_tf_name(hf_name).has_value();
}

ImportedWeights map_nvidia_state_dict(std::vector<std::pair<std::string, torch::Tensor>> state_dict,
                                      std::optional<int64_t> vocab_size) {
  ImportedWeights out;
  int64_t renamed = 0;
  for (auto& [key, t] : state_dict) {
    std::string name = nvidia_to_hf_name(key);
    if (name == "bert.embeddings.position_ids") {  // an index buffer, not a weight
      out.skipped.push_back(key + " (buffer)");
      continue;
    }
    if (!is_known_hf_bert_name(name)) {
      out.unmapped.push_back(key);
      continue;
    }
    if (name != key) ++renamed;
    if (vocab_size && is_vocab_tensor(name) && t.dim() >= 1) {
      int64_t rows = t.size(0), v = *vocab_size;
      if (rows > v && rows % 8 == 0 && rows - v < 8) {
        out.notes.push_back(name + ": dropped " + std::to_string(rows - v) + " vocabulary padding rows (" +
                            std::to_string(rows) + " -> " + std::to_string(v) + ")");
        t = t.narrow(0, 0, v).clone();
      }
    }
    out.tensors.emplace_back(name, t.contiguous());
  }
  if (renamed) out.notes.push_back("renamed " + std::to_string(renamed) + " NVIDIA keys to HF names");
  return out;
}

bool is_torch_checkpoint_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {0, 0, 0, 0};
  in.read(magic, 4);
  return (magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4) ||
         static_cast<unsigned char>(magic[0]) == 0x80;
}

ImportedWeights import_nvidia_checkpoint(const fs::path& path, const NvidiaImportOptions& opts) {
  std::string bytes = read_file(path);
  if (bytes.size() < 4 || bytes.compare(0, 4, std::string("PK\x03\x04", 4)) != 0) {
    if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x80)
      throw UserError("LibTorch cannot read " + path.string() + ": it uses the legacy (pre-1.6) torch.save format; "
                      "re-save it in Python with torch.save(torch.load(path), new_path)");
    throw UserError(path.string() + " is not a PyTorch checkpoint (expected a torch.save zip archive)");
  }
  c10::IValue root;
  try {
    root = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  } catch (const c10::Error& e) {
    throw UserError("LibTorch cannot read " + path.string() + ": " + first_line(e.what_without_backtrace()) +
                    "; re-save just the weights in Python with torch.save({'model': ckpt['model']}, path)");
  } catch (const std::exception& e) {
    throw UserError("LibTorch cannot read " + path.string() + ": " + first_line(e.what()));
  }
  if (!root.isGenericDict()) throw UserError(path.string() + " does not hold a dict; expected torch.save({'model': state_dict})");
  c10::impl::GenericDict top = root.toGenericDict();
  c10::impl::GenericDict sd = top;
  std::vector<std::string> other_keys;
  bool nested = false;
  for (const auto& kv : top) {
    if (!kv.key().isString()) continue;
    const std::string& k = kv.key().toStringRef();
    if (k == "model" && kv.value().isGenericDict()) {
      sd = kv.value().toGenericDict();
      nested = true;
    } else {
      other_keys.push_back(k);
    }
  }
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  std::vector<std::string> non_tensors;
  for (const auto& kv : sd) {
    std::string k = kv.key().isString() ? kv.key().toStringRef() : kv.key().tagKind();
    if (kv.value().isTensor()) tensors.emplace_back(k, kv.value().toTensor());
    else non_tensors.push_back(k);
  }
  if (tensors.empty())
    throw UserError(path.string() + " holds no tensors under 'model'; expected torch.save({'model': state_dict})");

  fs::path config = opts.config_path;
  if (config.empty() && fs::exists(path.parent_path() / "bert_config.json")) config = path.parent_path() / "bert_config.json";
  std::optional<ModelConfig> cfg;
  if (!config.empty()) cfg = load_model_config(config);
  ImportedWeights out = map_nvidia_state_dict(std::move(tensors), cfg ? std::optional<int64_t>(cfg->vocab_size) : std::nullopt);
  out.config = cfg;
  if (nested)
    for (const auto& k : other_keys) out.skipped.insert(out.skipped.begin(), k + " (not model weights)");
  for (const auto& k : non_tensors) out.skipped.push_back(k + " (not a tensor)");
  return out;
}

}  // namespace bert::io
