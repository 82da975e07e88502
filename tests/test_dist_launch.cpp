// `bert-train launch`: worker variables, output forwarding, failure propagation, signal
// forwarding and option checks, run end to end through the real binary.
#include <gtest/gtest.h>

#include "test_util.h"

using namespace bert::test;

TEST(DistLaunch, RunsInfoInTwoWorkers) {
  auto r = run_cli("launch --nproc-per-node 2 --master-port 0 -- info --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("[rank 0] {"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[rank 1] {"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[rank 1]   \"version\""), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("all 2 worker(s) finished successfully"), std::string::npos) << r.err;
}

TEST(DistLaunch, SetsTorchrunVariablesForThisNode) {
  auto r = run_cli(
      "launch --nproc-per-node 2 --nnodes 2 --node-rank 1 --master-addr 10.1.2.3 --master-port 1234 --omp-threads 3 "
      "--program /bin/sh -- -c 'echo \"vars $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $GROUP_RANK "
      "$MASTER_ADDR $MASTER_PORT $OMP_NUM_THREADS\"'");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("[rank 2] vars 2 4 0 2 1 10.1.2.3 1234 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[rank 3] vars 3 4 1 2 1 10.1.2.3 1234 3"), std::string::npos) << r.out;
}

TEST(DistLaunch, NoPrefixAndStderrForwarded) {
  auto r = run_cli("launch --nproc-per-node 1 --no-prefix --program /bin/sh -- -c 'echo out; echo err >&2'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("out\n"), std::string::npos);
  EXPECT_EQ(r.out.find("[rank"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("err\n"), std::string::npos) << r.err;
}

TEST(DistLaunch, FailingWorkerStopsTheOthersAndItsExitCodeIsReturned) {
  // rank 1 fails at once; rank 0 would print "survived" after 20 s unless it is stopped
  auto r = run_cli("launch --nproc-per-node 2 --stop-timeout 5 --program /bin/sh -- -c "
                   "'if [ \"$RANK\" = 1 ]; then echo failing; exit 7; fi; sleep 20; echo survived'");
  EXPECT_EQ(r.code, 7) << r.out << r.err;
  EXPECT_NE(r.out.find("[rank 1] failing"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("survived"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("worker rank 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 1 failed with exit code 7"), std::string::npos) << r.err;
}

TEST(DistLaunch, FailingBertTrainWorkerPropagatesExitCode) {
  auto r = run_cli("launch --nproc-per-node 2 --master-port 0 -- info --no-such-flag");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("failed with exit code 2"), std::string::npos) << r.err;
}

TEST(DistLaunch, KilledWorkerIsReportedWithItsSignal) {
  auto r = run_cli("launch --nproc-per-node 2 --stop-timeout 5 --program /bin/sh -- -c "
                   "'if [ \"$RANK\" = 0 ]; then kill -9 $$; fi; sleep 20; echo survived'");
  EXPECT_EQ(r.code, 128 + 9) << r.out << r.err;
  EXPECT_NE(r.err.find("rank 0 failed with signal 9"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("survived"), std::string::npos) << r.out;
}

TEST(DistLaunch, ForwardsSigtermToEveryWorker) {
  TempDir dir;
  // each worker traps TERM, marks itself ready, and waits; the shell below waits for both marks,
  // then sends SIGTERM to the launcher only
  std::string worker = "trap 'echo got-term; exit 0' TERM; touch " + dir.path.string() +
                       "/ready$RANK; i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; echo timeout";
  write_text(dir / "worker.sh", worker);
  std::string script = std::string(BERT_TRAIN_BIN) + " launch --nproc-per-node 2 --stop-timeout 10 --program /bin/sh -- " +
                       (dir / "worker.sh").string() + " >" + (dir / "out").string() + " 2>" + (dir / "err").string() +
                       " & pid=$!; i=0; while [ $i -lt 300 ] && ! { [ -e " + dir.path.string() + "/ready0 ] && [ -e " +
                       dir.path.string() + "/ready1 ]; }; do sleep 0.1; i=$((i+1)); done; kill -TERM $pid; wait $pid; "
                       "echo $? >" + (dir / "rc").string();
  write_text(dir / "run.sh", script);
  std::system(("/bin/sh " + (dir / "run.sh").string()).c_str());
  std::string out = read_text(dir / "out"), err = read_text(dir / "err");
  EXPECT_EQ(read_text(dir / "rc"), "143\n") << out << err;
  EXPECT_NE(out.find("[rank 0] got-term"), std::string::npos) << out << err;
  EXPECT_NE(out.find("[rank 1] got-term"), std::string::npos) << out << err;
  EXPECT_EQ(out.find("timeout"), std::string::npos) << out;
  EXPECT_NE(err.find("forwarding it to 2 worker(s)"), std::string::npos) << err;
}

TEST(DistLaunch, BadUsageIsAUserError) {
  auto r = run_cli("launch --nproc-per-node 2");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("after '--'"), std::string::npos) << r.err;
  r = run_cli("launch --nnodes 2 --node-rank 2 -- info");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--node-rank 2"), std::string::npos) << r.err;
  r = run_cli("launch --nnodes 2 --master-port 0 -- info");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--master-port 0"), std::string::npos) << r.err;
  r = run_cli("launch --program /nonexistent/prog -- x");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("/nonexistent/prog"), std::string::npos) << r.err;
}

// deploy/k8s: valid YAML, kustomize references resolve, workloads use the env file and a
// securityContext (needs python3-yaml; skipped without it).
TEST(DistDeploy, KubernetesManifestsAreValid) {
  if (std::system("python3 -c 'import yaml' >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3-yaml not installed";
  std::string cmd = "python3 " + (source_dir() / "deploy/k8s/check_manifests.py").string() + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int status = pclose(p);
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_NE(out.find(" 0 problem(s)"), std::string::npos) << out;
}

// The recipes build the commands they document (DRY_RUN prints them without running).
TEST(DistDeploy, RecipesPrintTheirCommands) {
  TempDir dir;
  write_text(dir / "hosts", "# two nodes\nnode01 slots=2\nnode02 slots=2\n");
  std::string out_file = (dir / "out").string();
  std::string cmd = "DRY_RUN=1 HOSTFILE=" + (dir / "hosts").string() + " PROCESS_PER_NODE=2 DATASET_DIR=/d " +
                    "OMP_NUM_THREADS=4 bash " + (source_dir() / "scripts/run_pretrain_multinode.sh").string() +
                    " --max-steps 5 >" + out_file + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_text(out_file);
  std::string out = read_text(out_file);
  EXPECT_NE(out.find("-np 4"), std::string::npos) << out;
  EXPECT_NE(out.find("ppr:2:node"), std::string::npos) << out;
  EXPECT_NE(out.find("master node01:29500"), std::string::npos) << out;
  EXPECT_NE(out.find("pretrain --config"), std::string::npos) << out;
  EXPECT_NE(out.find("--max-steps 5"), std::string::npos) << out;
  cmd = "DRY_RUN=1 NNODES=2 NODE_RANK=1 MASTER_ADDR=node01 DATASET_DIR=/d bash " +
        (source_dir() / "scripts/run_pretrain_torchrun.sh").string() + " >" + out_file + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_text(out_file);
  out = read_text(out_file);
  EXPECT_NE(out.find("launch --nnodes 2 --node-rank 1 --nproc-per-node 2 --master-addr node01"), std::string::npos)
      << out;
}
