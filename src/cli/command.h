#pragma once
// The CLI layer: each subcommand lives in its own src/cli/cmd_<name>.cpp, registers itself
// with BERT_COMMAND, declares its options on a CLI11 sub-app, and returns the action to run
// once parsing has succeeded. Actions call into the library (bert_core) and return the exit code.
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "bert/config/run_config.h"

namespace bert::cli {

// Options every subcommand accepts (declared once on the root app, usable after the subcommand).
struct GlobalOptions {
  std::string log_level = "info";
  int64_t threads = 0;
  std::string device = "auto";
  std::string precision = "fp32";
  CLI::Option* threads_opt = nullptr;
  CLI::Option* device_opt = nullptr;
  CLI::Option* precision_opt = nullptr;
};

using Action = std::function<int()>;
// Adds the subcommand to `app` and returns what to run when it is chosen.
using Setup = std::function<Action(CLI::App& app, GlobalOptions& global)>;

struct CommandInfo {
  std::string name;
  int order;  // position in --help
  Setup setup;
};

std::vector<CommandInfo>& command_registry();

struct Registrar {
  Registrar(std::string name, int order, Setup s) {
    command_registry().push_back({std::move(name), order, std::move(s)});
  }
};

#define BERT_COMMAND(name, order, setup_fn) \
  static ::bert::cli::Registrar bert_command_registrar_##name(#name, order, setup_fn)

// The shared config flags (--config, --model-config, --set, --print-config and the dedicated
// flags mapped onto config keys). A subcommand calls add() with the dedicated flags it supports,
// and resolve() after parsing.
class ConfigFlags {
 public:
  void add_config_options(CLI::App* sub);
  // A dedicated flag that sets a config key, e.g. ("--seed", "train.seed", "random seed").
  void add_mapped(CLI::App* sub, const std::string& flag, const std::string& key, const std::string& help);
  // A boolean flag mapped to a key (set to true when given).
  void add_mapped_flag(CLI::App* sub, const std::string& flag, const std::string& key, const std::string& help);
  // Resolve file < --set < flags (< the global --device/--precision/--threads).
  RunConfig resolve(const GlobalOptions& g) const;
  bool print_config = false;

 private:
  ConfigSources src_;
  struct Mapped {
    std::string key;
    std::string value;
    bool is_flag = false;
    bool flag_value = false;
    CLI::Option* opt = nullptr;
  };
  std::vector<std::unique_ptr<Mapped>> mapped_;
};

// Apply the global options that need no config: log level, threads.
void apply_globals(const GlobalOptions& g);

}  // namespace bert::cli
