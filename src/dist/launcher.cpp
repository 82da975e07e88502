// The local worker supervisor behind `bert-train launch` (see bert/dist/launcher.h).
#include "bert/dist/launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "bert/common/error.h"
#include "bert/common/strings.h"

extern char** environ;

namespace bert::dist {

namespace {

using Clock = std::chrono::steady_clock;

int g_signal_pipe[2] = {-1, -1};

void on_signal(int sig) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(sig);
  if (g_signal_pipe[1] >= 0) (void)!::write(g_signal_pipe[1], &b, 1);
  errno = saved;
}

struct Stream {
  int fd = -1;
  std::string partial;
  FILE* sink = nullptr;
};

struct Worker {
  int rank = 0;
  int local_rank = 0;
  pid_t pid = -1;
  bool running = false;
  int code = 0;  // exit code, or 128 + signal
  std::string how;  // "exit code 3" / "signal 9 (Killed)"
  Stream out, err;
};

std::string self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw RuntimeError("cannot find this executable (/proc/self/exe): " + ec.message());
  return p.string();
}

void emit(const Worker& w, Stream& s, const std::string& line, bool prefix) {
  std::string text = (prefix ? "[rank " + std::to_string(w.rank) + "] " : std::string()) + line + "\n";
  std::fwrite(text.data(), 1, text.size(), s.sink);
  std::fflush(s.sink);
}

// Read what is available; forward complete lines. Returns false at EOF.
bool pump(Worker& w, Stream& s, bool prefix) {
  char buf[65536];
  ssize_t n = ::read(s.fd, buf, sizeof buf);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
  if (n <= 0) {
    if (!s.partial.empty()) emit(w, s, s.partial, prefix);
    s.partial.clear();
    ::close(s.fd);
    s.fd = -1;
    return false;
  }
  s.partial.append(buf, static_cast<size_t>(n));
  size_t start = 0, nl;
  while ((nl = s.partial.find('\n', start)) != std::string::npos) {
    emit(w, s, s.partial.substr(start, nl - start), prefix);
    start = nl + 1;
  }
  s.partial.erase(0, start);
  return true;
}

std::vector<std::string> worker_env(const LaunchOptions& o, int local_rank, int omp_threads) {
  std::map<std::string, std::string> set = {
      {"RANK", std::to_string(o.node_rank * o.nproc_per_node + local_rank)},
      {"WORLD_SIZE", std::to_string(o.nnodes * o.nproc_per_node)},
      {"LOCAL_RANK", std::to_string(local_rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(o.nproc_per_node)},
      {"GROUP_RANK", std::to_string(o.node_rank)},
      {"MASTER_ADDR", o.master_addr},
      {"MASTER_PORT", std::to_string(o.master_port)},
  };
  if (omp_threads > 0) set["OMP_NUM_THREADS"] = std::to_string(omp_threads);
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    std::string key = kv.substr(0, kv.find('='));
    if (!set.count(key)) env.push_back(kv);
  }
  for (auto& [k, v] : set) env.push_back(k + "=" + v);
  return env;
}

void make_pipe(int fds[2]) {
  if (::pipe2(fds, O_CLOEXEC) != 0) throw RuntimeError(std::string("cannot create a pipe: ") + std::strerror(errno));
}

