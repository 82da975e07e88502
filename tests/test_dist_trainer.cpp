// Data-parallel pretraining through the real CLI, processes on 127.0.0.1: W workers with
// micro-batch b follow the loss trajectory of one worker with micro-batch W*b on the same
// samples (2 and 4 workers, `bert-train launch` and `mpirun`, gradient all-reduce overlapped
// with backward or not, with and without accumulation), checkpoints move between world
// sizes exactly (2 -> 1 and 1 -> 2), only rank 0 writes outputs while every rank's warnings
// still reach the user, held-out evaluation is reduced across ranks, SIGTERM to one rank stops every rank at the same step, and a killed
// rank is named by the survivor.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "bert/config/fields.h"
#include "bert/data/hdf5_io.h"
#include "bert/dist/launcher.h"
#include "test_util.h"

using namespace bert;
using namespace bert::test;
using json = nlohmann::ordered_json;

namespace {

constexpr int64_t kL = 16, kP = 3, kVocab = 60, kRows = 100;

// 100 sequences in two uneven shards; every row has exactly kP masked tokens, so the masked-LM
// loss of a micro-batch is a plain mean over equally many tokens per sequence and averaging
// per-rank means equals the mean over the concatenated batch.
void write_shards(const fs::path& dir, std::vector<int64_t> sizes, int64_t id) {
  for (int64_t rows : sizes) {
    data::PretrainRows r;
    r.resize(rows, kL, kP);
    for (int64_t i = 0; i < rows; ++i, ++id) {
      int64_t len = 10 + id % (kL - 9);
      for (int64_t x = 0; x < len; ++x) {
        int32_t tok = 10 + static_cast<int32_t>((id * 13 + x * 7) % (kVocab - 10));
        if (x == 0) tok = 2;                             // [CLS]
        if (x == len / 2 || x == len - 1) tok = 3;       // [SEP]
        r.input_ids[i * kL + x] = tok;
        r.input_mask[i * kL + x] = 1;
        r.segment_ids[i * kL + x] = x > len / 2 ? 1 : 0;
      }
      for (int64_t k = 0; k < kP; ++k) {
        int64_t pos = 1 + k * 2;
        r.masked_lm_positions[i * kP + k] = static_cast<int32_t>(pos);
        r.masked_lm_ids[i * kP + k] = r.input_ids[i * kL + pos];
        r.input_ids[i * kL + pos] = 4;  // [MASK]
      }
      r.next_sentence_labels[i] = static_cast<int32_t>(id % 2);
    }
    data::Hdf5Writer w(dir / ("shard_" + std::to_string(id) + ".hdf5"), rows, kL, kP, true, false);
    w.write(0, r);
    w.commit();
  }
}

// A 2-layer hidden-16 model, no dropout, LAMB, global batch 8, schedule length fixed at 20
// steps so that runs stopped at step 10 follow the same learning rates.
std::string write_config(const fs::path& dir) {
  json cfg = {
      {"model",
       {{"vocab_size", 64},
        {"hidden_size", 16},
        {"num_hidden_layers", 2},
        {"num_attention_heads", 2},
        {"intermediate_size", 32},
        {"max_position_embeddings", 32},
        {"hidden_dropout_prob", 0.0},
        {"attention_probs_dropout_prob", 0.0}}},
      {"train", {{"global_batch_size", 8}, {"micro_batch_size", 8}, {"seed", 5}, {"threads", 1}}},
      {"optimizer", {{"name", "lamb"}, {"learning_rate", 0.02}, {"warmup_proportion", 0.1}, {"total_steps", 20}}},
      {"data",
       {{"data_dir", (dir / "shards").string()},
        {"max_seq_length", kL},
        {"max_predictions_per_seq", kP},
        {"shuffle_buffer", 16},
        {"num_workers", 1}}},
      {"logging", {{"log_every", 1}}},
      {"dist", {{"timeout_s", 60}, {"rendezvous_timeout_s", 60}, {"heartbeat_s", 0.2}}},
  };
  fs::path p = dir / "tiny.json";
  write_text(p, cfg.dump(2));
  return p.string();
}

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

// The step lines of a metrics file (or, with eval = true, the evaluation lines).
std::vector<json> metrics(const fs::path& file, bool eval = false) {
  std::vector<json> out;
  std::istringstream in(read_text(file));
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) {
      auto j = json::parse(line);
      if (j.contains(eval ? "eval_mlm_loss" : "loss")) out.push_back(j);
    }
  return out;
}

