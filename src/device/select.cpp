// Choosing a backend: `auto` prefers cuda, then hpu, then ipu, then cpu.
#include "bert/common/error.h"
#include "bert/common/strings.h"
#include "bert/device/device.h"

namespace bert {

std::vector<std::unique_ptr<Device>> all_devices() {
  std::vector<std::unique_ptr<Device>> out;
  out.push_back(make_cuda_device());
  out.push_back(make_hpu_device());
  out.push_back(make_ipu_device());
  out.push_back(make_cpu_device());
  return out;
}

static void check_precision(const Device& d, const std::string& precision) {
  auto p = d.precisions();
  if (std::find(p.begin(), p.end(), precision) == p.end())
    throw UserError("precision " + precision + " is not supported on " + d.name() + " (supported: " +
                    join(p, ", ") + ")" + (precision == "fp16" ? "; fp16 with loss scaling needs --device cuda" : ""));
}

std::unique_ptr<Device> select_device(const std::string& requested, const std::string& precision) {
  static const std::vector<std::string> names = {"auto", "cpu", "cuda", "hpu", "ipu"};
  if (std::find(names.begin(), names.end(), requested) == names.end())
    throw UserError("unknown device '" + requested + "'; use one of " + join(names, ", ") +
                    did_you_mean(requested, names));
  std::unique_ptr<Device> chosen;
  if (requested == "auto") {
    for (auto& d : all_devices()) {
      if (d->availability().ok) {
        chosen = std::move(d);
        break;
      }
    }
  } else {
    if (requested == "cpu") chosen = make_cpu_device();
    if (requested == "cuda") chosen = make_cuda_device();
    if (requested == "hpu") chosen = make_hpu_device();
    if (requested == "ipu") chosen = make_ipu_device();
    auto a = chosen->availability();
    if (!a.ok) throw UserError("device " + requested + " is not available: " + a.detail);
  }
  check_precision(*chosen, precision);
  return chosen;
}

AutocastScope::AutocastScope(const Device& dev, const std::string& precision)
    : dev_(dev), active_(precision != "fp32") {
  if (active_) dev_.set_autocast(precision);
}

AutocastScope::~AutocastScope() {
  if (active_) {
    try {
      dev_.set_autocast("fp32");
    } catch (...) {
    }
  }
}

}  // namespace bert
