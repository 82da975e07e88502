// Reading any supported checkpoint: format detection, the per-format readers, the sidecar files
// (model config, vocab.txt, tokenizer_config.json), and --init-checkpoint.
#include <spdlog/spdlog.h>

#include <fstream>
#include <map>
#include <set>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/common/strings.h"
#include "bert/config/run_config.h"
#include "bert/io/convert.h"
#include "bert/io/hf_config.h"
#include "bert/io/nvidia_pt.h"
#include "bert/io/safetensors.h"
#include "bert/io/tensorbundle.h"
#include "bert/io/tensorbundle_import.h"

namespace bert::io {

using config::json;

namespace {

const std::vector<std::pair<CheckpointFormat, std::string>>& format_names() {
  static const std::vector<std::pair<CheckpointFormat, std::string>> n = {
      {CheckpointFormat::Auto, "auto"}, {CheckpointFormat::BertTrain, "bert-train"},
      {CheckpointFormat::Hf, "hf"},     {CheckpointFormat::Safetensors, "safetensors"},
      {CheckpointFormat::Tf, "tf"},     {CheckpointFormat::Nvidia, "nvidia"}};
  return n;
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// The first 9 bytes: an 8-byte little-endian header length, then the header's '{'.
bool looks_like_safetensors(const fs::path& p) {
  if (!is_file(p)) return false;
  std::ifstream in(p, std::ios::binary);
  unsigned char b[9] = {0};
  in.read(reinterpret_cast<char*>(b), 9);
  if (in.gcount() != 9) return false;
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | b[i];
  std::error_code ec;
  return b[8] == '{' && n >= 2 && n <= fs::file_size(p, ec) - 8;
}

std::vector<fs::path> files_with_extension(const fs::path& dir, const std::string& ext) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& de : fs::directory_iterator(dir, ec))
    if (de.is_regular_file() && de.path().extension() == ext) out.push_back(de.path());
  std::sort(out.begin(), out.end());
  return out;
}

bool is_hf_dir(const fs::path& d) {
  return is_file(d / "model.safetensors") || is_file(d / "model.safetensors.index.json") ||
         is_file(d / "pytorch_model.bin");
}

bool is_bert_train_dir(const fs::path& d) {
  return is_file(d / "trainer_state.json") || fs::exists(d / "checkpoints" / "latest");
}

// The first file of `names` that exists in `dir`, or "".
fs::path first_existing(const fs::path& dir, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (is_file(dir / n)) return dir / n;
  return {};
}

// A state dict saved under HF (or bare BertModel) names -> ImportedWeights.
ImportedWeights from_hf_state_dict(NamedTensors tensors) {
  ImportedWeights out;
  int64_t renamed = 0;
  for (auto& [key, t] : tensors) {
    std::string name = nvidia_to_hf_name(key);
    if (name == "bert.embeddings.position_ids") {
      out.skipped.push_back(key + " (buffer)");
      continue;
    }
    if (!is_known_hf_bert_name(name)) {
      out.unmapped.push_back(key);
      continue;
    }
    if (name != key) ++renamed;
    out.tensors.emplace_back(name, std::move(t));
  }
  if (renamed) out.notes.push_back("renamed " + std::to_string(renamed) + " keys to HF names (bert. prefix, LayerNorm gamma/beta)");
  return out;
}

// model.safetensors.index.json: {"weight_map": {"<name>": "<shard file>"}}; every shard read once.
NamedTensors read_sharded_safetensors(const fs::path& index) {
  const std::string where = index.string();
  json j;
  try {
    j = json::parse(read_file(index));
  } catch (const json::parse_error&) {
    throw UserError(where + " is not valid JSON; the sharded checkpoint index is damaged");
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw UserError(where + " has no \"weight_map\" object; expected HF's sharded-checkpoint index");
  std::vector<std::string> shards;
  std::map<std::string, std::string> owner;
  for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
    if (!it.value().is_string()) throw UserError(where + ": weight_map[\"" + it.key() + "\"] must be a file name");
    std::string f = it.value().get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f.find('\\') != std::string::npos || f == "..")
      throw UserError(where + ": shard name '" + f + "' must be a plain file name in the same directory");
    if (std::find(shards.begin(), shards.end(), f) == shards.end()) shards.push_back(f);
    owner[it.key()] = f;
  }
  NamedTensors out;
  std::set<std::string> seen;
  for (const auto& f : shards) {
    SafetensorsFile s = load_safetensors(index.parent_path() / f);
    for (auto& [name, t] : s.tensors) {
      auto o = owner.find(name);
      if (o == owner.end() || o->second != f)
        throw UserError(where + ": tensor '" + name + "' found in " + f + " but the index places it " +
                        (o == owner.end() ? std::string("nowhere") : "in " + o->second));
      seen.insert(name);
      out.emplace_back(name, std::move(t));
    }
  }
  for (const auto& [name, f] : owner)
    if (!seen.count(name)) throw UserError(where + ": tensor '" + name + "' is not in its shard " + f);
  return out;
}