// step -> loss
std::map<int64_t, double> losses(const fs::path& run) {
  std::map<int64_t, double> out;
  for (auto& j : metrics(run / "metrics.jsonl")) out[j["step"].get<int64_t>()] = j["loss"].get<double>();
  return out;
}

// Shared data, config, and the one-worker reference run (micro-batch 8, 20 steps).
struct World {
  TempDir dir;
  std::string cfg;
  fs::path reference;
  std::string reference_log;
  World() {
    fs::create_directories(dir / "shards");
    write_shards(dir / "shards", {61, 39}, 0);
    fs::create_directories(dir / "eval");
    write_shards(dir / "eval", {32}, 1000);  // held out: a multiple of every batch grouping used
    cfg = write_config(dir.path);
    reference = dir / "one";
    auto r = run_cli("pretrain --config " + cfg + " --max-steps 20 --eval-dir " + q(dir / "eval") + " --output-dir " +
                         q(reference),
                     "OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE");
    reference_log = r.out + r.err;
    EXPECT_EQ(r.code, 0) << reference_log;
  }
};

World& world() {
  static World w;
  return w;
}

std::string launch(int n) {
  return "launch --nproc-per-node " + std::to_string(n) + " --master-port 0 --omp-threads 1 -- ";
}

void expect_same_losses(const std::map<int64_t, double>& got, int64_t from, int64_t to, const std::string& what) {
  const auto& ref = losses(world().reference);
  ASSERT_EQ(ref.size(), 20u) << world().reference_log;
  for (int64_t s = from; s <= to; ++s) {
    ASSERT_TRUE(got.count(s)) << what << ": no loss for step " << s;
    EXPECT_NEAR(got.at(s), ref.at(s), 1e-5) << what << " at step " << s;
  }
}

// W workers x micro-batch `micro` x accumulation 8 / (W * micro); `extra` adds flags (e.g. overlap off).
void equal_trajectory(int workers, int64_t micro = 0, const std::string& extra = "") {
  auto& w = world();
  TempDir t;
  if (micro == 0) micro = 8 / workers;
  const int64_t accum = 8 / (workers * micro);
  auto r = run_cli(launch(workers) + "pretrain --config " + w.cfg + " --set train.micro_batch_size=" +
                       std::to_string(micro) + extra + " --max-steps 20 --eval-dir " + q(w.dir / "eval") +
                       " --output-dir " + q(t / "run"),
                   "OMP_WAIT_POLICY=PASSIVE");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto got = losses(t / "run");
  EXPECT_EQ(got.size(), 20u);
  expect_same_losses(got, 1, 20,
                     std::to_string(workers) + " workers x micro " + std::to_string(micro) + " x accum " +
                         std::to_string(accum) + extra);
  // the reduction happened, the step log shows the communication (exposed and in flight)
  EXPECT_NE(r.err.find("x " + std::to_string(accum) + " accumulation steps x " + std::to_string(workers) + " worker(s)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(" ms in flight"), std::string::npos) << r.err;
  auto m = metrics(t / "run" / "metrics.jsonl");
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.back()["world_size"].get<int>(), workers);
  EXPECT_GT(m.back()["comm_s"].get<double>(), 0.0);
  EXPECT_GT(m.back()["comm_share"].get<double>(), 0.0);
  EXPECT_LT(m.back()["comm_share"].get<double>(), 1.0);
  EXPECT_GE(m.back()["comm_total_s"].get<double>(), m.back()["comm_s"].get<double>());
  EXPECT_EQ(m.back()["samples"].get<int64_t>(), 160);
  // the final held-out evaluation: each rank scored its share, the sums were reduced
  auto ev = metrics(t / "run" / "metrics.jsonl", true), ref = metrics(w.reference / "metrics.jsonl", true);
  ASSERT_EQ(ev.size(), 1u);
  ASSERT_EQ(ref.size(), 1u);
  EXPECT_EQ(ev[0]["eval_sequences"].get<int64_t>(), 32);
  EXPECT_EQ(ev[0]["eval_masked_tokens"].get<int64_t>(), 32 * kP);
  EXPECT_NEAR(ev[0]["eval_mlm_accuracy"].get<double>(), ref[0]["eval_mlm_accuracy"].get<double>(), 1e-9);
  EXPECT_NEAR(ev[0]["eval_nsp_accuracy"].get<double>(), ref[0]["eval_nsp_accuracy"].get<double>(), 1e-9);
  EXPECT_NEAR(ev[0]["eval_mlm_loss"].get<double>(), ref[0]["eval_mlm_loss"].get<double>(), 1e-5);
  EXPECT_NEAR(ev[0]["eval_nsp_loss"].get<double>(), ref[0]["eval_nsp_loss"].get<double>(), 1e-5);
}

}  // namespace

