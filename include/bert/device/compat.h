#pragma once
// Every difference between the LibTorch versions we build against (Debian's 1.13 and 2.x)
// lives in this header, so the rest of the tree is written once.
#include <torch/torch.h>
#include <torch/version.h>
#include <ATen/autocast_mode.h>

#include <string>

#define BERT_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace bert::compat {

inline std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

// ---- autocast -------------------------------------------------------------------------------
// 1.13: at::autocast::set_cpu_enabled / set_autocast_cpu_dtype / set_enabled / set_autocast_gpu_dtype
// 2.4+: at::autocast::set_autocast_enabled(device_type, bool) / set_autocast_dtype(device_type, dtype)
inline void set_autocast(c10::DeviceType device, bool enabled, c10::ScalarType dtype) {
#if BERT_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(device, enabled);
  if (enabled) at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == c10::DeviceType::CPU) {
    at::autocast::set_cpu_enabled(enabled);
    if (enabled) at::autocast::set_autocast_cpu_dtype(dtype);
  } else {
    at::autocast::set_enabled(enabled);
    if (enabled) at::autocast::set_autocast_gpu_dtype(dtype);
  }
#endif
  if (!enabled) at::autocast::clear_cache();
}

inline bool autocast_enabled(c10::DeviceType device) {
#if BERT_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(device);
#else
  return device == c10::DeviceType::CPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
#endif
}

// ---- fused attention --------------------------------------------------------------------------
// scaled_dot_product_attention exists from 2.0; 1.13 uses the explicit softmax path.
constexpr bool kHasSDPA = BERT_TORCH_AT_LEAST(2, 0);

}  // namespace bert::compat
