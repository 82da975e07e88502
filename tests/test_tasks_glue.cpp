// GLUE: tsv quirks (BOM, literal quotes, headerless CoLA, test files without labels, bad lines),
// every metric against hand-computed values, prediction files, and pair features.
#include <gtest/gtest.h>

#include <cmath>

#include "bert/common/error.h"
#include "bert/tasks/glue.h"
#include "bert/tasks/glue_io.h"
#include "bert/tasks/glue_metrics.h"
#include "bert/tasks/pair_features.h"
#include "tasks_test_helpers.h"
#include "test_util.h"

using namespace bert;
using namespace bert::tasks;

static std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(TasksGlueReader, MrpcWithBomAndLiteralQuotes) {
  test::TempDir dir;
  test::write_text(dir / "dev.tsv",
                   "\xEF\xBB\xBFQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
                   "1\t11\t12\t\"Hello,\" he said.\tHi \"there\r\n"
                   "0\t13\t14\tA b\tC d\n");
  GlueReadStats st;
  auto ex = read_glue_tsv(glue_task("MRPC"), dir / "dev.tsv", {}, &st);
  ASSERT_EQ(ex.size(), 2u);
  EXPECT_TRUE(st.labeled);
  EXPECT_EQ(ex[0].text_a, "\"Hello,\" he said.");
  EXPECT_EQ(ex[0].text_b, "Hi \"there");
  EXPECT_EQ(ex[0].label_id, 1);
  EXPECT_EQ(ex[1].label_id, 0);
  EXPECT_EQ(ex[1].line, 3);
}

TEST(TasksGlueReader, ColaHeaderlessTrainAndHeaderedTest) {
  test::TempDir dir;
  test::write_text(dir / "dev.tsv", "gj04\t1\t\tThe sailors rode the breeze.\ngj04\t0\t*\tThe more we .\n");
  auto dev = read_glue_tsv(glue_task("cola"), dir / "dev.tsv");
  ASSERT_EQ(dev.size(), 2u);
  EXPECT_EQ(dev[0].text_a, "The sailors rode the breeze.");
  EXPECT_EQ(dev[1].label_id, 0);
  EXPECT_TRUE(dev[1].text_b.empty());
  test::write_text(dir / "test.tsv", "index\tsentence\n0\tBill left.\n1\tHe \"quoted\" it.\n");
  GlueReadStats st;
  auto test = read_glue_tsv(glue_task("cola"), dir / "test.tsv", {}, &st);
  ASSERT_EQ(test.size(), 2u);
  EXPECT_FALSE(st.labeled);
  EXPECT_FALSE(test[0].has_label);
  EXPECT_EQ(test[1].text_a, "He \"quoted\" it.");
}

TEST(TasksGlueReader, TestFilesWithoutLabelsAndOtherLayouts) {
  test::TempDir dir;
  test::write_text(dir / "rte_test.tsv", "index\tsentence1\tsentence2\n0\tA man.\tA person.\n");
  auto rte = read_glue_tsv(glue_task("rte"), dir / "rte_test.tsv");
  ASSERT_EQ(rte.size(), 1u);
  EXPECT_FALSE(rte[0].has_label);
  EXPECT_EQ(rte[0].text_b, "A person.");

  test::write_text(dir / "sts.tsv",
                   "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
                   "0\tmain\tMSRvid\t2012\t0001\tnone\tnone\tA cat.\tA kitten.\t4.250\n");
  auto sts = read_glue_tsv(glue_task("sts-b"), dir / "sts.tsv");
  ASSERT_EQ(sts.size(), 1u);
  EXPECT_DOUBLE_EQ(sts[0].score, 4.25);
  EXPECT_TRUE(glue_task("STS-B").regression);

  // MNLI dev: gold_label is the last of several label columns.
  test::write_text(dir / "mnli.tsv",
                   "index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
                   "sentence2_parse\tsentence1\tsentence2\tlabel1\tlabel2\tgold_label\n"
                   "0\t1\t1n\tgov\t(\t(\t(\t(\tP one.\tH one.\tneutral\tneutral\tneutral\n"
                   "1\t2\t2e\tgov\t(\t(\t(\t(\tP two.\tH two.\tentailment\tneutral\tentailment\n");
  auto mnli = read_glue_tsv(glue_task("mnli-mm"), dir / "mnli.tsv");
  ASSERT_EQ(mnli.size(), 2u);
  EXPECT_EQ(mnli[0].label_id, 2);
  EXPECT_EQ(mnli[1].label_id, 1);
  EXPECT_EQ(mnli[1].text_a, "P two.");

  test::write_text(dir / "sst.tsv", "sentence\tlabel\nit 's good . \t1\n");
  auto sst = read_glue_tsv(glue_task("sst2"), dir / "sst.tsv");
  EXPECT_EQ(sst[0].text_a, "it 's good . ");
  EXPECT_TRUE(glue_task("sst-2").single_sentence);
}

