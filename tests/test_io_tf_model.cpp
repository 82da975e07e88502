// Imported checkpoints meet the model: the tiny Google checkpoint and the NVIDIA fixture load into
// BertForPreTraining with nothing missing or unexpected, and TF -> ours -> model.safetensors -> ours
// keeps every tensor.
#include <gtest/gtest.h>

#include "bert/io/nvidia_pt.h"
#include "bert/io/safetensors.h"
#include "bert/io/tensorbundle_import.h"
#include "bert/io/weights.h"
#include "bert/model/heads.h"
#include "test_util.h"

using namespace bert;
using namespace bert::io;
using bert::test::TempDir;

TEST(IoTfModel, GoogleCheckpointLoadsCompletelyAndRoundTrips) {
  BERT_REQUIRE_SHARED_DATA(data);
  ImportedWeights w = import_tf_checkpoint(data / "tf_checkpoint");
  ASSERT_TRUE(w.config.has_value());
  model::BertForPreTraining m(*w.config);
  LoadReport r = load_weights(*m, w.tensors, "tf_checkpoint");
  EXPECT_TRUE(r.missing.empty()) << r.summary();
  EXPECT_TRUE(r.unexpected.empty()) << r.summary();
  EXPECT_EQ(r.loaded.size(), w.tensors.size());

  TempDir dir;
  save_weights(*m, dir / "model.safetensors");
  SafetensorsFile back = load_safetensors(dir / "model.safetensors");
  EXPECT_EQ(back.tensors.size(), w.tensors.size());
  for (const auto& [name, t] : back.tensors) {
    const torch::Tensor* orig = w.find(name);
    ASSERT_NE(orig, nullptr) << name;
    EXPECT_TRUE(torch::equal(t, *orig)) << name;
  }
}

TEST(IoTfModel, NvidiaFixtureLoadsCompletely) {
  TempDir dir;
  bert::test::write_text(dir / "bert_config.json", R"({"vocab_size": 15, "hidden_size": 4, "num_hidden_layers": 1,
    "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 16, "type_vocab_size": 2})");
  NvidiaImportOptions opts;
  opts.config_path = dir / "bert_config.json";
  ImportedWeights w = import_nvidia_checkpoint(bert::test::source_dir() / "tests/data/nvidia_tiny.pt", opts);
  model::BertForPreTraining m(*w.config);
  LoadReport r = load_weights(*m, w.tensors, "nvidia_tiny.pt");
  EXPECT_TRUE(r.missing.empty()) << r.summary();
  EXPECT_TRUE(r.unexpected.empty()) << r.summary();
}
