#pragma once
// `bert-train launch`: start and supervise the local workers of a data-parallel job, the way
// torchrun's static launcher does. Each worker gets RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR and MASTER_PORT; its stdout/stderr lines are
// forwarded with a "[rank N] " prefix; SIGINT/SIGTERM are forwarded to every worker (a second
// one kills them); when one worker fails the others are stopped (SIGTERM, then SIGKILL after a
// grace period) and the failed rank and its exit code are reported.
#include <string>
#include <vector>

namespace bert::dist {

struct LaunchOptions {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;          // 0: pick a free port (single node only)
  std::string program;              // executable to run; "" = this bert-train binary
  std::vector<std::string> args;    // arguments for each worker
  bool prefix_output = true;        // "[rank N] " before every forwarded line
  double stop_grace_s = 10;         // SIGTERM -> SIGKILL delay when stopping workers
  int omp_threads = 0;              // OMP_NUM_THREADS per worker; 0 = keep the caller's, else cores / nproc
};

// Runs every local worker to the end. Returns 0 when all succeed; otherwise the exit code of
// the first worker that failed (128 + signal when it was killed), or 128 + the signal that
// interrupted the launcher. UserError for bad options or a program that cannot be started.
int run_launcher(const LaunchOptions& opts);

// A TCP port on 127.0.0.1 that was free a moment ago (for tests and --master-port 0).
int free_tcp_port();

}  // namespace bert::dist