TEST(TasksGlueReader, BadLinesNameFileAndLine) {
  test::TempDir dir;
  test::write_text(dir / "rte.tsv", "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n1\tonly one column\n");
  std::string err = error_of([&] { read_glue_tsv(glue_task("rte"), dir / "rte.tsv"); });
  EXPECT_NE(err.find("rte.tsv:3"), std::string::npos) << err;
  GlueReadOptions skip;
  skip.skip_malformed = true;
  GlueReadStats st;
  EXPECT_EQ(read_glue_tsv(glue_task("rte"), dir / "rte.tsv", skip, &st).size(), 1u);
  EXPECT_EQ(st.skipped_malformed, 1);

  test::write_text(dir / "lab.tsv", "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tmaybe\n");
  err = error_of([&] { read_glue_tsv(glue_task("rte"), dir / "lab.tsv"); });
  EXPECT_NE(err.find("lab.tsv:2"), std::string::npos) << err;
  EXPECT_NE(err.find("not_entailment"), std::string::npos) << err;

  test::write_text(dir / "sts.tsv", "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
                                   "0\tg\tf\ty\to\ts\ts\ta\tb\thigh\n");
  err = error_of([&] { read_glue_tsv(glue_task("sts-b"), dir / "sts.tsv"); });
  EXPECT_NE(err.find("sts.tsv:2"), std::string::npos) << err;

  test::write_text(dir / "wrong.tsv", "foo\tbar\n1\t2\n");
  EXPECT_NE(error_of([&] { read_glue_tsv(glue_task("qnli"), dir / "wrong.tsv"); }).find("wrong.tsv:1"), std::string::npos);
  EXPECT_NE(error_of([] { glue_task("mrcp"); }).find("mrpc"), std::string::npos);
}

