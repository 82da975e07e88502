// The state-dict key list and every shape of base-sized models against HF's lists (tests/data),
// and how the tied decoder entries appear.
#include <torch/torch.h>

#include <fstream>
#include <sstream>

#include "bert/io/safetensors.h"
#include "bert/io/weights.h"
#include "bert/model/heads.h"
#include "test_util.h"

namespace {

using namespace bert;

// "key d0,d1" lines -> (key, "d0,d1"), comments skipped.
std::vector<std::pair<std::string, std::string>> golden(const std::string& name) {
  std::ifstream in(test::source_dir() / "tests" / "data" / name);
  EXPECT_TRUE(in) << name;
  std::vector<std::pair<std::string, std::string>> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto sp = line.find(' ');
    out.emplace_back(line.substr(0, sp), line.substr(sp + 1));
  }
  return out;
}

std::string dims(const torch::Tensor& t) {
  std::string s;
  for (auto d : t.sizes()) s += (s.empty() ? "" : ",") + std::to_string(d);
  return s;
}

void expect_state_matches(const io::NamedTensors& state, const std::string& file) {
  auto want = golden(file);
  ASSERT_EQ(state.size(), want.size()) << file;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(state[i].first, want[i].first) << "entry " << i << " of " << file;
    EXPECT_EQ(dims(state[i].second), want[i].second) << state[i].first;
  }
}

TEST(ModelKeys, BaseForPreTrainingMatchesHF) {
  torch::manual_seed(0);
  model::BertForPreTraining m(ModelConfig{});
  auto state = io::named_state(*m);
  expect_state_matches(state, "hf_keys_bert_base_pretraining.txt");
  // The optimizer's view lists every tensor once: 2 fewer than HF's state dict (the tied aliases).
  EXPECT_EQ(m->parameters().size(), state.size() - 2);
  auto no_alias = io::named_state(*m, /*include_aliases=*/false);
  EXPECT_EQ(no_alias.size(), state.size() - 2);
  for (const auto& [k, t] : no_alias) EXPECT_EQ(k.find("cls.predictions.decoder."), std::string::npos) << k;
  // ...in the same order as parameters(), so optimizer state can be keyed by these names.
  auto params = m->parameters();
  for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(params[i].is_same(no_alias[i].second)) << no_alias[i].first;
}

TEST(ModelKeys, BaseForQuestionAnsweringMatchesHF) {
  model::BertForQuestionAnswering m(ModelConfig{});
  expect_state_matches(io::named_state(*m), "hf_keys_bert_base_qa.txt");
}

TEST(ModelKeys, BaseForSequenceClassificationMatchesHF) {
  model::BertForSequenceClassification m(ModelConfig{}, 3);
  expect_state_matches(io::named_state(*m), "hf_keys_bert_base_seqcls3.txt");
}

TEST(ModelKeys, TiedDecoderSharesStorageWithWordEmbeddings) {
  ModelConfig cfg;
  cfg.vocab_size = 50, cfg.hidden_size = 16, cfg.num_hidden_layers = 1, cfg.num_attention_heads = 2;
  cfg.intermediate_size = 32, cfg.max_position_embeddings = 16;
  model::BertForPreTraining m(cfg);
  std::map<std::string, torch::Tensor> s;
  for (auto& [k, t] : io::named_state(*m)) s[k] = t;
  EXPECT_EQ(s.at("cls.predictions.decoder.weight").data_ptr(), s.at("bert.embeddings.word_embeddings.weight").data_ptr());
  EXPECT_EQ(s.at("cls.predictions.decoder.bias").data_ptr(), s.at("cls.predictions.bias").data_ptr());

  // The decoder really uses that tensor: scaling the embedding row of token 7 changes its logit.
  m->eval();
  auto ids = torch::tensor({{2, 5, 6, 3}}, torch::kLong);
  auto pos = torch::tensor({{1, 2}}, torch::kLong);
  auto before = m->forward(ids, {}, {}, pos).mlm_logits.select(1, 7).clone();
  {
    torch::NoGradGuard g;
    s.at("cls.predictions.decoder.weight")[7].mul_(-2.0);
  }
  auto after = m->forward(ids, {}, {}, pos).mlm_logits.select(1, 7);
  EXPECT_FALSE(torch::allclose(before, after));

  // ...and the MLM loss sends gradient through the decoder into rows the input never looked up.
  m->train();
  auto out = m->forward(ids, {}, {}, pos);
  auto loss = m->loss(out, torch::tensor({{9, 11}}, torch::kLong), torch::tensor({0}, torch::kLong));
  loss.total_loss.backward();
  auto g = m->bert->embeddings->word_embeddings->weight.grad();
  ASSERT_TRUE(g.defined());
  EXPECT_GT(g[9].abs().sum().item<float>(), 0.0f);
  EXPECT_GT(m->cls->predictions->bias.grad()[9].abs().item<float>(), 0.0f);
}

TEST(ModelKeys, SavedFileDropsAliasesLikeHF) {
  test::TempDir dir;
  ModelConfig cfg;
  cfg.vocab_size = 30, cfg.hidden_size = 8, cfg.num_hidden_layers = 2, cfg.num_attention_heads = 2;
  cfg.intermediate_size = 16, cfg.max_position_embeddings = 8;
  model::BertForPreTraining m(cfg);
  io::save_weights(*m, dir / "model.safetensors");
  auto f = io::load_safetensors(dir / "model.safetensors");
  auto expected = io::named_state(*m, /*include_aliases=*/false);
  ASSERT_EQ(f.tensors.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(f.tensors[i].first, expected[i].first);
    EXPECT_TRUE(torch::equal(f.tensors[i].second, expected[i].second)) << expected[i].first;
  }
  EXPECT_EQ(f.metadata.at("format"), "pt");
}

}  // namespace
