// Communicator: rendezvous through c10d's TCPStore, a c10d process group (Gloo / NCCL), a
// heartbeat per rank, and failure diagnosis that names the lost rank. All c10d includes live
// here (and only in src/dist/) so the rest of the tree never sees them.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO  // Debian's LibTorch is built with Gloo; the headers need this switch
#endif
#if defined(BERT_WITH_CUDA) && !defined(USE_C10D_NCCL)
#define USE_C10D_NCCL  // CUDA builds of LibTorch ship ProcessGroupNCCL
#endif

#include "bert/dist/communicator.h"

#include <spdlog/spdlog.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <csignal>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>

#include "bert/common/error.h"
#include "bert/common/strings.h"

namespace bert::dist {

namespace {

using Clock = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

ms to_ms(double seconds) { return ms(static_cast<int64_t>(seconds * 1000.0)); }
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string first_line(const std::exception& e) {
  std::string s;
  if (auto* c = dynamic_cast<const c10::Error*>(&e))
    s = c->what_without_backtrace();
  else
    s = e.what();
  auto nl = s.find('\n');
  return trim(nl == std::string::npos ? s : s.substr(0, nl));
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 10 ? "%.1f" : "%.0f", s);
  return buf;
}

std::vector<uint8_t> bytes_of(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }
std::string string_of(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

std::string ranks_text(const std::vector<int>& ranks) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < ranks.size() && i < 16; ++i) parts.push_back(std::to_string(ranks[i]));
  std::string s = join(parts, ", ");
  if (ranks.size() > 16) s += ", ... (" + std::to_string(ranks.size()) + " in all)";
  return s;
}

bool is_loopback(const std::string& host) {
  return starts_with(host, "127.") || host == "localhost" || host == "::1";
}

c10d::ReduceOp to_c10d(Reduce op) {
  switch (op) {
    case Reduce::Max: return c10d::ReduceOp::MAX;
    case Reduce::Min: return c10d::ReduceOp::MIN;
    default: return c10d::ReduceOp::SUM;
  }
}

}  // namespace

struct Communicator::Impl {
  LaunchEnv env;
  DistConfig cfg;
  std::string backend = "none";
  c10::intrusive_ptr<c10d::Store> store;      // hosted by rank 0; rendezvous and shutdown
  c10::intrusive_ptr<c10d::Store> hb_store;   // own connection: heartbeat and diagnosis
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
  std::thread hb_thread;
  std::mutex hb_mutex;
  std::condition_variable hb_cv;
  bool hb_stop = false;
  std::vector<c10::intrusive_ptr<c10d::Work>> pending;
  std::vector<std::string> pending_what;
  std::vector<std::function<void()>> pending_finish;  // after the wait (bf16 over Gloo)
  CommStats stats;
  bool failed = false;
  bool finished = false;

  std::string endpoint() const { return env.master_addr + ":" + std::to_string(env.master_port); }
  std::string who() const { return "rank " + std::to_string(env.rank) + " of " + std::to_string(env.world_size); }
  bool single() const { return env.world_size <= 1; }
  // false for a single process; RuntimeError once a collective has failed
  bool active() const {
    if (failed)
      throw RuntimeError(who() + ": a collective already failed; the distributed job cannot continue");
    return !single();
  }

  void connect_store();
  void rendezvous();
  void choose_backend(const std::string& device_backend);
  void create_group();
  void start_heartbeat();
  void stop_heartbeat();
  [[noreturn]] void fail(const std::string& what, const std::exception& e, bool timed_out);
  void run(const std::string& what, const c10::intrusive_ptr<c10d::Work>& work);
  std::vector<torch::Tensor> staged(std::vector<torch::Tensor>& tensors) const;
  void unstage(std::vector<torch::Tensor>& tensors, std::vector<torch::Tensor>& staged) const;
};

void Communicator::Impl::connect_store() {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<uint16_t>(env.master_port);
  opts.isServer = env.rank == 0;
  opts.numWorkers = c10::nullopt;  // we wait ourselves, to say who is missing
  opts.waitWorkers = false;
  opts.timeout = to_ms(cfg.rendezvous_timeout_s);
  try {
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, opts);
  } catch (const std::exception& e) {
    if (env.rank == 0)
      throw RuntimeError("rank 0 cannot host the rendezvous store on port " + std::to_string(env.master_port) +
                         " (" + first_line(e) + "); choose another --master-port / MASTER_PORT");
    throw RuntimeError(who() + " cannot reach rank 0's rendezvous store at " + endpoint() + " within " +
                       seconds_text(cfg.rendezvous_timeout_s) + " s (" + first_line(e) +
                       "); start rank 0 or check MASTER_ADDR/MASTER_PORT");
  }
}

