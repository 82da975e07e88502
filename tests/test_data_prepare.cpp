// run_prepare end to end on generated corpora with a small fake tokenizer (space-separated
// vocab words): schema and row invariants, manifest, determinism across worker counts, resume
// after an interruption, rebuild on changed settings, and bad input.
#include <map>

#include "bert/common/error.h"
#include "bert/data/hdf5_io.h"
#include "bert/data/instances_rng.h"
#include "bert/data/prepare.h"
#include "bert/data/prepare_md5.h"
#include "test_util.h"

using namespace bert;
using namespace bert::data;
using bert::test::TempDir;
namespace fs = std::filesystem;

namespace {

// ids: 0 [PAD] 1 [UNK] 2 [CLS] 3 [SEP] 4 [MASK], then w0..w199, then ##p0..##p19, then "."
std::vector<std::string> fake_vocab_tokens() {
  std::vector<std::string> v{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (int i = 0; i < 200; ++i) v.push_back("w" + std::to_string(i));
  for (int i = 0; i < 20; ++i) v.push_back("##p" + std::to_string(i));
  v.push_back(".");
  return v;
}

PrepareTokenizer fake_tokenizer() {
  PrepareTokenizer t;
  t.vocab_tokens = fake_vocab_tokens();
  t.cls_id = 2;
  t.sep_id = 3;
  t.mask_id = 4;
  auto index = std::make_shared<std::map<std::string, int32_t, std::less<>>>();
  for (size_t i = 0; i < t.vocab_tokens.size(); ++i) (*index)[t.vocab_tokens[i]] = static_cast<int32_t>(i);
  t.encode = [index](std::string_view text, uint64_t*) {
    std::vector<int32_t> ids;
    size_t p = 0;
    while (p < text.size()) {
      size_t q = text.find(' ', p);
      if (q == std::string_view::npos) q = text.size();
      if (q > p) {
        auto it = index->find(text.substr(p, q - p));
        ids.push_back(it == index->end() ? 1 : it->second);
      }
      p = q + 1;
    }
    return ids;
  };
  return t;
}

// Google's format: one sentence per line, blank line between documents.
std::string fake_corpus(int docs, uint64_t seed) {
  Rng rng(seed);
  std::string out;
  for (int d = 0; d < docs; ++d) {
    int sentences = static_cast<int>(rng.randint(1, 25));
    for (int s = 0; s < sentences; ++s) {
      int words = static_cast<int>(rng.randint(2, 14));
      for (int w = 0; w < words; ++w) {
        out += "w" + std::to_string(rng.randint(0, 199));
        if (rng.uniform() < 0.3) out += " ##p" + std::to_string(rng.randint(0, 19));
        out += ' ';
      }
      out += ".\n";
    }
    out += "\n";
  }
  return out;
}

PrepareConfig base_config(const TempDir& tmp) {
  bert::test::write_text(tmp / "in/a.txt", fake_corpus(60, 1));
  bert::test::write_text(tmp / "in/b.txt", fake_corpus(40, 2));
  PrepareConfig c;
  c.inputs = {(tmp / "in/*.txt").string()};
  c.vocab = "fake";
  c.output_dir = (tmp / "out").string();
  c.max_seq_length = 64;
  c.max_predictions_per_seq = 10;
  c.dupe_factor = 2;
  c.num_shards = 4;
  c.num_workers = 2;
  return c;
}

std::map<std::string, std::string> shard_md5s(const fs::path& dir) {
  std::map<std::string, std::string> m;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".hdf5") m[e.path().filename().string()] = md5_file(e.path());
  return m;
}

int count_final_shards(const fs::path& dir) {
  int n = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); ++it)
    if (it->path().extension() == ".hdf5") ++n;
  return n;
}

