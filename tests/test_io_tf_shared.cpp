// The genuine (tiny, random) Google checkpoint in ../shared/data/tf_checkpoint: every variable's
// name, dtype and shape, the skipped optimizer slots, the mapped HF names and shapes for its
// config (2 layers, hidden 4, 4 heads, intermediate 16, vocab 15, 16 positions), and checksums.
#include <gtest/gtest.h>

#include <map>

#include "bert/common/error.h"
#include "bert/io/tensorbundle.h"
#include "bert/io/tensorbundle_export.h"
#include "bert/io/tensorbundle_import.h"
#include "bert/io/tf_names.h"
#include "test_util.h"

using namespace bert;
using namespace bert::io;
using bert::test::TempDir;
namespace fs = std::filesystem;

namespace {

using Shapes = std::map<std::string, std::vector<int64_t>>;

// The model variables of the tiny checkpoint with their TensorFlow shapes.
Shapes tiny_tf_weights() {
  const int64_t H = 4, I = 16, V = 15, P = 16, T = 2;
  Shapes s = {{"bert/embeddings/word_embeddings", {V, H}},
              {"bert/embeddings/position_embeddings", {P, H}},
              {"bert/embeddings/token_type_embeddings", {T, H}},
              {"bert/embeddings/LayerNorm/gamma", {H}},
              {"bert/embeddings/LayerNorm/beta", {H}},
              {"bert/pooler/dense/kernel", {H, H}},
              {"bert/pooler/dense/bias", {H}},
              {"cls/predictions/transform/dense/kernel", {H, H}},
              {"cls/predictions/transform/dense/bias", {H}},
              {"cls/predictions/transform/LayerNorm/gamma", {H}},
              {"cls/predictions/transform/LayerNorm/beta", {H}},
              {"cls/predictions/output_bias", {V}},
              {"cls/seq_relationship/output_weights", {2, H}},
              {"cls/seq_relationship/output_bias", {2}}};
  for (int l = 0; l < 2; ++l) {
    std::string p = "bert/encoder/layer_" + std::to_string(l) + "/";
    for (const char* n : {"query", "key", "value"}) {
      s[p + "attention/self/" + n + "/kernel"] = {H, H};
      s[p + "attention/self/" + n + "/bias"] = {H};
    }
    s[p + "attention/output/dense/kernel"] = {H, H};
    s[p + "attention/output/dense/bias"] = {H};
    s[p + "attention/output/LayerNorm/gamma"] = {H};
    s[p + "attention/output/LayerNorm/beta"] = {H};
    s[p + "intermediate/dense/kernel"] = {H, I};
    s[p + "intermediate/dense/bias"] = {I};
    s[p + "output/dense/kernel"] = {I, H};
    s[p + "output/dense/bias"] = {H};
    s[p + "output/LayerNorm/gamma"] = {H};
    s[p + "output/LayerNorm/beta"] = {H};
  }
  return s;
}

}  // namespace

TEST(IoTfShared, EveryVariableNameDtypeAndShape) {
  BERT_REQUIRE_SHARED_DATA(data);
  TensorBundle b(data / "tf_checkpoint");
  EXPECT_EQ(b.prefix(), data / "tf_checkpoint" / "bert_model.ckpt");
  EXPECT_EQ(b.header().num_shards, 1);
  Shapes expected;
  for (const auto& [name, shape] : tiny_tf_weights()) {
    expected[name] = shape;
    expected[name + "/adam_m"] = shape;
    expected[name + "/adam_v"] = shape;
  }
  ASSERT_EQ(b.entries().size(), expected.size() + 1);  // + global_step
  for (const auto& e : b.entries()) {
    if (e.name == "global_step") {
      EXPECT_EQ(e.dtype, kTfInt64);
      EXPECT_TRUE(e.shape.empty());
      EXPECT_GE(b.read(e).item<int64_t>(), 0);
      continue;
    }
    ASSERT_TRUE(expected.count(e.name)) << e.name;
    EXPECT_EQ(e.dtype, kTfFloat) << e.name;
    EXPECT_EQ(e.shape, expected[e.name]) << e.name;
    EXPECT_EQ(e.shard_id, 0);
    EXPECT_TRUE(e.has_crc) << e.name;
    torch::Tensor t = b.read(e);  // verifies the CRC
    EXPECT_EQ(t.sizes().vec(), expected[e.name]);
    EXPECT_TRUE(torch::isfinite(t).all().item<bool>()) << e.name;
  }
}

