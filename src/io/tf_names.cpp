// The Google <-> HF name table and the classification of non-weight variables.
#include "bert/io/tf_names.h"

#include "bert/common/strings.h"

namespace bert::io {

namespace {

std::vector<NameRule> build_table() {
  std::vector<NameRule> t;
  auto dense = [&](const std::string& tf, const std::string& hf) {
    t.push_back({tf + "/kernel", hf + ".weight", true});
    t.push_back({tf + "/bias", hf + ".bias", false});
  };
  auto layer_norm = [&](const std::string& tf, const std::string& hf) {
    t.push_back({tf + "/gamma", hf + ".weight", false});
    t.push_back({tf + "/beta", hf + ".bias", false});
  };
  // embeddings
  for (const char* e : {"word_embeddings", "position_embeddings", "token_type_embeddings"})
    t.push_back({std::string("bert/embeddings/") + e, std::string("bert.embeddings.") + e + ".weight", false});
  layer_norm("bert/embeddings/LayerNorm", "bert.embeddings.LayerNorm");
  // encoder layers
  const std::string tl = "bert/encoder/layer_{N}/", hl = "bert.encoder.layer.{N}.";
  for (const char* p : {"query", "key", "value"})
    dense(tl + "attention/self/" + p, hl + "attention.self." + p);
  dense(tl + "attention/output/dense", hl + "attention.output.dense");
  layer_norm(tl + "attention/output/LayerNorm", hl + "attention.output.LayerNorm");
  dense(tl + "intermediate/dense", hl + "intermediate.dense");
  dense(tl + "output/dense", hl + "output.dense");
  layer_norm(tl + "output/LayerNorm", hl + "output.LayerNorm");
  // pooler and pretraining heads
  dense("bert/pooler/dense", "bert.pooler.dense");
  dense("cls/predictions/transform/dense", "cls.predictions.transform.dense");
  layer_norm("cls/predictions/transform/LayerNorm", "cls.predictions.transform.LayerNorm");
  t.push_back({"cls/predictions/output_bias", "cls.predictions.bias", false});
  t.push_back({"cls/seq_relationship/output_weights", "cls.seq_relationship.weight", false});  // stored [2, hidden]
  t.push_back({"cls/seq_relationship/output_bias", "cls.seq_relationship.bias", false});
  // fine-tuning heads: run_squad.py's span head, run_classifier.py's top-level [num_labels, hidden]
  t.push_back({"cls/squad/output_weights", "qa_outputs.weight", false});
  t.push_back({"cls/squad/output_bias", "qa_outputs.bias", false});
  t.push_back({"output_weights", "classifier.weight", false});
  t.push_back({"output_bias", "classifier.bias", false});
  return t;
}

// Last path component of a TF name.
std::string leaf(const std::string& name) {
  auto slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

}  // namespace

const std::vector<NameRule>& tf_to_hf_rules() {
  static const std::vector<NameRule> t = build_table();
  return t;
}

const std::vector<NameRule>& hf_to_tf_rules() {
  static const std::vector<NameRule> t = reversed(tf_to_hf_rules());
  return t;
}

TfVarInfo classify_tf_variable(const std::string& name) {
  TfVarInfo info;
  if (auto m = apply_name_rules(tf_to_hf_rules(), name)) {
    info.kind = TfVarKind::Weight;
    info.hf_name = m->name;
    info.transpose = m->transpose;
    return info;
  }
  static const std::vector<std::string> slots = {"adam_m", "adam_v", "lamb_m", "lamb_v", "Adam", "Adam_1",
                                                 "Momentum", "Adagrad", "RMSProp", "RMSProp_1",
                                                 "ExponentialMovingAverage"};
  static const std::vector<std::string> state = {"global_step", "loss_scale", "good_steps", "current_loss_scale",
                                                 "beta1_power", "beta2_power", "learning_rate", "step",
                                                 "_CHECKPOINTABLE_OBJECT_GRAPH"};
  std::string last = leaf(name);
  for (const auto& s : slots)
    if (last == s && name != last) {
      info.kind = TfVarKind::OptimizerSlot;
      info.why = "optimizer slot";
      return info;
    }
  for (const auto& s : state)
    if (last == s || name == s) {
      info.kind = TfVarKind::TrainingState;
      info.why = "training state";
      return info;
    }
  return info;
}

std::optional<NameMatch> hf_to_tf_name(const std::string& hf_name) { return apply_name_rules(hf_to_tf_rules(), hf_name); }

}  // namespace bert::io