// `bert-train launch --nproc-per-node 2 -- pretrain`: 2 x micro 4 == 1 x micro 8, 20 steps.
TEST(DistTrainer, LaunchTwoWorkersMatchOneWorker) { equal_trajectory(2); }
// 2 x micro 2 x accumulation 2: only the last micro-batch's backward overlaps the all-reduce.
TEST(DistTrainer, TwoWorkersWithAccumulationMatchOneWorker) { equal_trajectory(2, 2); }
// The post-hoc reduction (dist.overlap_backward=false) follows the same trajectory.
TEST(DistTrainer, TwoWorkersWithoutOverlapMatchOneWorker) {
  equal_trajectory(2, 4, " --set dist.overlap_backward=false");
}

// 4 x micro 2 == 1 x micro 8.
TEST(DistTrainer, LaunchFourWorkersMatchOneWorker) { equal_trajectory(4); }

// `mpirun -np 2 bert-train pretrain` (OpenMPI's variables) gives the same trajectory.
TEST(DistTrainer, MpirunTwoWorkersMatchOneWorker) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun (openmpi-bin) not installed";
  auto& w = world();
  TempDir t;
  std::string cmd = "OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE MASTER_PORT=" + std::to_string(dist::free_tcp_port()) +
                    " mpirun " + std::string(::geteuid() == 0 ? "--allow-run-as-root " : "") +
                    "--oversubscribe -np 2 -x MASTER_PORT -x OMP_NUM_THREADS -x OMP_WAIT_POLICY " +
                    std::string(BERT_TRAIN_BIN) + " pretrain --config " + w.cfg +
                    " --set train.micro_batch_size=4 --max-steps 20 --output-dir " + q(t / "run") + " >" +
                    (t / "mpi.log").string() + " 2>&1 </dev/null";
  int status = std::system(cmd.c_str());
  std::string log = read_text(t / "mpi.log");
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log;
  EXPECT_NE(log.find("via openmpi"), std::string::npos) << log;
  expect_same_losses(losses(t / "run"), 1, 20, "mpirun -np 2");
}

