// Multi-process tests of the c10d layer on 127.0.0.1. The parent test starts workers that are
// this very test executable running only DistWorker.Run (which skips unless
// BERT_DIST_TEST_ROLE is set), either through `bert-train launch --program <this exe>` or
// directly with fork/exec. Workers save what they computed; the parent checks it.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "bert/common/error.h"
#include "bert/config/run_config.h"
#include "bert/dist/communicator.h"
#include "bert/dist/grad_reducer.h"
#include "bert/dist/launcher.h"
#include "test_util.h"

using namespace bert;
using namespace bert::test;

namespace {

const std::vector<std::vector<int64_t>> kShapes = {{3, 4}, {7}, {2, 2, 2}, {100}, {1}, {5, 3}};
constexpr size_t kNoGradParam = 4;  // this one never gets a gradient

torch::Tensor initial_param(size_t i, int rank) {
  auto shape = kShapes[i];
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return (torch::arange(n, torch::kFloat32) * 0.01f * float(i + 1) + float(rank) * 1000.0f).reshape(shape);
}

torch::Tensor local_grad(size_t i, int rank) {
  auto shape = kShapes[i];
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return (torch::sin(torch::arange(n, torch::kFloat32) + float(i)) * float(rank + 1)).reshape(shape);
}

std::string env_or(const char* name, const std::string& def) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : def;
}

std::string self_exe() { return fs::read_symlink("/proc/self/exe").string(); }

DistConfig worker_config() {
  DistConfig cfg;
  cfg.timeout_s = std::stod(env_or("BERT_DIST_TEST_TIMEOUT", "30"));
  cfg.rendezvous_timeout_s = 30;
  cfg.heartbeat_s = 0.2;
  return cfg;
}

// The (bucket bytes, comm dtype) cases every "reduce" worker runs, in order.
const std::vector<std::pair<int64_t, std::string>> kCases = {
    {1 << 20, "fp32"}, {1, "fp32"}, {64, "fp32"}, {int64_t(1) << 32, "fp32"}, {128, "bf16"}, {1 << 20, "fp16"}};

// role "reduce": broadcast, then for each case a bucketed gradient average of fresh local
// gradients, then metric reductions; saves rank<r>_<case>.pt
void worker_reduce(const dist::LaunchEnv& env) {
  auto comm = dist::Communicator::create(env, worker_config(), "gloo");
  std::vector<torch::Tensor> params;
  for (size_t i = 0; i < kShapes.size(); ++i) params.push_back(initial_param(i, env.rank).set_requires_grad(true));
  {
    torch::NoGradGuard ng;
    comm->broadcast_(params, 0);
  }
  fs::path dir = env_or("BERT_DIST_TEST_OUT", ".");
  for (size_t c = 0; c < kCases.size(); ++c) {
    for (size_t i = 0; i < kShapes.size(); ++i)
      params[i].mutable_grad() = i == kNoGradParam ? torch::Tensor() : local_grad(i, env.rank);
    comm->take_stats();
    dist::GradientReducer reducer(*comm, params, kCases[c].first, kCases[c].second);
    reducer.reduce();
    auto mean = comm->allreduce(torch::tensor({float(env.rank + 1)}), dist::Reduce::Mean);
    auto sum = comm->allreduce(torch::tensor({float(env.rank + 1)}), dist::Reduce::Sum);
    auto max = comm->allreduce(torch::tensor({float(env.rank + 1)}), dist::Reduce::Max);
    auto isum = comm->allreduce(torch::tensor({int64_t(env.rank)}), dist::Reduce::Sum);
    comm->barrier();
    auto stats = comm->take_stats();
    std::vector<torch::Tensor> out;
    for (auto& p : params) out.push_back(p.detach().clone());
    for (auto& p : params) out.push_back(p.grad().clone());
    out.push_back(mean);
    out.push_back(sum);
    out.push_back(max);
    out.push_back(isum);
    out.push_back(torch::tensor({double(stats.seconds), double(stats.bytes), double(stats.calls),
                                 double(reducer.num_buckets())}));
    torch::save(out, (dir / ("rank" + std::to_string(env.rank) + "_" + std::to_string(c) + ".pt")).string());
  }
  comm->finish();
}