void Communicator::Impl::rendezvous() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  store->set("bert/join/" + std::to_string(env.rank), bytes_of(std::string(host) + " pid " + std::to_string(::getpid())));
  store->add("bert/joined", 1);
  const auto start = Clock::now();
  const double report_every = std::min(10.0, std::max(1.0, cfg.rendezvous_timeout_s / 3));
  double next_report = report_every;
  auto message = [&](int64_t joined) {
    std::vector<int> missing;
    for (int r = 0; r < env.world_size && missing.size() <= 16; ++r)
      if (!store->check({"bert/join/" + std::to_string(r)})) missing.push_back(r);
    return "waiting for " + std::to_string(env.world_size) + " ranks at " + endpoint() + ", " +
           std::to_string(joined) + " joined after " + seconds_text(since(start)) + " s; missing ranks: " +
           ranks_text(missing);
  };
  while (true) {
    int64_t joined = store->add("bert/joined", 0);
    if (joined >= env.world_size) break;
    double t = since(start);
    if (t >= cfg.rendezvous_timeout_s)
      throw RuntimeError(message(joined) + " (gave up after dist.rendezvous_timeout_s = " +
                         seconds_text(cfg.rendezvous_timeout_s) + " s; start the missing ranks or check their logs)");
    if (t >= next_report) {
      spdlog::info("{}", message(joined));
      next_report += report_every;
    }
    std::this_thread::sleep_for(ms(50));
  }
  spdlog::debug("rendezvous complete: {} ranks at {} after {:.2f} s", env.world_size, endpoint(), since(start));
}

// Decided before any networking, so an unusable backend fails at once on every rank.
void Communicator::Impl::choose_backend(const std::string& device_backend) {
  std::string b = cfg.backend == "auto" ? device_backend : cfg.backend;
  if (b == "hccl")
    throw UserError("collective backend hccl needs Habana's ProcessGroupHCCL (the habana_frameworks PyTorch "
                    "plugin), which this LibTorch build does not contain; use --set dist.backend=gloo or "
                    "--device cpu");
  if (b == "nccl") {
#ifndef USE_C10D_NCCL
    throw UserError("collective backend nccl is not in this build: it was compiled against a LibTorch without "
                    "CUDA/NCCL (Debian's libtorch is CPU-only); rebuild against a CUDA LibTorch "
                    "(docs/distributed.md) or use --set dist.backend=gloo");
#endif
  } else if (b != "gloo") {
    throw UserError("unknown collective backend '" + b + "'; use gloo, nccl or hccl");
  }
  backend = b;
}

void Communicator::Impl::create_group() {
  auto prefix = c10::make_intrusive<c10d::PrefixStore>("pg", store);
#ifdef USE_C10D_NCCL
  if (backend == "nccl") {
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = to_ms(cfg.timeout_s);
    pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(prefix, env.rank, env.world_size, opts);
    return;
  }
#endif
  auto opts = c10d::ProcessGroupGloo::Options::create(to_ms(cfg.timeout_s));
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  try {
    if (ifname && *ifname)
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(split(ifname, ',').front()));
    else if (is_loopback(env.master_addr))
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    else
      opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  } catch (const std::exception& e) {
    throw UserError("Gloo cannot open a network device (" + first_line(e) +
                    "); set GLOO_SOCKET_IFNAME to the interface that reaches the other nodes (e.g. eth0)");
  }
  opts->threads = 2;
  try {
    pg = c10::make_intrusive<c10d::ProcessGroupGloo>(prefix, env.rank, env.world_size, opts);
  } catch (const std::exception& e) {
    throw RuntimeError(who() + ": Gloo could not connect to every rank (" + first_line(e) +
                       "); check that the nodes reach each other, or set GLOO_SOCKET_IFNAME");
  }
}

