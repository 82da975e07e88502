// `bert-train prepare` and `bert-train shard` through the real binary on a tiny corpus and vocab
// written by the test; one bad-input case per command (exit 2, one line, no shard).
#include <nlohmann/json.hpp>
#include <regex>

#include "bert/data/hdf5_io.h"
#include "test_util.h"

using namespace bert::test;
namespace fs = std::filesystem;

namespace {

void write_tiny_inputs(const TempDir& tmp, bool with_mask_token = true) {
  std::string vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n" + std::string(with_mask_token ? "[MASK]\n" : "");
  for (const char* w : {"the", "cat", "sat", "on", "mat", "a", "dog", "ran", "to", "park", "it", "was", "happy",
                        "sun", "shone", "bright", "##ly", "##s", ".", ",", "play", "##ed", "and", "home"})
    vocab += std::string(w) + "\n";
  write_text(tmp / "vocab.txt", vocab);
  std::string corpus;
  const char* sentences[] = {"The cat sat on the mat.", "A dog ran to the park.", "It was happy.",
                             "The sun shone brightly.", "The dogs played, and the cat ran home."};
  for (int d = 0; d < 12; ++d) {
    for (int s = 0; s < 3 + d % 4; ++s) corpus += std::string(sentences[(d + s) % 5]) + "\n";
    corpus += "\n";
  }
  write_text(tmp / "corpus.txt", corpus);
}

int64_t rows_in(const fs::path& dir) {
  int64_t n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".hdf5") n += bert::data::Hdf5Reader(e.path()).size();
  return n;
}

}  // namespace

TEST(DataCli, PrepareThenShardEndToEnd) {
  TempDir tmp;
  write_tiny_inputs(tmp);
  std::string out = (tmp / "out").string();
  auto r = run_cli("prepare --input " + (tmp / "corpus.txt").string() + " --vocab " + (tmp / "vocab.txt").string() +
                   " --output-dir " + out +
                   " --max-seq-length 32 --max-predictions-per-seq 5 --dupe-factor 3 --num-shards 2 --num-workers 2"
                   " --whole-word-mask --compress");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("instances/s"), std::string::npos) << r.err;
  auto m = nlohmann::json::parse(read_text(tmp / "out/manifest.json"));
  // The final summary states every count the issue asks for, matching the manifest's totals.
  const auto& T = m["totals"];
  std::smatch sm;
  ASSERT_TRUE(std::regex_search(r.err, sm,
                                std::regex("(\\d+) documents, (\\d+) sentences, (\\d+) instances, (\\d+) tokens; "
                                           "average real length ([0-9.]+) of 32, padding ([0-9.]+)%, (\\d+) masked "
                                           "tokens \\([0-9.]+ per instance\\), random next ([0-9.]+)%")))
      << r.err;
  EXPECT_EQ(std::stoll(sm[1]), T["documents"].get<int64_t>());
  EXPECT_EQ(std::stoll(sm[1]), 12);
  EXPECT_EQ(std::stoll(sm[2]), T["sentences"].get<int64_t>());
  EXPECT_EQ(std::stoll(sm[3]), T["instances"].get<int64_t>());
  EXPECT_EQ(std::stoll(sm[4]), T["tokens"].get<int64_t>());
  const double n = T["instances"].get<double>();
  EXPECT_NEAR(std::stod(sm[5]), T["tokens"].get<double>() / n, 0.05);
  EXPECT_NEAR(std::stod(sm[6]), 100 * T["padding"].get<double>() / (32 * n), 0.05);
  EXPECT_EQ(std::stoll(sm[7]), T["masked"].get<int64_t>());
  EXPECT_NEAR(std::stod(sm[8]), 100 * T["random_next"].get<double>() / n, 0.05);
  EXPECT_EQ(T["tokens"].get<int64_t>() + T["padding"].get<int64_t>(), 32 * T["instances"].get<int64_t>());
  ASSERT_EQ(m["shards"].size(), 2u);
  int64_t total = m["totals"]["instances"].get<int64_t>();
  EXPECT_GT(total, 12);
  EXPECT_EQ(rows_in(tmp / "out"), total);
  bert::data::Hdf5Reader first(tmp / "out/shard_00000.hdf5");
  EXPECT_EQ(first.seq_length(), 32);
  EXPECT_EQ(first.max_predictions(), 5);
  bert::data::PretrainRows x;
  first.read(0, 1, x);
  EXPECT_EQ(x.input_ids[0], 2);  // [CLS] from the vocab file
  EXPECT_EQ(m["settings"]["vocab_size"].get<int>(), 29);

  // Same command again: nothing rebuilt.
  auto again = run_cli("prepare --input " + (tmp / "corpus.txt").string() + " --vocab " +
                       (tmp / "vocab.txt").string() + " --output-dir " + out +
                       " --max-seq-length 32 --max-predictions-per-seq 5 --dupe-factor 3 --num-shards 2"
                       " --num-workers 1 --whole-word-mask --compress");
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.err.find("2 of 2 shard(s) already complete"), std::string::npos) << again.err;

  auto s = run_cli("shard --input '" + out + "/shard_*.hdf5' --output-dir " + (tmp / "re").string() +
                   " --num-shards 3");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(rows_in(tmp / "re"), total);
  EXPECT_TRUE(fs::exists(tmp / "re/shard_00002.hdf5"));
}

