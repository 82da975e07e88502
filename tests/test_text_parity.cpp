// Parity with HF's Rust tokenizer on the real BERT vocabs for a handful of tricky strings. The
// expected ids were produced by HF `tokenizers` 0.23.2 (npm) set up as BertWordPieceTokenizer
// (scripts/tools/hf_tokenize.js); scripts/parity_tokenizer.sh runs the full comparison.
#include <gtest/gtest.h>

#include "bert/text/tokenizer.h"
#include "test_util.h"

using namespace bert::text;

namespace {

struct Case {
  const char* text;
  std::vector<int32_t> uncased, cased;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"Hello, World! H\u00E9llo na\u00EFve caf\u00E9.",
       {7592, 1010, 2088, 999, 7592, 15743, 7668, 1012},
       {8667, 117, 1291, 106, 145, 2744, 6643, 9468, 28203, 2707, 20583, 119}},
      {"unaffable jumps 12,345.67 don't re-enter",
       {14477, 20961, 3468, 14523, 2260, 1010, 23785, 1012, 6163, 2123, 1005, 1056, 2128, 1011, 4607},
       {8362, 9823, 8057, 2165, 15457, 1367, 117, 26625, 119, 5486, 1274, 112, 189, 1231, 118, 3873}},
      {"\u4E2D\u6587\u5B57\u7B26 and \u65E5\u672C\u8A9E \uD55C\uAD6D\uC5B4",
       {1746, 1861, 100, 100, 1998, 1864, 1876, 1950, 1469, 30006, 30021, 29991, 30014, 30020, 29999, 30008},
       {980, 1030, 100, 100, 1105, 1033, 1039, 100, 100}},
      {"[CLS] a [MASK] b[SEP] [cls] [UNK]x",
       {101, 1037, 103, 1038, 102, 1031, 18856, 2015, 1033, 100, 1060},
       {101, 170, 103, 171, 102, 164, 172, 3447, 166, 100, 193}},
      // HF lower-cases character by character: a final capital sigma becomes σ, not ς
      {"\u0395\u03BB\u03BB\u03B7\u03BD\u03B9\u03BA\u03AC \u03A3\u039F\u03A6\u0399\u0391\u03A3",
       {1159, 29727, 29727, 24824, 16177, 18199, 29726, 14608, 1173, 29730, 29736, 27432, 29733},
       {398, 28348, 28348, 28344, 23907, 28346, 28347, 28335, 408, 28327, 28331, 28322, 28315, 28329}},
      {"\u0130stanbul \u01C5emal \uFB01ne \u00C5",
       {9960, 100, 1984, 2638, 1037},
       {300, 13946, 27515, 100, 1094, 1673, 230}},
      {"Z\u00FCrich\u2014\u201Cquotes\u201D\u2026 \u00BFqu\u00E9? \u00BD \u21165 \u00AE",
       {10204, 1517, 1523, 16614, 1524, 1529, 1094, 10861, 1029, 1092, 1578, 2629, 1079},
       {16592, 783, 789, 18328, 790, 795, 225, 186, 22476, 136, 223, 840, 1571, 210}},
      {"tab\011here\001ctl\342\200\213zw \377\376invalid\303 ok",
       {21628, 2182, 6593, 23858, 2860, 19528, 7929},
       {27629, 1830, 1303, 5822, 1233, 1584, 2246, 22475, 21534}},
      // NFD turns U+037E into ';' and U+1FEF into '`' (punctuation); U+2329 into U+3008
      {"a\u037Eb \u1FEFx \u2329y\u0301 e\u0301t\u00E9",
       {1037, 1025, 1038, 1036, 1060, 1637, 1061, 3802, 2063},
       {170, 100, 171, 100, 100, 194, 28310, 174, 28310, 14608}},
  };
  return c;
}

void check(const std::string& vocab_path, bool lower) {
  FullTokenizer tok(Vocab::load(vocab_path), TokenizerOptions{lower, 100});
  for (const auto& c : cases()) EXPECT_EQ(tok.encode(c.text), lower ? c.uncased : c.cased) << c.text;
  // words over 100 characters are [UNK]; exactly 100 are word-pieced
  auto ids = tok.encode(std::string(101, 'a') + " " + std::string(100, 'b'));
  ASSERT_GT(ids.size(), 2u);
  EXPECT_EQ(ids[0], tok.vocab().unk_id());
  EXPECT_NE(ids[1], tok.vocab().unk_id());
}

}  // namespace

TEST(TextParity, UncasedVocabMatchesHF) {
  BERT_REQUIRE_SHARED_DATA(data);
  check((data / "vocab/bert-base-uncased-vocab.txt").string(), true);
}

TEST(TextParity, CasedVocabMatchesHF) {
  BERT_REQUIRE_SHARED_DATA(data);
  check((data / "vocab/bert-base-cased-vocab.txt").string(), false);
}
