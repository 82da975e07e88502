#include "command.h"

#include <torch/torch.h>

#include "bert/common/logging.h"
#include "bert/device/device.h"

namespace bert::cli {

std::vector<CommandInfo>& command_registry() {
  static std::vector<CommandInfo> r;
  return r;
}

void ConfigFlags::add_config_options(CLI::App* sub) {
  sub->add_option("--config", src_.config_file, "run config JSON (see configs/)")->check(CLI::ExistingFile);
  sub->add_option("--model-config", src_.model_config_file,
                  "model section from a Google/HF bert_config.json (e.g. configs/bert_tiny.json)")
      ->check(CLI::ExistingFile);
  sub->add_option("--set", src_.sets, "override a config key: --set section.key=value (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  sub->add_flag("--print-config", print_config, "print the resolved config as JSON and exit");
}

void ConfigFlags::add_mapped(CLI::App* sub, const std::string& flag, const std::string& key,
                             const std::string& help) {
  auto m = std::make_unique<Mapped>();
  m->key = key;
  m->opt = sub->add_option(flag, m->value, help + " [config: " + key + "]");
  mapped_.push_back(std::move(m));
}

void ConfigFlags::add_mapped_flag(CLI::App* sub, const std::string& flag, const std::string& key,
                                  const std::string& help) {
  auto m = std::make_unique<Mapped>();
  m->key = key;
  m->is_flag = true;
  m->opt = sub->add_flag(flag, m->flag_value, help + " [config: " + key + "]");
  mapped_.push_back(std::move(m));
}

RunConfig ConfigFlags::resolve(const GlobalOptions& g) const {
  ConfigSources s = src_;
  for (const auto& m : mapped_) {
    if (!m->opt || m->opt->count() == 0) continue;
    s.flags.emplace_back(m->key, m->is_flag ? std::string(m->flag_value ? "true" : "false") : m->value);
  }
  if (g.device_opt && g.device_opt->count()) s.flags.emplace_back("train.device", g.device);
  if (g.precision_opt && g.precision_opt->count()) s.flags.emplace_back("train.precision", g.precision);
  if (g.threads_opt && g.threads_opt->count()) s.flags.emplace_back("train.threads", std::to_string(g.threads));
  return resolve_config(s);
}

void apply_globals(const GlobalOptions& g) {
  set_log_level(g.log_level);
  configure_threads(g.threads);
}

}  // namespace bert::cli
