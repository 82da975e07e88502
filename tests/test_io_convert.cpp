// convert_checkpoint and load_any_checkpoint: TF -> HF -> ours -> TF round trips of the tiny
// Google checkpoint, the NVIDIA fixture, models saved by our own code, the QA and classification
// heads, format detection for every kind, and the errors.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "bert/common/error.h"
#include "bert/config/run_config.h"
#include "bert/io/convert.h"
#include "bert/io/hf_config.h"
#include "bert/io/nvidia_pt.h"
#include "bert/io/safetensors.h"
#include "bert/io/tensorbundle_import.h"
#include "bert/io/weights.h"
#include "bert/model/heads.h"
#include "test_util.h"

using namespace bert;
using namespace bert::io;
using bert::test::read_text;
using bert::test::TempDir;
using bert::test::write_text;
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

using TensorMap = std::map<std::string, torch::Tensor>;

TensorMap as_map(const std::vector<std::pair<std::string, torch::Tensor>>& v) {
  TensorMap m;
  for (const auto& [k, t] : v) m[k] = t;
  return m;
}

// Same names, and every tensor equal in shape, dtype and value.
void expect_same_tensors(const TensorMap& a, const TensorMap& b) {
  std::set<std::string> ka, kb;
  for (const auto& [k, t] : a) ka.insert(k);
  for (const auto& [k, t] : b) kb.insert(k);
  EXPECT_EQ(ka, kb);
  for (const auto& [k, t] : a) {
    auto it = b.find(k);
    if (it == b.end()) continue;
    EXPECT_EQ(t.scalar_type(), it->second.scalar_type()) << k;
    EXPECT_TRUE(torch::equal(t, it->second)) << k;
  }
}

ModelConfig small_config() {
  ModelConfig c;
  c.vocab_size = 12;
  c.hidden_size = 8;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.intermediate_size = 16;
  c.max_position_embeddings = 16;
  return c;
}

void write_vocab(const fs::path& p, bool cased = false) {
  write_text(p, std::string("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n") + (cased ? "The" : "the") +
                    "\ncat\nsat\non\nmat\n##s\n.\n");
}

json read_json(const fs::path& p) { return json::parse(read_text(p)); }

ConvertOptions opts(const fs::path& in, const fs::path& out) {
  ConvertOptions o;
  o.input = in;
  o.output_dir = out;
  return o;
}

// HF BertConfig's constructor arguments plus the PretrainedConfig keys we write
// (transformers/models/bert/configuration_bert.py, read while writing this; no transformers here).
const std::set<std::string> kHfBertConfigKeys = {
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "hidden_act",
    "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
    "initializer_range", "layer_norm_eps", "pad_token_id", "position_embedding_type", "use_cache",
    "classifier_dropout", "architectures", "model_type", "torch_dtype"};

std::set<std::string> keys_of(const json& j) {
  std::set<std::string> s;
  for (auto it = j.begin(); it != j.end(); ++it) s.insert(it.key());
  return s;
}

}  // namespace

// ---- the tiny Google checkpoint ------------------------------------------------------------------

