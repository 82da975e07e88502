// `bert-train prepare` on bad input, through the real binary: every case exits 2 with one
// `error:` line naming the input and the fix, and leaves no shard or manifest under a final name
// (nor a temporary) in the output directory.
#include "test_util.h"

using namespace bert::test;
namespace fs = std::filesystem;

namespace {

std::string good_vocab() {
  std::string v = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
  for (const char* w : {"the", "cat", "sat", "on", "mat", "a", "dog", "ran", "."}) v += std::string(w) + "\n";
  return v;
}

std::string good_corpus() {
  std::string c;
  for (int d = 0; d < 4; ++d) c += "The cat sat on the mat.\nA dog ran.\n\n";
  return c;
}

// Exit 2, exactly one line on stderr after the log lines, starting with "error:", containing
// every string in `want`; nothing under `out` (the output directory may not even exist).
void expect_clean_user_error(const CmdResult& r, const fs::path& out, const std::vector<std::string>& want,
                             const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(r.code, 2) << r.err;
  size_t at = r.err.rfind("error: ");
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_TRUE(at == 0 || r.err[at - 1] == '\n') << r.err;
  std::string line = r.err.substr(at);
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "error message is not one line: " << line;
  for (const auto& w : want) EXPECT_NE(line.find(w), std::string::npos) << "missing '" << w << "' in: " << line;
  std::error_code ec;
  if (fs::is_directory(out, ec)) {
    for (const auto& e : fs::directory_iterator(out)) ADD_FAILURE() << "left behind: " << e.path();
  }
}

struct Case {
  TempDir tmp;
  fs::path out() const { return tmp / "out"; }
  CmdResult run(const std::string& inputs, const std::string& extra = "", const std::string& vocab = "") {
    if (!fs::exists(tmp / "vocab.txt")) write_text(tmp / "vocab.txt", good_vocab());
    return run_cli("prepare --input " + inputs + " --vocab " + (vocab.empty() ? (tmp / "vocab.txt").string() : vocab) +
                   " --output-dir " + out().string() + " --max-seq-length 16 --num-workers 2 " + extra);
  }
};

}  // namespace

TEST(DataPrepareErrors, MissingInputsAndDirectories) {
  Case c;
  auto missing = (c.tmp / "missing.txt").string();
  expect_clean_user_error(c.run(missing), c.out(), {"missing.txt", "not found"}, "missing file");
  expect_clean_user_error(c.run("'" + (c.tmp / "*.nothing").string() + "'"), c.out(), {"*.nothing", "no input files"},
                          "glob without matches");
  fs::create_directories(c.tmp / "adir");
  expect_clean_user_error(c.run((c.tmp / "adir").string()), c.out(), {"adir", "directory"}, "directory as input");
}

TEST(DataPrepareErrors, EmptyCorpora) {
  Case c;
  write_text(c.tmp / "blank.txt", "\n   \n\t\n\n");
  expect_clean_user_error(c.run((c.tmp / "blank.txt").string()), c.out(), {"empty", "blank.txt"}, "blank lines");
  write_text(c.tmp / "zero.txt", "");
  expect_clean_user_error(c.run((c.tmp / "zero.txt").string()), c.out(), {"empty", "zero.txt", "0 bytes"},
                          "zero bytes");
  expect_clean_user_error(c.run((c.tmp / "zero.txt").string() + " " + (c.tmp / "blank.txt").string()), c.out(),
                          {"empty", "2 input files", "zero.txt", "blank.txt"}, "two empty files");
  // Only headings in paragraph format: no text either.
  write_text(c.tmp / "heads.txt", " = Title = \n = = Section = = \n");
  expect_clean_user_error(c.run((c.tmp / "heads.txt").string(), "--input-format paragraphs"), c.out(),
                          {"empty", "heads.txt", "headings"},
                          "only headings");

}

