// HF-style config.json writer/reader for BERT models.
#include "bert/io/hf_config.h"

#include <algorithm>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/config/run_config.h"

namespace bert::io {

using config::json;

json hf_config_json(const ModelConfig& model, const HfConfigExtras& extras) {
  json j = json::object();
  if (!extras.architecture.empty()) j["architectures"] = json::array({extras.architecture});
  j["model_type"] = "bert";
  ModelConfig copy = model;
  config::FieldList f;
  copy.describe(f);
  const json fields = config::write_json(f);
  for (auto it = fields.begin(); it != fields.end(); ++it)
    if (!is_runtime_model_field(it.key())) j[it.key()] = it.value();
  if (copy.hidden_act == "gelu_tanh") j["hidden_act"] = "gelu_pytorch_tanh";
  j["position_embedding_type"] = "absolute";
  j["torch_dtype"] = "float32";
  j["use_cache"] = true;
  j["classifier_dropout"] = nullptr;
  if (!extras.labels.empty()) {
    json id2label = json::object(), label2id = json::object();
    for (size_t i = 0; i < extras.labels.size(); ++i) {
      id2label[std::to_string(i)] = extras.labels[i];
      label2id[extras.labels[i]] = static_cast<int64_t>(i);
    }
    j["id2label"] = id2label;
    j["label2id"] = label2id;
    if (extras.labels.size() == 1) j["problem_type"] = "regression";
  }
  return j;
}

void write_hf_config(const fs::path& path, const ModelConfig& model, const HfConfigExtras& extras) {
  write_file_atomic(path, hf_config_json(model, extras).dump(2) + "\n");
}

HfModelInfo read_hf_config(const fs::path& path) {
  HfModelInfo info;
  info.model = load_model_config(path);  // validates the file and the architecture keys
  json j = json::parse(read_file(path));
  const std::string where = "model config " + path.string();
  if (j.contains("architectures")) {
    if (!j["architectures"].is_array()) throw UserError(where + ": 'architectures' must be a list of strings");
    for (const auto& a : j["architectures"]) {
      if (!a.is_string()) throw UserError(where + ": 'architectures' must be a list of strings");
      info.architectures.push_back(a.get<std::string>());
    }
  }
  if (j.contains("id2label")) {
    const auto& m = j["id2label"];
    if (!m.is_object()) throw UserError(where + ": 'id2label' must map \"0\", \"1\", ... to label names");
    info.labels.assign(m.size(), "");
    for (auto it = m.begin(); it != m.end(); ++it) {
      size_t id = 0;
      try {
        size_t used = 0;
        id = std::stoul(it.key(), &used);
        if (used != it.key().size()) throw std::invalid_argument("trailing");
      } catch (const std::exception&) {
        throw UserError(where + ": id2label key '" + it.key() + "' is not a label id");
      }
      if (id >= m.size() || !it.value().is_string())
        throw UserError(where + ": id2label must map the ids 0.." + std::to_string(m.size() - 1) + " to names");
      info.labels[id] = it.value().get<std::string>();
    }
    info.num_labels = static_cast<int64_t>(info.labels.size());
  }
  if (j.contains("num_labels")) {
    if (!j["num_labels"].is_number_integer() || j["num_labels"].get<int64_t>() < 1)
      throw UserError(where + ": 'num_labels' must be a positive integer");
    info.num_labels = j["num_labels"].get<int64_t>();
  }
  return info;
}

}  // namespace bert::io