std::string user_error(const PrepareConfig& c) {
  try {
    run_prepare(c, fake_tokenizer());
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(DataPrepare, ShardsFollowTheSchemaAndMatchTheManifest) {
  TempDir tmp;
  PrepareConfig c = base_config(tmp);
  PrepareSummary s = run_prepare(c, fake_tokenizer());
  ASSERT_EQ(s.shards.size(), 4u);
  EXPECT_EQ(s.totals.documents, 100u);
  auto manifest = nlohmann::json::parse(bert::test::read_text(tmp / "out/manifest.json"));
  EXPECT_TRUE(manifest["complete"].get<bool>());
  ASSERT_EQ(manifest["shards"].size(), 4u);
  uint64_t rows = 0, masked = 0, random_next = 0;
  for (const auto& e : manifest["shards"]) {
    fs::path p = tmp / "out" / e["file"].get<std::string>();
    EXPECT_EQ(md5_file(p), e["md5"].get<std::string>());
    Hdf5Reader r(p);
    EXPECT_EQ(static_cast<uint64_t>(r.size()), e["instances"].get<uint64_t>());
    EXPECT_EQ(r.seq_length(), 64);
    EXPECT_EQ(r.max_predictions(), 10);
    PretrainRows x;
    r.read(0, r.size(), x);
    const int64_t L = 64, P = 10;
    for (int64_t i = 0; i < x.rows; ++i) {
      int64_t len = 0;
      while (len < L && x.input_mask[i * L + len]) ++len;
      for (int64_t t = len; t < L; ++t) {
        ASSERT_EQ(x.input_mask[i * L + t], 0) << "mask not a prefix";
        ASSERT_EQ(x.input_ids[i * L + t], 0) << "padding not zero";
        ASSERT_EQ(x.segment_ids[i * L + t], 0);
      }
      ASSERT_GE(len, 5);
      EXPECT_EQ(x.input_ids[i * L], 2);            // [CLS]
      EXPECT_EQ(x.input_ids[i * L + len - 1], 3);  // [SEP]
      EXPECT_EQ(x.segment_ids[i * L], 0);
      EXPECT_EQ(x.segment_ids[i * L + len - 1], 1);
      int64_t npred = 0;
      for (int64_t k = 0; k < P; ++k) {
        int32_t pos = x.masked_lm_positions[i * P + k], id = x.masked_lm_ids[i * P + k];
        if (pos == 0) {  // padding from here on
          EXPECT_EQ(id, 0);
          continue;
        }
        ++npred;
        EXPECT_LT(pos, len - 1) << "mask on padding or the final [SEP]";
        EXPECT_NE(id, 2);
        EXPECT_NE(id, 3);
        EXPECT_GE(id, 5);
      }
      EXPECT_GE(npred, 1);
      masked += npred;
      random_next += x.next_sentence_labels[i];
    }
    rows += x.rows;
  }
  EXPECT_EQ(rows, s.totals.instances);
  EXPECT_EQ(masked, s.totals.masked);
  EXPECT_EQ(random_next, s.totals.random_next);
  EXPECT_EQ(manifest["totals"]["instances"].get<uint64_t>(), rows);
}

TEST(DataPrepare, ByteIdenticalWhateverTheWorkerCount) {
  TempDir tmp;
  PrepareConfig c = base_config(tmp);
  c.num_workers = 1;
  run_prepare(c, fake_tokenizer());
  auto one = shard_md5s(tmp / "out");
  c.output_dir = (tmp / "out3").string();
  c.num_workers = 3;
  run_prepare(c, fake_tokenizer());
  auto three = shard_md5s(tmp / "out3");
  EXPECT_EQ(one.size(), 4u);
  EXPECT_EQ(one, three);
  c.output_dir = (tmp / "other_seed").string();
  c.random_seed = 999;
  run_prepare(c, fake_tokenizer());
  EXPECT_NE(shard_md5s(tmp / "other_seed"), one);
}

// --compress encodes chunks on the worker threads: still byte-identical for any worker count,
// and decoding gives exactly the rows of the uncompressed run.
TEST(DataPrepare, CompressedByteIdenticalWhateverTheWorkerCount) {
  TempDir tmp;
  PrepareConfig c = base_config(tmp);
  // > 4096 rows per shard: several chunks, the last one partial.
  c.dupe_factor = 24;
  c.max_seq_length = 32;
  c.max_predictions_per_seq = 5;
  c.num_shards = 2;
  c.num_workers = 1;
  c.output_dir = (tmp / "plain").string();
  PrepareSummary plain = run_prepare(c, fake_tokenizer());
  c.compress = true;
  c.output_dir = (tmp / "gz1").string();
  run_prepare(c, fake_tokenizer());
  c.num_workers = 2;
  c.output_dir = (tmp / "gz2").string();
  run_prepare(c, fake_tokenizer());
  auto gz1 = shard_md5s(tmp / "gz1");
  EXPECT_EQ(gz1.size(), 2u);
  EXPECT_EQ(gz1, shard_md5s(tmp / "gz2"));
  EXPECT_NE(gz1, shard_md5s(tmp / "plain"));
  ASSERT_GT(plain.shards[0].instances, 4096u);
  for (const auto& [name, md5] : gz1) {
    Hdf5Reader a(tmp / "gz1" / name), b(tmp / "plain" / name);
    ASSERT_EQ(a.size(), b.size());
    PretrainRows x, y;
    a.read(0, a.size(), x);
    b.read(0, b.size(), y);
    EXPECT_EQ(x.input_ids, y.input_ids) << name;
    EXPECT_EQ(x.input_mask, y.input_mask) << name;
    EXPECT_EQ(x.segment_ids, y.segment_ids) << name;
    EXPECT_EQ(x.masked_lm_positions, y.masked_lm_positions) << name;
    EXPECT_EQ(x.masked_lm_ids, y.masked_lm_ids) << name;
    EXPECT_EQ(x.next_sentence_labels, y.next_sentence_labels) << name;
  }
}

TEST(DataPrepare, ResumeKeepsVerifiedShardsAndRebuildsTheRest) {
  TempDir tmp;
  PrepareConfig c = base_config(tmp);
  run_prepare(c, fake_tokenizer());
  auto before = shard_md5s(tmp / "out");
  // Make it look interrupted after shards 0 and 1: later shards missing from disk and manifest,
  // a temporary left behind, and shard 1 damaged.
  fs::path mpath = tmp / "out/manifest.json";
  auto m = nlohmann::json::parse(bert::test::read_text(mpath));
  m["complete"] = false;
  auto shards = m["shards"];
  m["shards"] = nlohmann::json::array({shards[0], shards[1]});
  bert::test::write_text(mpath, m.dump(2));
  fs::remove(tmp / "out/shard_00002.hdf5");
  fs::remove(tmp / "out/shard_00003.hdf5");
  bert::test::write_text(tmp / "out/shard_00002.hdf5.tmp.99999", "partial");
  {
    std::ofstream f(tmp / "out/shard_00001.hdf5", std::ios::app | std::ios::binary);
    f << "x";
  }
  PrepareSummary s = run_prepare(c, fake_tokenizer());
  EXPECT_EQ(s.reused, 1);  // only shard 0 survives verification
  EXPECT_EQ(shard_md5s(tmp / "out"), before);
  EXPECT_FALSE(fs::exists(tmp / "out/shard_00002.hdf5.tmp.99999"));
  EXPECT_TRUE(nlohmann::json::parse(bert::test::read_text(mpath))["complete"].get<bool>());
  // Same settings again: everything reused. Changed settings: everything rebuilt.
  EXPECT_EQ(run_prepare(c, fake_tokenizer()).reused, 4);
  c.masked_lm_prob = 0.2;
  EXPECT_EQ(run_prepare(c, fake_tokenizer()).reused, 0);
  EXPECT_NE(shard_md5s(tmp / "out"), before);
}

TEST(DataPrepare, NoMaskingCompressedAndWholeWord) {
  TempDir tmp;
  PrepareConfig c = base_config(tmp);
  c.no_masking = true;
  c.compress = true;
  c.num_shards = 1;
  PrepareSummary s = run_prepare(c, fake_tokenizer());
  EXPECT_EQ(s.totals.masked, 0u);
  Hdf5Reader r(tmp / "out/shard_00000.hdf5");
  EXPECT_FALSE(r.has_masking());
  EXPECT_EQ(static_cast<uint64_t>(r.size()), s.totals.instances);
  PretrainRows x;
  r.read(0, r.size(), x);
  for (int32_t id : x.input_ids) ASSERT_NE(id, 4) << "[MASK] in an unmasked file";

  c.no_masking = false;
  c.compress = false;
  c.whole_word_mask = true;
  c.output_dir = (tmp / "wwm").string();
  s = run_prepare(c, fake_tokenizer());
  EXPECT_GT(s.totals.masked, 0u);
}

TEST(DataPrepare, ParagraphFormatStartsDocumentsAtTitles) {
  TempDir tmp;
  std::string text;
  for (int d = 0; d < 6; ++d) {
    text += " = w" + std::to_string(d) + " = \n \n";
    text += " = = w9 = = \n";
    text += " w1 w2 w3 . W4 w5 . w6 w7 . \n \n w8 w9 w10 . \n";
  }
  bert::test::write_text(tmp / "wiki.txt", text);
  PrepareConfig c;
  c.inputs = {(tmp / "wiki.txt").string()};
  c.output_dir = (tmp / "out").string();
  c.input_format = "paragraphs";
  c.num_shards = 2;
  c.max_seq_length = 32;
  PrepareSummary s = run_prepare(c, fake_tokenizer());
  EXPECT_EQ(s.totals.documents, 6u);
  EXPECT_EQ(s.totals.sentences, 6u * 3u);  // "w1 w2 w3 . W4 w5 . w6 w7 ." splits once (W4 is upper-case)
  EXPECT_EQ(s.shards.size(), 2u);
}

TEST(DataPrepare, BadInputFailsWithOneClearLineAndNoShard) {
  TempDir tmp;
  PrepareConfig c = base_config(tmp);

  PrepareConfig missing = c;
  missing.inputs = {(tmp / "nope.txt").string()};
  EXPECT_NE(user_error(missing).find("nope.txt"), std::string::npos);
  PrepareConfig noglob = c;
  noglob.inputs = {(tmp / "in/*.md").string()};
  EXPECT_NE(user_error(noglob).find("no input files match"), std::string::npos);

  bert::test::write_text(tmp / "empty.txt", "\n \n\t\n");
  PrepareConfig empty = c;
  empty.inputs = {(tmp / "empty.txt").string()};
  EXPECT_NE(user_error(empty).find("empty"), std::string::npos);

  PrepareConfig longline = c;
  longline.max_line_bytes = 40;
  std::string e = user_error(longline);
  EXPECT_NE(e.find("40-byte limit"), std::string::npos) << e;
  EXPECT_NE(e.find("a.txt"), std::string::npos) << e;

  bert::test::write_text(tmp / "afile", "x");
  PrepareConfig unwritable = c;
  unwritable.output_dir = (tmp / "afile/sub").string();
  EXPECT_NE(user_error(unwritable).find("--output-dir"), std::string::npos);

  PrepareConfig nomask = c;
  PrepareTokenizer t = fake_tokenizer();
  t.mask_id = -1;
  try {
    run_prepare(nomask, t);
    ADD_FAILURE() << "no error for a vocab without [MASK]";
  } catch (const UserError& err) {
    EXPECT_NE(std::string(err.what()).find("[MASK]"), std::string::npos);
  }
  EXPECT_EQ(count_final_shards(tmp / "out"), 0);
}

TEST(DataPrepare, CrlfAndLfCorporaGiveTheSameShards) {
  TempDir tmp;
  std::string lf = fake_corpus(30, 7), crlf;
  for (char ch : lf) {
    if (ch == '\n') crlf += '\r';
    crlf += ch;
  }
  bert::test::write_text(tmp / "lf.txt", lf);
  bert::test::write_text(tmp / "crlf.txt", crlf);
  PrepareConfig c;
  c.max_seq_length = 48;
  c.num_shards = 1;  // (with more, cut points by byte count could differ)
  c.inputs = {(tmp / "lf.txt").string()};
  c.output_dir = (tmp / "lf").string();
  PrepareSummary a = run_prepare(c, fake_tokenizer());
  c.inputs = {(tmp / "crlf.txt").string()};
  c.output_dir = (tmp / "crlf").string();
  PrepareSummary b = run_prepare(c, fake_tokenizer());
  EXPECT_EQ(a.totals.documents, 30u);
  EXPECT_EQ(b.totals.documents, 30u);
  EXPECT_EQ(a.totals.sentences, b.totals.sentences);
  EXPECT_EQ(shard_md5s(tmp / "lf"), shard_md5s(tmp / "crlf"));
}
