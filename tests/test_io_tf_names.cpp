// The Google <-> HF name table (both directions), the classification of non-weights, and the
// NVIDIA key renaming.
#include <gtest/gtest.h>

#include <set>

#include "bert/io/nvidia_pt.h"
#include "bert/io/tf_names.h"

using namespace bert::io;

namespace {

// The full expected table for one layer and the heads: (Google, HF, transposed).
const std::vector<std::tuple<std::string, std::string, bool>>& expected_pairs() {
  static const std::vector<std::tuple<std::string, std::string, bool>> pairs = {
      {"bert/embeddings/word_embeddings", "bert.embeddings.word_embeddings.weight", false},
      {"bert/embeddings/position_embeddings", "bert.embeddings.position_embeddings.weight", false},
      {"bert/embeddings/token_type_embeddings", "bert.embeddings.token_type_embeddings.weight", false},
      {"bert/embeddings/LayerNorm/gamma", "bert.embeddings.LayerNorm.weight", false},
      {"bert/embeddings/LayerNorm/beta", "bert.embeddings.LayerNorm.bias", false},
      {"bert/encoder/layer_0/attention/self/query/kernel", "bert.encoder.layer.0.attention.self.query.weight", true},
      {"bert/encoder/layer_0/attention/self/query/bias", "bert.encoder.layer.0.attention.self.query.bias", false},
      {"bert/encoder/layer_7/attention/self/key/kernel", "bert.encoder.layer.7.attention.self.key.weight", true},
      {"bert/encoder/layer_7/attention/self/key/bias", "bert.encoder.layer.7.attention.self.key.bias", false},
      {"bert/encoder/layer_11/attention/self/value/kernel", "bert.encoder.layer.11.attention.self.value.weight", true},
      {"bert/encoder/layer_11/attention/self/value/bias", "bert.encoder.layer.11.attention.self.value.bias", false},
      {"bert/encoder/layer_1/attention/output/dense/kernel", "bert.encoder.layer.1.attention.output.dense.weight", true},
      {"bert/encoder/layer_1/attention/output/dense/bias", "bert.encoder.layer.1.attention.output.dense.bias", false},
      {"bert/encoder/layer_1/attention/output/LayerNorm/gamma", "bert.encoder.layer.1.attention.output.LayerNorm.weight", false},
      {"bert/encoder/layer_1/attention/output/LayerNorm/beta", "bert.encoder.layer.1.attention.output.LayerNorm.bias", false},
      {"bert/encoder/layer_23/intermediate/dense/kernel", "bert.encoder.layer.23.intermediate.dense.weight", true},
      {"bert/encoder/layer_23/intermediate/dense/bias", "bert.encoder.layer.23.intermediate.dense.bias", false},
      {"bert/encoder/layer_23/output/dense/kernel", "bert.encoder.layer.23.output.dense.weight", true},
      {"bert/encoder/layer_23/output/dense/bias", "bert.encoder.layer.23.output.dense.bias", false},
      {"bert/encoder/layer_23/output/LayerNorm/gamma", "bert.encoder.layer.23.output.LayerNorm.weight", false},
      {"bert/encoder/layer_23/output/LayerNorm/beta", "bert.encoder.layer.23.output.LayerNorm.bias", false},
      {"bert/pooler/dense/kernel", "bert.pooler.dense.weight", true},
      {"bert/pooler/dense/bias", "bert.pooler.dense.bias", false},
      {"cls/predictions/transform/dense/kernel", "cls.predictions.transform.dense.weight", true},
      {"cls/predictions/transform/dense/bias", "cls.predictions.transform.dense.bias", false},
      {"cls/predictions/transform/LayerNorm/gamma", "cls.predictions.transform.LayerNorm.weight", false},
      {"cls/predictions/transform/LayerNorm/beta", "cls.predictions.transform.LayerNorm.bias", false},
      {"cls/predictions/output_bias", "cls.predictions.bias", false},
      {"cls/seq_relationship/output_weights", "cls.seq_relationship.weight", false},
      {"cls/seq_relationship/output_bias", "cls.seq_relationship.bias", false},
      {"cls/squad/output_weights", "qa_outputs.weight", false},
      {"cls/squad/output_bias", "qa_outputs.bias", false},
      {"output_weights", "classifier.weight", false},
      {"output_bias", "classifier.bias", false},
  };
  return pairs;
}

}  // namespace

TEST(IoTfNames, GoogleToHf) {
  for (const auto& [tf, hf, transpose] : expected_pairs()) {
    TfVarInfo info = classify_tf_variable(tf);
    EXPECT_EQ(info.kind, TfVarKind::Weight) << tf;
    EXPECT_EQ(info.hf_name, hf) << tf;
    EXPECT_EQ(info.transpose, transpose) << tf;
  }
}

TEST(IoTfNames, HfToGoogle) {
  for (const auto& [tf, hf, transpose] : expected_pairs()) {
    auto m = hf_to_tf_name(hf);
    ASSERT_TRUE(m.has_value()) << hf;
    EXPECT_EQ(m->name, tf) << hf;
    EXPECT_EQ(m->transpose, transpose) << hf;
  }
}

