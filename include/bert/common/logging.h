#pragma once
// spdlog setup: a console sink (stderr) for everyone, plus a file sink in the run's
// output directory once it is known.
#include <cstdint>
#include <filesystem>
#include <string>

#include "bert/config/fields.h"

namespace bert {

struct LoggingConfig {
  std::string level = "info";
  int64_t log_every = 10;                 // steps between step-log lines
  std::string metrics_file = "metrics.jsonl";
  std::string log_file = "train.log";

  void describe(config::FieldList& f) {
    f.add("level", level, "log level").one_of({"trace", "debug", "info", "warn", "error", "off"});
    f.add("log_every", log_every, "optimizer steps between step-log lines").range(1, 1e9);
    f.add("metrics_file", metrics_file, "JSON-lines metrics file in the output directory");
    f.add("log_file", log_file, "log file in the output directory (\"\" = none)");
  }
};

// Console logging at `level` ("trace".."off"); UserError for an unknown level.
void init_logging(const std::string& level);
void set_log_level(const std::string& level);
// Also log to this file (appending). Safe to call more than once with the same path.
void add_log_file(const std::filesystem::path& path);

}  // namespace bert