void Communicator::Impl::start_heartbeat() {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<uint16_t>(env.master_port);
  opts.isServer = false;
  opts.waitWorkers = false;
  opts.timeout = to_ms(std::max(5.0, 4 * cfg.heartbeat_s));
  hb_store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, opts);
  const std::string key = "bert/hb/" + std::to_string(env.rank);
  hb_store->set(key, bytes_of("0"));
  hb_thread = std::thread([this, key] {
    int64_t beat = 0;
    std::unique_lock<std::mutex> lock(hb_mutex);
    while (!hb_stop) {
      try {
        hb_store->set(key, bytes_of(std::to_string(++beat)));
      } catch (...) {
        return;  // the store is gone (rank 0 died); the next collective reports it
      }
      hb_cv.wait_for(lock, to_ms(cfg.heartbeat_s), [this] { return hb_stop; });
    }
  });
}

void Communicator::Impl::stop_heartbeat() {
  {
    std::lock_guard<std::mutex> lock(hb_mutex);
    hb_stop = true;
  }
  hb_cv.notify_all();
  if (hb_thread.joinable()) hb_thread.join();
}

// A collective failed or timed out: find out which ranks stopped beating, then throw.
void Communicator::Impl::fail(const std::string& what, const std::exception& e, bool timed_out) {
  failed = true;
  pending.clear();
  pending_what.clear();
  pending_finish.clear();
  std::string cause = first_line(e);
  std::string verdict;
  const double watch = std::max(1.0, 2.5 * cfg.heartbeat_s);
  try {
    auto read = [&]() {
      std::vector<std::string> v(env.world_size);
      for (int r = 0; r < env.world_size; ++r) {
        if (r == env.rank) continue;
        std::string rs = std::to_string(r);
        if (hb_store->check({"bert/done/" + rs}))
          v[r] = "done";
        else if (hb_store->check({"bert/hb/" + rs}))
          v[r] = string_of(hb_store->get("bert/hb/" + rs));
      }
      return v;
    };
    auto before = read();
    std::this_thread::sleep_for(to_ms(watch));
    auto after = read();
    std::vector<int> lost, done;
    for (int r = 0; r < env.world_size; ++r) {
      if (r == env.rank) continue;
      if (after[r] == "done") done.push_back(r);
      else if (after[r] == before[r]) lost.push_back(r);
    }
    if (!lost.empty())
      verdict = "lost rank " + ranks_text(lost) + " (no heartbeat for " + seconds_text(watch) + " s)";
    else if (!done.empty())
      verdict = "rank " + ranks_text(done) + " already finished (ranks ran different numbers of collectives)";
    else
      verdict = timed_out ? "every rank is still alive, so one is stuck or slow (raise dist.timeout_s if a step "
                            "legitimately takes longer)"
                          : "every rank is still alive";
  } catch (const std::exception&) {
    verdict = env.rank == 0 ? "the rendezvous store stopped answering"
                            : "lost rank 0 (its rendezvous store at " + endpoint() + " stopped answering)";
  }
  // the process group may still have threads blocked on the dead peer: never join them
  (void)pg.release();
  throw RuntimeError(what + (timed_out ? " timed out after " + seconds_text(cfg.timeout_s) + " s" : " failed") +
                     " on " + who() + ": " + verdict + "; the job cannot continue, restart it from the last "
                     "checkpoint [" + backend + ": " + cause + "]");
}

void Communicator::Impl::run(const std::string& what, const c10::intrusive_ptr<c10d::Work>& work) {
  try {
    work->wait(to_ms(cfg.timeout_s));
  } catch (const std::exception& e) {
    std::string m = to_lower_ascii(first_line(e));
    bool timed_out = m.find("timed out") != std::string::npos || m.find("timeout") != std::string::npos;
    fail(what, e, timed_out);
  }
}

// Gloo wants contiguous CPU tensors: stage others through a CPU copy.
std::vector<torch::Tensor> Communicator::Impl::staged(std::vector<torch::Tensor>& tensors) const {
  std::vector<torch::Tensor> out;
  out.reserve(tensors.size());
  for (auto& t : tensors) {
    if (backend != "gloo") {
      out.push_back(t.contiguous());
    } else if (t.scalar_type() == torch::kBFloat16) {  // Gloo in LibTorch 1.13 cannot reduce bf16
      out.push_back(t.to(torch::kCPU, torch::kFloat32).contiguous());
    } else {
      out.push_back(t.device().is_cpu() && t.is_contiguous() ? t : t.to(torch::kCPU).contiguous());
    }
  }
  return out;
}

