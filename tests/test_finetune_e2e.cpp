// bert-train finetune end to end, the cases beyond test_tasks_finetune.cpp: SQuAD v2.0 (training on
// [CLS], null odds, HasAns/NoAns metrics), SQuAD test-file prediction, STS-B regression, sequences
// shorter than the pretraining masked-position count, initialisation from our pretraining run, an
// HF directory written by `convert` and a Google TF checkpoint, and bad input (malformed JSON/TSV
// naming file and line, SQuAD answers not at their offset counted and skipped).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "bert/io/safetensors.h"
#include "test_finetune_data.h"
#include "test_util.h"

namespace bert::test {
namespace {

using json = nlohmann::json;

const std::vector<std::string> kWords = {"the", "cat", "dog", "sat", "on", "a", "mat", "ran", "to", "park",
                                         "red", "blue", "big", "small", "good", "bad", "house", "tree", "who",
                                         "what", "where", "is", "was", "in", "by", "river", "paris", "john",
                                         "mary", "lives", "city", "?", ".", ","};

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

// vocab.txt with the words above, and the tiny architecture every run here uses.
struct Tiny {
  TempDir dir;
  fs::path vocab, model_config;
  Tiny() {
    vocab = dir / "vocab.txt";
    std::string v = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
    for (const auto& w : kWords) v += w + "\n";
    write_text(vocab, v);
    model_config = dir / "bert_config.json";
    write_text(model_config, json({{"vocab_size", 5 + kWords.size()},
                                   {"hidden_size", 32},
                                   {"num_hidden_layers", 1},
                                   {"num_attention_heads", 2},
                                   {"intermediate_size", 64},
                                   {"max_position_embeddings", 64}})
                                 .dump());
  }
  // Common finetune flags: random init from the model config unless `init` is given.
  std::string args(const fs::path& out, const std::string& init = "", int seq = 32) const {
    return "finetune --vocab " + q(vocab) +
           (init.empty() ? " --model-config " + q(model_config) : " --init-checkpoint " + init) + " --output-dir " +
           q(out) + " --threads 1 --max-seq-length " + std::to_string(seq) + " --set train.global_batch_size=8" +
           " --set train.micro_batch_size=4 --set logging.log_every=5";
  }
};

json summary_of(const fs::path& out) { return json::parse(read_text(out / "finetune_summary.json")); }

bool contains(const json& list, const std::string& s) { return std::find(list.begin(), list.end(), s) != list.end(); }

// MRPC layout: Quality, #1 ID, #2 ID, #1 String, #2 String; label 1 when both mention the same animal.
std::string mrpc_tsv(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> animals = {"cat", "dog"}, rest = {"sat", "on", "a", "mat", "ran", "to", "park"};
  std::ostringstream o;
  o << "\xEF\xBB\xBFQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n";
  for (int i = 0; i < n; ++i) {
    std::string a = animals[rng() % 2], b = i % 2 == 0 ? a : (a == "cat" ? "dog" : "cat");
    o << (a == b ? 1 : 0) << "\t" << i << "\t" << i + 1000 << "\tthe " << a << " " << rest[rng() % rest.size()]
      << "\ta " << b << " " << rest[rng() % rest.size()] << "\n";
  }
  return o.str();
}

// A SQuAD file: per fact one answerable "where" question; v2.0 adds an unanswerable one per
// context ("what is red ?"), marked is_impossible with no answers. The answer is in the first
// words of a 37-word context, so at seq 32 with stride 8 only the first of 3 windows holds it.
json squad_json(bool v2) {
  const std::vector<std::pair<std::string, std::string>> facts = {
      {"john", "paris"}, {"mary", "city"}, {"john", "house"}, {"mary", "park"}};
  json articles = json::array();
  int qid = 0;
  for (const auto& [who, where] : facts) {
    std::string ctx = who + " lives in " + where + " by the river . the cat sat on a mat . the big dog ran to a" +
                      " park . the small red cat sat on the blue mat by the tree .";
    json qas = json::array();
    qas.push_back({{"id", "q" + std::to_string(qid++)},
                   {"question", "where " + who + " lives ?"},
                   {"answers", json::array({{{"text", where}, {"answer_start", ctx.find(" in " + where) + 4}}})}});
    if (v2) {
      qas.push_back({{"id", "q" + std::to_string(qid++)},
                     {"question", "what is red ?"},
                     {"is_impossible", true},
                     {"answers", json::array()}});
    }
    articles.push_back({{"title", who}, {"paragraphs", json::array({{{"context", ctx}, {"qas", qas}}})}});
  }
  return {{"version", v2 ? "v2.0" : "1.1"}, {"data", articles}};
}

TEST(FinetuneE2E, SquadV2TrainsOnClsWritesNullOddsAndPredictsTestFile) {
  Tiny t;
  json data = squad_json(true);
  write_text(t.dir / "squad/train-v2.0.json", data.dump());
  write_text(t.dir / "squad/dev-v2.0.json", data.dump());
  fs::path out = t.dir / "out";
  auto r = run_cli(t.args(out) + " --task squad --data-dir " + q(t.dir / "squad") +
                   " --set finetune.version_2_with_negative=true --epochs 2 --set finetune.doc_stride=8" +
                   " --set finetune.max_query_length=12 --set optimizer.learning_rate=1e-3" +
                   " --set finetune.test_file=" + q(t.dir / "squad/dev-v2.0.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  json sum = summary_of(out);
  // v2.0 keeps every window: those without the answer (and the unanswerable questions) train on
  // [CLS], so the training set has exactly the windows the same file gives for evaluation.
  EXPECT_EQ(sum["data"]["windows_dropped_without_answer"], 0);
  EXPECT_EQ(sum["train_examples"], 8);
  EXPECT_EQ(sum["train_features"], sum["dev_features"]);
  EXPECT_EQ(sum["dev_features"], 24);  // 3 windows per question
  const int64_t steps = sum["steps"].get<int64_t>();
  fs::path ev = out / "eval" / ("step_" + std::to_string(steps));
  for (const char* f : {"predictions.json", "nbest_predictions.json", "null_odds.json"})
    EXPECT_TRUE(fs::exists(ev / f)) << f;
  json odds = json::parse(read_text(ev / "null_odds.json"));
  EXPECT_EQ(odds.size(), 8u);
  EXPECT_TRUE(odds["q1"].is_number());
  // The v2.0 metrics, split by answerable / unanswerable.
  json best = sum["best"]["metrics"];
  EXPECT_EQ(sum["best"]["metric"], "f1");
  for (const char* k : {"exact", "f1", "HasAns_exact", "HasAns_f1", "NoAns_exact", "NoAns_f1"})
    EXPECT_TRUE(best.contains(k)) << best.dump();
  EXPECT_EQ(best["HasAns_total"], 4);
  EXPECT_EQ(best["NoAns_total"], 4);
  // The standalone evaluator prints the same split from the saved files.
  auto e = run_cli("evaluate --task squad --version 2.0 --dataset " + q(t.dir / "squad/dev-v2.0.json") +
                   " --predictions " + q(ev / "predictions.json") + " --na-prob-file " + q(ev / "null_odds.json"));
  ASSERT_EQ(e.code, 0) << e.err;
  json printed = json::parse(e.out);
  EXPECT_EQ(printed["NoAns_total"], 4);
  EXPECT_DOUBLE_EQ(printed["f1"].get<double>(), sum["evaluations"].back()["metrics"]["f1"].get<double>());
  // The test file is predicted by the reloaded best model: same files, same scores as its evaluation.
  for (const char* f : {"predictions.json", "nbest_predictions.json", "null_odds.json"})
    EXPECT_TRUE(fs::exists(out / "test" / f)) << f;
  ASSERT_TRUE(sum["test"].is_object()) << sum.dump();
  EXPECT_EQ(sum["test"]["metrics"]["f1"], best["f1"]);
  EXPECT_EQ(sum["test"]["metrics"]["exact"], best["exact"]);
  // The best evaluation is the one with the highest F1, and the summary names its step.
  double top = -1;
  int64_t top_step = -1;
  for (const auto& ev_i : sum["evaluations"])
    if (ev_i["metrics"]["f1"].get<double>() > top) {
      top = ev_i["metrics"]["f1"].get<double>();
      top_step = ev_i["step"].get<int64_t>();
    }
  EXPECT_EQ(sum["best"]["step"], top_step);
  EXPECT_NE(r.err.find("best f1"), std::string::npos) << r.err;
}

TEST(FinetuneE2E, SquadTestFileWithoutAnswersIsPredictedNotScored) {
  Tiny t;
  json data = squad_json(false);
  write_text(t.dir / "train.json", data.dump());
  json test = data;
  for (auto& a : test["data"])
    for (auto& p : a["paragraphs"])
      for (auto& qa : p["qas"]) qa.erase("answers");
  write_text(t.dir / "test.json", test.dump());
  fs::path out = t.dir / "out";
  auto r = run_cli(t.args(out) + " --task squad --set finetune.train_file=" + q(t.dir / "train.json") +
                   " --set finetune.dev_file=" + q(t.dir / "train.json") + " --set finetune.test_file=" +
                   q(t.dir / "test.json") + " --max-steps 2 --set finetune.doc_stride=8" +
                   " --set finetune.max_query_length=12");
  ASSERT_EQ(r.code, 0) << r.err;
  json preds = json::parse(read_text(out / "test" / "predictions.json"));
  EXPECT_EQ(preds.size(), 4u);
  EXPECT_TRUE(preds.contains("q0"));
  EXPECT_FALSE(fs::exists(out / "test" / "null_odds.json"));
  json sum = summary_of(out);
  EXPECT_FALSE(sum["test"].contains("metrics")) << sum["test"].dump();
  // A missing test file is a usage error naming it.
  auto missing = run_cli(t.args(t.dir / "out2") + " --task squad --set finetune.train_file=" + q(t.dir / "train.json") +
                         " --set finetune.dev_file=" + q(t.dir / "train.json") + " --set finetune.test_file=" +
                         q(t.dir / "nope.json") + " --max-steps 1");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("nope.json"), std::string::npos) << missing.err;
}

TEST(FinetuneE2E, StsbRegressionReportsPearsonAndSpearman) {
  Tiny t;
  // Score = 5 when both sentences name the same animal, else 0 (plus the header GLUE writes).
  auto tsv = [](int n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<std::string> animals = {"cat", "dog"};
    std::ostringstream o;
    o << "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n";
    for (int i = 0; i < n; ++i) {
      std::string a = animals[rng() % 2], b = i % 2 == 0 ? a : (a == "cat" ? "dog" : "cat");
      o << i << "\tmain-captions\tMSRvid\t2012test\t" << i << "\tnone\tnone\tthe " << a << " sat\ta " << b
        << " ran\t" << (a == b ? "5.000" : "0.000") << "\n";
    }
    return o.str();
  };
  write_text(t.dir / "STS-B/train.tsv", tsv(32, 1));
  write_text(t.dir / "STS-B/dev.tsv", tsv(16, 2));
  write_text(t.dir / "STS-B/test.tsv",
             "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\n"
             "0\tmain-captions\tMSRvid\t2012test\t0\tnone\tnone\tthe cat sat\ta dog ran\n");
  fs::path out = t.dir / "out";
  auto r = run_cli(t.args(out) + " --task stsb --data-dir " + q(t.dir.path) + " --epochs 2" +
                   " --set optimizer.learning_rate=1e-3 --set finetune.test_file=" + q(t.dir / "STS-B/test.tsv"));
  ASSERT_EQ(r.code, 0) << r.err;
  json sum = summary_of(out);
  EXPECT_EQ(sum["best"]["metric"], "corr");
  json m = sum["best"]["metrics"];
  for (const char* k : {"pearson", "spearmanr", "corr"}) EXPECT_TRUE(m[k].is_number()) << m.dump();
  EXPECT_DOUBLE_EQ(m["corr"].get<double>(), (m["pearson"].get<double>() + m["spearmanr"].get<double>()) / 2);
  // A regression head: one output.
  auto st = io::load_safetensors(out / "best" / "model.safetensors");
  bool found = false;
  for (const auto& [name, tensor] : st.tensors)
    if (name == "classifier.weight") {
      found = true;
      EXPECT_EQ(tensor.size(0), 1);
    }
  EXPECT_TRUE(found);
  // Dev predictions are scores; the submission has a score per test line.
  std::string dev = read_text(out / "eval" / "step_4" / "dev_predictions.tsv");
  EXPECT_EQ(std::count(dev.begin(), dev.end(), '\n'), 17) << dev;
  std::string sub = read_text(out / "test_predictions.tsv");
  EXPECT_EQ(sub.rfind("index\tprediction\n0\t", 0), 0u) << sub;
}

TEST(FinetuneE2E, SequencesShorterThanThePretrainingMaskCount) {
  // data.max_predictions_per_seq (default 20) is a pretraining setting: fine-tuning at 16 runs.
  Tiny t;
  write_text(t.dir / "glue/train.tsv", sst_tsv(16, 1));
  write_text(t.dir / "glue/dev.tsv", sst_tsv(8, 2));
  fs::path out = t.dir / "out";
  auto r = run_cli(t.args(out, "", 16) + " --task sst2 --data-dir " + q(t.dir / "glue") + " --epochs 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(read_text(out / "config.json"))["data"]["max_seq_length"], 16);
  EXPECT_EQ(summary_of(out)["steps"], 2);
  // Pretraining still rejects it, naming both keys.
  auto p = run_cli("pretrain --model-config " + q(t.model_config) + " --synthetic-data --set data.max_seq_length=16" +
                   " --max-steps 1 --threads 1 --output-dir " + q(t.dir / "pre"));
  EXPECT_EQ(p.code, 2) << p.err;
  EXPECT_NE(p.err.find("max_predictions_per_seq"), std::string::npos) << p.err;
}

// Pretrains the tiny model for a few steps on synthetic batches (our run directory).
fs::path pretrain_tiny(const Tiny& t) {
  fs::path run = t.dir / "pretrain";
  auto r = run_cli("pretrain --model-config " + q(t.model_config) +
                   " --synthetic-data --set data.max_seq_length=32 --set data.max_predictions_per_seq=5" +
                   " --set train.global_batch_size=8 --set train.micro_batch_size=8 --set train.seed=3" +
                   " --max-steps 3 --threads 1 --output-dir " + q(run));
  EXPECT_EQ(r.code, 0) << r.err;
  return run;
}

torch::Tensor tensor_named(const fs::path& file, const std::string& suffix) {
  for (const auto& [name, tensor] : io::load_safetensors(file).tensors)
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return tensor;
  ADD_FAILURE() << "no tensor *" << suffix << " in " << file;
  return {};
}

TEST(FinetuneE2E, FromOurPretrainingRunLoadsEncoderAndReportsHeads) {
  Tiny t;
  fs::path run = pretrain_tiny(t);
  ASSERT_TRUE(fs::exists(run / "checkpoints" / "step_3" / "model.safetensors"));
  write_text(t.dir / "MRPC/train.tsv", mrpc_tsv(32, 1));
  write_text(t.dir / "MRPC/dev.tsv", mrpc_tsv(16, 2));
  fs::path out = t.dir / "out";
  // The run directory itself: its checkpoints/latest and that checkpoint's model config are used.
  auto r = run_cli(t.args(out, q(run)) + " --task mrpc --data-dir " + q(t.dir.path) +
                   " --epochs 1 --set optimizer.weight_decay=0 --set optimizer.learning_rate=1e-3");
  ASSERT_EQ(r.code, 0) << r.err;
  json sum = summary_of(out);
  json init = sum["init_checkpoint"];
  EXPECT_GT(init["loaded"].get<int64_t>(), 10) << init.dump();
  EXPECT_TRUE(contains(init["initialised"], "classifier.weight")) << init.dump();
  EXPECT_TRUE(contains(init["initialised"], "classifier.bias")) << init.dump();
  bool cls_unexpected = false;
  for (const auto& u : init["unexpected"])
    cls_unexpected = cls_unexpected || u.get<std::string>().rfind("cls.", 0) == 0;
  EXPECT_TRUE(cls_unexpected) << init.dump();
  EXPECT_NE(r.err.find("classifier.weight"), std::string::npos) << r.err;  // reported in the log
  EXPECT_EQ(sum["steps"], 4);
  // Position rows beyond --max-seq-length 32 get no gradient and (weight decay 0) keep the
  // pretrained values exactly; the rows in use were trained.
  const std::string pos = "embeddings.position_embeddings.weight";
  auto pre = tensor_named(run / "checkpoints" / "step_3" / "model.safetensors", pos);
  auto ft = tensor_named(out / "best" / "model.safetensors", pos);
  ASSERT_TRUE(pre.defined() && ft.defined());
  EXPECT_TRUE(torch::equal(pre.slice(0, 32), ft.slice(0, 32)));
  EXPECT_FALSE(torch::equal(pre.slice(0, 0, 32), ft.slice(0, 0, 32)));
}

TEST(FinetuneE2E, FromAnHfDirectoryWrittenByConvert) {
  Tiny t;
  fs::path run = pretrain_tiny(t);
  fs::path hf = t.dir / "hf";
  auto c = run_cli("convert --input " + q(run / "checkpoints" / "step_3") + " --to hf --output-dir " + q(hf) +
                   " --vocab " + q(t.vocab));
  ASSERT_EQ(c.code, 0) << c.err;
  ASSERT_TRUE(fs::exists(hf / "config.json") && fs::exists(hf / "model.safetensors"));
  write_text(t.dir / "squad/train-v1.1.json", squad_json(false).dump());
  write_text(t.dir / "squad/dev-v1.1.json", squad_json(false).dump());
  fs::path out = t.dir / "out";
  // No --vocab: vocab.txt next to the checkpoint is used.
  std::string args = t.args(out, q(hf));
  args.replace(args.find("--vocab " + q(t.vocab)), ("--vocab " + q(t.vocab)).size(), "");
  auto r = run_cli(args + " --task squad --data-dir " + q(t.dir / "squad") + " --max-steps 2" +
                   " --set finetune.doc_stride=8 --set finetune.max_query_length=12 --set optimizer.weight_decay=0");
  ASSERT_EQ(r.code, 0) << r.err;
  json init = summary_of(out)["init_checkpoint"];
  EXPECT_GT(init["loaded"].get<int64_t>(), 10) << init.dump();
  EXPECT_TRUE(contains(init["initialised"], "qa_outputs.weight")) << init.dump();
  EXPECT_TRUE(contains(init["initialised"], "qa_outputs.bias")) << init.dump();
  const std::string pos = "embeddings.position_embeddings.weight";
  auto pre = tensor_named(run / "checkpoints" / "step_3" / "model.safetensors", pos);
  auto ft = tensor_named(out / "best" / "model.safetensors", pos);
  ASSERT_TRUE(pre.defined() && ft.defined());
  EXPECT_TRUE(torch::equal(pre.slice(0, 32), ft.slice(0, 32)));  // loaded, then never in use
}

TEST(FinetuneE2E, FromTheSharedGoogleTfCheckpoint) {
  BERT_REQUIRE_SHARED_DATA(data);
  fs::path tf = data / "tf_checkpoint";
  if (!fs::exists(tf / "bert_model.ckpt.index")) GTEST_SKIP() << "no tf_checkpoint in ../shared/data";
  TempDir d;
  // Its vocab: all work and no play makes jack a dull boy; max_position_embeddings 16.
  std::ostringstream tsv;
  tsv << "sentence\tlabel\n";
  for (int i = 0; i < 16; ++i) tsv << (i % 2 ? "all work and no play" : "jack a dull boy") << "\t" << i % 2 << "\n";
  write_text(d / "train.tsv", tsv.str());
  write_text(d / "dev.tsv", tsv.str());
  fs::path out = d / "out";
  auto r = run_cli("finetune --task sst2 --data-dir " + q(d.path) + " --init-checkpoint " + q(tf / "bert_model.ckpt") +
                   " --output-dir " + q(out) + " --threads 1 --max-seq-length 16 --epochs 1" +
                   " --set train.global_batch_size=8 --set train.micro_batch_size=8");
  ASSERT_EQ(r.code, 0) << r.err;
  json sum = summary_of(out);
  json init = sum["init_checkpoint"];
  EXPECT_GT(init["loaded"].get<int64_t>(), 10) << init.dump();
  EXPECT_TRUE(contains(init["initialised"], "classifier.weight")) << init.dump();
  EXPECT_EQ(json::parse(read_text(out / "best" / "config.json"))["hidden_size"], 4);
  EXPECT_EQ(sum["steps"], 2);
}

TEST(FinetuneE2E, BadInputNamesFileAndLine) {
  Tiny t;
  fs::path out = t.dir / "out";
  // Malformed SQuAD JSON: the file and the line of the error.
  write_text(t.dir / "bad.json", "{\n  \"version\": \"1.1\",\n  \"data\": [ {\"title\": } ]\n}\n");
  auto j = run_cli(t.args(out) + " --task squad --set finetune.train_file=" + q(t.dir / "bad.json") +
                   " --set finetune.dev_file=" + q(t.dir / "bad.json") + " --max-steps 1");
  EXPECT_EQ(j.code, 2);
  EXPECT_NE(j.err.find("bad.json"), std::string::npos) << j.err;
  EXPECT_NE(j.err.find("line 3"), std::string::npos) << j.err;
  // A TSV line with too few columns: file:line.
  write_text(t.dir / "glue/train.tsv", "sentence\tlabel\nthe cat\t1\nthe dog\n");
  write_text(t.dir / "glue/dev.tsv", sst_tsv(4, 2));
  auto s = run_cli(t.args(out) + " --task sst2 --data-dir " + q(t.dir / "glue") + " --max-steps 1");
  EXPECT_EQ(s.code, 2);
  EXPECT_NE(s.err.find("train.tsv:3"), std::string::npos) << s.err;
  // SQuAD answers whose text is not at answer_start are reported and skipped, and counted.
  json data = squad_json(false);
  data["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] = 0;  // "the", not "paris"
  data["data"][1]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] = 10000;  // outside the context
  write_text(t.dir / "train.json", data.dump());
  write_text(t.dir / "dev.json", squad_json(false).dump());
  auto a = run_cli(t.args(out) + " --task squad --set finetune.train_file=" + q(t.dir / "train.json") +
                   " --set finetune.dev_file=" + q(t.dir / "dev.json") + " --max-steps 1" +
                   " --set finetune.doc_stride=8 --set finetune.max_query_length=12");
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_NE(a.err.find("Could not find answer"), std::string::npos) << a.err;
  EXPECT_NE(a.err.find("2 question(s) skipped"), std::string::npos) << a.err;
  json sum = summary_of(out);
  EXPECT_EQ(sum["data"]["skipped_bad_answers"], 2);
  EXPECT_EQ(sum["data"]["train_questions"], 4);
  EXPECT_EQ(sum["train_examples"], 2);
}

}  // namespace
}  // namespace bert::test