TEST(IoTfNames, EveryRuleRoundTripsAndTargetsAreUnique) {
  std::set<std::string> from, to;
  for (const auto& r : tf_to_hf_rules()) {
    EXPECT_TRUE(from.insert(r.from).second) << "duplicate " << r.from;
    EXPECT_TRUE(to.insert(r.to).second) << "duplicate " << r.to;
    std::string tf = r.from, hf = r.to;
    if (auto at = tf.find("{N}"); at != std::string::npos) tf.replace(at, 3, "5");
    if (auto at = hf.find("{N}"); at != std::string::npos) hf.replace(at, 3, "5");
    auto fwd = apply_name_rules(tf_to_hf_rules(), tf);
    ASSERT_TRUE(fwd) << tf;
    EXPECT_EQ(fwd->name, hf);
    auto back = apply_name_rules(hf_to_tf_rules(), fwd->name);
    ASSERT_TRUE(back) << hf;
    EXPECT_EQ(back->name, tf);
    // kernels, and only kernels, are transposed
    EXPECT_EQ(r.transpose, tf.size() > 7 && tf.compare(tf.size() - 7, 7, "/kernel") == 0) << tf;
  }
  EXPECT_EQ(from.size(), 34u);  // 5 embeddings + 16 per layer + 13 heads
}

TEST(IoTfNames, NonWeightsAreClassified) {
  EXPECT_EQ(classify_tf_variable("bert/encoder/layer_0/output/dense/kernel/adam_m").kind, TfVarKind::OptimizerSlot);
  EXPECT_EQ(classify_tf_variable("bert/embeddings/word_embeddings/adam_v").kind, TfVarKind::OptimizerSlot);
  EXPECT_EQ(classify_tf_variable("cls/predictions/output_bias/Adam_1").kind, TfVarKind::OptimizerSlot);
  EXPECT_EQ(classify_tf_variable("global_step").kind, TfVarKind::TrainingState);
  EXPECT_EQ(classify_tf_variable("current_loss_scale").kind, TfVarKind::TrainingState);
  EXPECT_EQ(classify_tf_variable("bert/encoder/layer_0/mystery/kernel").kind, TfVarKind::Unknown);
  EXPECT_EQ(classify_tf_variable("adam_m").kind, TfVarKind::Unknown);  // a slot needs a variable
  EXPECT_EQ(classify_tf_variable("bert/encoder/layer_x/output/dense/bias").kind, TfVarKind::Unknown);
  EXPECT_EQ(classify_tf_variable("bert/encoder/layer_01/output/dense/bias").kind, TfVarKind::Unknown);
  EXPECT_EQ(classify_tf_variable("bert/encoder/layer_/output/dense/bias").kind, TfVarKind::Unknown);
  EXPECT_FALSE(hf_to_tf_name("bert.embeddings.position_ids").has_value());
}

TEST(IoTfNames, NvidiaKeysBecomeHfNames) {
  EXPECT_EQ(nvidia_to_hf_name("module.bert.encoder.layer.3.intermediate.dense_act.weight"),
            "bert.encoder.layer.3.intermediate.dense.weight");
  EXPECT_EQ(nvidia_to_hf_name("module.bert.pooler.dense_act.bias"), "bert.pooler.dense.bias");
  EXPECT_EQ(nvidia_to_hf_name("cls.predictions.transform.dense_act.weight"), "cls.predictions.transform.dense.weight");
  EXPECT_EQ(nvidia_to_hf_name("module.module.cls.seq_relationship.weight"), "cls.seq_relationship.weight");
  EXPECT_EQ(nvidia_to_hf_name("bert.embeddings.LayerNorm.gamma"), "bert.embeddings.LayerNorm.weight");
  EXPECT_EQ(nvidia_to_hf_name("bert.encoder.layer.0.output.LayerNorm.beta"), "bert.encoder.layer.0.output.LayerNorm.bias");
  EXPECT_EQ(nvidia_to_hf_name("encoder.layer.0.attention.self.query.weight"), "bert.encoder.layer.0.attention.self.query.weight");
  EXPECT_EQ(nvidia_to_hf_name("qa_outputs.weight"), "qa_outputs.weight");
  EXPECT_TRUE(is_known_hf_bert_name("cls.predictions.decoder.weight"));
  EXPECT_TRUE(is_known_hf_bert_name("classifier.bias"));
  EXPECT_FALSE(is_known_hf_bert_name("bert.encoder.layer.0.attention.self.query.gamma"));
}

TEST(IoTfNames, NvidiaVocabPaddingIsTrimmed) {
  std::vector<std::pair<std::string, torch::Tensor>> sd = {
      {"module.bert.embeddings.word_embeddings.weight", torch::arange(16 * 4, torch::kFloat).reshape({16, 4})},
      {"module.cls.predictions.bias", torch::arange(16, torch::kFloat)},
      {"module.bert.embeddings.position_embeddings.weight", torch::zeros({16, 4})},
      {"module.mystery.weight", torch::zeros({2})},
  };
  ImportedWeights w = map_nvidia_state_dict(sd, 15);
  ASSERT_EQ(w.tensors.size(), 3u);
  EXPECT_EQ(w.find("bert.embeddings.word_embeddings.weight")->sizes(), (std::vector<int64_t>{15, 4}));
  EXPECT_EQ(w.find("cls.predictions.bias")->size(0), 15);
  EXPECT_EQ(w.find("bert.embeddings.position_embeddings.weight")->size(0), 16);  // not a vocab tensor
  EXPECT_EQ(w.unmapped, std::vector<std::string>{"module.mystery.weight"});
  EXPECT_EQ(w.find("cls.predictions.bias")->index({14}).item<float>(), 14.0f);
  // padding is only trimmed up to the next multiple of 8; anything else is left for the load report
  ImportedWeights odd = map_nvidia_state_dict(sd, 7);
  EXPECT_EQ(odd.find("bert.embeddings.word_embeddings.weight")->size(0), 16);
  ImportedWeights none = map_nvidia_state_dict(sd, std::nullopt);
  EXPECT_EQ(none.find("bert.embeddings.word_embeddings.weight")->size(0), 16);
}