// 2 workers to step 10, resumed on 1 worker to 20; and 1 worker to 10, resumed on 2: both equal
// the uninterrupted run at steps 11..20.
TEST(DistTrainer, CheckpointsMoveBetweenWorldSizes) {
  auto& w = world();
  TempDir t;
  const std::string env = "OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE";
  auto a1 = run_cli(launch(2) + "pretrain --config " + w.cfg + " --set train.micro_batch_size=4 --max-steps 10 " +
                    "--output-dir " + q(t / "a"),
                    "OMP_WAIT_POLICY=PASSIVE");
  ASSERT_EQ(a1.code, 0) << a1.out << a1.err;
  auto st = json::parse(read_text(t / "a" / "checkpoints" / "step_10" / "trainer_state.json"));
  EXPECT_EQ(st["world_size"].get<int>(), 2);
  EXPECT_EQ(st["data_cursor"]["samples_in_epoch"].get<int64_t>(), 80);
  auto a2 = run_cli("pretrain --config " + w.cfg + " --max-steps 20 --resume latest --output-dir " + q(t / "a"), env);
  ASSERT_EQ(a2.code, 0) << a2.out << a2.err;
  expect_same_losses(losses(t / "a"), 1, 20, "2 workers to 10, 1 worker to 20");

  auto b1 = run_cli("pretrain --config " + w.cfg + " --max-steps 10 --output-dir " + q(t / "b"), env);
  ASSERT_EQ(b1.code, 0) << b1.out << b1.err;
  auto b2 = run_cli(launch(2) + "pretrain --config " + w.cfg + " --set train.micro_batch_size=4 --max-steps 20 " +
                    "--resume latest --output-dir " + q(t / "b"),
                    "OMP_WAIT_POLICY=PASSIVE");
  ASSERT_EQ(b2.code, 0) << b2.out << b2.err;
  expect_same_losses(losses(t / "b"), 1, 20, "1 worker to 10, 2 workers to 20");
}

// Rank 0 alone prints the step log and writes config, metrics and checkpoints; a warning raised
// on every rank reaches the user from every rank, prefixed with it.
TEST(DistTrainer, OnlyRankZeroWritesButEveryRankWarns) {
  auto& w = world();
  TempDir t;
  auto r = run_cli(launch(2) + "pretrain --config " + w.cfg + " --set train.micro_batch_size=4 --max-steps 4 " +
                   "--set checkpoint.every_steps=2 --output-dir " + q(t / "run"),
                   "OMP_WAIT_POLICY=PASSIVE");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::string all = r.out + r.err;
  EXPECT_NE(all.find("] [info] [rank 0] phase 1 step 4/4"), std::string::npos) << all;  // the log pattern names the rank
  EXPECT_EQ(all.find("step 4/4"), all.rfind("step 4/4")) << "the step log is printed once:\n" << all;
  std::istringstream lines(all);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("[rank 1]", 0) == 0) EXPECT_EQ(line.find("phase 1 step"), std::string::npos) << line;
  EXPECT_EQ(metrics(t / "run" / "metrics.jsonl").size(), 4u);  // not 8
  std::set<std::string> entries;
  for (auto& e : fs::directory_iterator(t / "run")) entries.insert(e.path().filename().string());
  EXPECT_EQ(entries, (std::set<std::string>{"checkpoints", "config.json", "metrics.jsonl", "train.log"}));
  std::set<std::string> ckpts;
  for (auto& e : fs::directory_iterator(t / "run" / "checkpoints")) ckpts.insert(e.path().filename().string());
  EXPECT_EQ(ckpts, (std::set<std::string>{"latest", "step_2", "step_4"}));  // no temporaries left by anyone
  std::string log = read_text(t / "run" / "train.log");
  EXPECT_EQ(log.find("[rank 1]"), std::string::npos);

  // resuming with another global batch warns on every rank
  auto r2 = run_cli(launch(2) + "pretrain --config " + w.cfg +
                        " --set train.micro_batch_size=4 --set train.global_batch_size=16 --max-steps 5 --resume latest " +
                        "--output-dir " + q(t / "run"),
                    "OMP_WAIT_POLICY=PASSIVE");
  ASSERT_EQ(r2.code, 0) << r2.out << r2.err;
  std::string all2 = r2.out + r2.err;
  for (int k : {0, 1})
    EXPECT_NE(all2.find("] [warning] [rank " + std::to_string(k) + "] resuming with train.global_batch_size 16"),
              std::string::npos)
        << all2;
}

