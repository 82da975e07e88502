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