// The (bucket bytes, comm dtype) cases the "overlap" worker runs, in order.
const std::vector<std::pair<int64_t, std::string>> kOverlapCases = {
    {1, "fp32"}, {64, "fp32"}, {1 << 20, "fp32"}, {1, "bf16"}, {64, "fp16"}};

// role "overlap": a tiny two-layer net with an unused parameter and one used only by the first
// of two micro-batches (accumulation 2), reduced post-hoc (mode 0) and overlapped with the
// second backward (mode 1); saves overlap<r>_<case>_<mode>.pt with the gradients, the buckets
// the backward had started, and the exposed/total comm seconds
void worker_overlap(const dist::LaunchEnv& env) {
  auto comm = dist::Communicator::create(env, worker_config(), "gloo");
  fs::path dir = env_or("BERT_DIST_TEST_OUT", ".");
  for (size_t c = 0; c < kOverlapCases.size(); ++c)
    for (int mode = 0; mode < 2; ++mode) {
      torch::manual_seed(7);  // identical parameters on every rank
      auto unused = torch::randn({5}).requires_grad_(true);
      auto late = torch::randn({3}).requires_grad_(true);  // gets a gradient in micro-batch 0 only
      auto w1 = torch::randn({4, 3}).requires_grad_(true), b1 = torch::randn({4}).requires_grad_(true);
      auto w2 = torch::randn({2, 4}).requires_grad_(true), b2 = torch::randn({2}).requires_grad_(true);
      std::vector<torch::Tensor> params = {unused, late, w1, b1, w2, b2};
      dist::GradientReducer reducer(*comm, params, kOverlapCases[c].first, kOverlapCases[c].second, mode == 1);
      for (int micro = 0; micro < 2; ++micro) {
        auto x = torch::sin(torch::arange(6, torch::kFloat32) * float(env.rank + 1) + float(micro)).reshape({2, 3});
        auto h = torch::tanh(x.matmul(w1.t()) + b1);
        auto y = h.matmul(w2.t()) + b2;
        auto loss = y.pow(2).sum() + (h * h).sum() * w2.sum();  // w2 reaches the loss twice
        if (micro == 0) loss = loss + (late * late).sum() * x.sum();
        if (micro == 1) reducer.arm_overlap();
        loss.backward();
      }
      double in_flight = double(reducer.buckets_in_flight());
      comm->take_stats();
      reducer.reduce();
      auto stats = comm->take_stats();
      std::vector<torch::Tensor> out;
      for (auto& p : params) out.push_back(p.grad().clone());
      out.push_back(torch::tensor({in_flight, stats.seconds, stats.total_seconds, double(reducer.num_buckets())},
                                  torch::kDouble));
      torch::save(out, (dir / ("overlap" + std::to_string(env.rank) + "_" + std::to_string(c) + "_" +
                               std::to_string(mode) + ".pt"))
                           .string());
    }
  comm->finish();
}

