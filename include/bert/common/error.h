#pragma once
// Two kinds of failure, two exit codes:
//   UserError    -> exit 2: the user can fix it (bad flag, unknown key, missing file, bad data).
//   RuntimeError -> exit 1: something failed while doing valid work.
// Messages are one line that names the thing and the fix.
#include <stdexcept>
#include <string>

namespace bert {

struct UserError : std::runtime_error {
  explicit UserError(const std::string& msg) : std::runtime_error(msg) {}
};

struct RuntimeError : std::runtime_error {
  explicit RuntimeError(const std::string& msg) : std::runtime_error(msg) {}
};

}  // namespace bert