TEST(DataCli, BadInputExitsTwoWithOneLineAndNoShard) {
  TempDir tmp;
  write_tiny_inputs(tmp, /*with_mask_token=*/false);
  auto r = run_cli("prepare --input " + (tmp / "corpus.txt").string() + " --vocab " + (tmp / "vocab.txt").string() +
                   " --output-dir " + (tmp / "out").string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("[MASK]"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "out/shard_00000.hdf5"));

  write_tiny_inputs(tmp);
  r = run_cli("prepare --input " + (tmp / "missing.txt").string() + " --vocab " + (tmp / "vocab.txt").string() +
              " --output-dir " + (tmp / "out").string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("missing.txt"), std::string::npos) << r.err;

  write_text(tmp / "bad.hdf5", "not hdf5");
  r = run_cli("shard --input " + (tmp / "bad.hdf5").string() + " --output-dir " + (tmp / "re").string() +
              " --num-shards 2");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("bad.hdf5"), std::string::npos) << r.err;
}

TEST(DataCli, PrepareOnSharedSampleTextAndWikitext) {
  BERT_REQUIRE_SHARED_DATA(data);
  TempDir tmp;
  auto r = run_cli("prepare --input " + (data / "corpus/sample_text.txt").string() + " --vocab " +
                   (data / "vocab/bert-base-uncased-vocab.txt").string() + " --output-dir " +
                   (tmp / "out").string() + " --dupe-factor 2 --num-shards 1");
  ASSERT_EQ(r.code, 0) << r.err;
  auto m = nlohmann::json::parse(read_text(tmp / "out/manifest.json"));
  EXPECT_GT(m["totals"]["instances"].get<int64_t>(), 10);
  EXPECT_GT(m["totals"]["documents"].get<int64_t>(), 1);

  // wikitext in paragraph form: one document per ` = Title = ` article (60 in the valid split).
  r = run_cli("prepare --input " + (data / "corpus/wikitext-2-valid.txt").string() + " --input-format paragraphs" +
              " --vocab " + (data / "vocab/bert-base-uncased-vocab.txt").string() + " --output-dir " +
              (tmp / "wiki").string() + " --dupe-factor 1 --num-shards 2");
  ASSERT_EQ(r.code, 0) << r.err;
  m = nlohmann::json::parse(read_text(tmp / "wiki/manifest.json"));
  EXPECT_EQ(m["totals"]["documents"].get<int64_t>(), 60);
  EXPECT_GT(m["totals"]["sentences"].get<int64_t>(), 5000);
  EXPECT_EQ(m["shards"].size(), 2u);
}
