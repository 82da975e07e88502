#pragma once
// The device layer: one interface, one implementation per backend (cpu, cuda, hpu, ipu).
// Everything above it asks the backend for its torch device, precisions, autocast, memory
// and peak FLOP/s instead of testing for hardware itself.
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace bert {

struct Availability {
  bool ok = false;
  std::string detail;  // what was found, or what was looked for and not found
};

struct MemoryStats {
  int64_t in_use_bytes = -1;  // -1: unknown
  int64_t peak_bytes = -1;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;         // "cpu", "cuda", "hpu", "ipu"
  virtual std::string description() const = 0;  // e.g. the CPU model or GPU name
  virtual Availability availability() const = 0;
  virtual torch::Device torch_device() const = 0;
  virtual std::vector<std::string> precisions() const = 0;  // subset of fp32, bf16, fp16
  // Turn autocast on for bf16/fp16 (off for fp32). Throws UserError if unsupported.
  virtual void set_autocast(const std::string& precision) const = 0;
  virtual void synchronize() const {}
  virtual MemoryStats memory() const { return {}; }
  virtual void reset_peak_memory() const {}
  // Dense peak FLOP/s for the given precision (for MFU); 0 when unknown.
  virtual double peak_flops(const std::string& precision) const = 0;
  virtual std::string collective_backend() const = 0;  // gloo, nccl, hccl, ...
};

std::unique_ptr<Device> make_cpu_device();
std::unique_ptr<Device> make_cuda_device();
std::unique_ptr<Device> make_hpu_device();
std::unique_ptr<Device> make_ipu_device();

// Every backend, in `auto` preference order: cuda, hpu, ipu, cpu.
std::vector<std::unique_ptr<Device>> all_devices();

// "auto" picks the first available of cuda, hpu, ipu, cpu. A named backend that is not
// available is a UserError saying what was looked for. The precision is checked too.
std::unique_ptr<Device> select_device(const std::string& requested, const std::string& precision = "fp32");

// RAII: autocast on for the scope (no-op for fp32).
class AutocastScope {
 public:
  AutocastScope(const Device& dev, const std::string& precision);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  const Device& dev_;
  bool active_;
};

// ---- CPU facts (used by the CPU backend and `info`) ----
struct CpuFeatures {
  std::string model;
  int logical_cores = 0;
  double mhz = 0;
  bool avx2 = false, avx512f = false, avx512_bf16 = false, amx_bf16 = false, amx_tile = false,
       avx512_fp16 = false;
  std::string dnnl_max_cpu_isa;  // DNNL_MAX_CPU_ISA if set
  // bf16 autocast is worth it: native bf16 instructions present and not masked by DNNL_MAX_CPU_ISA.
  bool bf16_native() const;
};
CpuFeatures cpu_features();

// Intra-op CPU threads: n > 0 uses n; 0 uses OMP_NUM_THREADS when set, else every core the
// machine has (LibTorch's OpenMP default can be 1 inside containers).
void configure_threads(int64_t n);

}  // namespace bert
