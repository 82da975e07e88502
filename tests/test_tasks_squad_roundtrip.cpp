// Real-data round trip: the first questions of ../shared/data's SQuAD dev set go through the
// real uncased tokenizer, windowed features (short windows, so answers land in several), logits
// that peak on the target span, post-processing and the official v1.1 metric. Whatever the
// windows and alignment do, the recovered answers must be the gold ones, except answers that
// are only part of a WordPiece token, which the reference cannot predict either.
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

  // A perfect model: in every window that holds the gold start (end) token, that token gets the
  // highest start (end) logit. Windows are recomputed with make_doc_spans to find the positions.
  std::vector<SquadRawResult> results;
  size_t fi = 0;
  for (size_t ei = 0; ei < examples.size(); ++ei) {
    size_t first = fi;
    while (fi < features.size() && features[fi].example_index == static_cast<int64_t>(ei)) ++fi;
    int64_t n_doc = 0;
    for (const auto& w : examples[ei].doc_tokens) n_doc += static_cast<int64_t>(tok.tokenize(w).size());
    int64_t qlen = 0;
    while (features[first].tokens[static_cast<size_t>(qlen + 1)] != "[SEP]") ++qlen;
    auto spans = make_doc_spans(n_doc, 128 - qlen - 3, 32);
    ASSERT_EQ(spans.size(), fi - first);
    int64_t g_start = -1, g_end = -1;
    for (size_t j = first; j < fi; ++j)
      if (!features[j].is_impossible) {
        g_start = features[j].start_position - (qlen + 2) + spans[j - first].start;
        g_end = features[j].end_position - (qlen + 2) + spans[j - first].start;
      }
    ASSERT_GE(g_start, 0) << examples[ei].qas_id;
    for (size_t j = first; j < fi; ++j) {
      SquadRawResult r;
      r.unique_id = features[j].unique_id;
      r.start_logits.assign(128, 0.f);
      r.end_logits.assign(128, 0.f);
      const DocSpan& sp = spans[j - first];
      if (g_start >= sp.start && g_start < sp.start + sp.length)
        r.start_logits[static_cast<size_t>(g_start - sp.start + qlen + 2)] = 10.f;
      if (g_end >= sp.start && g_end < sp.start + sp.length)
        r.end_logits[static_cast<size_t>(g_end - sp.start + qlen + 2)] = 10.f;
      results.push_back(r);
    }
  }
  auto preds = compute_squad_predictions(examples, features, results, SquadPredictOptions{}, tok.basic_tokenize);
  ASSERT_EQ(preds.size(), examples.size());
  write_squad_predictions(preds, dir.path, false);

  SquadEvalInput in;
  in.dataset = small;
  in.predictions = load_json_file(dir / "predictions.json", "predictions");
  auto rep = evaluate_squad_v1(in);
  EXPECT_TRUE(rep.missing.empty());
  for (const auto& p : preds) {
    for (const auto& ex : examples)
      // The only misses allowed are answers that are part of a WordPiece token ("8" in "20–18",
      // "gold" in "\"golden"): the reference cannot predict those either and gives the whole word.
      if (ex.qas_id == p.qas_id && !squad_exact_match(p.text, ex.orig_answer_text))
        EXPECT_NE(p.text.find(ex.orig_answer_text), std::string::npos)
            << p.qas_id << ": predicted '" << p.text << "' for '" << ex.orig_answer_text << "'";
  }
  EXPECT_GE(rep.metrics["exact_match"].get<double>(), 90.0) << py_json_dumps(rep.metrics);
  EXPECT_GE(rep.metrics["f1"].get<double>(), 90.0) << py_json_dumps(rep.metrics);
}
