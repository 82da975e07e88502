// Tokenizer unit tests on tiny inline vocabs: cleanup, accents, CJK, punctuation, invalid UTF-8,
// long words, cased/uncased, never-split specials, WordPiece and the batch API.
#include <gtest/gtest.h>

#include "bert/text/tokenizer.h"

using namespace bert::text;

namespace {

Vocab tiny_vocab(std::vector<std::string> extra) {
  std::vector<std::string> t = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  t.insert(t.end(), extra.begin(), extra.end());
  return Vocab::from_tokens(t, "test");
}

using Toks = std::vector<std::string>;

Toks basic(std::string_view s, bool lower = true, TokenizerStats* st = nullptr) {
  return BasicTokenizer(lower).tokenize(s, st);
}

}  // namespace

TEST(TextBasic, WhitespaceAndPunctuation) {
  EXPECT_EQ(basic("  Hello,  world!\tHow\r\nare you?  "),
            (Toks{"hello", ",", "world", "!", "how", "are", "you", "?"}));
  // ASCII symbols count as punctuation, as do Unicode P* (em dash, inverted question mark)
  EXPECT_EQ(basic("a$b^c`d~e"), (Toks{"a", "$", "b", "^", "c", "`", "d", "~", "e"}));
  EXPECT_EQ(basic("x\u2014y \u00BFz"), (Toks{"x", "\u2014", "y", "\u00BF", "z"}));
  EXPECT_EQ(basic("no-break\u00A0space\u3000ideo"), (Toks{"no", "-", "break", "space", "ideo"}));
  EXPECT_TRUE(basic("").empty());
  EXPECT_TRUE(basic(" \t\n ").empty());
}

TEST(TextBasic, AccentsAndCase) {
  EXPECT_EQ(basic("H\u00E9llo W\u00D6RLD na\u00EFve"), (Toks{"hello", "world", "naive"}));
  EXPECT_EQ(basic("e\u0301te\u0301"), (Toks{"ete"}));  // combining marks dropped
  EXPECT_EQ(basic("\u0130stanbul"), (Toks{"istanbul"}));
  // cased keeps everything
  EXPECT_EQ(basic("H\u00E9llo W\u00D6RLD", false), (Toks{"H\u00E9llo", "W\u00D6RLD"}));
  // normalization can produce punctuation: U+037E -> ';', U+1FEF -> '`'
  EXPECT_EQ(basic("a\u037Eb c\u1FEFd"), (Toks{"a", ";", "b", "c", "`", "d"}));
  EXPECT_EQ(basic("a\u037Eb", false), (Toks{"a", "\u037E", "b"}));
}

TEST(TextBasic, ChineseCharactersAreSplit) {
  EXPECT_EQ(basic("ab\u4E2D\u6587cd"), (Toks{"ab", "\u4E2D", "\u6587", "cd"}));
  EXPECT_EQ(basic("\u4E2D\u6587", false), (Toks{"\u4E2D", "\u6587"}));
  // Hiragana is not in the CJK ideograph blocks; uncased NFD strips the voicing mark of GA
  EXPECT_EQ(basic("\u3072\u3089\u304C\u306A", false), (Toks{"\u3072\u3089\u304C\u306A"}));
  EXPECT_EQ(basic("\u3072\u3089\u304C\u306A"), (Toks{"\u3072\u3089\u304B\u306A"}));
}

TEST(TextBasic, ControlCharactersDropped) {
  std::string s = "a";
  s += '\0';
  s += "b\001c\u200Bd\uFFFDe f\u00ADg";  // NUL, SOH, zero-width space (Cf), U+FFFD, soft hyphen (Cf)
  EXPECT_EQ(basic(s), (Toks{"abcde", "fg"}));
}

TEST(TextBasic, InvalidUtf8SkippedAndCounted) {
  TokenizerStats st;
  // stray continuation, invalid lead, truncated 3-byte sequence, overlong '/', surrogate
  std::string s = "ab\x80\xFF" "cd \xE2\x82 ef\xC0\xAF gh\xED\xA0\x80ij";
  EXPECT_EQ(basic(s, true, &st), (Toks{"abcd", "ef", "ghij"}));
  EXPECT_EQ(st.invalid_utf8_bytes, 9u);
}

TEST(TextBasic, NeverSplitSpecials) {
  EXPECT_EQ(basic("[CLS]x[SEP] [MASK]"), (Toks{"[CLS]", "x", "[SEP]", "[MASK]"}));
  // matched in the raw text only: lower-case spellings are ordinary punctuation + words
  EXPECT_EQ(basic("[cls]"), (Toks{"[", "cls", "]"}));
  EXPECT_EQ(BasicTokenizer(true, {}).tokenize("[MASK]"), (Toks{"[", "mask", "]"}));
}

