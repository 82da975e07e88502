// bert-train convert end to end: the tiny Google checkpoint to an HF directory and back to TF,
// a classification head with labels, and the one-line errors (exit 2).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "bert/io/safetensors.h"
#include "bert/io/tensorbundle_import.h"
#include "bert/io/weights.h"
#include "bert/model/heads.h"
#include "test_util.h"

using bert::test::read_text;
using bert::test::run_cli;
using bert::test::TempDir;
namespace fs = std::filesystem;

namespace {

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

}  // namespace

TEST(IoConvertCli, TfToHfAndBack) {
  BERT_REQUIRE_SHARED_DATA(data);
  TempDir dir;
  auto r = run_cli("convert --input " + q(data / "tf_checkpoint") + " --output-dir " + q(dir / "hf"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string log = r.out + r.err;
  EXPECT_NE(log.find("read tf checkpoint"), std::string::npos) << log;
  EXPECT_NE(log.find("46 weight tensors read; 93 non-weights skipped"), std::string::npos) << log;
  EXPECT_NE(log.find("optimizer slot"), std::string::npos) << log;
  EXPECT_NE(log.find("into BertForPreTraining: 46 loaded, 0 missing, 0 unexpected"), std::string::npos) << log;
  EXPECT_NE(log.find("wrote " + (dir / "hf").string()), std::string::npos) << log;
  auto cfg = nlohmann::json::parse(read_text(dir / "hf" / "config.json"));
  EXPECT_EQ(cfg["architectures"][0], "BertForPreTraining");
  EXPECT_TRUE(fs::exists(dir / "hf" / "tokenizer_config.json"));

  auto back = run_cli("convert --from hf --to tf --input " + q(dir / "hf") + " --output-dir " + q(dir / "tf"));
  ASSERT_EQ(back.code, 0) << back.err;
  auto a = bert::io::import_tf_checkpoint(data / "tf_checkpoint");
  auto b = bert::io::import_tf_checkpoint(dir / "tf");
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto& [name, t] : a.tensors) {
    const torch::Tensor* u = b.find(name);
    ASSERT_NE(u, nullptr) << name;
    EXPECT_TRUE(torch::equal(t, *u)) << name;
  }

  // the same output directory again: refused, then replaced with --overwrite
  auto again = run_cli("convert --input " + q(data / "tf_checkpoint") + " --output-dir " + q(dir / "hf"));
  EXPECT_EQ(again.code, 2);
  EXPECT_NE(again.err.find("--overwrite"), std::string::npos) << again.err;
  auto over = run_cli("convert --input " + q(data / "tf_checkpoint") + " --output-dir " + q(dir / "hf") + " --overwrite");
  EXPECT_EQ(over.code, 0) << over.err;
}

TEST(IoConvertCli, ClassificationHeadWithLabels) {
  TempDir dir;
  bert::ModelConfig c;
  c.vocab_size = 10;
  c.hidden_size = 8;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 2;
  c.intermediate_size = 16;
  c.max_position_embeddings = 16;
  bert::model::BertForPreTraining m(c);
  bert::io::save_model_dir(*m, c, dir / "in");
  bert::test::write_text(dir / "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\nb\nc\nd\ne\n");
  auto r = run_cli("convert --input " + q(dir / "in") + " --output-dir " + q(dir / "out") +
                   " --head classification --labels neg,neu,pos --vocab " + q(dir / "vocab.txt") +
                   " --do-lower-case false");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string log = r.out + r.err;
  EXPECT_NE(log.find("missing for BertForSequenceClassification"), std::string::npos) << log;
  EXPECT_NE(log.find("classifier.weight"), std::string::npos) << log;
  auto cfg = nlohmann::json::parse(read_text(dir / "out" / "config.json"));
  EXPECT_EQ(cfg["architectures"][0], "BertForSequenceClassification");
  EXPECT_EQ(cfg["id2label"]["1"], "neu");
  EXPECT_EQ(cfg["label2id"]["pos"], 2);
  auto tok = nlohmann::json::parse(read_text(dir / "out" / "tokenizer_config.json"));
  EXPECT_EQ(tok["do_lower_case"], false);
  auto w = bert::io::load_safetensors(dir / "out" / "model.safetensors");
  bool found = false;
  for (const auto& [n, t] : w.tensors)
    if (n == "classifier.weight") {
      found = true;
      EXPECT_EQ(t.size(0), 3);
    }
  EXPECT_TRUE(found);
}

TEST(IoConvertCli, ErrorsAreOneLineWithExitCode2) {
  TempDir dir;
  auto bad_from = run_cli("convert --from tensorflow --input x --output-dir " + q(dir / "o"));
  EXPECT_EQ(bad_from.code, 2);
  EXPECT_EQ(lines(bad_from.err), 1u) << bad_from.err;
  EXPECT_NE(bad_from.err.find("--from"), std::string::npos) << bad_from.err;

  auto missing = run_cli("convert --input " + q(dir / "no-such-checkpoint") + " --output-dir " + q(dir / "o"));
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(lines(missing.err), 1u) << missing.err;
  EXPECT_NE(missing.err.find("checkpoint not found"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("no-such-checkpoint"), std::string::npos) << missing.err;

  auto no_output = run_cli("convert --input x");
  EXPECT_EQ(no_output.code, 2);
  EXPECT_NE(no_output.err.find("--output-dir"), std::string::npos) << no_output.err;

  bert::test::write_text(dir / "junk.bin", "not a checkpoint at all");
  auto junk = run_cli("convert --input " + q(dir / "junk.bin") + " --output-dir " + q(dir / "o"));
  EXPECT_EQ(junk.code, 2);
  EXPECT_EQ(lines(junk.err), 1u) << junk.err;
  EXPECT_FALSE(fs::exists(dir / "o"));
}