namespace {

// Two ranks started by fork/exec with torchrun's variables, each logging to <dir>/rank<r>.log,
// training "forever" into <dir>/run; returns once 3 steps are in the metrics.
std::vector<pid_t> start_two_ranks(const TempDir& t, const std::string& cfg) {
  int port = dist::free_tcp_port();
  std::vector<pid_t> pids;
  for (int rank = 0; rank < 2; ++rank) {
    pid_t pid = fork();
    if (pid < 0) break;
    if (pid == 0) {
      std::string log = (t / ("rank" + std::to_string(rank) + ".log")).string();
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::setenv("RANK", std::to_string(rank).c_str(), 1);
      ::setenv("WORLD_SIZE", "2", 1);
      ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", "2", 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      ::setenv("OMP_NUM_THREADS", "1", 1);
      ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
      std::string out = (t / "run").string();
      ::execl(BERT_TRAIN_BIN, BERT_TRAIN_BIN, "pretrain", "--config", cfg.c_str(), "--set",
              "train.micro_batch_size=4", "--set", "optimizer.schedule=constant", "--max-steps", "1000000",
              "--output-dir", out.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline &&
         (!fs::exists(t / "run" / "metrics.jsonl") || metrics(t / "run" / "metrics.jsonl").size() < 3))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return pids;
}

std::vector<int> wait_all(const std::vector<pid_t>& pids) {
  std::vector<int> codes;
  for (pid_t p : pids) {
    int status = 0;
    ::waitpid(p, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  return codes;
}

}  // namespace

// SIGTERM to rank 1 only: both ranks stop after the same step, rank 0 saves that step, and both
// exit 0.
TEST(DistTrainer, SigtermOnOneRankStopsAllAtTheSameStep) {
  auto& w = world();
  TempDir t;
  auto pids = start_two_ranks(t, w.cfg);
  ASSERT_EQ(pids.size(), 2u);
  ::kill(pids[1], SIGTERM);
  auto codes = wait_all(pids);
  std::string log0 = read_text(t / "rank0.log"), log1 = read_text(t / "rank1.log");
  ASSERT_EQ(codes, (std::vector<int>{0, 0})) << log0 << "\n----\n" << log1;
  EXPECT_NE(log0.find("done: a signal on another rank"), std::string::npos) << log0;
  auto m = metrics(t / "run" / "metrics.jsonl");
  ASSERT_FALSE(m.empty());
  int64_t last = m.back()["step"].get<int64_t>();
  auto latest = fs::canonical(t / "run" / "checkpoints" / "latest");
  EXPECT_EQ(latest.filename().string(), "step_" + std::to_string(last)) << log0;
  auto st = json::parse(read_text(latest / "trainer_state.json"));
  EXPECT_EQ(st["step"].get<int64_t>(), last);
  EXPECT_TRUE(st["final"].get<bool>());
  EXPECT_EQ(st["rank_rng"].size(), 2u);
}

// SIGKILL of rank 1 mid-training: rank 0 fails (exit 1) with a message naming the lost rank
// within the collective timeout instead of hanging.
TEST(DistTrainer, KilledRankIsNamedBySurvivor) {
  auto& w = world();
  TempDir t;
  auto pids = start_two_ranks(t, w.cfg);
  ASSERT_EQ(pids.size(), 2u);
  ::kill(pids[1], SIGKILL);
  auto codes = wait_all(pids);
  std::string log0 = read_text(t / "rank0.log");
  EXPECT_EQ(codes, (std::vector<int>{1, 128 + SIGKILL})) << log0;
  EXPECT_NE(log0.find("lost rank 1"), std::string::npos) << log0;
}
