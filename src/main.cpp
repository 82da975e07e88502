// bert-train: builds the CLI11 app from the registered subcommands, parses, runs the chosen
// one, and turns failures into one line and an exit code (2: user mistake, 1: runtime failure).
#include <c10/util/Exception.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <map>

#include "bert/build_info.h"
#include "bert/common/error.h"
#include "bert/common/logging.h"
#include "bert/common/strings.h"
#include "cli/command.h"

namespace {

std::string first_line(const std::string& s) {
  auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace bert;
  try {
    init_logging("info");
  } catch (...) {
  }

  CLI::App app{"bert-train: BERT data preparation, pretraining and fine-tuning in one binary", "bert-train"};
  app.set_version_flag("--version", std::string("bert-train ") + BERT_VERSION);
  app.option_defaults()->always_capture_default();
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the subcommand

  cli::GlobalOptions global;
  app.add_option("--log-level", global.log_level, "trace|debug|info|warn|error|off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  global.threads_opt = app.add_option("--threads", global.threads, "CPU threads (0 = all cores)")
                           ->check(CLI::Range(0, 4096));
  global.device_opt = app.add_option("--device", global.device, "device: auto|cpu|cuda|hpu|ipu")
                          ->check(CLI::IsMember({"auto", "cpu", "cuda", "hpu", "ipu"}));
  global.precision_opt = app.add_option("--precision", global.precision, "precision: fp32|bf16|fp16")
                             ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));

  auto& registry = cli::command_registry();
  std::stable_sort(registry.begin(), registry.end(),
                   [](const auto& a, const auto& b) { return a.order < b.order; });
  std::map<std::string, cli::Action> actions;
  for (auto& c : registry) actions[c.name] = c.setup(app, global);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (app.get_subcommands().empty()) {
      // the first word that is not an option (or its value) should have been a command
      std::vector<std::string> names;
      for (auto& c : registry) names.push_back(c.name);
      for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a.rfind("-", 0) == 0) {
          if (a.find('=') == std::string::npos && i + 1 < argc && a != "--help" && a != "-h") ++i;
          continue;
        }
        std::cerr << "error: unknown command '" << a << "'" << did_you_mean(a, names)
                  << "; commands: " << join(names, ", ") << " (see 'bert-train --help')\n";
        return 2;
      }
    }
    std::string where = "bert-train";
    for (auto* sub : app.get_subcommands()) where += " " + sub->get_name();
    std::cerr << "error: " << first_line(e.what()) << " (see '" << where << " --help')\n";
    return 2;
  }

  try {
    cli::apply_globals(global);
    for (auto* sub : app.get_subcommands()) {
      auto it = actions.find(sub->get_name());
      if (it != actions.end() && it->second) return it->second();
    }
    std::cerr << "error: no subcommand given (see 'bert-train --help')\n";
    return 2;
  } catch (const UserError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const RuntimeError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const c10::Error& e) {
    std::cerr << "error: LibTorch: " << first_line(e.what_without_backtrace()) << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory; reduce train.micro_batch_size or data.max_seq_length\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << first_line(e.what()) << "\n";
    return 1;
  }
}
