// SQuAD metrics: hand-computed EM/F1 for both official scripts, the Python formatting helpers,
// and parity with the official evaluate-v1.1.py / evaluate-v2.0.py on ../shared/data's dev set
// (expected numbers were printed by the official scripts on the same prediction files).
#include <gtest/gtest.h>

#include <cmath>

#include "bert/common/error.h"
#include "bert/common/error.h"
#include "bert/common/strings.h"
#include "bert/tasks/pytext.h"
#include "bert/tasks/squad_metrics.h"
#include "test_util.h"

using namespace bert;
using namespace bert::tasks;
using json = nlohmann::ordered_json;

TEST(TasksSquadMetrics, NormalizeAnswerFollowsTheOfficialSteps) {
  EXPECT_EQ(normalize_answer("The  Quick, brown fox!"), "quick brown fox");
  EXPECT_EQ(normalize_answer("an apple a day"), "apple day");
  EXPECT_EQ(normalize_answer("theater and a-ha"), "theater and aha");   // punctuation removed before articles
  EXPECT_EQ(normalize_answer("the_an a\u2026"), "thean \u2026");  // _ is punctuation; … is not
  EXPECT_EQ(normalize_answer("\u00c9COLE  Normale"), "\u00e9cole normale");  // unicode lower-case
  EXPECT_EQ(normalize_answer("A\u00a0the\u3000b"), "b");                   // unicode whitespace splits
  EXPECT_EQ(normalize_answer(""), "");
}

TEST(TasksSquadMetrics, HandComputedF1AndExact) {
  EXPECT_TRUE(squad_exact_match("the Broncos", "Broncos."));
  EXPECT_FALSE(squad_exact_match("Santa Clara", "Santa Clara, California"));
  // pred {cat, sat}, gold {cat, sat, on, mat}: P = 1, R = 1/2 -> F1 = 2/3
  EXPECT_NEAR(squad_f1_v1("the cat sat", "cat sat on the mat"), 2.0 / 3.0, 1e-12);
  // repeated tokens count with multiplicity: pred {a1 a1 b}, gold {a1 b b}: common 2, P = R = 2/3
  EXPECT_NEAR(squad_f1_v1("x x y", "x y y"), 2.0 / 3.0, 1e-12);
  EXPECT_EQ(squad_f1_v1("", ""), 0.0);  // v1.1: nothing in common -> 0
  EXPECT_EQ(squad_f1_v2("", ""), 1.0);  // v2.0: both empty -> 1
  EXPECT_EQ(squad_f1_v2("the", ""), 1.0);
  EXPECT_EQ(squad_f1_v2("blue", ""), 0.0);
}

static json squad_dataset(const std::string& version, const std::vector<std::pair<std::string, std::vector<std::string>>>& qas) {
  json d;
  d["version"] = version;
  json paragraph;
  paragraph["context"] = "unused";
  paragraph["qas"] = json::array();
  for (const auto& [id, answers] : qas) {
    json qa;
    qa["id"] = id;
    qa["question"] = "?";
    qa["answers"] = json::array();
    for (const auto& a : answers) qa["answers"].push_back({{"text", a}, {"answer_start", 0}});
    paragraph["qas"].push_back(qa);
  }
  d["data"] = json::array({json{{"title", "t"}, {"paragraphs", json::array({paragraph})}}});
  return d;
}

TEST(TasksSquadMetrics, V1HandComputedTotals) {
  SquadEvalInput in;
  in.dataset = squad_dataset("1.1", {{"q1", {"Denver Broncos", "Broncos"}}, {"q2", {"Santa Clara, California"}}, {"q3", {"x"}}});
  in.predictions = json{{"q1", "the broncos"}, {"q2", "Santa Clara"}};
  auto rep = evaluate_squad_v1(in);
  // q1: EM 1 F1 1; q2: EM 0, F1 = 2*1*(2/3)/(1+2/3) = 0.8; q3 missing: 0.
  EXPECT_NEAR(rep.metrics["exact_match"].get<double>(), 100.0 / 3.0, 1e-9);
  EXPECT_NEAR(rep.metrics["f1"].get<double>(), 60.0, 1e-9);
  ASSERT_EQ(rep.missing.size(), 1u);
  EXPECT_EQ(rep.missing[0], "q3");
  EXPECT_TRUE(rep.warnings.empty());
  EXPECT_EQ(py_json_dumps(rep.metrics), "{\"exact_match\": 33.333333333333336, \"f1\": 60.0}");
}