// config.json or bert_config.json (or the override) -> the source's model config and HF extras.
void read_config(const fs::path& file, ImportedWeights& w, CheckpointSource& src) {
  if (file.empty()) return;
  HfModelInfo info = read_hf_config(file);
  w.config = info.model;
  src.config_file = file;
  src.architectures = info.architectures;
  src.labels = info.labels;
  src.num_labels = info.num_labels;
}

ImportedWeights load_hf_dir(const fs::path& dir, const LoadAnyOptions& opts, CheckpointSource& src) {
  ImportedWeights w;
  if (is_file(dir / "model.safetensors")) {
    src.path = dir / "model.safetensors";
    w = from_hf_state_dict(load_safetensors(src.path).tensors);
  } else if (is_file(dir / "model.safetensors.index.json")) {
    src.path = dir / "model.safetensors.index.json";
    w = from_hf_state_dict(read_sharded_safetensors(src.path));
  } else if (is_file(dir / "pytorch_model.bin")) {
    src.path = dir / "pytorch_model.bin";
    NvidiaImportOptions no;
    no.config_path = opts.config_path.empty() ? first_existing(dir, {"config.json", "bert_config.json"}) : opts.config_path;
    w = import_nvidia_checkpoint(src.path, no);
  } else {
    throw UserError("no model.safetensors, model.safetensors.index.json or pytorch_model.bin in " + dir.string() +
                    "; is it an HF model directory?");
  }
  fs::path cfg = opts.config_path.empty() ? first_existing(dir, {"config.json", "bert_config.json"}) : opts.config_path;
  read_config(cfg, w, src);
  return w;
}

// A trainer checkpoint directory (or a run directory: its checkpoints/latest).
ImportedWeights load_bert_train_dir(fs::path dir, const LoadAnyOptions& opts, CheckpointSource& src) {
  if (!is_file(dir / "trainer_state.json") && fs::exists(dir / "checkpoints" / "latest")) {
    std::error_code ec;
    fs::path latest = fs::canonical(dir / "checkpoints" / "latest", ec);
    if (ec) throw UserError(dir.string() + "/checkpoints/latest points nowhere; pass a checkpoints/step_N directory");
    dir = latest;
  }
  if (!is_file(dir / "model.safetensors"))
    throw UserError("no model.safetensors in " + dir.string() + "; the checkpoint is incomplete, pick another one");
  ImportedWeights w = from_hf_state_dict(load_safetensors(dir / "model.safetensors").tensors);
  for (const char* f : {"optimizer.safetensors", "optimizer.json"})
    if (is_file(dir / f)) w.skipped.push_back(std::string(f) + " (optimizer state)");
  for (const char* f : {"trainer_state.json", "run_config.json"})
    if (is_file(dir / f)) w.skipped.push_back(std::string(f) + " (training state)");
  src.path = dir;
  fs::path cfg = opts.config_path.empty() ? first_existing(dir, {"config.json"}) : opts.config_path;
  read_config(cfg, w, src);
  return w;
}

ImportedWeights load_safetensors_file(const fs::path& file, const LoadAnyOptions& opts, CheckpointSource& src) {
  src.path = file;
  ImportedWeights w = from_hf_state_dict(load_safetensors(file).tensors);
  fs::path cfg = opts.config_path.empty() ? first_existing(file.parent_path().empty() ? "." : file.parent_path(),
                                                           {"config.json", "bert_config.json"})
                                          : opts.config_path;
  read_config(cfg, w, src);
  return w;
}

