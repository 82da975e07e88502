#pragma once
// Who am I in a multi-process job? Read from the launcher's environment, checked in order:
//   1. torchrun / `bert-train launch`: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
//      MASTER_ADDR, MASTER_PORT
//   2. OpenMPI (mpirun): OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE; master from
//      MASTER_ADDR/MASTER_PORT, defaulting to 127.0.0.1:29500 when every rank is on one node
//   3. Slurm (srun): SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; master from MASTER_ADDR or the
//      first host of SLURM_JOB_NODELIST (compressed form such as node[01-04,07] understood)
//   4. nothing: a single process, rank 0 of 1.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace bert::dist {

constexpr int kDefaultMasterPort = 29500;

struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = kDefaultMasterPort;
  std::string source = "single";  // "torchrun", "openmpi", "slurm" or "single"

  bool distributed() const { return world_size > 1; }
  std::string describe() const;  // "rank 1 of 4 (local 1 of 2) via torchrun, master 10.0.0.1:29500"
};

// Environment lookup: returns nullopt for an unset variable.
using EnvGetter = std::function<std::optional<std::string>(const std::string&)>;
EnvGetter process_env();

// UserError (naming the variable and the fix) for malformed or inconsistent values.
LaunchEnv detect_launch_env(const EnvGetter& env = process_env());

// Expand a Slurm host list: "node[01-03,07],gpu5" -> node01 node02 node03 node07 gpu5.
// UserError for an unbalanced bracket or a bad range.
std::vector<std::string> expand_slurm_nodelist(const std::string& list);

}  // namespace bert::dist