// role "die": rank BERT_DIST_TEST_VICTIM kills itself after joining; the others keep
// reducing until the failure surfaces
void worker_die(const dist::LaunchEnv& env) {
  auto comm = dist::Communicator::create(env, worker_config(), "gloo");
  comm->barrier();
  int victim = std::stoi(env_or("BERT_DIST_TEST_VICTIM", "1"));
  if (env.rank == victim) ::raise(SIGKILL);
  for (int i = 0; i < 2000; ++i) {
    auto t = comm->allreduce(torch::ones({4}), dist::Reduce::Sum);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::printf("survived without noticing the lost rank\n");
}

// role "bench" (not a test: run by hand, see docs/benchmarks/distributed.md): time
// GradientReducer::reduce() on gradients shaped like the BERT pretraining model of
// BERT_DIST_BENCH_MODEL (a bert_config.json), next to one raw c10d allreduce of a
// pre-flattened fp32 buffer of the same size (the floor for any bucketing scheme).
std::vector<std::vector<int64_t>> bert_pretraining_shapes(const ModelConfig& m) {
  int64_t H = m.hidden_size, I = m.intermediate_size, V = m.vocab_size;
  std::vector<std::vector<int64_t>> s = {{V, H}, {m.max_position_embeddings, H}, {m.type_vocab_size, H}, {H}, {H}};
  for (int64_t l = 0; l < m.num_hidden_layers; ++l) {
    for (int k = 0; k < 4; ++k) {  // query, key, value, attention output
      s.push_back({H, H});
      s.push_back({H});
    }
    s.push_back({H});  // attention LayerNorm
    s.push_back({H});
    s.push_back({I, H});
    s.push_back({I});
    s.push_back({H, I});
    s.push_back({H});
    s.push_back({H});  // output LayerNorm
    s.push_back({H});
  }
  s.push_back({H, H});  // pooler
  s.push_back({H});
  s.push_back({H, H});  // MLM transform + LayerNorm + decoder bias (decoder weight tied)
  s.push_back({H});
  s.push_back({H});
  s.push_back({H});
  s.push_back({V});
  s.push_back({2, H});  // NSP
  s.push_back({2});
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void worker_bench(const dist::LaunchEnv& env) {
  auto model = load_model_config(env_or("BERT_DIST_BENCH_MODEL", "configs/bert_base.json"));
  int iters = std::stoi(env_or("BERT_DIST_BENCH_ITERS", "10"));
  auto comm = dist::Communicator::create(env, worker_config(), "gloo");
  std::vector<torch::Tensor> params;
  int64_t numel = 0;
  for (auto& shape : bert_pretraining_shapes(model)) {
    params.push_back(torch::zeros(shape).set_requires_grad(true));
    numel += params.back().numel();
  }
  using Clock = std::chrono::steady_clock;
  auto secs = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  auto report = [&](const std::string& what, const std::vector<double>& t, int64_t bytes) {
    if (env.rank == 0)
      std::printf("BENCH %s world=%d params=%lld tensors=%zu: median %.1f ms (min %.1f, max %.1f) over %d, %.1f MB "
                  "sent per rank per step\n",
                  what.c_str(), env.world_size, (long long)numel, params.size(), 1e3 * median(t),
                  1e3 * *std::min_element(t.begin(), t.end()), 1e3 * *std::max_element(t.begin(), t.end()),
                  int(t.size()), bytes / 1e6);
  };
  {  // reference: one pre-flattened fp32 buffer, one allreduce
    auto flat = torch::randn({numel});
    std::vector<torch::Tensor> v = {flat};
    std::vector<double> t;
    for (int i = 0; i < iters + 2; ++i) {
      comm->barrier();
      auto t0 = Clock::now();
      comm->allreduce_(v, dist::Reduce::Sum);
      if (i >= 2) t.push_back(secs(t0));
    }
    report("raw-allreduce-fp32-one-buffer", t, numel * 4);
  }
  for (auto [mb, dtype] : std::vector<std::pair<double, std::string>>{{25, "fp32"}, {25, "fp16"}, {25, "bf16"}, {4, "fp32"}}) {
    dist::GradientReducer reducer(*comm, params, int64_t(mb * 1024 * 1024), dtype);
    std::vector<double> t;
    int64_t bytes = 0;
    for (int i = 0; i < iters + 2; ++i) {
      for (auto& p : params) p.mutable_grad() = torch::randn_like(p);
      comm->barrier();
      comm->take_stats();
      auto t0 = Clock::now();
      reducer.reduce();
      double dt = secs(t0);
      bytes = comm->take_stats().bytes;
      if (i >= 2) t.push_back(dt);
    }
    char name[96];
    std::snprintf(name, sizeof name, "GradientReducer-%s-bucket%gMB-%zubuckets", dtype.c_str(), mb, reducer.num_buckets());
    report(name, t, bytes);
  }
  {
    std::vector<torch::Tensor> v;
    for (auto& p : params) v.push_back(p.detach());
    std::vector<double> t;
    for (int i = 0; i < 3; ++i) {
      comm->barrier();
      auto t0 = Clock::now();
      comm->broadcast_(v, 0);
      t.push_back(secs(t0));
    }
    report("broadcast-parameters", t, numel * 4);
  }
  comm->finish();
}

struct Proc {
  int code = -1;
  std::string out;
};

// Start `n` workers of this executable directly (fork/exec) with torchrun variables and `role`.
std::vector<Proc> spawn_workers(int n, const std::string& role, const std::vector<std::string>& extra_env,
                                const TempDir& dir) {
  int port = dist::free_tcp_port();
  std::string exe = self_exe();
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> env = {"RANK=" + std::to_string(r), "WORLD_SIZE=" + std::to_string(n),
                                    "LOCAL_RANK=" + std::to_string(r), "MASTER_ADDR=127.0.0.1",
                                    "MASTER_PORT=" + std::to_string(port), "BERT_DIST_TEST_ROLE=" + role,
                                    "OMP_NUM_THREADS=1", "PATH=/usr/bin:/bin"};
    for (auto& e : extra_env) env.push_back(e);
    std::string log = (dir / ("log" + std::to_string(r))).string();
    std::vector<char*> envp, argv;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string filter = "--gtest_filter=DistWorker.Run";
    argv = {exe.data(), filter.data(), nullptr};
    pid_t pid = fork();
    if (pid == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execve(exe.c_str(), argv.data(), envp.data());
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  std::vector<Proc> out(n);
  for (int r = 0; r < n; ++r) {
    int status = 0;
    ::waitpid(pids[r], &status, 0);
    out[r].code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    out[r].out = read_text(dir / ("log" + std::to_string(r)));
  }
  return out;
}

std::vector<torch::Tensor> load(const fs::path& p) {
  std::vector<torch::Tensor> v;
  torch::load(v, p.string());
  return v;
}

// Run the "reduce" role in `n` workers through `bert-train launch`; result[case][rank].
// With `mpirun`, OpenMPI's variables are used instead (MASTER_PORT passed with -x).
std::vector<std::vector<std::vector<torch::Tensor>>> run_reduce(int n, bool mpirun = false) {
  TempDir dir;
  CmdResult r;
  if (!mpirun) {
    r = run_cli("launch --nproc-per-node " + std::to_string(n) + " --master-port 0 --program " + self_exe() +
                    " -- --gtest_filter=DistWorker.Run",
                "BERT_DIST_TEST_ROLE=reduce BERT_DIST_TEST_OUT=" + dir.path.string());
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.err.find("launch: all " + std::to_string(n) + " worker(s) finished successfully"), std::string::npos)
        << r.err;
  } else {
    std::string cmd = "mpirun " + std::string(::geteuid() == 0 ? "--allow-run-as-root " : "") +
                      "--oversubscribe -np " + std::to_string(n) + " -x BERT_DIST_TEST_ROLE=reduce -x BERT_DIST_TEST_OUT=" +
                      dir.path.string() + " -x MASTER_PORT=" + std::to_string(dist::free_tcp_port()) + " " +
                      self_exe() + " --gtest_filter=DistWorker.Run >" + (dir / "mpi.log").string() + " 2>&1";
    int status = std::system(cmd.c_str());
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    r.out = read_text(dir / "mpi.log");
    EXPECT_EQ(r.code, 0) << r.out;
  }
  std::vector<std::vector<std::vector<torch::Tensor>>> res(kCases.size());
  for (size_t c = 0; c < kCases.size(); ++c)
    for (int k = 0; k < n; ++k) {
      auto p = dir / ("rank" + std::to_string(k) + "_" + std::to_string(c) + ".pt");
      if (!fs::exists(p)) {
        ADD_FAILURE() << "rank " << k << " wrote no result for case " << c << "\n" << r.out << r.err;
        return {};
      }
      res[c].push_back(load(p));
    }
  return res;
}

void check_reduce(const std::vector<std::vector<torch::Tensor>>& res, int n, double tol) {
  ASSERT_EQ(res.size(), size_t(n));
  const size_t P = kShapes.size();
  for (int k = 0; k < n; ++k) {
    const auto& v = res[k];
    ASSERT_EQ(v.size(), 2 * P + 5);
    for (size_t i = 0; i < P; ++i) {
      // broadcast: everyone holds rank 0's parameters
      EXPECT_TRUE(torch::equal(v[i], initial_param(i, 0))) << "rank " << k << " param " << i;
      // gradients: the average over ranks
      torch::Tensor expect = torch::zeros(kShapes[i]);
      if (i != kNoGradParam) {
        for (int r = 0; r < n; ++r) expect += local_grad(i, r);
        expect /= n;
      }
      EXPECT_TRUE(torch::allclose(v[P + i], expect, tol, tol))
          << "rank " << k << " grad " << i << " max diff " << (v[P + i] - expect).abs().max().item<double>();
      // every rank ends with bit-identical gradients
      EXPECT_TRUE(torch::equal(v[P + i], res[0][P + i])) << "rank " << k << " grad " << i;
    }
    EXPECT_FLOAT_EQ(v[2 * P].item<float>(), (n + 1) / 2.0f);
    EXPECT_FLOAT_EQ(v[2 * P + 1].item<float>(), n * (n + 1) / 2.0f);
    EXPECT_FLOAT_EQ(v[2 * P + 2].item<float>(), float(n));
    EXPECT_EQ(v[2 * P + 3].item<int64_t>(), int64_t(n) * (n - 1) / 2);
    auto stats = v[2 * P + 4];
    EXPECT_GT(stats[0].item<double>(), 0.0);  // seconds
    EXPECT_GT(stats[1].item<double>(), 0.0);  // bytes
    EXPECT_GE(stats[2].item<double>(), 5.0);  // calls
  }
}

}  // namespace

// The worker body; a no-op unless started by the tests below.
TEST(DistWorker, Run) {
  std::string role = env_or("BERT_DIST_TEST_ROLE", "");
  if (role.empty()) GTEST_SKIP() << "only runs as a worker process of the DistCollectives tests";
  auto env = dist::detect_launch_env();
  try {
    if (role == "reduce") worker_reduce(env);
    else if (role == "die") worker_die(env);
    else if (role == "overlap") worker_overlap(env);
    else if (role == "bench") worker_bench(env);
    else FAIL() << "unknown role " << role;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(1);  // the process group may hold threads blocked on a dead peer
  }
}

// Buckets of 1 byte (one tensor each), 64 bytes, 1 MiB and 4 GiB (one bucket) all give the
// average; bf16/fp16 on the wire within their precision.
void check_all_cases(int n, bool mpirun = false) {
  auto res = run_reduce(n, mpirun);
  ASSERT_EQ(res.size(), kCases.size());
  const size_t P = kShapes.size();
  for (size_t c = 0; c < kCases.size(); ++c) {
    SCOPED_TRACE("bucket " + std::to_string(kCases[c].first) + " bytes, " + kCases[c].second);
    double tol = kCases[c].second == "bf16" ? 2e-2 : kCases[c].second == "fp16" ? 2e-3 : 1e-6;
    check_reduce(res[c], n, tol);
    if (kCases[c].second == "fp32" && n == 2)  // two ranks: summation order cannot differ
      for (int k = 0; k < n; ++k)
        for (size_t i = P; i < 2 * P; ++i)
          EXPECT_TRUE(torch::equal(res[c][k][i], res[0][k][i])) << "rank " << k << " grad " << i - P;
  }
  auto buckets = [&](size_t c) { return res[c][0].back()[3].item<double>(); };
  EXPECT_EQ(buckets(0), 1.0);                      // 1 MiB: everything in one bucket
  EXPECT_EQ(buckets(1), double(kShapes.size()));   // 1 byte: one tensor per bucket
  EXPECT_GT(buckets(2), 1.0);                      // 64 bytes: in between
  EXPECT_LT(buckets(2), double(kShapes.size()));
  EXPECT_EQ(buckets(3), 1.0);                      // 4 GiB
  // fp16/bf16 put half the bytes of fp32 on the wire
  EXPECT_LT(res[5][0].back()[1].item<double>(), res[0][0].back()[1].item<double>());
}

TEST(DistCollectives, TwoRanksAverageGradientsInAnyBucketSizeAndDtype) { check_all_cases(2); }

// Reducing while the last backward runs gives the same .grad as reducing after it (bitwise:
// the same values go into the same buckets), with an unused parameter and one whose gradient
// comes only from an earlier micro-batch; complete buckets start during backward, in order.
TEST(DistCollectives, OverlappedReducerEqualsPostHocReducer) {
  TempDir dir;
  auto procs = spawn_workers(2, "overlap", {"BERT_DIST_TEST_OUT=" + dir.path.string()}, dir);
  for (int r = 0; r < 2; ++r) ASSERT_EQ(procs[r].code, 0) << "rank " << r << ":\n" << procs[r].out;
  const size_t P = 6;
  for (size_t c = 0; c < kOverlapCases.size(); ++c) {
    SCOPED_TRACE("bucket " + std::to_string(kOverlapCases[c].first) + " bytes, " + kOverlapCases[c].second);
    std::vector<std::vector<torch::Tensor>> res;  // [rank * 2 + mode]
    for (int r = 0; r < 2; ++r)
      for (int mode = 0; mode < 2; ++mode)
        res.push_back(load(dir / ("overlap" + std::to_string(r) + "_" + std::to_string(c) + "_" +
                                  std::to_string(mode) + ".pt")));
    for (auto& v : res) ASSERT_EQ(v.size(), P + 1);
    for (size_t i = 0; i < P; ++i)
      for (size_t k = 1; k < res.size(); ++k)
        EXPECT_TRUE(torch::equal(res[k][i], res[0][i]))
            << "result " << k << " param " << i << " max diff " << (res[k][i] - res[0][i]).abs().max().item<double>();
    EXPECT_TRUE(torch::equal(res[0][0], torch::zeros({5})));  // unused: zero, not a deadlock
    EXPECT_GT(res[0][1].abs().sum().item<double>(), 0.0);     // earlier micro-batch's gradient kept
    for (int r = 0; r < 2; ++r) {
      const auto& post = res[r * 2].back();
      const auto& ovl = res[r * 2 + 1].back();
      EXPECT_EQ(post[0].item<double>(), 0.0);  // post-hoc: nothing starts during backward
      EXPECT_GT(ovl[1].item<double>(), 0.0);
      EXPECT_GE(ovl[2].item<double>(), ovl[1].item<double>());  // in flight >= exposed
      EXPECT_DOUBLE_EQ(post[2].item<double>(), post[1].item<double>());
      double buckets = ovl[3].item<double>();
      if (kOverlapCases[c].first == 1) {
        // one tensor per bucket, launched b2, w2, b1, w1 during backward; `late` (no gradient in
        // this backward) holds back itself and `unused` until reduce()
        EXPECT_EQ(buckets, double(P));
        EXPECT_EQ(ovl[0].item<double>(), 4.0);
      }
      if (kOverlapCases[c].first == (1 << 20)) EXPECT_EQ(ovl[0].item<double>(), 0.0);  // one bucket, incl. unused
    }
  }
}

TEST(DistCollectives, ThreeRanksAverageGradientsInAnyBucketSizeAndDtype) { check_all_cases(3); }

// `mpirun -np 2 <binary>` as the seed recipes run it (Debian's openmpi-bin; skipped without it).
TEST(DistCollectives, MpirunTwoRanks) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun (openmpi-bin) not installed";
  check_all_cases(2, true);
}

