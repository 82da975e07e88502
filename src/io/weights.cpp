// Named model state in HF order, loading with a missing/unexpected/mismatch report, saving.
#include "bert/io/weights.h"

#include <spdlog/spdlog.h>

#include <map>
#include <set>
#include <sstream>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/common/strings.h"
#include "bert/io/hf_config.h"
#include "bert/model/heads.h"

namespace bert::io {

namespace {

std::string parent_of(const std::string& key) {
  auto dot = key.rfind('.');
  return dot == std::string::npos ? std::string() : key.substr(0, dot + 1);
}

std::string shape_str(const torch::Tensor& t) {
  std::ostringstream ss;
  ss << t.sizes();
  return ss.str();
}

void append_own(NamedTensors& out, const std::string& prefix, const torch::nn::Module& m) {
  for (const auto& p : m.named_parameters(/*recurse=*/false)) out.emplace_back(prefix + p.key(), p.value());
  for (const auto& b : m.named_buffers(/*recurse=*/false)) out.emplace_back(prefix + b.key(), b.value());
}

// "a.LayerNorm.gamma" -> "a.LayerNorm.weight", "...beta" -> "...bias"; unchanged otherwise.
std::string fix_layer_norm_name(const std::string& k) {
  if (ends_with(k, "LayerNorm.gamma")) return k.substr(0, k.size() - 5) + "weight";
  if (ends_with(k, "LayerNorm.beta")) return k.substr(0, k.size() - 4) + "bias";
  return k;
}

std::string preview(const std::vector<std::string>& keys, size_t n = 8) {
  std::vector<std::string> head(keys.begin(), keys.begin() + std::min(n, keys.size()));
  std::string s = join(head, ", ");
  if (keys.size() > n) s += ", ... (" + std::to_string(keys.size() - n) + " more)";
  return s;
}

}  // namespace

NamedTensors named_state(const torch::nn::Module& model, bool include_aliases) {
  NamedTensors out;
  append_own(out, "", model);
  for (const auto& m : model.named_modules("", /*include_self=*/false)) append_own(out, m.key() + ".", *m.value());
  if (!include_aliases) return out;
  for (const auto& [alias, target] : model::tied_aliases(model)) {
    auto t = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == target; });
    if (t == out.end()) continue;
    torch::Tensor tensor = t->second;
    // After the last entry of the alias's grandparent module (HF: cls.predictions.decoder.* follows
    // cls.predictions.transform.*).
    const std::string parent = parent_of(parent_of(alias).substr(0, parent_of(alias).size() - 1));
    size_t pos = out.size();
    for (size_t i = 0; i < out.size(); ++i)
      if (starts_with(out[i].first, parent)) pos = i + 1;
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(pos), {alias, tensor});
  }
  return out;
}

std::string LoadReport::summary() const {
  return "weights from " + source + ": " + std::to_string(loaded.size()) + " loaded, " +
         std::to_string(missing.size()) + " missing, " + std::to_string(unexpected.size()) + " unexpected, " +
         std::to_string(ignored.size()) + " ignored, " + std::to_string(renamed.size()) + " renamed";
}

void LoadReport::log() const {
  spdlog::info("{}", summary());
  if (!missing.empty()) spdlog::warn("missing keys (left as initialised): {}", join(missing, ", "));
  if (!unexpected.empty()) spdlog::warn("unexpected keys (not used): {}", join(unexpected, ", "));
  if (!renamed.empty()) spdlog::debug("renamed keys: {}", join(renamed, ", "));
}