void spawn(Worker& w, const std::string& program, const std::vector<std::string>& args,
           const std::vector<std::string>& env) {
  int out[2], err[2];
  make_pipe(out);
  make_pipe(err);
  // everything the child needs is prepared before fork (only async-signal-safe calls after it)
  std::vector<char*> argv, envp;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const std::string fail_msg = "launch: cannot execute " + program + "\n";
  pid_t pid = ::fork();
  if (pid < 0) throw RuntimeError(std::string("cannot start a worker (fork): ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);  // own process group: terminal Ctrl-C reaches the launcher only, which forwards it
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::execve(program.c_str(), argv.data(), envp.data());
    (void)!::write(2, fail_msg.data(), fail_msg.size());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(out[1]);
  ::close(err[1]);
  ::fcntl(out[0], F_SETFL, O_NONBLOCK);
  ::fcntl(err[0], F_SETFL, O_NONBLOCK);
  w.pid = pid;
  w.running = true;
  w.out = Stream{out[0], "", stdout};
  w.err = Stream{err[0], "", stderr};
}

void signal_workers(std::vector<Worker>& ws, int sig) {
  for (auto& w : ws)
    if (w.running) ::kill(-w.pid, sig);
}

}  // namespace

int free_tcp_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw RuntimeError(std::string("cannot open a socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    throw RuntimeError(std::string("cannot find a free TCP port: ") + std::strerror(errno));
  }
  int port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

int run_launcher(const LaunchOptions& in) {
  LaunchOptions o = in;
  if (o.nproc_per_node < 1) throw UserError("--nproc-per-node must be at least 1");
  if (o.nnodes < 1) throw UserError("--nnodes must be at least 1");
  if (o.node_rank < 0 || o.node_rank >= o.nnodes)
    throw UserError("--node-rank " + std::to_string(o.node_rank) + " must be in [0, " + std::to_string(o.nnodes - 1) +
                    "] for --nnodes " + std::to_string(o.nnodes));
  if (o.args.empty())
    throw UserError("launch needs the worker command after '--', e.g. bert-train launch --nproc-per-node 2 -- "
                    "pretrain --config configs/pretrain_tiny_128_lamb.json");
  if (o.master_port == 0) {
    if (o.nnodes > 1) throw UserError("--master-port 0 (pick a free port) only works with --nnodes 1");
    o.master_port = free_tcp_port();
  }
  if (o.master_port < 1 || o.master_port > 65535) throw UserError("--master-port must be in [1, 65535]");
  std::string program = o.program.empty() ? self_exe() : o.program;
  if (::access(program.c_str(), X_OK) != 0)
    throw UserError("launch: program " + program + " is not an executable file; fix --program");

  int omp = o.omp_threads;
  if (omp == 0 && !std::getenv("OMP_NUM_THREADS")) {
    unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    omp = static_cast<int>(std::max(1u, cores / static_cast<unsigned>(o.nproc_per_node)));
  }

  if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
    throw RuntimeError(std::string("cannot create a pipe: ") + std::strerror(errno));
  struct sigaction sa {}, ign{}, old_int{}, old_term{}, old_pipe{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  ::sigaction(SIGPIPE, &ign, &old_pipe);  // a closed stdout must not kill the supervisor
  auto restore = [&]() {
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
    ::sigaction(SIGPIPE, &old_pipe, nullptr);
    ::close(g_signal_pipe[0]);
    ::close(g_signal_pipe[1]);
    g_signal_pipe[0] = g_signal_pipe[1] = -1;
  };

  const int world = o.nnodes * o.nproc_per_node;
  spdlog::info("launch: {} worker(s) on node {} of {} (world size {}), master {}:{}, OMP_NUM_THREADS={}: {} {}",
               o.nproc_per_node, o.node_rank, o.nnodes, world, o.master_addr, o.master_port,
               omp > 0 ? std::to_string(omp) : std::string(std::getenv("OMP_NUM_THREADS")), program,
               join(o.args, " "));
  const auto start = Clock::now();
  std::vector<Worker> ws(static_cast<size_t>(o.nproc_per_node));
  try {
    for (int i = 0; i < o.nproc_per_node; ++i) {
      ws[i].local_rank = i;
      ws[i].rank = o.node_rank * o.nproc_per_node + i;
      spawn(ws[i], program, o.args, worker_env(o, i, omp));
    }
  } catch (...) {
    signal_workers(ws, SIGKILL);
    for (auto& w : ws)
      if (w.running) ::waitpid(w.pid, nullptr, 0);
    restore();
    throw;
  }

  int failed = -1;              // index of the first failed worker
  int interrupted = 0;          // signal that interrupted the launcher
  bool stopping = false;
  Clock::time_point kill_at{};
  Clock::time_point all_exited_at{};
  bool killed = false;

  auto live = [&]() {
    int n = 0;
    for (auto& w : ws) n += w.running;
    return n;
  };
  auto begin_stop = [&](int sig) {
    if (!stopping) {
      stopping = true;
      kill_at = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o.stop_grace_s * 1000));
    }
    signal_workers(ws, sig);
  };

  while (true) {
    std::vector<pollfd> fds;
    std::vector<std::pair<Worker*, Stream*>> owners;
    fds.push_back({g_signal_pipe[0], POLLIN, 0});
    owners.push_back({nullptr, nullptr});
    for (auto& w : ws)
      for (Stream* s : {&w.out, &w.err})
        if (s->fd >= 0) {
          fds.push_back({s->fd, POLLIN, 0});
          owners.push_back({&w, s});
        }
    bool all_exited = live() == 0;
    if (all_exited && fds.size() == 1) break;
    // output still open after every worker exited (a grandchild holds it): give up after 2 s
    if (all_exited && all_exited_at != Clock::time_point{} && Clock::now() - all_exited_at > std::chrono::seconds(2)) {
      for (auto& w : ws)
        for (Stream* s : {&w.out, &w.err})
          if (s->fd >= 0) {
            ::close(s->fd);
            s->fd = -1;
          }
      break;
    }
    ::poll(fds.data(), fds.size(), 100);
    for (size_t i = 1; i < fds.size(); ++i)
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) pump(*owners[i].first, *owners[i].second, o.prefix_output);
    if (fds[0].revents & POLLIN) {
      unsigned char sig = 0;
      while (::read(g_signal_pipe[0], &sig, 1) == 1) {
        if (interrupted) {
          spdlog::warn("launch: second {} — killing every worker", strsignal(sig));
          signal_workers(ws, SIGKILL);
          killed = true;
        } else {
          interrupted = sig;
          spdlog::warn("launch: received {}; forwarding it to {} worker(s) (again to kill them)", strsignal(sig), live());
          begin_stop(sig);
        }
      }
    }
    // reap
    for (size_t i = 0; i < ws.size(); ++i) {
      auto& w = ws[i];
      if (!w.running) continue;
      int status = 0;
      pid_t r = ::waitpid(w.pid, &status, WNOHANG);
      if (r != w.pid) continue;
      w.running = false;
      if (WIFEXITED(status)) {
        w.code = WEXITSTATUS(status);
        w.how = "exit code " + std::to_string(w.code);
      } else if (WIFSIGNALED(status)) {
        w.code = 128 + WTERMSIG(status);
        w.how = "signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
      }
      if (w.code != 0 && failed < 0 && !stopping) {
        failed = static_cast<int>(i);
        spdlog::error("launch: worker rank {} (pid {}) failed with {}; stopping the other {} worker(s)", w.rank,
                      w.pid, w.how, live());
        begin_stop(SIGTERM);
      }
    }
    if (live() == 0 && all_exited_at == Clock::time_point{}) all_exited_at = Clock::now();
    if (stopping && !killed && live() > 0 && Clock::now() >= kill_at) {
      spdlog::warn("launch: {} worker(s) still running {} s after being asked to stop; killing them", live(),
                   o.stop_grace_s);
      signal_workers(ws, SIGKILL);
      killed = true;
    }
  }
  restore();

  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  if (failed >= 0) {
    const auto& w = ws[failed];
    spdlog::error("launch: rank {} failed with {} after {}; {} worker(s) in all", w.rank, w.how,
                  human_duration(secs), ws.size());
    return w.code;
  }
  if (interrupted) {
    spdlog::warn("launch: interrupted by {} after {}; all {} worker(s) stopped", strsignal(interrupted),
                 human_duration(secs), ws.size());
    return 128 + interrupted;
  }
  spdlog::info("launch: all {} worker(s) finished successfully in {}", ws.size(), human_duration(secs));
  return 0;
}

}  // namespace bert::dist
