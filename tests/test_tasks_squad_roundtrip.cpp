// Real-data round trip: the first questions of ../shared/data's SQuAD dev set go through the
// real uncased tokenizer, windowed features (short windows, so answers land in several), logits
// that peak on the target span, post-processing and the official v1.1 metric. Whatever the
// windows and alignment do, the recovered answers must score (almost) perfectly.
#include <gtest/gtest.h>

#include "bert/tasks/pytext.h"
#include "bert/tasks/squad.h"
#include "bert/tasks/squad_features.h"
#include "bert/tasks/squad_metrics.h"
#include "bert/tasks/squad_predict.h"
#include "bert/tasks/task_tokenizer.h"
#include "bert/text/tokenizer.h"
#include "test_util.h"

using namespace bert;
using namespace bert::tasks;
using json = nlohmann::ordered_json;

TEST(TasksSquadRoundTrip, GoldLogitsRecoverTheAnswersOnTheDevSet) {
  BERT_REQUIRE_SHARED_DATA(data);
  test::TempDir dir;
  json dev = load_json_file(data / "squad/dev-v1.1.json", "SQuAD dataset");
  // First 3 articles' first 2 paragraphs; the training copy keeps only the first answer.
  json small = dev, train = dev;
  small["data"] = json::array();
  train["data"] = json::array();
  for (size_t a = 0; a < 3; ++a) {
    json art = dev["data"][a];
    auto paragraphs = art["paragraphs"];
    art["paragraphs"] = json::array({paragraphs[0], paragraphs[1]});
    small["data"].push_back(art);
    for (auto& p : art["paragraphs"])
      for (auto& qa : p["qas"]) qa["answers"] = json::array({qa["answers"][0]});
    train["data"].push_back(art);
  }
  test::write_text(dir / "train.json", train.dump());

  text::TokenizerOptions topts;
  text::FullTokenizer full(text::Vocab::load((data / "vocab/bert-base-uncased-vocab.txt").string()), topts);
  TaskTokenizer tok = make_task_tokenizer(full);

  SquadReadOptions ropts;
  ropts.is_training = true;
  SquadReadStats rstats;
  auto examples = read_squad_examples(dir / "train.json", ropts, &rstats);
  ASSERT_GT(examples.size(), 50u);
  EXPECT_EQ(rstats.skipped_bad_answer, 0);

  SquadFeatureOptions fopts;
  fopts.max_seq_length = 128;  // short windows: many contexts need several
  fopts.doc_stride = 32;
  fopts.max_query_length = 32;
  fopts.is_training = true;
  fopts.keep_out_of_span_v1 = true;  // every window, as at prediction time
  auto features = convert_squad_examples(examples, tok, fopts);
  size_t multi = 0;
  for (const auto& f : features) multi += f.doc_span_index > 0;
  EXPECT_GT(multi, 20u);

  std::vector<SquadRawResult> results;
  for (const auto& f : features) {
    SquadRawResult r;
    r.unique_id = f.unique_id;
    r.start_logits.assign(128, 0.f);
    r.end_logits.assign(128, 0.f);
    if (!f.is_impossible) {
      r.start_logits[static_cast<size_t>(f.start_position)] = 10.f;
      r.end_logits[static_cast<size_t>(f.end_position)] = 10.f;
    }
    results.push_back(r);
  }
  auto preds = compute_squad_predictions(examples, features, results, SquadPredictOptions{}, tok.basic_tokenize);
  ASSERT_EQ(preds.size(), examples.size());
  write_squad_predictions(preds, dir.path, false);

  SquadEvalInput in;
  in.dataset = small;
  in.predictions = load_json_file(dir / "predictions.json", "predictions");
  auto rep = evaluate_squad_v1(in);
  EXPECT_TRUE(rep.missing.empty());
  EXPECT_GE(rep.metrics["exact_match"].get<double>(), 97.0) << py_json_dumps(rep.metrics);
  EXPECT_GE(rep.metrics["f1"].get<double>(), 99.0) << py_json_dumps(rep.metrics);
}
