// Vocab loading/validation and WordPiece vocab training.
#include <gtest/gtest.h>

#include "bert/common/error.h"
#include "bert/text/tokenizer.h"
#include "bert/text/vocab_trainer.h"
#include "test_util.h"

using namespace bert;
using namespace bert::text;
using bert::test::TempDir;
using bert::test::write_text;

namespace {

std::string error_of(const std::vector<std::string>& toks) {
  try {
    Vocab::from_tokens(toks, "v.txt");
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(TextVocab, LoadsFileWithWindowsLineEnds) {
  TempDir d;
  write_text(d / "vocab.txt", "[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\n[MASK]\r\nhello\r\n##s\r\n");
  Vocab v = Vocab::load((d / "vocab.txt").string());
  EXPECT_EQ(v.size(), 7u);
  EXPECT_EQ(v.id("hello"), 5);
  EXPECT_EQ(v.token(6), "##s");
  EXPECT_EQ(v.pad_id(), 0);
  EXPECT_EQ(v.mask_id(), 4);
  EXPECT_EQ(v.id("missing"), -1);
  EXPECT_THROW(v.token(7), RuntimeError);
}

TEST(TextVocab, ValidationErrorsNameTheProblem) {
  std::vector<std::string> ok = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"};
  EXPECT_EQ(error_of(ok), "");
  auto dup = ok;
  dup.push_back("a");
  EXPECT_NE(error_of(dup).find("'a' twice (lines 6 and 7)"), std::string::npos) << error_of(dup);
  auto no_mask = ok;
  no_mask.erase(no_mask.begin() + 4);
  EXPECT_NE(error_of(no_mask).find("no [MASK] token"), std::string::npos) << error_of(no_mask);
  auto empty_line = ok;
  empty_line.insert(empty_line.begin() + 2, "");
  EXPECT_NE(error_of(empty_line).find("line 3 is empty"), std::string::npos) << error_of(empty_line);
  auto bad_utf8 = ok;
  bad_utf8.push_back("x\xFF");
  EXPECT_NE(error_of(bad_utf8).find("not valid UTF-8"), std::string::npos);
  EXPECT_NE(error_of({}).find("empty"), std::string::npos);
  EXPECT_THROW(Vocab::load("/nonexistent/vocab.txt"), UserError);
}

TEST(TextVocabTrainer, FollowsWordPieceTrainerOrder) {
  // the classic example: "##u ##g" is the most frequent pair (20), then "##u ##n" ...
  WordCounts words = {{"hug", 10}, {"pug", 5}, {"pun", 12}, {"bun", 4}, {"hugs", 5}};
  VocabTrainerOptions o;
  o.vocab_size = 19;  // 5 specials + 2 unused + 7 characters + 4 "##" forms + 1 merge
  o.unused = 2;
  o.min_frequency = 1;
  VocabTrainerStats st;
  auto v = train_wordpiece(words, o, &st);
  std::vector<std::string> expect_head = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]", "[unused1]",
                                          "b", "g", "h", "n", "p", "s", "u", "##g", "##n", "##s", "##u"};
  ASSERT_GE(v.size(), expect_head.size());
  EXPECT_EQ(std::vector<std::string>(v.begin(), v.begin() + static_cast<long>(expect_head.size())), expect_head);
  ASSERT_EQ(v.size(), o.vocab_size);
  EXPECT_EQ(v[18], "##ug");  // 20 occurrences (hug 10 + pug 5 + hugs 5)
  EXPECT_EQ(st.alphabet, 11u);
  EXPECT_EQ(st.merges, 1u);
}

TEST(TextVocabTrainer, MinFrequencyStopsMerging) {
  WordCounts words = {{"abc", 3}, {"abd", 1}};
  VocabTrainerOptions o;
  o.vocab_size = 100;
  o.min_frequency = 5;
  o.limit_alphabet = 0;
  EXPECT_EQ(train_wordpiece(words, o).size(), 5u + 4 + 3);  // no pair occurs 5 times
  o.min_frequency = 3;
  auto v = train_wordpiece(words, o);  // "a ##b" (4), then "ab ##c" (3)
  EXPECT_EQ(v.size(), 5u + 4 + 3 + 2);
  EXPECT_EQ(v[12], "ab");
  EXPECT_EQ(v[13], "abc");
}

TEST(TextVocabTrainer, TrainedVocabLoadsAndRoundTrips) {
  TempDir d;
  std::string corpus =
      "The quick brown fox jumps over the lazy dog.\n"
      "Jumping foxes aren't lazy; dogs jump too!\n\n"
      "Caf\u00E9 na\u00EFve r\u00E9sum\u00E9 \u4E2D\u6587 quick quicker quickest\n";
  for (int i = 0; i < 3; ++i) corpus += corpus;
  write_text(d / "a.txt", corpus);
  VocabTrainerOptions o;
  o.vocab_size = 80;
  o.threads = 2;
  VocabTrainerStats st;
  auto counts = count_words({(d / "a.txt").string()}, o, &st);
  EXPECT_EQ(st.lines, 32u);
  EXPECT_EQ(counts.at("quick"), 16u);
  EXPECT_EQ(counts.at("cafe"), 8u);  // uncased words: lower-case, accents stripped
  auto tokens = train_wordpiece(counts, o, &st);
  EXPECT_EQ(tokens.size(), 80u);
  EXPECT_EQ(train_wordpiece(counts, o), tokens);  // deterministic

  std::string text;
  for (const auto& t : tokens) text += t + "\n";
  write_text(d / "vocab.txt", text);
  FullTokenizer tok(Vocab::load((d / "vocab.txt").string()), TokenizerOptions{});
  BasicTokenizer basic(true);
  for (const auto& word : basic.tokenize(corpus)) {
    auto pieces = tok.tokenize(word);
    std::string joined;
    for (const auto& p : pieces) {
      ASSERT_NE(p, "[UNK]") << word;
      joined += is_continuation(p) ? p.substr(2) : p;
    }
    EXPECT_EQ(joined, word);
  }
}

TEST(TextVocabTrainer, BadInputsAreUserErrors) {
  VocabTrainerOptions o;
  EXPECT_THROW(count_words({"/nonexistent/corpus.txt"}, o), UserError);
  EXPECT_THROW(count_words({}, o), UserError);
  EXPECT_THROW(train_wordpiece({}, o), UserError);
  o.vocab_size = 3;
  EXPECT_THROW(train_wordpiece({{"a", 1}}, o), UserError);
}