void Communicator::Impl::unstage(std::vector<torch::Tensor>& tensors, std::vector<torch::Tensor>& st) const {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (!st[i].is_same(tensors[i])) tensors[i].copy_(st[i]);
}

Communicator::Communicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::unique_ptr<Communicator> Communicator::create(const LaunchEnv& env, const DistConfig& cfg,
                                                   const std::string& device_backend) {
  auto impl = std::make_unique<Impl>();
  impl->env = env;
  impl->cfg = cfg;
  if (env.world_size > 1) {
    // A peer that dies leaves half-closed sockets; writing to one must surface as an error
    // naming the lost rank, not kill this process with SIGPIPE.
    ::signal(SIGPIPE, SIG_IGN);
    auto start = Clock::now();
    impl->choose_backend(device_backend);
    if (env.rank == 0) spdlog::info("rendezvous: {} ranks at {} ({})", env.world_size, impl->endpoint(), env.source);
    impl->connect_store();
    impl->rendezvous();
    impl->create_group();
    impl->start_heartbeat();
    if (env.rank == 0)
      spdlog::info("process group ready: {} ranks, backend {}, in {:.2f} s", env.world_size, impl->backend,
                   since(start));
  }
  return std::unique_ptr<Communicator>(new Communicator(std::move(impl)));
}

Communicator::~Communicator() {
  try {
    if (!impl_->failed) finish();
  } catch (const std::exception& e) {
    spdlog::warn("rank {}: distributed shutdown: {}", impl_->env.rank, e.what());
  }
  impl_->stop_heartbeat();
  if (impl_->failed) (void)impl_->pg.release();
}

int Communicator::rank() const { return impl_->env.rank; }
int Communicator::world_size() const { return impl_->env.world_size; }
int Communicator::local_rank() const { return impl_->env.local_rank; }
const std::string& Communicator::backend() const { return impl_->backend; }
const DistConfig& Communicator::config() const { return impl_->cfg; }

static int64_t payload(const std::vector<torch::Tensor>& ts) {
  int64_t b = 0;
  for (const auto& t : ts) b += t.numel() * static_cast<int64_t>(t.element_size());
  return b;
}

void Communicator::allreduce_(std::vector<torch::Tensor>& tensors, Reduce op) {
  if (!impl_->active() || tensors.empty()) return;
  auto start = Clock::now();
  auto st = impl_->staged(tensors);
  c10d::AllreduceOptions o;
  o.reduceOp = to_c10d(op);
  for (auto& t : st) {
    std::vector<torch::Tensor> one = {t};
    impl_->run("allreduce", impl_->pg->allreduce(one, o));
  }
  if (op == Reduce::Mean)
    for (auto& t : st) {
      if (t.is_floating_point()) t.div_(impl_->env.world_size);
      else t.div_(impl_->env.world_size, "floor");
    }
  impl_->unstage(tensors, st);
  add_stats(since(start), payload(tensors));
  impl_->stats.calls += static_cast<int64_t>(tensors.size());
}

torch::Tensor Communicator::allreduce(const torch::Tensor& t, Reduce op) {
  std::vector<torch::Tensor> v = {t.detach().clone()};
  allreduce_(v, op);
  return v[0];
}

void Communicator::broadcast_(std::vector<torch::Tensor>& tensors, int root) {
  if (!impl_->active() || tensors.empty()) return;
  if (root < 0 || root >= world_size())
    throw UserError("broadcast root " + std::to_string(root) + " is not a rank of this " +
                    std::to_string(world_size()) + "-rank job");
  auto start = Clock::now();
  auto st = impl_->staged(tensors);
  c10d::BroadcastOptions o;
  o.rootRank = root;
  for (auto& t : st) {
    std::vector<torch::Tensor> one = {t};
    impl_->run("broadcast", impl_->pg->broadcast(one, o));
  }
  impl_->unstage(tensors, st);
  add_stats(since(start), payload(tensors));
  impl_->stats.calls += static_cast<int64_t>(tensors.size());
}

