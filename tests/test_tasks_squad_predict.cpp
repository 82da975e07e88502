// SQuAD post-processing: get_final_text alignment (including accents and punctuation), n-best
// over several windows with the max-context rule, the v2.0 null score and threshold, and the
// official output files.
#include <gtest/gtest.h>

#include <cmath>

#include "bert/common/error.h"
#include "bert/common/strings.h"
#include "bert/tasks/pytext.h"
#include "bert/tasks/squad_predict.h"
#include "tasks_test_helpers.h"
#include "test_util.h"

using namespace bert;
using namespace bert::tasks;
using bert::test::SmallTokenizer;

TEST(TasksSquadPredict, FinalTextAlignsBackToTheOriginal) {
  SmallTokenizer t({"a"});
  // The classic case: the prediction "steve smith" from "Steve Smith's" keeps the case and drops "'s".
  EXPECT_EQ(get_final_text("steve smith", "Steve Smith's", t.tok.basic_tokenize), "Steve Smith");
  // Accent stripping keeps the character count (code points), so the alignment holds.
  EXPECT_EQ(get_final_text("cafe", "Caf\u00e9.", t.tok.basic_tokenize), "Caf\u00e9");
  EXPECT_EQ(get_final_text("1990", "(1990)", t.tok.basic_tokenize), "1990");
  // Not found: the original text is returned.
  EXPECT_EQ(get_final_text("xyz", "Steve Smith's", t.tok.basic_tokenize), "Steve Smith's");
}

TEST(TasksSquadPredict, BestIndexesAndSoftmax) {
  EXPECT_EQ(best_indexes({0.5f, 2.f, 2.f, -1.f}, 3), (std::vector<int64_t>{1, 2, 0}));
  auto p = softmax({1.0, 1.0});
  EXPECT_DOUBLE_EQ(p[0], 0.5);
  EXPECT_DOUBLE_EQ(p[1], 0.5);
}

namespace {

struct Letters {
  SmallTokenizer t{{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "q"}};
  std::vector<SquadExample> examples;
  std::vector<SquadFeature> features;
  std::vector<SquadRawResult> results;
  Letters() {
    SquadExample ex;
    ex.qas_id = "x";
    ex.question_text = "q";
    ex.context = "a b c d e f g h i j";
    ex.doc_tokens = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"};
    examples.push_back(ex);
    SquadFeatureOptions opts;
    opts.max_seq_length = 8;
    opts.max_query_length = 2;  // windows [0-3] [2-5] [4-7] [6-9]
    opts.doc_stride = 2;
    features = convert_squad_examples(examples, t.tok, opts);
    for (const auto& f : features) {
      SquadRawResult r;
      r.unique_id = f.unique_id;
      r.start_logits.assign(8, -10.f);
      r.end_logits.assign(8, -10.f);
      results.push_back(r);
    }
    // window 0: "d" scores highest but window 0 is not its max context -> ignored
    results[0].start_logits[6] = 10;
    results[0].end_logits[6] = 10;
    // window 1: "d" (token 4), max context here
    results[1].start_logits[4] = 8;
    results[1].end_logits[4] = 8;
    // window 3: "i j" (tokens 5, 6)
    results[3].start_logits[5] = 5;
    results[3].end_logits[6] = 4;
  }
};

}  // namespace

TEST(TasksSquadPredict, NbestOverWindowsV1) {
  Letters L;
  ASSERT_EQ(L.features.size(), 4u);
  SquadPredictOptions opts;
  opts.n_best_size = 3;  // only the 3 best start/end logits per window are tried
  auto preds = compute_squad_predictions(L.examples, L.features, L.results, opts, L.t.tok.basic_tokenize);
  ASSERT_EQ(preds.size(), 1u);
  const auto& p = preds[0];
  EXPECT_EQ(p.text, "d");
  ASSERT_EQ(p.nbest.size(), 2u);
  EXPECT_EQ(p.nbest[0].text, "d");
  EXPECT_EQ(p.nbest[1].text, "i j");
  EXPECT_DOUBLE_EQ(p.nbest[0].start_logit, 8.0);
  EXPECT_NEAR(p.nbest[0].probability, 1.0 / (1.0 + std::exp(-7.0)), 1e-12);
  EXPECT_NEAR(p.nbest[0].probability + p.nbest[1].probability, 1.0, 1e-12);

  opts.n_best_size = 20;
  auto wide = compute_squad_predictions(L.examples, L.features, L.results, opts, L.t.tok.basic_tokenize);
  EXPECT_EQ(wide[0].text, "d");
  EXPECT_GT(wide[0].nbest.size(), 2u);
  for (const auto& e : wide[0].nbest) EXPECT_LE(bert::split(e.text, ' ').size(), 4u);  // window width
}

TEST(TasksSquadPredict, NullScoreAndThresholdV2) {
  Letters L;
  SquadPredictOptions opts;
  opts.n_best_size = 3;
  opts.version_2 = true;
  auto p = compute_squad_predictions(L.examples, L.features, L.results, opts, L.t.tok.basic_tokenize)[0];
  EXPECT_EQ(p.text, "d");  // null score -20 is far below 16
  ASSERT_EQ(p.nbest.size(), 3u);
  EXPECT_EQ(p.nbest[2].text, "");
  EXPECT_DOUBLE_EQ(p.null_score_diff, -20.0 - 16.0);

  for (auto& r : L.results) {
    r.start_logits[0] = 20;
    r.end_logits[0] = 20;
  }
  p = compute_squad_predictions(L.examples, L.features, L.results, opts, L.t.tok.basic_tokenize)[0];
  EXPECT_DOUBLE_EQ(p.null_score_diff, 40.0 - 16.0);
  EXPECT_EQ(p.text, "");
  EXPECT_EQ(p.nbest[0].text, "");
  opts.null_score_diff_threshold = 30;
  p = compute_squad_predictions(L.examples, L.features, L.results, opts, L.t.tok.basic_tokenize)[0];
  EXPECT_EQ(p.text, "d");
}

TEST(TasksSquadPredict, MissingResultIsAnError) {
  Letters L;
  L.results.pop_back();
  EXPECT_THROW(compute_squad_predictions(L.examples, L.features, L.results, {}, L.t.tok.basic_tokenize), RuntimeError);
}

TEST(TasksSquadPredict, WritesTheOfficialFiles) {
  Letters L;
  SquadPredictOptions opts;
  opts.version_2 = true;
  auto preds = compute_squad_predictions(L.examples, L.features, L.results, opts, L.t.tok.basic_tokenize);
  test::TempDir dir;
  write_squad_predictions(preds, dir.path, true);
  auto p = nlohmann::json::parse(test::read_text(dir / "predictions.json"));
  EXPECT_EQ(p["x"], "d");
  auto nb = nlohmann::json::parse(test::read_text(dir / "nbest_predictions.json"));
  ASSERT_TRUE(nb["x"].is_array());
  EXPECT_EQ(nb["x"][0]["text"], "d");
  EXPECT_TRUE(nb["x"][0].contains("probability"));
  EXPECT_TRUE(nb["x"][0].contains("start_logit"));
  EXPECT_TRUE(nb["x"][0].contains("end_logit"));
  auto odds = nlohmann::json::parse(test::read_text(dir / "null_odds.json"));
  EXPECT_DOUBLE_EQ(odds["x"].get<double>(), -36.0);
  write_squad_predictions(preds, dir / "v1", false);
  EXPECT_FALSE(std::filesystem::exists(dir / "v1" / "null_odds.json"));
}
