// Launch-convention detection (torchrun, OpenMPI, Slurm, single) on fake environments, and the
// Slurm node-list expansion.
#include <gtest/gtest.h>

#include <map>

#include "bert/common/error.h"
#include "bert/dist/launch_env.h"

using namespace bert;
using namespace bert::dist;

namespace {

EnvGetter fake(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace

TEST(DistEnv, NothingSetIsSingleProcess) {
  auto e = detect_launch_env(fake({}));
  EXPECT_EQ(e.source, "single");
  EXPECT_EQ(e.rank, 0);
  EXPECT_EQ(e.world_size, 1);
  EXPECT_FALSE(e.distributed());
}

TEST(DistEnv, Torchrun) {
  auto e = detect_launch_env(fake({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"},
                                   {"LOCAL_WORLD_SIZE", "4"}, {"MASTER_ADDR", "10.0.0.7"}, {"MASTER_PORT", "1234"}}));
  EXPECT_EQ(e.source, "torchrun");
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.world_size, 8);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world_size, 4);
  EXPECT_EQ(e.master_addr, "10.0.0.7");
  EXPECT_EQ(e.master_port, 1234);
  EXPECT_TRUE(e.distributed());
  EXPECT_NE(e.describe().find("rank 5 of 8"), std::string::npos);
}

TEST(DistEnv, TorchrunWinsOverMpiAndSlurm) {
  auto e = detect_launch_env(fake({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"},
                                   {"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                   {"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}}));
  EXPECT_EQ(e.source, "torchrun");
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.world_size, 2);
  EXPECT_EQ(e.master_port, kDefaultMasterPort);
}

TEST(DistEnv, TorchrunWithoutMasterAddrIsAUserError) {
  try {
    detect_launch_env(fake({{"RANK", "1"}, {"WORLD_SIZE", "2"}}));
    FAIL() << "expected UserError";
  } catch (const UserError& err) {
    EXPECT_NE(std::string(err.what()).find("MASTER_ADDR"), std::string::npos) << err.what();
  }
}

TEST(DistEnv, OpenMpiSingleNodeDefaultsToLoopback) {
  auto e = detect_launch_env(fake({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                                   {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                   {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}));
  EXPECT_EQ(e.source, "openmpi");
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.world_size, 2);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.master_addr, "127.0.0.1");
  EXPECT_EQ(e.master_port, 29500);
}

TEST(DistEnv, OpenMpiAcrossNodesNeedsMasterAddr) {
  auto env = std::map<std::string, std::string>{{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                                {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}};
  try {
    detect_launch_env(fake(env));
    FAIL() << "expected UserError";
  } catch (const UserError& err) {
    EXPECT_NE(std::string(err.what()).find("-x MASTER_ADDR"), std::string::npos) << err.what();
  }
  env["MASTER_ADDR"] = "node01";
  env["MASTER_PORT"] = "4000";
  auto e = detect_launch_env(fake(env));
  EXPECT_EQ(e.master_addr, "node01");
  EXPECT_EQ(e.master_port, 4000);
  EXPECT_EQ(e.local_world_size, 2);
}

TEST(DistEnv, SlurmUsesFirstHostOfCompressedNodeList) {
  auto e = detect_launch_env(fake({{"SLURM_PROCID", "6"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "2"},
                                   {"SLURM_NTASKS_PER_NODE", "4(x2)"}, {"SLURM_JOB_NODELIST", "gpu[07-08],cpu1"}}));
  EXPECT_EQ(e.source, "slurm");
  EXPECT_EQ(e.rank, 6);
  EXPECT_EQ(e.world_size, 8);
  EXPECT_EQ(e.local_rank, 2);
  EXPECT_EQ(e.local_world_size, 4);
  EXPECT_EQ(e.master_addr, "gpu07");
  EXPECT_EQ(e.master_port, 29500);
}

TEST(DistEnv, SlurmMasterAddrOverridesNodeList) {
  auto e = detect_launch_env(fake({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "n[1-2]"},
                                   {"MASTER_ADDR", "10.1.1.1"}, {"MASTER_PORT", "777"}}));
  EXPECT_EQ(e.master_addr, "10.1.1.1");
  EXPECT_EQ(e.master_port, 777);
}

TEST(DistEnv, MalformedOrInconsistentValuesAreUserErrors) {
  EXPECT_THROW(detect_launch_env(fake({{"RANK", "x"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}})), UserError);
  EXPECT_THROW(detect_launch_env(fake({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}})), UserError);
  EXPECT_THROW(detect_launch_env(fake({{"RANK", "0"}, {"WORLD_SIZE", "0"}})), UserError);
  EXPECT_THROW(detect_launch_env(fake({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"},
                                       {"MASTER_PORT", "70000"}})),
               UserError);
  try {
    detect_launch_env(fake({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "n[1-"}}));
    FAIL() << "expected UserError";
  } catch (const UserError& err) {
    EXPECT_NE(std::string(err.what()).find("n[1-"), std::string::npos) << err.what();
  }
}

TEST(DistEnv, SlurmNodeListExpansion) {
  using V = std::vector<std::string>;
  EXPECT_EQ(expand_slurm_nodelist("node[01-04,07]"), (V{"node01", "node02", "node03", "node04", "node07"}));
  EXPECT_EQ(expand_slurm_nodelist("a,b[3-4],c"), (V{"a", "b3", "b4", "c"}));
  EXPECT_EQ(expand_slurm_nodelist("single"), (V{"single"}));
  EXPECT_EQ(expand_slurm_nodelist("r[1-2]-n[08-09]"), (V{"r1-n08", "r1-n09", "r2-n08", "r2-n09"}));
  EXPECT_EQ(expand_slurm_nodelist("x[9-11]"), (V{"x9", "x10", "x11"}));
  EXPECT_THROW(expand_slurm_nodelist("n[3-1]"), UserError);
  EXPECT_THROW(expand_slurm_nodelist("n[a-b]"), UserError);
  EXPECT_THROW(expand_slurm_nodelist("n]1["), UserError);
}
