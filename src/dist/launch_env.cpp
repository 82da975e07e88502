// Launch-convention detection: torchrun, then OpenMPI, then Slurm, else a single process.
#include "bert/dist/launch_env.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "bert/common/error.h"
#include "bert/common/strings.h"

namespace bert::dist {

EnvGetter process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

std::string LaunchEnv::describe() const {
  return "rank " + std::to_string(rank) + " of " + std::to_string(world_size) + " (local " +
         std::to_string(local_rank) + " of " + std::to_string(local_world_size) + ") via " + source +
         ", master " + master_addr + ":" + std::to_string(master_port);
}

namespace {

int parse_int(const std::string& name, const std::string& value, int lo, int hi) {
  std::string v = trim(value);
  size_t used = 0;
  long long x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (...) {
    used = 0;
  }
  if (v.empty() || used != v.size() || x < lo || x > hi)
    throw UserError("environment variable " + name + "='" + value + "' must be an integer in [" +
                    std::to_string(lo) + ", " + std::to_string(hi) + "]; fix the launcher's setting");
  return static_cast<int>(x);
}

struct Reader {
  const EnvGetter& env;
  bool has(const std::string& n) const { return env(n).has_value(); }
  std::optional<std::string> get(const std::string& n) const { return env(n); }
  int integer(const std::string& n, int lo, int hi) const { return parse_int(n, *env(n), lo, hi); }
  int integer_or(const std::string& n, int def, int lo, int hi) const {
    return has(n) ? integer(n, lo, hi) : def;
  }
};

void check_consistent(const LaunchEnv& e, const std::string& rank_var, const std::string& size_var) {
  if (e.rank >= e.world_size)
    throw UserError(rank_var + "=" + std::to_string(e.rank) + " must be smaller than " + size_var + "=" +
                    std::to_string(e.world_size) + "; fix the launcher's settings");
  if (e.local_rank >= e.local_world_size)
    throw UserError("local rank " + std::to_string(e.local_rank) + " must be smaller than the local world size " +
                    std::to_string(e.local_world_size) + " (from " + e.source + "'s variables)");
}

void read_master(const Reader& r, LaunchEnv& e) {
  if (auto a = r.get("MASTER_ADDR"); a && !trim(*a).empty()) e.master_addr = trim(*a);
  e.master_port = r.integer_or("MASTER_PORT", kDefaultMasterPort, 1, 65535);
}

}  // namespace

LaunchEnv detect_launch_env(const EnvGetter& env) {
  Reader r{env};
  LaunchEnv e;
  if (r.has("RANK") && r.has("WORLD_SIZE")) {
    e.source = "torchrun";
    e.world_size = r.integer("WORLD_SIZE", 1, 1 << 20);
    e.rank = r.integer("RANK", 0, 1 << 20);
    e.local_rank = r.integer_or("LOCAL_RANK", 0, 0, 1 << 20);
    e.local_world_size = r.integer_or("LOCAL_WORLD_SIZE", std::max(e.local_rank + 1, 1), 1, 1 << 20);
    if (e.world_size > 1 && !r.has("MASTER_ADDR"))
      throw UserError("RANK/WORLD_SIZE are set but MASTER_ADDR is not; set MASTER_ADDR (and MASTER_PORT) "
                      "to rank 0's host, or start through 'bert-train launch'");
    read_master(r, e);
    check_consistent(e, "RANK", "WORLD_SIZE");
    return e;
  }
  if (r.has("OMPI_COMM_WORLD_RANK") && r.has("OMPI_COMM_WORLD_SIZE")) {
    e.source = "openmpi";
    e.world_size = r.integer("OMPI_COMM_WORLD_SIZE", 1, 1 << 20);
    e.rank = r.integer("OMPI_COMM_WORLD_RANK", 0, 1 << 20);
    e.local_rank = r.integer_or("OMPI_COMM_WORLD_LOCAL_RANK", 0, 0, 1 << 20);
    e.local_world_size = r.integer_or("OMPI_COMM_WORLD_LOCAL_SIZE", e.world_size, 1, 1 << 20);
    if (!r.has("MASTER_ADDR") && e.local_world_size != e.world_size)
      throw UserError("mpirun spans several nodes (" + std::to_string(e.world_size) + " ranks, " +
                      std::to_string(e.local_world_size) +
                      " on this node) but MASTER_ADDR is not set; pass -x MASTER_ADDR=<first host> "
                      "-x MASTER_PORT=<port> to mpirun");
    read_master(r, e);
    check_consistent(e, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
    return e;
  }
  if (r.has("SLURM_PROCID") && r.has("SLURM_NTASKS")) {
    e.source = "slurm";
    e.world_size = r.integer("SLURM_NTASKS", 1, 1 << 20);
    e.rank = r.integer("SLURM_PROCID", 0, 1 << 20);
    e.local_rank = r.integer_or("SLURM_LOCALID", 0, 0, 1 << 20);
    // SLURM_NTASKS_PER_NODE may be "4" or "4(x2)"; its leading number is this node's count
    e.local_world_size = e.local_rank + 1;
    if (auto n = r.get("SLURM_NTASKS_PER_NODE")) {
      std::string s = *n;
      size_t i = 0;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
      if (i > 0) e.local_world_size = std::max(e.local_world_size, parse_int("SLURM_NTASKS_PER_NODE", s.substr(0, i), 1, 1 << 20));
    }
    read_master(r, e);
    if (!r.has("MASTER_ADDR")) {
      auto list = r.get("SLURM_JOB_NODELIST");
      if (!list) list = r.get("SLURM_NODELIST");
      if (list && !trim(*list).empty()) {
        auto hosts = expand_slurm_nodelist(trim(*list));
        if (!hosts.empty()) e.master_addr = hosts.front();
      } else if (e.world_size > 1) {
        throw UserError("Slurm job without SLURM_JOB_NODELIST or MASTER_ADDR; export MASTER_ADDR=<first host>");
      }
    }
    check_consistent(e, "SLURM_PROCID", "SLURM_NTASKS");
    return e;
  }
  return e;
}

namespace {

// Expand one bracket body "01-03,07" into zero-padded strings.
std::vector<std::string> expand_ranges(const std::string& body, const std::string& whole) {
  std::vector<std::string> out;
  for (const auto& part : split(body, ',')) {
    std::string p = trim(part);
    auto dash = p.find('-');
    std::string a = dash == std::string::npos ? p : p.substr(0, dash);
    std::string b = dash == std::string::npos ? p : p.substr(dash + 1);
    auto digits = [](const std::string& s) {
      return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos && s.size() < 10;
    };
    if (!digits(a) || !digits(b))
      throw UserError("Slurm node list '" + whole + "' has a bad range '" + p + "'; expected e.g. node[01-04,07]");
    long lo = std::stol(a), hi = std::stol(b);
    if (hi < lo) throw UserError("Slurm node list '" + whole + "' has a descending range '" + p + "'");
    if (hi - lo > 100000) throw UserError("Slurm node list '" + whole + "' has an implausibly large range '" + p + "'");
    size_t width = a.size();
    for (long v = lo; v <= hi; ++v) {
      std::string s = std::to_string(v);
      if (s.size() < width) s = std::string(width - s.size(), '0') + s;
      out.push_back(s);
    }
  }
  return out;
}

// Expand one host expression (no top-level commas), possibly with several bracket groups.
std::vector<std::string> expand_host(const std::string& expr, const std::string& whole) {
  std::vector<std::string> acc = {""};
  size_t i = 0;
  while (i < expr.size()) {
    size_t open = expr.find('[', i);
    std::string lit = expr.substr(i, open == std::string::npos ? std::string::npos : open - i);
    if (lit.find(']') != std::string::npos)
      throw UserError("Slurm node list '" + whole + "' has an unbalanced ']'");
    for (auto& a : acc) a += lit;
    if (open == std::string::npos) break;
    size_t close = expr.find(']', open);
    if (close == std::string::npos) throw UserError("Slurm node list '" + whole + "' has an unclosed '['");
    auto vals = expand_ranges(expr.substr(open + 1, close - open - 1), whole);
    std::vector<std::string> next;
    for (const auto& a : acc)
      for (const auto& v : vals) next.push_back(a + v);
    acc.swap(next);
    i = close + 1;
  }
  return acc;
}

}  // namespace

std::vector<std::string> expand_slurm_nodelist(const std::string& list) {
  std::vector<std::string> hosts;
  int depth = 0;
  std::string cur;
  auto flush = [&]() {
    std::string t = trim(cur);
    cur.clear();
    if (t.empty()) return;
    for (auto& h : expand_host(t, list)) hosts.push_back(h);
  };
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) throw UserError("Slurm node list '" + list + "' has an unbalanced ']'");
    if (c == ',' && depth == 0)
      flush();
    else
      cur += c;
  }
  if (depth != 0) throw UserError("Slurm node list '" + list + "' has an unclosed '['");
  flush();
  return hosts;
}

}  // namespace bert::dist