TEST(IoConvert, TfToHfToTfIsIdentical) {
  BERT_REQUIRE_SHARED_DATA(data);
  TempDir dir;
  const fs::path tf = data / "tf_checkpoint";
  const TensorMap orig = as_map(import_tf_checkpoint(tf).tensors);
  ASSERT_EQ(orig.size(), 46u);

  ConvertResult r = convert_checkpoint(opts(tf, dir / "hf"));
  EXPECT_EQ(r.source.format, CheckpointFormat::Tf);
  EXPECT_EQ(r.tensors_read, 46u);
  EXPECT_EQ(r.skipped.size(), 93u);  // adam_m / adam_v slots and global_step
  EXPECT_TRUE(r.load.missing.empty()) << r.load.summary();
  EXPECT_TRUE(r.load.unexpected.empty()) << r.load.summary();
  EXPECT_TRUE(r.do_lower_case);
  for (const char* f : {"config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"})
    EXPECT_TRUE(fs::exists(dir / "hf" / f)) << f;
  EXPECT_FALSE(fs::exists(dir / ("hf.tmp." + std::to_string(::getpid()))));

  // config.json: HF's BertConfig keys only, the architecture, the checkpoint's config
  json cfg = read_json(dir / "hf" / "config.json");
  EXPECT_EQ(keys_of(cfg), kHfBertConfigKeys);
  EXPECT_EQ(cfg["architectures"], json::array({"BertForPreTraining"}));
  EXPECT_EQ(cfg["model_type"], "bert");
  EXPECT_EQ(cfg["hidden_size"], 4);
  EXPECT_EQ(cfg["vocab_size"], 15);
  json tok = read_json(dir / "hf" / "tokenizer_config.json");
  EXPECT_EQ(tok["tokenizer_class"], "BertTokenizer");
  EXPECT_EQ(tok["do_lower_case"], true);
  EXPECT_EQ(read_json(dir / "hf" / "special_tokens_map.json")["mask_token"], "[MASK]");
  EXPECT_EQ(read_text(dir / "hf" / "vocab.txt"), read_text(tf / "vocab.txt"));

  // model.safetensors holds exactly the checkpoint's weights (no tied aliases)
  expect_same_tensors(as_map(load_safetensors(dir / "hf" / "model.safetensors").tensors), orig);

  // the HF directory re-imports identically
  CheckpointSource src;
  ImportedWeights back = load_any_checkpoint(dir / "hf", {}, &src);
  EXPECT_EQ(src.format, CheckpointFormat::Hf);
  EXPECT_EQ(src.architectures, std::vector<std::string>{"BertForPreTraining"});
  EXPECT_EQ(src.do_lower_case, std::optional<bool>(true));
  ASSERT_TRUE(back.config.has_value());
  EXPECT_EQ(back.config->num_attention_heads, 4);
  expect_same_tensors(as_map(back.tensors), orig);

  // and back to TF: the same weights, a Google config that reads back the same
  ConvertOptions o = opts(dir / "hf", dir / "tf");
  o.to = ConvertTarget::Tf;
  ConvertResult r2 = convert_checkpoint(o);
  EXPECT_EQ(r2.source.format, CheckpointFormat::Hf);
  EXPECT_EQ(r2.tensors_written, 46u);
  ImportedWeights tf2 = import_tf_checkpoint(dir / "tf");
  EXPECT_TRUE(tf2.skipped.empty());
  expect_same_tensors(as_map(tf2.tensors), orig);
  json g = read_json(dir / "tf" / "bert_config.json");
  EXPECT_EQ(g.size(), 11u);  // Google's BertConfig keys
  ModelConfig a = load_model_config(tf / "bert_config.json"), b = load_model_config(dir / "tf" / "bert_config.json");
  EXPECT_EQ(hf_config_json(a), hf_config_json(b));
  EXPECT_EQ(read_text(dir / "tf" / "vocab.txt"), read_text(tf / "vocab.txt"));
}

TEST(IoConvert, TfToQuestionAnsweringReportsTheHeadKeys) {
  BERT_REQUIRE_SHARED_DATA(data);
  TempDir dir;
  ConvertOptions o = opts(data / "tf_checkpoint", dir / "qa");
  o.head = HeadKind::QuestionAnswering;
  ConvertResult r = convert_checkpoint(o);
  EXPECT_EQ(r.architecture, "BertForQuestionAnswering");
  EXPECT_EQ(r.load.missing, (std::vector<std::string>{"qa_outputs.weight", "qa_outputs.bias"}));
  std::set<std::string> unexpected(r.load.unexpected.begin(), r.load.unexpected.end());
  EXPECT_TRUE(unexpected.count("bert.pooler.dense.weight"));  // HF's QA model has no pooler
  EXPECT_TRUE(unexpected.count("cls.seq_relationship.weight"));
  EXPECT_EQ(read_json(dir / "qa" / "config.json")["architectures"], json::array({"BertForQuestionAnswering"}));
  TensorMap saved = as_map(load_safetensors(dir / "qa" / "model.safetensors").tensors);
  EXPECT_TRUE(saved.count("qa_outputs.weight"));
  EXPECT_FALSE(saved.count("bert.pooler.dense.weight"));
}

