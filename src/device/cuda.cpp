// CUDA backend: available when LibTorch was built with CUDA and a GPU is visible.
#include <torch/cuda.h>

#include "bert/common/error.h"
#include "bert/device/compat.h"
#include "bert/device/device.h"

#ifdef BERT_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace bert {

namespace {

// Dense tensor-core peaks (no sparsity) from the vendors' data sheets, by name fragment.
double gpu_peak(const std::string& gpu, const std::string& precision) {
  struct Row { const char* key; double bf16, fp32; };
  static const Row rows[] = {
      {"H200", 989e12, 67e12}, {"H100 PCIe", 756e12, 51e12}, {"H100", 989e12, 67e12},
      {"A100", 312e12, 19.5e12}, {"A10G", 70e12, 31e12}, {"L40S", 362e12, 91.6e12},
      {"L4", 121e12, 30e12}, {"V100", 125e12, 15.7e12}, {"T4", 65e12, 8.1e12},
  };
  for (const auto& r : rows)
    if (gpu.find(r.key) != std::string::npos) return precision == "fp32" ? r.fp32 : r.bf16;
  return 0;
}

class CudaDevice final : public Device {
 public:
  std::string name() const override { return "cuda"; }
  std::string description() const override {
#ifdef BERT_WITH_CUDA
    if (torch::cuda::is_available()) {
      auto* p = at::cuda::getDeviceProperties(0);
      return std::string(p->name) + " (" + std::to_string(torch::cuda::device_count()) + " visible)";
    }
#endif
    return "none";
  }
  Availability availability() const override {
#ifndef BERT_WITH_CUDA
    return {false, "this LibTorch " + compat::torch_version() +
                       " was built without CUDA; build bert-train against a CUDA LibTorch "
                       "(CMAKE_PREFIX_PATH to a pip torch or the LibTorch CUDA zip)"};
#else
    if (!torch::cuda::is_available())
      return {false, "LibTorch has CUDA but no GPU is visible (driver missing or CUDA_VISIBLE_DEVICES empty)"};
    return {true, description()};
#endif
  }
  torch::Device torch_device() const override { return torch::Device(torch::kCUDA, 0); }
  std::vector<std::string> precisions() const override { return {"fp32", "bf16", "fp16"}; }
  void set_autocast(const std::string& precision) const override {
    if (precision == "fp32")
      compat::set_autocast(c10::DeviceType::CUDA, false, at::kHalf);
    else
      compat::set_autocast(c10::DeviceType::CUDA, true, precision == "bf16" ? at::kBFloat16 : at::kHalf);
  }
  void synchronize() const override {
#ifdef BERT_WITH_CUDA
    torch::cuda::synchronize();
#endif
  }
  MemoryStats memory() const override {
#ifdef BERT_WITH_CUDA
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
    using c10::cuda::CUDACachingAllocator::StatType;
    const auto& a = stats.allocated_bytes[static_cast<size_t>(StatType::AGGREGATE)];
    return {a.current, a.peak};
#else
    return {};
#endif
  }
  void reset_peak_memory() const override {
#ifdef BERT_WITH_CUDA
    c10::cuda::CUDACachingAllocator::resetPeakStats(0);
#endif
  }
  double peak_flops(const std::string& precision) const override {
    return gpu_peak(description(), precision);
  }
  std::string collective_backend() const override { return "nccl"; }
};

}  // namespace

std::unique_ptr<Device> make_cuda_device() { return std::make_unique<CudaDevice>(); }

}  // namespace bert
