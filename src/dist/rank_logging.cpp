// Rank-prefixed console logging (see include/bert/dist/rank_logging.h).
#include "bert/dist/rank_logging.h"

#include <spdlog/spdlog.h>

#include <string>

namespace bert::dist {

void configure_rank_logging(int rank, int world_size) {
  if (world_size <= 1) return;
  spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] [rank " + std::to_string(rank) + "] %v");
  if (rank != 0 && spdlog::get_level() < spdlog::level::warn) spdlog::set_level(spdlog::level::warn);
}

}  // namespace bert::dist