TEST(TasksSquadMetrics, V2HandComputedSplitAndBestThreshold) {
  SquadEvalInput in;
  in.dataset = squad_dataset("v2.0", {{"q1", {"blue"}}, {"q2", {}}, {"q3", {}}, {"q4", {"big red dog"}}});
  in.predictions = json{{"q1", "Blue."}, {"q2", ""}, {"q3", "red"}, {"q4", "red dog"}};
  auto rep = evaluate_squad_v2(in);
  const auto& m = rep.metrics;
  EXPECT_NEAR(m["exact"].get<double>(), 50.0, 1e-9);
  EXPECT_NEAR(m["f1"].get<double>(), 70.0, 1e-9);  // (1 + 1 + 0 + 0.8) / 4
  EXPECT_EQ(m["total"].get<int>(), 4);
  EXPECT_NEAR(m["HasAns_exact"].get<double>(), 50.0, 1e-9);
  EXPECT_NEAR(m["HasAns_f1"].get<double>(), 90.0, 1e-9);
  EXPECT_EQ(m["HasAns_total"].get<int>(), 2);
  EXPECT_NEAR(m["NoAns_exact"].get<double>(), 50.0, 1e-9);
  EXPECT_NEAR(m["NoAns_f1"].get<double>(), 50.0, 1e-9);
  EXPECT_FALSE(m.contains("best_exact"));

  in.na_probs = json{{"q1", 0.1}, {"q2", 0.9}, {"q3", 0.8}, {"q4", 0.2}};
  auto with_na = evaluate_squad_v2(in).metrics;
  // exact walk (start 2 no-answer questions): q1 +1 -> 3 (thresh 0.1), q4 +0, q3 -1, q2 0.
  EXPECT_NEAR(with_na["best_exact"].get<double>(), 75.0, 1e-9);
  EXPECT_DOUBLE_EQ(with_na["best_exact_thresh"].get<double>(), 0.1);
  // f1 walk: q1 +1 -> 3, q4 +0.8 -> 3.8 (thresh 0.2), q3 -1, q2 0.
  EXPECT_NEAR(with_na["best_f1"].get<double>(), 95.0, 1e-9);
  EXPECT_DOUBLE_EQ(with_na["best_f1_thresh"].get<double>(), 0.2);

  in.na_prob_thresh = 0.5;  // q2, q3 predicted unanswerable -> both right
  EXPECT_NEAR(evaluate_squad_v2(in).metrics["exact"].get<double>(), 75.0, 1e-9);

  in.predictions.erase("q4");
  EXPECT_THROW(evaluate_squad_v2(in), UserError);
}