ImportedWeights load_tf(const fs::path& path, const LoadAnyOptions& opts, CheckpointSource& src) {
  fs::path prefix = resolve_tf_checkpoint_prefix(path);
  src.path = prefix;
  TfImportOptions to;
  to.config_path = opts.config_path;
  ImportedWeights w = import_tf_checkpoint(prefix, to);
  fs::path cfg = opts.config_path.empty() ? first_existing(prefix.parent_path(), {"bert_config.json"}) : opts.config_path;
  read_config(cfg, w, src);
  return w;
}

ImportedWeights load_nvidia(const fs::path& path, const LoadAnyOptions& opts, CheckpointSource& src) {
  fs::path file = path;
  if (is_dir(path)) {
    auto pts = files_with_extension(path, ".pt");
    if (pts.size() != 1) {
      std::vector<std::string> names;
      for (const auto& p : pts) names.push_back(p.filename().string());
      throw UserError(pts.empty() ? "no *.pt checkpoint in directory " + path.string()
                                  : "directory " + path.string() + " holds several .pt checkpoints (" + join(names, ", ") +
                                        "); pass the one you want");
    }
    file = pts[0];
  }
  src.path = file;
  fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  NvidiaImportOptions no;
  no.config_path = opts.config_path.empty() ? first_existing(dir, {"bert_config.json", "config.json"}) : opts.config_path;
  ImportedWeights w = import_nvidia_checkpoint(file, no);
  read_config(no.config_path, w, src);
  if (!w.config && opts.vocab_size) {  // trim NVIDIA's padded vocabulary to the caller's size
    ImportedWeights t = map_nvidia_state_dict(std::move(w.tensors), opts.vocab_size);
    w.tensors = std::move(t.tensors);
    for (auto& n : t.notes) w.notes.push_back(n);
  }
  return w;
}

// vocab.txt and tokenizer_config.json next to what was read.
void find_sidecars(const fs::path& read, CheckpointSource& src) {
  fs::path dir = is_dir(read) ? read : read.parent_path();
  if (dir.empty()) dir = ".";
  if (is_file(dir / "vocab.txt")) src.vocab_file = dir / "vocab.txt";
  fs::path tc = dir / "tokenizer_config.json";
  if (!is_file(tc)) return;
  try {
    json j = json::parse(read_file(tc));
    if (j.is_object() && j.contains("do_lower_case") && j["do_lower_case"].is_boolean())
      src.do_lower_case = j["do_lower_case"].get<bool>();
  } catch (const json::parse_error&) {
    spdlog::warn("{} is not valid JSON; ignoring it", tc.string());
  }
}

// Architecture fields (everything but dropout and init) that differ between two configs.
std::vector<std::string> config_differences(ModelConfig a, ModelConfig b) {
  config::FieldList fa, fb;
  a.describe(fa);
  b.describe(fb);
  json ja = config::write_json(fa), jb = config::write_json(fb);
  std::vector<std::string> out;
  for (auto it = ja.begin(); it != ja.end(); ++it) {
    const std::string& k = it.key();
    if (k.find("dropout") != std::string::npos || k == "initializer_range" || is_runtime_model_field(k)) continue;
    if (jb.contains(k) && jb[k] != it.value()) out.push_back(k + " " + it.value().dump() + " vs " + jb[k].dump());
  }
  return out;
}

}  // namespace

std::string checkpoint_format_name(CheckpointFormat f) {
  for (const auto& [k, n] : format_names())
    if (k == f) return n;
  return "?";
}

CheckpointFormat parse_checkpoint_format(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& [k, n] : format_names()) {
    if (n == name) return k;
    names.push_back(n);
  }
  throw UserError("unknown checkpoint format '" + name + "'" + did_you_mean(name, names) + "; use one of " +
                  join(names, ", "));
}