// ---- the NVIDIA fixture ----------------------------------------------------------------------------

TEST(IoConvert, NvidiaFixtureConverts) {
  TempDir dir;
  write_text(dir / "bert_config.json", R"({"vocab_size": 15, "hidden_size": 4, "num_hidden_layers": 1,
    "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 16, "type_vocab_size": 2})");
  const fs::path pt = bert::test::source_dir() / "tests/data/nvidia_tiny.pt";
  ConvertOptions o = opts(pt, dir / "hf");
  o.model_config = dir / "bert_config.json";
  ConvertResult r = convert_checkpoint(o);
  EXPECT_EQ(r.source.format, CheckpointFormat::Nvidia);
  EXPECT_TRUE(r.load.missing.empty()) << r.load.summary();
  EXPECT_TRUE(r.load.unexpected.empty()) << r.load.summary();
  bool trimmed = false;
  for (const auto& n : r.notes) trimmed |= n.find("padding rows (16 -> 15)") != std::string::npos;
  EXPECT_TRUE(trimmed);
  EXPECT_FALSE(fs::exists(dir / "hf" / "vocab.txt"));  // none given or found: no tokenizer files
  EXPECT_FALSE(fs::exists(dir / "hf" / "tokenizer_config.json"));

  TensorMap saved = as_map(load_safetensors(dir / "hf" / "model.safetensors").tensors);
  EXPECT_EQ(saved.at("bert.embeddings.word_embeddings.weight").size(0), 15);
  // the fixture's values: tensor i holds i + 0.001 * element; the word embeddings are tensor 0
  EXPECT_FLOAT_EQ(saved.at("bert.embeddings.word_embeddings.weight")[1][0].item<float>(), 0.004f);
  NvidiaImportOptions no;
  no.config_path = dir / "bert_config.json";
  ImportedWeights direct = import_nvidia_checkpoint(pt, no);
  TensorMap expected;
  for (const auto& [k, t] : direct.tensors)
    if (k.rfind("cls.predictions.decoder.", 0) != 0) expected[k] = t;
  expect_same_tensors(saved, expected);
}

TEST(IoConvert, InitFromCheckpointTrimsNvidiaPaddingWithTheModelsVocab) {
  ModelConfig c;
  c.vocab_size = 15;
  c.hidden_size = 4;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 2;
  c.intermediate_size = 16;
  c.max_position_embeddings = 16;
  model::BertForPreTraining m(c);
  LoadReport r = init_from_checkpoint(*m, c, bert::test::source_dir() / "tests/data/nvidia_tiny.pt");
  EXPECT_TRUE(r.complete()) << r.summary();
  EXPECT_FLOAT_EQ(m->bert->embeddings->word_embeddings->weight[1][0].item<float>(), 0.004f);
}

TEST(IoConvert, InitFromCheckpointReadsTheGoogleCheckpoint) {
  BERT_REQUIRE_SHARED_DATA(data);
  const fs::path tf = data / "tf_checkpoint";
  ModelConfig c = load_model_config(tf / "bert_config.json");
  model::BertForPreTraining m(c);
  LoadReport r = init_from_checkpoint(*m, c, tf / "bert_model.ckpt");
  EXPECT_TRUE(r.complete()) << r.summary();
  EXPECT_EQ(r.loaded.size(), 46u);
  const TensorMap orig = as_map(import_tf_checkpoint(tf).tensors);
  EXPECT_TRUE(torch::equal(m->bert->embeddings->word_embeddings->weight, orig.at("bert.embeddings.word_embeddings.weight")));
  EXPECT_THROW(init_from_checkpoint(*m, c, tf / "no_such.ckpt"), UserError);
}