TEST(DistCollectives, RendezvousTimeoutNamesMissingRanks) {
  dist::LaunchEnv env;
  env.rank = 0;
  env.world_size = 3;
  env.master_port = dist::free_tcp_port();
  env.source = "test";
  DistConfig cfg;
  cfg.rendezvous_timeout_s = 1.5;
  try {
    auto comm = dist::Communicator::create(env, cfg, "gloo");
    FAIL() << "rendezvous with missing ranks must fail";
  } catch (const RuntimeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("waiting for 3 ranks at 127.0.0.1:" + std::to_string(env.master_port) + ", 1 joined after"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("missing ranks: 1, 2"), std::string::npos) << m;
  }
}

TEST(DistCollectives, UnreachableMasterIsAClearError) {
  dist::LaunchEnv env;
  env.rank = 1;
  env.world_size = 2;
  env.master_port = dist::free_tcp_port();  // nobody listens there
  DistConfig cfg;
  cfg.rendezvous_timeout_s = 1;
  try {
    auto comm = dist::Communicator::create(env, cfg, "gloo");
    FAIL() << "joining without rank 0 must fail";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot reach rank 0's rendezvous store at 127.0.0.1:" +
                                         std::to_string(env.master_port)),
              std::string::npos)
        << e.what();
  }
}