CheckpointFormat detect_checkpoint_format(const fs::path& path) {
  const std::string looked_for =
      "a bert-train checkpoint directory, an HF model directory (config.json + model.safetensors or pytorch_model.bin), "
      "a .safetensors file, a TF checkpoint (prefix, .index or directory) or an NVIDIA .pt file";
  std::error_code ec;
  if (is_dir(path)) {
    if (is_bert_train_dir(path)) return CheckpointFormat::BertTrain;
    if (is_hf_dir(path)) return CheckpointFormat::Hf;
    if (!files_with_extension(path, ".index").empty()) return CheckpointFormat::Tf;
    if (!files_with_extension(path, ".pt").empty()) return CheckpointFormat::Nvidia;
    throw UserError("no checkpoint found in directory " + path.string() + "; expected " + looked_for);
  }
  if (is_file(path)) {
    std::string s = path.filename().string();
    if (path.extension() == ".index" || s.find(".data-") != std::string::npos) return CheckpointFormat::Tf;
    if (looks_like_safetensors(path)) return CheckpointFormat::Safetensors;
    if (is_torch_checkpoint_file(path)) return CheckpointFormat::Nvidia;
    throw UserError(path.string() + " is not a checkpoint this tool reads; expected " + looked_for);
  }
  if (fs::exists(fs::path(path.string() + ".index"), ec)) return CheckpointFormat::Tf;  // a TF prefix
  throw UserError("checkpoint not found: " + path.string() + " (neither a file, a directory nor a TF prefix with " +
                  path.filename().string() + ".index)");
}

ImportedWeights load_any_checkpoint(const fs::path& path, const LoadAnyOptions& opts, CheckpointSource* source) {
  if (path.empty()) throw UserError("no checkpoint given; pass a checkpoint file or directory");
  if (!opts.config_path.empty()) require_file(opts.config_path, "model config");
  CheckpointFormat f = opts.format == CheckpointFormat::Auto ? detect_checkpoint_format(path) : opts.format;
  // An explicit format must still fit the path (a clear error instead of a parse failure).
  if (opts.format != CheckpointFormat::Auto) {
    CheckpointFormat seen = detect_checkpoint_format(path);
    bool ok = seen == f || (f == CheckpointFormat::Hf && seen == CheckpointFormat::BertTrain) ||
              (f == CheckpointFormat::Hf && seen == CheckpointFormat::Nvidia && is_file(path)) ||
              (f == CheckpointFormat::Hf && seen == CheckpointFormat::Safetensors);
    if (!ok)
      throw UserError(path.string() + " holds a checkpoint of format '" + checkpoint_format_name(seen) + "', not '" +
                      checkpoint_format_name(f) + "'; use --from " + checkpoint_format_name(seen) + " or --from auto");
  }
  CheckpointSource src;
  src.format = f;
  ImportedWeights w;
  switch (f) {
    case CheckpointFormat::BertTrain: w = load_bert_train_dir(path, opts, src); break;
    case CheckpointFormat::Hf:
      if (is_dir(path))
        w = load_hf_dir(path, opts, src);
      else if (looks_like_safetensors(path))
        w = load_safetensors_file(path, opts, src);
      else
        w = load_nvidia(path, opts, src);  // a pytorch_model.bin passed as a file
      break;
    case CheckpointFormat::Safetensors: w = load_safetensors_file(path, opts, src); break;
    case CheckpointFormat::Tf: w = load_tf(path, opts, src); break;
    case CheckpointFormat::Nvidia: w = load_nvidia(path, opts, src); break;
    case CheckpointFormat::Auto: break;
  }
  if (w.tensors.empty())
    throw UserError(src.path.string() + " holds no BERT weights (" + std::to_string(w.unmapped.size()) +
                    " unknown names); is it a BERT checkpoint?");
  find_sidecars(src.path, src);
  if (source) *source = std::move(src);
  return w;
}

LoadReport init_from_checkpoint(torch::nn::Module& model, const ModelConfig& model_cfg, const fs::path& path) {
  LoadAnyOptions opts;
  opts.vocab_size = model_cfg.vocab_size;
  CheckpointSource src;
  ImportedWeights w = load_any_checkpoint(path, opts, &src);
  w.log(src.path.string() + " (" + checkpoint_format_name(src.format) + ")");
  if (w.config) {
    auto diff = config_differences(*w.config, model_cfg);
    if (!diff.empty())
      spdlog::warn("the checkpoint's config ({}) differs from the run's model config: {}", src.config_file.string(),
                   join(diff, "; "));
  }
  LoadReport r = load_weights(model, w.tensors, src.path.string());
  for (const auto& u : w.unmapped) r.unexpected.push_back(u);
  r.log();
  return r;
}

}  // namespace bert::io
