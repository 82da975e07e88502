// CPU backend: LibTorch on oneDNN/OpenBLAS; bf16 autocast where the CPU has native bf16
// (AVX512-BF16 or AMX) and DNNL_MAX_CPU_ISA does not mask it.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "bert/common/error.h"
#include "bert/common/strings.h"
#include "bert/device/compat.h"
#include "bert/device/device.h"

namespace bert {

bool CpuFeatures::bf16_native() const {
  if (!(avx512_bf16 || amx_bf16)) return false;
  if (dnnl_max_cpu_isa.empty()) return true;
  std::string isa = to_lower_ascii(dnnl_max_cpu_isa);
  return isa == "all" || isa.find("bf16") != std::string::npos || isa.find("amx") != std::string::npos ||
         isa.find("fp16") != std::string::npos;
}

CpuFeatures cpu_features() {
  CpuFeatures f;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  bool flags_done = false;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "processor") ++f.logical_cores;
    if (key == "model name" && f.model.empty()) f.model = value;
    if (key == "cpu MHz" && f.mhz == 0) f.mhz = std::atof(value.c_str());
    if (key == "flags" && !flags_done) {
      flags_done = true;
      std::istringstream ss(" " + value + " ");
      std::string flag;
      while (ss >> flag) {
        if (flag == "avx2") f.avx2 = true;
        if (flag == "avx512f") f.avx512f = true;
        if (flag == "avx512_bf16") f.avx512_bf16 = true;
        if (flag == "amx_bf16") f.amx_bf16 = true;
        if (flag == "amx_tile") f.amx_tile = true;
        if (flag == "avx512_fp16") f.avx512_fp16 = true;
      }
    }
  }
  if (f.model.empty()) f.model = "unknown CPU";
  if (const char* isa = std::getenv("DNNL_MAX_CPU_ISA")) f.dnnl_max_cpu_isa = isa;
  return f;
}

void configure_threads(int64_t n) {
  if (n <= 0) {
    // 0: OMP_NUM_THREADS when the user set it, else every core
    const char* env = std::getenv("OMP_NUM_THREADS");
    n = env ? std::atoll(env) : 0;
    if (n <= 0) n = static_cast<int64_t>(std::thread::hardware_concurrency());
  }
  if (n <= 0) n = 1;
  if (torch::get_num_threads() != n) torch::set_num_threads(static_cast<int>(n));
}

namespace {

class CpuDevice final : public Device {
 public:
  CpuDevice() : f_(cpu_features()) {}
  std::string name() const override { return "cpu"; }
  std::string description() const override {
    return f_.model + ", " + std::to_string(torch::get_num_threads()) + " threads";
  }
  Availability availability() const override { return {true, description()}; }
  torch::Device torch_device() const override { return torch::kCPU; }
  std::vector<std::string> precisions() const override {
    // bf16 runs everywhere (emulated without native support, slowly); fp16 autocast on CPU
    // is not something the reference recipes use, and LibTorch 1.13 lacks it.
    return {"fp32", "bf16"};
  }
  void set_autocast(const std::string& precision) const override {
    if (precision == "fp32") {
      compat::set_autocast(c10::DeviceType::CPU, false, at::kBFloat16);
    } else if (precision == "bf16") {
      compat::set_autocast(c10::DeviceType::CPU, true, at::kBFloat16);
    } else {
      throw UserError("precision " + precision + " is not supported on cpu; use --precision bf16 or fp32");
    }
  }
  double peak_flops(const std::string& precision) const override {
    // Theoretical dense peak: threads x clock x FLOPs/cycle/core (two FMA ports assumed).
    double hz = (f_.mhz > 0 ? f_.mhz : 2000.0) * 1e6;
    double per_cycle = f_.avx512f ? 64 : (f_.avx2 ? 32 : 16);
    if (precision == "bf16" && f_.bf16_native()) per_cycle = f_.amx_bf16 ? 1024 : 128;
    return torch::get_num_threads() * hz * per_cycle;
  }
  std::string collective_backend() const override { return "gloo"; }
  MemoryStats memory() const override {
    // Resident set size and its high-water mark of this process.
    MemoryStats m;
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmRSS:", 0) == 0) m.in_use_bytes = std::atoll(line.c_str() + 6) * 1024;
      if (line.rfind("VmHWM:", 0) == 0) m.peak_bytes = std::atoll(line.c_str() + 6) * 1024;
    }
    return m;
  }

 private:
  CpuFeatures f_;
};

}  // namespace

std::unique_ptr<Device> make_cpu_device() { return std::make_unique<CpuDevice>(); }

}  // namespace bert
