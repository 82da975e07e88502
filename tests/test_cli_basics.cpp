// The CLI surface: --help/--version everywhere, info --json, one-line errors with exit 2.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>
#include <sstream>

#include "test_util.h"

using bert::test::run_cli;

TEST(Cli, Version) {
  auto r = run_cli("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("bert-train "), std::string::npos);
}

TEST(Cli, HelpOfEverySubcommand) {
  auto top = run_cli("--help");
  ASSERT_EQ(top.code, 0) << top.err;
  auto pos = top.out.find("Subcommands:");
  ASSERT_NE(pos, std::string::npos);
  std::istringstream ss(top.out.substr(pos));
  std::string line;
  std::getline(ss, line);
  int n = 0;
  std::regex cmd_re("^  ([a-z][a-z0-9-]*)\\s");
  while (std::getline(ss, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, cmd_re)) continue;
    std::string cmd = m[1];
    auto r = run_cli(cmd + " --help");
    EXPECT_EQ(r.code, 0) << cmd << ": " << r.err;
    EXPECT_NE(r.out.find("Usage:"), std::string::npos) << cmd;
    ++n;
  }
  EXPECT_GE(n, 1);
}

TEST(Cli, HelpShowsDefaults) {
  auto r = run_cli("--help");
  EXPECT_NE(r.out.find("=auto"), std::string::npos) << r.out;  // --device default
}

TEST(Cli, InfoJsonParses) {
  auto r = run_cli("info --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j.contains("libtorch"));
  EXPECT_TRUE(j["cpu"].contains("avx512_bf16"));
  bool cpu = false;
  for (auto& b : j["backends"])
    if (b["name"] == "cpu") cpu = b["available"].get<bool>();
  EXPECT_TRUE(cpu);
  EXPECT_EQ(j["backends"].size(), 4u);
}

TEST(Cli, InfoText) {
  auto r = run_cli("info");
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("Backends"), std::string::npos);
  EXPECT_NE(r.out.find("cpu"), std::string::npos);
}

TEST(Cli, UnknownCommandSuggests) {
  auto r = run_cli("infp");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("did you mean 'info'"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(Cli, UnknownFlagIsOneLineExit2) {
  auto r = run_cli("info --bogus");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(Cli, BadGlobalValueExit2) {
  auto r = run_cli("--device tpu info");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("tpu"), std::string::npos) << r.err;
}

TEST(Cli, ConfigReferenceMatchesDocs) {
  auto r = run_cli("info --config-reference");
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(bert::test::read_text(bert::test::source_dir() / "docs/config.md").find(r.out), std::string::npos);
}