// ---- models saved by our own code ------------------------------------------------------------------

TEST(IoConvert, OwnModelDirectoryConvertsToTfAndBack) {
  TempDir dir;
  torch::manual_seed(3);
  model::BertForPreTraining m(small_config());
  save_model_dir(*m, small_config(), dir / "ours");
  write_vocab(dir / "ours" / "vocab.txt", /*cased=*/true);
  const TensorMap orig = as_map(named_state(*m, /*include_aliases=*/false));

  ConvertOptions o = opts(dir / "ours", dir / "tf");
  o.to = ConvertTarget::Tf;
  ConvertResult r = convert_checkpoint(o);
  EXPECT_TRUE(r.load.complete()) << r.load.summary();
  EXPECT_FALSE(r.do_lower_case);  // "The" in the vocab
  EXPECT_TRUE(fs::exists(dir / "tf" / "vocab.txt"));

  ConvertResult back = convert_checkpoint(opts(dir / "tf", dir / "hf"));
  EXPECT_EQ(back.source.format, CheckpointFormat::Tf);
  EXPECT_TRUE(back.load.complete()) << back.load.summary();
  EXPECT_EQ(read_json(dir / "hf" / "tokenizer_config.json")["do_lower_case"], false);
  expect_same_tensors(as_map(load_safetensors(dir / "hf" / "model.safetensors").tensors), orig);
}

TEST(IoConvert, TrainerCheckpointAndRunDirectory) {
  TempDir dir;
  model::BertForPreTraining m(small_config());
  fs::path step = dir / "run" / "checkpoints" / "step_10";
  save_model_dir(*m, small_config(), step);
  save_safetensors(step / "optimizer.safetensors", {{"exp_avg.x", torch::zeros({2})}});
  write_text(step / "optimizer.json", "{}");
  write_text(step / "trainer_state.json", R"({"step": 10})");
  fs::create_directory_symlink("step_10", dir / "run" / "checkpoints" / "latest");

  for (const fs::path& p : {step, dir / "run"}) {
    EXPECT_EQ(detect_checkpoint_format(p), CheckpointFormat::BertTrain) << p;
    CheckpointSource src;
    ImportedWeights w = load_any_checkpoint(p, {}, &src);
    EXPECT_EQ(fs::canonical(src.path), fs::canonical(step));
    expect_same_tensors(as_map(w.tensors), as_map(named_state(*m, false)));
    EXPECT_EQ(w.skipped.size(), 3u);  // optimizer.safetensors, optimizer.json, trainer_state.json
    EXPECT_NE(w.skipped[0].find("optimizer state"), std::string::npos);
  }
  ConvertResult r = convert_checkpoint(opts(dir / "run", dir / "hf"));
  EXPECT_TRUE(r.load.complete());
}

TEST(IoConvert, QuestionAnsweringModelKeepsItsArchitecture) {
  TempDir dir;
  model::BertForQuestionAnswering m(small_config());
  save_model_dir(*m, small_config(), dir / "qa");
  ConvertResult r = convert_checkpoint(opts(dir / "qa", dir / "out"));  // --head auto
  EXPECT_EQ(r.architecture, "BertForQuestionAnswering");
  EXPECT_TRUE(r.load.complete()) << r.load.summary();
  EXPECT_EQ(read_json(dir / "out" / "config.json")["architectures"], json::array({"BertForQuestionAnswering"}));
}