LoadReport load_weights(torch::nn::Module& model, const NamedTensors& tensors, const std::string& source) {
  LoadReport r;
  r.source = source;
  std::map<std::string, torch::Tensor> expected;
  std::vector<std::string> order;
  for (auto& [k, t] : named_state(model, /*include_aliases=*/false)) {
    expected[k] = t;
    order.push_back(k);
  }
  std::map<std::string, std::string> aliases;
  for (const auto& [a, t] : model::tied_aliases(model)) aliases[a] = t;

  // 1. Normalise the source names.
  std::map<std::string, torch::Tensor> src;
  std::vector<std::string> src_order;
  for (const auto& [k0, t] : tensors) {
    std::string k = fix_layer_norm_name(k0);
    if (!expected.count(k) && !aliases.count(k)) {
      if (expected.count("bert." + k) || aliases.count("bert." + k))
        k = "bert." + k;
      else if (starts_with(k, "bert.") && expected.count(k.substr(5)))
        k = k.substr(5);
    }
    if (k != k0) r.renamed.push_back(k0 + " -> " + k);
    if (!src.count(k)) src_order.push_back(k);
    src[k] = t;
  }

  // 2. Decide what goes where; collect shape mismatches before touching the model.
  std::vector<std::pair<std::string, torch::Tensor>> plan;  // (model key, tensor)
  std::vector<std::string> mismatched;
  auto check = [&](const std::string& from, const std::string& to, const torch::Tensor& t) {
    const auto& dst = expected.at(to);
    if (!t.sizes().equals(dst.sizes())) {
      mismatched.push_back(from + " " + shape_str(t) + " vs model " + shape_str(dst));
      return false;
    }
    return true;
  };
  for (const auto& k : src_order) {
    const auto& t = src[k];
    if (expected.count(k)) {
      if (check(k, k, t)) plan.emplace_back(k, t);
    } else if (aliases.count(k)) {
      const std::string& target = aliases[k];
      if (src.count(target)) {
        check(k, target, t);
        r.ignored.push_back(k);
      } else if (check(k, target, t)) {
        plan.emplace_back(target, t);
        r.renamed.push_back(k + " -> " + target);
      }
    } else if (k == "bert.embeddings.position_ids" || k == "embeddings.position_ids") {
      r.ignored.push_back(k);  // a constant buffer older HF versions saved
    } else {
      r.unexpected.push_back(k);
    }
  }
  if (!mismatched.empty())
    throw UserError("shape mismatch loading " + source + ": " + preview(mismatched) +
                    "; the checkpoint was made for a different model config");

  // 3. Copy.
  torch::NoGradGuard no_grad;
  std::set<std::string> done;
  for (const auto& [k, t] : plan) {
    auto& dst = expected.at(k);
    dst.copy_(t.to(dst.device()));
    done.insert(k);
  }
  for (const auto& k : order) (done.count(k) ? r.loaded : r.missing).push_back(k);
  return r;
}

LoadReport load_weights_file(torch::nn::Module& model, const fs::path& path) {
  auto f = load_safetensors(path);
  return load_weights(model, f.tensors, path.string());
}

void save_weights(const torch::nn::Module& model, const fs::path& path, Metadata metadata) {
  metadata["format"] = "pt";
  save_safetensors(path, named_state(model, /*include_aliases=*/false), metadata);
}

void save_model_dir(const torch::nn::Module& model, const ModelConfig& cfg, const fs::path& dir,
                    std::vector<std::string> labels) {
  ensure_writable_dir(dir);
  HfConfigExtras extras;
  extras.architecture = model::hf_architecture(model);
  if (auto* cls = dynamic_cast<const model::BertForSequenceClassificationImpl*>(&model)) {
    if (labels.empty())
      for (int64_t i = 0; i < cls->num_labels(); ++i) labels.push_back("LABEL_" + std::to_string(i));
    if (static_cast<int64_t>(labels.size()) != cls->num_labels())
      throw UserError(std::to_string(labels.size()) + " label names given for a classifier with " +
                      std::to_string(cls->num_labels()) + " labels");
    extras.labels = labels;
  }
  save_weights(model, dir / "model.safetensors");
  write_hf_config(dir / "config.json", cfg, extras);
}

LoadReport load_model_dir(torch::nn::Module& model, const fs::path& dir) {
  fs::path file = dir / "model.safetensors";
  if (!fs::exists(file)) throw UserError("no model.safetensors in " + dir.string() + "; is it a model directory?");
  return load_weights_file(model, file);
}

}  // namespace bert::io