TEST(TasksSquadMetrics, PythonFloatReprAndJsonDumps) {
  EXPECT_EQ(py_float_repr(100.0), "100.0");
  EXPECT_EQ(py_float_repr(0.1), "0.1");
  EXPECT_EQ(py_float_repr(62.20887663511803), "62.20887663511803");
  EXPECT_EQ(py_float_repr(1e16), "1e+16");
  EXPECT_EQ(py_float_repr(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(py_float_repr(0.0001), "0.0001");
  EXPECT_EQ(py_float_repr(0.00001), "1e-05");
  EXPECT_EQ(py_float_repr(-2.5e-7), "-2.5e-07");
  EXPECT_EQ(py_float_repr(0.0), "0.0");
  json j;
  j["a"] = 1;
  j["b"] = "caf\u00e9 \"q\"";
  j["c"] = json::array({1.5, true});
  EXPECT_EQ(py_json_dumps(j), "{\"a\": 1, \"b\": \"caf\\u00e9 \\\"q\\\"\", \"c\": [1.5, true]}");
  EXPECT_EQ(py_json_dumps(j, 2), "{\n  \"a\": 1,\n  \"b\": \"caf\\u00e9 \\\"q\\\"\",\n  \"c\": [\n    1.5,\n    true\n  ]\n}");
  EXPECT_EQ(py_json_dumps(json{{"e", "\U0001F600"}}), "{\"e\": \"\\ud83d\\ude00\"}");
}

// ---- parity with the official scripts on the real dev set -------------------------------------

namespace {

std::string ascii_upper(std::string s) {
  for (char& c : s)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  return s;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
  return s;
}

// The prediction files the expected numbers were computed on (same rules, by question index).
json make_predictions(const json& dataset, const std::string& kind) {
  json out = json::object();
  size_t i = 0;
  for (const auto& a : dataset["data"])
    for (const auto& p : a["paragraphs"])
      for (const auto& qa : p["qas"]) {
        std::string id = qa["id"], f = qa["answers"].front()["text"], l = qa["answers"].back()["text"];
        auto words = bert::split(f, ' ');
        if (kind == "exact") out[id] = f;
        if (kind == "empty") out[id] = "";
        if (kind == "ambiguous") {
          std::string choices[] = {"The " + l + ".", ascii_upper(l), l + " " + bert::split(l, ' ')[0]};
          out[id] = choices[i % 3];
        }
        if (kind == "partial") {
          if (i % 2 == 0 && words.size() > 1) {
            std::vector<std::string> half(words.begin(), words.begin() + static_cast<long>(words.size() / 2));
            out[id] = bert::join(half, " ");
          } else {
            auto up = utf8_decode(ascii_upper(f));
            out[id] = f + " " + utf8_encode(up.substr(0, 3)) + " extra";
          }
        }
        if (kind == "unicode") {
          std::string choices[] = {replace_all(f, "e", "\u00e9"), f + " \u2013 \u00dcn\u00efc\u00f6d\u00e9",
                                   "\u0391\u0392\u0393 " + f + " the_an a\u2026"};
          out[id] = choices[i % 3];
        }
        if (kind == "missing" && i % 4 != 0) out[id] = f;
        ++i;
      }
  return out;
}

}  // namespace

TEST(TasksSquadMetrics, V1MatchesOfficialScriptOnDevSet) {
  BERT_REQUIRE_SHARED_DATA(data);
  json dataset = load_json_file(data / "squad/dev-v1.1.json", "SQuAD dataset");
  const std::pair<const char*, const char*> expected[] = {
      {"exact", "{\"exact_match\": 100.0, \"f1\": 100.0}"},
      {"empty", "{\"exact_match\": 0.02838221381267739, \"f1\": 0.0}"},
      {"ambiguous", "{\"exact_match\": 69.21475875118259, \"f1\": 93.12296599564787}"},
      {"partial", "{\"exact_match\": 2.4597918637653735, \"f1\": 62.20887663511803}"},
      {"unicode", "{\"exact_match\": 10.32166508987701, \"f1\": 59.78554726537453}"},
      {"missing", "{\"exact_match\": 74.99526963103122, \"f1\": 74.99526963103122}"},
  };
  for (const auto& [kind, want] : expected) {
    SquadEvalInput in;
    in.dataset = dataset;
    in.predictions = make_predictions(dataset, kind);
    EXPECT_EQ(py_json_dumps(evaluate_squad_v1(in).metrics), want) << kind;
  }
}

TEST(TasksSquadMetrics, V2MatchesOfficialScriptOnDevSetMadeUnanswerable) {
  BERT_REQUIRE_SHARED_DATA(data);
  json dataset = load_json_file(data / "squad/dev-v1.1.json", "SQuAD dataset");
  dataset["version"] = "v2.0";
  json preds = json::object(), na = json::object();
  size_t i = 0;
  for (auto& a : dataset["data"])
    for (auto& p : a["paragraphs"])
      for (auto& qa : p["qas"]) {
        std::string f = qa["answers"].front()["text"], l = qa["answers"].back()["text"];
        if (i % 5 == 1 || i % 5 == 3) qa["answers"] = json::array();
        std::string choices[] = {"", f, l + " extra"};
        preds[qa["id"].get<std::string>()] = choices[i % 3];
        na[qa["id"].get<std::string>()] = static_cast<double>(i * 37 % 100) / 100.0;
        ++i;
      }
  SquadEvalInput in;
  in.dataset = dataset;
  in.predictions = preds;
  const std::string base =
      "\"exact\": 33.33964049195837, \"f1\": 48.957946759780214, \"total\": 10570, \"HasAns_exact\": "
      "33.333333333333336, \"HasAns_f1\": 59.363843779701845, \"HasAns_total\": 6342, \"NoAns_exact\": "
      "33.34910122989593, \"NoAns_f1\": 33.34910122989593, \"NoAns_total\": 4228";
  const std::string best =
      ", \"best_exact\": 40.33112582781457, \"best_exact_thresh\": 0.0, \"best_f1\": 49.11130701150601, "
      "\"best_f1_thresh\": 0.95}";
  EXPECT_EQ(py_json_dumps(evaluate_squad_v2(in).metrics), "{" + base + "}");
  in.na_probs = na;
  EXPECT_EQ(py_json_dumps(evaluate_squad_v2(in).metrics), "{" + base + best);
  in.na_prob_thresh = 0.5;
  EXPECT_EQ(py_json_dumps(evaluate_squad_v2(in).metrics),
            "{\"exact\": 37.000946073793756, \"f1\": 45.07023863949579, \"total\": 10570, \"HasAns_exact\": "
            "17.218543046357617, \"HasAns_f1\": 30.66736398919415, \"HasAns_total\": 6342, \"NoAns_exact\": "
            "66.67455061494796, \"NoAns_f1\": 66.67455061494796, \"NoAns_total\": 4228" + best);
}
