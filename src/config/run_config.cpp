#include "bert/config/run_config.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/common/strings.h"

namespace bert {

using config::json;

std::vector<std::pair<std::string, config::FieldList>> RunConfig::sections() {
  std::vector<std::pair<std::string, config::FieldList>> out(9);
  out[0].first = "model";
  model.describe(out[0].second);
  out[1].first = "train";
  train.describe(out[1].second);
  out[2].first = "optimizer";
  optimizer.describe(out[2].second);
  out[3].first = "data";
  data.describe(out[3].second);
  out[4].first = "checkpoint";
  checkpoint.describe(out[4].second);
  out[5].first = "logging";
  logging.describe(out[5].second);
  out[6].first = "finetune";
  finetune.describe(out[6].second);
  out[7].first = "eval";
  eval.describe(out[7].second);
  out[8].first = "dist";
  dist.describe(out[8].second);
  return out;
}

json RunConfig::to_json() {
  json out = json::object();
  for (auto& [name, fields] : sections()) out[name] = config::write_json(fields);
  return out;
}

// Field pointers stay valid after the FieldList is gone: they point into *this.
config::Field& RunConfig::field(const std::string& key, const std::string& where) {
  static thread_local config::Field slot;
  auto dot = key.find('.');
  auto secs = sections();
  std::vector<std::string> all;
  for (auto& [name, fields] : secs)
    for (auto& n : fields.names()) all.push_back(name + "." + n);
  if (dot == std::string::npos)
    throw UserError(where + ": '" + key + "' must be section.key" + did_you_mean(key, all));
  std::string sec = key.substr(0, dot), name = key.substr(dot + 1);
  for (auto& [sname, fields] : secs) {
    if (sname != sec) continue;
    if (auto* f = fields.find(name)) {
      slot = *f;
      return slot;
    }
  }
  throw UserError(where + ": unknown key '" + key + "'" + did_you_mean(key, all));
}

void RunConfig::validate(const std::string& where) {
  for (auto& [name, fields] : sections()) config::validate(fields, where + ": " + name);
  if (model.hidden_size % model.num_attention_heads != 0)
    throw UserError(where + ": model.hidden_size (" + std::to_string(model.hidden_size) +
                    ") must be a multiple of model.num_attention_heads (" +
                    std::to_string(model.num_attention_heads) + ")");
  if (data.max_seq_length > model.max_position_embeddings)
    throw UserError(where + ": data.max_seq_length (" + std::to_string(data.max_seq_length) +
                    ") exceeds model.max_position_embeddings (" +
                    std::to_string(model.max_position_embeddings) + ")");
  if (train.global_batch_size % train.micro_batch_size != 0)
    throw UserError(where + ": train.global_batch_size (" + std::to_string(train.global_batch_size) +
                    ") must be a multiple of train.micro_batch_size (" +
                    std::to_string(train.micro_batch_size) + ")");
}

static json parse_json_file(const fs::path& path, const std::string& what) {
  std::string text = read_file(path);
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    // e.byte is the offset of the error; turn it into a line number
    size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + std::min(e.byte, text.size()), '\n'));
    throw UserError(what + " " + path.string() + " is not valid JSON (line " + std::to_string(line) + ")");
  }
}

ModelConfig load_model_config(const fs::path& path) {
  json j = parse_json_file(path, "model config");
  if (!j.is_object()) throw UserError("model config " + path.string() + " must be a JSON object");
  static const std::set<std::string> ignored = {
      "architectures", "model_type", "transformers_version", "torch_dtype", "position_embedding_type",
      "use_cache", "classifier_dropout", "gradient_checkpointing", "directionality", "pooler_fc_size",
      "pooler_num_attention_heads", "pooler_num_fc_layers", "pooler_size_per_head", "pooler_type",
      "output_past", "id2label", "label2id", "_name_or_path", "finetuning_task", "problem_type",
      "num_labels", "bos_token_id", "eos_token_id", "return_dict", "output_hidden_states",
      "output_attentions", "is_decoder", "add_cross_attention", "chunk_size_feed_forward"};
  json arch = json::object();
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!ignored.count(it.key())) arch[it.key()] = it.value();
  ModelConfig m;
  config::FieldList f;
  m.describe(f);
  config::read_json(f, arch, path.string());
  config::validate(f, path.string());
  return m;
}

