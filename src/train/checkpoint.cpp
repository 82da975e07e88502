// Checkpoint directories: atomic save, `latest`, retention, cadence, and reading them back.
#include "bert/train/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/common/strings.h"
#include "bert/io/hf_config.h"
#include "bert/io/safetensors.h"
#include "bert/io/weights.h"

namespace bert::train {

using config::json;

CheckpointManager::CheckpointManager(fs::path output_dir, CheckpointConfig cfg)
    : output_dir_(std::move(output_dir)), root_(output_dir_ / "checkpoints"), cfg_(std::move(cfg)) {}

bool CheckpointManager::due(int64_t step, int64_t prev_samples, int64_t samples) const {
  if (samples < cfg_.min_samples_to_start) return false;
  if (cfg_.every_steps > 0 && step % cfg_.every_steps == 0) return true;
  if (cfg_.every_samples > 0 && samples / cfg_.every_samples > prev_samples / cfg_.every_samples) return true;
  return false;
}

static int64_t step_of(const fs::path& p) {
  std::string n = p.filename().string();
  if (!starts_with(n, "step_")) return -1;
  try {
    size_t used = 0;
    int64_t s = std::stoll(n.substr(5), &used);
    return used == n.size() - 5 ? s : -1;
  } catch (...) {
    return -1;
  }
}

std::vector<fs::path> CheckpointManager::list() const {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(root_, ec)) return out;
  for (auto& e : fs::directory_iterator(root_, ec)) {
    if (!e.is_directory() || e.is_symlink() || step_of(e.path()) < 0) continue;
    if (fs::exists(e.path() / "trainer_state.json")) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return step_of(a) < step_of(b); });
  return out;
}

static void point_latest(const fs::path& root, const fs::path& target) {
  fs::path link = root / "latest";
  fs::path tmp = temp_path_for(link);
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_directory_symlink(target.filename(), tmp, ec);
  if (ec) throw RuntimeError("cannot create symlink " + tmp.string() + ": " + ec.message());
  commit_temp(tmp, link);
}

fs::path CheckpointManager::save(int64_t step, const torch::nn::Module& model, const ModelConfig& model_cfg,
                                 const Optimizer& opt, json trainer_state, const json& run_config, bool final) {
  ensure_writable_dir(root_);
  fs::path dir = root_ / ("step_" + std::to_string(step));
  trainer_state["final"] = final;
  if (fs::exists(dir / "trainer_state.json")) {
    // Same step saved already (periodic, then final): identical weights, only the flag changes.
    write_file_atomic(dir / "trainer_state.json", trainer_state.dump(2) + "\n");
  } else {
    fs::path tmp = root_ / (".step_" + std::to_string(step) + ".tmp." + std::to_string(::getpid()));
    std::error_code ec;
    fs::remove_all(tmp, ec);
    ensure_writable_dir(tmp);
    io::save_weights(model, tmp / "model.safetensors", {{"step", std::to_string(step)}});
    io::write_hf_config(tmp / "config.json", model_cfg, io::HfConfigExtras{"BertForPreTraining", {}});
    io::save_safetensors(tmp / "optimizer.safetensors", opt.state_tensors(), {{"optimizer", opt.name()}});
    write_file_atomic(tmp / "optimizer.json", opt.state_meta().dump(2) + "\n");
    write_file_atomic(tmp / "run_config.json", run_config.dump(2) + "\n");
    write_file_atomic(tmp / "trainer_state.json", trainer_state.dump(2) + "\n");
    fs::remove_all(dir, ec);  // a leftover without trainer_state.json is incomplete
    commit_temp(tmp, dir);
  }
  point_latest(root_, dir);
  prune();
  spdlog::info("saved checkpoint {}{}", dir.string(), final ? " (final)" : "");
  return dir;
}

void CheckpointManager::prune() {
  std::vector<fs::path> periodic;
  for (auto& d : list()) {
    json st;
    try {
      st = json::parse(read_file(d / "trainer_state.json"));
    } catch (...) {
      continue;  // unreadable: leave it alone
    }
    if (!st.value("final", false)) periodic.push_back(d);
  }
  fs::path latest;
  std::error_code ec;
  if (fs::is_symlink(root_ / "latest", ec)) latest = root_ / fs::read_symlink(root_ / "latest", ec);
  while (static_cast<int64_t>(periodic.size()) > cfg_.keep_last) {
    fs::path victim = periodic.front();
    periodic.erase(periodic.begin());
    if (!latest.empty() && fs::equivalent(victim, latest, ec)) continue;
    fs::remove_all(victim, ec);
    if (ec) spdlog::warn("could not remove old checkpoint {}: {}", victim.string(), ec.message());
  }
}

