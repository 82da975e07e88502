// Gaudi backend (HPU): usable when Habana's LibTorch plugin and the SynapseAI runtime load and
// a tensor can be placed on the device. Nothing here links against Habana's libraries; they are
// found at run time.
#include <dlfcn.h>

#include <cstdlib>

#include "bert/common/error.h"
#include "bert/device/compat.h"
#include "bert/device/device.h"

namespace bert {

namespace {

void* try_dlopen(const std::vector<std::string>& names, std::string& tried) {
  for (const auto& n : names) {
    if (void* h = ::dlopen(n.c_str(), RTLD_NOW | RTLD_GLOBAL)) return h;
    tried += (tried.empty() ? "" : ", ") + n;
  }
  return nullptr;
}

class HpuDevice final : public Device {
 public:
  HpuDevice() {
    std::string tried;
    std::vector<std::string> plugin_names = {"libhabana_pytorch_plugin.so"};
    if (const char* dir = std::getenv("HABANA_PLUGINS_LIB_PATH"))
      plugin_names.push_back(std::string(dir) + "/libhabana_pytorch_plugin.so");
    plugin_names.push_back("/usr/lib/habanalabs/libhabana_pytorch_plugin.so");
    void* runtime = try_dlopen({"libSynapse.so", "/usr/lib/habanalabs/libSynapse.so"}, tried);
    if (!runtime) {
      avail_ = {false, "SynapseAI runtime not found (looked for " + tried +
                           "); install Habana's driver and software stack on a Gaudi machine"};
      return;
    }
    tried.clear();
    void* plugin = try_dlopen(plugin_names, tried);
    if (!plugin) {
      avail_ = {false, "SynapseAI runtime found but Habana's LibTorch plugin is missing (looked for " + tried + ")"};
      return;
    }
    try {
      auto t = torch::zeros({1}, torch::TensorOptions().device(torch::Device(c10::DeviceType::HPU, 0)));
      (void)t;
      avail_ = {true, "Gaudi via Habana LibTorch plugin"};
    } catch (const std::exception& e) {
      avail_ = {false, std::string("Habana plugin loaded but no HPU is usable: ") + e.what()};
    }
  }
  std::string name() const override { return "hpu"; }
  std::string description() const override { return avail_.ok ? avail_.detail : "none"; }
  Availability availability() const override { return avail_; }
  torch::Device torch_device() const override { return torch::Device(c10::DeviceType::HPU, 0); }
  std::vector<std::string> precisions() const override { return {"fp32", "bf16"}; }
  void set_autocast(const std::string& precision) const override {
    if (precision == "fp32") return;
    if (precision != "bf16") throw UserError("precision " + precision + " is not supported on hpu; use bf16 or fp32");
    // Habana's plugin registers its own autocast under the HPU key.
    compat::set_autocast(c10::DeviceType::HPU, true, at::kBFloat16);
  }
  double peak_flops(const std::string& precision) const override { return 0; }
  std::string collective_backend() const override { return "hccl"; }

 private:
  Availability avail_;
};

}  // namespace

std::unique_ptr<Device> make_hpu_device() { return std::make_unique<HpuDevice>(); }

}  // namespace bert
