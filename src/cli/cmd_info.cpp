// bert-train info: what this binary was built with and what it can run on.
#include <iostream>

#include "bert/config/run_config.h"
#include "bert/device/system_info.h"
#include "command.h"

namespace bert::cli {

static Action setup_info(CLI::App& app, GlobalOptions&) {
  auto* sub = app.add_subcommand("info", "versions, build flags, CPU features and available devices");
  auto json_out = std::make_shared<bool>(false);
  sub->add_flag("--json", *json_out, "print machine-readable JSON");
  auto reference = std::make_shared<bool>(false);
  sub->add_flag("--config-reference", *reference, "print the config reference (Markdown) and exit");
  return [json_out, reference]() {
    if (*reference) {
      std::cout << config_reference_markdown();
      return 0;
    }
    auto info = system_info();
    if (*json_out)
      std::cout << info.dump(2) << "\n";
    else
      std::cout << system_info_text(info);
    return 0;
  };
}

BERT_COMMAND(info, 10, setup_info);

}  // namespace bert::cli
