#include "bert/common/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <set>

#include "bert/common/error.h"
#include "bert/common/strings.h"

namespace bert {

static spdlog::level::level_enum parse_level(const std::string& level) {
  static const std::vector<std::string> names = {"trace", "debug", "info", "warn", "error", "off"};
  if (level == "trace") return spdlog::level::trace;
  if (level == "debug") return spdlog::level::debug;
  if (level == "info") return spdlog::level::info;
  if (level == "warn" || level == "warning") return spdlog::level::warn;
  if (level == "error") return spdlog::level::err;
  if (level == "off") return spdlog::level::off;
  throw UserError("unknown log level '" + level + "'; use one of " + join(names, ", ") +
                  did_you_mean(level, names));
}

void init_logging(const std::string& level) {
  auto lvl = parse_level(level);
  auto logger = spdlog::get("bert");
  if (!logger) {
    auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    logger = std::make_shared<spdlog::logger>("bert", sink);
    spdlog::set_default_logger(logger);
  }
  spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
  spdlog::set_level(lvl);
  logger->flush_on(spdlog::level::info);
}

void set_log_level(const std::string& level) { spdlog::set_level(parse_level(level)); }

void add_log_file(const std::filesystem::path& path) {
  static std::set<std::string> added;
  if (!added.insert(path.string()).second) return;
  auto logger = spdlog::default_logger();
  try {
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path.string(), false);
    sink->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
    logger->sinks().push_back(sink);
  } catch (const spdlog::spdlog_ex& e) {
    throw UserError("cannot open log file " + path.string() + ": " + e.what());
  }
}

}  // namespace bert