TEST(IoConvert, ClassificationLabels) {
  TempDir dir;
  model::BertForSequenceClassification m(small_config(), 3);
  save_model_dir(*m, small_config(), dir / "cls", {"neg", "neu", "pos"});

  // head and labels from the source's config.json
  ConvertResult r = convert_checkpoint(opts(dir / "cls", dir / "a"));
  EXPECT_EQ(r.architecture, "BertForSequenceClassification");
  EXPECT_EQ(r.labels, (std::vector<std::string>{"neg", "neu", "pos"}));
  EXPECT_TRUE(r.load.complete()) << r.load.summary();
  json cfg = read_json(dir / "a" / "config.json");
  EXPECT_EQ(cfg["architectures"], json::array({"BertForSequenceClassification"}));
  EXPECT_EQ(cfg["id2label"]["2"], "pos");
  EXPECT_EQ(cfg["label2id"]["neu"], 1);
  std::set<std::string> allowed = kHfBertConfigKeys;
  allowed.insert({"id2label", "label2id"});
  EXPECT_EQ(keys_of(cfg), allowed);

  // --labels renames them
  ConvertOptions o = opts(dir / "cls", dir / "b");
  o.labels = {"x", "y", "z"};
  EXPECT_EQ(convert_checkpoint(o).labels, (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(read_json(dir / "b" / "config.json")["id2label"]["0"], "x");

  // num_labels from the classifier's rows when the config says nothing; LABEL_i names
  model::BertForSequenceClassification m2(small_config(), 2);
  save_weights(*m2, dir / "bare" / "model.safetensors");
  write_hf_config(dir / "plain.json", small_config());
  ConvertOptions o2 = opts(dir / "bare" / "model.safetensors", dir / "c");
  o2.model_config = dir / "plain.json";
  ConvertResult r2 = convert_checkpoint(o2);  // --head auto: the classifier tensors decide
  EXPECT_EQ(r2.architecture, "BertForSequenceClassification");
  EXPECT_EQ(r2.labels, (std::vector<std::string>{"LABEL_0", "LABEL_1"}));
  EXPECT_TRUE(r2.load.complete()) << r2.load.summary();
  EXPECT_EQ(read_json(dir / "c" / "config.json")["label2id"]["LABEL_1"], 1);

  // disagreements are errors
  ConvertOptions bad = opts(dir / "cls", dir / "d");
  bad.labels = {"a", "b"};
  EXPECT_THROW(convert_checkpoint(bad), UserError);  // 2 labels, classifier has 3 rows: shape mismatch
  bad.labels = {"a", "a", "b"};
  EXPECT_THROW(convert_checkpoint(bad), UserError);
  bad.labels = {"a", "b", "c"};
  bad.num_labels = 2;
  EXPECT_THROW(convert_checkpoint(bad), UserError);
  bad.labels.clear();
  bad.num_labels = 2;
  bad.head = HeadKind::QuestionAnswering;
  EXPECT_THROW(convert_checkpoint(bad), UserError);
  EXPECT_FALSE(fs::exists(dir / "d"));
}

TEST(IoConvert, ClassificationWithoutLabelsFromAPretrainingModelNeedsNumLabels) {
  TempDir dir;
  model::BertForPreTraining m(small_config());
  save_model_dir(*m, small_config(), dir / "pt");
  ConvertOptions o = opts(dir / "pt", dir / "out");
  o.head = HeadKind::Classification;
  try {
    convert_checkpoint(o);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("--num-labels"), std::string::npos) << e.what();
  }
  o.num_labels = 4;
  ConvertResult r = convert_checkpoint(o);
  EXPECT_EQ(r.labels.size(), 4u);
  EXPECT_EQ(r.labels[3], "LABEL_3");
  EXPECT_EQ(r.load.missing, (std::vector<std::string>{"classifier.weight", "classifier.bias"}));
}

// ---- sharded HF checkpoints -------------------------------------------------------------------------

TEST(IoConvert, ShardedSafetensorsIndex) {
  TempDir dir;
  model::BertForPreTraining m(small_config());
  NamedTensors all = named_state(*m, false);
  NamedTensors a(all.begin(), all.begin() + 10), b(all.begin() + 10, all.end());
  save_safetensors(dir / "hf" / "model-00001-of-00002.safetensors", a);
  save_safetensors(dir / "hf" / "model-00002-of-00002.safetensors", b);
  json map = json::object();
  for (const auto& [k, t] : a) map[k] = "model-00001-of-00002.safetensors";
  for (const auto& [k, t] : b) map[k] = "model-00002-of-00002.safetensors";
  write_text(dir / "hf" / "model.safetensors.index.json", json{{"metadata", json::object()}, {"weight_map", map}}.dump());
  write_hf_config(dir / "hf" / "config.json", small_config(), {"BertForPreTraining", {}});
  EXPECT_EQ(detect_checkpoint_format(dir / "hf"), CheckpointFormat::Hf);
  expect_same_tensors(as_map(load_any_checkpoint(dir / "hf").tensors), as_map(all));

  map[a[0].first] = "model-00002-of-00002.safetensors";  // the index disagrees with the shards
  write_text(dir / "hf" / "model.safetensors.index.json", json{{"weight_map", map}}.dump());
  EXPECT_THROW(load_any_checkpoint(dir / "hf"), UserError);
  map[a[0].first] = "../escape.safetensors";
  write_text(dir / "hf" / "model.safetensors.index.json", json{{"weight_map", map}}.dump());
  EXPECT_THROW(load_any_checkpoint(dir / "hf"), UserError);
}

// ---- format detection ---------------------------------------------------------------------------------

TEST(IoConvert, DetectsEveryFormat) {
  TempDir dir;
  model::BertForPreTraining m(small_config());
  save_model_dir(*m, small_config(), dir / "hf");
  save_weights(*m, dir / "bare.safetensors");
  write_text(dir / "notes.txt", "hello, not a checkpoint\n");
  fs::create_directories(dir / "empty");
  const fs::path pt = bert::test::source_dir() / "tests/data/nvidia_tiny.pt";

  EXPECT_EQ(detect_checkpoint_format(dir / "hf"), CheckpointFormat::Hf);
  EXPECT_EQ(detect_checkpoint_format(dir / "hf" / "model.safetensors"), CheckpointFormat::Safetensors);
  EXPECT_EQ(detect_checkpoint_format(dir / "bare.safetensors"), CheckpointFormat::Safetensors);
  EXPECT_EQ(detect_checkpoint_format(pt), CheckpointFormat::Nvidia);
  for (const fs::path& p : {dir / "nothing", dir / "notes.txt", dir / "empty"}) {
    try {
      detect_checkpoint_format(p);
      ADD_FAILURE() << "expected UserError for " << p;
    } catch (const UserError& e) {
      std::string msg = e.what();
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
    }
  }
  // a bare safetensors file picks up config.json next to it
  CheckpointSource src;
  ImportedWeights w = load_any_checkpoint(dir / "hf" / "model.safetensors", {}, &src);
  EXPECT_EQ(src.config_file, dir / "hf" / "config.json");
  EXPECT_TRUE(w.config.has_value());
  // without a config, the conversion asks for one
  EXPECT_FALSE(load_any_checkpoint(dir / "bare.safetensors").config.has_value());
  EXPECT_THROW(convert_checkpoint(opts(dir / "bare.safetensors", dir / "out")), UserError);
  // a .pt directory with exactly one checkpoint
  fs::create_directories(dir / "nv");
  fs::copy_file(pt, dir / "nv" / "ckpt_100.pt");
  EXPECT_EQ(detect_checkpoint_format(dir / "nv"), CheckpointFormat::Nvidia);
  EXPECT_FALSE(load_any_checkpoint(dir / "nv").tensors.empty());
  fs::copy_file(pt, dir / "nv" / "ckpt_200.pt");
  EXPECT_THROW(load_any_checkpoint(dir / "nv"), UserError);

  // an explicit format that does not fit the path
  LoadAnyOptions o;
  o.format = CheckpointFormat::Tf;
  EXPECT_THROW(load_any_checkpoint(dir / "hf", o), UserError);
  o.format = CheckpointFormat::Nvidia;
  EXPECT_THROW(load_any_checkpoint(dir / "bare.safetensors", o), UserError);
  o.format = CheckpointFormat::Hf;
  EXPECT_NO_THROW(load_any_checkpoint(dir / "hf", o));

  EXPECT_EQ(parse_checkpoint_format("bert-train"), CheckpointFormat::BertTrain);
  EXPECT_THROW(parse_checkpoint_format("tensorflow"), UserError);
}

TEST(IoConvert, DetectsTfByPrefixIndexAndDirectory) {
  BERT_REQUIRE_SHARED_DATA(data);
  const fs::path tf = data / "tf_checkpoint";
  for (const fs::path& p : {tf, tf / "bert_model.ckpt", tf / "bert_model.ckpt.index"}) {
    EXPECT_EQ(detect_checkpoint_format(p), CheckpointFormat::Tf) << p;
    CheckpointSource src;
    ImportedWeights w = load_any_checkpoint(p, {}, &src);
    EXPECT_EQ(w.tensors.size(), 46u);
    EXPECT_EQ(src.vocab_file, tf / "vocab.txt");
    EXPECT_TRUE(w.config.has_value());
  }
}

// ---- errors ---------------------------------------------------------------------------------------------

TEST(IoConvert, ShapeMismatchIsAnErrorAndWritesNothing) {
  BERT_REQUIRE_SHARED_DATA(data);
  TempDir dir;
  write_text(dir / "wrong.json", R"({"vocab_size": 15, "hidden_size": 8, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 16, "max_position_embeddings": 16})");
  ConvertOptions o = opts(data / "tf_checkpoint", dir / "out");
  o.model_config = dir / "wrong.json";
  try {
    convert_checkpoint(o);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("shape mismatch"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(IoConvert, OutputDirectoryRules) {
  TempDir dir;
  model::BertForPreTraining m(small_config());
  save_model_dir(*m, small_config(), dir / "in");
  write_text(dir / "out" / "old.txt", "x");
  EXPECT_THROW(convert_checkpoint(opts(dir / "in", dir / "out")), UserError);  // not empty
  ConvertOptions o = opts(dir / "in", dir / "out/");
  o.overwrite = true;
  ConvertResult r = convert_checkpoint(o);
  EXPECT_EQ(r.output_dir, dir / "out");
  EXPECT_FALSE(fs::exists(dir / "out" / "old.txt"));
  EXPECT_TRUE(fs::exists(dir / "out" / "model.safetensors"));
  for (const auto& e : fs::directory_iterator(dir.path))  // no temporary or set-aside directories left
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  fs::create_directories(dir / "empty");
  EXPECT_NO_THROW(convert_checkpoint(opts(dir / "in", dir / "empty")));  // an empty directory is fine
  write_text(dir / "file", "x");
  EXPECT_THROW(convert_checkpoint(opts(dir / "in", dir / "file")), UserError);
}

TEST(IoConvert, VocabMustFitTheModel) {
  TempDir dir;
  ModelConfig c = small_config();
  c.vocab_size = 8;  // the vocab file has 12 tokens
  model::BertForPreTraining m(c);
  save_model_dir(*m, c, dir / "in");
  write_vocab(dir / "vocab.txt");
  ConvertOptions o = opts(dir / "in", dir / "out");
  o.vocab = dir / "vocab.txt";
  EXPECT_THROW(convert_checkpoint(o), UserError);
  o.vocab = dir / "missing.txt";
  EXPECT_THROW(convert_checkpoint(o), UserError);
  EXPECT_FALSE(fs::exists(dir / "out"));
}