void apply_model_section(ModelConfig& m, const json& value, const fs::path& base_dir, const std::string& where) {
  if (value.is_string()) {
    fs::path p = value.get<std::string>();
    if (p.is_relative()) p = base_dir / p;
    m = load_model_config(p);
    return;
  }
  config::FieldList f;
  m.describe(f);
  config::read_json(f, value, where);
}

RunConfig resolve_config(const ConfigSources& src) {
  RunConfig cfg;
  // 1. the config file
  if (!src.config_file.empty()) {
    fs::path path = src.config_file;
    json j = parse_json_file(path, "config file");
    if (!j.is_object()) throw UserError("config file " + path.string() + " must be a JSON object");
    auto secs = cfg.sections();
    std::vector<std::string> names;
    for (auto& s : secs) names.push_back(s.first);
    names.push_back("description");
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& key = it.key();
      if (key == "description" || key == "_comment") continue;
      if (key == "model") {
        apply_model_section(cfg.model, it.value(), path.parent_path(), path.string() + ": model");
        continue;
      }
      auto s = std::find_if(secs.begin(), secs.end(), [&](auto& p) { return p.first == key; });
      if (s == secs.end())
        throw UserError("unknown section '" + key + "' in " + path.string() + did_you_mean(key, names));
      config::read_json(s->second, it.value(), path.string() + ": " + key);
    }
  }
  // 2. --model-config replaces the model section
  if (!src.model_config_file.empty()) cfg.model = load_model_config(src.model_config_file);
  // 3. --set section.key=value
  for (const auto& s : src.sets) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UserError("--set '" + s + "' must look like section.key=value (e.g. --set train.seed=7)");
    std::string key = trim(s.substr(0, eq));
    config::Field& f = cfg.field(key, "--set");
    auto dot = key.find('.');
    config::set_from_string(f, s.substr(eq + 1), "--set " + key.substr(0, dot));
  }
  // 4. dedicated flags
  for (const auto& [key, value] : src.flags) {
    config::Field& f = cfg.field(key, "flag");
    config::set_from_string(f, value, key.substr(0, key.find('.')));
  }
  cfg.validate(src.config_file.empty() ? "config" : src.config_file);
  return cfg;
}

std::string config_table(RunConfig& cfg) {
  std::ostringstream ss;
  size_t width = 0;
  auto secs = cfg.sections();
  for (auto& [name, fields] : secs)
    for (auto& f : fields.fields()) width = std::max(width, name.size() + 1 + f.name.size());
  ss << "+" << std::string(width + 2, '-') << "+" << std::string(30, '-') << "\n";
  for (auto& [name, fields] : secs) {
    for (auto& f : fields.fields()) {
      std::string k = name + "." + f.name;
      std::string v = config::value_to_string(f);
      if (v.empty()) v = "\"\"";
      ss << "| " << k << std::string(width - k.size(), ' ') << " | " << v << "\n";
    }
  }
  ss << "+" << std::string(width + 2, '-') << "+" << std::string(30, '-');
  return ss.str();
}

std::string config_reference_markdown() {
  RunConfig defaults;
  std::ostringstream ss;
  for (auto& [name, fields] : defaults.sections()) {
    ss << "### " << name << "\n\n| key | type | default | allowed | meaning |\n|---|---|---|---|---|\n";
    for (auto& f : fields.fields()) {
      std::string allowed;
      if (!f.choices.empty()) allowed = join(f.choices, ", ");
      auto num = [](double x) {
        std::ostringstream o;
        o << x;
        return o.str();
      };
      if (f.lo && f.hi) allowed = "[" + num(*f.lo) + ", " + num(*f.hi) + "]";
      else if (f.lo) allowed = ">= " + num(*f.lo);
      else if (f.hi) allowed = "<= " + num(*f.hi);
      std::string def = config::value_to_string(f);
      if (def.empty()) def = "\"\"";
      std::string type = f.type_name();
      ss << "| `" << name << "." << f.name << "` | " << type << " | `" << def << "` | " << allowed << " | "
         << f.help << " |\n";
    }
    ss << "\n";
  }
  std::string out = ss.str();
  while (out.size() >= 2 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n') out.pop_back();
  return out;  // ends with exactly one newline
}

void save_config(RunConfig& cfg, const fs::path& dir, const std::string& name) {
  write_file_atomic(dir / name, cfg.to_json().dump(2) + "\n");
}

}  // namespace bert
