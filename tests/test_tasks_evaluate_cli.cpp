// bert-train evaluate end to end: SQuAD v1.1 / v2.0 and GLUE on tiny files the tests write,
// the official output format, eval_results.json, and exit code 2 on bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.h"

using namespace bert::test;

namespace {

const char* kDev = R"({"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": "c",
  "qas": [{"id": "q1", "question": "?", "answers": [{"text": "Denver Broncos", "answer_start": 0}, {"text": "Broncos", "answer_start": 0}]},
          {"id": "q2", "question": "?", "answers": [{"text": "Santa Clara, California", "answer_start": 0}]}]}]}]})";

}  // namespace

TEST(TasksEvaluateCli, SquadV1PrintsAndWritesTheOfficialJson) {
  TempDir dir;
  write_text(dir / "dev.json", kDev);
  write_text(dir / "preds.json", R"({"q1": "the broncos", "q2": "Santa Clara"})");
  auto r = run_cli("evaluate --task squad --dataset " + (dir / "dev.json").string() + " --predictions " +
                   (dir / "preds.json").string() + " --output-dir " + (dir / "out").string());
  ASSERT_EQ(r.code, 0) << r.err;
  // q1 exact; q2 F1 = 0.8
  EXPECT_EQ(r.out, "{\"exact_match\": 50.0, \"f1\": 90.0}\n");
  EXPECT_EQ(read_text(dir / "out" / "eval_results.json"), "{\"exact_match\": 50.0, \"f1\": 90.0}\n");
}

TEST(TasksEvaluateCli, SquadV2AndMissingAnswers) {
  TempDir dir;
  write_text(dir / "dev.json", R"({"version": "v2.0", "data": [{"paragraphs": [{"context": "c", "qas": [
    {"id": "a", "question": "?", "answers": [{"text": "blue", "answer_start": 0}]},
    {"id": "b", "question": "?", "answers": [], "is_impossible": true}]}]}]})");
  write_text(dir / "preds.json", R"({"a": "blue", "b": "red"})");
  write_text(dir / "odds.json", R"({"a": 0.2, "b": 0.9})");
  auto r = run_cli("evaluate --task squad --dataset " + (dir / "dev.json").string() + " --predictions " +
                   (dir / "preds.json").string() + " --na-prob-file " + (dir / "odds.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"HasAns_exact\": 100.0,\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"NoAns_exact\": 0.0,\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"best_exact\": 100.0,\n  \"best_exact_thresh\": 0.2,"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir / "eval_results.json"));  // default: next to the predictions

  write_text(dir / "v1.json", kDev);
  write_text(dir / "some.json", R"({"q1": "Broncos"})");
  r = run_cli("evaluate --task squad --dataset " + (dir / "v1.json").string() + " --predictions " +
              (dir / "some.json").string() + " --output-dir " + dir.path.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"exact_match\": 50.0, \"f1\": 50.0}\n");
  EXPECT_NE(r.err.find("Unanswered question q2 will receive score 0."), std::string::npos) << r.err;
}

TEST(TasksEvaluateCli, GlueTaskMetric) {
  TempDir dir;
  write_text(dir / "dev.tsv",
             "\xEF\xBB\xBFQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\ta\tb\n0\t3\t4\tc\td\n1\t5\t6\te\tf\n0\t7\t8\tg\th\n");
  write_text(dir / "preds.tsv", "index\tprediction\n0\t1\n1\t1\n2\t1\n3\t0\n");
  auto r = run_cli("evaluate --task mrpc --dataset " + (dir / "dev.tsv").string() + " --predictions " +
                   (dir / "preds.tsv").string() + " --output-dir " + dir.path.string());
  ASSERT_EQ(r.code, 0) << r.err;
  // acc 3/4; tp 2 fp 1 fn 0 -> F1 0.8
  EXPECT_NE(r.out.find("\"acc\": 0.75"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"f1\": 0.8"), std::string::npos) << r.out;
  EXPECT_NE(read_text(dir / "eval_results.json").find("\"task\": \"mrpc\""), std::string::npos);
}

TEST(TasksEvaluateCli, BadInputExitsTwoWithOneClearLine) {
  TempDir dir;
  write_text(dir / "dev.json", kDev);
  write_text(dir / "broken.json", "{\"q1\": \"x\",\n \"q2\": }");
  auto r = run_cli("evaluate --task squad --dataset " + (dir / "dev.json").string() + " --predictions " +
                   (dir / "broken.json").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("broken.json"), std::string::npos) << r.err;

  r = run_cli("evaluate --task squad --dataset " + (dir / "nope.json").string() + " --predictions " +
              (dir / "broken.json").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("nope.json"), std::string::npos) << r.err;

  r = run_cli("evaluate --task mrcp --dataset " + (dir / "dev.json").string() + " --predictions x");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("mrpc"), std::string::npos) << r.err;

  write_text(dir / "dev.tsv", "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n");
  write_text(dir / "preds.tsv", "index\tprediction\n0\tmaybe\n");
  r = run_cli("evaluate --task rte --dataset " + (dir / "dev.tsv").string() + " --predictions " +
              (dir / "preds.tsv").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("preds.tsv:2"), std::string::npos) << r.err;

  write_text(dir / "notsquad.json", "[1, 2]");
  write_text(dir / "p.json", "{}");
  r = run_cli("evaluate --task squad --dataset " + (dir / "notsquad.json").string() + " --predictions " +
              (dir / "p.json").string());
  EXPECT_EQ(r.code, 2) << r.err;
}

TEST(TasksEvaluateCli, RealDevSetMatchesOfficialScript) {
  BERT_REQUIRE_SHARED_DATA(data);
  TempDir dir;
  auto dataset = nlohmann::json::parse(read_text(data / "squad/dev-v1.1.json"));
  nlohmann::json preds = nlohmann::json::object();
  for (const auto& a : dataset["data"])
    for (const auto& p : a["paragraphs"])
      for (const auto& qa : p["qas"]) preds[qa["id"].get<std::string>()] = "";
  write_text(dir / "empty.json", preds.dump());
  auto r = run_cli("evaluate --task squad --dataset " + (data / "squad/dev-v1.1.json").string() +
                   " --predictions " + (dir / "empty.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  // evaluate-v1.1.py on the same file (one question's only answer normalises to "").
  EXPECT_EQ(r.out, "{\"exact_match\": 0.02838221381267739, \"f1\": 0.0}\n");
}
