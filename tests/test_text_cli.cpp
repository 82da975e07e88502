// End-to-end: `bert-train tokenize` and `bert-train vocab` on tiny files, plus user errors (exit 2).
#include <gtest/gtest.h>

#include "bert/text/tokenizer.h"
#include "test_util.h"

using namespace bert::test;

namespace {

void write_tiny_vocab(const fs::path& p) {
  write_text(p, "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nworld\n##s\n,\n!\n");
}

}  // namespace

TEST(TextCli, TokenizeFileToTokensAndIds) {
  TempDir d;
  write_tiny_vocab(d / "vocab.txt");
  write_text(d / "in.txt", "Hello, worlds!\n\nHELLO [MASK] nope\xFF\nlast line without newline world");
  auto r = run_cli("tokenize --vocab " + (d / "vocab.txt").string() + " --input " + (d / "in.txt").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "hello , world ##s !\n\nhello [MASK] [UNK]\n[UNK] [UNK] [UNK] [UNK] world\n");
  EXPECT_NE(r.err.find("1 invalid UTF-8 bytes skipped"), std::string::npos) << r.err;

  r = run_cli("tokenize --ids --threads 2 --vocab " + (d / "vocab.txt").string() + " --input " +
              (d / "in.txt").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "5 8 6 7 9\n\n5 4 1\n1 1 1 1 6\n");
}

TEST(TextCli, TokenizeStdinCased) {
  TempDir d;
  write_tiny_vocab(d / "vocab.txt");
  write_text(d / "in.txt", "Hello hello\n");
  // run_cli gives the command /dev/null as stdin, so this one runs through the shell itself
  std::string cmd = "cat " + (d / "in.txt").string() + " | " + BERT_TRAIN_BIN + " tokenize --cased --vocab " +
                    (d / "vocab.txt").string() + " --input - > " + (d / "out.txt").string() + " 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(read_text(d / "out.txt"), "[UNK] hello\n");
}

TEST(TextCli, TokenizeUserErrorsExit2) {
  TempDir d;
  write_tiny_vocab(d / "vocab.txt");
  auto r = run_cli("tokenize --vocab " + (d / "missing.txt").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("vocab file not found"), std::string::npos) << r.err;

  r = run_cli("tokenize --vocab " + (d / "vocab.txt").string() + " --input " + (d / "nope.txt").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("input file not found"), std::string::npos) << r.err;

  r = run_cli("tokenize --vocab " + (d / "vocab.txt").string() + " --bogus");
  EXPECT_EQ(r.code, 2);

  write_text(d / "bad.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nx\n");
  r = run_cli("tokenize --vocab " + (d / "bad.txt").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("has no [MASK] token; add it or use a BERT vocab"), std::string::npos) << r.err;
}

TEST(TextCli, VocabTrainsAndTokenizes) {
  TempDir d;
  std::string corpus;
  for (int i = 0; i < 20; ++i) corpus += "the runner runs; running runners ran " + std::to_string(i % 4) + "\n";
  write_text(d / "a.txt", corpus);
  write_text(d / "b.txt", "Unrunnable RUNS\n");
  auto out = d / "out";
  auto r = run_cli("vocab --input " + (d / "a.txt").string() + " " + (d / "b.txt").string() + " --output-dir " +
                   out.string() + " --vocab-size 45 --min-frequency 2 --unused 3");
  ASSERT_EQ(r.code, 0) << r.err;
  auto v = bert::text::Vocab::load((out / "vocab.txt").string());
  EXPECT_EQ(v.size(), 45u);  // enough pairs occur twice to fill it
  EXPECT_EQ(v.token(5), "[unused0]");
  EXPECT_EQ(v.token(8), "0");  // the alphabet follows, in code point order
  EXPECT_GE(v.id("##n"), 0);
  EXPECT_FALSE(fs::exists(out / ("vocab.txt.tmp." + std::to_string(getpid()))));

  write_text(d / "in.txt", "Running runners\n");
  r = run_cli("tokenize --vocab " + (out / "vocab.txt").string() + " --input " + (d / "in.txt").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("[UNK]"), std::string::npos) << r.out;
}

TEST(TextCli, VocabUserErrorsExit2) {
  TempDir d;
  write_text(d / "a.txt", "some words here\n");
  auto r = run_cli("vocab --input " + (d / "none.txt").string() + " --output-dir " + (d / "o").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("input file not found"), std::string::npos) << r.err;
  r = run_cli("vocab --input " + (d / "a.txt").string() + " --output-dir " + (d / "o").string() + " --unused 20 --vocab-size 10");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--vocab-size 10 is smaller"), std::string::npos) << r.err;
  write_text(d / "empty.txt", "\n \n");
  r = run_cli("vocab --input " + (d / "empty.txt").string() + " --output-dir " + (d / "o").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no words"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(d / "o" / "vocab.txt"));
}
