// bert-train convert: any checkpoint -> our model class (load report) -> an HF directory or a
// Google TF checkpoint, assembled in a temporary directory and renamed into place.
#include <spdlog/spdlog.h>

#include <map>
#include <set>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/common/strings.h"
#include "bert/io/convert.h"
#include "bert/io/hf_config.h"
#include "bert/io/tensorbundle_export.h"
#include "bert/model/heads.h"
#include "bert/text/tokenizer.h"

namespace bert::io {

using config::json;

namespace {

const std::vector<std::pair<HeadKind, std::string>>& head_names() {
  static const std::vector<std::pair<HeadKind, std::string>> n = {{HeadKind::Auto, "auto"},
                                                                  {HeadKind::PreTraining, "pretraining"},
                                                                  {HeadKind::QuestionAnswering, "qa"},
                                                                  {HeadKind::Classification, "classification"}};
  return n;
}

bool has_tensor(const ImportedWeights& w, const std::string& name) { return w.find(name) != nullptr; }

// --head auto: the source's architecture when it is one of ours, else what its tensors show.
HeadKind resolve_head(const ConvertOptions& o, const CheckpointSource& src, const ImportedWeights& w,
                      std::vector<std::string>& notes) {
  if (o.head != HeadKind::Auto) return o.head;
  if (!o.labels.empty() || o.num_labels > 0) return HeadKind::Classification;
  for (const auto& a : src.architectures) {
    for (HeadKind h : {HeadKind::PreTraining, HeadKind::QuestionAnswering, HeadKind::Classification})
      if (a == head_architecture(h)) return h;
    notes.push_back("source architecture " + a + " is not one of ours; head chosen from the tensor names");
  }
  if (has_tensor(w, "qa_outputs.weight")) return HeadKind::QuestionAnswering;
  if (has_tensor(w, "classifier.weight")) return HeadKind::Classification;
  return HeadKind::PreTraining;
}

// Label names for a classification head: --labels, else the source's id2label, else LABEL_<i>.
std::vector<std::string> resolve_labels(const ConvertOptions& o, const CheckpointSource& src, const ImportedWeights& w) {
  int64_t n = 0;
  std::string from;
  if (!o.labels.empty()) {
    n = static_cast<int64_t>(o.labels.size());
    if (o.num_labels > 0 && o.num_labels != n)
      throw UserError("--num-labels " + std::to_string(o.num_labels) + " disagrees with the " + std::to_string(n) +
                      " names given by --labels; give one of them");
  } else if (o.num_labels > 0) {
    n = o.num_labels;
  } else if (src.num_labels > 0) {
    n = src.num_labels;
  } else if (const torch::Tensor* c = w.find("classifier.weight"); c && c->dim() == 2) {
    n = c->size(0);
  } else {
    throw UserError("--head classification needs --num-labels N or --labels a,b,c (the checkpoint has no classifier)");
  }
  std::vector<std::string> labels = o.labels;
  if (labels.empty() && static_cast<int64_t>(src.labels.size()) == n) labels = src.labels;
  if (labels.empty())
    for (int64_t i = 0; i < n; ++i) labels.push_back("LABEL_" + std::to_string(i));
  std::set<std::string> seen;
  for (const auto& l : labels) {
    if (l.empty()) throw UserError("--labels has an empty label name; give every label a name, e.g. --labels neg,pos");
    if (!seen.insert(l).second)
      throw UserError("label '" + l + "' appears twice in --labels; label names must be unique");
  }
  return labels;
}

std::shared_ptr<torch::nn::Module> make_model(HeadKind h, const ModelConfig& cfg, int64_t num_labels) {
  switch (h) {
    case HeadKind::QuestionAnswering: return model::BertForQuestionAnswering(cfg).ptr();
    case HeadKind::Classification: return model::BertForSequenceClassification(cfg, num_labels).ptr();
    default: return model::BertForPreTraining(cfg).ptr();
  }
}

// An uncased BERT vocab has no upper-case letters outside the bracketed special tokens.
bool vocab_looks_uncased(const text::Vocab& v) {
  for (const auto& t : v.tokens()) {
    if (t.size() >= 2 && t.front() == '[' && t.back() == ']') continue;
    for (char c : t)
      if (c >= 'A' && c <= 'Z') return false;
  }
  return true;
}

// Google's bert_config.json: the eleven keys of modeling.BertConfig.
json google_config_json(const ModelConfig& m, std::vector<std::string>& notes) {
  std::string act = m.hidden_act;
  if (act == "gelu_new" || act == "gelu_tanh" || act == "gelu_pytorch_tanh") {
    notes.push_back("hidden_act " + act + " written as \"gelu\" (Google's gelu is the tanh approximation)");
    act = "gelu";
  }
  if (m.layer_norm_eps != 1e-12)
    notes.push_back("layer_norm_eps " + std::to_string(m.layer_norm_eps) +
                    " has no place in Google's bert_config.json (Google's code uses 1e-12)");
  json j = json::object();
  j["attention_probs_dropout_prob"] = m.attention_probs_dropout_prob;
  j["hidden_act"] = act;
  j["hidden_dropout_prob"] = m.hidden_dropout_prob;
  j["hidden_size"] = m.hidden_size;
  j["initializer_range"] = m.initializer_range;
  j["intermediate_size"] = m.intermediate_size;
  j["max_position_embeddings"] = m.max_position_embeddings;
  j["num_attention_heads"] = m.num_attention_heads;
  j["num_hidden_layers"] = m.num_hidden_layers;
  j["type_vocab_size"] = m.type_vocab_size;
  j["vocab_size"] = m.vocab_size;
  return j;
}

json special_tokens_json() {
  return json{{"unk_token", "[UNK]"}, {"sep_token", "[SEP]"}, {"pad_token", "[PAD]"}, {"cls_token", "[CLS]"},
              {"mask_token", "[MASK]"}};
}

// HF BertTokenizer's constructor arguments.
json tokenizer_config_json(bool lower, int64_t max_len) {
  json j = json::object();
  j["tokenizer_class"] = "BertTokenizer";
  j["do_lower_case"] = lower;
  j["do_basic_tokenize"] = true;
  j["never_split"] = nullptr;
  const json special = special_tokens_json();
  for (auto it = special.begin(); it != special.end(); ++it) j[it.key()] = it.value();
  j["tokenize_chinese_chars"] = true;
  j["strip_accents"] = nullptr;
  j["model_max_length"] = max_len;
  j["clean_up_tokenization_spaces"] = true;
  return j;
}

// The output directory must be new, empty, or (with --overwrite) replaceable.
fs::path normalised_output(const fs::path& out, bool overwrite) {
  fs::path p = out.lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  if (p.empty() || p == "." || p == "/") throw UserError("--output-dir '" + out.string() + "' must name a new directory");
  std::error_code ec;
  if (fs::exists(p, ec)) {
    if (!fs::is_directory(p, ec)) throw UserError("--output-dir " + p.string() + " is a file; choose a directory");
    if (!fs::is_empty(p, ec) && !overwrite)
      throw UserError("--output-dir " + p.string() + " is not empty; choose a new directory or pass --overwrite");
  }
  return p;
}

// tmp -> out, replacing an existing `out` (moved aside first, removed after).
void install_dir(const fs::path& tmp, const fs::path& out) {
  std::error_code ec;
  fs::path old;
  if (fs::exists(out, ec)) {
    old = fs::path(out.string() + ".old." + std::to_string(::getpid()));
    fs::remove_all(old, ec);
    fs::rename(out, old, ec);
    if (ec) throw RuntimeError("cannot move " + out.string() + " aside: " + ec.message());
  }
  try {
    commit_temp(tmp, out);
  } catch (...) {
    if (!old.empty()) fs::rename(old, out, ec);  // put the old one back
    throw;
  }
  if (!old.empty()) fs::remove_all(old, ec);
}

std::string reason_of(const std::string& skipped) {
  auto open = skipped.rfind(" (");
  if (open == std::string::npos || skipped.back() != ')') return "other";
  return skipped.substr(open + 2, skipped.size() - open - 3);
}

}  // namespace

ConvertTarget parse_convert_target(const std::string& name) {
  if (name == "hf") return ConvertTarget::Hf;
  if (name == "tf") return ConvertTarget::Tf;
  throw UserError("unknown --to '" + name + "'" + did_you_mean(name, {"hf", "tf"}) + "; use hf or tf");
}

HeadKind parse_head_kind(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& [k, n] : head_names()) {
    if (n == name) return k;
    names.push_back(n);
  }
  throw UserError("unknown --head '" + name + "'" + did_you_mean(name, names) + "; use one of " + join(names, ", "));
}

