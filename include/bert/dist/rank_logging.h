#pragma once
// Logging in a multi-process job: with world size > 1 every console line carries "[rank N]",
// rank 0 keeps the configured level (it prints the step log), the other ranks only report
// warnings and errors, so every rank's problems still reach the user without N copies of
// the progress lines. World size 1 changes nothing.
namespace bert::dist {

void configure_rank_logging(int rank, int world_size);

}  // namespace bert::dist