TEST(DataPrepareErrors, TextThatTokenizesToNothing) {
  Case c;
  // Lines with characters the tokenizer drops (controls, NUL-free; U+FFFD) and invalid UTF-8.
  write_text(c.tmp / "controls.txt", "\x01\x02\x03\n\x7f\xef\xbf\xbd\n\n\x1b\x1b\n");
  expect_clean_user_error(c.run((c.tmp / "controls.txt").string()), c.out(),
                          {"controls.txt", "no training instances", "tokenizes to nothing"}, "dropped characters");
  write_text(c.tmp / "latin1.txt", "\xff\xfe\xfd\n\xc0\n");
  expect_clean_user_error(c.run((c.tmp / "latin1.txt").string(), "--num-shards 1"), c.out(),
                          {"latin1.txt", "invalid UTF-8", "no training instances"}, "invalid UTF-8 only");

  // Several shards where each one is empty after tokenization: the error names a shard's input.
  std::string many;
  for (int d = 0; d < 6; ++d) many += "\x01\x02\n\x03\n\n";
  write_text(c.tmp / "many.txt", many);
  expect_clean_user_error(c.run((c.tmp / "many.txt").string(), "--num-shards 3"), c.out(),
                          {"many.txt", "shard", "no training instances"}, "three empty shards");
}

TEST(DataPrepareErrors, OverlongLinesAreRefusedWithBoundedMemory) {
  Case c;
  write_text(c.tmp / "long.txt", good_corpus() + std::string(5000, 'a') + "\n");
  expect_clean_user_error(c.run((c.tmp / "long.txt").string(), "--max-line-bytes 1000"), c.out(),
                          {"long.txt", "line 13", "1000-byte limit", "--max-line-bytes"}, "line over the limit");
  // A file without any line break at all, over the default 1 MiB limit.
  write_text(c.tmp / "blob.txt", std::string(3 << 20, 'x'));
  expect_clean_user_error(c.run((c.tmp / "blob.txt").string()), c.out(), {"blob.txt", "1048576-byte limit"},
                          "no line breaks");
}

TEST(DataPrepareErrors, VocabWithoutSpecialTokens) {
  Case c;
  write_text(c.tmp / "corpus.txt", good_corpus());
  std::string v = good_vocab();
  for (const char* special : {"[CLS]", "[SEP]", "[MASK]", "[UNK]"}) {
    std::string without = v;
    without.erase(without.find(std::string(special) + "\n"), std::string(special).size() + 1);
    write_text(c.tmp / "bad_vocab.txt", without);
    expect_clean_user_error(c.run((c.tmp / "corpus.txt").string(), "", (c.tmp / "bad_vocab.txt").string()), c.out(),
                            {"bad_vocab.txt", special}, special);
  }
  write_text(c.tmp / "empty_vocab.txt", "");
  expect_clean_user_error(c.run((c.tmp / "corpus.txt").string(), "", (c.tmp / "empty_vocab.txt").string()), c.out(),
                          {"empty_vocab.txt", "empty"}, "empty vocab");
  expect_clean_user_error(c.run((c.tmp / "corpus.txt").string(), "", (c.tmp / "no_vocab.txt").string()), c.out(),
                          {"no_vocab.txt", "not found"}, "missing vocab");
}

TEST(DataPrepareErrors, UnwritableOutputDirectory) {
  Case c;
  write_text(c.tmp / "corpus.txt", good_corpus());
  write_text(c.tmp / "afile", "x");
  write_text(c.tmp / "vocab.txt", good_vocab());
  auto r = run_cli("prepare --input " + (c.tmp / "corpus.txt").string() + " --vocab " + (c.tmp / "vocab.txt").string() +
                   " --output-dir " + (c.tmp / "afile/sub").string());
  expect_clean_user_error(r, c.tmp / "afile/sub", {"afile/sub", "--output-dir"}, "below a file");
  r = run_cli("prepare --input " + (c.tmp / "corpus.txt").string() + " --vocab " + (c.tmp / "vocab.txt").string() +
              " --output-dir " + (c.tmp / "afile").string());
  expect_clean_user_error(r, c.tmp / "afile", {"afile", "--output-dir"}, "a file as output dir");
  // /proc/self is not writable even for root.
  r = run_cli("prepare --input " + (c.tmp / "corpus.txt").string() + " --vocab " + (c.tmp / "vocab.txt").string() +
              " --output-dir /proc/self/bert-prepare-out");
  expect_clean_user_error(r, "/proc/self/bert-prepare-out", {"/proc/self/bert-prepare-out", "--output-dir"},
                          "read-only file system");
}