fs::path resolve_checkpoint(const std::string& spec, const fs::path& output_dir) {
  fs::path p = spec == "latest" ? output_dir / "checkpoints" / "latest" : fs::path(spec);
  std::error_code ec;
  if (fs::exists(p / "checkpoints" / "latest", ec)) p = p / "checkpoints" / "latest";
  if (!fs::exists(p, ec)) {
    if (spec == "latest")
      throw UserError("no checkpoint to resume: " + p.string() +
                      " does not exist; check --output-dir or start without --resume");
    throw UserError("checkpoint directory not found: " + p.string());
  }
  p = fs::canonical(p, ec);
  if (!fs::exists(p / "trainer_state.json"))
    throw UserError(p.string() + " is not a training checkpoint (no trainer_state.json); use --init-checkpoint "
                                 "to load weights only");
  return p;
}

static json read_json_file(const fs::path& p) {
  try {
    return json::parse(read_file(p));
  } catch (const json::parse_error&) {
    throw UserError(p.string() + " is not valid JSON; the checkpoint is damaged");
  }
}

CheckpointContents read_checkpoint(const fs::path& dir) {
  CheckpointContents c;
  c.dir = dir;
  for (const char* f : {"trainer_state.json", "optimizer.json", "optimizer.safetensors", "model.safetensors"})
    if (!fs::exists(dir / f))
      throw UserError("checkpoint " + dir.string() + " has no " + f + "; it is incomplete, pick another one");
  c.trainer_state = read_json_file(dir / "trainer_state.json");
  c.optimizer_meta = read_json_file(dir / "optimizer.json");
  for (auto& [k, v] : io::load_safetensors(dir / "optimizer.safetensors").tensors) c.optimizer_tensors[k] = v;
  return c;
}

fs::path checkpoint_weights_file(const fs::path& spec) {
  std::error_code ec;
  if (fs::is_directory(spec, ec)) {
    fs::path f = spec / "model.safetensors";
    if (!fs::exists(f)) throw UserError("no model.safetensors in " + spec.string() + "; pass a checkpoint directory");
    return f;
  }
  require_file(spec, "init checkpoint");
  return spec;
}

static std::string to_hex(const torch::Tensor& t) {
  auto c = t.contiguous().to(torch::kCPU);
  const auto* p = c.data_ptr<uint8_t>();
  static const char* digits = "0123456789abcdef";
  std::string s;
  s.reserve(static_cast<size_t>(c.numel()) * 2);
  for (int64_t i = 0; i < c.numel(); ++i) {
    s.push_back(digits[p[i] >> 4]);
    s.push_back(digits[p[i] & 15]);
  }
  return s;
}

static torch::Tensor from_hex(const std::string& s, const std::string& where) {
  if (s.size() % 2) throw UserError(where + ": damaged RNG state");
  auto t = torch::empty({static_cast<int64_t>(s.size() / 2)}, torch::kUInt8);
  auto* p = t.data_ptr<uint8_t>();
  auto val = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw UserError(where + ": damaged RNG state");
  };
  for (size_t i = 0; i < s.size() / 2; ++i) p[i] = static_cast<uint8_t>(val(s[2 * i]) * 16 + val(s[2 * i + 1]));
  return t;
}

json capture_rng_state() {
  json j = json::object();
  auto gen = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    j["torch_cpu"] = to_hex(gen.get_state());
  }
  if (torch::cuda::is_available()) {
    json cuda = json::array();
    for (int64_t d = 0; d < static_cast<int64_t>(torch::cuda::device_count()); ++d) {
      auto g = at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(d)));
      std::lock_guard<std::mutex> lock(g.mutex());
      cuda.push_back(to_hex(g.get_state()));
    }
    j["torch_cuda"] = cuda;
  }
  return j;
}

void restore_rng_state(const json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("torch_cpu")) throw UserError(where + ": no RNG state in trainer_state.json");
  auto gen = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(from_hex(j["torch_cpu"].get<std::string>(), where));
  }
  if (j.contains("torch_cuda") && torch::cuda::is_available()) {
    const auto& arr = j["torch_cuda"];
    for (size_t d = 0; d < arr.size() && d < torch::cuda::device_count(); ++d) {
      auto g = at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(d)));
      std::lock_guard<std::mutex> lock(g.mutex());
      g.set_state(from_hex(arr[d].get<std::string>(), where));
    }
  }
}

}  // namespace bert::train