void Communicator::barrier() {
  if (!impl_->active()) return;
  auto start = Clock::now();
  impl_->run("barrier", impl_->pg->barrier());
  add_stats(since(start), 0);
  impl_->stats.calls += 1;
}

void Communicator::allreduce_async_(std::vector<torch::Tensor>& tensors) {
  if (!impl_->active()) return;
  for (auto& t : tensors) {
    if (impl_->backend == "gloo" && (!t.device().is_cpu() || !t.is_contiguous()))
      throw RuntimeError("allreduce_async_ needs contiguous CPU tensors with Gloo (got " + t.toString() + ")");
    std::vector<torch::Tensor> one = {t};
    if (impl_->backend == "gloo" && t.scalar_type() == torch::kBFloat16) {
      // Gloo in LibTorch 1.13 cannot sum bf16: gather the raw bf16 bits from every rank (same
      // bytes on the wire as a bf16 ring allreduce with 2 ranks) and sum them here in fp32.
      // The bits travel viewed as fp16 (a 2-byte type Gloo moves verbatim; allgather is a copy).
      std::vector<std::vector<torch::Tensor>> gathered(1);
      for (int r = 0; r < world_size(); ++r) gathered[0].push_back(torch::empty_like(t).view(torch::kFloat16));
      std::vector<torch::Tensor> bits = {t.view(torch::kFloat16)};
      impl_->pending.push_back(impl_->pg->allgather(gathered, bits));
      impl_->pending_finish.push_back([t, gathered]() mutable {
        auto acc = torch::zeros(t.sizes(), torch::kFloat32);
        for (auto& g : gathered[0]) acc.add_(g.view(torch::kBFloat16).to(torch::kFloat32));
        t.copy_(acc);
      });
    } else {
      impl_->pending.push_back(impl_->pg->allreduce(one));
      impl_->pending_finish.push_back(nullptr);
    }
    impl_->pending_what.push_back("gradient allreduce");
    impl_->stats.bytes += t.numel() * static_cast<int64_t>(t.element_size());
    impl_->stats.calls += 1;
  }
}

void Communicator::wait_all() {
  auto works = std::move(impl_->pending);
  auto whats = std::move(impl_->pending_what);
  auto finishers = std::move(impl_->pending_finish);
  impl_->pending.clear();
  impl_->pending_what.clear();
  impl_->pending_finish.clear();
  for (size_t i = 0; i < works.size(); ++i) {
    impl_->run(whats[i], works[i]);
    if (finishers[i]) finishers[i]();
  }
}

CommStats Communicator::take_stats() {
  CommStats s = impl_->stats;
  impl_->stats = CommStats{};
  return s;
}

void Communicator::add_stats(double seconds, int64_t bytes, double total_seconds) {
  impl_->stats.seconds += seconds;
  impl_->stats.total_seconds += total_seconds < 0 ? seconds : total_seconds;
  impl_->stats.bytes += bytes;
}

void Communicator::finish() {
  auto& d = *impl_;
  if (d.single() || d.finished || d.failed) return;
  d.finished = true;
  d.stop_heartbeat();
  d.store->set("bert/done/" + std::to_string(d.env.rank), bytes_of("1"));
  if (d.env.rank != 0) return;
  // rank 0 hosts the store: keep it up until every rank has said it is done
  // (a rank whose heartbeat stops without saying done is given up on)
  auto start = Clock::now();
  const double silent_limit = std::max(1.0, 2.5 * d.cfg.heartbeat_s);
  for (int r = 1; r < d.env.world_size; ++r) {
    const std::string rs = std::to_string(r);
    std::string last_beat;
    auto last_change = Clock::now();
    while (!d.store->check({"bert/done/" + rs})) {
      std::string beat = d.store->check({"bert/hb/" + rs}) ? string_of(d.store->get("bert/hb/" + rs)) : "";
      if (beat != last_beat) {
        last_beat = beat;
        last_change = Clock::now();
      }
      if (since(last_change) > silent_limit || since(start) > d.cfg.timeout_s) {
        spdlog::warn("rank 0: rank {} stopped without finishing (no heartbeat for {} s); shutting down", r,
                     seconds_text(since(last_change)));
        break;
      }
      std::this_thread::sleep_for(ms(20));
    }
  }
}

}  // namespace bert::dist
