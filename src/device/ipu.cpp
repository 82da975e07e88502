// Graphcore IPU backend: detected from the Poplar runtime. IPUs are programmed through
// Poplar/PopART graphs rather than LibTorch kernels, so even with Poplar present the backend
// reports exactly why it cannot train here instead of pretending.
#include <dlfcn.h>

#include <cstdlib>

#include "bert/common/error.h"
#include "bert/device/device.h"

namespace bert {

namespace {

class IpuDevice final : public Device {
 public:
  IpuDevice() {
    void* h = ::dlopen("libpoplar.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      avail_ = {false, "Poplar runtime (libpoplar.so) not found; source the Poplar SDK's enable.sh on an IPU machine"};
    } else {
      ::dlclose(h);
      avail_ = {false,
                "Poplar runtime found, but IPUs run Poplar/PopART graphs, not LibTorch kernels; "
                "bert-train has no Poplar execution path yet"};
    }
  }
  std::string name() const override { return "ipu"; }
  std::string description() const override { return "none"; }
  Availability availability() const override { return avail_; }
  torch::Device torch_device() const override { return torch::Device(c10::DeviceType::IPU, 0); }
  std::vector<std::string> precisions() const override { return {"fp32", "fp16"}; }
  void set_autocast(const std::string& precision) const override {
    throw UserError("ipu: " + avail_.detail);
  }
  double peak_flops(const std::string&) const override { return 0; }
  std::string collective_backend() const override { return "poplar"; }

 private:
  Availability avail_;
};

}  // namespace

std::unique_ptr<Device> make_ipu_device() { return std::make_unique<IpuDevice>(); }

}  // namespace bert