std::string head_architecture(HeadKind h) {
  switch (h) {
    case HeadKind::QuestionAnswering: return "BertForQuestionAnswering";
    case HeadKind::Classification: return "BertForSequenceClassification";
    default: return "BertForPreTraining";
  }
}

ConvertResult convert_checkpoint(const ConvertOptions& o) {
  if (o.input.empty()) throw UserError("--input is required: the checkpoint to convert");
  if (o.output_dir.empty()) throw UserError("--output-dir is required: where the converted model goes");
  if ((o.num_labels > 0 || !o.labels.empty()) && o.head != HeadKind::Auto && o.head != HeadKind::Classification)
    throw UserError("--num-labels/--labels only apply to --head classification");
  const fs::path out = normalised_output(o.output_dir, o.overwrite);
  if (!o.vocab.empty()) require_file(o.vocab, "vocab file");

  ConvertResult r;
  LoadAnyOptions lo;
  lo.format = o.from;
  lo.config_path = o.model_config;
  ImportedWeights w = load_any_checkpoint(o.input, lo, &r.source);
  if (!w.config)
    throw UserError("no model config found with " + o.input.string() +
                    "; pass --model-config bert_config.json (the config the checkpoint was trained with)");
  r.model = *w.config;
  r.tensors_read = w.tensors.size();
  r.skipped = w.skipped;
  r.unmapped = w.unmapped;
  r.notes = w.notes;

  // 1. the model class, and the weights loaded into it (shape mismatches throw here)
  HeadKind head = resolve_head(o, r.source, w, r.notes);
  if (head == HeadKind::Classification) r.labels = resolve_labels(o, r.source, w);
  r.architecture = head_architecture(head);
  torch::manual_seed(o.seed);
  std::shared_ptr<torch::nn::Module> m = make_model(head, r.model, static_cast<int64_t>(r.labels.size()));
  r.load = load_weights(*m, w.tensors, r.source.path.string());
  w.tensors.clear();

  // 2. the vocabulary and its casing
  fs::path vocab = o.vocab.empty() ? r.source.vocab_file : o.vocab;
  std::optional<text::Vocab> v;
  if (!vocab.empty()) {
    v = text::Vocab::load(vocab.string());
    if (static_cast<int64_t>(v->size()) > r.model.vocab_size)
      throw UserError("vocab file " + vocab.string() + " has " + std::to_string(v->size()) +
                      " tokens but the model's vocab_size is " + std::to_string(r.model.vocab_size) +
                      "; pass the vocab the checkpoint was trained with (--vocab)");
    if (static_cast<int64_t>(v->size()) < r.model.vocab_size)
      r.notes.push_back("vocab file has " + std::to_string(v->size()) + " tokens, the model " +
                        std::to_string(r.model.vocab_size) + " rows (the extra rows are never used)");
  }
  if (o.do_lower_case) {
    r.do_lower_case = *o.do_lower_case;
    r.do_lower_case_from = "--do-lower-case";
  } else if (r.source.do_lower_case) {
    r.do_lower_case = *r.source.do_lower_case;
    r.do_lower_case_from = "the source's tokenizer_config.json";
  } else if (v) {
    r.do_lower_case = vocab_looks_uncased(*v);
    r.do_lower_case_from = std::string("guessed from the vocab: ") + (r.do_lower_case ? "no" : "has") +
                           " upper-case tokens";
  } else {
    r.do_lower_case_from = "default (no vocab)";
  }

  // 3. write everything into a temporary directory next to the target, then rename it into place
  ensure_writable_dir(out.parent_path().empty() ? fs::path(".") : out.parent_path());
  const fs::path tmp = temp_path_for(out);
  std::error_code ec;
  fs::remove_all(tmp, ec);
  ensure_writable_dir(tmp);
  try {
    NamedTensors state = named_state(*m, /*include_aliases=*/false);
    if (o.to == ConvertTarget::Hf) {
      save_weights(*m, tmp / "model.safetensors");
      r.tensors_written = state.size();
      write_hf_config(tmp / "config.json", r.model, HfConfigExtras{r.architecture, r.labels});
      r.files = {"config.json", "model.safetensors"};
      if (v) {
        write_file_atomic(tmp / "vocab.txt", read_file(vocab));
        write_file_atomic(tmp / "tokenizer_config.json",
                          tokenizer_config_json(r.do_lower_case, r.model.max_position_embeddings).dump(2) + "\n");
        write_file_atomic(tmp / "special_tokens_map.json", special_tokens_json().dump(2) + "\n");
        r.files.insert(r.files.end(), {"vocab.txt", "tokenizer_config.json", "special_tokens_map.json"});
      }
    } else {
      TfExportResult t = export_tf_checkpoint(state, tmp / "bert_model.ckpt");
      r.tensors_written = t.written.size();
      for (const auto& s : t.skipped) r.notes.push_back("not written to the TF checkpoint: " + s);
      write_file_atomic(tmp / "bert_config.json", google_config_json(r.model, r.notes).dump(2) + "\n");
      r.files = {"bert_model.ckpt.index", "bert_model.ckpt.data-00000-of-00001", "bert_config.json"};
      if (v) {
        write_file_atomic(tmp / "vocab.txt", read_file(vocab));
        r.files.push_back("vocab.txt");
      }
      if (!r.labels.empty()) r.notes.push_back("TF checkpoints carry no label names: " + join(r.labels, ", "));
    }
    install_dir(tmp, out);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  r.output_dir = out;
  return r;
}

void log_convert_result(const ConvertResult& r) {
  const auto& s = r.source;
  spdlog::info("convert: read {} checkpoint {}{}", checkpoint_format_name(s.format), s.path.string(),
               s.config_file.empty() ? std::string() : " (model config " + s.config_file.string() + ")");
  std::map<std::string, int64_t> by_reason;
  for (const auto& k : r.skipped) ++by_reason[reason_of(k)];
  std::vector<std::string> reasons;
  for (const auto& [why, n] : by_reason) reasons.push_back(std::to_string(n) + " " + why);
  spdlog::info("convert: {} weight tensors read; {} non-weights skipped{}; {} unknown names left out",
               r.tensors_read, r.skipped.size(), reasons.empty() ? "" : " (" + join(reasons, ", ") + ")",
               r.unmapped.size());
  for (const auto& n : r.notes) spdlog::info("convert:   {}", n);
  for (const auto& k : r.skipped) spdlog::debug("convert:   skipped {}", k);
  if (!r.unmapped.empty()) spdlog::warn("convert: unexpected source names (no HF name): {}", join(r.unmapped, ", "));
  spdlog::info("convert: into {}{}: {} loaded, {} missing, {} unexpected, {} tied aliases ignored, {} renamed",
               r.architecture, r.labels.empty() ? "" : " (labels " + join(r.labels, ", ") + ")", r.load.loaded.size(),
               r.load.missing.size(), r.load.unexpected.size(), r.load.ignored.size(), r.load.renamed.size());
  if (!r.load.missing.empty())
    spdlog::warn("convert: missing for {} (freshly initialised in the output): {}", r.architecture,
                 join(r.load.missing, ", "));
  if (!r.load.unexpected.empty())
    spdlog::warn("convert: unexpected for {} (not written): {}", r.architecture, join(r.load.unexpected, ", "));
  for (const auto& n : r.load.renamed) spdlog::debug("convert:   renamed {}", n);
  spdlog::info("convert: do_lower_case {} ({})", r.do_lower_case ? "true" : "false", r.do_lower_case_from);
  if (std::find(r.files.begin(), r.files.end(), "vocab.txt") == r.files.end())
    spdlog::warn("convert: no vocab.txt given (--vocab) or found next to the input; the output has no tokenizer files");
  spdlog::info("convert: wrote {} ({} tensors): {}", r.output_dir.string(), r.tensors_written, join(r.files, ", "));
}

}  // namespace bert::io
