// bert-train finetune end to end on tiny data written by the tests: a tiny random model saved as a
// checkpoint, a GLUE-like single-sentence task whose label is the presence of a word (the model
// must learn it), a SQuAD run through prediction and the official metrics, and bad input.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "bert/io/weights.h"
#include "bert/model/heads.h"
#include "bert/tasks/finetune.h"
#include "test_finetune_data.h"
#include "test_util.h"

namespace bert::test {
namespace {

using json = nlohmann::json;

const std::vector<std::string> kWords = {"the", "cat", "dog", "sat", "on", "a", "mat", "ran", "to", "park",
                                         "red", "blue", "big", "small", "good", "bad", "house", "tree", "who",
                                         "what", "where", "is", "was", "in", "by", "river", "paris", "john",
                                         "mary", "lives", "city", "?", ".", ","};

// vocab.txt + a random tiny BertForPreTraining checkpoint directory (no task head in it).
struct TinySetup {
  TempDir dir;
  fs::path vocab, ckpt;
  TinySetup() {
    vocab = dir / "vocab.txt";
    std::string v = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
    for (const auto& w : kWords) v += w + "\n";
    write_text(vocab, v);
    ModelConfig mc;
    mc.vocab_size = static_cast<int64_t>(5 + kWords.size());
    mc.hidden_size = 32;
    mc.num_hidden_layers = 1;
    mc.num_attention_heads = 2;
    mc.intermediate_size = 64;
    mc.max_position_embeddings = 64;
    torch::manual_seed(1);
    model::BertForPreTraining m(mc);
    ckpt = dir / "ckpt";
    io::save_model_dir(*m, mc, ckpt);
  }
};

std::string common_args(const TinySetup& s, const fs::path& out) {
  return "finetune --vocab " + s.vocab.string() + " --init-checkpoint " + s.ckpt.string() + " --output-dir " +
         out.string() + " --threads 2 --max-seq-length 32 --set train.global_batch_size=8 " +
         "--set train.micro_batch_size=4 --set logging.log_every=5";
}

TEST(TasksFinetune, GlueLearnsWordPresence) {
  TinySetup s;
  write_text(s.dir / "glue/train.tsv", sst_tsv(96, 1));
  write_text(s.dir / "glue/dev.tsv", sst_tsv(32, 2));
  write_text(s.dir / "glue/test.tsv", "index\tsentence\n0\tthe good cat\n1\tthe red dog\n");
  fs::path out = s.dir / "out";
  auto r = run_cli(common_args(s, out) + " --task sst2 --data-dir " + (s.dir / "glue").string() +
                   " --epochs 4 --set optimizer.learning_rate=5e-3 --set optimizer.warmup_proportion=0 " +
                   "--set finetune.test_file=" +
                   (s.dir / "glue/test.tsv").string());
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* f : {"config.json", "metrics.jsonl", "finetune_summary.json", "best/model.safetensors",
                        "best/config.json", "test_predictions.tsv", "eval/step_12/dev_predictions.tsv"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  json sum = json::parse(read_text(out / "finetune_summary.json"));
  EXPECT_EQ(sum["task"], "sst2");
  EXPECT_EQ(sum["evaluations"].size(), 4u);  // 96 examples / batch 8 = 12 steps per epoch, 4 epochs
  EXPECT_EQ(sum["steps"], 48);
  // The head was not in the checkpoint: initialised and reported.
  auto init = sum["init_checkpoint"]["initialised"];
  EXPECT_NE(std::find(init.begin(), init.end(), "classifier.weight"), init.end()) << init.dump();
  double best = sum["best"]["value"].get<double>();
  EXPECT_EQ(sum["best"]["metric"], "acc");
  EXPECT_GE(best, 0.85) << sum["evaluations"].dump();  // chance is 0.5
  // The summary's best metrics match what `evaluate` computes from the best step's predictions.
  std::string best_step = std::to_string(sum["best"]["step"].get<int64_t>());
  auto ev = run_cli("evaluate --task sst2 --dataset " + (s.dir / "glue/dev.tsv").string() + " --predictions " +
                    (out / "eval" / ("step_" + best_step) / "dev_predictions.tsv").string());
  ASSERT_EQ(ev.code, 0) << ev.err;
  EXPECT_DOUBLE_EQ(json::parse(ev.out)["acc"].get<double>(), best);
  // Submission file: header + one row per test example.
  std::string test = read_text(out / "test_predictions.tsv");
  EXPECT_EQ(std::count(test.begin(), test.end(), '\n'), 3) << test;
  // Step lines and eval lines in metrics.jsonl all parse.
  std::istringstream ml(read_text(out / "metrics.jsonl"));
  int steps = 0, evals = 0;
  for (std::string line; std::getline(ml, line);) {
    json j = json::parse(line);
    (j.contains("eval") ? evals : steps)++;
  }
  EXPECT_EQ(evals, 4);
  EXPECT_EQ(steps, 10);  // every 5 steps, and the last
}

TEST(TasksFinetune, SquadTrainsAndEvaluates) {
  TinySetup s;
  json data = json::object();
  data["version"] = "1.1";
  json articles = json::array();
  const std::vector<std::pair<std::string, std::string>> facts = {
      {"john", "paris"}, {"mary", "city"}, {"john", "house"}, {"mary", "park"}};
  int qid = 0;
  for (const auto& [who, where] : facts) {
    std::string ctx = "the cat sat on a mat . " + who + " lives in " + where + " by the river .";
    json qas = json::array();
    size_t at = ctx.find(" in " + where) + 4;
    qas.push_back({{"id", "q" + std::to_string(qid++)},
                   {"question", "where " + who + " lives ?"},
                   {"answers", json::array({{{"text", where}, {"answer_start", at}}})}});
    qas.push_back({{"id", "q" + std::to_string(qid++)},
                   {"question", "who lives in " + where + " ?"},
                   {"answers", json::array({{{"text", who}, {"answer_start", ctx.find(who)}}})}});
    articles.push_back({{"title", who}, {"paragraphs", json::array({{{"context", ctx}, {"qas", qas}}})}});
  }
  data["data"] = articles;
  write_text(s.dir / "squad/train-v1.1.json", data.dump());
  write_text(s.dir / "squad/dev-v1.1.json", data.dump());
  fs::path out = s.dir / "out";
  auto r = run_cli(common_args(s, out) + " --task squad --data-dir " + (s.dir / "squad").string() +
                   " --epochs 2 --set finetune.doc_stride=8 --set finetune.max_query_length=12" +
                   " --set finetune.eval_every_steps=3 --set train.global_batch_size=2 --set train.micro_batch_size=2");
  ASSERT_EQ(r.code, 0) << r.err;
  json sum = json::parse(read_text(out / "finetune_summary.json"));
  // Every 3 steps, plus one at the end when the last step is not a multiple of 3.
  const int64_t steps = sum["steps"].get<int64_t>();
  ASSERT_GE(steps, 4);
  ASSERT_EQ(sum["evaluations"].size(), static_cast<size_t>(steps / 3 + (steps % 3 ? 1 : 0)));
  for (size_t i = 0; i + 1 < sum["evaluations"].size(); ++i)
    EXPECT_EQ(sum["evaluations"][i]["step"].get<int64_t>(), 3 * static_cast<int64_t>(i + 1));
  EXPECT_EQ(sum["evaluations"].back()["step"].get<int64_t>(), steps);
  EXPECT_EQ(sum["best"]["metric"], "f1");
  EXPECT_TRUE(sum["best"]["metrics"].contains("exact_match"));
  fs::path ev = out / "eval" / ("step_" + std::to_string(sum["steps"].get<int64_t>()));
  json preds = json::parse(read_text(ev / "predictions.json"));
  EXPECT_EQ(preds.size(), 8u);
  EXPECT_TRUE(fs::exists(ev / "nbest_predictions.json"));
  EXPECT_TRUE(fs::exists(out / "best/model.safetensors"));
  auto init = sum["init_checkpoint"]["initialised"];
  EXPECT_NE(std::find(init.begin(), init.end(), "qa_outputs.weight"), init.end()) << init.dump();
}

TEST(TasksFinetune, FromConfigUsesFinetuneDefaultsOnlyWithoutConfig) {
  auto r = run_cli("finetune --task mrpc --print-config --epochs 5");
  ASSERT_EQ(r.code, 0) << r.err;
  json c = json::parse(r.out);
  EXPECT_EQ(c["optimizer"]["name"], "adamw");
  EXPECT_DOUBLE_EQ(c["optimizer"]["learning_rate"].get<double>(), 2e-5);
  EXPECT_EQ(c["train"]["epochs"], 5);  // the flag wins over the recipe's 3
  EXPECT_EQ(c["data"]["max_seq_length"], 128);
  auto q = run_cli("finetune --task squad --print-config --set optimizer.learning_rate=5e-5");
  ASSERT_EQ(q.code, 0) << q.err;
  json cq = json::parse(q.out);
  EXPECT_DOUBLE_EQ(cq["optimizer"]["learning_rate"].get<double>(), 5e-5);
  EXPECT_EQ(cq["train"]["epochs"], 2);
  EXPECT_EQ(cq["data"]["max_seq_length"], 384);
  // With --config the file decides: its micro batch 8 and log_every 50 are not replaced.
  auto f = run_cli("finetune --task squad --print-config --config " +
                   (source_dir() / "configs/finetune_squad_base.json").string());
  ASSERT_EQ(f.code, 0) << f.err;
  json cf = json::parse(f.out);
  EXPECT_EQ(cf["train"]["micro_batch_size"], 8);
  EXPECT_EQ(cf["logging"]["log_every"], 50);
}

TEST(TasksFinetune, BadInputExitsTwo) {
  TinySetup s;
  write_text(s.dir / "glue/train.tsv", sst_tsv(8, 1));
  write_text(s.dir / "glue/dev.tsv", sst_tsv(4, 2));
  fs::path out = s.dir / "out";
  auto unknown = run_cli(common_args(s, out) + " --task mrcp --data-dir " + (s.dir / "glue").string());
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("mrpc"), std::string::npos) << unknown.err;
  auto no_vocab = run_cli("finetune --task sst2 --vocab " + (s.dir / "nope.txt").string() + " --data-dir " +
                          (s.dir / "glue").string() + " --output-dir " + out.string());
  EXPECT_EQ(no_vocab.code, 2);
  EXPECT_NE(no_vocab.err.find("nope.txt"), std::string::npos) << no_vocab.err;
  auto no_train = run_cli(common_args(s, out) + " --task sst2 --data-dir " + (s.dir / "empty").string());
  EXPECT_EQ(no_train.code, 2);
  EXPECT_NE(no_train.err.find("train_file"), std::string::npos) << no_train.err;
  auto missing_file = run_cli(common_args(s, out) + " --task sst2 --set finetune.train_file=" +
                              (s.dir / "missing.tsv").string());
  EXPECT_EQ(missing_file.code, 2);
  EXPECT_NE(missing_file.err.find("missing.tsv"), std::string::npos) << missing_file.err;
  auto no_ckpt = run_cli("finetune --task sst2 --vocab " + s.vocab.string() + " --data-dir " +
                        (s.dir / "glue").string() + " --output-dir " + out.string() + " --init-checkpoint " +
                        (s.dir / "no_such_ckpt").string());
  EXPECT_EQ(no_ckpt.code, 2);
  EXPECT_NE(no_ckpt.err.find("no_such_ckpt"), std::string::npos) << no_ckpt.err;
}

}  // namespace
}  // namespace bert::test