TEST(TasksGlueMetrics, HandComputed) {
  EXPECT_DOUBLE_EQ(accuracy({1, 0, 1, 1}, {1, 0, 0, 1}), 0.75);
  // tp 2, fp 1, fn 1 -> F1 = 4 / 6
  EXPECT_NEAR(f1_binary({1, 1, 0, 1, 0}, {1, 0, 0, 1, 1}), 2.0 / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(f1_binary({0, 0}, {1, 0}), 0.0);
  // tp 2, tn 1, fp 1, fn 1 -> (2*1 - 1*1) / sqrt(3*3*2*2) = 1/6
  EXPECT_NEAR(matthews_corrcoef({1, 1, 0, 1, 0}, {1, 0, 0, 1, 1}, 2), 1.0 / 6.0, 1e-12);
  EXPECT_DOUBLE_EQ(matthews_corrcoef({1, 1, 1}, {1, 0, 1}, 2), 0.0);  // constant prediction
  EXPECT_NEAR(matthews_corrcoef({0, 1, 0, 1}, {1, 0, 1, 0}, 2), -1.0, 1e-12);
  // x = 1..4, y = 2 4 6 9: sxy 11.5, sxx 5, syy 26.75
  EXPECT_NEAR(pearson({1, 2, 3, 4}, {2, 4, 6, 9}), 11.5 / std::sqrt(5 * 26.75), 1e-12);
  EXPECT_EQ(average_ranks({10, 20, 20, 30, 20}), (std::vector<double>{1, 3, 3, 5, 3}));
  // ranks x 1 2.5 2.5 4, y 1 3 2 4 -> 4.5 / sqrt(4.5 * 5)
  EXPECT_NEAR(spearman({1, 2, 2, 3}, {1, 3, 2, 4}), 4.5 / std::sqrt(22.5), 1e-12);

  auto m = glue_metrics(glue_task("mrpc"), {1, 1, 0, 1, 0}, {1, 0, 0, 1, 1});
  EXPECT_NEAR(m["acc"].get<double>(), 0.6, 1e-12);
  EXPECT_NEAR(m["f1"].get<double>(), 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(m["acc_and_f1"].get<double>(), (0.6 + 2.0 / 3.0) / 2, 1e-12);
  EXPECT_TRUE(glue_metrics(glue_task("cola"), {1, 0}, {1, 0}).contains("mcc"));
  auto r = glue_metrics_regression(glue_task("sts-b"), {1, 2, 2, 3}, {1, 3, 2, 4});
  EXPECT_NEAR(r["spearmanr"].get<double>(), 4.5 / std::sqrt(22.5), 1e-12);
  EXPECT_THROW(accuracy({1}, {1, 0}), UserError);
}

TEST(TasksGlueIo, PredictionFilesRoundTrip) {
  test::TempDir dir;
  const auto& rte = glue_task("rte");
  std::vector<GlueExample> ex(3);
  for (int i = 0; i < 3; ++i) {
    ex[static_cast<size_t>(i)].has_label = true;
    ex[static_cast<size_t>(i)].label_id = i % 2;
  }
  GluePredictions p;
  p.label_ids = {0, 0, 1};
  write_glue_dev_predictions(dir / "dev_predictions.tsv", rte, ex, p);
  EXPECT_EQ(test::read_text(dir / "dev_predictions.tsv"),
            "index\tprediction\tlabel\n0\tentailment\tentailment\n1\tentailment\tnot_entailment\n2\tnot_entailment\tentailment\n");
  auto back = read_glue_predictions(dir / "dev_predictions.tsv", rte, 3);
  EXPECT_EQ(back.label_ids, p.label_ids);
  EXPECT_NEAR(score_glue(rte, ex, back)["acc"].get<double>(), 1.0 / 3.0, 1e-12);

  write_glue_submission(dir / "RTE.tsv", rte, p);
  EXPECT_EQ(test::read_text(dir / "RTE.tsv"), "index\tprediction\n0\tentailment\n1\tentailment\n2\tnot_entailment\n");
  GluePredictions s;
  s.scores = {4.25, 0.1234};
  write_glue_submission(dir / "STS-B.tsv", glue_task("sts-b"), s);
  EXPECT_EQ(test::read_text(dir / "STS-B.tsv"), "index\tprediction\n0\t4.250\n1\t0.123\n");

  test::write_text(dir / "ids.tsv", "0\t1\n1\tnot_entailment\n");  // no header; ids accepted
  EXPECT_EQ(read_glue_predictions(dir / "ids.tsv", rte, 2).label_ids, (std::vector<int32_t>{1, 1}));
  test::write_text(dir / "short.tsv", "index\tprediction\n0\tentailment\n");
  EXPECT_NE(error_of([&] { read_glue_predictions(dir / "short.tsv", rte, 2); }).find("row 1"), std::string::npos);
  test::write_text(dir / "dup.tsv", "0\tentailment\n0\tentailment\n");
  EXPECT_NE(error_of([&] { read_glue_predictions(dir / "dup.tsv", rte, 2); }).find("dup.tsv:2"), std::string::npos);
  test::write_text(dir / "badlab.tsv", "0\tyes\n");
  EXPECT_NE(error_of([&] { read_glue_predictions(dir / "badlab.tsv", rte, 1); }).find("badlab.tsv:1"), std::string::npos);
}

TEST(TasksPairFeatures, TruncationSegmentsAndPadding) {
  std::vector<std::string> a = {"1", "2", "3", "4", "5"}, b = {"x", "y", "z"};
  truncate_seq_pair(a, b, 6);
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(b.size(), 3u);
  truncate_seq_pair(a, b, 5);  // tie: the second sequence loses a token
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(b.size(), 2u);

  test::SmallTokenizer t({"the", "cat", "sat", "a", "dog", "on", "mat"});
  auto f = make_pair_feature(t.tok, "The cat sat", "a dog", false, 10);
  EXPECT_EQ(f.tokens, (std::vector<std::string>{"[CLS]", "the", "cat", "sat", "[SEP]", "a", "dog", "[SEP]"}));
  EXPECT_EQ(f.segment_ids, (std::vector<int32_t>{0, 0, 0, 0, 0, 1, 1, 1, 0, 0}));
  EXPECT_EQ(f.input_mask, (std::vector<int32_t>{1, 1, 1, 1, 1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(f.input_ids[1], t.full->vocab().id("the"));
  EXPECT_EQ(f.input_ids[9], t.full->vocab().pad_id());

  auto cut = make_pair_feature(t.tok, "the cat sat on the mat", "a dog", false, 8);  // 5 slots: a 3, b 2
  EXPECT_EQ(cut.tokens, (std::vector<std::string>{"[CLS]", "the", "cat", "sat", "[SEP]", "a", "dog", "[SEP]"}));
  auto single = make_pair_feature(t.tok, "the cat sat on the mat", "", true, 5);
  EXPECT_EQ(single.tokens, (std::vector<std::string>{"[CLS]", "the", "cat", "sat", "[SEP]"}));
  EXPECT_THROW(make_pair_feature(t.tok, "a", "b", false, 3), UserError);

  std::vector<GlueExample> ex(1);
  ex[0].text_a = "the cat";
  ex[0].text_b = "a dog";
  ex[0].has_label = true;
  ex[0].label_id = 1;
  auto feats = convert_glue_examples(glue_task("mrpc"), ex, t.tok, 16);
  ASSERT_EQ(feats.size(), 1u);
  EXPECT_EQ(feats[0].label_id, 1);
}

TEST(TasksGlueReader, RealDevFilesParse) {
  BERT_REQUIRE_SHARED_DATA(data);
  EXPECT_EQ(read_glue_tsv(glue_task("mrpc"), data / "glue/MRPC/dev.tsv").size(), 408u);
  EXPECT_EQ(read_glue_tsv(glue_task("cola"), data / "glue/CoLA/dev.tsv").size(), 1043u);
  EXPECT_EQ(read_glue_tsv(glue_task("rte"), data / "glue/RTE/dev.tsv").size(), 277u);
  EXPECT_EQ(read_glue_tsv(glue_task("sst-2"), data / "glue/SST-2/dev.tsv").size(), 872u);
  EXPECT_EQ(read_glue_tsv(glue_task("sts-b"), data / "glue/STS-B/dev.tsv").size(), 1500u);
  GlueReadStats st;
  auto test = read_glue_tsv(glue_task("mrpc"), data / "glue/MRPC/test.tsv", {}, &st);
  EXPECT_EQ(test.size(), 1725u);
  EXPECT_FALSE(st.labeled);
}