TEST(DistCollectives, UnavailableBackendsAreUserErrorsBeforeAnyWaiting) {
  dist::LaunchEnv env;
  env.world_size = 2;  // rank 1 never comes: the backend must be refused before the rendezvous
  env.master_port = dist::free_tcp_port();
  DistConfig cfg;
  cfg.rendezvous_timeout_s = 60;
  for (auto [backend, word] : std::vector<std::pair<std::string, std::string>>{
           {"hccl", "Habana"}, {"nccl", "NCCL"}, {"mpi", "unknown collective backend"}}) {
    cfg.backend = backend;
#ifdef BERT_WITH_CUDA
    if (backend == "nccl") continue;  // this build has NCCL
#endif
    try {
      dist::Communicator::create(env, cfg, "gloo");
      ADD_FAILURE() << backend << " must be refused";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
    }
  }
  cfg.backend = "auto";  // auto follows the device: an HPU asks for hccl
  EXPECT_THROW(dist::Communicator::create(env, cfg, "hccl"), UserError);
}

TEST(DistCollectives, SingleProcessIsANoOp) {
  dist::LaunchEnv env;  // rank 0 of 1
  auto comm = dist::Communicator::create(env, DistConfig{}, "gloo");
  EXPECT_EQ(comm->backend(), "none");
  auto p = torch::ones({3}).set_requires_grad(true);
  p.mutable_grad() = torch::full({3}, 2.0);
  dist::GradientReducer reducer(*comm, {p}, 1, "bf16");
  reducer.reduce();
  EXPECT_TRUE(torch::equal(p.grad(), torch::full({3}, 2.0)));
  EXPECT_FLOAT_EQ(comm->allreduce(torch::tensor({5.0f}), dist::Reduce::Mean).item<float>(), 5.0f);
  comm->barrier();
  EXPECT_EQ(comm->take_stats().calls, 0);
}

TEST(DistCollectives, KilledWorkerMakesTheOtherFailNamingIt) {
  TempDir dir;
  auto procs = spawn_workers(2, "die", {"BERT_DIST_TEST_VICTIM=1", "BERT_DIST_TEST_TIMEOUT=20"}, dir);
  EXPECT_EQ(procs[1].code, 128 + SIGKILL) << procs[1].out;
  EXPECT_EQ(procs[0].code, 1) << procs[0].out;
  EXPECT_NE(procs[0].out.find("lost rank 1"), std::string::npos) << procs[0].out;
  EXPECT_EQ(procs[0].out.find("survived"), std::string::npos) << procs[0].out;
}

TEST(DistCollectives, KilledRankZeroIsNamedByTheOthers) {
  TempDir dir;
  auto procs = spawn_workers(2, "die", {"BERT_DIST_TEST_VICTIM=0", "BERT_DIST_TEST_TIMEOUT=20"}, dir);
  EXPECT_EQ(procs[0].code, 128 + SIGKILL) << procs[0].out;
  EXPECT_EQ(procs[1].code, 1) << procs[1].out;
  EXPECT_NE(procs[1].out.find("lost rank 0"), std::string::npos) << procs[1].out;
}
