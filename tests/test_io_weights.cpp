// Weight loading reports (missing / unexpected / mismatched), renames, tied aliases, save/load
// round trips, and the HF-style config.json.
#include <torch/torch.h>

#include "bert/common/error.h"
#include "bert/io/hf_config.h"
#include "bert/io/weights.h"
#include "bert/model/heads.h"
#include "test_util.h"

namespace {

using namespace bert;

ModelConfig tiny() {
  ModelConfig c;
  c.vocab_size = 40;
  c.hidden_size = 16;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.intermediate_size = 24;
  c.max_position_embeddings = 20;
  return c;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

torch::Tensor logits_of(model::BertForPreTraining& m) {
  m->eval();
  auto ids = torch::tensor({{2, 7, 9, 11, 3}}, torch::kLong);
  return m->forward(ids, {}, {}, torch::tensor({{1, 3}}, torch::kLong)).mlm_logits;
}

TEST(IoWeights, SaveLoadRoundTripReproducesOutputs) {
  test::TempDir dir;
  torch::manual_seed(1);
  model::BertForPreTraining a(tiny());
  io::save_weights(*a, dir / "model.safetensors");
  torch::manual_seed(2);
  model::BertForPreTraining b(tiny());
  EXPECT_FALSE(torch::allclose(logits_of(a), logits_of(b)));
  auto r = io::load_weights_file(*b, dir / "model.safetensors");
  EXPECT_TRUE(r.complete()) << r.summary();
  EXPECT_EQ(r.loaded.size(), io::named_state(*b, false).size());
  EXPECT_TRUE(torch::equal(logits_of(a), logits_of(b)));
  // the tie survived loading
  EXPECT_EQ(b->bert->embeddings->word_embeddings->weight.data_ptr(),
            io::named_state(*b)[io::named_state(*b).size() - 4].second.data_ptr());
}

TEST(IoWeights, ReportsMissingAndUnexpected) {
  torch::manual_seed(3);
  model::BertForPreTraining pre(tiny());
  // A pretraining checkpoint into a QA model: bert.* loads (no pooler in QA), cls.* is unexpected,
  // qa_outputs is missing.
  model::BertForQuestionAnswering qa(tiny());
  auto r = io::load_weights(*qa, io::named_state(*pre), "pretraining state");
  EXPECT_EQ(r.missing, (std::vector<std::string>{"qa_outputs.weight", "qa_outputs.bias"}));
  EXPECT_TRUE(contains(r.unexpected, "cls.seq_relationship.weight"));
  EXPECT_TRUE(contains(r.unexpected, "bert.pooler.dense.weight"));
  EXPECT_TRUE(contains(r.unexpected, "cls.predictions.decoder.weight"));
  EXPECT_TRUE(torch::equal(qa->bert->encoder->layer->at<model::BertLayerImpl>(1).output->dense->weight,
                           pre->bert->encoder->layer->at<model::BertLayerImpl>(1).output->dense->weight));
  EXPECT_FALSE(r.complete());
  EXPECT_NE(r.summary().find("2 missing"), std::string::npos) << r.summary();
}

TEST(IoWeights, ShapeMismatchIsAnErrorAndLeavesTheModelUntouched) {
  model::BertForPreTraining src(tiny());
  auto other = tiny();
  other.vocab_size = 41;
  model::BertForPreTraining dst(other);
  auto before = dst->bert->encoder->layer->at<model::BertLayerImpl>(0).attention->self->query->weight.clone();
  try {
    io::load_weights(*dst, io::named_state(*src, false), "ckpt");
    ADD_FAILURE() << "mismatch accepted";
  } catch (const UserError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("bert.embeddings.word_embeddings.weight [40, 16] vs model [41, 16]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cls.predictions.bias"), std::string::npos) << msg;
  }
  EXPECT_TRUE(torch::equal(before, dst->bert->encoder->layer->at<model::BertLayerImpl>(0).attention->self->query->weight));
}

TEST(IoWeights, AcceptsHFVariants) {
  torch::manual_seed(4);
  model::BertForPreTraining src(tiny());
  // Old-style file: LayerNorm gamma/beta, only the decoder alias for the output bias, position_ids.
  io::NamedTensors old;
  for (auto& [k, t] : io::named_state(*src)) {
    if (k == "cls.predictions.bias") continue;
    std::string name = k;
    if (name.size() > 16 && name.substr(name.size() - 16) == "LayerNorm.weight") name.replace(name.size() - 6, 6, "gamma");
    old.emplace_back(name, t.clone());
  }
  old.emplace_back("bert.embeddings.position_ids", torch::arange(20).unsqueeze(0));
  torch::manual_seed(5);
  model::BertForPreTraining dst(tiny());
  auto r = io::load_weights(*dst, old, "old file");
  EXPECT_TRUE(r.complete()) << r.summary() << " missing: " << (r.missing.empty() ? "" : r.missing[0]);
  EXPECT_TRUE(contains(r.ignored, "bert.embeddings.position_ids"));
  EXPECT_TRUE(contains(r.ignored, "cls.predictions.decoder.weight"));
  EXPECT_TRUE(contains(r.renamed, "cls.predictions.decoder.bias -> cls.predictions.bias"));
  EXPECT_TRUE(torch::equal(logits_of(src), logits_of(dst)));

  // A bare BertModel file (no "bert." prefix) into a classifier.
  model::BertModel base(tiny());
  model::BertForSequenceClassification cls(tiny(), 2);
  auto r2 = io::load_weights(*cls, io::named_state(*base), "BertModel");
  EXPECT_EQ(r2.missing, (std::vector<std::string>{"classifier.weight", "classifier.bias"}));
  EXPECT_TRUE(r2.unexpected.empty());
  EXPECT_TRUE(torch::equal(cls->bert->pooler->dense->weight, base->pooler->dense->weight));
}

TEST(IoWeights, HFConfigRoundTrip) {
  test::TempDir dir;
  auto c = tiny();
  c.hidden_act = "gelu_tanh";
  io::write_hf_config(dir / "config.json", c, {"BertForSequenceClassification", {"neg", "pos", "neutral"}});
  auto j = config::json::parse(test::read_text(dir / "config.json"));
  EXPECT_EQ(j["model_type"], "bert");
  EXPECT_EQ(j["architectures"][0], "BertForSequenceClassification");
  EXPECT_EQ(j["hidden_act"], "gelu_pytorch_tanh");
  EXPECT_EQ(j["id2label"]["2"], "neutral");
  EXPECT_EQ(j["label2id"]["pos"], 1);
  auto info = io::read_hf_config(dir / "config.json");
  EXPECT_EQ(info.model.hidden_size, 16);
  EXPECT_EQ(info.model.vocab_size, 40);
  EXPECT_EQ(info.model.hidden_act, "gelu_pytorch_tanh");
  EXPECT_EQ(info.architectures, (std::vector<std::string>{"BertForSequenceClassification"}));
  EXPECT_EQ(info.labels, (std::vector<std::string>{"neg", "pos", "neutral"}));
  EXPECT_EQ(info.num_labels, 3);

  test::write_text(dir / "bad.json", R"({"hidden_size": 16, "hiden_layers": 2})");
  EXPECT_THROW(io::read_hf_config(dir / "bad.json"), UserError);
  test::write_text(dir / "bad2.json", R"({"id2label": {"x": "a"}})");
  EXPECT_THROW(io::read_hf_config(dir / "bad2.json"), UserError);
}

TEST(IoWeights, ModelDirectoryRoundTrip) {
  test::TempDir dir;
  torch::manual_seed(8);
  model::BertForSequenceClassification a(tiny(), 1);
  io::save_model_dir(*a, tiny(), dir / "m");
  auto info = io::read_hf_config(dir / "m" / "config.json");
  EXPECT_EQ(info.architectures, (std::vector<std::string>{"BertForSequenceClassification"}));
  EXPECT_EQ(info.num_labels, 1);
  auto j = config::json::parse(test::read_text(dir / "m" / "config.json"));
  EXPECT_EQ(j["problem_type"], "regression");
  torch::manual_seed(9);
  model::BertForSequenceClassification b(info.model, info.num_labels);
  auto r = io::load_model_dir(*b, dir / "m");
  EXPECT_TRUE(r.complete()) << r.summary();
  a->eval(), b->eval();
  auto ids = torch::tensor({{2, 5, 7, 3}}, torch::kLong);
  EXPECT_TRUE(torch::equal(a->forward(ids), b->forward(ids)));
  EXPECT_THROW(io::save_model_dir(*a, tiny(), dir / "n", {"a", "b"}), UserError);
  EXPECT_THROW(io::load_model_dir(*b, dir / "absent"), UserError);
}

TEST(IoWeights, BadInputIdsAndPositionsAreClearErrors) {
  model::BertForPreTraining m(tiny());
  auto ok = torch::tensor({{2, 5, 7, 3}}, torch::kLong);
  EXPECT_THROW(m->forward(torch::tensor({{2, 40, 7, 3}}, torch::kLong), {}, {}, torch::tensor({{1}})), UserError);
  EXPECT_THROW(m->forward(ok, {}, {}, torch::tensor({{1, 4}})), UserError);
  EXPECT_THROW(m->forward(ok, {}, {}, torch::tensor({1, 2})), UserError);
  EXPECT_THROW(m->forward(torch::zeros({1, 21}, torch::kLong), {}, {}, torch::tensor({{1}})), UserError);
  EXPECT_TRUE(model::excluded_from_weight_decay("bert.encoder.layer.0.output.LayerNorm.weight"));
  EXPECT_TRUE(model::excluded_from_weight_decay("cls.predictions.bias"));
  EXPECT_FALSE(model::excluded_from_weight_decay("bert.encoder.layer.0.output.dense.weight"));
}

TEST(IoWeights, ReadsTheSharedGoogleConfig) {
  BERT_REQUIRE_SHARED_DATA(data);
  auto cfg = data / "tf_checkpoint" / "bert_config.json";
  if (!std::filesystem::exists(cfg)) GTEST_SKIP() << "no bert_config.json in shared tf_checkpoint";
  auto info = io::read_hf_config(cfg);
  model::BertForPreTraining m(info.model);  // builds a model of that architecture
  EXPECT_EQ(m->bert->embeddings->word_embeddings->weight.size(0), info.model.vocab_size);
}

}  // namespace