TEST(IoTfShared, ImportGivesHfNamesAndShapes) {
  BERT_REQUIRE_SHARED_DATA(data);
  ImportedWeights w = import_tf_checkpoint(data / "tf_checkpoint");
  ASSERT_TRUE(w.config.has_value());
  EXPECT_EQ(w.config->num_hidden_layers, 2);
  EXPECT_EQ(w.config->hidden_size, 4);
  EXPECT_EQ(w.config->num_attention_heads, 4);
  EXPECT_EQ(w.config->intermediate_size, 16);
  EXPECT_EQ(w.config->vocab_size, 15);
  EXPECT_EQ(w.config->max_position_embeddings, 16);

  Shapes tf = tiny_tf_weights();
  EXPECT_EQ(w.tensors.size(), tf.size());
  EXPECT_EQ(w.skipped.size(), 2 * tf.size() + 1);  // adam_m + adam_v per weight, global_step
  EXPECT_TRUE(w.unmapped.empty());
  for (const auto& s : w.skipped)
    EXPECT_TRUE(s.find("(optimizer slot)") != std::string::npos || s == "global_step (training state)") << s;

  TensorBundle b(data / "tf_checkpoint");
  for (const auto& [tf_name, tf_shape] : tf) {
    TfVarInfo info = classify_tf_variable(tf_name);
    const torch::Tensor* t = w.find(info.hf_name);
    ASSERT_NE(t, nullptr) << info.hf_name;
    std::vector<int64_t> hf_shape = tf_shape;
    if (info.transpose) std::swap(hf_shape[0], hf_shape[1]);
    EXPECT_EQ(t->sizes().vec(), hf_shape) << info.hf_name;
    torch::Tensor raw = b.read(tf_name);
    EXPECT_TRUE(torch::equal(*t, info.transpose ? raw.t() : raw)) << info.hf_name;
  }
  // spot checks of the mapping on the real names
  EXPECT_EQ(w.find("bert.encoder.layer.1.intermediate.dense.weight")->sizes(), (std::vector<int64_t>{16, 4}));
  EXPECT_EQ(w.find("bert.encoder.layer.0.output.dense.weight")->sizes(), (std::vector<int64_t>{4, 16}));
  EXPECT_EQ(w.find("cls.seq_relationship.weight")->sizes(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(w.find("cls.predictions.bias")->sizes(), (std::vector<int64_t>{15}));
}

TEST(IoTfShared, CorruptedCopiesGiveClearErrors) {
  BERT_REQUIRE_SHARED_DATA(data);
  TempDir dir;
  fs::path src = data / "tf_checkpoint";
  for (const char* f : {"bert_model.ckpt.index", "bert_model.ckpt.data-00000-of-00001", "bert_config.json"})
    fs::copy_file(src / f, dir / f);
  fs::path data_file = dir / "bert_model.ckpt.data-00000-of-00001";
  fs::permissions(data_file, fs::perms::owner_write, fs::perm_options::add);
  fs::permissions(dir / "bert_model.ckpt.index", fs::perms::owner_write, fs::perm_options::add);
  std::string bytes = bert::test::read_text(data_file);

  // one bit flipped inside bert/encoder/layer_0/attention/self/query/kernel
  TensorBundle good(dir.path);
  const BundleEntry* q = good.find("bert/encoder/layer_0/attention/self/query/kernel");
  ASSERT_NE(q, nullptr);
  std::string bad = bytes;
  bad[static_cast<size_t>(q->offset + 5)] ^= 0x10;
  bert::test::write_text(data_file, bad);
  try {
    import_tf_checkpoint(dir.path);
    FAIL() << "corrupt data accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("checksum mismatch for tensor 'bert/encoder/layer_0/attention/self/query/kernel'"),
              std::string::npos)
        << e.what();
  }

  // data file cut short: the last tensors lie outside it
  bert::test::write_text(data_file, bytes.substr(0, bytes.size() / 2));
  EXPECT_THROW(import_tf_checkpoint(dir.path), UserError);

  // index cut short at several points
  std::string index = bert::test::read_text(src / "bert_model.ckpt.index");
  bert::test::write_text(data_file, bytes);
  for (size_t n : {size_t(0), size_t(10), index.size() / 2, index.size() - 1}) {
    bert::test::write_text(dir / "bert_model.ckpt.index", index.substr(0, n));
    EXPECT_THROW(import_tf_checkpoint(dir.path), UserError) << n;
  }
}

TEST(IoTfShared, ExportAndReimportIsIdentical) {
  BERT_REQUIRE_SHARED_DATA(data);
  ImportedWeights w = import_tf_checkpoint(data / "tf_checkpoint");
  TempDir dir;
  TfExportResult r = export_tf_checkpoint(w.tensors, dir / "model.ckpt");
  EXPECT_TRUE(r.skipped.empty());
  // the same Google names as the original's weights, values bit-identical
  TensorBundle orig(data / "tf_checkpoint"), exported(dir / "model.ckpt");
  std::vector<std::string> weights;
  for (const auto& e : orig.entries())
    if (classify_tf_variable(e.name).kind == TfVarKind::Weight) weights.push_back(e.name);
  EXPECT_EQ(r.written, weights);
  ASSERT_EQ(exported.entries().size(), weights.size());
  for (const auto& e : exported.entries()) {
    EXPECT_EQ(e.shape, orig.find(e.name)->shape) << e.name;
    EXPECT_TRUE(torch::equal(exported.read(e), orig.read(e.name))) << e.name;
  }
  ImportedWeights again = import_tf_checkpoint(dir / "model.ckpt");
  ASSERT_EQ(again.tensors.size(), w.tensors.size());
  for (size_t i = 0; i < w.tensors.size(); ++i) {
    EXPECT_EQ(again.tensors[i].first, w.tensors[i].first);
    EXPECT_TRUE(torch::equal(again.tensors[i].second, w.tensors[i].second)) << w.tensors[i].first;
  }
  // aliases and foreign names are skipped, and said so
  TfExportResult s = export_tf_checkpoint({{"cls.predictions.decoder.weight", torch::zeros({15, 4})},
                                           {"my.extra.weight", torch::zeros({2})}},
                                          dir / "other.ckpt");
  EXPECT_EQ(s.skipped.size(), 2u);
  EXPECT_TRUE(s.written.empty());
}
