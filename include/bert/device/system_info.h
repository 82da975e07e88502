#pragma once
// What `bert-train info` reports: versions, build flags, BLAS, CPU ISA, every backend.
#include "bert/config/fields.h"

namespace bert {

config::json system_info();
std::string system_info_text(const config::json& info);

}  // namespace bert