TEST(TextWordPiece, GreedyLongestMatchFirst) {
  FullTokenizer tok(tiny_vocab({"un", "##aff", "##able", "una", "##ff", "a", "##a", "runn", "##ing", ","}),
                    TokenizerOptions{});
  EXPECT_EQ(tok.tokenize("unaffable"), (Toks{"una", "##ff", "##able"}));
  EXPECT_EQ(tok.tokenize("UNAFFABLE, running"), (Toks{"una", "##ff", "##able", ",", "runn", "##ing"}));
  // one missing piece makes the whole word [UNK]
  EXPECT_EQ(tok.tokenize("unaffablex a"), (Toks{"[UNK]", "a"}));
  EXPECT_EQ(tok.encode("a a"), (std::vector<int32_t>{tok.vocab().id("a"), tok.vocab().id("a")}));
}

TEST(TextWordPiece, LongWordsBecomeUnk) {
  FullTokenizer tok(tiny_vocab({"a", "##a", "\u00E9", "##\u00E9"}), TokenizerOptions{true, 100});
  EXPECT_EQ(tok.tokenize(std::string(101, 'a')), (Toks{"[UNK]"}));
  auto hundred = tok.tokenize(std::string(100, 'a'));
  ASSERT_EQ(hundred.size(), 100u);
  EXPECT_EQ(hundred[0], "a");
  EXPECT_EQ(hundred[99], "##a");
  // the limit counts characters, not bytes (cased: é is kept)
  FullTokenizer cased(tiny_vocab({"\u00E9", "##\u00E9"}), TokenizerOptions{false, 100});
  std::string e100;
  for (int i = 0; i < 100; ++i) e100 += "\u00E9";
  EXPECT_EQ(cased.tokenize(e100).size(), 100u);
  EXPECT_EQ(cased.tokenize(e100 + "\u00E9"), (Toks{"[UNK]"}));
}

TEST(TextWordPiece, CasedAndUncased) {
  Vocab v = tiny_vocab({"hello", "Hello", "cafe", "caf", "##\u00E9"});
  FullTokenizer uncased(v, TokenizerOptions{true, 100});
  FullTokenizer cased(v, TokenizerOptions{false, 100});
  EXPECT_EQ(uncased.tokenize("HeLLo Caf\u00E9"), (Toks{"hello", "cafe"}));
  EXPECT_EQ(cased.tokenize("Hello HELLO caf\u00E9"), (Toks{"Hello", "[UNK]", "caf", "##\u00E9"}));
}

TEST(TextWordPiece, SpecialsKeepTheirIds) {
  FullTokenizer tok(tiny_vocab({"x", "[", "]", "cls"}), TokenizerOptions{});
  const Vocab& v = tok.vocab();
  EXPECT_EQ(tok.encode("[CLS] x [MASK][SEP]"),
            (std::vector<int32_t>{v.cls_id(), v.id("x"), v.mask_id(), v.sep_id()}));
  EXPECT_EQ(tok.tokenize("[cls]"), (Toks{"[", "cls", "]"}));
}

TEST(TextWordPiece, ContinuationHelpers) {
  Vocab v = tiny_vocab({"##ing", "run", "##"});
  EXPECT_TRUE(is_continuation("##ing"));
  EXPECT_FALSE(is_continuation("##"));
  EXPECT_FALSE(is_continuation("run"));
  EXPECT_TRUE(v.is_continuation(v.id("##ing")));
  EXPECT_FALSE(v.is_continuation(v.id("run")));
  EXPECT_EQ(v.continuation_id("ing"), v.id("##ing"));
  EXPECT_EQ(v.continuation_id("run"), -1);
}

TEST(TextWordPiece, BatchMatchesSingleLines) {
  FullTokenizer tok(tiny_vocab({"a", "##a", "b", "##b", ".", "\u4E2D"}), TokenizerOptions{});
  std::vector<std::string> lines;
  for (int i = 0; i < 3000; ++i)
    lines.push_back(std::string(static_cast<size_t>(i % 7), 'a') + " b" + (i % 3 ? "." : "\xFF") + "\u4E2D");
  TokenizerStats batch_stats, single_stats;
  auto batch = tok.encode_batch(lines, 2, &batch_stats);
  ASSERT_EQ(batch.size(), lines.size());
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(batch[i], tok.encode(lines[i], &single_stats)) << i;
  EXPECT_EQ(batch_stats.invalid_utf8_bytes, 1000u);
  EXPECT_EQ(batch_stats.invalid_utf8_bytes, single_stats.invalid_utf8_bytes);
}

TEST(TextWordPiece, CopiedVocabStillWorks) {
  Vocab v = tiny_vocab({"hello"});
  Vocab copy = v;
  Vocab assigned;
  assigned = copy;
  FullTokenizer tok(assigned, TokenizerOptions{});
  EXPECT_EQ(tok.tokenize("hello"), (Toks{"hello"}));
}
