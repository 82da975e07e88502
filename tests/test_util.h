#pragma once
// Helpers shared by the tests: temporary directories, running the CLI, skipping when
// ../shared/data is absent.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace bert::test {

namespace fs = std::filesystem;

// Paths fixed at configure time, compiled into test_util.cpp only (keeps the other test files'
// compile commands free of checkout paths, so ccache hits across clones).
const char* bert_train_bin();   // the bert-train binary under test
const char* source_dir_path();  // the repository root
const char* shared_data_path(); // ../shared/data next to the repository
#define BERT_TRAIN_BIN (::bert::test::bert_train_bin())
#define BERT_SHARED_DATA_DIR (::bert::test::shared_data_path())

// A fresh directory under the system temp dir, removed when the object dies.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "bert-test-XXXXXX").string();
    char* p = mkdtemp(tmpl.data());
    if (!p) throw std::runtime_error("mkdtemp failed");
    path = p;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path operator/(const std::string& s) const { return path / s; }
};

struct CmdResult {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `bert-train <args>` through the shell; args are passed as written.
inline CmdResult run_cli(const std::string& args, const std::string& env = "") {
  static int counter = 0;
  fs::path dir = fs::temp_directory_path();
  std::string tag = std::to_string(::getpid()) + "-" + std::to_string(counter++);
  fs::path out = dir / ("bert-cli-out-" + tag), err = dir / ("bert-cli-err-" + tag);
  std::string cmd = env + (env.empty() ? "" : " ") + std::string(BERT_TRAIN_BIN) + " " + args + " >" +
                    out.string() + " 2>" + err.string() + " </dev/null";
  int status = std::system(cmd.c_str());
  CmdResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  r.out = slurp(out);
  r.err = slurp(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

inline void write_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

inline std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline fs::path source_dir() { return source_dir_path(); }

// ../shared/data, or skip the test when it is absent.
#define BERT_REQUIRE_SHARED_DATA(var)                                                   \
  ::std::filesystem::path var = BERT_SHARED_DATA_DIR;                                   \
  if (!::std::filesystem::exists(var)) GTEST_SKIP() << "../shared/data not present"

}  // namespace bert::test
